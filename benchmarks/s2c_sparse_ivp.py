"""S2 (issue 28): ``solve_ivp(method='BDF')`` on the 2-D Brusselator over t in [0, 10], N = 32 (n = 2048),
with dualgrad's sparse ``jac`` against SciPy's grouped finite differences (``jac_sparsity``, goal: <= 1.5x).
``s2d`` compares with SciPy's default dense finite differences (goal: >= 20x faster), which is slow.

Why N = 32: the dense comparison needs a grid where a dense Jacobian and its LU are feasible. The issue's
N = 128 is not (a 32768^2 dense matrix is 8.6 GB); N = 32 (n = 2048, 34 MB) is the largest grid where one
dense solve takes well under a minute here (about 35 s single-threaded, ~70 LU factorisations of a dense
2048^2 matrix; N = 48 would be about 11x that). At N = 16 (n = 512) dense finite differences cost only 512
residuals per Jacobian and a dense LU of 512^2 is cheap, so they are only a few times slower than any
sparse Jacobian: the issue's ratio is about large grids. ``python -m benchmarks.s2_sparse_brusselator --full``
solves N = 128 with the sparse Jacobians (minutes, mostly SciPy's sparse LU for both). Each run checks its
end state (see ``solver``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import Brusselator

N = 32
T_END = 10.0


def _solve(problem: Brusselator, jacobian: str, options: dict):
    from scipy.integrate import solve_ivp

    solution = solve_ivp(problem.rhs, (0.0, T_END), problem.initial(), method="BDF", rtol=1e-6, atol=1e-8,
                         **options)
    if not solution.success:
        raise AssertionError(f"S2 solve_ivp with {jacobian}: {solution.message}")
    return solution.y[:, -1]


_REFERENCES: dict = {}


def _reference(N: int) -> np.ndarray:
    """The end state with the hand-written Jacobian, computed once per grid."""
    if N not in _REFERENCES:
        problem = Brusselator(N)
        _REFERENCES[N] = _solve(problem, "the hand-written Jacobian", {"jac": lambda t, y: problem.jacobian(y)})
    return _REFERENCES[N]


def solver(N: int, jacobian: str) -> Callable:
    """``solve_ivp(BDF)`` over [0, T_END] with ``jacobian``: "dualgrad", "jac_sparsity" or "dense_fd".

    Each run checks its end state against the one with the hand-written Jacobian, to the accuracy of the
    solves (rtol 1e-4, atol 1e-6: the local tolerances 1e-6 / 1e-8 accumulate over the steps, and each
    Jacobian gives its own step sequence; at N = 32 the end states differ by about 1e-5), and returns
    nothing for the harness's stricter comparison."""
    import dualgrad.sparse as dgs

    problem = Brusselator(N)
    y0 = problem.initial()
    jac = dgs.jacobian_fn(problem, y0, format="csc")  # (BDF and Radau convert other formats to CSC)
    options = {"dualgrad": {"jac": lambda t, y: jac(y)}, "jac_sparsity": {"jac_sparsity": jac.sparsity},
               "dense_fd": {}}[jacobian]
    reference = _reference(N)

    def run() -> tuple:
        end = _solve(problem, jacobian, options)
        if not np.allclose(end, reference, rtol=1e-4, atol=1e-6):
            raise AssertionError(f"S2 solve_ivp with {jacobian}: the end state differs from the hand-written "
                                 f"Jacobian's by {np.abs(end - reference).max():.3g}")
        return ()

    return run


def workload() -> Workload:
    return Workload(name="S2 sparse solve_ivp BDF Brusselator N=32",
                    builders={"dualgrad": lambda: solver(N, "dualgrad"),
                              "scipy_jac_sparsity": lambda: solver(N, "jac_sparsity")},
                    time_goals={"scipy_jac_sparsity": 1.5},
                    notes={"scipy_jac_sparsity": " (grouped finite differences)"})
