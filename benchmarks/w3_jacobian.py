"""W3: the Jacobian of ``f(x) = tanh(A @ x) + 0.5 * x**2``, n = 300.

Goals (functional issue): the vectorized Jacobian (one batched forward pass,
``jacobian(..., vectorize=True, strategy='forward-mode')``) at least 10x faster
than the row loop (``vectorize=False``, one backward pass per row) and at most
0.5x the time of ``torch.func.jacfwd``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

N = 300


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return rng.standard_normal((N, N)) / np.sqrt(N), rng.standard_normal(N)


def _dualgrad(**options: object) -> Callable:
    from dualgrad.autograd.functional import jacobian

    import dualgrad as dg

    a, x = _data()
    a, x = dg.tensor(a), dg.tensor(x)

    def f(t: dg.Tensor) -> dg.Tensor:
        return (a @ t).tanh() + 0.5 * t ** 2

    return lambda: (jacobian(f, x, **options).numpy(),)


def _numpy() -> Callable:
    a, x = _data()

    def run() -> tuple:
        return ((1 - np.tanh(a @ x) ** 2)[:, None] * a + np.diag(x),)

    return run


def _torch() -> Callable:
    import torch

    a, x = (torch.from_numpy(v) for v in _data())
    jac = torch.func.jacfwd(lambda t: torch.tanh(a @ t) + 0.5 * t ** 2)
    return lambda: (jac(x).numpy(),)


def workload() -> Workload:
    return Workload(
        name="W3 Jacobian n=300",
        builders={"dualgrad": lambda: _dualgrad(vectorize=True, strategy="forward-mode"),
                  "dualgrad-rowloop": lambda: _dualgrad(vectorize=False),
                  "numpy": _numpy, "torch": _torch},
        time_goals={"dualgrad-rowloop": 0.1, "torch": 0.5},
        notes={"numpy": " (hand-written, for scale)"},
    )
