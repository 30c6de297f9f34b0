"""LU factorization and the solvers that report failures in an ``info`` tensor instead of raising.

* ``lu_factor`` is a primitive op: LAPACK's ``getrf`` (partial pivoting, packed ``L``
  and ``U``, 1-based sequential row swaps ``pivots``, ``info`` = the first zero pivot)
  written with NumPy, one column at a time for a whole stack. Its rules (square
  matrices) follow ``A = P L U``: with ``X = L^{-1} P^T dA U^{-1}``,
  ``dL = L tril(X, -1)`` and ``dU = triu(X) U``; the reverse rule is their adjoint.
* ``lu``, ``lu_unpack``, ``lu_solve``, ``inv_ex`` and ``solve_ex`` are composites of
  ``lu_factor``, triangular solves and indexing, so they are differentiable through them.
* ``cholesky_ex`` is ``cholesky`` with an ``info`` output: the order of the first
  leading minor that is not positive-definite (0 when the factorization succeeded).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...tensor import Tensor, _wrap, as_operand
from ..dispatch import apply
from ..elementwise.core import where
from ..registry import Op, nondifferentiable
from ..surface import exported, public
from .decompositions import (
    LinAlgError,
    _check_matrix,
    _check_square,
    _cholesky_jvp,
    _cholesky_vjp,
    _front_batch,
    _h,
    check_system,
    cholesky,
    inv,
    solve,
    svd,
)
from .matrix_functions import _check_inexact, _solve_tri, identities
from .norms import matrix_norm
from .products import matmul, matrix_transpose


# -- lu_factor -------------------------------------------------------------------------------------------
def _lu_impl(a: np.ndarray) -> tuple:
    """``(LU, pivots, info)`` as LAPACK's ``getrf``, for a stack: Gaussian elimination with partial pivoting.

    A zero pivot column is left as it is (no scaling) and its 1-based index is the
    matrix's ``info``, as LAPACK's.
    """
    m, n = a.shape[-2:]
    k = min(m, n)
    lead = a.shape[:-2]
    lu = a.reshape((-1, m, n)).copy()
    members = np.arange(lu.shape[0])
    pivots = np.empty((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
        pivots[:, j] = p + 1
        row = lu[members, j].copy()
        lu[members, j] = lu[members, p]
        lu[members, p] = row
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1 :, j] /= np.where(zero, 1, pivot)[:, None]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
    return lu.reshape(a.shape), pivots.reshape(lead + (k,)), info.reshape(lead)


def _permutation_impl(pivots: np.ndarray, *, m: int, dtype: Any) -> np.ndarray:
    """The ``m x m`` permutation matrix ``P`` of sequential 1-based row swaps (``A = P L U``)."""
    lead, k = pivots.shape[:-1], pivots.shape[-1]
    swaps = pivots.reshape(-1, k).astype(np.int64) - 1
    order = np.broadcast_to(np.arange(m), (swaps.shape[0], m)).copy()
    members = np.arange(swaps.shape[0])
    for j in range(k):
        row = order[:, j].copy()
        order[:, j] = order[members, swaps[:, j]]
        order[members, swaps[:, j]] = row
    p = np.zeros((swaps.shape[0], m, m), dtype)
    p[members[:, None], order, np.arange(m)] = 1
    return p.reshape(lead + (m, m))


PERMUTATION = nondifferentiable("lu_pivots_to_permutation", _permutation_impl, family="linalg")
PERMUTATION.batch = _front_batch(PERMUTATION)


def _permutation(pivots: Tensor, m: int, dtype: Any) -> Tensor:
    return apply(PERMUTATION, pivots, m=m, dtype=np.dtype(dtype))


def _check_lu_derivative(a: Any) -> None:
    if a.shape[-1] != a.shape[-2]:
        raise NotImplementedError(f"lu_factor: derivatives are implemented for square matrices only; got shape "
                                  f"{tuple(a.shape)}")


def _unit_lower(lu: Tensor) -> Tensor:
    """``L``: the strict lower triangle of the packed factors with ones on the diagonal."""
    return lu.tril(-1) + _wrap(np.eye(lu.shape[-2], lu.shape[-1], dtype=lu.dtype))


def _lu_jvp(tangents: tuple, out: tuple, a: Tensor) -> tuple:
    """``X = L^{-1} P^T dA U^{-1}``: ``dLU = L tril(X, -1) + triu(X) U`` (packed as the factors)."""
    _check_lu_derivative(a)
    lu, pivots = out[0], out[1]
    p = _permutation(pivots, a.shape[-2], lu.dtype)
    w = _solve_tri(lu, matrix_transpose(p) @ tangents[0], False, True)
    x = matrix_transpose(_solve_tri(matrix_transpose(lu), matrix_transpose(w), False, False))
    return _unit_lower(lu) @ x.tril(-1) + x.triu() @ lu.triu(), None, None


def _lu_vjp(g: tuple, out: tuple, a: Any) -> Tensor:
    """``P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}`` with ``gL``, ``gU`` the packed gradient's parts."""
    _check_lu_derivative(a)
    g_lu, lu, pivots = g[0], out[0], out[1]
    inner = (_h(_unit_lower(lu)) @ g_lu.tril(-1)).tril(-1) + (g_lu.triu() @ _h(lu.triu())).triu()
    y = _solve_tri(_h(lu), inner, True, True)
    z = matrix_transpose(_solve_tri(matrix_transpose(_h(lu)), matrix_transpose(y), True, False))
    return _permutation(pivots, a.shape[-2], lu.dtype) @ z


LU_FACTOR = Op("linalg_lu_factor", _lu_impl, vjp=(_lu_vjp,), jvp=_lu_jvp, family="linalg", save_inputs=False,
               save_out=True, multi_output=True, arg_names=("A",), grad_name="LinalgLuFactorExBackward0")
LU_FACTOR.batch = _front_batch(LU_FACTOR)


class LUFactorResult(NamedTuple):
    """``(LU, pivots)``: packed factors and 1-based row swaps, as torch's ``linalg.lu_factor``."""

    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    """``(LU, pivots, info)``, as torch's ``linalg.lu_factor_ex``."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


def _factor(name: str, A: Any, pivot: bool) -> tuple:  # noqa: N803
    a = as_operand(A)
    _check_matrix(name, a)
    _check_inexact(f"linalg.{name}", a)
    if not pivot:
        raise NotImplementedError(f"linalg.{name}: LU without pivoting is not implemented on the CPU")
    return apply(LU_FACTOR, a)


@public(LU_FACTOR, top_level=False, method=False, namespaces={"linalg": ("lu_factor_ex",)})
def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:  # noqa: N803
    """``lu_factor`` with ``info``: per matrix, 0 or the 1-based index of the first zero pivot.

    With ``check_errors=True``, a zero pivot raises ``LinAlgError``.

    >>> import dualgrad as dg
    >>> dg.linalg.lu_factor_ex(dg.tensor([[1., 2.], [2., 4.]])).info
    tensor(2, dtype=int32)
    """
    lu, pivots, info = _factor("lu_factor_ex", A, pivot)
    if check_errors:
        _raise_for(info, "lu_factor_ex", "The factorization could not be completed because the input is singular")
    return LUFactorExResult(lu, pivots, info)


def _raise_for(info: Tensor, name: str, problem: str) -> None:
    bad = np.flatnonzero(info.detach().numpy().reshape(-1))
    if bad.size:
        prefix = f"(Batch element {bad[0]}): " if info.ndim else ""
        raise LinAlgError(f"linalg.{name}: {prefix}{problem}.")


@public(LU_FACTOR, top_level=False, method=False, namespaces={"linalg": ("lu_factor",)})
def lu_factor(A: Any, *, pivot: bool = True) -> LUFactorResult:  # noqa: N803 - torch's name
    """The LU factorization ``A = P L U`` with partial pivoting, packed as LAPACK's ``getrf``.

    ``LU`` holds ``U`` and the strict lower part of ``L`` (unit diagonal);
    ``pivots`` (int32) are 1-based: row ``i`` was swapped with row ``pivots[i]``.
    Any ``m x n`` matrix; derivatives for square ones. A singular matrix
    factors without error (see ``lu_factor_ex`` for its ``info``).

    >>> import dualgrad as dg
    >>> LU, pivots = dg.linalg.lu_factor(dg.tensor([[1., 2.], [3., 4.]]))
    >>> LU, pivots
    (tensor([[3.0000, 4.0000],
            [0.3333, 0.6667]]), tensor([2, 2], dtype=int32))
    """
    lu, pivots, _ = _factor("lu_factor", A, pivot)
    return LUFactorResult(lu, pivots)


class LUResult(NamedTuple):
    """``(P, L, U)`` with ``A = P @ L @ U``, as torch's ``linalg.lu`` and ``lu_unpack``."""

    P: Tensor
    L: Tensor
    U: Tensor


@public(None, method=False)
def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: bool = True,  # noqa: N803 - torch's names
              unpack_pivots: bool = True) -> LUResult:
    """``(P, L, U)`` from packed factors and pivots (empty tensors for the parts not unpacked).

    >>> import dualgrad as dg
    >>> P, L, U = dg.lu_unpack(*dg.linalg.lu_factor(dg.tensor([[0., 1.], [2., 3.]])))
    >>> P
    tensor([[0., 1.],
            [1., 0.]])
    """
    lu, pivots = as_operand(LU_data), as_operand(LU_pivots)
    _check_matrix("lu_unpack", lu)
    if pivots.dtype.kind not in "iu":
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, "
                           f"got {pivots.dtype}")
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = _wrap(np.zeros(0, lu.dtype))
    lower = upper = empty
    if unpack_data:
        lower, upper = _unit_lower(lu[..., :, :k]), lu[..., :k, :].triu()
    p = _permutation(pivots, m, lu.dtype) if unpack_pivots else empty
    return LUResult(p, lower, upper)


@public(LU_FACTOR, top_level=False, method=False, namespaces={"linalg": ("lu",)})
def linalg_lu(A: Any, *, pivot: bool = True) -> LUResult:  # noqa: N803 - torch's name
    """The LU factorization ``A = P @ L @ U`` (``L`` unit lower, ``U`` upper), differentiable for square ``A``.

    >>> import dualgrad as dg
    >>> P, L, U = dg.linalg.lu(dg.tensor([[1., 2.], [3., 4.]]))
    >>> U
    tensor([[3.0000, 4.0000],
            [0.0000, 0.6667]])
    """
    return lu_unpack(*lu_factor(A, pivot=pivot))


def _apply_permutation(pivots: Tensor, b: Tensor, transpose: bool) -> Tensor:
    """``P @ b`` (``P^T @ b`` with ``transpose``) for the permutation of ``pivots``."""
    p = _permutation(pivots, b.shape[-2], b.dtype)
    return matmul(matrix_transpose(p) if transpose else p, b)


@public(None, top_level=False, method=False, namespaces={"linalg": ("lu_solve",)})
def linalg_lu_solve(LU: Any, pivots: Any, B: Any, *, left: bool = True, adjoint: bool = False) -> Tensor:  # noqa: N803
    """The solution of ``A X = B`` from ``lu_factor``'s ``(LU, pivots)`` (``A^H X = B`` with ``adjoint``;
    ``X A = B`` unless ``left``). Differentiable in ``LU`` and ``B``.

    >>> import dualgrad as dg
    >>> A = dg.tensor([[1., 2.], [3., 4.]])
    >>> dg.linalg.lu_solve(*dg.linalg.lu_factor(A), dg.tensor([[5.], [11.]]))
    tensor([[1.],
            [2.]])
    """
    lu_, piv, b = as_operand(LU), as_operand(pivots), as_operand(B)
    _check_square("lu_solve", lu_)
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    check_system("lu_solve", lu_, b, left, b.shape)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _h(linalg_lu_solve(lu_, piv, _h(b), adjoint=not adjoint))
    if adjoint:  # A^H = U^H L^H P^T
        y = _solve_tri(_h(lu_), b, False, False)
        return _apply_permutation(piv, _solve_tri(_h(lu_), y, True, True), False)
    y = _solve_tri(lu_, _apply_permutation(piv, b, True), False, True)
    return _solve_tri(lu_, y, True, False)


def _no_failures(a: Tensor) -> Tensor:
    """The ``info`` of a stack whose matrices all succeeded (zeros, int32)."""
    return _wrap(np.zeros(a.shape[:-2], np.int32))


# -- solvers with info --------------------------------------------------------------------------------------
class InvExResult(NamedTuple):
    """``(inverse, info)``, as torch's ``linalg.inv_ex``."""

    inverse: Tensor
    info: Tensor


@public(None, top_level=False, method=False, namespaces={"linalg": ("inv_ex",)})
def inv_ex(A: Any, *, check_errors: bool = False) -> InvExResult:  # noqa: N803 - torch's name
    """``linalg.inv`` with ``info`` (0, or the 1-based index of the LU factorization's first zero pivot).

    A singular matrix gives an inverse of inf/NaN instead of an error (unless
    ``check_errors``, where it raises as ``linalg.inv``).

    >>> import dualgrad as dg
    >>> dg.linalg.inv_ex(dg.tensor([[[2., 0.], [0., 4.]], [[1., 1.], [1., 1.]]])).info
    tensor([0, 2], dtype=int32)
    """
    a = as_operand(A)
    _check_square("inv_ex", a)
    if check_errors:
        return InvExResult(inv(a), _no_failures(a))
    lu_, pivots, info = _factor("inv_ex", a, True)
    return InvExResult(linalg_lu_solve(lu_, pivots, identities(lu_)), info)


class SolveExResult(NamedTuple):
    """``(result, info)``, as torch's ``linalg.solve_ex``."""

    result: Tensor
    info: Tensor


@public(None, top_level=False, method=False, namespaces={"linalg": ("solve_ex",)})
def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False) -> SolveExResult:  # noqa: N803
    """``linalg.solve`` with ``info`` (as ``inv_ex``): a singular ``A`` gives inf/NaN, not an error.

    >>> import dualgrad as dg
    >>> dg.linalg.solve_ex(dg.tensor([[2., 0.], [0., 4.]]), dg.tensor([2., 4.]))
    SolveExResult(result=tensor([1., 1.]), info=tensor(0, dtype=int32))
    """
    a, b = as_operand(A), as_operand(B)
    _check_square("solve_ex", a)
    if check_errors:
        return SolveExResult(solve(a, b, left=left), _no_failures(a))
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    rhs = b.unsqueeze(-1) if vector else b
    lu_, pivots, info = _factor("solve_ex", a, True)
    x = linalg_lu_solve(lu_, pivots, rhs, left=left)
    return SolveExResult(x.squeeze(-1) if vector else x, info)


# -- cholesky_ex -----------------------------------------------------------------------------------------
def _cholesky_ex_impl(a: np.ndarray) -> tuple:
    """``(L, info)``: NumPy's factor, or where it fails, a column-by-column one that records the failing order.

    The factor of a matrix that is not positive-definite is unspecified (NaN from the failing column on).
    """
    try:
        return np.linalg.cholesky(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass
    n = a.shape[-1]
    factor = np.zeros(a.shape, np.result_type(a.dtype, np.float32))
    info = np.zeros(a.shape[:-2], np.int32)
    for j in range(n):
        done = factor[..., j, :j]
        d = (a[..., j, j] - (done * done.conj()).sum(-1)).real
        failed = (info == 0) & ~(d > 0)
        info[failed] = j + 1
        root = np.sqrt(np.where(info == 0, d, np.nan))
        factor[..., j, j] = root
        below = a[..., j + 1 :, j] - (factor[..., j + 1 :, :j] @ done.conj()[..., None])[..., 0]
        factor[..., j + 1 :, j] = below / root[..., None]
    return factor, info


def _cholesky_ex_vjp(g: tuple, out: tuple, a: Any) -> Tensor:
    return _cholesky_vjp(g[0], out[0], a)


def _cholesky_ex_jvp(tangents: tuple, out: tuple, a: Any) -> tuple:
    return _cholesky_jvp(tangents, out[0], a), None


CHOLESKY_EX = Op("linalg_cholesky_ex", _cholesky_ex_impl, vjp=(_cholesky_ex_vjp,), jvp=_cholesky_ex_jvp,
                 family="linalg", save_inputs=False, save_out=True, multi_output=True, arg_names=("A",),
                 grad_name="LinalgCholeskyExBackward0")
CHOLESKY_EX.batch = _front_batch(CHOLESKY_EX)


class CholeskyExResult(NamedTuple):
    """``(L, info)``, as torch's ``linalg.cholesky_ex``."""

    L: Tensor
    info: Tensor


@public(CHOLESKY_EX, top_level=False, method=False, namespaces={"linalg": ("cholesky_ex",)})
def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:  # noqa: N803
    """``linalg.cholesky`` with ``info``: 0, or the order of the first leading minor that is not positive-definite.

    The factor of such a matrix is unspecified (NaN from the failing column on);
    with ``check_errors=True`` it raises as ``linalg.cholesky``.

    >>> import dualgrad as dg
    >>> dg.linalg.cholesky_ex(dg.tensor([[[4., 2.], [2., 5.]], [[1., 2.], [2., 1.]]])).info
    tensor([0, 2], dtype=int32)
    """
    a = as_operand(A)
    _check_square("cholesky_ex", a)
    if check_errors:
        return CholeskyExResult(cholesky(a, upper=upper), _no_failures(a))
    factor, info = apply(CHOLESKY_EX, a)
    return CholeskyExResult(_h(factor) if upper else factor, info)


@public(None, top_level=False, method=False, namespaces={"linalg": ("cond",)})
def cond(A: Any, p: Any = None) -> Tensor:  # noqa: N803 - torch's name
    """The condition number of ``A`` in the ``p``-norm: ``|A|_p |A^{-1}|_p``.

    ``p`` None, 2 or -2: the ratio of the largest and smallest singular values (any
    shape). 'fro', 'nuc', inf, -inf, 1, -1: from the norms of ``A`` and of its
    inverse (square ``A``; inf where ``A`` is singular).

    >>> import dualgrad as dg
    >>> dg.linalg.cond(dg.tensor([[4., 0.], [0., 2.]]))
    tensor(2.)
    """
    a = as_operand(A)
    _check_matrix("cond", a)
    if p in (None, 2, -2):
        values = svd(a, compute_uv=False)
        ratio = values[..., 0] / values[..., -1]
        return 1.0 / ratio if p == -2 else ratio
    if p not in ("fro", "nuc", 1, -1, np.inf, -np.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_square("cond", a)
    inverse, info = inv_ex(a)
    value = matrix_norm(a, ord=p) * matrix_norm(where(info.unsqueeze(-1).unsqueeze(-1) == 0, inverse, 0.0), ord=p)
    return where(info == 0, value, np.inf)


@public(LU_FACTOR, inplace=False)
def lu(A: Any, pivot: bool = True, get_infos: bool = False) -> tuple:  # noqa: N803 - torch's names
    """torch's legacy ``lu``: ``(LU, pivots)``, with ``info`` too when ``get_infos``.

    >>> import dualgrad as dg
    >>> LU, pivots = dg.lu(dg.tensor([[1., 2.], [3., 4.]]))
    >>> pivots
    tensor([2, 2], dtype=int32)
    """
    result = lu_factor_ex(A, pivot=pivot)
    return tuple(result) if get_infos else tuple(result[:2])


@public(None, inplace=False)
def lu_solve(b: Any, LU_data: Any, LU_pivots: Any) -> Tensor:  # noqa: N803 - torch's names
    """torch's legacy ``lu_solve(b, LU_data, LU_pivots)`` (right-hand side first).

    >>> import dualgrad as dg
    >>> dg.lu_solve(dg.tensor([[5.], [11.]]), *dg.linalg.lu_factor(dg.tensor([[1., 2.], [3., 4.]])))
    tensor([[1.],
            [2.]])
    """
    return linalg_lu_solve(LU_data, LU_pivots, b)


__all__ = exported(__name__)
