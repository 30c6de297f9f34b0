"""``jacobian_sparsity`` and ``hessian_sparsity``: the patterns as boolean ``scipy.sparse`` arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .rules import propagate
from .tracer import trace


def jacobian_sparsity(f: Callable, x: Any, *, local: bool = False) -> sp.csr_array:
    """The nonzero pattern of the Jacobian of ``f`` (``R^n -> R^m``, output flattened in C order) as an
    ``(m, n)`` boolean CSR array.

    Global mode (the default) runs ``f`` once on index sets instead of numbers: entry ``(i, j)`` is set
    when output ``i`` depends on input ``j`` through some operation whose derivative is not always zero,
    for *every* input (``x`` only gives the shape and the values of constants computed from it). Python
    branches on traced values raise; ``local=True`` gives the pattern at the point ``x``, where ``where``,
    ``maximum``, ``clamp``, max/min and Python branches take the branch ``x`` takes. Both are
    conservative: an entry may be set where the derivative happens to vanish (cancellation, a product with
    a traced value that is zero at ``x``), never missing one that is not. ``x`` must be 1-D.

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> def f(x):
    ...     return x[1:] * x[:-1] + np.sin(x[1:])
    >>> dgs.jacobian_sparsity(f, np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    info, size = trace(f, x, local=local, order=1, fn="jacobian_sparsity", propagate=propagate)
    n = info.g.width
    return sp.csr_array((np.ones(len(info.g.keys), bool), info.g.keys, info.g.indptr), shape=(size, n))


def hessian_sparsity(f: Callable, x: Any, *, local: bool = False) -> sp.csr_array:
    """The nonzero pattern of the Hessian of the scalar function ``f`` as an ``(n, n)`` symmetric boolean CSR
    array, from second-order propagation: entry ``(i, j)`` is set when inputs ``i`` and ``j`` meet in a
    nonlinear operation (``x_i * x_j``, ``exp(x_i + x_j)``, ``x_i ** 2`` for ``i = j``); linear and piecewise
    linear operations (``+``, ``sum``, ``maximum``, ``abs``) only carry the sets through. ``local`` as in
    ``jacobian_sparsity``.

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> def rosenbrock(x):
    ...     return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> dgs.hessian_sparsity(rosenbrock, np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    info, _ = trace(f, x, local=local, order=2, fn="hessian_sparsity", propagate=propagate)
    n = info.g.width
    keys = info.h.keys
    i, j = keys // max(n, 1), keys % max(n, 1)
    rows, cols = np.concatenate([i, j]), np.concatenate([j, i])
    pattern = sp.csr_array((np.ones(len(rows), bool), (rows, cols)), shape=(n, n))
    pattern.sum_duplicates()
    return pattern
