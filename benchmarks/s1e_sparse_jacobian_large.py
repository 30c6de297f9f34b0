"""S1 (issue 28): the sparse Jacobian of the 1-D reaction-diffusion residual at n = 10^5, dualgrad (eager,
and with ``compile=True``) against asdex's jitted one (JAX) and the hand-written SciPy assembly."""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from ._sparse_problems import reaction_diffusion, reaction_diffusion_jacobian
from .s1c_sparse_jac_over_residual import point

NOTES: dict = {"numpy": " (hand-written scipy.sparse.diags_array)"}


def _dualgrad(compile: bool) -> Callable:
    import dualgrad.sparse as dgs

    x = point()
    jac = dgs.jacobian_fn(reaction_diffusion, x, compile=compile)
    return lambda: (jac(x).data,)


def _asdex() -> Callable:
    from ._sparse_problems import AsdexPeer, jax_reaction_diffusion

    peer = AsdexPeer(jax_reaction_diffusion, point())
    NOTES["asdex"] = f" (jitted JAX; {peer.ncolors} colors)"
    return lambda: (peer().data,)


def _numpy() -> Callable:
    x = point()
    return lambda: (reaction_diffusion_jacobian(x).data,)


def workload() -> Workload:
    return Workload(name="S1 sparse jac n=1e5",
                    builders={"dualgrad": lambda: _dualgrad(False), "dualgrad_compiled": lambda: _dualgrad(True),
                              "asdex": _asdex, "numpy": _numpy},
                    notes=NOTES)
