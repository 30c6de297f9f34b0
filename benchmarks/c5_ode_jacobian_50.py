"""C5: the Jacobian of a Brusselator right-hand side on 25 cells (50 states), compiled vs eager (see c4)."""

from __future__ import annotations

from ._harness import Workload
from .c4_ode_jacobian import workloads


def workload() -> Workload:
    return workloads()[1]
