"""W4: the full Hessian of the Rosenbrock function, n = 300.

Goal (functional issue): at most 0.5x the time of ``torch.func.hessian``. dualgrad
computes it forward-over-reverse in one batched pass
(``hessian(..., vectorize=True, outer_jacobian_strategy='forward-mode')``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Workload

N = 300


def rosenbrock(x: Any) -> Any:
    head, tail = x[:-1], x[1:]
    return (100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2).sum()


def _x() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, N)


def _dualgrad() -> Callable:
    from dualgrad.autograd.functional import hessian

    import dualgrad as dg

    x = dg.tensor(_x())
    return lambda: (hessian(rosenbrock, x, vectorize=True, outer_jacobian_strategy="forward-mode").numpy(),)


def _numpy() -> Callable:
    """The hand-written (tridiagonal) Hessian."""
    x = _x()

    def run() -> tuple:
        h = np.zeros((N, N))
        head, tail = x[:-1], x[1:]
        i = np.arange(N - 1)
        h[i, i] += 1200.0 * head**2 - 400.0 * tail + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * head
        return (h,)

    return run


def _torch() -> Callable:
    import torch

    x = torch.from_numpy(_x())
    hess = torch.func.hessian(rosenbrock)
    return lambda: (hess(x).numpy(),)


def workload() -> Workload:
    return Workload(
        name="W4 Rosenbrock Hessian n=300",
        builders={"dualgrad": _dualgrad, "numpy": _numpy, "torch": _torch},
        time_goals={"torch": 0.5},
        notes={"numpy": " (hand-written, for scale)"},
    )
