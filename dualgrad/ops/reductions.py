"""Reductions and axis-wise ops: sum, prod, amax, var, norm, logsumexp, cumsum, softmax, ...

Public functions take torch's ``dim``/``keepdim`` and NumPy's ``axis``/``keepdims``
and normalize them (``axis`` is None or a sorted tuple of non-negative ints), so
each implementation is one NumPy call. Every op here is in the ``reduction``
family, whose vmap rule (``batch_rules.reduction_batch``) moves the batch axis
first and shifts ``axis`` by one; only ``max``/``min`` with indices have their own.

Most reductions ``r`` are derived from a weight ``w = dr/dconj(x)`` shaped like
``x``: the reverse rule is ``g * w`` (``g`` broadcast back over the reduced axes)
and the forward rule ``sum(Re(conj(w) * t))``; for the holomorphic ones (prod,
logsumexp) they are ``g * conj(w)`` and ``sum(w * t)``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import fastpath
from ..base.dtypes import FLOATING_DTYPES
from ..factories import zeros_like
from ..fastpath import unseen, unseen_real_arrays
from ..tensor import Tensor, _wrap, int_arg
from ._axes import normalize_axes, normalize_axis, pick_axis, pick_keepdims
from .batch_rules import to_front
from .dispatch import apply, tensor_arg
from .elementwise.core import ZERO_ONE, maximum, minimum, sgn, to_dtype, where
from .registry import Op, linear, nondifferentiable
from .shape.core import FLIP, NARROW, PAD, PERMUTE, RESHAPE, reshape
from .surface import exported, public


class ValuesIndices(NamedTuple):
    """What ``max``/``min`` along a dimension return, as torch's ``return_types``."""

    values: Tensor
    indices: Tensor


# -- helpers for rules --------------------------------------------------------------------
def keep_dims(t: Any, ndim: int, axis: tuple | None, keepdims: bool) -> Any:
    """A reduced ``t`` reshaped with size-1 axes where ``axis`` was reduced (broadcasts to the input)."""
    if t is None or keepdims or ndim == 0:
        return t
    return apply(RESHAPE, t, shape=_kept_shape(t.shape, ndim, axis))


def _kept_shape(reduced: tuple, ndim: int, axis: tuple | None) -> tuple:
    """The ``reduced`` shape with a 1 at each reduced axis of an input of ``ndim`` axes."""
    shape = list(reduced)
    for a in range(ndim) if axis is None else axis:
        shape.insert(a, 1)
    return tuple(shape)


def expand_reduced(g: Tensor, shape: tuple, axis: tuple | None, keepdims: bool, divisor: int | None = None) -> Tensor:
    """Broadcast a reduced gradient ``g`` back to the input ``shape``, divided by ``divisor``
    first if given (a mean's: fewer elements to divide).

    When no mode can see it (``unseen``: a backward without ``create_graph``), NumPy
    broadcasts directly: a read-only broadcast, as ``broadcast_product``'s, and no view to record.
    """
    if unseen(g):
        data = g._data if divisor is None else np.asarray(np.true_divide(g._data, divisor))
        if not keepdims and shape:
            data = data.reshape(_kept_shape(data.shape, len(shape), axis))
        if data.shape != shape:
            data = np.broadcast_to(data, shape)
        return g if data is g._data else _wrap(data)
    g = keep_dims(g if divisor is None else g / divisor, len(shape), axis, keepdims)
    return g.expand(shape) if g.shape != shape else g


def _count(shape: tuple, axis: tuple | None) -> int:
    return math.prod(shape if axis is None else [shape[a] for a in axis])


def _conj(t: Any) -> Any:
    return t.conj() if t.dtype.kind == "c" else t


def _sum(t: Tensor, axis: tuple | None, keepdims: bool) -> Tensor:
    return apply(SUM, t, axis=axis, keepdims=keepdims)


def _flip_last(t: Tensor) -> Tensor:
    return apply(FLIP, t, axis=(t.ndim - 1,))


def _weighted(weight: Callable, holomorphic: bool = False, vjp_mask: Callable | None = None,
              jvp_mask: Callable | None = None) -> tuple:
    """The (vjp, jvp) of a reduction from its weight ``weight(out_kept, x, axis=, **params)``.

    A weight of None is a derivative of 0: zeros, even for an inf or NaN gradient or tangent
    (torch gives no gradient). With ``vjp_mask`` (``jvp_mask``), a boolean ``mask(out_kept, x)``,
    the gradient (tangent) passes only where the mask holds and is an exact 0 elsewhere, also where
    it is inf or NaN, as torch's rules that select rather than multiply: the gradients of ``max()``,
    ``min()`` and ``median()``, the tangents of ``amax`` and ``amin``, both of ``std`` where it is 0.
    """

    def vjp(g: Tensor, out: Any, x: Any, *, axis: Any, keepdims: bool, **params: Any) -> Tensor:
        kept = keep_dims(out, x.ndim, axis, keepdims)
        w = weight(kept, x, axis=axis, **params)
        g = keep_dims(g, x.ndim, axis, keepdims)
        if w is None:
            return zeros_like(g.expand(x.shape))
        product = g * (_conj(w) if holomorphic else w)
        return product if vjp_mask is None else where(vjp_mask(kept, x), product, 0.0)

    def jvp(tangents: tuple, out: Any, x: Tensor, *, axis: Any, keepdims: bool, **params: Any) -> Tensor:
        kept = keep_dims(out, x.ndim, axis, keepdims)
        w = weight(kept, x, axis=axis, **params)
        t = tangents[0]
        # (a real result of a complex input, as ``var``'s, has the real part of ``conj(w) * t`` as its
        # tangent; a complex result, as ``amax``'s of a complex input, keeps the whole tangent)
        real_result = out.dtype.kind != "c"
        if w is None:
            return _sum(zeros_like(t.real if t.dtype.kind == "c" and real_result else t), axis, keepdims)
        product = t * w if holomorphic else _conj(w) * t
        if not holomorphic and product.dtype.kind == "c" and real_result:
            product = product.real
        if jvp_mask is not None:
            product = where(jvp_mask(kept, x), product, 0.0)
        return _sum(product, axis, keepdims)

    return (vjp,), jvp


def _name_by_dim(base: str) -> Callable:
    """A ``grad_name_for``: torch names a reduction over all elements ``<base>Backward0``, over
    given dims ``<base>Backward1`` (its overload with ``dim``)."""

    def grad_name_for(node: Any) -> str:
        return f"{base}Backward{0 if node.params['axis'] is None else 1}"

    return grad_name_for


def _reduction(name: str, impl: Callable, weight: Callable, holomorphic: bool = False,
               vjp_mask: Callable | None = None, jvp_mask: Callable | None = None, **kwargs: Any) -> Op:
    vjp, jvp = _weighted(weight, holomorphic, vjp_mask, jvp_mask)
    return Op(name, impl, vjp=vjp, jvp=jvp, family="reduction", **kwargs)


# -- weights ------------------------------------------------------------------------------------------
def _to_last(x: Tensor, axis: tuple | None) -> tuple:
    """``x`` with the ``axis`` dimensions moved last and merged, and the function undoing it."""
    axes = tuple(range(x.ndim)) if axis is None else axis
    order = tuple(a for a in range(x.ndim) if a not in axes) + axes
    moved = apply(PERMUTE, x, axes=order)
    lines = apply(RESHAPE, moved, shape=moved.shape[:x.ndim - len(axes)] + (_count(x.shape, axes),))

    def restore(t: Tensor) -> Tensor:
        back = apply(RESHAPE, t, shape=moved.shape)
        return apply(PERMUTE, back, axes=tuple(int(i) for i in np.argsort(order)))

    return lines, restore


def _exclusive_cumprod(lines: Tensor) -> Tensor:
    """``prod_{j < i} x_j`` along the last axis (1 for the first element), without division."""
    last = lines.ndim - 1
    head = apply(NARROW, apply(CUMPROD, lines, axis=last), axis=last, start=0, length=lines.shape[-1] - 1)
    return apply(PAD, head, widths=((0, 0),) * (lines.ndim - 1) + ((1, 0),), value=1)


def _prod_weight(out: Any, x: Tensor, *, axis: tuple | None) -> Tensor:
    """``prod_{j != i} x_j`` over the reduced axes: left times right exclusive products (exact with zeros)."""
    lines, restore = _to_last(x, axis)
    if lines.shape[-1] == 0:
        return x
    right = _flip_last(_exclusive_cumprod(_flip_last(lines)))
    return restore(_exclusive_cumprod(lines) * right)


def _ties(out: Tensor, x: Tensor) -> Tensor:
    """True on the elements equal to the extreme value ``out``."""
    return x == out


def _nan_ties(out: Tensor, x: Tensor) -> Tensor:
    """``_ties``, and the NaNs a NaN result came from."""
    return (x == out) | ((x != x) & (out != out))


def _nonzero_result(out: Tensor, x: Tensor) -> Tensor:
    return out != 0


def _tie_weight(out: Tensor, x: Tensor, *, axis: tuple | None) -> Tensor:
    """1/k on the k elements equal to the extreme value, 0 elsewhere (torch's amax/amin rule)."""
    mask = _ties(out, x).to(x.dtype)
    return mask / apply(SUM, mask, axis=axis, keepdims=True)


def _nan_tie_weight(out: Tensor, x: Tensor, *, axis: tuple | None) -> Tensor:
    """``_tie_weight``, where a NaN result is shared by the NaNs it came from (torch's max(), min()
    and median() over all elements; its amax and amin give NaN gradients instead)."""
    mask = _nan_ties(out, x).to(x.dtype)
    return mask / apply(SUM, mask, axis=axis, keepdims=True)


def _var_weight(out: Any, x: Tensor, *, axis: tuple | None, correction: float) -> Tensor:
    """``2 (x - mean) / (N - correction)``."""
    dof = _count(x.shape, axis) - correction
    return (x - apply(MEAN, x, axis=axis, keepdims=True)) * (2.0 / dof if dof > 0 else math.inf)


def _std_weight(out: Tensor, x: Tensor, *, axis: tuple | None, correction: float) -> Tensor:
    """``var``'s weight over ``2 std`` (STD's masks make it 0 where std == 0, as in torch)."""
    return _var_weight(None, x, axis=axis, correction=correction) / (2 * _nonzero(out))


def _logsumexp_weight(out: Tensor, x: Tensor, *, axis: tuple | None) -> Tensor:
    """``exp(x - logsumexp(x))``: the softmax over the reduced axes."""
    return (x - out).exp()


def _nonzero(t: Tensor) -> Tensor:
    """``t`` with zeros replaced by ones (a safe denominator)."""
    return where(t == 0, 1.0, t)


def _unit(x: Tensor) -> Any:
    """``x / |x|`` (0 at 0): the sign for real ``x``, differentiable for complex ``x``."""
    if x.dtype.kind != "c":
        return sgn(x)
    return x / _nonzero(x.abs())


def _norm_weight(out: Tensor, x: Tensor, *, axis: tuple | None, p: float) -> Tensor:
    """``sgn(x) |x|^(p-1) / norm^(p-1)``, 0 where ``x`` is 0 (even for p < 1) and where the norm is 0
    (for p < 0 a zero element makes the norm 0 whatever the others are); ties share for p = +-inf."""
    if p == 0:  # (a count of non-zero elements)
        return None
    if math.isinf(p):
        return _unit(x) * _tie_weight(out, x.abs(), axis=axis)
    if p == 1:
        return _unit(x)
    if p == 2:
        return x / _nonzero(out)
    weight = _unit(x) * _nonzero(x.abs()) ** (p - 1) / _nonzero(out) ** (p - 1)
    return where(out == 0, 0.0, weight) if p < 0 else weight


# -- implementations that are more than one NumPy call ---------------------------------------------
_add_reduce = np.add.reduce  # (what ``np.sum`` and ``np.amax`` call, without their Python wrappers)
_maximum_reduce = np.maximum.reduce


def _half_in_float32(impl: Callable) -> Callable:
    """``impl``, computed in float32 for float16 ``x`` and rounded once at the end, as torch's CPU
    kernels do: sums of squares or of exponentials overflow float16's 65504 (a variance or a norm
    of 10^5 values near 10 was inf; a softmax over 10^5 equal values was 0)."""

    def impl_in_float32(x: np.ndarray, **params: Any) -> np.ndarray:
        if x.dtype != np.float16:
            return impl(x, **params)
        return impl(x.astype(np.float32), **params).astype(np.float16)

    return impl_in_float32


def _logsumexp_impl(x: np.ndarray, *, axis: tuple | None, keepdims: bool) -> np.ndarray:
    """``log(sum(exp(x)))`` shifted by the maximum, so it neither overflows nor underflows."""
    if x.size and x.ndim and x.dtype.kind in "fc":
        # (the same ufuncs as below, without NumPy's Python wrappers and with two fewer arrays)
        m = _maximum_reduce(x, axis=axis, keepdims=True)
        constants = ZERO_ONE.get(x.dtype)  # (0 of x's dtype as an array: no Python number to convert)
        m = np.where(np.isfinite(m), m, 0 if constants is None else constants[0])
        terms = np.subtract(x, m)
        out = np.log(_add_reduce(np.exp(terms, out=terms), axis=axis, keepdims=True))
        np.add(out, m, out=out)
        return out if keepdims else out.squeeze(axis=axis)
    m = np.amax(x, axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _softmax_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:  # (an empty axis: an empty result, no maximum to shift by)
        return x.copy()
    e = np.exp(x - np.amax(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:
        return x.copy()
    shifted = x - np.amax(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# the dtypes a running sum accumulates in: twice the precision, rounded once at the end (as torch
# on CPU): float16 and float32 partial sums lose the small terms added to a large total otherwise
_WIDER_SUM = {np.dtype(np.float16): np.float64, np.dtype(np.float32): np.float64,
              np.dtype(np.complex64): np.complex128}


def _cumsum_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    """``np.cumsum``, accumulated in float64 (complex128) for float16 and float32 (complex64) ``x``."""
    wide = _WIDER_SUM.get(x.dtype)
    if wide is None:
        return np.cumsum(x, axis=axis)
    return np.cumsum(x, axis=axis, dtype=wide).astype(x.dtype, copy=False)


def _select_impl(pick: Callable) -> Callable:
    """``(values, indices)`` of ``np.argmax``/``np.argmin`` along one axis."""

    def impl(x: np.ndarray, *, axis: int, keepdims: bool) -> tuple:
        indices = pick(x, axis=axis, keepdims=True)
        values = np.take_along_axis(x, indices, axis=axis)
        if keepdims:
            return values, indices
        return np.squeeze(values, axis), np.squeeze(indices, axis)

    return impl


def _median_index(x: np.ndarray, *, axis: int, keepdims: bool) -> np.ndarray:
    """The index of the lower median along ``axis`` (of the first NaN in a line with one, as torch).

    The stable sort's element ``(n - 1) // 2``: of tied values, the one torch's CPU kernel returns.
    """
    index = np.take(np.argsort(x, axis=axis, kind="stable"), [(x.shape[axis] - 1) // 2], axis=axis)
    nan = x != x
    return np.where(nan.any(axis=axis, keepdims=True), np.argmax(nan, axis=axis, keepdims=True), index)


# -- rules of the axis-wise ops -----------------------------------------------------------------------
def _reverse_cumsum(t: Tensor, axis: int) -> Tensor:
    """``sum_{i >= k} t_i`` along ``axis``."""
    return apply(FLIP, apply(CUMSUM, apply(FLIP, t, axis=(axis,)), axis=axis), axis=(axis,))


def _zero_counts(x: Tensor, axis: int) -> tuple:
    """``(is_zero, zeros among x_0..x_i, cumulative product of the non-zero elements, x with 1 for 0)``."""
    zero = x == 0
    safe = where(zero, 1.0, x)
    return zero, apply(CUMSUM, zero, axis=axis), apply(CUMPROD, safe, axis=axis), safe


def _cumprod_vjp(g: Tensor, out: Any, x: Tensor, *, axis: int) -> Tensor:
    """``sum_{i >= k} g_i conj(prod_{j <= i, j != k} x_j)``, by counting zeros instead of dividing by them.

    Before the first zero the sum is ``reverse_cumsum(g conj(P)) / conj(x)``; at the first zero it
    runs over ``i`` up to the second zero with the zero left out of ``P``; later zeros get 0.
    Exact to first order with zeros; higher orders are exact away from zeros.
    """
    zero, seen, nonzero_prod, safe = _zero_counts(x, axis)
    weighted = g * _conj(nonzero_prod)
    before = _reverse_cumsum(weighted * (seen == 0), axis) / _conj(safe)
    first_zero = seen == 1
    return where(zero, _reverse_cumsum(weighted * first_zero, axis) * first_zero, before)


def _cumprod_jvp(tangents: tuple, out: Any, x: Tensor, *, axis: int) -> Tensor:
    """``sum_{k <= i} t_k prod_{j <= i, j != k} x_j``, counting zeros as in the reverse rule."""
    t = tangents[0]
    zero, seen, nonzero_prod, safe = _zero_counts(x, axis)
    before = apply(CUMSUM, t / safe, axis=axis) * (seen == 0)
    at_first = apply(CUMSUM, t * zero, axis=axis) * (seen == 1)
    return nonzero_prod * (before + at_first)


def _logcumsumexp_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    if x.dtype.kind == "c":
        raise NotImplementedError("logcumsumexp: complex tensors are not supported")
    wide = _WIDER_SUM.get(x.dtype)  # (accumulated in float64, as cumsum: no stalled running sum)
    if wide is None:
        return np.logaddexp.accumulate(x, axis=axis)
    return np.logaddexp.accumulate(x, axis=axis, dtype=wide).astype(x.dtype, copy=False)


def _signed_log_cumsums(v: Tensor, log_weight: Tensor, axis: int, reverse: bool) -> list:
    """The logs of the cumulative sums (``reverse``: from the end) of ``v+ exp(log_weight)`` and of
    ``v- exp(log_weight)``, the positive and negative parts of ``v`` taken in log space (torch's way).

    The log of an absent part is a quarter of the lowest float: a few of them still add up without overflow.
    """
    log_abs = where(v == 0, 1.0, v.abs()).log()
    lowest = float(np.finfo(v.dtype).min) / 4
    logs = []
    for part in (v > 0, v < 0):
        t = where(part, log_abs, lowest) + log_weight
        if reverse:
            t = apply(FLIP, apply(LOGCUMSUMEXP, apply(FLIP, t, axis=(axis,)), axis=axis), axis=(axis,))
        else:
            t = apply(LOGCUMSUMEXP, t, axis=axis)
        logs.append(t)
    return logs


def _slice_max(v: Tensor, axis: int) -> Tensor:
    """A constant: the largest finite value of each slice of ``v`` along ``axis`` (0 where none). The log-space
    sums of the rules below are shifted by it and their ``out`` recomputed from the shifted input, so that a
    large ``|x|`` (e.g. 3000 in float32, where one rounding of ``out`` is 1e-4) does not round away the
    tangent's or gradient's digits; the shift cancels exactly, so its derivative is not needed."""
    finite = where(v.isfinite(), v, float(np.finfo(v.dtype).min))
    top = apply(AMAX, finite.detach(), axis=(axis,), keepdims=True)
    return where(top.isfinite() & (top > float(np.finfo(v.dtype).min)), top, 0.0).detach()


def _logcumsumexp_vjp(g: Tensor, out: Tensor, x: Tensor, *, axis: int) -> Tensor:
    """``sum_{i >= k} g_i exp(x_k - out_i)``, the sum kept in log space: it neither overflows nor underflows."""
    c = _slice_max(x, axis)
    shifted_out = apply(LOGCUMSUMEXP, x - c, axis=axis)  # out - c, without out's rounding at large |out|
    positive, negative = _signed_log_cumsums(g, -shifted_out, axis, reverse=True)
    return (positive + (x - c)).exp() - (negative + (x - c)).exp()


def _logcumsumexp_jvp(tangents: tuple, out: Tensor, x: Tensor, *, axis: int) -> Tensor:
    """``sum_{k <= i} t_k exp(x_k - out_i)``, in log space as the reverse rule; NaN from a NaN ``t_k`` on
    (the log-space parts hold positive and negative values only: torch's tangent keeps NaN, its
    gradient drops a NaN ``g_i``, as this reverse rule does)."""
    t = tangents[0]
    c = _slice_max(x, axis)
    shifted_out = apply(LOGCUMSUMEXP, x - c, axis=axis)  # out - c, without out's rounding at large |out|
    positive, negative = _signed_log_cumsums(t, x - c, axis, reverse=False)
    nans = apply(CUMSUM, where(t != t, math.nan, 0.0), axis=axis)
    return (positive - shifted_out).exp() - (negative - shifted_out).exp() + nans


def _softmax_vjp(g: Tensor, out: Tensor, x: Any, *, axis: int) -> Tensor:
    """``conj(out) * (g - sum(g * conj(out)))`` (softmax is holomorphic: the conjugate Jacobian)."""
    out = _conj(out)
    return out * (g - apply(SUM, g * out, axis=(axis,), keepdims=True))


def _softmax_jvp(tangents: tuple, out: Tensor, x: Any, *, axis: int) -> Tensor:
    t = tangents[0]
    return out * (t - apply(SUM, t * out, axis=(axis,), keepdims=True))


def _log_softmax_vjp(g: Tensor, out: Tensor, x: Any, *, axis: int) -> Tensor:
    """``g - conj(softmax) * sum(g)`` (holomorphic: the conjugate Jacobian)."""
    return g - _conj(out.exp()) * apply(SUM, g, axis=(axis,), keepdims=True)


def _log_softmax_jvp(tangents: tuple, out: Tensor, x: Any, *, axis: int) -> Tensor:
    t = tangents[0]
    return t - apply(SUM, out.exp() * t, axis=(axis,), keepdims=True)


def _one_hot(indices: Tensor, shape: tuple, axis: int, keepdims: bool) -> Tensor:
    """A boolean tensor of ``shape``: True at ``indices`` along ``axis``."""
    positions = np.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1))
    return keep_dims(indices, len(shape), (axis,), keepdims) == _wrap(positions)


def _select_vjp(g: tuple, out: tuple, x: Any, *, axis: int, keepdims: bool) -> Tensor:
    """The values' gradient goes to the selected index only (torch's ``max(dim)``; 0 elsewhere, also
    for an inf or NaN gradient)."""
    return where(_one_hot(out[1], x.shape, axis, keepdims), keep_dims(g[0], x.ndim, (axis,), keepdims), 0.0)


def _select_jvp(tangents: tuple, out: tuple, x: Tensor, *, axis: int, keepdims: bool) -> tuple:
    chosen = where(_one_hot(out[1], x.shape, axis, keepdims), tangents[0], 0.0)
    return _sum(chosen, (axis,), keepdims), None


def _select_batch(op: Op, args: tuple, bdims: tuple, *, axis: int, keepdims: bool) -> tuple:
    return apply(op, to_front(args[0], bdims[0]), axis=axis + 1, keepdims=keepdims), (0, 0)


# -- the ops -------------------------------------------------------------------------------------------
_LOGSUMEXP_RULES = _weighted(_logsumexp_weight, holomorphic=True)


def _logsumexp_vjp(g: Tensor, out: Any, x: Any, *, axis: Any, keepdims: bool) -> Tensor:
    """``g * exp(x - out)`` (the reduced ``g`` and ``out`` with their axes kept), by NumPy directly when
    no mode can see it (``unseen``: a backward without ``create_graph``) and the three are real of one
    dtype (``x`` not 0-d); else the rule of ops (``_weighted``'s), which computes the same ufuncs on the
    same arrays."""
    arrays = unseen_real_arrays(g, out, x)
    if arrays is not None:
        g_data, out_data, x_data = arrays
        if x_data.ndim:
            if not keepdims:
                kept = _kept_shape(out_data.shape, x_data.ndim, axis)
                g_data, out_data = g_data.reshape(kept), out_data.reshape(kept)
            weight = np.subtract(x_data, out_data)  # (x's shape: out broadcasts to it)
            np.exp(weight, out=weight)
            return _wrap(np.multiply(g_data, weight, out=weight))
    return _LOGSUMEXP_RULES[0][0](g, out, x, axis=axis, keepdims=keepdims)


def _sum_impl(x: Any, axis: Any, keepdims: bool) -> Any:
    """``np.sum``; for an array of a floating dtype, the ``np.add.reduce`` that ``np.sum`` calls, without its
    Python wrapper (a third of a small sum's cost)."""
    if type(x) is np.ndarray and x.dtype in FLOATING_DTYPES:
        return _add_reduce(x, axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


SUM = linear("sum", _sum_impl,
             (lambda g, out, x, axis, keepdims: expand_reduced(g, x.shape, axis, keepdims),),
             family="reduction", grad_name_for=_name_by_dim("Sum"))
MEAN = linear("mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
              (lambda g, out, x, axis, keepdims:  # (divided before it is expanded: fewer elements)
               expand_reduced(g, x.shape, axis, keepdims, builtins.max(_count(x.shape, axis), 1)),),
              family="reduction", grad_name_for=_name_by_dim("Mean"))
PROD = _reduction("prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
                  _prod_weight, holomorphic=True, grad_name_for=_name_by_dim("Prod"))
AMAX = _reduction("amax", lambda x, axis, keepdims: np.amax(x, axis=axis, keepdims=keepdims),
                  _tie_weight, jvp_mask=_ties, save_out=True)
AMIN = _reduction("amin", lambda x, axis, keepdims: np.amin(x, axis=axis, keepdims=keepdims),
                  _tie_weight, jvp_mask=_ties, save_out=True)
VAR = _reduction("var", _half_in_float32(lambda x, axis, keepdims, correction:
                                          np.var(x, axis=axis, ddof=correction, keepdims=keepdims)), _var_weight)
STD = _reduction("std", _half_in_float32(lambda x, axis, keepdims, correction:
                                          np.std(x, axis=axis, ddof=correction, keepdims=keepdims)),
                 _std_weight, vjp_mask=_nonzero_result, jvp_mask=_nonzero_result, save_out=True)
LOGSUMEXP = Op("logsumexp", _half_in_float32(_logsumexp_impl), vjp=(_logsumexp_vjp,), jvp=_LOGSUMEXP_RULES[1],
               family="reduction", save_out=True)
NORM = _reduction("norm", _half_in_float32(lambda x, axis, keepdims, p:
                                            np.linalg.vector_norm(x, ord=p, axis=axis, keepdims=keepdims)),
                  _norm_weight, save_out=True, grad_name="LinalgVectorNormBackward0")
CUMSUM = linear("cumsum", _cumsum_impl,
                (lambda g, out, x, axis: _reverse_cumsum(g, axis),), family="reduction")
CUMPROD = Op("cumprod", lambda x, axis: np.cumprod(x, axis=axis), vjp=(_cumprod_vjp,), jvp=_cumprod_jvp,
             family="reduction")
LOGCUMSUMEXP = Op("logcumsumexp", _logcumsumexp_impl, vjp=(_logcumsumexp_vjp,), jvp=_logcumsumexp_jvp,
                  family="reduction", save_out=True, promotion=0, to_float=True)
SOFTMAX = Op("softmax", _half_in_float32(_softmax_impl), vjp=(_softmax_vjp,), jvp=_softmax_jvp, family="reduction",
             save_inputs=False, save_out=True)
LOG_SOFTMAX = Op("log_softmax", _half_in_float32(_log_softmax_impl), vjp=(_log_softmax_vjp,), jvp=_log_softmax_jvp,
                 family="reduction", save_inputs=False, save_out=True)
MAX = Op("max", _select_impl(np.argmax), vjp=(_select_vjp,), jvp=_select_jvp, family="reduction",
         save_inputs=False, save_out=True, multi_output=True)
MIN = Op("min", _select_impl(np.argmin), vjp=(_select_vjp,), jvp=_select_jvp, family="reduction",
         save_inputs=False, save_out=True, multi_output=True)
MAX.batch = lambda args, bdims, **params: _select_batch(MAX, args, bdims, **params)
MIN.batch = lambda args, bdims, **params: _select_batch(MIN, args, bdims, **params)
# torch's max(x) and min(x), over all elements: amax's and amin's rules, torch's names of their nodes
# (NaN-aware ties, unlike amax/amin: a NaN result's gradient goes to the NaNs, as torch's)
MAX_ALL = _reduction("max_all", AMAX.impl, _nan_tie_weight, vjp_mask=_nan_ties, save_out=True,
                     grad_name="MaxBackward1")
MIN_ALL = _reduction("min_all", AMIN.impl, _nan_tie_weight, vjp_mask=_nan_ties, save_out=True,
                     grad_name="MinBackward1")


def _lower_median(x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """The lower middle value over ``axis`` (NaN for an empty ``x``, as torch's ``median()``; under vmap
    ``axis`` leaves out the batch axis)."""
    if not x.size and x.dtype.kind in "fc":
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan, x.dtype)
    return np.quantile(x, 0.5, axis=axis, keepdims=keepdims, method="lower")


MEDIAN = _reduction("median", _lower_median, _nan_tie_weight, vjp_mask=_nan_ties, save_out=True)
MEDIAN_DIM = Op("median_dim", _select_impl(_median_index), vjp=(_select_vjp,), jvp=_select_jvp,
                family="reduction", save_inputs=False, save_out=True, multi_output=True, grad_name="MedianBackward1")
MEDIAN_DIM.batch = lambda args, bdims, **params: _select_batch(MEDIAN_DIM, args, bdims, **params)
ALL = nondifferentiable("all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
                        family="reduction")
ANY = nondifferentiable("any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
                        family="reduction")
ARGMAX = nondifferentiable("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
                           family="reduction")
ARGMIN = nondifferentiable("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
                           family="reduction")


# -- argument handling ------------------------------------------------------------------------------
def _ndim(x: Any) -> int:
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _reduce_args(x: Any, dim: Any, axis: Any, keepdim: Any, keepdims: Any, name: str) -> dict:
    """The op's ``axis`` and ``keepdims``. An empty ``dim`` (torch's spelling) reduces every axis, as in
    torch, except for ``all``/``any``; an empty ``axis`` (NumPy's) reduces none, as in NumPy."""
    if dim is not None and _is_empty_sequence(dim) and name not in ("all", "any"):
        dim = None
    return {"axis": normalize_axes(pick_axis(dim, axis), _ndim(x), name),
            "keepdims": pick_keepdims(keepdim, keepdims)}


def _is_empty_sequence(dim: Any) -> bool:
    return isinstance(dim, (tuple, list)) and not dim


def _nonempty(name: str, x: Any, axis: tuple | int | None, error: type = RuntimeError) -> Any:
    """``x`` unless it is empty along ``axis`` (all axes when None): torch's errors, as max/min have no identity
    (``error`` for all axes: torch's argmax and argmin raise IndexError there)."""
    if axis is None and 0 in x.shape:
        raise error(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                           f"the reduction dim with the 'dim' argument.")
    for a in (axis,) if isinstance(axis, int) else axis or ():
        if x.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")
    return x


def _one_axis(x: Any, dim: Any, axis: Any, name: str) -> int:
    """A single required axis (the last one when neither ``dim`` nor ``axis`` is given)."""
    d = pick_axis(dim, axis)
    return normalize_axis(-1 if d is None else int(d), _ndim(x), name)


def _correction(correction: Any, unbiased: Any, ddof: Any, name: str, axis: Any) -> float:
    """The divisor's correction; by default 1 (torch), or 0 (NumPy) when NumPy's ``axis=`` is used."""
    given = [v for v in (correction, unbiased, ddof) if v is not None]
    if len(given) > 1:
        raise TypeError(f"{name}: pass only one of 'correction', 'unbiased' and 'ddof'")
    if unbiased is not None:
        return 1 if unbiased else 0
    if not given:
        return 1 if axis is None else 0
    return given[0]


def _cast(x: Any, dtype: Any) -> Any:
    return x if dtype is None else to_dtype(x, dtype)


# -- public functions --------------------------------------------------------------------------------
@public(SUM, inplace=False)
def sum(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (all axes when None); ``axis``/``keepdims`` are NumPy's spellings.

    >>> import dualgrad as dg
    >>> dg.sum(dg.tensor([[1., 2.], [3., 4.]]), dim=0)
    tensor([4., 6.])
    """
    if (dim is None and axis is None and keepdims is None and keepdim is False and dtype is None
            and type(x) is Tensor and fastpath.ENABLED):  # (``x.sum()``: the arguments _reduce_args gives)
        return apply(SUM, x, axis=None, keepdims=False)
    if dim is None and keepdim is False and dtype is None and type(axis) is tuple:
        out = _unseen_sum(x, axis, bool(keepdims))
        if out is not None:
            return out
    x = tensor_arg(x, "sum")
    x = _cast(x, dtype)
    return apply(SUM, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "sum"))


def _unseen_sum(x: Any, axes: tuple, keepdims: bool) -> Tensor | None:
    """``x.sum(axis=axes, keepdims=...)`` by NumPy directly, or None (the caller dispatches).

    Taken when no mode can see the sum (``unseen``: a plain Tensor, no node to record, no
    tangent, no observer; a view only with its graph up to date), ``x`` is of a floating dtype
    and ``axes`` are increasing axes of ``x`` (what ``normalize_axes`` would give, so the
    checks it makes cannot fail): then dispatch would call the same ``np.add.reduce``
    and wrap the result. ``fit_gradient`` sums a broadcast gradient back this way
    (B1's per-observation products of a vector with one value).
    """
    if not unseen(x):
        return None
    view = x._view
    data = x._data
    if (view is not None and view.version != x._counter.value) or data.dtype not in FLOATING_DTYPES:
        return None
    previous = -1
    for axis in axes:
        if type(axis) is not int or axis <= previous:
            return None
        previous = axis
    if previous >= data.ndim:
        return None
    total = _add_reduce(data, axis=axes, keepdims=keepdims)
    return _wrap(total if type(total) is np.ndarray else np.asarray(total))


@public(MEAN, inplace=False)
def mean(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: bool | None = None, dtype: Any = None) -> Tensor:
    """Arithmetic mean over ``dim`` (all axes when None).

    >>> import dualgrad as dg
    >>> dg.mean(dg.tensor([[1., 2.], [3., 4.]]), dim=1)
    tensor([1.5000, 3.5000])
    """
    x = tensor_arg(x, "mean")
    x = _cast(x, dtype)
    return apply(MEAN, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "mean"))


@public(PROD, inplace=False)
def prod(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: bool | None = None, dtype: Any = None) -> Tensor:
    """Product over ``dim`` (all axes when None); its gradient is exact when elements are zero.

    >>> import dualgrad as dg
    >>> x = dg.tensor([2., 0., 3.], requires_grad=True)
    >>> dg.prod(x).backward()
    >>> x.grad
    tensor([0., 6., 0.])
    """
    x = tensor_arg(x, "prod")
    x = _cast(x, dtype)
    return apply(PROD, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "prod"))


@public(AMAX, inplace=False)
def amax(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: bool | None = None) -> Tensor:
    """Maximum over ``dim`` (all axes when None); tied maxima share the gradient evenly.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 3., 3.], requires_grad=True)
    >>> dg.amax(x).backward()
    >>> x.grad
    tensor([0.0000, 0.5000, 0.5000])
    """
    x = tensor_arg(x, "amax")
    args = _reduce_args(x, dim, axis, keepdim, keepdims, "amax")
    return apply(AMAX, _nonempty("amax", x, args["axis"]), **args)


@public(AMIN, inplace=False)
def amin(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: bool | None = None) -> Tensor:
    """Minimum over ``dim`` (all axes when None); tied minima share the gradient evenly.

    >>> import dualgrad as dg
    >>> dg.amin(dg.tensor([[1., 3.], [0., 2.]]), dim=1)
    tensor([1., 0.])
    """
    x = tensor_arg(x, "amin")
    args = _reduce_args(x, dim, axis, keepdim, keepdims, "amin")
    return apply(AMIN, _nonempty("amin", x, args["axis"]), **args)


def _extreme(op: Op, whole: Op, pair: Callable, name: str, x: Any, dim: Any, keepdim: bool, axis: Any,
             keepdims: bool | None) -> Any:
    if isinstance(dim, Tensor):
        return pair(x, dim)
    d = pick_axis(dim, axis)
    if d is None or axis is not None or isinstance(d, (tuple, list)):  # NumPy's form: values only
        args = _reduce_args(x, d, None, keepdim, keepdims, name)
        if d is None:  # (over all elements: torch's own overload)
            whole = MAX_ALL if op is MAX else MIN_ALL
        return apply(whole, _nonempty(name, x, args["axis"]), **args)
    keep = pick_keepdims(keepdim, keepdims)
    if _ndim(x) == 0:
        normalize_axis(int(d), 0, name)
        return ValuesIndices(apply(whole, x, axis=(), keepdims=keep), _wrap(np.zeros((), np.int64)))
    d = normalize_axis(int(d), _ndim(x), name)
    return ValuesIndices(*apply(op, _nonempty(name, x, d), axis=d, keepdims=keep))


@public(None, inplace=False)
def max(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None, other: Any = None) -> Any:
    """Three forms, as in torch: ``max(x)`` is the largest element (ties share the gradient; a
    NaN result's gradient is shared by the NaNs, where ``amax`` gives NaN gradients),
    ``max(x, dim, keepdim)`` is a named tuple ``(values, indices)`` (the gradient goes to the
    index returned), ``max(x, other)`` (also ``other=``) is ``maximum``. A tuple of dims reduces like ``amax``.

    NumPy's keyword ``axis=`` (with ``keepdims=``) gives NumPy's result, the values
    only (as ``amax``), so NumPy code calling ``a.max(axis=0)`` works on Tensors.
    Over no elements it raises torch's errors: RuntimeError without ``dim``, IndexError
    for an empty ``dim`` (also ``min``, ``amax``, ``amin``).

    >>> import dualgrad as dg
    >>> x = dg.tensor([[1., 5.], [4., 2.]])
    >>> dg.max(x)
    tensor(5.)
    >>> dg.max(x, 1)
    ValuesIndices(values=tensor([5., 4.]), indices=tensor([1, 0]))
    >>> x.max(axis=1)
    tensor([5., 4.])
    """
    x = tensor_arg(x, "max")
    if other is not None:
        return maximum(x, other)
    return _extreme(MAX, AMAX, maximum, "max", x, dim, keepdim, axis, keepdims)


@public(None, inplace=False)
def min(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None, other: Any = None) -> Any:
    """The smallest element, ``(values, indices)`` along ``dim``, or ``minimum(x, other)`` (see ``max``).

    With NumPy's keyword ``axis=`` the result is the values only, as NumPy's ``min``.

    >>> import dualgrad as dg
    >>> dg.min(dg.tensor([[1., 5.], [4., 2.]]), dim=0).values
    tensor([1., 2.])
    >>> dg.tensor([[1., 5.], [4., 2.]]).min(axis=0)
    tensor([1., 2.])
    """
    x = tensor_arg(x, "min")
    if other is not None:
        return minimum(x, other)
    return _extreme(MIN, AMIN, minimum, "min", x, dim, keepdim, axis, keepdims)


@public(None, inplace=False)
def median(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower of the two middle values (torch's median, not their mean as NumPy's).

    Without ``dim``, the median of all elements, whose gradient is shared evenly by
    the elements equal to it (as torch's); with ``dim``, a named tuple ``(values,
    indices)`` along ``dim`` whose gradient goes to the index returned. A NaN in a
    line makes its median NaN (see ``nanmedian`` in NumPy for skipping them), and
    that NaN's gradient goes to the NaNs (shared evenly without ``dim``, as torch's).

    >>> import dualgrad as dg
    >>> x = dg.tensor([[3., 1., 2., 5.], [0., 1., 1., 9.]])
    >>> dg.median(x)
    tensor(1.)
    >>> dg.median(x, 1)
    ValuesIndices(values=tensor([2., 1.]), indices=tensor([2, 1]))
    """
    x = tensor_arg(x, "median")
    if dim is None:
        return apply(MEDIAN, x, axis=None, keepdims=False)
    if x.ndim == 0:
        normalize_axis(int(dim), 0, "median")
        return ValuesIndices(x.clone(), _wrap(np.zeros((), np.int64)))
    axis = normalize_axis(int(dim), x.ndim, "median")
    return ValuesIndices(*apply(MEDIAN_DIM, _nonempty("median", x, axis), axis=axis, keepdims=keepdim))


@public(VAR, inplace=False)
def var(x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
        ddof: float | None = None) -> Tensor:
    """Variance over ``dim``, dividing by ``N - correction`` (default 1, Bessel's correction).

    ``unbiased=False`` means ``correction=0``; NumPy's ``ddof`` is the same number.
    Called with NumPy's keyword ``axis=`` (axes, not None) and none of these, the default is
    NumPy's, ``ddof=0``, so NumPy code calling ``a.var(axis=0)`` gets NumPy's result.
    float16 is computed in float32 and rounded once (as torch's; also ``std``, the norms,
    ``logsumexp``, ``softmax``, ``log_softmax``): no overflow past float16's 65504 on the way.

    >>> import dualgrad as dg
    >>> dg.var(dg.tensor([1., 2., 3., 4.]))
    tensor(1.6667)
    >>> dg.var(dg.tensor([1., 2., 3., 4.]), correction=0)
    tensor(1.2500)
    >>> dg.tensor([1., 2., 3., 4.]).var(axis=0)
    tensor(1.2500)
    """
    x = tensor_arg(x, "var")
    return apply(VAR, x, correction=_correction(correction, unbiased, ddof, "var", axis),
                 **_reduce_args(x, dim, axis, keepdim, keepdims, "var"))


@public(STD, inplace=False)
def std(x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, axis: Any = None, keepdims: bool | None = None,
        ddof: float | None = None) -> Tensor:
    """Standard deviation, ``sqrt(var)`` (same arguments and defaults); its gradient is 0 where it is 0.

    >>> import dualgrad as dg
    >>> dg.std(dg.tensor([[1., 3.], [2., 2.]]), dim=1, unbiased=False)
    tensor([1., 0.])
    >>> dg.tensor([[1., 3.], [2., 2.]]).std(axis=1)
    tensor([1., 0.])
    """
    x = tensor_arg(x, "std")
    return apply(STD, x, correction=_correction(correction, unbiased, ddof, "std", axis),
                 **_reduce_args(x, dim, axis, keepdim, keepdims, "std"))


@public(LOGSUMEXP, inplace=False, namespaces={"special": ("logsumexp",)})
def logsumexp(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
              keepdims: bool | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim`` (all axes when None), computed without overflow.

    >>> import dualgrad as dg
    >>> dg.logsumexp(dg.tensor([1000., 1000.]), 0)
    tensor(1000.6931)
    """
    x = tensor_arg(x, "logsumexp")
    return apply(LOGSUMEXP, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "logsumexp"))


# ``linalg.matrix_norm``, set by ``dualgrad.ops.linalg.norms`` (which imports this module): ``norm(p='nuc')``.
MATRIX_NORM: list = [None]


@public(NORM, inplace=False)
def norm(x: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, *, ord: Any = None,  # noqa: A002
         axis: Any = None, keepdims: bool | None = None) -> Tensor:
    """The vector p-norm over ``dim`` (all elements when None): ``p`` a number, ``inf``, ``-inf`` or 'fro';
    ``p='nuc'`` is the nuclear norm of the matrices over ``dim`` (the last two when None).

    'fro' is the 2-norm of the elements. At ``x = 0`` the gradient is 0 (no NaN); for
    ``p = inf`` tied largest magnitudes share it evenly. ``ord`` is NumPy's name for ``p``.

    >>> import dualgrad as dg
    >>> dg.norm(dg.tensor([3., -4.]))
    tensor(5.)
    >>> dg.norm(dg.tensor([3., -4.]), p=float("inf"))
    tensor(4.)
    """
    x = tensor_arg(x, "norm")
    order = p if ord is None else ord
    if order == "nuc":
        return MATRIX_NORM[0](x, "nuc", (-2, -1) if dim is None else dim, keepdim)
    if order is None or order == "fro":
        order = 2.0
    elif isinstance(order, str):
        raise NotImplementedError(f"norm: p={order!r} is not supported (use a number, inf, -inf or 'fro')")
    return apply(NORM, x, p=float(order), **_reduce_args(x, dim, axis, keepdim, keepdims, "norm"))


def _cumulative(op: Any, x: Any, dim: Any, axis: Any, dtype: Any) -> Tensor:
    """A cumulative op along one axis, of the flattened tensor when no axis is given (as NumPy)."""
    x = _cast(tensor_arg(x, op.name), dtype)
    if x.ndim == 0:  # (torch: a 0-d result)
        return _cumulative(op, reshape(x, 1), dim, axis, None).reshape(())
    if pick_axis(dim, axis) is None:
        x, dim, axis = reshape(x, -1), 0, None
    return apply(op, x, axis=_one_axis(x, dim, axis, op.name))


@public(CUMSUM)
def cumsum(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Tensor:
    """Cumulative sum along ``dim`` (of the flattened tensor when None, as NumPy).

    float16 and float32 (complex64) sums accumulate in float64 (complex128) and are
    rounded once, as torch's on CPU: small terms after a large one are not lost.

    >>> import dualgrad as dg
    >>> dg.cumsum(dg.tensor([1., 2., 3.]), 0)
    tensor([1., 3., 6.])
    """
    return _cumulative(CUMSUM, x, dim, axis, dtype)


@public(CUMPROD)
def cumprod(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Tensor:
    """Cumulative product along ``dim`` (flattened when None); the gradient is exact with zeros.

    >>> import dualgrad as dg
    >>> dg.cumprod(dg.tensor([1., 2., 3.]), 0)
    tensor([1., 2., 6.])
    """
    return _cumulative(CUMPROD, x, dim, axis, dtype)


@public(LOGCUMSUMEXP, inplace=False)
def logcumsumexp(x: Any, dim: Any = None, *, axis: Any = None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed without overflow or underflow (as are its
    derivatives); integers give the default floating dtype. float16 and float32 accumulate in
    float64 (as ``cumsum``): a float16 running value no longer stalls once the increments
    fall below its resolution.

    >>> import dualgrad as dg
    >>> dg.logcumsumexp(dg.tensor([-1000., 0., 1000.]), 0)
    tensor([-1000.,     0.,  1000.])
    """
    x = tensor_arg(x, "logcumsumexp")
    if pick_axis(dim, axis) is None:
        raise TypeError('logcumsumexp() missing 1 required positional arguments: "dim"')
    return _along_one_axis(LOGCUMSUMEXP, x, dim, axis)


def _along_one_axis(op: Op, x: Tensor, dim: Any, axis: Any) -> Tensor:
    """``op`` along one axis of ``x``; a 0-d ``x`` as a 1-element vector (dim 0 or -1, as torch)."""
    if x.ndim == 0:
        return _along_one_axis(op, reshape(x, 1), dim, axis).reshape(())
    return apply(op, x, axis=_one_axis(x, dim, axis, op.name))


@public(SOFTMAX, inplace=False, namespaces={"special": ("softmax",)})
def softmax(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (the last when None), shifted by the max to stay finite;
    over an empty ``dim``, an empty result (also ``log_softmax``).

    >>> import dualgrad as dg
    >>> dg.softmax(dg.tensor([0., 1000.]), 0)
    tensor([0., 1.])
    """
    return _along_one_axis(SOFTMAX, _cast(tensor_arg(x, "softmax"), dtype), dim, axis)


@public(LOG_SOFTMAX, inplace=False, namespaces={"special": ("log_softmax",)})
def log_softmax(x: Any, dim: Any = None, *, axis: Any = None, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (the last when None), without overflow.

    >>> import dualgrad as dg
    >>> dg.log_softmax(dg.tensor([0., 1000.]), 0)
    tensor([-1000.,     0.])
    """
    return _along_one_axis(LOG_SOFTMAX, _cast(tensor_arg(x, "log_softmax"), dtype), dim, axis)


@public(None, method=False)
def var_mean(x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """``(var(x, ...), mean(x, ...))`` over the same dims, as torch's.

    >>> import dualgrad as dg
    >>> dg.var_mean(dg.tensor([1., 2., 3., 4.]))
    (tensor(1.6667), tensor(2.5000))
    """
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


@public(None, method=False)
def std_mean(x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """``(std(x, ...), mean(x, ...))`` over the same dims, as torch's.

    >>> import dualgrad as dg
    >>> dg.std_mean(dg.tensor([1., 3.]), correction=0)
    (tensor(1.), tensor(2.))
    """
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


@public(None, inplace=False)
def nansum(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``sum`` counting NaN as 0 (NaN elements get a zero gradient).

    >>> import dualgrad as dg
    >>> dg.nansum(dg.tensor([1., float("nan"), 2.]))
    tensor(3.)
    """
    x = tensor_arg(x, "nansum")
    return sum(where(x.isnan(), 0, x), dim, keepdim, dtype=dtype)


@public(None, inplace=False)
def nanmean(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``mean`` of the elements that are not NaN.

    >>> import dualgrad as dg
    >>> dg.nanmean(dg.tensor([1., float("nan"), 2.]))
    tensor(1.5000)
    """
    x = tensor_arg(x, "nanmean")
    total = nansum(x, dim, keepdim, dtype=dtype)
    return total / sum(~x.isnan(), dim, keepdim).to(total.dtype)


@public(None, inplace=False)
def count_nonzero(x: Any, dim: Any = None) -> Tensor:
    """The number of nonzero elements over ``dim`` (an int or a tuple; all when None), as int64.

    >>> import dualgrad as dg
    >>> dg.count_nonzero(dg.tensor([[0., 1.], [2., 3.]]), dim=0)
    tensor([1, 2])
    """
    return sum(tensor_arg(x, "count_nonzero") != 0, dim)


@public(ALL, inplace=False)
def all(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None) -> Tensor:
    """True where every element along ``dim`` is non-zero (not differentiable).

    >>> import dualgrad as dg
    >>> dg.tensor([1., 0.]).all(), dg.all(dg.tensor([[1., 2.], [0., 1.]]), dim=1)
    (tensor(False), tensor([ True, False]))
    """
    x = tensor_arg(x, "all")
    return apply(ALL, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "all"))


@public(ANY, inplace=False)
def any(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None) -> Tensor:
    """True where some element along ``dim`` is non-zero (not differentiable).

    >>> import dualgrad as dg
    >>> dg.tensor([1., 0.]).any()
    tensor(True)
    """
    x = tensor_arg(x, "any")
    return apply(ANY, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "any"))


def _arg_extreme(op: Op, name: str, x: Any, dim: Any, keepdim: bool, axis: Any, keepdims: Any) -> Tensor:
    keep = pick_keepdims(keepdim, keepdims)
    d = pick_axis(dim, axis)
    if d is None:
        ndim = _ndim(x)
        index = apply(op, reshape(_nonempty(name, x, None, IndexError), -1), axis=0, keepdims=False)
        return reshape(index, (1,) * ndim) if keep else index
    axis = normalize_axis(int_arg(d, name, "dim", 2), _ndim(x), name)
    if _ndim(x) == 0:  # one element, index 0, with or without keepdim (as a vector: also under vmap)
        return apply(op, reshape(x, (1,)), axis=0, keepdims=False)
    return apply(op, _nonempty(name, x, axis), axis=axis, keepdims=keep)


@public(ARGMAX, inplace=False)
def argmax(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: bool | None = None) -> Tensor:
    """Index of the largest element along ``dim`` (of the flattened tensor when None).

    >>> import dualgrad as dg
    >>> dg.argmax(dg.tensor([[1., 5.], [4., 2.]])), dg.argmax(dg.tensor([[1., 5.], [4., 2.]]), 1)
    (tensor(1), tensor([1, 0]))
    """
    x = tensor_arg(x, "argmax")
    return _arg_extreme(ARGMAX, "argmax", x, dim, keepdim, axis, keepdims)


@public(ARGMIN, inplace=False)
def argmin(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: bool | None = None) -> Tensor:
    """Index of the smallest element along ``dim`` (of the flattened tensor when None).

    >>> import dualgrad as dg
    >>> dg.argmin(dg.tensor([[1., 5.], [4., 2.]]), dim=0)
    tensor([0, 1])
    """
    x = tensor_arg(x, "argmin")
    return _arg_extreme(ARGMIN, "argmin", x, dim, keepdim, axis, keepdims)


__all__ = exported(__name__, ["ValuesIndices"])
