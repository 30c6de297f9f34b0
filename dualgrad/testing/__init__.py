"""Testing support: torch.testing's ``assert_close`` and ``make_tensor``, Hypothesis strategies for
tensors and a one-call derivative check.

``assert_close(actual, expected)`` compares tensors, numbers and containers of them
with torch's default tolerances and messages; ``make_tensor(*shape, dtype=...)`` draws
a tensor of random values in a range.

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
a strategy is first built, so that ``import dualgrad`` (which makes this module
``dualgrad.testing``, as ``torch.testing``) does not need it.
"""

from ..tools.testing import (
    assert_close,
    assert_derivatives_match,
    check_derivatives,
    dtypes,
    make_tensor,
    shapes,
    tensors,
)

__all__ = ["assert_close", "assert_derivatives_match", "check_derivatives", "dtypes", "make_tensor", "shapes",
           "tensors"]
