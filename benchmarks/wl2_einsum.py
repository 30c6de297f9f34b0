"""WL2: ``np.einsum("ij,jk,kl->il", a, b, c)`` of three 200x200 operands on dualgrad Tensors.

The contraction path is computed once per subscripts and shapes (cached), so
the call should cost ``opt_einsum.contract`` plus dispatch. Goal: at most 1.1x
``opt_einsum.contract`` alone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

SIZE = 200
EQUATION = "ij,jk,kl->il"


def _data() -> list:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((SIZE, SIZE)) for _ in range(3)]


def _dualgrad() -> Callable:
    import dualgrad as dg

    operands = [dg.tensor(x) for x in _data()]
    return lambda: (np.einsum(EQUATION, *operands).numpy(),)


def _opt_einsum() -> Callable:
    import opt_einsum

    operands = _data()
    return lambda: (opt_einsum.contract(EQUATION, *operands),)


def _numpy() -> Callable:
    operands = _data()
    return lambda: (np.einsum(EQUATION, *operands, optimize=True),)


def _torch() -> Callable:
    import torch

    operands = [torch.from_numpy(x) for x in _data()]
    return lambda: (torch.einsum(EQUATION, *operands).numpy(),)


def workload() -> Workload:
    """WL2 with its goal: at most 1.1x opt_einsum.contract."""
    return Workload(
        name="WL2 einsum 3x 200x200",
        builders={"dualgrad": _dualgrad, "opt_einsum": _opt_einsum, "numpy": _numpy, "torch": _torch},
        time_goals={"opt_einsum": 1.1},
    )
