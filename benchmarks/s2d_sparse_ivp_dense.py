"""S2 (issue 28): ``s2c``'s ``solve_ivp(method='BDF')`` (Brusselator N = 32, n = 2048, t in [0, 10]; see
``s2c`` for why N = 32) with dualgrad's sparse ``jac`` against SciPy's default dense finite differences
(goal: >= 20x faster, i.e. a ratio <= 0.05). Slow: about 35 s per dense solve on the project machine with
one BLAS thread (more with BLAS threads competing for the 2 shared cores), and the harness runs it about
ten times: set ``OPENBLAS_NUM_THREADS=1`` for steadier figures."""

from __future__ import annotations

from ._harness import Workload
from .s2c_sparse_ivp import N, solver


def workload() -> Workload:
    return Workload(name="S2 sparse solve_ivp BDF vs dense FD N=32",
                    builders={"dualgrad": lambda: solver(N, "dualgrad"),
                              "scipy_dense_fd": lambda: solver(N, "dense_fd")},
                    time_goals={"scipy_dense_fd": 0.05},
                    notes={"scipy_dense_fd": " (SciPy's default: dense finite differences)"})
