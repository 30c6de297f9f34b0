"""S2 (issue 28): detection + coloring of the 2-D Brusselator's Jacobian, N = 128 (n = 32768), against
asdex's (JAX). Goal: colors <= 2x the largest number of nonzeros in a row. Each implementation returns the
pattern (CSR ``indptr``, ``indices``): the harness checks they agree; the colors are in the notes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import Brusselator

N = 128
NOTES: dict = {}


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    problem = Brusselator(N)
    y = problem.initial()

    def run() -> tuple:
        jac = dgs.jacobian_fn(problem, y)
        rows = int(np.diff(jac.sparsity.indptr).max())
        NOTES["dualgrad"] = f"{jac.ncolors} colors (goal <= {2 * rows} = 2 x {rows} per row)"
        return jac.sparsity.indptr, jac.sparsity.indices

    return run


def _asdex() -> Callable:
    from ._sparse_problems import JaxBrusselator, asdex_prepare

    problem = JaxBrusselator(N)
    y = problem.initial()

    def run() -> tuple:
        coloring = asdex_prepare(problem, y)
        NOTES["asdex"] = f" ({coloring.num_colors} colors; dualgrad: {NOTES.get('dualgrad', '?')})"
        rows, cols = np.asarray(coloring.sparsity.rows, np.int64), np.asarray(coloring.sparsity.cols, np.int64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=y.size))])
        return indptr, cols[np.lexsort((cols, rows))]

    return run


def workload() -> Workload:
    return Workload(name="S2 sparse detect+color Brusselator N=128",
                    builders={"dualgrad": _dualgrad, "asdex": _asdex}, notes=NOTES)
