"""S4 (issue 28): the chained Rosenbrock Hessian, n = 10^5: <= 3 colors, <= 50 ms per Hessian after
preparation. Workload: dualgrad's sparse Hessian against the hand-written tridiagonal one."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import rosenbrock, rosenbrock_hessian
from ._sparse_problems import values as _values

N = 100_000


def _point() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, N)


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    x = _point()
    hess = dgs.hessian_fn(rosenbrock, x)
    return lambda: (_values(hess(x)),)


def _numpy() -> Callable:
    x = _point()

    def run() -> tuple:
        H = rosenbrock_hessian(x)
        return (_values(H),)

    return run


def workload() -> Workload:
    return Workload(name="S4 sparse Rosenbrock Hessian n=1e5", builders={"dualgrad": _dualgrad, "numpy": _numpy})


if __name__ == "__main__":
    import dualgrad.sparse as dgs

    x = _point()
    start = time.perf_counter()
    hess = dgs.hessian_fn(rosenbrock, x)
    prepared = time.perf_counter() - start
    hess(x)
    start = time.perf_counter()
    for _ in range(10):
        hess(x)
    print({"prepare_s": prepared, "colors": hess.ncolors, "hessian_ms": (time.perf_counter() - start) / 10 * 1e3})
