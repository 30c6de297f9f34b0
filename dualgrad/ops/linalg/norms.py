"""Linear-algebra functions built from other ops: norms, pinv, lstsq, matrix_power, multi_dot.

None of these is an op of its own: each is a composite of differentiable ops
(``svd``, ``inv``, ``matmul``, ``einsum``, reductions), so reverse, forward and
batching rules, and higher derivatives, come from those ops.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import opt_einsum

from ...tensor import Tensor, _wrap, as_operand
from .. import reductions
from .._axes import normalize_axis, pick_axis, pick_keepdims
from ..einsum import einsum
from ..elementwise.core import to_dtype, where
from ..reductions import amax, amin
from ..reductions import norm as _vector_p_norm
from ..shape.core import moveaxis
from ..surface import exported, public
from .decompositions import LinAlgError, _check_matrix, _check_square, _h, inv, svd, svdvals
from .products import cross_along, matmul

_NO_VALUE = object()


# -- norms -------------------------------------------------------------------------------------------
@public(None, top_level=False, method=False, namespaces={"linalg": ("vector_norm",)})
def vector_norm(x: Any, /, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                axis: Any = None, keepdims: bool | None = None) -> Tensor:
    """The vector ``ord``-norm over ``axis`` (all elements when None), as the array API's.

    ``ord`` is a number, ``inf`` or ``-inf`` (0 counts non-zero elements, with zero
    derivative). torch's ``dim``/``keepdim`` spellings are accepted too. At 0 the
    gradient is 0.

    >>> import dualgrad as dg
    >>> dg.linalg.vector_norm(dg.tensor([[3., 4.], [6., 8.]]), axis=1)
    tensor([ 5., 10.])
    """
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid norm order {ord!r} for vectors")
    keep = pick_keepdims(keepdim, keepdims)
    return _vector_p_norm(as_operand(x), p=ord, dim=pick_axis(dim, axis), keepdim=keep)


def _keep(result: Tensor, axes: tuple) -> Tensor:
    """``result`` with size-1 axes put back at the (sorted, non-negative) reduced ``axes``."""
    for a in sorted(axes):
        result = result.unsqueeze(a)
    return result


def _largest(values: Tensor, axis: int, keepdims: bool = False) -> Tensor:
    """``amax`` of non-negative ``values`` over ``axis``: 0 when that axis is empty, as torch's norms give."""
    if values.shape[axis] == 0:
        return values.sum(axis=axis, keepdims=keepdims)
    return amax(values, axis=axis, keepdims=keepdims)


def _matrix_norm(x: Tensor, ord: Any, row: int, col: int, keepdims: bool) -> Tensor:  # noqa: A002
    """NumPy's matrix norms over the axes ``row``, ``col`` (non-negative, distinct)."""
    if ord in (None, "fro"):
        result = _vector_p_norm(x, p=2, dim=(row, col))
    elif ord == "nuc" or ord in (2, -2):
        values = svdvals(moveaxis(x, (row, col), (-2, -1)))
        result = values.sum(axis=-1) if ord == "nuc" else (_largest if ord == 2 else amin)(values, axis=-1)
    elif ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        sums = x.abs().sum(axis=summed)
        result = (_largest if ord > 0 else amin)(sums, axis=other - (other > summed))
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices (use 'fro', 'nuc', 1, -1, 2, -2, "
                         "inf or -inf)")
    return _keep(result, (row, col)) if keepdims else result


@public(None, top_level=False, method=False, namespaces={"linalg": ("matrix_norm",)})
def matrix_norm(x: Any, /, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,  # noqa: A002
                keepdims: bool | None = None) -> Tensor:
    """A matrix norm of the last two axes (of ``dim``): 'fro', 'nuc', 1, -1, 2, -2, inf or -inf.

    The 2-norms and 'nuc' go through ``svdvals``; 1 and inf are maxima of absolute
    row/column sums (ties share the gradient).

    >>> import dualgrad as dg
    >>> dg.linalg.matrix_norm(dg.tensor([[1., -2.], [3., 4.]]), ord=1)
    tensor(6.)
    """
    x = as_operand(x)
    _check_matrix("matrix_norm", x)
    row, col = (normalize_axis(int(d), x.ndim, "matrix_norm") for d in dim)
    return _matrix_norm(x, ord, row, col, pick_keepdims(keepdim, keepdims))


@public(None, top_level=False, method=False, namespaces={"linalg": ("norm",)})
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """NumPy's ``linalg.norm``: a vector norm over one axis, a matrix norm over two.

    With ``axis=None``: the 2-norm of all elements when ``ord`` is None, else the
    vector or matrix norm of a 1-D or 2-D ``x``.

    >>> import dualgrad as dg
    >>> dg.linalg.norm(dg.tensor([[3., 0.], [0., 4.]]))
    tensor(5.)
    >>> dg.linalg.norm(dg.tensor([[3., 0.], [0., 4.]]), ord=2)
    tensor(4.)
    """
    x = as_operand(x)
    if axis is None:
        if ord is None:
            result = _vector_p_norm(x, p=2)
            return result.reshape((1,) * x.ndim) if keepdims else result
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions to norm: ord={ord!r} needs a 1-D or 2-D "
                             f"array without axis, got shape {x.shape}")
        axis = tuple(range(x.ndim))
    axes = (int(axis),) if np.ndim(axis) == 0 else tuple(int(a) for a in axis)
    if len(axes) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axes[0], keepdims=keepdims)
    if len(axes) == 2:
        row, col = (normalize_axis(a, x.ndim, "norm") for a in axes)
        if row == col:
            raise ValueError(f"norm: duplicate axes given: {axis}")
        return _matrix_norm(x, ord, row, col, keepdims)
    raise ValueError(f"norm: improper number of dimensions to norm: axis={axis}")


# -- pseudo-inverse and least squares -------------------------------------------------------------------
def _cutoff(values: Tensor, rcond: Any) -> Tensor:
    """``rcond * largest singular value`` per matrix (a constant: no gradient flows through it)."""
    largest = _largest(values.detach(), -1, keepdims=True)
    return largest * _wrap(np.asarray(rcond, dtype=largest.dtype))[..., None]


def _pinv_from_svd(u: Tensor, s: Tensor, vh: Tensor, rcond: Any) -> Tensor:
    keep = s > _cutoff(s, rcond)
    s_inv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    return (_h(vh) * s_inv.unsqueeze(-2)) @ _h(u)


@public(None, top_level=False, method=False, namespaces={"linalg": ("pinv",)})
def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NO_VALUE) -> Tensor:
    """The Moore-Penrose pseudo-inverse, from the SVD (singular values ``<= rcond * max`` dropped).

    ``rcond`` defaults to ``1e-15``; ``rtol`` is the array API's name for it (``rtol=None``:
    ``max(M, N) * eps``). The derivative is that of a constant-rank matrix function.
    ``hermitian`` is accepted for NumPy compatibility.

    >>> import dualgrad as dg
    >>> dg.linalg.pinv(dg.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    a = as_operand(a)
    _check_matrix("pinv", a)
    if rcond is not None and rtol is not _NO_VALUE:
        raise ValueError("pinv: pass either rcond or rtol, not both")
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        else:
            rcond = max(a.shape[-2:]) * np.finfo(a.dtype).eps if rtol is None else rtol
    u, s, vh = svd(a, full_matrices=False)
    return _pinv_from_svd(u, s, vh, rcond)


class LstsqResult(NamedTuple):
    """``(solution, residuals, rank, singular_values)``: torch's field names for NumPy's ``lstsq`` tuple."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@public(None, top_level=False, method=False, namespaces={"linalg": ("lstsq",)})
def lstsq(a: Any, b: Any, rcond: Any = None, *, driver: str | None = None) -> LstsqResult:
    """The least-squares solution of ``a @ x = b``, as NumPy's: ``(x, residuals, rank, s)``.

    The result is a ``LstsqResult`` named tuple, so that torch code reading
    ``lstsq(a, b).solution`` ports unchanged.

    ``x = pinv(a) @ b`` with singular values ``<= rcond * max`` dropped (default
    ``max(M, N) * eps``): the minimum-norm least-squares solution. ``residuals``
    are the squared residual norms per column when ``a`` has more rows than
    columns (else empty); ``rank`` is an integer Tensor and ``s`` the singular
    values of ``a``. Unlike NumPy, the residuals of a rank-deficient tall ``a``
    are returned rather than an empty array, so that ``lstsq`` needs no
    data-dependent branch and works under ``vmap``.

    As torch's, ``a`` may be a batch ``(*, M, N)``, with ``b`` a batch of matrices
    ``(*, M, K)`` (batch dims broadcast; ``x`` is ``(*, N, K)``, the residuals
    ``(*, K)``) or of vectors ``(*, M)`` (one dim fewer than ``a``; ``x`` is
    ``(*, N)``, the residuals ``(*, 1)``).
    ``driver`` takes torch's names (``'gels'``, ``'gelsy'``, ``'gelsd'``,
    ``'gelss'``) for code that passes one; every driver computes the SVD solution
    (``'gelsd'``'s), and all four results are always filled in.

    >>> import dualgrad as dg
    >>> x, residuals, rank, s = dg.linalg.lstsq(dg.tensor([[1., 0.], [0., 1.], [0., 0.]]),
    ...                                         dg.tensor([1., 2., 3.]))
    >>> x, residuals, int(rank)
    (tensor([1., 2.]), tensor([9.]), 2)
    >>> round(dg.linalg.lstsq(dg.tensor([[1.], [1.]]), dg.tensor([1., 3.])).solution.item(), 12)
    2.0
    >>> dg.linalg.lstsq(dg.ones(5, 3, 2), dg.ones(5, 3, 1)).solution.shape
    (5, 2, 1)
    """
    a, b = as_operand(a), as_operand(b)
    vector = b.ndim == a.ndim - 1  # (a batch of) vectors, as in torch
    if a.ndim < 2 or not (vector or b.ndim == a.ndim) or b.shape[-1 if vector else -2] != a.shape[-2]:
        raise LinAlgError(f"lstsq: a must be a matrix (or a batch of them) and b a vector or matrix with as many "
                          f"rows (or a batch of them); got shapes {a.shape} and {b.shape}")
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of ({', '.join(_LSTSQ_DRIVERS)})")
    m, n = a.shape[-2:]
    if rcond is None:
        rcond = max(m, n) * np.finfo(np.result_type(a.dtype, np.float32)).eps
    columns = b.unsqueeze(-1) if vector else b
    u, s, vh = svd(a, full_matrices=False)
    x = matmul(_pinv_from_svd(u, s, vh, rcond), columns)
    rank = (s > _cutoff(s, rcond)).sum(axis=-1)
    if m > n:
        r = columns - matmul(a, x)
        residuals = (r.abs() ** 2 if r.dtype.kind == "c" else r * r).sum(axis=-2)
    else:
        residuals = _wrap(np.empty((0,), dtype=s.dtype))
    if vector:
        x = x.squeeze(-1)
    return LstsqResult(x, residuals, rank, s)


# -- products ------------------------------------------------------------------------------------------
@public(None, top_level=False, method=False, namespaces={"linalg": ("matrix_power",)})
def matrix_power(a: Any, n: int) -> Tensor:
    """``a`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; 0: the identity).

    >>> import dualgrad as dg
    >>> dg.linalg.matrix_power(dg.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    a = as_operand(a)
    _check_square("matrix_power", a)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}")
    if n == 0:
        return _wrap(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = matmul(square, square)


@public(None, top_level=False, method=False, namespaces={"linalg": ("multi_dot",)})
def multi_dot(arrays: Any, *, out: Any = None) -> Tensor:
    """The product of a chain of matrices, contracted in the cheapest order (by ``opt_einsum``).

    The first array may be 1-D (a row vector) and the last 1-D (a column
    vector); the others must be 2-D. ``out`` is not supported.

    >>> import dualgrad as dg
    >>> dg.linalg.multi_dot([dg.ones(2), dg.ones(2, 3), dg.ones(3)])
    tensor(6.)
    """
    if out is not None:
        raise TypeError("multi_dot: out= is not supported for dualgrad Tensors")
    arrays = [as_operand(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expecting at least two arrays, got {len(arrays)}")
    last = len(arrays) - 1
    terms = []
    for i, x in enumerate(arrays):
        allowed = (1, 2) if i in (0, last) else (2,)
        if x.ndim not in allowed:
            raise ValueError(f"multi_dot: array {i} has shape {x.shape}; the first and last arrays must be "
                             "1-D or 2-D and the others 2-D")
        letters = _chain_letter(i) + _chain_letter(i + 1)
        if x.ndim == 1:
            letters = letters[1] if i == 0 else letters[0]
        terms.append(letters)
    output = (terms[0][0] if arrays[0].ndim == 2 else "") + (terms[-1][-1] if arrays[-1].ndim == 2 else "")
    return einsum(",".join(terms) + "->" + output, *arrays)


def _chain_letter(i: int) -> str:
    return opt_einsum.get_symbol(i)


# -- small NumPy-2 linalg helpers ------------------------------------------------------------------------
@public(None, top_level=False, method=False, namespaces={"linalg": ("cross",)})
def cross(input: Any, other: Any, *, dim: int = -1) -> Tensor:  # noqa: A002 - torch's names
    """The cross product of the 3-vectors along ``dim`` (inputs of the same rank, broadcasting).

    >>> import dualgrad as dg
    >>> dg.linalg.cross(dg.tensor([[1., 0., 0.], [0., 0., 1.]]), dg.tensor([[0., 1., 0.]]))
    tensor([[ 0.,  0.,  1.],
            [-1.,  0.,  0.]])
    """
    return cross_along(input, other, dim)


@public(None, top_level=False, method=False, namespaces={"linalg": ("matrix_transpose",)})
def matrix_transpose(x: Any, /) -> Tensor:
    """The transpose of the last two axes.

    >>> import dualgrad as dg
    >>> dg.linalg.matrix_transpose(dg.ones(2, 3)).shape
    (3, 2)
    """
    x = as_operand(x)
    _check_matrix("matrix_transpose", x)
    return x.mT


@public(None, top_level=False, method=False, namespaces={"linalg": ("diagonal",)})
def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The diagonals of the last two axes.

    >>> import dualgrad as dg
    >>> dg.linalg.diagonal(dg.tensor([[1., 2.], [3., 4.]]))
    tensor([1., 4.])
    """
    x = as_operand(x)
    _check_matrix("diagonal", x)
    return x.diagonal(offset, -2, -1)


@public(None, top_level=False, method=False, namespaces={"linalg": ("trace",)})
def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sums of the diagonals of the last two axes.

    >>> import dualgrad as dg
    >>> dg.linalg.trace(dg.tensor([[1., 2.], [3., 4.]]))
    tensor(5.)
    """
    result = diagonal(x, offset=offset).sum(axis=-1)
    return result if dtype is None else to_dtype(result, dtype)


reductions.MATRIX_NORM[0] = matrix_norm

__all__ = exported(__name__)
