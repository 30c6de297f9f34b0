"""NumPy's NaN-ignoring reductions, order statistics and covariances for ``Tensor.__array_function__``.

Adaptors with NumPy's signatures (see ``numpy_dispatch``): ``nansum``, ``nanmean``,
``nanmax``, ``nanstd``, ..., ``ptp``, ``median``, ``quantile``, ``percentile`` (and
their ``nan`` forms), ``cov`` and ``corrcoef``. NaN entries get a zero gradient.

>>> import numpy as np, dualgrad as dg
>>> x = dg.tensor([1.0, np.nan, 3.0, 6.0], requires_grad=True)
>>> np.nanmean(x), np.median(x[[0, 2, 3]])
(tensor(3.3333, grad_fn=<DivBackward0>), tensor(3., grad_fn=<SelectBackward0>))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

import dualgrad as dg

from ..tensor import Tensor
from . import implements
from .functions import (
    _NO,
    _cumprod,
    _cumsum,
    _finish,
    _given,
    _masked,
    _max,
    _min,
    _prod,
    _sum,
    _t,
    _unsupported,
)

# The interpolation methods of np.quantile that dualgrad's quantile has.
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _without_nan(a: Any, fill: Any) -> Any:
    """``a`` with its NaNs replaced by ``fill`` (their gradient is then zero)."""
    a = _t(a)
    return dg.where(dg.isnan(a), fill, a)


def _no_where(name: str, where: Any) -> None:
    if where is not True:
        raise _unsupported(name, "where=")


@implements(np.nansum)
def _nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = _NO, where: Any = True) -> Any:
    return _sum(_without_nan(a, 0), axis, dtype, out, keepdims, initial, where)


@implements(np.nanprod)
def _nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             initial: Any = _NO, where: Any = True) -> Any:
    return _prod(_without_nan(a, 1), axis, dtype, out, keepdims, initial, where)


@implements(np.nancumsum)
def _nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _cumsum(_without_nan(a, 0), axis, dtype, out)


@implements(np.nancumprod)
def _nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _cumprod(_without_nan(a, 1), axis, dtype, out)


def _count(a: Tensor, axis: Any, keepdims: bool, where: Any) -> Tensor:
    """How many entries of ``a`` are not NaN (and selected by ``where``) along ``axis``."""
    present = _masked(~dg.isnan(a), where, False)
    return dg.sum(dg.broadcast_to(present, a.shape), axis=axis, keepdims=keepdims)


@implements(np.nanmean)
def _nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
             where: Any = True) -> Any:
    a = _t(a) if dtype is None else _t(a).to(dtype)
    total = dg.sum(_masked(_without_nan(a, 0), where, 0), axis=axis, keepdims=keepdims)
    return _finish(total / _count(a, axis, keepdims, where).to(total.real.dtype), out, "nanmean")


def _nanmoment(name: str, a: Any, axis: Any, dtype: Any, out: Any, ddof: float, keepdims: bool,
               where: Any, mean: Any, correction: Any) -> Tensor:
    _no_where(name, where)
    if _given(mean):
        raise _unsupported(name, "mean=")
    a = _t(a) if dtype is None else _t(a).to(dtype)
    deviation = _without_nan(a, 0) - _nanmean(a, axis, keepdims=True)
    squares = deviation * dg.conj(deviation)
    count = _count(a, axis, keepdims, True)
    dof = count - (correction if _given(correction) else ddof)
    return dg.sum(dg.where(dg.isnan(a), 0, squares), axis=axis, keepdims=keepdims).real / dof


@implements(np.nanvar)
def _nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, *, where: Any = True, mean: Any = _NO, correction: Any = _NO) -> Any:
    return _finish(_nanmoment("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean, correction),
                   out, "nanvar")


@implements(np.nanstd)
def _nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, *, where: Any = True, mean: Any = _NO, correction: Any = _NO) -> Any:
    variance = _nanmoment("nanstd", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return _finish(dg.sqrt(variance), out, "nanstd")


def _nanextreme(name: str, reduce: Any, a: Any, axis: Any, out: Any, keepdims: bool, initial: Any,
                where: Any) -> Any:
    """``nanmax`` / ``nanmin``: NaNs skipped; a slice of NaNs only gives NaN, as NumPy's."""
    a = _t(a)
    _no_where(name, where)
    skipped = -np.inf if reduce is _max else np.inf
    result = reduce(_without_nan(a, skipped), axis, None, keepdims, initial)
    all_nan = dg.all(dg.isnan(a), axis=axis, keepdims=keepdims)
    return _finish(dg.where(all_nan, np.nan, result), out, name)


@implements(np.nanmax)
def _nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO,
            where: Any = True) -> Any:
    return _nanextreme("nanmax", _max, a, axis, out, keepdims, initial, where)


@implements(np.nanmin)
def _nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO,
            where: Any = True) -> Any:
    return _nanextreme("nanmin", _min, a, axis, out, keepdims, initial, where)


@implements(np.ptp)
def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    a = _t(a)
    return _finish(dg.amax(a, axis=axis, keepdims=keepdims) - dg.amin(a, axis=axis, keepdims=keepdims),
                   out, "ptp")


# -- order statistics ---------------------------------------------------------------------------
def _quantile(name: str, a: Any, q: Any, axis: Any, out: Any, method: str, keepdims: bool,
              ignore_nan: bool, weights: Any = None) -> Any:
    """dualgrad's ``quantile`` over NumPy's ``axis`` (an int, a tuple or None)."""
    if method not in _METHODS:
        raise _unsupported(name, f"method={method!r}")
    if weights is not None:
        raise _unsupported(name, "weights=")
    a = _t(a)
    axes = tuple(range(a.ndim)) if axis is None else normalize_axis_tuple(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    flat = dg.reshape(dg.permute(a, tuple(kept) + axes), tuple(a.shape[d] for d in kept) + (-1,))
    fn = dg.nanquantile if ignore_nan else dg.quantile
    if not isinstance(q, Tensor):
        q = float(q) if np.ndim(q) == 0 else dg.tensor(np.asarray(q, dtype=np.float64))
    result = fn(flat, q, dim=-1, interpolation=method)
    if keepdims:
        result = dg.reshape(result, np.shape(q) + tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
    return _finish(result, out, name)


@implements(np.median)
def _median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
            keepdims: bool = False) -> Any:
    return _quantile("median", a, 0.5, axis, out, "linear", keepdims, False)


@implements(np.nanmedian)
def _nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               keepdims: bool = False) -> Any:
    return _quantile("nanmedian", a, 0.5, axis, out, "linear", keepdims, True)


def _fraction(q: Any) -> Any:
    return q / 100 if isinstance(q, Tensor) else np.asarray(q, dtype=np.float64) / 100


@implements(np.quantile)
def _np_quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                 method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                 interpolation: Any = None) -> Any:
    return _quantile("quantile", a, q, axis, out, interpolation or method, keepdims, False, weights)


@implements(np.nanquantile)
def _nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                 method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                 interpolation: Any = None) -> Any:
    return _quantile("nanquantile", a, q, axis, out, interpolation or method, keepdims, True, weights)


@implements(np.percentile)
def _percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: Any = None) -> Any:
    return _quantile("percentile", a, _fraction(q), axis, out, interpolation or method, keepdims, False,
                     weights)


@implements(np.nanpercentile)
def _nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                   method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                   interpolation: Any = None) -> Any:
    return _quantile("nanpercentile", a, _fraction(q), axis, out, interpolation or method, keepdims, True,
                     weights)


# -- covariances ------------------------------------------------------------------------------------
def _variables(m: Any, y: Any, rowvar: bool, dtype: Any) -> Tensor:
    """The observations as rows of variables (NumPy's ``cov`` layout), ``y``'s rows appended."""
    rows = []
    for part in (m, y):
        if part is None:
            continue
        part = np.atleast_2d(_t(part))
        rows.append(part if rowvar or part.shape[0] == 1 else dg.transpose(part, 0, 1))
    x = dg.cat(rows, 0) if len(rows) > 1 else rows[0]
    return x if dtype is None else x.to(dtype)


@implements(np.cov)
def _cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
         fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    correction = ddof if ddof is not None else (0 if bias else 1)
    x = _variables(m, y, rowvar, dtype)
    result = dg.cov(x, correction=correction, fweights=fweights, aweights=aweights)
    return dg.reshape(result, ()) if x.shape[0] == 1 else result


@implements(np.corrcoef)
def _corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    rows = _variables(x, y, rowvar, dtype)
    result = dg.corrcoef(rows)
    return dg.reshape(result, ()) if rows.shape[0] == 1 else result
