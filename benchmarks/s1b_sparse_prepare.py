"""S1 (issue 28): detection + coloring of the 1-D reaction-diffusion Jacobian at n = 10^5 (goal: <= 0.5 s,
3 colors), against asdex's (JAX: ``jacobian_sparsity`` then ``jacobian_coloring_from_sparsity``).

Each implementation returns the pattern (CSR ``indptr``, ``indices``) and its number of colors: the harness
checks they agree."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import reaction_diffusion

N = 100_000


def _point() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.0, 1.0, N)


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    x = _point()

    def run() -> tuple:
        jac = dgs.jacobian_fn(reaction_diffusion, x)
        return jac.sparsity.indptr, jac.sparsity.indices, [jac.ncolors]

    return run


def _asdex() -> Callable:
    from ._sparse_problems import asdex_prepare, jax_reaction_diffusion

    x = _point()

    def run() -> tuple:
        coloring = asdex_prepare(jax_reaction_diffusion, x)
        pattern = coloring.sparsity
        rows, cols = np.asarray(pattern.rows, np.int64), np.asarray(pattern.cols, np.int64)
        order = np.lexsort((cols, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=N))])
        return indptr, cols[order], [coloring.num_colors]

    return run


def workload() -> Workload:
    return Workload(name="S1 sparse detect+color n=1e5 (goal <=500 ms)",
                    builders={"dualgrad": _dualgrad, "asdex": _asdex})
