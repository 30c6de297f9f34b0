"""C4: the Jacobian of stiff ODE right-hand sides, as an implicit solver asks for it (many calls).

Robertson's chemical kinetics (3 states) and a Brusselator discretised on 25 cells (50 states),
``dualgrad.compile(jacfwd(rhs))`` against eager ``jacfwd(rhs)``. Goal (compile issue): at least
10x faster than eager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Workload

CELLS = 25


def robertson(y: Any) -> Any:
    import dualgrad as dg

    y1, y2, y3 = y[0], y[1], y[2]
    return dg.stack([-0.04 * y1 + 1e4 * y2 * y3,
                     0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 * y2,
                     3e7 * y2 * y2])


def brusselator(y: Any) -> Any:
    import dualgrad as dg

    u, v = y[:CELLS], y[CELLS:]
    alpha = 0.02 * (CELLS + 1) ** 2

    def laplacian(w: Any, boundary: float) -> Any:
        left = dg.cat([dg.full((1,), boundary, dtype=w.dtype), w[:-1]])
        right = dg.cat([w[1:], dg.full((1,), boundary, dtype=w.dtype)])
        return left - 2.0 * w + right

    uuv = u * u * v
    return dg.cat([1.0 + uuv - 4.0 * u + alpha * laplacian(u, 1.0), 3.0 * u - uuv + alpha * laplacian(v, 3.0)])


def _state(n: int) -> np.ndarray:
    if n == 3:
        return np.array([1.0, 2e-5, 1e-2])
    grid = np.linspace(0.0, 1.0, CELLS)
    return np.concatenate([1.0 + np.sin(2 * np.pi * grid), np.full(CELLS, 3.0)])


def _dualgrad(rhs: Callable, n: int, compiled: bool) -> Callable:
    import dualgrad as dg

    jacobian = dg.func.jacfwd(rhs)
    if compiled:
        jacobian = dg.compile(jacobian)
    y = dg.tensor(_state(n))
    return lambda: (jacobian(y).numpy(),)


def _workload(name: str, rhs: Callable, n: int) -> Workload:
    return Workload(
        name=name,
        builders={"dualgrad": lambda: _dualgrad(rhs, n, True), "dualgrad-eager": lambda: _dualgrad(rhs, n, False)},
        time_goals={"dualgrad-eager": 0.1},
    )


def workload() -> Workload:
    return _workload("C4 compiled ODE Jacobian, 3 states", robertson, 3)


def workloads() -> list[Workload]:
    """Both sizes (``workload()`` is the one the runner discovers; see c5 for 50 states)."""
    return [workload(), _workload("C5 compiled ODE Jacobian, 50 states", brusselator, 2 * CELLS)]
