"""S1 (issue 28): one sparse Jacobian of the 1-D reaction-diffusion residual at n = 10^5 against one
evaluation of the residual (goal: <= 5x), by dualgrad on a Tensor (``residual``) and by NumPy on an array
(``residual_numpy``). The Jacobian is compared with the hand-written one when the workload is built (the
implementations here compute different things, so each returns nothing for the harness to compare).

``s1d`` is the same with ``jacobian_fn(..., compile=True)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import reaction_diffusion, reaction_diffusion_jacobian

N = 100_000


def point() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.0, 1.0, N)


def jacobian(compile: bool) -> Callable:
    import scipy.sparse as sp

    import dualgrad.sparse as dgs

    x = point()
    jac = dgs.jacobian_fn(reaction_diffusion, x, compile=compile)
    for z in (x, x[::-1].copy()):  # (with compile=True, the second point is a replay)
        if abs(sp.csr_array(jac(z)) - reaction_diffusion_jacobian(z)).max() > 1e-12:
            raise AssertionError("S1: dualgrad's sparse Jacobian differs from the hand-written one")
    return lambda: (jac(x), ())[1]


def _residual() -> Callable:
    import dualgrad as dg

    x = dg.tensor(point())
    return lambda: (reaction_diffusion(x), ())[1]


def _residual_numpy() -> Callable:
    x = point()
    return lambda: (reaction_diffusion(x), ())[1]


def residual_workload(name: str, compile: bool) -> Workload:
    return Workload(name=name, builders={"dualgrad": lambda: jacobian(compile), "residual": _residual,
                                         "residual_numpy": _residual_numpy},
                    time_goals={"residual": 5.0}, notes={"residual_numpy": " (plain NumPy, no goal)"})


def workload() -> Workload:
    return residual_workload("S1 sparse jac/residual n=1e5", compile=False)
