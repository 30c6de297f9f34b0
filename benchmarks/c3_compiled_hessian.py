"""C3: W4's Hessian (Rosenbrock, n = 300) through ``dualgrad.compile(hessian(f))``.

Goal (compile issue): at most 3x the time of JAX's ``jit(hessian(f))``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from .w4_hessian import _x, rosenbrock


def _dualgrad(compiled: bool) -> Callable:
    import dualgrad as dg

    hessian = dg.func.hessian(rosenbrock)
    if compiled:
        hessian = dg.compile(hessian)
    x = dg.tensor(_x())
    return lambda: (hessian(x).numpy(),)


def _jax() -> Callable:
    import jax

    jax.config.update("jax_enable_x64", True)
    hessian = jax.jit(jax.hessian(rosenbrock))
    x = jax.numpy.asarray(_x())
    return lambda: (np.asarray(hessian(x)),)


def workload() -> Workload:
    return Workload(
        name="C3 compiled W4 Hessian n=300",
        builders={"dualgrad": lambda: _dualgrad(True), "dualgrad-eager": lambda: _dualgrad(False), "jax": _jax},
        time_goals={"jax": 3.0},
        notes={"jax": " (jit-compiled)"},
    )
