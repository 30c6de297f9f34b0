"""C9: W5's Hessian-vector product (Rosenbrock, n = 1e6) through ``dualgrad.compile``.

Goal (compile issue): at most 0.5x torch eager.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .w4_hessian import rosenbrock
from .w5_hvp import _data, _torch


def _dualgrad(compiled: bool) -> Callable:
    from dualgrad.autograd.functional import hvp

    import dualgrad as dg

    x, v = (dg.tensor(a) for a in _data())

    def product(x: dg.Tensor, v: dg.Tensor) -> dg.Tensor:
        return hvp(rosenbrock, x, v)[1]

    if compiled:
        product = dg.compile(product)
    return lambda: (product(x, v).numpy(),)


def workload() -> Workload:
    return Workload(
        name="C9 compiled W5 hvp n=1e6",
        builders={"dualgrad": lambda: _dualgrad(True), "dualgrad-eager": lambda: _dualgrad(False), "torch": _torch},
        time_goals={"torch": 0.5},
    )
