"""WF1: forward-mode derivative of the W1 chain (300 steps of ``y = sin(y) * 1.01 + 0.1``).

Goal (forward-mode issue): one tangent through the chain costs no more than the
reverse-mode gradient of the same chain ("dualgrad-reverse").
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .w1_scalar_chain import STEPS, Y0, _chain


def _dualgrad_forward() -> Callable:
    import dualgrad as dg
    from dualgrad import forward_ad as fwAD

    def run() -> tuple:
        with fwAD.dual_level():
            y = _chain(fwAD.make_dual(dg.tensor(Y0), dg.tensor(1.0)), dg.sin)
            return (fwAD.unpack_dual(y).tangent,)

    return run


def _dualgrad_reverse() -> Callable:
    import dualgrad as dg

    def run() -> tuple:
        y0 = dg.tensor(Y0, requires_grad=True)
        return dg.grad(_chain(y0, dg.sin), y0)

    return run


def _torch_forward() -> Callable:
    import torch
    import torch.autograd.forward_ad as fwAD

    def run() -> tuple:
        with fwAD.dual_level():
            y0 = fwAD.make_dual(torch.tensor(Y0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
            return (fwAD.unpack_dual(_chain(y0, torch.sin)).tangent.numpy(),)

    return run


def _jax_forward() -> Callable:
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    tangent = jax.jit(lambda y: jax.jvp(lambda z: _chain(z, jax.numpy.sin), (y,), (1.0,))[1])
    return lambda: (np.asarray(tangent(Y0)),)


def workload() -> Workload:
    """WF1 with its goal: forward mode no slower than dualgrad's own reverse mode."""
    return Workload(
        name=f"WF1 forward chain ({STEPS} steps)",
        builders={"dualgrad": _dualgrad_forward, "dualgrad-reverse": _dualgrad_reverse,
                  "torch": _torch_forward, "jax": _jax_forward},
        time_goals={"dualgrad-reverse": 1.0},
        notes={"jax": " (jit-compiled)", "torch": " (forward_ad)"},
    )
