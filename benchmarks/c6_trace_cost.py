"""C6: the cost of tracing: a fresh ``dualgrad.compile`` of W1's gradient, called once, against
one eager call. Goal (compile issue): at most 3x one eager call.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .c1_compiled_w1 import _eager
from .w1_scalar_chain import Y0, _chain


def _trace() -> Callable:
    import dualgrad as dg

    y0 = dg.tensor(Y0)

    def run() -> tuple:
        return (dg.compile(dg.func.grad(lambda y: _chain(y, dg.sin)))(y0).numpy(),)

    return run


def workload() -> Workload:
    return Workload(
        name="C6 trace cost (W1 gradient)",
        builders={"dualgrad": _trace, "dualgrad-eager": _eager},
        time_goals={"dualgrad-eager": 3.0},
    )
