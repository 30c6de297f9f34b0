"""C14: B5 (200 steps of a nested-gradient saddle-point iteration) with each step through ``dualgrad.compile``.

One step (a gradient of a function that takes a gradient, and that gradient) is compiled; the loop over
200 steps stays in Python. Goal (compile issue): at most 0.5x PyTorch eager (torch.func).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from .b5_saddle import RATE, SIZE, STEPS, _builder


def _compiled() -> Callable:
    import dualgrad as dg

    def f(x, y):  # noqa: ANN001, ANN202
        return (x * x).sum() - (y * y).sum() + (x.sin() * y.cos()).sum() / 10

    inner = dg.func.grad(f, argnums=1)
    outer = dg.func.grad(lambda x, y: f(x, y + RATE * inner(x, y)))
    step = dg.compile(lambda x, y: (x - RATE * outer(x, y), y + RATE * inner(x, y)))
    rng = np.random.default_rng(0)
    x0, y0 = dg.tensor(rng.standard_normal(SIZE)), dg.tensor(rng.standard_normal(SIZE))

    def run() -> tuple:
        x, y = x0, y0
        for _ in range(STEPS):
            x, y = step(x, y)
        return x.numpy(), y.numpy()

    return run


def workload() -> Workload:
    return Workload(name="C14 compiled B5 saddle", builders={
        "dualgrad": _compiled, "dualgrad-eager": _builder("dualgrad"), "torch": _builder("torch")},
        time_goals={"torch": 0.5}, notes={"torch": " (torch.func)"})
