"""S2 (issue 28): ``s2c``'s ``solve_ivp(method='BDF')`` (Brusselator N = 16, t in [0, 10]) with dualgrad's
sparse ``jac`` against SciPy's default dense finite differences (goal: >= 20x faster, i.e. a ratio <= 0.05).
Slow: about 20 s per dense solve on the project machine, and the harness runs it about ten times."""

from __future__ import annotations

from ._harness import Workload
from .s2c_sparse_ivp import N, solver


def workload() -> Workload:
    return Workload(name="S2 sparse solve_ivp BDF vs dense FD N=16",
                    builders={"dualgrad": lambda: solver(N, "dualgrad"),
                              "scipy_dense_fd": lambda: solver(N, "dense_fd")},
                    time_goals={"scipy_dense_fd": 0.05},
                    notes={"scipy_dense_fd": " (SciPy's default: dense finite differences)"})
