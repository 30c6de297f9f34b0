"""C1: W1's gradient (300 scalar steps ``y = sin(y) * 1.01 + 0.1``) through ``dualgrad.compile``.

Goals (compile issue): at least 10x faster than eager dualgrad and at most 0.1x torch eager.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .w1_scalar_chain import Y0, _chain, _jax, _torch


def _compiled() -> Callable:
    import dualgrad as dg

    gradient = dg.compile(dg.func.grad(lambda y: _chain(y, dg.sin)))
    y0 = dg.tensor(Y0)
    return lambda: (gradient(y0).numpy(),)


def _eager() -> Callable:
    import dualgrad as dg

    gradient = dg.func.grad(lambda y: _chain(y, dg.sin))
    y0 = dg.tensor(Y0)
    return lambda: (gradient(y0).numpy(),)


def workload() -> Workload:
    return Workload(
        name="C1 compiled W1 gradient",
        builders={"dualgrad": _compiled, "dualgrad-eager": _eager, "torch": _torch, "jax": _jax},
        time_goals={"dualgrad-eager": 0.1, "torch": 0.1},
        notes={"jax": " (jit-compiled)"},
    )
