"""S1 (issue 28): ``s1c`` with ``jacobian_fn(..., compile=True)`` (the batched pass replayed by
``dualgrad.compile``): one sparse Jacobian at n = 10^5 against one residual evaluation (goal: <= 5x)."""

from __future__ import annotations

from ._harness import Workload
from .s1c_sparse_jac_over_residual import residual_workload


def workload() -> Workload:
    return residual_workload("S1 sparse jac(compile=True)/residual n=1e5", compile=True)
