"""C2: W3's Jacobian (``tanh(A @ x) + 0.5 * x**2``, n = 300) through ``dualgrad.compile(jacfwd(f))``.

Goal (compile issue): at most 3x the time of JAX's ``jit(jacfwd(f))``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from .w3_jacobian import _data


def _dualgrad(compiled: bool) -> Callable:
    import dualgrad as dg

    a, x = (dg.tensor(v) for v in _data())
    jacobian = dg.func.jacfwd(lambda t: (a @ t).tanh() + 0.5 * t ** 2)
    if compiled:
        jacobian = dg.compile(jacobian)
    return lambda: (jacobian(x).numpy(),)


def _jax() -> Callable:
    import jax

    jax.config.update("jax_enable_x64", True)
    a, x = (jax.numpy.asarray(v) for v in _data())
    jacobian = jax.jit(jax.jacfwd(lambda t: jax.numpy.tanh(a @ t) + 0.5 * t ** 2))
    return lambda: (np.asarray(jacobian(x)),)


def workload() -> Workload:
    return Workload(
        name="C2 compiled W3 Jacobian n=300",
        builders={"dualgrad": lambda: _dualgrad(True), "dualgrad-eager": lambda: _dualgrad(False), "jax": _jax},
        time_goals={"jax": 3.0},
        notes={"jax": " (jit-compiled)"},
    )
