"""NumPy's elementwise helpers and numerical routines for ``Tensor.__array_function__``.

Adaptors with NumPy's signatures (see ``numpy_dispatch``): ``sinc``, ``i0``,
``nan_to_num``, ``real_if_close``, ``select``, ``piecewise``, ``linspace``,
``trapezoid``, ``gradient``, ``ediff1d``, ``convolve``, ``correlate``, ``interp``,
``polyval``, ``vander`` and ``unwrap``.

>>> import numpy as np, dualgrad as dg
>>> y = dg.tensor([0.0, 1.0, 4.0, 9.0], requires_grad=True)
>>> np.gradient(y), np.trapezoid(y)
(tensor([1., 2., 4., 5.], grad_fn=<SqueezeBackward4>), tensor(9.5000, grad_fn=<SumBackward1>))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dualgrad as dg

from ..tensor import Tensor
from . import implements, is_tracked
from .functions import _diff, _t, _unsupported


@implements(np.sinc)
def _sinc(x: Any) -> Any:
    return dg.sinc(_t(x))


@implements(np.i0)
def _i0(x: Any) -> Any:
    return dg.i0(_t(x))


@implements(np.nan_to_num)
def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    return dg.nan_to_num(_t(x), nan, posinf, neginf)


@implements(np.real_if_close)
def _real_if_close(a: Any, tol: float = 100) -> Any:
    a = _t(a)
    if a.dtype.kind != "c":
        return a
    limit = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    return dg.real(a) if bool(np.all(np.abs(a._data.imag) < limit)) else a


@implements(np.select)
def _select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    result = default
    for condition, choice in zip(reversed(condlist), reversed(choicelist), strict=True):
        result = dg.where(_t(condition), choice, result)
    return result if isinstance(result, Tensor) else _t(result)


@implements(np.piecewise)
def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """Each function sees only the elements its condition selects (later conditions win), as NumPy's."""
    x = _t(x)
    if not isinstance(condlist, (list, tuple)) or (x.ndim and not isinstance(condlist[0], (list, tuple,
                                                                                           np.ndarray, Tensor))):
        condlist = [condlist]
    masks = [np.broadcast_to(np.asarray(c._data if isinstance(c, Tensor) else c, dtype=bool), x.shape)
             for c in condlist]
    if len(funclist) == len(masks) + 1:
        masks.append(~np.any(masks, axis=0))
    elif len(funclist) != len(masks):
        raise ValueError(f"with {len(masks)} condition(s), either {len(masks)} or {len(masks) + 1} functions "
                         f"are expected")
    result = dg.zeros(x.shape, dtype=x.dtype)
    for mask, fn in zip(masks, funclist, strict=True):
        values = fn(x[mask], *args, **kw) if callable(fn) else fn
        result = dg.index_put(result, (_t(mask),), _t(values).to(x.dtype))
    return result


@implements(np.linspace)
def _linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
              dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    start, stop = _t(start), _t(stop)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    span = dg.broadcast_to(stop - start, np.broadcast_shapes(start.shape, stop.shape))
    div = (num - 1) if endpoint else num
    steps = np.arange(num, dtype=span.dtype if span.dtype.kind in "fc" else np.float64)
    steps = steps.reshape((-1,) + (1,) * span.ndim)
    samples = steps * (span / div) + start if div > 0 else steps * span + start
    if endpoint and num > 1:
        samples = dg.cat([samples[:-1], dg.reshape(dg.broadcast_to(stop, span.shape), (1,) + span.shape)])
    samples = dg.moveaxis(samples, 0, axis) if axis else samples
    samples = samples if dtype is None else samples.to(dtype)
    return (samples, span / div if div > 0 else np.nan) if retstep else samples


@implements(np.trapezoid)
def _trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    return dg.trapezoid(_t(y), None if x is None else _t(x), dx=None if x is not None else dx, dim=axis)


@implements(np.ediff1d)
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    parts = [_diff(dg.reshape(_t(ary), (-1,)))]
    if to_begin is not None:
        parts.insert(0, dg.reshape(_t(to_begin), (-1,)))
    if to_end is not None:
        parts.append(dg.reshape(_t(to_end), (-1,)))
    return dg.cat(parts) if len(parts) > 1 else parts[0]


# -- linear maps along an axis -------------------------------------------------------------------
def _along_axis(matrix: np.ndarray, a: Tensor, axis: int) -> Tensor:
    """``matrix`` applied to each 1-D slice of ``a`` along ``axis`` (the result keeps the axis there)."""
    last = axis % a.ndim == a.ndim - 1
    moved = a if last else dg.moveaxis(a, axis, -1)
    mapped = dg.matmul(moved, dg.tensor(matrix.T.astype(_real_dtype(a))))
    return mapped if last else dg.moveaxis(mapped, -1, axis)


def _real_dtype(a: Tensor) -> np.dtype:
    return a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)


def _linear_map(numpy_fn: Callable, n: int) -> np.ndarray:
    """The matrix of a linear NumPy function of a length-``n`` vector, read off the unit vectors."""
    return np.stack([numpy_fn(unit) for unit in np.eye(n)], axis=-1)


@implements(np.gradient)
def _gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """np.gradient is linear in ``f``: its matrix per axis comes from NumPy itself (any spacing, both edge
    orders); only constant spacings are supported."""
    f = _t(f)
    if is_tracked(varargs):
        raise _unsupported("gradient", "tracked spacings")
    axes = tuple(range(f.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    spacings = varargs * len(axes) if len(varargs) <= 1 else varargs
    if len(spacings) not in (0, len(axes)):
        raise TypeError("invalid number of arguments")
    results = []
    for i, ax in enumerate(axes):
        spacing = () if not spacings else (np.asarray(spacings[i]),)
        matrix = _linear_map(lambda unit, s=spacing: np.gradient(unit, *s, edge_order=edge_order),
                             f.shape[ax])
        results.append(_along_axis(matrix, f, ax))
    return results[0] if len(results) == 1 else tuple(results)


def _full_convolution(a: Tensor, v: Tensor) -> Tensor:
    """``c[k] = sum over i + j == k of a[i] * v[j]`` (both tracked or not)."""
    n, m = a.shape[0], v.shape[0]
    products = dg.reshape(dg.outer(a, v), (-1,))
    diagonals = (np.arange(n)[:, None] + np.arange(m)[None, :]).ravel()
    return dg.index_add(dg.zeros(n + m - 1, dtype=products.dtype), 0, dg.tensor(diagonals), products)


def _convolution_mode(c: Tensor, n: int, m: int, mode: str) -> Tensor:
    """NumPy's ``same`` / ``valid`` windows of a full convolution of lengths ``n`` and ``m``."""
    if mode == "full":
        return c
    if mode == "same":
        start = (min(n, m) - 1) // 2
        return c[start:start + max(n, m)]
    if mode == "valid":
        return c[min(n, m) - 1:max(n, m)]
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


def _vectors(name: str, a: Any, v: Any) -> tuple:
    a, v = _t(a), _t(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}: object too deep for desired array")
    if not a.shape[0] or not v.shape[0]:
        raise ValueError(f"{name}: inputs cannot be empty")
    return a, v


@implements(np.convolve)
def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    a, v = _vectors("convolve", a, v)
    return _convolution_mode(_full_convolution(a, v), a.shape[0], v.shape[0], mode)


@implements(np.correlate)
def _correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    a, v = _vectors("correlate", a, v)
    full = _full_convolution(a, dg.conj(dg.flip(v, 0)))
    if v.shape[0] > a.shape[0]:  # NumPy swaps the inputs, and so reverses (and conjugates) the result
        full = dg.conj(dg.flip(_full_convolution(v, dg.conj(dg.flip(a, 0))), 0))
    return _convolution_mode(full, a.shape[0], v.shape[0], mode)


@implements(np.interp)
def _interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise linear: differentiable in ``x`` (the slope of its segment) and ``fp``; ``xp`` is data."""
    if period is not None or is_tracked(xp):
        raise _unsupported("interp", "period= or tracked xp")
    x, fp = _t(x), _t(fp)
    xp = np.asarray(xp._data if isinstance(xp, Tensor) else xp, dtype=np.float64)
    segment = np.clip(np.searchsorted(xp, x._data, side="right") - 1, 0, max(len(xp) - 2, 0))
    x0, x1 = xp[segment], xp[np.minimum(segment + 1, len(xp) - 1)]
    f0, f1 = fp[segment], fp[np.minimum(segment + 1, len(xp) - 1)]
    width = np.where(x1 > x0, x1 - x0, 1.0)
    t = (x - x0) / width
    result = f0 + t * (f1 - f0)
    below = fp[0] if left is None else left
    above = fp[-1] if right is None else right
    result = dg.where(x._data < xp[0], below, result)
    return dg.where(x._data > xp[-1], above, result)


@implements(np.polyval)
def _polyval(p: Any, x: Any) -> Any:
    """Horner's scheme over the coefficients (highest power first)."""
    result = dg.zeros_like(_t(x))
    for coefficient in (_t(p) if not isinstance(p, (list, tuple)) else p):
        result = result * x + coefficient
    return result


@implements(np.vander)
def _vander(x: Any, N: Any = None, increasing: bool = False) -> Any:  # noqa: N803 - NumPy's name
    return dg.vander(_t(x), N, increasing)


@implements(np.unwrap)
def _unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Any:
    """``p`` plus NumPy's correction, which is constant between jumps (so the gradient is 1)."""
    p = _t(p)
    correction = np.unwrap(p._data, discont, axis, period=period) - p._data
    return p + correction

