"""The implementation of the public namespace ``dualgrad.testing`` (``torch.testing``): see its docstring."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.checks import as_size
from ..factories import _generator, finfo, iinfo
from ..tensor import Tensor, _wrap
from .comparison import assert_close
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["assert_close", "assert_derivatives_match", "check_derivatives", "dtypes", "make_tensor", "shapes",
           "tensors"]


def make_tensor(*shape: Any, dtype: Any, device: Any = None, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False) -> Tensor:
    """A tensor of ``shape`` (ints, or one tuple or list) and ``dtype``, of values drawn uniformly from
    ``[low, high)``, as ``torch.testing.make_tensor``.

    The range defaults to ``[-9, 9)`` for floating and complex dtypes (for both parts),
    ``[-9, 10)`` for signed integers, ``[0, 10)`` for unsigned ones and ``[0, 2)`` for
    bool; limits beyond the dtype's finite values are clamped to them (integer limits are
    rounded up). ``noncontiguous`` gives a strided view (of a tensor with more than one
    element), ``exclude_zero`` replaces zeros by 1 for integers and bools, and by
    ``finfo(dtype).tiny`` otherwise. Values come from the generator of ``manual_seed``;
    ``device`` is accepted and ignored. ValueError for ``low >= high``, a NaN limit, a range
    outside the dtype's or ``requires_grad`` with an integer or bool dtype; TypeError for
    another dtype. ``low == high`` gives that value, with torch's FutureWarning, for
    floating and complex dtypes.

    >>> import dualgrad as dg
    >>> from dualgrad.testing import make_tensor
    >>> t = make_tensor(2, 3, dtype=dg.float32, low=-1, high=1, noncontiguous=True)
    >>> t.shape, t.dtype, t.is_contiguous(), bool(((t >= -1) & (t < 1)).all())
    ((2, 3), dtype('float32'), False, True)
    >>> make_tensor((4,), dtype=dg.int64, low=0, high=3, exclude_zero=True).min() >= 1
    tensor(True)
    """
    size, dtype = as_size(shape, fn="make_tensor"), np.dtype(dtype)
    integral = dtype.kind in "biu"
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    if dtype.kind not in "biufc":
        raise TypeError(f"The requested dtype '{dtype}' is not supported by dualgrad.testing.make_tensor().")
    noncontiguous = noncontiguous and int(np.prod(size)) > 1
    if noncontiguous:  # every other element of a last dimension twice as long (from the second: offset too)
        size = (*size[:-1], 2 * size[-1])
    low, high = _make_tensor_range(dtype, low, high)
    values = _generator[0].integers(low, high, size, dtype=dtype) if integral else _uniform(dtype, low, high, size)
    if noncontiguous:
        values = values[..., 1::2]
    if exclude_zero:
        values[values == 0] = 1 if integral else finfo(dtype).tiny
    t = _wrap(values)
    return t.requires_grad_() if requires_grad else t


def _make_tensor_range(dtype: np.dtype, low: float | None, high: float | None) -> tuple:
    """``make_tensor``'s ``[low, high)``: the defaults of ``dtype`` for None, clamped to its finite values
    (integers: rounded up), after torch's checks."""
    if dtype.kind in "biu":
        info = (0, 2) if dtype.kind == "b" else (iinfo(dtype).min, iinfo(dtype).max + (dtype != np.int64))
        default = (0, 2) if dtype.kind == "b" else (-9, 10)
    else:
        info, default = (float(finfo(dtype).min), float(finfo(dtype).max)), (-9, 9)
    low, high = default[0] if low is None else low, default[1] if high is None else high
    if any(isinstance(v, float) and np.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype.kind in "fc":
        warnings.warn("Passing `low==high` to `make_tensor` for floating or complex types is deprecated in torch "
                      "(since 2.1). Use `dualgrad.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < info[0] or low >= info[1]:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{info[0]}, {info[1]})")
    low, high = (min(max(v, info[0]), info[1]) for v in (low, high))
    return (math.ceil(low), math.ceil(high)) if dtype.kind in "biu" else (low, high)


def _uniform(dtype: np.dtype, low: float, high: float, size: tuple) -> np.ndarray:
    """Uniform draws from ``[low, high)`` in ``dtype`` (complex: both parts), even for a range wider
    than the largest float."""
    parts = (*size, 2) if dtype.kind == "c" else size
    half = high - low >= np.finfo(np.float64).max
    values = _generator[0].uniform(low / 2, high / 2, parts) * 2 if half else _generator[0].uniform(low, high, parts)
    if dtype.kind == "c":
        values = values[..., 0] + 1j * values[..., 1]
    return values.astype(dtype)


def _hypothesis() -> Any:
    """The ``hypothesis`` package, or a clear ImportError naming it."""
    try:
        import hypothesis
        import hypothesis.extra.numpy  # noqa: F401 - used as hypothesis.extra.numpy
    except ImportError as error:
        raise ImportError(
            "dualgrad.testing needs the 'hypothesis' package: pip install hypothesis "
            "(or pip install dualgrad[test])"
        ) from error
    return hypothesis


def shapes(*, min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> Any:
    """A strategy for array shapes (tuples of ints), small by default to keep checks fast.

    >>> from hypothesis import find
    >>> from dualgrad.testing import shapes
    >>> find(shapes(min_dims=2, max_dims=2), lambda s: s[0] > 2)
    (3, 1)
    """
    hnp = _hypothesis().extra.numpy
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def dtypes(*, real: bool = True, complex: bool = False, single: bool = False) -> Any:  # noqa: A002
    """A strategy for floating dtypes: float64 (and complex128 with ``complex``).

    ``single=True`` adds float32 / complex64, for which finite differences need
    looser tolerances.

    >>> from hypothesis import find
    >>> from dualgrad.testing import dtypes
    >>> find(dtypes(complex=True), lambda d: d.kind == "c")
    dtype('complex128')
    """
    st = _hypothesis().strategies
    names = ([] if not real else ["float64"] + (["float32"] if single else []))
    names += [] if not complex else ["complex128"] + (["complex64"] if single else [])
    if not names:
        raise ValueError("dtypes(): enable at least one of real and complex")
    return st.sampled_from([np.dtype(n) for n in names])


def tensors(*, shape: Any = None, dtype: Any = None, min_value: float = -2.0, max_value: float = 2.0,
            away_from: tuple = (), gap: float = 0.1, requires_grad: bool = True, min_dims: int = 0,
            max_dims: int = 3, max_side: int = 4) -> Any:
    """A strategy for Tensors with values in ``[min_value, max_value]``.

    ``shape`` and ``dtype`` are fixed values or strategies (default: ``shapes(...)``
    and float64). Values closer than ``gap`` to a point of ``away_from`` (kinks,
    poles) are moved away, so that finite differences are accurate. Complex
    tensors draw real and imaginary parts in the same range.

    >>> from hypothesis import find
    >>> from dualgrad.testing import tensors
    >>> t = find(tensors(shape=(2, 3), min_value=0.5, max_value=1.0), lambda t: True)
    >>> t.shape, t.requires_grad, bool(((t >= 0.5) & (t <= 1.0)).all())
    ((2, 3), True, True)
    """
    hypothesis = _hypothesis()
    st, hnp = hypothesis.strategies, hypothesis.extra.numpy
    shape_strategy = shape if _is_strategy(shape) else (
        st.just(tuple(shape)) if shape is not None
        else shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side))
    dtype_strategy = dtype if _is_strategy(dtype) else st.just(np.dtype(dtype or np.float64))
    elements = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False,
                         allow_subnormal=False)

    @st.composite
    def draw_tensor(draw: Any) -> Tensor:
        size, kind = draw(shape_strategy), draw(dtype_strategy)
        values = draw(hnp.arrays(np.float64, size, elements=elements))
        if kind.kind == "c":
            values = values + 1j * draw(hnp.arrays(np.float64, size, elements=elements))
        for point in away_from:
            close = np.abs(values - point) < gap
            values = np.where(close, point + np.where(values.real >= point, gap, -gap), values)
        t = _wrap(np.asarray(values, dtype=kind))
        return t.requires_grad_() if requires_grad else t

    return draw_tensor()


def _is_strategy(value: Any) -> bool:
    return value is not None and hasattr(value, "example") and hasattr(value, "map")


def check_derivatives(func: Callable, inputs: tuple, *, forward: bool = True, second_order: bool = True,
                      eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> None:
    """Raise ``GradcheckError`` unless ``func``'s derivatives at ``inputs`` match finite differences.

    Checks reverse mode (and forward mode with ``forward``) with ``gradcheck``,
    then, with ``second_order``, reverse-over-reverse (and forward-over-reverse)
    with ``gradgradcheck``.

    >>> import dualgrad as dg
    >>> from dualgrad.testing import check_derivatives
    >>> check_derivatives(lambda x: x.sin() * x, (dg.randn(3, requires_grad=True),))
    """
    tolerances = {"eps": eps, "atol": atol, "rtol": rtol}
    gradcheck(func, inputs, check_forward_ad=forward, **tolerances)
    if second_order:
        gradgradcheck(func, inputs, check_fwd_over_rev=forward, **tolerances)


def assert_derivatives_match(func: Callable, *inputs: Any, forward: bool = True, second_order: bool = True,
                             max_examples: int | None = None, hypothesis_settings: Any = None,
                             eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3) -> None:
    """Assert that derivatives match finite differences for inputs drawn from the ``inputs`` strategies.

    One Hypothesis run of ``check_derivatives``: reverse and forward mode, first
    and second order. ``max_examples`` overrides the active Hypothesis profile;
    ``hypothesis_settings`` (a ``hypothesis.settings``) replaces it. On failure
    Hypothesis reports the smallest failing inputs and the ``GradcheckError``
    naming the mismatching Jacobians; its ``inputs`` attribute holds those inputs.

    >>> import dualgrad as dg
    >>> from dualgrad.testing import assert_derivatives_match, tensors
    >>> assert_derivatives_match(lambda x, y: x * y.exp(), tensors(shape=(2,)), tensors(shape=(2,)),
    ...                          max_examples=3)
    """
    hypothesis = _hypothesis()
    st = hypothesis.strategies
    options: dict = {"deadline": None, "database": None}
    if max_examples is not None:
        options["max_examples"] = max_examples

    @hypothesis.settings(hypothesis_settings, **options)
    @hypothesis.given(st.tuples(*inputs))
    def derivatives_match(drawn: tuple) -> None:
        try:
            check_derivatives(func, drawn, forward=forward, second_order=second_order,
                              eps=eps, atol=atol, rtol=rtol)
        except GradcheckError as error:
            error.inputs = drawn  # Hypothesis re-raises this for the shrunk example
            raise

    derivatives_match()
