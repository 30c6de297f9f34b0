"""Matrix functions and decompositions: inv, solve, det, slogdet, cholesky, eigh, svd, qr.

Each is a primitive op on stacks of matrices (leading batch dimensions, as NumPy 2)
with explicit rules written with dualgrad ops, so they differentiate again:

* reverse rules are the adjoints of the forward rules (conjugate Wirtinger for complex);
* ``cholesky`` and ``eigh`` read a Hermitian input: both rules act on the Hermitian
  part ``(dA + dA^H) / 2`` of a direction, so forward and reverse mode agree;
* ``eigh`` and ``svd``: eigenvector and singular-vector derivatives divide by
  ``lambda_j - lambda_i`` (``s_j^2 - s_i^2``); where two values are equal that
  factor is set to 0. The derivative of the *values* stays exact there, but the
  derivative of the *vectors* is mathematically undefined at a degenerate
  spectrum, and what dualgrad returns for it then is not meaningful;
* complex ``eigh``/``svd`` vectors have an arbitrary phase: the rules take the
  gauge where ``V^H dV`` has a zero diagonal, so only phase-invariant functions
  of them have meaningful derivatives (as in torch);
* batching rules move the batch axis first: NumPy's linalg functions already
  treat leading dimensions as a stack.

Singular and non-positive-definite inputs raise ``LinAlgError`` in torch's words, a
subclass of both RuntimeError (torch's type) and NumPy's ``LinAlgError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...tensor import Tensor, _wrap, as_operand
from ...vmap.batching import physical_value
from ..batch_rules import NOT_BATCHED, to_front
from ..dispatch import apply
from ..elementwise.core import imag_part, where
from ..reductions import cumprod
from ..registry import Op
from ..shape.core import RESHAPE, cat, flip
from ..surface import exported, public
from .products import matmul, matrix_transpose


class LinAlgError(RuntimeError, np.linalg.LinAlgError):
    """A matrix the function cannot take: singular, not positive-definite, not square, ...

    A RuntimeError, as torch's ``torch.linalg.LinAlgError``, and NumPy's
    ``numpy.linalg.LinAlgError`` (a ValueError), so code written for either catches it.

    >>> import dualgrad as dg
    >>> try:
    ...     dg.linalg.inv(dg.zeros(2, 2))
    ... except RuntimeError as err:
    ...     print(err)
    linalg.inv: The inversion could not be completed because the input matrix is singular.
    """


def _fails(impl: Callable, a: np.ndarray) -> bool:
    try:
        impl(a)
    except np.linalg.LinAlgError:
        return True
    return False


def _first_failing(impl: Callable, a: np.ndarray) -> tuple:
    """``(torch's "(Batch element i): " prefix, matrix)`` for the first matrix of a stack ``impl`` fails on."""
    if a.ndim == 2:
        return "", a
    i, matrix = next((i, m) for i, m in enumerate(a.reshape((-1,) + a.shape[-2:])) if _fails(impl, m))
    return f"(Batch element {i}): ", matrix


def _singular(name: str, impl: Callable, problem: str) -> Callable:
    """``impl`` with NumPy's singular-matrix error raised as ``LinAlgError`` in torch's words."""

    def run(a: np.ndarray, *rest: Any) -> np.ndarray:
        try:
            return impl(a, *rest)
        except np.linalg.LinAlgError:
            prefix = _first_failing(np.linalg.inv, a)[0]
            raise LinAlgError(f"linalg.{name}: {prefix}The {problem} because the input matrix is singular.") from None

    return run


def _cholesky_impl(a: np.ndarray) -> np.ndarray:
    """``np.linalg.cholesky``; its failure names the first leading minor that is not positive-definite."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        prefix, matrix = _first_failing(np.linalg.cholesky, a)
        order = next(k for k in range(1, len(matrix) + 1) if _fails(np.linalg.cholesky, matrix[:k, :k]))
        raise LinAlgError(f"linalg.cholesky: {prefix}The factorization could not be completed because the input "
                          f"is not positive-definite (the leading minor of order {order} is not "
                          f"positive-definite).") from None


# -- helpers used by the rules -------------------------------------------------------------------
def _is_complex(x: Any) -> bool:
    return x.dtype.kind == "c"


def _h(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two axes."""
    x_t = matrix_transpose(x)
    return x_t.conj() if _is_complex(x) else x_t


def _scaling(c: Tensor) -> Tensor:
    """A stack of scalars ``c`` with two trailing axes, to scale a stack of matrices."""
    return apply(RESHAPE, c, shape=tuple(c.shape) + (1, 1))


def _herm(x: Tensor) -> Tensor:
    """The Hermitian part ``(x + x^H) / 2``."""
    return (x + _h(x)) * 0.5


def _diag(x: Tensor) -> Tensor:
    return x.diagonal(0, -2, -1)


def _trace(x: Tensor) -> Tensor:
    return _diag(x).sum(axis=-1)


def _im_diag(x: Tensor) -> Tensor:
    """``i Im(diag(x))`` as a diagonal matrix (zero for real ``x``)."""
    return (imag_part(_diag(x)) * 1j).diag_embed()


def _safe_reciprocal(d: Tensor) -> Tensor:
    """``1 / d`` where ``d != 0``, else 0 (a differentiable mask, not a NaN)."""
    zero = d == 0
    return where(zero, 0.0, 1.0 / where(zero, 1.0, d))


def _gaps(values: Tensor) -> Tensor:
    """``F[i, j] = 1 / (values[j] - values[i])``, 0 on the diagonal and wherever values are equal."""
    return _safe_reciprocal(values.unsqueeze(-2) - values.unsqueeze(-1))


def _front_batch(op: Op) -> Any:
    """The vmap rule of a one-input matrix op: the batch axis first, as one more stack dimension."""
    return lambda args, bdims, **params: (apply(op, to_front(args[0], bdims[0]), **params), 0)


def _check_square(name: str, a: Tensor) -> None:
    _check_matrix(name, a)
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"linalg.{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                          f"{a.shape[-1]} matrices")


def _check_matrix(name: str, a: Tensor) -> None:
    if a.ndim < 2:
        raise LinAlgError(f"linalg.{name}: The input tensor A must have at least 2 dimensions (got shape "
                          f"{a.shape}).")


# -- inv ---------------------------------------------------------------------------------------------
def _inv_vjp(g: Tensor, out: Tensor, a: Any) -> Tensor:
    """``-A^{-H} g A^{-H}``."""
    out_h = _h(out)
    return -(out_h @ g @ out_h)


def _inv_jvp(tangents: tuple, out: Tensor, a: Any) -> Tensor:
    """``-A^{-1} dA A^{-1}``."""
    return -(out @ tangents[0] @ out)


INV = Op("linalg_inv", _singular("inv", np.linalg.inv, "inversion could not be completed"), vjp=(_inv_vjp,),
         jvp=_inv_jvp, family="linalg", save_inputs=False, save_out=True, grad_name="LinalgInvExBackward0")
INV.batch = _front_batch(INV)


@public(INV, top_level=False, method="inverse", inplace=False, namespaces={"linalg": ("inv",)})
def inv(a: Any) -> Tensor:
    """The inverse of a square matrix (or of each matrix in a stack).

    A singular matrix raises ``LinAlgError``. ``dualgrad.inverse`` is the same function.

    >>> import dualgrad as dg
    >>> dg.linalg.inv(dg.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    a = as_operand(a)
    _check_square("inv", a)
    return apply(INV, a)


# -- solve -------------------------------------------------------------------------------------------
def _solve_matrix(a: Any, b: Any) -> Tensor:
    """``A^{-1} B`` for a stack of matrices ``B`` (the op, without the public function's checks)."""
    return apply(SOLVE, a, b)


def _solve_vjp(g: Tensor, out: Tensor, a: Tensor, b: Any) -> list:
    """``gB = A^{-H} g`` and ``gA = -gB X^H``."""
    gb = _solve_matrix(_h(a), g)
    if not (isinstance(a, Tensor) and a.requires_grad):
        return [None, gb]
    return [-gb @ _h(out), gb]


def _solve_jvp(tangents: tuple, out: Tensor, a: Tensor, b: Any) -> Tensor:
    """``A^{-1} (dB - dA X)``."""
    ta, tb = tangents
    if ta is None:
        return _solve_matrix(a, tb)
    ta_x = matmul(ta, out)
    return _solve_matrix(a, -ta_x if tb is None else tb - ta_x)


def _pad_stack(x: Tensor, bdim: Any, rank: int) -> Tensor:
    """A batch-first operand with size-1 stack axes after the batch axis, up to ``rank`` logical axes."""
    if bdim is NOT_BATCHED:
        return x
    missing = rank - (x.ndim - 1)
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:]) if missing > 0 else x


def _solve_batch(args: tuple, bdims: tuple) -> tuple:
    """Batch axes first, stacks aligned."""
    (a, b), (ba, bb) = [as_operand(x) for x in args], bdims
    a, b = to_front(a, ba), to_front(b, bb)
    rank = max(a.ndim - (ba is not NOT_BATCHED), b.ndim - (bb is not NOT_BATCHED))
    return apply(SOLVE, _pad_stack(a, ba, rank), _pad_stack(b, bb, rank)), 0


SOLVE = Op("linalg_solve", _singular("solve", np.linalg.solve, "solver failed"), vjp=_solve_vjp,
           jvp=_solve_jvp, batch=_solve_batch, family="linalg", save_out=True, arg_names=("A", "B"),
           grad_name="LinalgSolveExBackward0")


def check_system(name: str, a: Tensor, rhs: Tensor, left: bool, b_shape: tuple) -> None:
    """torch's errors for ``A X = B`` (``X A = B`` unless ``left``): ``B``'s rows (columns) and stacks must fit."""
    n = a.shape[-1]
    if rhs.ndim < 2 or rhs.shape[-2 if left else -1] != n:
        shown = rhs.shape[-2:] if rhs.ndim >= 2 else (rhs.shape[0], 1)
        raise LinAlgError(f"linalg.{name}: Incompatible shapes of A and B for the equation "
                          f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shown[0]}x{shown[1]})")
    try:
        np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise LinAlgError(f"linalg.{name}: the batch dimensions of A {a.shape} and B {b_shape} do not "
                          f"broadcast") from None


def solve_system(a: Tensor, b: Tensor, vector: bool, left: bool = True) -> Tensor:
    """``X`` with ``A X = B`` (``X A = B`` unless ``left``); with ``vector``, ``B`` is a stack of vectors."""
    rhs = b.unsqueeze(-1) if vector else b
    check_system("solve", a, rhs, left, b.shape)
    if left:
        x = _solve_matrix(a, rhs)
    else:
        x = matrix_transpose(_solve_matrix(matrix_transpose(a), matrix_transpose(rhs)))
    return x.squeeze(-1) if vector else x


@public(SOLVE, top_level=False, method=False, namespaces={"linalg": ("solve",)})
def solve(A: Any, B: Any, *, left: bool = True) -> Tensor:  # noqa: N803 - torch's argument names
    """The solution ``X`` of ``A @ X = B`` (of ``X @ A = B`` with ``left=False``), as torch's.

    ``B`` is a (stack of) vector(s) when it is 1-D or has the shape of ``A``
    without its last axis (torch's rule); otherwise a stack of matrices. Stacks
    broadcast; a singular ``A`` raises ``LinAlgError``. (Through NumPy,
    ``np.linalg.solve`` keeps NumPy 2's rule: ``B`` is a vector only when 1-D.)

    >>> import dualgrad as dg
    >>> A = dg.tensor([[2., 0.], [0., 4.]])
    >>> dg.linalg.solve(A, dg.tensor([2., 4.]))
    tensor([1., 1.])
    >>> dg.linalg.solve(A.expand(3, 2, 2), dg.ones(3, 2)).shape  # a batch of 3 vectors
    (3, 2)
    """
    a, b = as_operand(A), as_operand(B)
    _check_square("solve", a)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    return solve_system(a, b, vector, left)


# -- det and slogdet -----------------------------------------------------------------------------------
def _det_vjp(g: Tensor, out: Tensor, a: Tensor) -> Tensor:
    """``g adj(A)^H``: ``conj(g det A) A^{-H}``, or from the SVD where ``A`` is (nearly) singular."""
    inverse = _inverse_if_well_conditioned(a)
    if inverse is None:
        return _scaling(g) * _h(_adjugate(a))
    scale = g * out.conj() if _is_complex(out) else g * out
    return _scaling(scale) * _h(inverse)


def _det_jvp(tangents: tuple, out: Tensor, a: Tensor) -> Tensor:
    """``tr(adj(A) dA)``: ``det(A) tr(A^{-1} dA)``, or from the SVD where ``A`` is (nearly) singular."""
    inverse = _inverse_if_well_conditioned(a)
    if inverse is None:
        return _trace(_adjugate(a) @ tangents[0])
    return out * _trace(inverse @ tangents[0])


def _inverse_if_well_conditioned(a: Tensor) -> Tensor | None:
    """``A^{-1}``, or None if some matrix of the stack is singular or has a condition number
    (in the 1-norm) above ``1/sqrt(eps)``, where ``det(A) A^{-1}`` would lose half its digits.
    (Inside vmap, the check covers the whole batch.)"""
    try:
        inverse = inv(a)
    except np.linalg.LinAlgError:
        return None
    a_values, inverse_values = physical_value(a)._data, physical_value(inverse)._data
    condition = _norm_1(a_values) * _norm_1(inverse_values)
    return inverse if np.all(condition < np.finfo(a_values.dtype).eps ** -0.5) else None


def _norm_1(a: np.ndarray) -> np.ndarray:
    """The 1-norm (largest column sum of moduli) of each matrix of a stack."""
    return np.abs(a).sum(axis=-2).max(axis=-1)


def _adjugate(a: Tensor) -> Tensor:
    """``adj(A) = det(U) det(V^H) V diag(p) U^H`` with ``p_i`` the product of the singular values
    other than ``s_i`` (``A = U diag(s) V^H``): ``det(A) A^{-1}``, defined for singular ``A`` too."""
    u, s, vh = svd(a)
    one = s[..., :1] * 0 + 1
    before = cat([one, cumprod(s[..., :-1], -1)], -1)  # s_0 ... s_{i-1}
    after = cat([flip(cumprod(flip(s[..., 1:], -1), -1), -1), one], -1)  # s_{i+1} ... s_{n-1}
    others = before * after
    return _scaling(det(u) * det(vh)) * ((_h(vh) * others[..., None, :]) @ _h(u))


DET = Op("linalg_det", np.linalg.det, vjp=(_det_vjp,), jvp=_det_jvp, family="linalg", save_out=True,
         arg_names=("A",), grad_name="LinalgDetBackward0")
DET.batch = _front_batch(DET)


@public(DET, inplace=False, namespaces={"linalg": ("det",)})
def det(a: Any) -> Tensor:
    """The determinant of a square matrix (or of each matrix in a stack).

    Its gradient is the adjugate, ``conj(det A) A^{-H}`` for an invertible ``A``;
    at a singular matrix it comes from the SVD (torch returns zeros there, which is
    wrong where the rank is ``n - 1``). Use ``slogdet`` for products of many factors,
    where ``det`` under- or overflows.

    >>> import dualgrad as dg
    >>> dg.linalg.det(dg.tensor([[2., 0.], [0., 3.]]))
    tensor(6.)
    """
    a = as_operand(a)
    _check_square("det", a)
    return apply(DET, a)


class SlogdetResult(NamedTuple):
    """``(sign, logabsdet)``, as NumPy's ``slogdet``."""

    sign: Tensor
    logabsdet: Tensor


def _slogdet_impl(a: np.ndarray) -> tuple:
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_vjp(g: tuple, out: tuple, a: Tensor) -> Tensor:
    """``(g_log + i Im(g_sign conj(sign))) A^{-H}``: the log-determinant's gradient is ``A^{-H}``."""
    g_sign, g_log = g
    sign = out[0]
    coefficient = g_log
    if _is_complex(sign):
        coefficient = g_log + (g_sign * sign.conj()).imag * 1j
    return _scaling(coefficient) * inv(_h(a))


def _slogdet_jvp(tangents: tuple, out: tuple, a: Tensor) -> tuple:
    """``d logabsdet = Re tr(A^{-1} dA)``; ``d sign = i sign Im tr(A^{-1} dA)`` (0 for real A)."""
    tau = _trace(_solve_matrix(a, tangents[0]))
    if not _is_complex(tau):
        return None, tau
    return out[0] * (tau.imag * 1j), tau.real


SLOGDET = Op("linalg_slogdet", _slogdet_impl, vjp=(_slogdet_vjp,), jvp=_slogdet_jvp, family="linalg",
             save_out=True, multi_output=True, arg_names=("A",), grad_name="LinalgSlogdetBackward0")
SLOGDET.batch = _front_batch(SLOGDET)


@public(SLOGDET, inplace=False, namespaces={"linalg": ("slogdet",)})
def slogdet(a: Any) -> SlogdetResult:
    """The sign (a unit complex number for complex input) and ``log |det a|``, computed stably.

    ``det(a) == sign * exp(logabsdet)`` without over- or underflow. The gradient
    of ``logabsdet`` is ``a^{-H}``; the sign of a real matrix has zero derivative.

    >>> import dualgrad as dg
    >>> sign, logabsdet = dg.linalg.slogdet(dg.tensor([[-2., 0.], [0., 3.]]))
    >>> sign, logabsdet.exp()
    (tensor(-1.), tensor(6.))
    """
    a = as_operand(a)
    _check_square("slogdet", a)
    return SlogdetResult(*apply(SLOGDET, a))


# -- cholesky ------------------------------------------------------------------------------------------
def _lower_half(x: Tensor) -> Tensor:
    """The strictly lower triangle plus half the diagonal."""
    return x.tril(-1) + _diag(x).diag_embed() * 0.5


def _cholesky_jvp(tangents: tuple, out: Tensor, a: Any) -> Tensor:
    """``dL = L phi(L^{-1} dA L^{-H})``, ``phi`` = strictly lower part plus half the diagonal."""
    left = _solve_matrix(out, _herm(tangents[0]))
    return out @ _lower_half(_h(_solve_matrix(out, _h(left))))


def _cholesky_vjp(g: Tensor, out: Tensor, a: Any) -> Tensor:
    """The Hermitian part of ``L^{-H} phi(L^H g) L^{-1}`` (the adjoint of the forward rule)."""
    out_h = _h(out)
    left = _solve_matrix(out_h, _lower_half(out_h @ g))
    return _herm(_h(_solve_matrix(out_h, _h(left))))


CHOLESKY = Op("linalg_cholesky", _cholesky_impl, vjp=(_cholesky_vjp,), jvp=_cholesky_jvp, family="linalg",
              save_inputs=False, save_out=True, arg_names=("A",), grad_name="LinalgCholeskyExBackward0")
CHOLESKY.batch = _front_batch(CHOLESKY)


@public(CHOLESKY, top_level=False, method=False, namespaces={"linalg": ("cholesky",)})
def cholesky(a: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (lower, ``a = L L^H``) of a Hermitian positive-definite matrix.

    Only the lower triangle of ``a`` is read (as NumPy); the derivative is torch's, that of
    ``cholesky((a + a^H) / 2)`` (only the Hermitian part of a perturbation counts; the gradient is
    Hermitian). ``np.linalg.cholesky`` on a Tensor differentiates NumPy's function instead: only the
    triangle it reads (see the linalg reference page). With ``upper=True``, returns ``L^H``. A matrix
    that is not positive-definite raises ``LinAlgError`` naming the leading minor that is not.

    >>> import dualgrad as dg
    >>> dg.linalg.cholesky(dg.tensor([[4., 2.], [2., 5.]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    a = as_operand(a)
    _check_square("cholesky", a)
    lower = apply(CHOLESKY, a)
    return _h(lower) if upper else lower


# -- eigh ----------------------------------------------------------------------------------------------
class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``, as NumPy's ``eigh``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _eigh_impl(a: np.ndarray, *, UPLO: str) -> tuple:  # noqa: N803 - NumPy's argument name
    values, vectors = np.linalg.eigh(a, UPLO=UPLO)
    return values, vectors


def _eigh_jvp(tangents: tuple, out: tuple, a: Any, *, UPLO: str) -> tuple:  # noqa: N803
    """``d lambda = Re diag(X)``, ``dV = V (F o X)`` with ``X = V^H dA V``, ``F_ij = 1 / (l_j - l_i)``."""
    values, vectors = out
    x = _h(vectors) @ _herm(tangents[0]) @ vectors
    d_values = _diag(x).real if _is_complex(x) else _diag(x)
    return d_values, vectors @ (_gaps(values) * x)


def _eigh_vjp(g: tuple, out: tuple, a: Any, *, UPLO: str) -> Tensor:  # noqa: N803
    """The Hermitian part of ``V (diag(g_lambda) + F o (V^H g_V)) V^H``."""
    g_values, g_vectors = g
    values, vectors = out
    inner = g_values.diag_embed() + _gaps(values) * (_h(vectors) @ g_vectors)
    return _herm(vectors @ inner @ _h(vectors))


EIGH = Op("linalg_eigh", _eigh_impl, vjp=(_eigh_vjp,), jvp=_eigh_jvp, family="linalg", save_inputs=False,
          save_out=True, multi_output=True, arg_names=("A",), grad_name="LinalgEighBackward0")
EIGH.batch = _front_batch(EIGH)


def _check_uplo(uplo: str) -> str:
    if uplo not in ("L", "U"):
        raise ValueError(f"eigh: UPLO argument must be 'L' or 'U', got {uplo!r}")
    return uplo


@public(EIGH, top_level=False, method=False, namespaces={"linalg": ("eigh",)})
def eigh(a: Any, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's argument name
    """Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian matrix.

    Only the ``UPLO`` triangle is read; the derivative is torch's, that of ``eigh((a + a^H) / 2)``
    (only the Hermitian part of a perturbation counts; the gradient is Hermitian).
    ``np.linalg.eigh`` on a Tensor differentiates NumPy's function instead, which reads the ``UPLO``
    triangle only (so does its derivative). Degenerate eigenvalues: the eigenvalues' derivatives stay exact,
    the eigenvectors' are undefined there (the factor ``1 / (l_j - l_i)`` is set
    to 0 for equal values, so do not trust them). Complex eigenvectors have an
    arbitrary phase: differentiate only phase-invariant functions of them.

    >>> import dualgrad as dg
    >>> values, vectors = dg.linalg.eigh(dg.tensor([[2., 0.], [0., 1.]]))
    >>> values
    tensor([1., 2.])
    """
    a = as_operand(a)
    _check_square("eigh", a)
    return EighResult(*apply(EIGH, a, UPLO=_check_uplo(UPLO)))


@public(EIGH, top_level=False, method=False, namespaces={"linalg": ("eigvalsh",)})
def eigvalsh(a: Any, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a Hermitian matrix; differentiable even when some are equal.

    The derivative follows torch's convention, as ``eigh``'s (``np.linalg.eigvalsh``: NumPy's).

    >>> import dualgrad as dg
    >>> dg.linalg.eigvalsh(dg.tensor([[2., 1.], [1., 2.]]))
    tensor([1., 3.])
    """
    return eigh(a, UPLO)[0]


# -- svd -----------------------------------------------------------------------------------------------
class SVDResult(NamedTuple):
    """``(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, as NumPy's ``svd``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def _svd_impl(a: np.ndarray, *, full_matrices: bool) -> tuple:
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _columns(x: Tensor, start: int, stop: int | None) -> Tensor:
    return x[..., start:stop]


def _svd_parts(out: tuple) -> tuple:
    """``(U1, s, V1, U2, V2)``: the ``k = min(m, n)`` leading singular vectors and the completions."""
    u, s, vh = out
    k = s.shape[-1]
    v = _h(vh)
    return _columns(u, 0, k), s, _columns(v, 0, k), _columns(u, k, None), _columns(v, k, None)


def _scaled_gaps(s: Tensor) -> tuple:
    """``(F', s', c)``: ``s' = s / c`` with ``c = max(s)`` (a constant; 1 for a zero matrix) and
    ``F'_ij = 1 / (s'_j^2 - s'_i^2)``, so that ``F o X o s = (F' o X o s') / c`` for the gap
    factor ``F`` of ``s^2``, without the overflow (or underflow) of ``s^2`` for large (tiny) values."""
    if s.shape[-1] == 0:
        return _gaps(s * s), s, 1.0
    scale = s.detach().amax(-1, keepdim=True)
    scale = where(scale == 0, 1.0, scale)
    scaled = s / scale
    return _gaps(scaled * scaled), scaled, scale.unsqueeze(-1)


def _svd_jvp(tangents: tuple, out: tuple, a: Tensor, *, full_matrices: bool) -> tuple:
    """The reduced SVD's tangents; full matrices extend them so ``[U1 U2]`` stays unitary.

    ``P = U^H dA V``, ``dS = Re diag P``, ``dU = U (F o (P S + S P^H)) + (dA V - U P) S^{-1}``,
    ``dV = V (F o (S P + P^H S)) + (dA^H U - V P^H) S^{-1}``, ``F_ij = 1 / (s_j^2 - s_i^2)``;
    complex: ``U^H dU`` gets the diagonal ``i Im(P_kk) / s_k`` (gauge ``diag(V^H dV) = 0``).
    """
    u1, s, v1, u2, v2 = _svd_parts(out)
    m, n = a.shape[-2], a.shape[-1]
    t = tangents[0]
    p = _h(u1) @ t @ v1
    f, scaled, scale = _scaled_gaps(s)
    s_row, s_col, s_inv = scaled.unsqueeze(-2), scaled.unsqueeze(-1), _safe_reciprocal(s)
    p_h = _h(p)
    omega_u = f * (p * s_row + s_col * p_h) / scale
    omega_v = f * (s_col * p + p_h * s_row) / scale
    if _is_complex(p):
        omega_u = omega_u + _im_diag(p) * s_inv.unsqueeze(-2)
    du = u1 @ omega_u
    dv = v1 @ omega_v
    if m > n:
        du = du + (t @ v1 - u1 @ p) * s_inv.unsqueeze(-2)
    if n > m:
        dv = dv + (_h(t) @ u1 - v1 @ p_h) * s_inv.unsqueeze(-2)
    if full_matrices and m > n:
        du = _cat_columns(du, -(u1 @ (_h(du) @ u2)))
    if full_matrices and n > m:
        dv = _cat_columns(dv, -(v1 @ (_h(dv) @ v2)))
    ds = _diag(p).real if _is_complex(p) else _diag(p)
    return du, ds, _h(dv)


def _cat_columns(left: Tensor, right: Tensor) -> Tensor:
    return cat([left, right], -1)


def _svd_vjp(g: tuple, out: tuple, a: Tensor, *, full_matrices: bool) -> Tensor:
    """The adjoint of ``_svd_jvp``: ``gA = U Gamma V^H`` plus the parts orthogonal to ``U``, ``V``.

    ``Gamma = diag(gS) + (F o J) S + (F o J)^H S + S (F o K) + S (F o K)^H`` (+ the complex
    gauge term), ``J = U^H gU``, ``K = V^H gV``.
    """
    g_u, g_s, g_vh = g
    u1, s, v1, u2, v2 = _svd_parts(out)
    m, n = a.shape[-2], a.shape[-1]
    k = s.shape[-1]
    g_v = _h(g_vh)
    g_u1, g_v1 = _columns(g_u, 0, k), _columns(g_v, 0, k)
    if full_matrices and m > n:
        g_u1 = g_u1 - u2 @ (_h(_columns(g_u, k, None)) @ u1)
    if full_matrices and n > m:
        g_v1 = g_v1 - v2 @ (_h(_columns(g_v, k, None)) @ v1)
    j, kk = _h(u1) @ g_u1, _h(v1) @ g_v1
    f, scaled, scale = _scaled_gaps(s)
    s_row, s_col, s_inv = scaled.unsqueeze(-2), scaled.unsqueeze(-1), _safe_reciprocal(s)
    fj, fk = f * j, f * kk
    gamma = g_s.diag_embed() + ((fj + _h(fj)) * s_row + s_col * (fk + _h(fk))) / scale
    if _is_complex(j):
        gamma = gamma + _im_diag(j) * s_inv.unsqueeze(-2)
    ga = u1 @ gamma @ _h(v1)
    if m > n:
        ga = ga + ((g_u1 - u1 @ j) * s_inv.unsqueeze(-2)) @ _h(v1)
    if n > m:
        ga = ga + (u1 * s_inv.unsqueeze(-2)) @ _h(g_v1 - v1 @ kk)
    return ga


SVD = Op("linalg_svd", _svd_impl, vjp=(_svd_vjp,), jvp=_svd_jvp, family="linalg", save_out=True,
         multi_output=True, arg_names=("A",), grad_name="LinalgSvdBackward0")
SVD.batch = _front_batch(SVD)


@public(SVD, top_level=False, method=False, namespaces={"linalg": ("svd",)})
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """The singular value decomposition ``a = U @ diag(S) @ Vh`` (``S`` descending), as NumPy's.

    With ``full_matrices=True``, ``U``/``Vh`` are completed to unitary matrices; the
    completion is not unique, and its derivative is the one that keeps the
    matrices unitary while moving the extra columns only along the leading ones.
    With ``compute_uv=False``, returns ``S`` only (see ``svdvals``). Equal singular
    values: ``S``'s derivative stays exact, ``U``/``Vh``'s is undefined (as ``eigh``).
    The derivatives are computed from ``S / max(S)``, so they stay finite for matrices
    whose squared singular values overflow or underflow (float64 entries near 1e200).
    ``hermitian`` is accepted for NumPy compatibility; the general algorithm is used.

    >>> import dualgrad as dg
    >>> U, S, Vh = dg.linalg.svd(dg.tensor([[3., 0.], [0., -2.]]))
    >>> S
    tensor([3., 2.])
    """
    a = as_operand(a)
    _check_matrix("svd", a)
    if not compute_uv:
        return svdvals(a)
    return SVDResult(*apply(SVD, a, full_matrices=bool(full_matrices)))


@public(SVD, top_level=False, method=False, namespaces={"linalg": ("svdvals",)})
def svdvals(x: Any, /) -> Tensor:
    """The singular values, descending; their derivative is exact even when some are equal.

    >>> import dualgrad as dg
    >>> dg.linalg.svdvals(dg.tensor([[0., 2.], [1., 0.]]))
    tensor([2., 1.])
    """
    x = as_operand(x)
    _check_matrix("svdvals", x)
    return apply(SVD, x, full_matrices=False)[1]


# -- qr ------------------------------------------------------------------------------------------------
class QRResult(NamedTuple):
    """``(Q, R)``, as NumPy's ``qr``."""

    Q: Tensor
    R: Tensor


def _qr_impl(a: np.ndarray, *, mode: str) -> tuple:
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _check_qr_derivative(a: Any, mode: str) -> None:
    m, n = a.shape[-2], a.shape[-1]
    if m < n or (mode == "complete" and m != n):
        raise NotImplementedError(
            f"qr: derivatives are implemented for inputs with at least as many rows as columns in mode "
            f"'reduced' or 'r' (or square inputs in mode 'complete'); got shape {tuple(a.shape)}, "
            f"mode={mode!r}"
        )


def _skew_lower(x: Tensor) -> Tensor:
    """``C`` with the strictly lower part of ``x``, skew-Hermitian, and ``i Im diag(x)``."""
    lower = x.tril(-1)
    c = lower - _h(lower)
    return c + _im_diag(x) if _is_complex(x) else c


def _hermitian_from_upper(x: Tensor) -> Tensor:
    """``triu(x, 1) + triu(x, 1)^H + Re diag(x)``."""
    upper = x.triu(1)
    d = _diag(x).real if _is_complex(x) else _diag(x)
    return upper + _h(upper) + d.diag_embed()


def _qr_jvp(tangents: tuple, out: tuple, a: Tensor, *, mode: str) -> tuple:
    """``X = Q^H dA R^{-1}``, ``C = skew(X)``: ``dQ = Q C + (dA R^{-1} - Q X)``, ``dR = (X - C) R``."""
    _check_qr_derivative(a, mode)
    q, r = out
    t_rinv = _h(_solve_matrix(_h(r), _h(tangents[0])))
    x = _h(q) @ t_rinv
    c = _skew_lower(x)
    return q @ c + (t_rinv - q @ x), (x - c) @ r


def _qr_vjp(g: tuple, out: tuple, a: Tensor, *, mode: str) -> Tensor:
    """``(gQ - Q herm_upper(Q^H gQ - gR R^H)) R^{-H}`` (the adjoint of the forward rule)."""
    _check_qr_derivative(a, mode)
    g_q, g_r = g
    q, r = out
    m = _h(q) @ g_q - g_r @ _h(r)
    return _h(_solve_matrix(r, _h(g_q - q @ _hermitian_from_upper(m))))


QR = Op("linalg_qr", _qr_impl, vjp=(_qr_vjp,), jvp=_qr_jvp, family="linalg", save_inputs=False,
        save_out=True, multi_output=True, arg_names=("A",), grad_name="LinalgQrBackward0")
QR.batch = _front_batch(QR)


@public(QR, top_level=False, method=False, namespaces={"linalg": ("qr",)})
def qr(a: Any, mode: str = "reduced") -> QRResult:
    """The QR decomposition ``a = Q @ R`` (``mode`` 'reduced', 'complete' or 'r').

    With ``mode='r'``, ``Q`` is an empty tensor, as torch's (``np.linalg.qr`` on a
    Tensor returns ``R`` alone, as NumPy's); unlike torch, that ``R`` is
    differentiable. Derivatives need at least as many rows as columns
    (``mode='complete'``: a square matrix) and a full-rank input; otherwise the
    backward raises NotImplementedError naming the shape.

    >>> import dualgrad as dg
    >>> Q, R = dg.linalg.qr(dg.tensor([[3., 0.], [4., 1.]]))
    >>> R
    tensor([[-5.0000, -0.8000],
            [ 0.0000,  0.6000]])
    """
    a = as_operand(a)
    _check_matrix("qr", a)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (dualgrad supports 'reduced', 'complete' and 'r')")
    if mode == "r":
        return QRResult(_wrap(np.zeros(0, a.dtype)), apply(QR, a, mode="reduced")[1])
    return QRResult(*apply(QR, a, mode=mode))


class GeqrfResult(NamedTuple):
    """``(a, tau)``: torch's field names for ``geqrf``."""

    a: Tensor
    tau: Tensor


def _geqrf_impl(a: np.ndarray) -> tuple:
    h, tau = np.linalg.qr(a, mode="raw")  # (LAPACK's column-major result: transposed)
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)), tau


def _geqrf_derivative(*_: Any, **__: Any) -> Any:
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


GEQRF = Op("geqrf", _geqrf_impl, vjp=(_geqrf_derivative,), jvp=_geqrf_derivative, family="linalg",
           save_inputs=False, multi_output=True, arg_names=("self",), grad_name="GeqrfBackward0")
GEQRF.batch = _front_batch(GEQRF)


@public(GEQRF)
def geqrf(input: Any) -> GeqrfResult:  # noqa: A002 - torch's name
    """LAPACK's ``geqrf``: the QR decomposition as Householder reflectors, ``(a, tau)``.

    ``R`` is the upper triangle of ``a``; below the diagonal, column ``i`` of ``a``
    holds the reflector ``v_i`` (with an implicit 1 at row ``i``), and
    ``Q = H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^H`` (``householder_product``
    builds it). As in torch, it is not differentiable: a backward or forward-mode
    derivative through it raises NotImplementedError (differentiate ``linalg.qr``).

    >>> import dualgrad as dg
    >>> a, tau = dg.geqrf(dg.tensor([[3., 1.], [4., 2.]]))
    >>> a.triu()
    tensor([[-5.0000, -2.2000],
            [ 0.0000,  0.4000]])
    """
    input = as_operand(input)  # noqa: A001 - torch's name
    if input.ndim < 2:
        raise LinAlgError(f"geqrf: input must have at least 2 dimensions. (got shape {input.shape})")
    return GeqrfResult(*apply(GEQRF, input))


@public(None, top_level=False, method=False, namespaces={"linalg": ("householder_product",)})
def householder_product(input: Any, tau: Any) -> Tensor:  # noqa: A002 - torch's name
    """The first ``n`` columns of ``H_1 H_2 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` (Householder reflectors).

    ``input`` is ``(*, m, n)`` with ``m >= n``; column ``i`` of its strictly lower
    part holds ``v_i`` below an implicit 1 at row ``i`` (``geqrf``'s layout), and
    ``tau`` is ``(*, k)`` with ``k <= n``. Built from differentiable ops, one
    rank-one update per reflector (``Q <- Q - tau_i v_i (v_i^H Q)``, from the last),
    so it is differentiable in both arguments in every mode.

    >>> import dualgrad as dg
    >>> a = dg.tensor([[3., 1.], [4., 2.]])
    >>> q = dg.linalg.householder_product(*dg.geqrf(a))
    >>> (q - dg.linalg.qr(a).Q).abs().max() < 1e-12
    tensor(True)
    """
    input, tau = as_operand(input), as_operand(tau)  # noqa: A001 - torch's name
    name = "torch.linalg.householder_product"
    if input.ndim < 2:
        raise LinAlgError(f"{name}: input must have at least 2 dimensions.")
    m, n = input.shape[-2:]
    if m < n:
        raise LinAlgError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != input.ndim - 1:
        raise LinAlgError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                          f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if tau.shape[-1] > n:
        raise LinAlgError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise LinAlgError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                          f"{list(tau.shape[:-1])}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype} does not match input dtype {input.dtype}")
    identity = _wrap(np.eye(m, n, dtype=input.dtype))
    reflectors = input.tril(-1) + identity
    q = identity.expand(*input.shape)
    for i in reversed(range(tau.shape[-1])):
        v = reflectors[..., :, i : i + 1]
        q = q - (tau[..., i : i + 1].unsqueeze(-1) * v) @ (_h(v) @ q)
    return q


@public(None)
def orgqr(input: Any, input2: Any) -> Tensor:  # noqa: A002 - torch's names
    """torch's top-level name of ``linalg.householder_product`` (LAPACK's ``orgqr``).

    >>> import dualgrad as dg
    >>> dg.orgqr(*dg.geqrf(dg.eye(2))).abs()
    tensor([[1., 0.],
            [0., 1.]])
    """
    return householder_product(input, input2)


@public(INV, method=False)
def inverse(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """torch's top-level name of ``linalg.inv``: the inverse of a square matrix (or of each in a stack).

    >>> import dualgrad as dg
    >>> dg.inverse(dg.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    return inv(input)


@public(SLOGDET, inplace=False)
def logdet(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """``log(det(input))``, from ``slogdet``: NaN where a real determinant is negative, -inf where it is 0.

    A complex matrix gives the complex logarithm ``logabsdet + i angle(det)``. At a
    negative determinant the gradient is 0 (the result is a ``where``), as torch's.

    >>> import dualgrad as dg
    >>> dg.logdet(dg.tensor([[[2., 0.], [0., 3.]], [[-1., 0.], [0., 1.]]]))
    tensor([1.7918,    nan])
    """
    sign, logabsdet = slogdet(input)
    if _is_complex(sign):
        return logabsdet + sign.log()
    return where(sign < 0, np.nan, logabsdet)


__all__ = exported(__name__)
