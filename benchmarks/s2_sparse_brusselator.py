"""S2 (issue 28): the 2-D Brusselator, N = 128 (n = 32768).

Workload: dualgrad's sparse Jacobian (prepared once) against the hand-written sparse Jacobian and asdex's
jitted one (JAX) (goal: the Jacobian in <= 20 ms). ``s2b`` times the preparation, ``s2c`` and ``s2d``
``solve_ivp``. ``python -m benchmarks.s2_sparse_brusselator`` also prints the colors (goal <= 2x
the largest row count) and ``solve_ivp(method='BDF')`` over t in [0, 10] with dualgrad's ``jac``, with
SciPy's grouped finite differences (``jac_sparsity``) and, on a smaller grid where a dense matrix fits,
with SciPy's default dense finite differences.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import Brusselator
from ._sparse_problems import values as _values
from .s2c_sparse_ivp import N as IVP_N

N = 128


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    problem = Brusselator(N)
    y = problem.initial()
    jac = dgs.jacobian_fn(problem, y)
    return lambda: (_values(jac(y)),)


def _numpy() -> Callable:
    problem = Brusselator(N)
    y = problem.initial()

    def run() -> tuple:
        J = problem.jacobian(y)
        return (_values(J),)

    return run


def _asdex() -> Callable:
    from ._sparse_problems import AsdexPeer, JaxBrusselator

    problem = JaxBrusselator(N)
    peer = AsdexPeer(problem, problem.initial())
    NOTES["asdex"] = f" (jitted JAX; {peer.ncolors} colors)"
    return lambda: (_values(peer()),)


NOTES: dict = {"numpy": " (hand-written scipy.sparse assembly)"}


def workload() -> Workload:
    return Workload(name="S2 sparse jac Brusselator N=128 (goal <=20 ms)",
                    builders={"dualgrad": _dualgrad, "numpy": _numpy, "asdex": _asdex}, notes=NOTES)


def ivp(N: int, t_end: float = 10.0, dense: bool = False) -> dict:
    """Seconds of ``solve_ivp(method='BDF')`` with each Jacobian, and the largest difference of the end states."""
    from scipy.integrate import solve_ivp

    import dualgrad.sparse as dgs

    problem = Brusselator(N)
    y0 = problem.initial()
    results = {}
    start = time.perf_counter()
    jac = dgs.jacobian_fn(problem, y0)
    results["prepare_s"] = time.perf_counter() - start
    results["colors"] = jac.ncolors
    results["max_row_nnz"] = int(np.diff(jac.sparsity.indptr).max())
    runs = {"dualgrad_jac": {"jac": lambda t, y: jac(y)}, "scipy_jac_sparsity": {"jac_sparsity": jac.sparsity}}
    if dense:
        runs["scipy_dense_fd"] = {}
    ends = {}
    for name, options in runs.items():
        start = time.perf_counter()
        solution = solve_ivp(problem.rhs, (0.0, t_end), y0, method="BDF", rtol=1e-6, atol=1e-8, **options)
        results[f"{name}_s"] = time.perf_counter() - start
        results[f"{name}_njev"] = solution.njev
        ends[name] = solution.y[:, -1]
    results["max_end_difference"] = max(float(np.abs(e - ends["dualgrad_jac"]).max()) for e in ends.values())
    return results


if __name__ == "__main__":
    import sys

    import dualgrad.sparse as dgs

    problem = Brusselator(N)
    y = problem.initial()
    jac = dgs.jacobian_fn(problem, y)
    start = time.perf_counter()
    for _ in range(10):
        jac(y)
    print({"N": N, "jacobian_ms": (time.perf_counter() - start) / 10 * 1e3})
    print({"N": IVP_N, **ivp(IVP_N, dense=True)})  # (s2c's grid: the largest where dense FD is feasible)
    if "--full" in sys.argv:  # (several minutes: most of it in solve_ivp itself, for both Jacobians)
        print({"N": N, **ivp(N)})
