"""S4 (issue 28): the chained Rosenbrock Hessian, n = 10^5: <= 3 colors, <= 50 ms per Hessian after
preparation. Workload: dualgrad's sparse Hessian (star coloring; eager, ``compile=True`` and the acyclic
coloring) against the hand-written tridiagonal one and asdex's jitted one (JAX); ``s4b`` times the
preparation."""

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


def _dualgrad(coloring: str = "star", compile: bool = False) -> Callable:
    import dualgrad.sparse as dgs

    x = _point()
    hess = dgs.hessian_fn(rosenbrock, x, coloring=coloring, compile=compile)
    if coloring == "star" and not compile:
        NOTES["numpy"] = f" (hand-written; dualgrad: {hess.ncolors} colors, goal <= 3)"
    else:
        NOTES[f"dualgrad_{'compiled' if compile else coloring}"] = f" ({hess.ncolors} colors)"
    return lambda: (_values(hess(x)),)


def _asdex() -> Callable:
    from ._sparse_problems import AsdexPeer, jax_rosenbrock

    peer = AsdexPeer(jax_rosenbrock, _point(), hessian=True)
    NOTES["asdex"] = f" (jitted JAX; {peer.ncolors} colors)"
    return lambda: (_values(peer()),)


NOTES: dict = {}


def _numpy() -> Callable:
    x = _point()

    def run() -> tuple:
        H = rosenbrock_hessian(x)
        return (_values(H),)

    return run


def workload() -> Workload:
    builders = {"dualgrad": _dualgrad, "dualgrad_compiled": lambda: _dualgrad(compile=True),
                "dualgrad_acyclic": lambda: _dualgrad("acyclic"), "numpy": _numpy, "asdex": _asdex}
    return Workload(name="S4 sparse Rosenbrock Hessian n=1e5 (goal <=50 ms)", builders=builders, notes=NOTES)


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
