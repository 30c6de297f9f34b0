"""Prepare once, evaluate many: ``jacobian_fn`` / ``hessian_fn`` detect and color once; each call then runs
one batched pass (``vmap`` of ``jvp`` over the color seeds, of ``vjp`` over the cotangent seeds, or of the
forward-over-reverse Hessian-vector product) and decompresses into a ``scipy.sparse`` array.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..tensor import Tensor
from ..transforms.func import grad, jacfwd, jvp, vjp
from ..transforms.func import hessian as dense_hessian
from ..vmap.batching import vmap
from .coloring import AcyclicColoring, Coloring, SymmetricColoring, choose, color_acyclic, color_symmetric
from .detection import hessian_sparsity, jacobian_sparsity
from .tracer import as_input

FORMATS = ("csr", "csc", "coo", "bsr", "dia", "dok", "lil")
MODES = ("auto", "forward", "reverse", "bidirectional")
COLORINGS = ("star", "acyclic")


class SparsityCheckError(AssertionError):
    """``check=True`` found entries where the sparse derivative differs from the dense one."""


class _Flat:
    """``f`` with its output flattened (a class, not a closure, so that prepared objects pickle)."""

    def __init__(self, f: Callable, scalar: bool = False):
        self.f = f
        self.scalar = scalar

    def __call__(self, x: Tensor) -> Tensor:
        y = self.f(x)
        if not isinstance(y, Tensor):
            y = Tensor(np.asarray(y, dtype=np.float64))
        return y.reshape(()) if self.scalar else y.reshape(-1)


def _check_choice(value: Any, allowed: tuple, name: str, fn: str) -> None:
    if value not in allowed:
        raise ValueError(f"{fn}(): {name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def _user_pattern(sparsity: Any, shape: tuple, fn: str) -> sp.csr_array:
    """A pattern given by the user, as a boolean CSR array of ``shape`` (ValueError if its shape differs)."""
    pattern = sp.csr_array(sparsity if sp.issparse(sparsity) else np.asarray(sparsity), dtype=bool)
    if pattern.shape != shape:
        raise ValueError(f"{fn}(): sparsity has shape {pattern.shape}, but f's derivative at x0 has shape {shape}")
    pattern.eliminate_zeros()
    return pattern


def _output_size(f: Callable, x: np.ndarray) -> int:
    y = f(Tensor(x.copy()))
    return int(np.size(y._data if isinstance(y, Tensor) else y))


def _entries(pattern: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    return rows, pattern.indices.astype(np.int64)


def _seeds(colors: np.ndarray, count: int) -> Tensor:
    """The (count, len(colors)) 0/1 seed matrix: row c is the indicator of color c."""
    seeds = np.zeros((count, len(colors)))
    seeded = colors >= 0
    seeds[colors[seeded], np.flatnonzero(seeded)] = 1.0
    return Tensor(seeds)


def _compare(sparse: np.ndarray, dense: np.ndarray, what: str, fn: str) -> None:
    """Raise ``SparsityCheckError`` naming the entries where ``sparse`` and ``dense`` differ."""
    scale = max(float(np.abs(dense).max(initial=0.0)), 1.0)
    bad = np.argwhere(~np.isclose(sparse, dense, rtol=1e-7, atol=1e-9 * scale))
    if len(bad):
        shown = ", ".join(f"({i}, {j}): sparse {sparse[i, j]:.6g}, dense {dense[i, j]:.6g}" for i, j in bad[:10])
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise SparsityCheckError(
            f"{fn}(check=True): the sparse {what} differs from the dense one at {len(bad)} entries: {shown}{more}. "
            "The pattern misses nonzeros (a user-given sparsity, or local=True away from x0)")


def _check_point(x0: np.ndarray, local: bool) -> np.ndarray:
    if local:
        return x0.copy()
    rng = np.random.default_rng(0)
    return x0 + 0.1 * rng.standard_normal(x0.shape) * (1.0 + np.abs(x0))


def _flat_fn(f: Callable, scalar: bool = False) -> Callable:
    """``f`` with its output flattened, as a nested function: ``dualgrad.compile``'s guards follow closure
    cells into the functions they hold (``f`` and what it reads). A callable object is held as its bound
    ``__call__``, whose object's attributes the guards check (they miss them on the object itself)."""
    call = f if isinstance(f, (types.FunctionType, types.MethodType)) else type(f).__call__.__get__(f)

    def flat(x: Tensor) -> Tensor:
        y = call(x)
        if not isinstance(y, Tensor):
            y = Tensor(np.asarray(y, dtype=np.float64))
        if y.ndim == (0 if scalar else 1):  # (already flat: one op less under vmap and jvp)
            return y
        return y.reshape(()) if scalar else y.reshape(-1)

    return flat


def _jacobian_products(f: Callable) -> Callable:
    """The compressed products of ``f`` at ``primal``, in one batched pass per direction: ``J S^T`` (one
    ``jvp`` per seed row, ``(colors, m)``) and ``W J`` (one ``vjp`` per cotangent row, ``(colors, n)``)."""
    flat = _flat_fn(f)

    def products(primal: Tensor, forward_seeds: Tensor | None, reverse_seeds: Tensor | None) -> tuple:
        # (raveled by the caller: one seed needs no vmap, e.g. an arrowhead's dense row)
        result = ()
        if forward_seeds is not None:
            forward = lambda s: jvp(flat, (primal,), (s,))[1]  # noqa: E731
            result += (forward(forward_seeds[0]) if len(forward_seeds) == 1 else vmap(forward)(forward_seeds),)
        if reverse_seeds is not None:
            _, pullback = vjp(flat, primal)
            reverse = lambda w: pullback(w)[0]  # noqa: E731
            result += (reverse(reverse_seeds[0]) if len(reverse_seeds) == 1 else vmap(reverse)(reverse_seeds),)
        return result

    return products


def _hessian_products(f: Callable) -> Callable:
    """``H S^T`` at ``primal``: forward over reverse (``vmap`` of ``jvp`` of ``grad``), ``(colors, n)``."""
    gradient = grad(_flat_fn(f, scalar=True))

    def products(primal: Tensor, seeds: Tensor) -> tuple:
        return (vmap(lambda s: jvp(gradient, (primal,), (s,))[1])(seeds),)

    return products


class _Prepared:
    """What ``SparseJacobian`` and ``SparseHessian`` share: the CSR structure the values are written into
    (index arrays in SciPy's index dtype, so that the constructor neither converts nor scans them), the
    seeds and the products function (made on first use and not pickled: rebuilt after unpickling)."""

    _TRANSIENT = ("_seeds", "_products")

    def _structure(self, pattern: sp.csr_array) -> None:
        index_dtype = np.int32 if max(pattern.nnz, *pattern.shape) < 2 ** 31 - 1 else np.int64
        self._indices = pattern.indices.astype(index_dtype)
        self._indptr = pattern.indptr.astype(index_dtype)

    def _products_fn(self) -> Callable:
        products = self.__dict__.get("_products")
        if products is None:
            products = self._make_products()
            if self.compile:
                from ..compile import compile as compile_fn

                products = compile_fn(products)
            self._products = products
        return products

    def _assemble(self, values: np.ndarray) -> sp.sparray:
        result = sp.csr_array((values, self._indices.copy(), self._indptr.copy()), shape=self.shape)
        return result if self.format == "csr" else result.asformat(self.format)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in self._TRANSIENT}


class SparseJacobian(_Prepared):
    """A prepared sparse Jacobian: ``jac(x)`` is the Jacobian of ``f`` at ``x`` as a ``scipy.sparse`` array.

    Attributes: ``sparsity`` (boolean CSR), ``ncolors``, ``mode`` ("forward", "reverse" or
    "bidirectional"), ``format``, ``compile``. Pickles when ``f`` does (a module-level function, not a
    lambda).
    """

    def __init__(self, f: Callable, pattern: sp.csr_array, coloring: Coloring, format: str, compile: bool = False):
        self.f = f
        self.sparsity = pattern
        self.coloring = coloring
        self.mode = coloring.mode
        self.ncolors = coloring.ncolors
        self.format = format
        self.compile = compile
        self.shape = pattern.shape
        self._structure(pattern)
        m, n = pattern.shape
        rows, cols = _entries(pattern)
        if coloring.forward_rows is not None:
            forward = coloring.forward_rows[rows]
        elif coloring.forward_columns is not None:
            forward = coloring.forward_columns[cols]
        else:
            forward = np.full(len(rows), coloring.mode == "forward")
        # entry k is element _index[k] of the products, raveled and concatenated (forward ones first)
        n_forward_values = coloring.n_forward * m if forward.any() else 0
        index = np.empty(len(rows), np.intp)
        index[forward] = coloring.columns[cols[forward]] * m + rows[forward] if forward.any() else 0
        reverse = ~forward
        if reverse.any():
            index[reverse] = n_forward_values + coloring.rows[rows[reverse]] * n + cols[reverse]
        self._index = index
        self._uses = (bool(forward.any()), bool(reverse.any()))

    def _make_products(self) -> Callable:
        return _jacobian_products(self.f)

    def _seed_matrices(self) -> tuple:
        seeds = self.__dict__.get("_seeds")
        if seeds is None:
            c = self.coloring
            seeds = self._seeds = (_seeds(c.columns, c.n_forward) if self._uses[0] else None,
                                   _seeds(c.rows, c.n_reverse) if self._uses[1] else None)
        return seeds

    def __repr__(self) -> str:
        return (f"SparseJacobian(shape={self.shape}, nnz={self.sparsity.nnz}, mode={self.mode!r}, "
                f"ncolors={self.ncolors}, format={self.format!r})")

    def __call__(self, x: Any) -> sp.sparray:
        x = as_input(x, "SparseJacobian")
        if x.size != self.shape[1]:
            raise ValueError(f"SparseJacobian: x has {x.size} elements, the Jacobian was prepared for {self.shape[1]}")
        if not len(self._index):
            return self._assemble(np.zeros(0))
        products = self._products_fn()(Tensor(x.copy()), *self._seed_matrices())
        if len(products) == 1:
            flat = products[0]._data.ravel()
        else:
            flat = np.concatenate([products[0]._data.ravel(), products[1]._data.ravel()])
        return self._assemble(flat.take(self._index))


class SparseHessian(_Prepared):
    """A prepared sparse Hessian: ``hess(x)`` is the Hessian of the scalar ``f`` at ``x`` (``scipy.sparse``).

    Attributes: ``sparsity`` (boolean CSR, symmetric), ``ncolors``, ``coloring`` ("star": direct
    decompression; "acyclic": fewer colors, entries recovered by substitution along the two-colored
    trees, a sparse triangular solve), ``format``, ``compile``.
    """

    def __init__(self, f: Callable, pattern: sp.csr_array, coloring: SymmetricColoring | AcyclicColoring,
                 format: str, compile: bool = False):
        self.f = f
        self.sparsity = pattern
        self.colors = coloring
        self.coloring = "acyclic" if isinstance(coloring, AcyclicColoring) else "star"
        self.ncolors = coloring.ncolors
        self.format = format
        self.compile = compile
        n = pattern.shape[0]
        self.shape = pattern.shape
        self._structure(pattern)
        rows, cols = _entries(pattern)
        if self.coloring == "star":
            dense = np.zeros(n, bool)
            dense[coloring.dense] = True
            by_column = dense[cols] | ~dense[rows]
            self._index = np.where(by_column, coloring.colors[cols] * n + rows,
                                   coloring.colors[rows] * n + cols).astype(np.intp)
        else:
            diagonal = rows == cols
            self._diagonal = diagonal
            self._diagonal_index = coloring.colors[rows[diagonal]] * n + rows[diagonal]
            keys = coloring.edges[:, 0] * n + coloring.edges[:, 1]
            order = np.argsort(keys)
            low, high = np.minimum(rows, cols)[~diagonal], np.maximum(rows, cols)[~diagonal]
            self._edge_index = order[np.searchsorted(keys[order], low * n + high)] if len(keys) else low

    def _make_products(self) -> Callable:
        return _hessian_products(self.f)

    def _seed_matrices(self) -> Tensor:
        seeds = self.__dict__.get("_seeds")
        if seeds is None:
            seeds = self._seeds = _seeds(self.colors.colors, self.ncolors)
        return seeds

    def __repr__(self) -> str:
        return (f"SparseHessian(shape={self.shape}, nnz={self.sparsity.nnz}, coloring={self.coloring!r}, "
                f"ncolors={self.ncolors}, format={self.format!r})")

    def __call__(self, x: Any) -> sp.sparray:
        x = as_input(x, "SparseHessian")
        n = self.shape[0]
        if x.size != n:
            raise ValueError(f"SparseHessian: x has {x.size} elements, the Hessian was prepared for {n}")
        if not self.ncolors:
            return self._assemble(np.zeros(self.sparsity.nnz))
        compressed = self._products_fn()(Tensor(x.copy()), self._seed_matrices())[0]._data.ravel()  # (colors, n)
        if self.coloring == "star":
            return self._assemble(compressed.take(self._index))
        values = np.zeros(self.sparsity.nnz)
        values[self._diagonal] = compressed[self._diagonal_index]
        if len(self.colors.rhs):
            from scipy.sparse.linalg import spsolve_triangular

            edges = spsolve_triangular(self.colors.lower, compressed[self.colors.rhs], lower=True,
                                       unit_diagonal=True)
            values[~self._diagonal] = edges[self._edge_index]
        return self._assemble(values)


def jacobian_fn(f: Callable, x0: Any, *, local: bool = False, mode: str = "auto", format: str = "csr",
                sparsity: Any = None, check: bool = False, compile: bool = False) -> SparseJacobian:
    """Detect the Jacobian pattern of ``f`` at ``x0`` (or take ``sparsity``), color it, and return ``jac``
    with ``jac(x)`` the Jacobian at ``x`` as a ``scipy.sparse`` array of ``format``.

    ``x0`` and ``x`` are 1-D (flatten n-D inputs and reshape inside ``f``; the output is flattened in C
    order). ``mode``: "auto" (fewest colors), "forward" (column coloring, ``vmap`` of ``jvp``), "reverse"
    (row coloring, ``vmap`` of ``vjp``) or "bidirectional" (dense rows by reverse mode, the rest forward).
    ``local=True`` detects the pattern at ``x0`` only (valid while ``x`` takes the same branches).
    ``check=True`` compares with the dense ``jacfwd`` at a random point near ``x0`` (at ``x0`` with
    ``local=True``) and raises ``SparsityCheckError`` naming the entries that differ.
    ``compile=True`` runs the batched pass through ``dualgrad.compile``: traced on the first call, then
    replayed as plain NumPy calls for each new ``x`` (about half the time for a residual of a few large
    array operations). Its guards retrace when the state ``f`` reads changes (globals, attributes,
    closed-over values; see the compile guide for what they cannot see), and Python side effects of ``f``
    happen when it is traced only.

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> jac = dgs.jacobian_fn(lambda x: x[1:] ** 2 - x[:-1], np.ones(4), format="csc")
    >>> jac(np.arange(4.0)).toarray()
    array([[-1.,  2.,  0.,  0.],
           [ 0., -1.,  4.,  0.],
           [ 0.,  0., -1.,  6.]])
    """
    x0 = as_input(x0, "jacobian_fn")
    _check_choice(mode, MODES, "mode", "jacobian_fn")
    _check_choice(format, FORMATS, "format", "jacobian_fn")
    _check_choice(compile, (False, True), "compile", "jacobian_fn")
    if sparsity is None:
        pattern = jacobian_sparsity(f, x0, local=local)
    else:
        pattern = _user_pattern(sparsity, (_output_size(f, x0), x0.size), "jacobian_fn")
    jac = SparseJacobian(f, pattern, choose(pattern, mode), format, compile=compile)
    if check:
        point = _check_point(x0, local)
        dense = jacfwd(_Flat(f))(Tensor(point))._data.reshape(pattern.shape)
        _compare(jac(point).toarray(), dense, "Jacobian", "jacobian_fn")
    return jac


def hessian_fn(f: Callable, x0: Any, *, local: bool = False, coloring: str = "star", format: str = "csr",
               sparsity: Any = None, check: bool = False, compile: bool = False) -> SparseHessian:
    """Detect the Hessian pattern of the scalar ``f`` at ``x0`` (or take ``sparsity``), color it, and
    return ``hess`` with ``hess(x)`` the Hessian at ``x`` as a ``scipy.sparse`` array (one batched
    forward-over-reverse pass: ``vmap`` of ``jvp`` of ``grad``, one seed per color).

    ``coloring="acyclic"`` takes fewer colors (2 for a tridiagonal Hessian) and recovers the entries by
    substitution (a sparse triangular solve per call; rounding errors add up along long chains, and the
    greedy coloring loops over the vertices in Python: about 0.7 s at n = 10^5). The other arguments are
    ``jacobian_fn``'s.

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> def f(x):
    ...     return np.sum(x[1:] * x[:-1]) + np.sum(x ** 3)
    >>> hess = dgs.hessian_fn(f, np.ones(4))
    >>> hess.ncolors
    3
    >>> hess(np.ones(4)).toarray()
    array([[6., 1., 0., 0.],
           [1., 6., 1., 0.],
           [0., 1., 6., 1.],
           [0., 0., 1., 6.]])
    """
    x0 = as_input(x0, "hessian_fn")
    _check_choice(coloring, COLORINGS, "coloring", "hessian_fn")
    _check_choice(format, FORMATS, "format", "hessian_fn")
    _check_choice(compile, (False, True), "compile", "hessian_fn")
    if sparsity is None:
        pattern = hessian_sparsity(f, x0, local=local)
    else:
        pattern = _user_pattern(sparsity, (x0.size, x0.size), "hessian_fn")
        pattern = sp.csr_array(pattern + pattern.T, dtype=bool)
    hess = SparseHessian(f, pattern, color_symmetric(pattern) if coloring == "star" else color_acyclic(pattern),
                         format, compile=compile)
    if check:
        point = _check_point(x0, local)
        dense = dense_hessian(_Flat(f, scalar=True))(Tensor(point))._data
        _compare(hess(point).toarray(), dense, "Hessian", "hessian_fn")
    return hess


def jacobian(f: Callable, x: Any, *, local: bool = False, mode: str = "auto", format: str = "csr",
             sparsity: Any = None) -> sp.sparray:
    """The sparse Jacobian of ``f`` at ``x`` in one call (``jacobian_fn(f, x, ...)(x)``).

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> dgs.jacobian(lambda x: np.cumsum(x), np.ones(3)).toarray()
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]])
    """
    return jacobian_fn(f, x, local=local, mode=mode, format=format, sparsity=sparsity)(x)


def hessian(f: Callable, x: Any, *, local: bool = False, coloring: str = "star", format: str = "csr",
            sparsity: Any = None) -> sp.sparray:
    """The sparse Hessian of the scalar ``f`` at ``x`` in one call (``hessian_fn(f, x, ...)(x)``).

    >>> import numpy as np, dualgrad.sparse as dgs
    >>> dgs.hessian(lambda x: np.sum(x ** 2), np.ones(3)).toarray()
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """
    return hessian_fn(f, x, local=local, coloring=coloring, format=format, sparsity=sparsity)(x)
