"""B5: a nested-gradient saddle point: 200 steps of a gradient of a function that calls ``func.grad``.

``f(x, y) = sum(x**2) - sum(y**2) + sum(sin(x) * cos(y)) / 10`` on 8-vectors. Each step
updates ``y`` by ascent and ``x`` by descent on ``f(x, y + lr * grad_y f(x, y))``, so
the outer ``grad`` differentiates through the inner one, and the results feed the
next step. A finished inner transform must leave no graph behind: the time per step
stays flat. The same code runs with ``torch.func``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

SIZE, STEPS, RATE = 8, 200, 0.1


def _saddle(lib):  # noqa: ANN001, ANN202 - the library (dualgrad or torch) is passed in
    def f(x, y):  # noqa: ANN001, ANN202
        return (x * x).sum() - (y * y).sum() + (x.sin() * y.cos()).sum() / 10

    inner = lib.func.grad(f, argnums=1)
    outer = lib.func.grad(lambda x, y: f(x, y + RATE * inner(x, y)))

    def run(x, y):  # noqa: ANN001, ANN202
        for _ in range(STEPS):
            x, y = x - RATE * outer(x, y), y + RATE * inner(x, y)
        return x, y

    return run


def _builder(lib_name: str) -> Callable:
    def build() -> Callable:
        lib = __import__(lib_name)
        rng = np.random.default_rng(0)
        x0, y0 = lib.tensor(rng.standard_normal(SIZE)), lib.tensor(rng.standard_normal(SIZE))
        run = _saddle(lib)
        return lambda: tuple(v.detach().numpy() for v in run(x0, y0))

    return build


def workload() -> Workload:
    """B5 with its goal (eager-speed issue): no slower than torch.func."""
    return Workload(name="B5 nested-grad saddle, 200 steps", builders={"dualgrad": _builder("dualgrad"),
                    "torch": _builder("torch")}, time_goals={"torch": 1.0}, notes={"torch": " (torch.func)"})
