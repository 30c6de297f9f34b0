"""Adaptors with NumPy's signatures for ``Tensor.__array_function__`` (see ``numpy_dispatch``).

Each adaptor translates NumPy's arguments into calls of dualgrad functions, so
the result is tracked in every mode. Options without a dualgrad equivalent
(``order='F'``, a matrix ``ord`` the linalg module does not have, ...) raise the
"no derivative rule" TypeError naming the option.

>>> import numpy as np, dualgrad as dg
>>> x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> np.mean(np.concatenate([x, np.ones((1, 2))]), axis=0)
tensor([1.6667, 2.3333], grad_fn=<MeanBackward1>)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import dualgrad as dg

from ..base.checks import is_number
from ..ops.elementwise.core import imag_part, real_part
from ..ops.linalg.decompositions import solve_system
from ..tensor import Tensor, _wrap, wrap_operand
from . import FUNCTIONS, RAW_FUNCTIONS, implements, no_rule, routed, run_untracked, write_out

_NO = np._NoValue


def _t(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return wrap_operand(x) if isinstance(x, np.ndarray) else _wrap(np.asarray(x))


def _unsupported(name: str, option: str) -> TypeError:
    return no_rule(f"{name} with {option}")


def _finish(result: Any, out: Any, name: str) -> Any:
    return result if out is None else write_out(name, out, result)


def _masked(a: Any, where: Any, fill: Any) -> Any:
    return a if where is True else dg.where(where, a, fill)


def _given(value: Any) -> bool:
    return value is not _NO


# -- reductions ---------------------------------------------------------------------------------------
@implements(np.sum)
def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         initial: Any = _NO, where: Any = True) -> Any:
    result = dg.sum(_masked(_t(a), where, 0), axis=axis, keepdims=keepdims, dtype=dtype)
    return _finish(result + initial if _given(initial) else result, out, "sum")


@implements(np.prod)
def _prod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
          initial: Any = _NO, where: Any = True) -> Any:
    result = dg.prod(_masked(_t(a), where, 1), axis=axis, keepdims=keepdims, dtype=dtype)
    return _finish(result * initial if _given(initial) else result, out, "prod")


def _extreme(name: str, reduce: Any, pair: Any, a: Any, axis: Any, out: Any, keepdims: bool, initial: Any,
             where: Any) -> Any:
    if where is not True:
        if not _given(initial):
            raise ValueError(f"reduction operation '{pair.__name__}' does not have an identity, so to use "
                             "a where mask one has to specify 'initial'")
        a = dg.where(where, a, initial)
    result = reduce(_t(a), axis=axis, keepdims=keepdims)
    return _finish(pair(result, initial) if _given(initial) else result, out, name)


@implements(np.max, np.amax)
def _max(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO,
         where: Any = True) -> Any:
    return _extreme("max", dg.amax, dg.maximum, a, axis, out, keepdims, initial, where)


@implements(np.min, np.amin)
def _min(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO,
         where: Any = True) -> Any:
    return _extreme("min", dg.amin, dg.minimum, a, axis, out, keepdims, initial, where)


@implements(np.mean)
def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
          where: Any = True) -> Any:
    a = _t(a)
    if where is True:
        return _finish(dg.mean(a, axis=axis, keepdims=keepdims, dtype=dtype), out, "mean")
    a = a if dtype is None else a.to(dtype)
    mask = dg.broadcast_to(_t(where), a.shape)
    total = dg.sum(dg.where(mask, a, 0), axis=axis, keepdims=keepdims)
    return _finish(total / dg.sum(mask.to(total.dtype), axis=axis, keepdims=keepdims), out, "mean")


def _moment(name: str, fn: Any, a: Any, axis: Any, dtype: Any, out: Any, ddof: float, keepdims: bool,
            where: Any, mean: Any, correction: Any) -> Any:
    if where is not True or _given(mean):
        raise _unsupported(name, "where= or mean=")
    a = _t(a) if dtype is None else _t(a).to(dtype)
    return _finish(fn(a, axis=axis, keepdims=keepdims, correction=correction if _given(correction) else ddof),
                   out, name)


@implements(np.var)
def _var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
         keepdims: bool = False, *, where: Any = True, mean: Any = _NO, correction: Any = _NO) -> Any:
    return _moment("var", dg.var, a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@implements(np.std)
def _std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
         keepdims: bool = False, *, where: Any = True, mean: Any = _NO, correction: Any = _NO) -> Any:
    return _moment("std", dg.std, a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@implements(np.average)
def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
             keepdims: bool = False) -> Any:
    a = _t(a)
    if weights is None:
        result = dg.mean(a, axis=axis, keepdims=keepdims)
        total = dg.full(result.shape, a.numel() / max(result.numel(), 1), dtype=result.dtype)
    else:
        w = _t(weights)
        if w.shape != a.shape:
            if axis is None or w.ndim != 1:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            shape = [1] * a.ndim
            shape[axis] = -1
            w = dg.reshape(w, tuple(shape))
        total = dg.sum(dg.broadcast_to(w, a.shape), axis=axis, keepdims=keepdims)
        result = dg.sum(a * w, axis=axis, keepdims=keepdims) / total
    return (result, total) if returned else result


def _cumulative(name: str, fn: Any, a: Any, axis: Any, dtype: Any, out: Any) -> Any:
    return _finish(fn(_t(a), axis=axis, dtype=dtype), out, name)


@implements(np.cumsum)
def _cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _cumulative("cumsum", dg.cumsum, a, axis, dtype, out)


@implements(np.cumprod)
def _cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _cumulative("cumprod", dg.cumprod, a, axis, dtype, out)


def _array_api_cumulative(name: str, fn: Any, start: float, x: Any, axis: Any, dtype: Any, out: Any,
                          include_initial: bool) -> Any:
    x = _t(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"For arrays which have more than one dimension ``axis`` argument is required "
                             f"(numpy.{name})")
        axis = 0
    result = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        axis = axis % result.ndim
        widths = [0, 0] * (result.ndim - 1 - axis) + [1, 0]
        result = dg.pad(result, widths, value=start)
    return _finish(result, out, name)


@implements(np.cumulative_sum)
def _cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                    include_initial: bool = False) -> Any:
    return _array_api_cumulative("cumulative_sum", dg.cumsum, 0, x, axis, dtype, out, include_initial)


@implements(np.cumulative_prod)
def _cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                     include_initial: bool = False) -> Any:
    return _array_api_cumulative("cumulative_prod", dg.cumprod, 1, x, axis, dtype, out, include_initial)


@implements(np.argmax)
def _argmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    return _finish(dg.argmax(_t(a), axis=axis, keepdims=keepdims), out, "argmax")


@implements(np.argmin)
def _argmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    return _finish(dg.argmin(_t(a), axis=axis, keepdims=keepdims), out, "argmin")


@implements(np.all)
def _all(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:
    return _finish(dg.all(_masked(_t(a), where, True), axis=axis, keepdims=keepdims), out, "all")


@implements(np.any)
def _any(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:
    return _finish(dg.any(_masked(_t(a), where, False), axis=axis, keepdims=keepdims), out, "any")


@implements(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return dg.sum((_t(a) != 0).to(np.int64), axis=axis, keepdims=keepdims)


# -- elementwise functions that are not ufuncs ------------------------------------------------------------
@implements(np.clip)
def _clip(a: Any, a_min: Any = _NO, a_max: Any = _NO, out: Any = None, *, min: Any = _NO,  # noqa: A002
          max: Any = _NO, **kwargs: Any) -> Any:  # noqa: A002 - NumPy's names
    if kwargs:
        raise _unsupported("clip", f"the ufunc keywords {sorted(kwargs)}")
    lo = a_min if _given(a_min) else (min if _given(min) else None)
    hi = a_max if _given(a_max) else (max if _given(max) else None)
    if lo is None and hi is None:
        raise ValueError("One of max or min must be given")
    return _finish(dg.clamp(_t(a), lo, hi), out, "clip")


@implements(np.real)
def _real(val: Any) -> Any:
    return real_part(_t(val))


@implements(np.imag)
def _imag(val: Any) -> Any:
    return imag_part(_t(val))


@implements(np.angle)
def _angle(z: Any, deg: bool = False) -> Any:
    result = dg.angle(_t(z))
    return dg.rad2deg(result) if deg else result


@implements(np.round, np.around)
def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    a = _t(a)
    result = a.round() if decimals == 0 else (a * 10.0 ** decimals).round() / 10.0 ** decimals
    return _finish(result, out, "round")


@implements(np.fix)
def _fix(x: Any, out: Any = None) -> Any:
    return _finish(np.trunc(_t(x)), out, "fix")


# -- shape manipulation ---------------------------------------------------------------------------------
def _rearranged(a: Any, numpy_fn: Any, *args: Any, **kwargs: Any) -> Tensor:
    """``numpy_fn(a, ...)`` for a function that only moves or repeats elements: NumPy runs on the flat
    positions of ``a`` and the result gathers them (so its gradient adds up where positions repeat)."""
    a = _t(a)
    positions = numpy_fn(np.arange(int(np.prod(a.shape))).reshape(a.shape), *args, **kwargs)
    return dg.take(a, positions)


@implements(np.reshape)
def _reshape(a: Any, /, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> Any:
    shape = shape if shape is not None else newshape
    if order == "F":
        return _rearranged(a, np.reshape, shape, order="F")
    if order != "C":
        raise _unsupported("reshape", f"order={order!r}")
    return dg.reshape(_t(a), shape)


@implements(np.ravel)
def _ravel(a: Any, order: str = "C") -> Any:
    return _reshape(a, (-1,), order)


@implements(np.transpose, np.permute_dims)
def _transpose(a: Any, axes: Any = None) -> Any:
    a = _t(a)
    return dg.permute(a, tuple(range(a.ndim))[::-1] if axes is None else tuple(axes))


@implements(np.matrix_transpose, np.linalg.matrix_transpose)
def _matrix_transpose(x: Any, /) -> Any:
    x = _t(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return dg.transpose(x, -2, -1)


@implements(np.rollaxis)
def _rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    a = _t(a)
    # NumPy's permutation (and errors) read off an array whose axis d has length d + 1 (broadcast: no memory)
    rolled = np.rollaxis(np.broadcast_to(0.0, tuple(range(1, a.ndim + 1))), axis, start)
    return dg.permute(a, tuple(n - 1 for n in rolled.shape))


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    return dg.transpose(_t(a), axis1, axis2)


@implements(np.moveaxis)
def _moveaxis(a: Any, source: Any, destination: Any) -> Any:
    return dg.moveaxis(_t(a), source, destination)


@implements(np.expand_dims)
def _expand_dims(a: Any, axis: Any) -> Any:
    a = _t(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = a.ndim + len(axes)
    placed = {ax % ndim for ax in axes}
    if len(placed) != len(axes) or any(not -ndim <= ax < ndim for ax in axes):
        raise np.exceptions.AxisError(f"expand_dims: axis {axis} is out of bounds or repeated for an array "
                                      f"of dimension {ndim}")
    rest = iter(a.shape)
    return dg.reshape(a, tuple(1 if i in placed else next(rest) for i in range(ndim)))


@implements(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    a = _t(a)
    if axis is not None:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        if any(a.shape[ax] != 1 for ax in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return dg.squeeze(a, axis)


@implements(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    return dg.broadcast_to(_t(array), shape)


@implements(np.broadcast_arrays)
def _broadcast_arrays(*args: Any, subok: bool = False) -> tuple:
    tensors = [_t(a) for a in args]
    shape = np.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(dg.broadcast_to(t, shape) for t in tensors)


# NumPy's new shape for an input of each rank below the target rank.
_AT_LEAST = {
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1,) + s},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,), 2: lambda s: s + (1,)},
}


def _at_least(ndim: int, arys: tuple) -> Any:
    results = []
    for a in arys:
        a = _t(a)
        grow = _AT_LEAST[ndim].get(a.ndim)
        results.append(a if grow is None else dg.reshape(a, grow(a.shape)))
    return results[0] if len(results) == 1 else tuple(results)


@implements(np.atleast_1d)
def _atleast_1d(*arys: Any) -> Any:
    return _at_least(1, arys)


@implements(np.atleast_2d)
def _atleast_2d(*arys: Any) -> Any:
    return _at_least(2, arys)


@implements(np.atleast_3d)
def _atleast_3d(*arys: Any) -> Any:
    return _at_least(3, arys)


def _joined(arrays: Sequence, dtype: Any) -> list:
    return [_t(a) if dtype is None else _t(a).to(dtype) for a in arrays]


@implements(np.concatenate, np.concat)
def _concatenate(arrays: Sequence, /, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    tensors = _joined(arrays, dtype)
    if axis is None:
        tensors, axis = [dg.reshape(t, (-1,)) for t in tensors], 0
    return _finish(dg.cat(tensors, axis), out, "concatenate")


@implements(np.stack)
def _stack(arrays: Sequence, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    return _finish(dg.stack(_joined(arrays, dtype), axis), out, "stack")


@implements(np.vstack)
def _vstack(tup: Sequence, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return dg.cat([_atleast_2d(t) for t in _joined(tup, dtype)], 0)


@implements(np.hstack)
def _hstack(tup: Sequence, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    tensors = [_atleast_1d(t) for t in _joined(tup, dtype)]
    return dg.cat(tensors, 0 if tensors[0].ndim == 1 else 1)


@implements(np.dstack)
def _dstack(tup: Sequence) -> Any:
    return dg.cat([_atleast_3d(t) for t in _joined(tup, None)], 2)


@implements(np.column_stack)
def _column_stack(tup: Sequence) -> Any:
    tensors = [dg.reshape(t, (-1, 1)) if t.ndim < 2 else t for t in _joined(tup, None)]
    return dg.cat(tensors, 1)


@implements(np.append)
def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    return _concatenate([arr, values], axis=axis)


@implements(np.block)
def _block(arrays: Any) -> Any:
    depth = _nesting(arrays)
    ndim = max(depth, max(t.ndim for t in _leaves(arrays)))
    return _joined_blocks(arrays, depth, ndim)


def _nesting(arrays: Any) -> int:
    """How deep the lists of np.block's argument go (along the first entries)."""
    if not isinstance(arrays, list):
        return 0
    return 1 + (_nesting(arrays[0]) if arrays else 0)


def _leaves(arrays: Any) -> list:
    return [leaf for part in arrays for leaf in _leaves(part)] if isinstance(arrays, list) else [_t(arrays)]


def _joined_blocks(arrays: Any, depth: int, ndim: int) -> Tensor:
    """The innermost lists are joined along the last axis, the lists holding them along the one before..."""
    if depth == 0:
        a = _t(arrays)
        return dg.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    if not isinstance(arrays, list):
        raise ValueError("List depths are mismatched")
    return dg.cat([_joined_blocks(part, depth - 1, ndim) for part in arrays], -depth)


@implements(np.unstack)
def _unstack(x: Any, /, *, axis: int = 0) -> tuple:
    return dg.unbind(_t(x), axis)


def _split_sizes(n: int, sections: Any, equal: bool) -> list:
    if isinstance(sections, (int, np.integer)):
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division")
        base, extra = divmod(n, int(sections))
        return [base + 1] * extra + [base] * (int(sections) - extra)
    bounds = [0] + [min(max(int(i), 0), n) for i in sections] + [n]
    return [max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


@implements(np.split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    ary = _t(ary)
    return list(dg.split(ary, _split_sizes(ary.shape[axis], indices_or_sections, True), axis))


@implements(np.array_split)
def _array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    ary = _t(ary)
    return list(dg.split(ary, _split_sizes(ary.shape[axis], indices_or_sections, False), axis))


def _split_along(name: str, axis: int, min_ndim: int, ary: Any, indices_or_sections: Any) -> list:
    """hsplit / vsplit / dsplit: np.split along ``axis``, for arrays of at least ``min_ndim`` axes."""
    ary = _t(ary)
    if ary.ndim < min_ndim:
        raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
    return _split(ary, indices_or_sections, axis)


@implements(np.hsplit)
def _hsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split_along("hsplit", 1 if _t(ary).ndim > 1 else 0, 1, ary, indices_or_sections)


@implements(np.vsplit)
def _vsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split_along("vsplit", 0, 2, ary, indices_or_sections)


@implements(np.dsplit)
def _dsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split_along("dsplit", 2, 3, ary, indices_or_sections)


@implements(np.flip)
def _flip(m: Any, axis: Any = None) -> Any:
    return dg.flip(_t(m), axis)


@implements(np.fliplr)
def _fliplr(m: Any) -> Any:
    return dg.flip(_t(m), 1)


@implements(np.flipud)
def _flipud(m: Any) -> Any:
    return dg.flip(_t(m), 0)


@implements(np.roll)
def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    return dg.roll(_t(a), shift, axis)


@implements(np.rot90)
def _rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    return dg.rot90(_t(m), k, tuple(axes))


@implements(np.resize)
def _resize(a: Any, new_shape: Any) -> Any:
    return _rearranged(a, np.resize, new_shape)


@implements(np.delete)
def _delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    return _rearranged(arr, np.delete, _raw_index(obj), axis)


@implements(np.compress)
def _compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    kept = _rearranged(a, lambda positions: np.compress(_raw_index(condition), positions, axis))
    return _finish(kept, out, "compress")


@implements(np.extract)
def _extract(condition: Any, arr: Any) -> Any:
    return _rearranged(arr, lambda positions: np.extract(_raw_index(condition), positions))


@implements(np.partition)
def _partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    a = _t(a)
    if axis is None:
        a, axis = dg.reshape(a, (-1,)), 0
    return dg.take_along_axis(a, np.argpartition(a._data, kth, axis), axis)


@implements(np.choose)
def _choose(a: Any, choices: Sequence, out: Any = None, mode: str = "raise") -> Any:
    if mode != "raise":
        raise _unsupported("choose", f"mode={mode!r}")
    index = np.asarray(_raw_index(a))
    tensors = [_t(c) for c in choices]
    shape = np.broadcast_shapes(index.shape, *(t.shape for t in tensors))
    stacked = dg.stack([dg.broadcast_to(t, shape) for t in tensors])
    return _finish(dg.take_along_axis(stacked, np.broadcast_to(index, shape)[None], 0)[0], out, "choose")


def _raw_index(value: Any) -> Any:
    """An index or mask argument as NumPy data (a Tensor's data; indices carry no gradient)."""
    return value._data if isinstance(value, Tensor) else value


@implements(np.tile)
def _tile(A: Any, reps: Any) -> Any:  # noqa: N803 - NumPy's name
    return dg.tile(_t(A), (reps,) if isinstance(reps, int) else tuple(reps))


@implements(np.repeat)
def _repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    return dg.repeat_interleave(_t(a), repeats, axis)


@implements(np.diagflat)
def _diagflat(v: Any, k: int = 0) -> Any:
    return dg.diagflat(_t(v), k)


@implements(np.diagonal)
def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return dg.diagonal(_t(a), offset, axis1, axis2)


@implements(np.linalg.diagonal)
def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return dg.diagonal(_t(x), offset, -2, -1)


@implements(np.diag)
def _diag(v: Any, k: int = 0) -> Any:
    return dg.diag(_t(v), k)


@implements(np.trace)
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> Any:
    return _finish(dg.sum(dg.diagonal(_t(a), offset, axis1, axis2), axis=-1, dtype=dtype), out, "trace")


@implements(np.linalg.trace)
def _linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return dg.sum(dg.diagonal(_t(x), offset, -2, -1), axis=-1, dtype=dtype)


@implements(np.tril)
def _tril(m: Any, k: int = 0) -> Any:
    return dg.tril(_t(m), k)


@implements(np.triu)
def _triu(m: Any, k: int = 0) -> Any:
    return dg.triu(_t(m), k)


# np.pad's modes that only repeat elements of the array (``reflect`` and ``symmetric`` with the default
# reflect_type='even')
_COPYING_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


@implements(np.pad)
def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    array = _t(array)
    if mode in _COPYING_PAD_MODES and kwargs.get("reflect_type", "even") == "even":
        return _rearranged(array, np.pad, pad_width, mode=mode, **kwargs)
    value = kwargs.pop("constant_values", 0)
    if mode != "constant" or kwargs:
        raise _unsupported("pad", f"mode={mode!r} or the options {sorted(kwargs)}")
    if np.ndim(value):
        return _pad_per_axis(array, pad_width, value)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    return dg.pad(array, [int(w) for pair in widths[::-1] for w in pair], value=value)


def _pad_per_axis(array: Tensor, pad_width: Any, values: Any) -> Tensor:
    """np.pad with a constant per axis and side: the filled border from NumPy, the array gathered inside."""
    if isinstance(values, Tensor):
        raise _unsupported("pad", "Tensor constant_values per axis")
    positions = np.pad(np.arange(int(np.prod(array.shape))).reshape(array.shape), pad_width, constant_values=-1)
    border = np.pad(np.zeros(array.shape, array.dtype), pad_width, constant_values=values)
    return dg.where(positions < 0, border, dg.take(array, np.maximum(positions, 0)))


@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    if mode != "raise":
        raise _unsupported("take", f"mode={mode!r}")
    a = _t(a)
    if axis is None:
        return _finish(dg.take(a, indices), out, "take")
    index = (slice(None),) * (axis % a.ndim) + (_t(indices),)
    return _finish(a[index], out, "take")


@implements(np.take_along_axis)
def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    return dg.take_along_axis(_t(arr), indices, axis)


@implements(np.where)
def _where(condition: Any, x: Any = _NO, y: Any = _NO) -> Any:
    if not _given(x) and not _given(y):
        return run_untracked(np.nonzero, (condition,), {})
    return dg.where(_t(condition), x, y)


@implements(np.diff)
def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = _NO, append: Any = _NO) -> Any:
    a = _t(a)
    axis = axis % a.ndim
    parts = [a]
    for value, first in ((prepend, True), (append, False)):
        if _given(value):
            shape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
            value = _t(value)
            value = dg.broadcast_to(value, shape) if value.ndim == 0 else value
            parts.insert(0 if first else len(parts), value)
    a = dg.cat(parts, axis) if len(parts) > 1 else a
    lead = (slice(None),) * axis
    for _ in range(n):
        a = a[lead + (slice(1, None),)] - a[lead + (slice(None, -1),)]
    return a


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    a = _t(a)
    if axis is None:
        a, axis = dg.reshape(a, (-1,)), 0
    return dg.sort(a, axis).values


@implements(np.argsort)
def _argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    a = _t(a)
    if axis is None:
        a, axis = dg.reshape(a, (-1,)), 0
    return dg.argsort(a, axis)


@implements(np.meshgrid)
def _meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    tensors = [dg.reshape(_t(x), (-1,)) for x in xi]
    shapes = []
    for i in range(len(tensors)):
        shape = [1] * len(tensors)
        shape[i] = -1
        shapes.append(shape)
    if indexing == "xy" and len(tensors) > 1:
        for shape in shapes:
            shape[0], shape[1] = shape[1], shape[0]
    grids = [dg.reshape(t, tuple(s)) for t, s in zip(tensors, shapes, strict=True)]
    if sparse:
        return tuple(grids)
    full = np.broadcast_shapes(*(g.shape for g in grids))
    return tuple(dg.broadcast_to(g, full) for g in grids)


@implements(np.copy)
def _copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    return dg.clone(_t(a))


@implements(np.astype)
def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    result = dg.to_dtype(_t(x), dtype)
    return dg.clone(result) if copy and result is x else result


def _like(fill_value: Any) -> Any:
    def adaptor(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *,
                device: Any = None) -> Tensor:
        return _full_like(a, fill_value, dtype, shape=shape)

    return adaptor


FUNCTIONS[np.zeros_like] = _like(0)
FUNCTIONS[np.ones_like] = _like(1)
FUNCTIONS[np.empty_like] = _like(0)


@implements(np.full_like)
def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, *, device: Any = None) -> Tensor:
    """``a.new_full``: inside ``vmap`` one result per batch member, batched wherever ``a`` is."""
    a = _t(a)
    size = a.shape if shape is None else (tuple(shape) if isinstance(shape, (tuple, list)) else (shape,))
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if not is_number(fill_value):  # an array or a tensor, broadcast (and differentiable in a tensor)
        return (a.new_zeros(size, dtype=dtype) + fill_value).to(dtype)
    return a.new_full(size, fill_value, dtype=dtype)


# -- linear algebra ---------------------------------------------------------------------------------
@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    return _finish(dg.dot(a, b), out, "dot")


@implements(np.kron)
def _kron(a: Any, b: Any) -> Any:
    return dg.kron(_t(a), _t(b))


@implements(np.vdot)
def _vdot(a: Any, b: Any, /) -> Any:
    return dg.sum(dg.conj(dg.reshape(_t(a), (-1,))) * dg.reshape(_t(b), (-1,)))


@implements(np.inner)
def _inner(a: Any, b: Any, /) -> Any:
    return dg.inner(a, b)


@implements(np.outer, np.linalg.outer)
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    return _finish(dg.outer(a, b), out, "outer")


@implements(np.tensordot, np.linalg.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    return dg.tensordot(a, b, axes=axes)


@implements(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return dg.matmul(x1, x2)


@implements(np.linalg.vecdot)
def _linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return dg.sum(dg.conj(_t(x1)) * x2, axis=axis)


@implements(np.einsum)
def _einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K", casting: str = "safe",
            optimize: Any = False) -> Any:
    if dtype is not None:
        operands = tuple(_t(o).to(dtype) if not isinstance(o, (str, list)) else o for o in operands)
    return _finish(dg.einsum(*operands), out, "einsum")


@implements(np.cross, np.linalg.cross)
def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = dg.moveaxis(_t(a), axisa, -1), dg.moveaxis(_t(b), axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise _unsupported("cross", "vectors of length 2 (only 3-vectors are supported)")
    a1, a2, a3 = dg.unbind(a, -1)
    b1, b2, b3 = dg.unbind(b, -1)
    c = dg.stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], -1)
    return dg.moveaxis(c, -1, axisc)


@implements(np.linalg.norm)
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """Vector norms and Frobenius / 1 / inf matrix norms here; 2, -2 and 'nuc' via dualgrad.linalg."""
    x = _t(x)
    if isinstance(axis, int) or (axis is None and (x.ndim == 1 or ord is None)):
        return dg.norm(x, 2 if ord is None else ord, axis, keepdims)
    axes = (x.ndim - 2, x.ndim - 1) if axis is None else tuple(a % x.ndim for a in axis)
    if ord in (None, "fro"):
        return dg.norm(x, 2, axes, keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        row, col = axes
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        sums = dg.sum(dg.abs(x), axis=summed, keepdims=True)
        result = (dg.amax if ord > 0 else dg.amin)(sums, axis=other, keepdims=True)
        return result if keepdims else dg.squeeze(result, axes)
    return routed("linalg.matrix_norm", np.linalg.matrix_norm)(x, ord=ord, axis=axes, keepdims=keepdims)


# NumPy's Hermitian routines read one triangle of their input and ignore the rest (LAPACK also ignores
# the imaginary part of the diagonal). dualgrad.linalg's follow torch instead: the same values, but the
# derivative of f((A + A^H) / 2), a Hermitian gradient. Called through NumPy, they differentiate the
# function NumPy computes: f of the Hermitian matrix built from the triangle read.
def _hermitian_from(a: Any, uplo: str, name: str) -> Tensor:
    """The Hermitian matrix that NumPy's ``name`` reads from ``a``: its ``uplo`` triangle mirrored.

    ``S + S^H + diag(Re diag(a))`` with ``S = tril(a, -1)`` for ``'L'`` (``triu(a, 1)`` for ``'U'``):
    LAPACK ignores the imaginary part of the diagonal too.
    """
    if uplo not in ("L", "U"):
        raise ValueError(f"{name}: UPLO argument must be 'L' or 'U', got {uplo!r}")
    a = _t(a)
    if a.ndim < 2:
        return a  # (the function itself raises NumPy's error for it)
    strict = dg.tril(a, -1) if uplo == "L" else dg.triu(a, 1)
    diagonal = dg.diagonal(a, 0, -2, -1)
    if diagonal.dtype.kind == "c":
        diagonal = real_part(diagonal)
    return strict + strict.mH + dg.diag_embed(diagonal)


@implements(np.linalg.eigh)
def _eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's argument name
    """``np.linalg.eigh``: eigh of the ``UPLO`` triangle mirrored, differentiated as that function of ``a``
    (also along perturbations that are not Hermitian)."""
    return dg.linalg.eigh(_hermitian_from(a, UPLO, "eigh"), UPLO)


@implements(np.linalg.eigvalsh)
def _eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803
    return dg.linalg.eigvalsh(_hermitian_from(a, UPLO, "eigvalsh"), UPLO)


@implements(np.linalg.cholesky)
def _cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """``np.linalg.cholesky``: reads the lower triangle (the upper one with ``upper=True``) only."""
    return dg.linalg.cholesky(_hermitian_from(a, "U" if upper else "L", "cholesky"), upper=upper)


@implements(np.linalg.svd)
def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """``hermitian=True`` reads the lower triangle only, as NumPy's (which then computes by ``eigh``)."""
    if hermitian:
        a = _hermitian_from(a, "L", "svd")
    if not compute_uv:
        return routed("linalg.svdvals", np.linalg.svdvals)(a)
    return routed("linalg.svd", np.linalg.svd)(a, full_matrices=full_matrices)


@implements(np.linalg.matrix_rank)
def _matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:  # noqa: N803
    if hermitian:
        A = _hermitian_from(A, "L", "matrix_rank")  # noqa: N806
    return routed("linalg.matrix_rank", np.linalg.matrix_rank)(A, tol=tol, rtol=rtol)


@implements(np.linalg.pinv)
def _pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NO) -> Any:
    options = {"hermitian": hermitian}
    if rcond is not None or _given(rtol):
        options["rtol"] = rcond if rcond is not None else rtol
    if hermitian:  # (NumPy's reads the lower triangle only)
        a = _hermitian_from(a, "L", "pinv")
    return routed("linalg.pinv", np.linalg.pinv)(a, **options)


@implements(np.linalg.solve)
def _solve(a: Any, b: Any) -> Any:
    """NumPy 2's rule: ``b`` is a vector only when it is 1-D (torch's rule, dualgrad's own, also reads
    ``b`` of ``a``'s shape less its last axis as vectors)."""
    b = _t(b)
    return solve_system(_t(a), b, b.ndim == 1)


@implements(np.linalg.qr)
def _qr(a: Any, mode: str = "reduced") -> Any:
    result = dg.linalg.qr(a, mode)
    return result.R if mode == "r" else result


for _name in ["inv", "det", "slogdet", "svdvals", "lstsq",
              "matrix_power", "multi_dot", "matrix_norm", "vector_norm", "eig", "eigvals",
              "cond", "tensorsolve", "tensorinv"]:
    FUNCTIONS[getattr(np.linalg, _name)] = routed(f"linalg.{_name}", getattr(np.linalg, _name))
for _name in ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
              "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift"]:
    FUNCTIONS[getattr(np.fft, _name)] = routed(f"fft.{_name}", getattr(np.fft, _name))


# -- metadata and functions without derivative ---------------------------------------------------------
@implements(np.shape)
def _shape(a: Any) -> tuple:
    return tuple(a.shape) if isinstance(a, Tensor) else np.shape(a)


@implements(np.ndim)
def _ndim(a: Any) -> int:
    return a.ndim if isinstance(a, Tensor) else np.ndim(a)


@implements(np.size)
def _size(a: Any, axis: Any = None) -> int:
    shape = _shape(a)
    return int(np.prod(shape, dtype=np.int64)) if axis is None else shape[axis]


@implements(np.result_type)
def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(x.dtype if isinstance(x, Tensor) else x for x in arrays_and_dtypes))


@implements(np.iscomplexobj)
def _iscomplexobj(x: Any) -> bool:
    return x.dtype.kind == "c" if isinstance(x, Tensor) else np.iscomplexobj(x)


@implements(np.isrealobj)
def _isrealobj(x: Any) -> bool:
    return not _iscomplexobj(x)


RAW_FUNCTIONS.update({
    np.allclose, np.isclose, np.array_equal, np.array_equiv, np.nonzero, np.argwhere, np.flatnonzero,
    np.unique, np.unique_all, np.unique_counts, np.unique_inverse, np.unique_values, np.searchsorted,
    np.digitize, np.histogram, np.histogram_bin_edges, np.bincount, np.lexsort, np.iscomplex, np.isreal,
    np.isneginf, np.isposinf, np.can_cast, np.min_scalar_type, np.array2string, np.array_repr, np.array_str,
    np.may_share_memory, np.shares_memory, np.save, np.savez, np.savetxt, np.argpartition,
    np.nanargmax, np.nanargmin,
})
