"""Property-testing support: Hypothesis strategies for tensors and a one-call derivative check.

``tensors()`` draws Tensors of varied shapes, dtypes and values;
``assert_derivatives_match(func, *strategies)`` asserts with Hypothesis that
``func``'s derivatives match central finite differences in reverse and forward
mode, to first and second order, for every drawn input. It is the way to test a
custom Function:

>>> import dualgrad as dg
>>> from dualgrad.testing import assert_derivatives_match, tensors
>>> class Cube(dg.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         ctx.save_for_forward(x)
...         return x ** 3
...     @staticmethod
...     def backward(ctx, g):
...         x, = ctx.saved_tensors
...         return g * 3 * x ** 2
...     @staticmethod
...     def jvp(ctx, t):
...         x, = ctx.saved_tensors
...         return t * 3 * x ** 2
>>> assert_derivatives_match(Cube.apply, tensors(max_dims=2), max_examples=5)

Hypothesis is an optional dependency (the ``test`` extra); it is imported when
a strategy is first built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .tensor import Tensor, _wrap

__all__ = ["assert_derivatives_match", "check_derivatives", "dtypes", "shapes", "tensors"]


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
