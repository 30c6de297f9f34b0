"""M2: the cost of one unrecorded elementwise op on a small tensor, against NumPy's ufunc call.

A chain of 100 products ``y = y * w`` of 16-element float64 arrays with nothing requiring
grad. Goal (eager-speed issue): at most 2x NumPy's ``np.multiply`` per op.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

SIZE, OPS = 16, 100


def _arrays() -> tuple:
    rng = np.random.default_rng(0)
    return rng.uniform(0.9, 1.1, SIZE), rng.uniform(0.9, 1.1, SIZE)


def _chain(x, w):  # noqa: ANN001, ANN202 - tensors or arrays alike
    y = x
    for _ in range(OPS):
        y = y * w
    return y


def _dualgrad() -> Callable:
    import dualgrad as dg

    x, w = (dg.tensor(a) for a in _arrays())
    return lambda: (_chain(x, w).numpy(),)


def _numpy() -> Callable:
    x, w = _arrays()
    return lambda: (_chain(x, w),)


def _torch() -> Callable:
    import torch

    x, w = (torch.tensor(a) for a in _arrays())
    return lambda: (_chain(x, w).numpy(),)


def workload() -> Workload:
    """M2 with its goal."""
    return Workload(name="M2 unrecorded op x100, 16 elements", builders={"dualgrad": _dualgrad,
                    "numpy": _numpy, "torch": _torch}, time_goals={"numpy": 2.0})
