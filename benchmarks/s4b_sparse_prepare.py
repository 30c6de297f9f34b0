"""S4 (issue 28): detection + coloring of the chained Rosenbrock Hessian, n = 10^5: dualgrad's star and
acyclic colorings against asdex's (JAX: ``hessian_sparsity`` then ``hessian_coloring_from_sparsity``, a star
coloring). Each implementation returns the pattern (CSR ``indptr``, ``indices``): the harness checks they
agree; the colors are in the notes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import rosenbrock

N = 100_000
NOTES: dict = {}


def _point() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1.0, 1.0, N)


def _dualgrad(coloring: str) -> Callable:
    import dualgrad.sparse as dgs

    x = _point()

    def run() -> tuple:
        hess = dgs.hessian_fn(rosenbrock, x, coloring=coloring)
        NOTES[f"dualgrad_{coloring}"] = f" ({hess.ncolors} colors)"
        return hess.sparsity.indptr, hess.sparsity.indices

    return run


def _asdex() -> Callable:
    from ._sparse_problems import asdex_prepare, jax_rosenbrock

    x = _point()

    def run() -> tuple:
        coloring = asdex_prepare(jax_rosenbrock, x, hessian=True)
        NOTES["asdex"] = f" ({coloring.num_colors} colors, star; dualgrad's star:{NOTES.get('dualgrad_star', ' ?')})"
        rows, cols = np.asarray(coloring.sparsity.rows, np.int64), np.asarray(coloring.sparsity.cols, np.int64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=N))])
        return indptr, cols[np.lexsort((cols, rows))]

    return run


def workload() -> Workload:
    builders = {"dualgrad": lambda: _dualgrad("star"), "dualgrad_acyclic": lambda: _dualgrad("acyclic"),
                "asdex": _asdex}
    return Workload(name="S4 sparse detect+color Hessian n=1e5", builders=builders, notes=NOTES)
