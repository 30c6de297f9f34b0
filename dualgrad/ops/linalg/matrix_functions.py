"""More of torch's linear algebra: matrix_exp, solve_triangular and the products and solvers built on them.

Three primitive ops, each with explicit rules written with dualgrad ops:

* ``matrix_exp``: scaling and squaring with the degree-13 Padé approximant
  (Higham 2005). Its derivative in a direction ``E`` is the top-right block of
  ``exp([[A, E], [0, A]])`` (the Fréchet derivative), and its reverse rule is the
  same with ``A^H`` in place of ``A`` (the adjoint of the Fréchet derivative);
* ``solve_triangular``: substitution, one row at a time for a whole stack. Only the
  triangle named by ``upper`` is read (the strict one with ``unitriangular``), so the
  gradient of ``A`` lives in that triangle;
* ``eig``: NumPy's ``geev``, made complex. With ``X = V^{-1} dA V``, ``dL = diag X`` and
  ``dV = V (X / (l_j - l_i))`` off the diagonal, minus ``V Re diag(V^H dV)`` so that the
  eigenvectors keep unit norm; the reverse rule is the adjoint (torch's rules).

The rest (``vecdot``, ``vander``, ``addmv``/``addr``/``addbmm``/``baddbmm``,
``diagflat``, ``chain_matmul``, ``cholesky_solve``, ``cholesky_inverse``, ``matrix_rank``,
``tensorinv``, ``tensorsolve``, torch's legacy top-level names) are composites of
differentiable ops. The LU family and the ``*_ex`` solvers are in ``linalg_lu``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ...tensor import Tensor, _wrap, as_operand
from ..batch_rules import NOT_BATCHED, to_front
from ..dispatch import apply
from ..elementwise.core import maximum
from ..registry import Op
from ..shape.core import broadcast_to, cat, diag
from ..surface import exported, public
from .decompositions import (
    CHOLESKY,
    QR,
    SVD,
    _check_matrix,
    _check_square,
    _front_batch,
    _h,
    _pad_stack,
    check_system,
)
from .decompositions import (
    _solve_matrix as _linalg_solve_matrix,
)
from .decompositions import cholesky as _linalg_cholesky
from .decompositions import inv as _linalg_inv
from .decompositions import qr as _linalg_qr
from .decompositions import solve as _linalg_solve
from .decompositions import svd as _linalg_svd
from .norms import matrix_power as _matrix_power
from .norms import multi_dot, pinv
from .products import bmm, matmul, matrix_transpose, mv, outer

# -- matrix_exp --------------------------------------------------------------------------------------
# The coefficients of the [13/13] Padé approximant of exp and the largest 1-norm it is accurate for
# in double precision (Higham, "The scaling and squaring method for the matrix exponential revisited").
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _squarings(a: np.ndarray) -> np.ndarray:
    """Per matrix, the ``s >= 0`` with ``|A / 2^s|_1 <= theta_13`` (0 for non-finite norms)."""
    s = np.ceil(np.log2(np.maximum(np.abs(a).sum(axis=-2).max(axis=-1) / _THETA13, 1.0)))
    return np.where(np.isfinite(s), s, 0).astype(np.int64)


def _pade13(a: np.ndarray) -> np.ndarray:
    """The [13/13] Padé approximant ``(V - U)^{-1} (V + U)`` of ``exp(a)`` for a stack ``a``."""
    b = _PADE13
    eye = np.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return np.linalg.solve(v - u, v + u)


def _matrix_exp_impl(a: np.ndarray) -> np.ndarray:
    """Scaling and squaring: each matrix scaled by its own ``2^-s``, then squared ``s`` times.

    The squarings loop over ``max(s)``; each pass squares only the matrices that need it.
    """
    if a.size == 0:
        return a.copy()
    s = _squarings(a)
    scale = np.ldexp(np.ones((), a.real.dtype), -s)[..., None, None]
    stack = _pade13(a * scale).reshape((-1,) + a.shape[-2:])
    flat = s.reshape(-1)
    for k in range(int(flat.max(initial=0))):
        members = np.flatnonzero(flat > k)
        stack[members] = stack[members] @ stack[members]
    return stack.reshape(a.shape)


def _frechet_exp(a: Tensor, e: Tensor) -> Tensor:
    """The derivative of ``exp`` at ``a`` in direction ``e``: the top-right block of ``exp([[a, e], [0, a]])``."""
    shape = np.broadcast_shapes(a.shape, e.shape)
    a, e = broadcast_to(a, shape), broadcast_to(e, shape)
    n = shape[-1]
    top = cat([a, e], -1)
    bottom = cat([a * 0, a], -1)
    return apply(MATRIX_EXP, cat([top, bottom], -2))[..., :n, n:]


def _matrix_exp_vjp(g: Tensor, out: Any, a: Tensor) -> Tensor:
    """The adjoint of the Fréchet derivative: the Fréchet derivative at ``A^H`` in direction ``g``."""
    return _frechet_exp(_h(a), g)


def _matrix_exp_jvp(tangents: tuple, out: Any, a: Tensor) -> Tensor:
    return _frechet_exp(a, tangents[0])


MATRIX_EXP = Op("linalg_matrix_exp", _matrix_exp_impl, vjp=(_matrix_exp_vjp,), jvp=_matrix_exp_jvp,
                family="linalg", arg_names=("A",), grad_name="LinalgMatrixExpBackward0")
MATRIX_EXP.batch = _front_batch(MATRIX_EXP)


def _check_inexact(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t.dtype.kind not in "fc":
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {t.dtype}")


@public(MATRIX_EXP, inplace=False, namespaces={"linalg": ("matrix_exp",)})
def matrix_exp(A: Any) -> Tensor:  # noqa: N803 - torch's argument name
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (or of each in a stack).

    Scaling and squaring with a degree-13 Padé approximant; each matrix of a stack
    gets its own number of squarings. Differentiable in both modes, to any order.
    Also ``dualgrad.matrix_exp`` and ``Tensor.matrix_exp``.

    >>> import dualgrad as dg
    >>> dg.linalg.matrix_exp(dg.tensor([[0., 1.], [-1., 0.]]))  # a rotation by 1 radian
    tensor([[ 0.5403,  0.8415],
            [-0.8415,  0.5403]])
    """
    a = as_operand(A)
    _check_square("matrix_exp", a)
    _check_inexact("linalg.matrix_exp", a)
    return apply(MATRIX_EXP, a)


# -- solve_triangular ----------------------------------------------------------------------------------
def _substitute(a: np.ndarray, b: np.ndarray, *, upper: bool, unitriangular: bool) -> np.ndarray:
    """``X`` with ``T X = B``, ``T`` the triangle of ``a`` read: forward or back substitution by rows.

    A zero on the diagonal gives inf or NaN, as LAPACK's ``trsm`` (no error; NumPy's warning, if any).
    """
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    x = np.empty(b.shape, np.result_type(a.dtype, b.dtype))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        known = slice(i + 1, n) if upper else slice(0, i)
        row = b[..., i, :] - (a[..., i : i + 1, known] @ x[..., known, :])[..., 0, :]
        x[..., i, :] = row if unitriangular else row / a[..., i, i, None]
    return x


def _read_part(x: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The entries of ``x`` that the solver reads: its (strict, with ``unitriangular``) triangle."""
    return x.triu(int(unitriangular)) if upper else x.tril(-int(unitriangular))


def _solve_tri(a: Any, b: Any, upper: bool, unitriangular: bool) -> Tensor:
    return apply(SOLVE_TRIANGULAR, a, b, upper=upper, unitriangular=unitriangular)


def _solve_triangular_vjp(g: Tensor, out: Tensor, a: Any, b: Any, *, upper: bool, unitriangular: bool) -> list:
    """``gB = T^{-H} g``; ``gA = -gB X^H`` on the triangle read."""
    gb = _solve_tri(_h(as_operand(a)), g, not upper, unitriangular)
    if not (isinstance(a, Tensor) and a.requires_grad):
        return [None, gb]
    return [_read_part(-gb @ _h(out), upper, unitriangular), gb]


def _solve_triangular_jvp(tangents: tuple, out: Tensor, a: Tensor, b: Any, *, upper: bool,
                          unitriangular: bool) -> Tensor:
    """``T^{-1} (dB - dT X)``, ``dT`` the triangle read of ``dA``."""
    ta, tb = tangents
    rhs = tb
    if ta is not None:
        ta_x = matmul(_read_part(ta, upper, unitriangular), out)
        rhs = -ta_x if tb is None else tb - ta_x
    return _solve_tri(a, rhs, upper, unitriangular)


def _solve_triangular_batch(args: tuple, bdims: tuple, **params: Any) -> tuple:
    """Batch axes first, stacks aligned."""
    (a, b), (ba, bb) = [as_operand(x) for x in args], bdims
    a, b = to_front(a, ba), to_front(b, bb)
    rank = max(a.ndim - (ba is not NOT_BATCHED), b.ndim - (bb is not NOT_BATCHED))
    return apply(SOLVE_TRIANGULAR, _pad_stack(a, ba, rank), _pad_stack(b, bb, rank), **params), 0


SOLVE_TRIANGULAR = Op("linalg_solve_triangular", _substitute, vjp=_solve_triangular_vjp,
                      jvp=_solve_triangular_jvp, batch=_solve_triangular_batch, family="linalg", save_out=True,
                      arg_names=("A", "B"), grad_name="LinalgSolveTriangularBackward0")


@public(SOLVE_TRIANGULAR, top_level=False, method=False, namespaces={"linalg": ("solve_triangular",)})
def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True,  # noqa: N803 - torch's names
                     unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``T @ X = B`` (``X @ T = B`` with ``left=False``), ``T`` triangular.

    ``T`` is the upper (``upper=True``) or lower triangle of ``A``; the other
    triangle is never read, and with ``unitriangular`` the diagonal is taken to
    be ones. ``B`` is a (stack of) matrix; stacks broadcast. A zero on the
    diagonal gives inf/NaN rather than an error, as torch. The gradient of ``A``
    is zero outside the triangle read.

    >>> import dualgrad as dg
    >>> A = dg.tensor([[2., 0.], [1., 1.]])
    >>> dg.linalg.solve_triangular(A, dg.tensor([[2.], [3.]]), upper=False)
    tensor([[1.],
            [2.]])
    """
    a, b = as_operand(A), as_operand(B)
    _check_square("solve_triangular", a)
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    _check_inexact("linalg.solve_triangular", a, b)
    check_system("solve_triangular", a, b, left, b.shape)
    if left:
        return _solve_tri(a, b, bool(upper), bool(unitriangular))
    return matrix_transpose(_solve_tri(matrix_transpose(a), matrix_transpose(b), not upper, bool(unitriangular)))


class TriangularSolveResult(NamedTuple):
    """``(solution, cloned_coefficient)``, as torch's legacy ``triangular_solve``."""

    solution: Tensor
    cloned_coefficient: Tensor


@public(SOLVE_TRIANGULAR, inplace=False)
def triangular_solve(b: Any, A: Any, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> TriangularSolveResult:
    """torch's legacy form of ``linalg.solve_triangular``: ``(X, copy of A)`` with ``T X = b`` (``T^T X = b``).

    Note the order of the arguments (right-hand side first) and that ``upper``
    defaults to True.

    >>> import dualgrad as dg
    >>> dg.triangular_solve(dg.tensor([[2.], [2.]]), dg.tensor([[1., 1.], [0., 2.]])).solution
    tensor([[1.],
            [1.]])
    """
    a = as_operand(A)
    _check_matrix("triangular_solve", a)
    t = matrix_transpose(a) if transpose else a
    x = solve_triangular(t, b, upper=bool(upper) != bool(transpose), unitriangular=unitriangular)
    return TriangularSolveResult(x, a.clone())


# -- products ------------------------------------------------------------------------------------------
def _add_scaled(name: str, input: Any, product: Tensor, beta: Any, alpha: Any) -> Tensor:  # noqa: A002
    """``beta * input + alpha * product`` (``input`` broadcast to the product; ignored when ``beta == 0``)."""
    product = product if alpha == 1 else alpha * product
    shift = as_operand(input)
    try:
        shift = broadcast_to(shift, product.shape)
    except (ValueError, RuntimeError):
        raise RuntimeError(f"{name}: input of shape {shift.shape} does not broadcast to the product's shape "
                           f"{product.shape}") from None
    if beta == 0:
        return product
    return (shift if beta == 1 else beta * shift) + product


def _of_ranks(name: str, **operands: tuple) -> list:
    """The operands (``argument=(value, rank)``) as Tensors, after checking their ranks in torch's words."""
    tensors = []
    for arg, (x, ndim) in operands.items():
        x = as_operand(x)
        if x.ndim != ndim:
            raise RuntimeError(f"{name}: Expected {ndim}-D argument {arg}, but got {x.ndim}-D")
        tensors.append(x)
    return tensors


@public(None)
def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``; with ``beta=0`` the input is ignored (NaN included).

    >>> import dualgrad as dg
    >>> dg.addmv(dg.tensor([1., 1.]), dg.ones(2, 3), dg.tensor([1., 2., 3.]), alpha=2)
    tensor([13., 13.])
    """
    return _add_scaled("addmv", input, mv(*_of_ranks("addmv", mat=(mat, 2), vec=(vec, 1))), beta, alpha)


@public(None)
def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``; with ``beta=0`` the input is ignored.

    >>> import dualgrad as dg
    >>> dg.addr(dg.zeros(2, 2), dg.tensor([1., 2.]), dg.tensor([3., 4.]))
    tensor([[3., 4.],
            [6., 8.]])
    """
    return _add_scaled("addr", input, outer(*_of_ranks("addr", vec1=(vec1, 1), vec2=(vec2, 1))), beta, alpha)


@public(None)
def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``, for 3-D batches; with ``beta=0`` the input is ignored.

    >>> import dualgrad as dg
    >>> dg.baddbmm(dg.ones(1, 2), dg.ones(3, 1, 4), dg.ones(3, 4, 2)).shape
    (3, 1, 2)
    """
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@public(None)
def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, one matrix; with ``beta=0`` the input is ignored.

    >>> import dualgrad as dg
    >>> dg.addbmm(dg.zeros(2, 2), dg.ones(3, 2, 4), dg.ones(3, 4, 2))
    tensor([[12., 12.],
            [12., 12.]])
    """
    return _add_scaled("addbmm", input, bmm(batch1, batch2).sum(axis=0), beta, alpha)


@public(None, top_level=False, method=False, namespaces={"linalg": ("vecdot",)})
def vecdot(x: Any, y: Any, /, *, dim: int = -1) -> Tensor:
    """``sum(conj(x) * y)`` along ``dim``; the other dimensions broadcast.

    >>> import dualgrad as dg
    >>> dg.linalg.vecdot(dg.tensor([[1., 2.], [3., 4.]]), dg.tensor([1., 1.]))
    tensor([3., 7.])
    """
    x, y = as_operand(x), as_operand(y)
    _check_inexact("linalg.vecdot", x, y)
    return (x.conj() * y).sum(axis=dim)


def _powers(x: Tensor, n: int) -> Tensor:
    """``x[..., None] ** [0, 1, ..., n - 1]`` by running products (exact derivatives at 0)."""
    ones = x.unsqueeze(-1) * 0 + 1
    if n == 1:
        return ones
    return cat([ones, x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)], -1)


@public(None, top_level=False, method=False, namespaces={"linalg": ("vander",)})
def linalg_vander(x: Any, *, N: int | None = None) -> Tensor:  # noqa: N803 - torch's name
    """The Vandermonde matrix of the last axis of ``x``: column ``j`` holds ``x ** j`` (increasing powers).

    ``N`` columns (default: ``x.shape[-1]``). This is ``dualgrad.linalg.vander``.

    >>> import dualgrad as dg
    >>> dg.linalg.vander(dg.tensor([1., 2., 3.]))
    tensor([[1., 1., 1.],
            [1., 2., 4.],
            [1., 3., 9.]])
    """
    x = as_operand(x)
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x, n)


@public(None, method=False)
def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """torch's (and NumPy's) Vandermonde matrix of a 1-D ``x``: decreasing powers unless ``increasing``.

    >>> import dualgrad as dg
    >>> dg.vander(dg.tensor([2., 3.]), N=3)
    tensor([[4., 2., 1.],
            [9., 3., 1.]])
    """
    x = as_operand(x)
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got shape {x.shape}")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return _wrap(np.empty((x.shape[0], 0), x.dtype))
    result = _powers(x, n)
    return result if increasing else result.flip(-1)


@public(None, inplace=False)
def diagflat(input: Any, offset: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """A square matrix with the flattened ``input`` on its ``offset``-th diagonal.

    >>> import dualgrad as dg
    >>> dg.diagflat(dg.tensor([[1., 2.]]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    return diag(as_operand(input).reshape(-1), offset)


@public(None, inplace=False)
def matrix_power(input: Any, n: int) -> Tensor:  # noqa: A002 - torch's name
    """``input`` (a square matrix or a stack) to the integer power ``n``; negative powers invert first.

    >>> import dualgrad as dg
    >>> dg.matrix_power(dg.tensor([[2., 0.], [0., 1.]]), -1)
    tensor([[0.5000, 0.0000],
            [0.0000, 1.0000]])
    """
    return _matrix_power(input, n)


@public(None, method=False)
def chain_matmul(*matrices: Any) -> Tensor:
    """The product of 2-D matrices in the cheapest order (deprecated in torch for ``linalg.multi_dot``).

    >>> import dualgrad as dg
    >>> dg.chain_matmul(dg.ones(2, 3), dg.ones(3, 4), dg.ones(4, 1))
    tensor([[12.],
            [12.]])
    """
    tensors = [as_operand(m) for m in matrices]
    if not tensors:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, t in enumerate(tensors):
        if t.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Tensor {i} must be 2D, got {t.ndim}D")
    return tensors[0].clone() if len(tensors) == 1 else multi_dot(tensors)


# -- Cholesky solvers and torch's legacy top-level names --------------------------------------------------
@public(None, inplace=False)
def cholesky_solve(B: Any, L: Any, upper: bool = False) -> Tensor:  # noqa: N803 - torch's names
    """``X`` with ``A X = B``, given the Cholesky factor of ``A`` (``A = L L^H``, or ``U^H U`` if ``upper``).

    Two triangular solves; differentiable in ``B`` and in the factor.

    >>> import dualgrad as dg
    >>> L = dg.tensor([[2., 0.], [1., 1.]])  # A = L @ L.mT = [[4, 2], [2, 2]]
    >>> dg.cholesky_solve(dg.tensor([[6.], [4.]]), L)
    tensor([[1.],
            [1.]])
    """
    factor = as_operand(L)
    _check_square("cholesky_solve", factor)
    lower = _h(factor) if upper else factor
    y = solve_triangular(lower, B, upper=False)
    return solve_triangular(_h(lower), y, upper=True)


def identities(like: Tensor) -> Tensor:
    """A stack of identity matrices of ``like``'s shape and dtype (a constant)."""
    return _wrap(np.broadcast_to(np.eye(like.shape[-1], dtype=like.dtype), like.shape).copy())


@public(None, inplace=False)
def cholesky_inverse(L: Any, upper: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """The inverse of ``A = L L^H`` (``U^H U`` if ``upper``) from its Cholesky factor.

    >>> import dualgrad as dg
    >>> dg.cholesky_inverse(dg.tensor([[2., 0.], [0., 1.]]))
    tensor([[0.2500, 0.0000],
            [0.0000, 1.0000]])
    """
    factor = as_operand(L)
    _check_square("cholesky_inverse", factor)
    return cholesky_solve(identities(factor), factor, upper)


@public(CHOLESKY, inplace=False)
def cholesky(input: Any, upper: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """torch's deprecated ``cholesky(A, upper=False)``: ``linalg.cholesky`` with ``upper`` positional.

    >>> import dualgrad as dg
    >>> dg.cholesky(dg.tensor([[4., 2.], [2., 5.]]), True)
    tensor([[2., 1.],
            [0., 2.]])
    """
    return _linalg_cholesky(input, upper=bool(upper))


class LegacySVDResult(NamedTuple):
    """``(U, S, V)`` with ``input = U diag(S) V^H``, as torch's legacy ``svd``."""

    U: Tensor
    S: Tensor
    V: Tensor


@public(SVD, inplace=False)
def svd(input: Any, some: bool = True, compute_uv: bool = True) -> LegacySVDResult:  # noqa: A002
    """torch's legacy ``svd``: ``(U, S, V)`` (``V``, not ``V^H``), reduced unless ``some=False``.

    With ``compute_uv=False``, ``U`` and ``V`` are zero matrices (of the full sizes), as torch.

    >>> import dualgrad as dg
    >>> U, S, V = dg.svd(dg.tensor([[3., 0.], [0., -2.]]))
    >>> S
    tensor([3., 2.])
    """
    a = as_operand(input)
    _check_matrix("svd", a)
    if not compute_uv:
        m, n = a.shape[-2:]
        lead = a.shape[:-2]
        return LegacySVDResult(_wrap(np.zeros(lead + (m, m), a.dtype)), _linalg_svd(a, compute_uv=False),
                               _wrap(np.zeros(lead + (n, n), a.dtype)))
    u, s, vh = _linalg_svd(a, full_matrices=not some)
    return LegacySVDResult(u, s, _h(vh))


@public(QR, inplace=False)
def qr(input: Any, some: bool = True) -> Any:  # noqa: A002 - torch's name
    """torch's legacy ``qr``: ``(Q, R)``, reduced unless ``some=False``.

    >>> import dualgrad as dg
    >>> dg.qr(dg.tensor([[3., 0.], [4., 1.]])).R
    tensor([[-5.0000, -0.8000],
            [ 0.0000,  0.6000]])
    """
    return _linalg_qr(input, mode="reduced" if some else "complete")


@public(None, inplace=False)
def pinverse(input: Any, rcond: float = 1e-15) -> Tensor:  # noqa: A002 - torch's name
    """torch's name of the pseudo-inverse (``linalg.pinv`` with a relative cutoff ``rcond``).

    >>> import dualgrad as dg
    >>> dg.pinverse(dg.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    return pinv(input, rcond=rcond)


# -- rank, condition number, tensor inverse and solve -------------------------------------------------------
@public(None, top_level=False, method=False, namespaces={"linalg": ("matrix_rank",)})
def matrix_rank(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,  # noqa: N803
                tol: Any = None) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (int64; not differentiable).

    Without ``atol`` and ``rtol``, ``rtol = eps * max(m, n)``; with ``atol`` only,
    ``rtol`` is 0. ``tol`` is the older name of ``atol``; ``hermitian`` is accepted
    (the singular values are used either way).

    >>> import dualgrad as dg
    >>> dg.linalg.matrix_rank(dg.tensor([[1., 2.], [2., 4.]]))
    tensor(1)
    """
    a = as_operand(A)
    _check_matrix("matrix_rank", a)
    if tol is not None:
        if atol is not None:
            raise RuntimeError("linalg.matrix_rank: pass either tol or atol, not both")
        atol = tol
    values = _linalg_svd(a.detach(), compute_uv=False)
    if rtol is None:
        rtol = 0.0 if atol is not None else np.finfo(values.dtype).eps * max(a.shape[-2:])
    largest = values[..., :1] if values.shape[-1] else values.sum(axis=-1, keepdims=True)
    floor = as_operand(0.0 if atol is None else atol).unsqueeze(-1)
    threshold = maximum(floor, as_operand(rtol).unsqueeze(-1) * largest)
    return (values > threshold).sum(axis=-1).to(np.int64)


@public(None, top_level=False, method=False, namespaces={"linalg": ("tensorinv",)})
def tensorinv(A: Any, ind: int = 2) -> Tensor:  # noqa: N803 - torch's name
    """The inverse of ``A`` for ``tensordot(.., ind)``: ``A`` reshaped to a square matrix, inverted, reshaped.

    The result has shape ``A.shape[ind:] + A.shape[:ind]``.

    >>> import dualgrad as dg
    >>> dg.linalg.tensorinv(dg.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    a = as_operand(A)
    if int(ind) <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
    if left != right:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {right} != {left}")
    return _linalg_inv(a.reshape(left, right)).reshape(a.shape[ind:] + a.shape[:ind])


@public(None, top_level=False, method=False, namespaces={"linalg": ("tensorsolve",)})
def tensorsolve(A: Any, B: Any, dims: Any = None) -> Tensor:  # noqa: N803 - torch's names
    """``X`` with ``tensordot(A, X, X.ndim) == B`` (``dims``: axes of ``A`` moved to the end first).

    >>> import dualgrad as dg
    >>> dg.linalg.tensorsolve(dg.eye(6).reshape(2, 3, 6) * 2, dg.ones(2, 3)).shape
    (6,)
    """
    a, b = as_operand(A), as_operand(B)
    if dims is not None:
        dims = [d % a.ndim for d in dims]
        a = a.permute(*[d for d in range(a.ndim) if d not in dims], *dims)
    result_shape = a.shape[b.ndim:]
    rows, columns = math.prod(b.shape), math.prod(result_shape)
    if a.shape[: b.ndim] != b.shape or rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {columns} != {math.prod(a.shape[:b.ndim])}")
    return _linalg_solve(a.reshape(rows, columns), b.reshape(rows)).reshape(result_shape)

# -- eig ------------------------------------------------------------------------------------------------------
class EigResult(NamedTuple):
    """``(eigenvalues, eigenvectors)`` (complex), as torch's ``linalg.eig``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _eig_impl(a: np.ndarray) -> tuple:
    """LAPACK's ``geev`` through NumPy, always complex (NumPy returns real results when it can)."""
    values, vectors = np.linalg.eig(a)
    kind = np.result_type(a.dtype, np.complex64)
    return values.astype(kind, copy=False), vectors.astype(kind, copy=False)


def _eig_gaps(values: Tensor) -> Tensor:
    """``E_ij = lambda_j - lambda_i`` off the diagonal, 1 on it (divided by, then masked)."""
    n = values.shape[-1]
    return values.unsqueeze(-2) - values.unsqueeze(-1) + _wrap(np.eye(n))


def _eig_jvp(tangents: tuple, out: tuple, a: Tensor) -> tuple:
    """``X = V^{-1} dA V``: ``dL = diag X``, ``dV = V C - V Re diag(V^H V C)``, ``C = X / E`` off the diagonal.

    The second term keeps the eigenvectors at unit norm (their phase is left free, as torch's).
    """
    values, vectors = out
    x = _linalg_solve_matrix(vectors, tangents[0] @ vectors)
    off = 1.0 - _wrap(np.eye(values.shape[-1]))
    c = x / _eig_gaps(values) * off
    dv = vectors @ c
    return x.diagonal(0, -2, -1), dv - vectors * (_h(vectors) @ dv).diagonal(0, -2, -1).real.unsqueeze(-2)


def _eig_vjp(g: tuple, out: tuple, a: Any) -> Tensor:
    """``V^{-H} (diag(gL) + (V^H gV - V^H V Re diag(V^H gV)) / conj(E)) V^H`` (the adjoint of the jvp)."""
    g_values, g_vectors = g
    values, vectors = out
    vh = _h(vectors)
    vh_g = vh @ g_vectors
    inner = vh_g - (vh @ vectors) * vh_g.diagonal(0, -2, -1).real.unsqueeze(-2)
    off = 1.0 - _wrap(np.eye(values.shape[-1]))
    inner = inner / _eig_gaps(values).conj() * off + g_values.diag_embed()
    return _linalg_solve_matrix(vh, inner @ vh)


EIG = Op("linalg_eig", _eig_impl, vjp=(_eig_vjp,), jvp=_eig_jvp, family="linalg", save_inputs=False,
         save_out=True, multi_output=True, arg_names=("A",), grad_name="LinalgEigBackward0")
EIG.batch = _front_batch(EIG)


@public(EIG, top_level=False, method=False, namespaces={"linalg": ("eig",)})
def eig(A: Any) -> EigResult:  # noqa: N803 - torch's name
    """Eigenvalues and unit-norm eigenvectors of a square matrix, always complex (as torch's).

    Eigenvectors have an arbitrary phase: differentiate only functions of them that
    do not depend on it (as in torch). Derivatives divide by ``lambda_j - lambda_i``
    and are not defined at repeated eigenvalues.

    >>> import dualgrad as dg
    >>> dg.linalg.eig(dg.tensor([[2., 0.], [0., -1.]])).eigenvalues
    tensor([ 2.+0.j, -1.+0.j])
    """
    a = as_operand(A)
    _check_square("eig", a)
    _check_inexact("linalg.eig", a)
    return EigResult(*apply(EIG, a))


@public(EIG, top_level=False, method=False, namespaces={"linalg": ("eigvals",)})
def eigvals(A: Any) -> Tensor:  # noqa: N803 - torch's name
    """The (complex) eigenvalues of a square matrix; see ``eig``.

    >>> import dualgrad as dg
    >>> dg.linalg.eigvals(dg.tensor([[0., -1.], [1., 0.]]))
    tensor([0.+1.j, 0.-1.j])
    """
    return eig(A).eigenvalues


# torch's top-level names: ``cholesky``, ``svd`` and ``qr`` are the legacy forms (``svd`` gives ``V``, not ``V^H``)
__all__ = exported(__name__)
