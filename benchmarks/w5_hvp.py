"""W5: a Hessian-vector product of the Rosenbrock function, n = 10^6.

Goals (functional issue): at most 3x a hand-written NumPy hvp, and peak memory
at most 3x (the harness compares it with the NumPy hvp's peak). dualgrad uses
``hvp`` (forward over reverse: one forward and one backward pass).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from .w4_hessian import rosenbrock

N = 10**6


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return rng.uniform(-1.0, 1.0, N), rng.standard_normal(N)


def _dualgrad() -> Callable:
    from dualgrad.autograd.functional import hvp

    import dualgrad as dg

    x, v = (dg.tensor(a) for a in _data())
    return lambda: (hvp(rosenbrock, x, v)[1].numpy(),)


def _numpy() -> Callable:
    """The hand-written product of the tridiagonal Hessian with ``v``."""
    x, v = _data()

    def run() -> tuple:
        head, tail = x[:-1], x[1:]
        hv = np.zeros(N)
        hv[:-1] += (1200.0 * head**2 - 400.0 * tail + 2.0) * v[:-1] - 400.0 * head * v[1:]
        hv[1:] += 200.0 * v[1:] - 400.0 * head * v[:-1]
        return (hv,)

    return run


def _torch() -> Callable:
    import torch

    x, v = (torch.from_numpy(a) for a in _data())
    return lambda: (torch.func.jvp(torch.func.grad(rosenbrock), (x,), (v,))[1].numpy(),)


def workload() -> Workload:
    return Workload(
        name="W5 Rosenbrock hvp n=1e6",
        builders={"dualgrad": _dualgrad, "numpy": _numpy, "torch": _torch},
        time_goals={"numpy": 3.0},
        memory_goals={"numpy": 3.0},
    )
