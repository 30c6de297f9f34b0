"""Property-testing your own derivative with ``dualgrad.testing`` and Hypothesis.

``log(cosh(x))`` overflows for ``|x| > 710`` when computed directly, so we write
it as a custom ``Function`` with the stable form ``|x| + log1p(exp(-2|x|)) - log 2``
and supply its derivative ``tanh(x)`` by hand, for reverse mode (``backward``)
and forward mode (``jvp``). A hand-written derivative is a claim; this example
tests it:

1. ``gradcheck`` at one point (reverse and forward mode against finite differences);
2. ``assert_derivatives_match`` over many Hypothesis-drawn tensors (shapes,
   values), first and second order, reverse and forward mode;
3. a buggy variant, whose derivative ``tanh(|x|)`` is only right for ``x >= 0``
   (the kind of slip made when deriving through ``|x|``): Hypothesis finds a
   failing input and shrinks it to a small one.

Run: ``python examples/property_testing.py``; set ``DUALGRAD_EXAMPLES_SMALL=1``
to draw fewer examples. Needs Hypothesis (``pip install dualgrad[test]``).
"""

from __future__ import annotations

import math
import os

import dualgrad as dg
from dualgrad.testing import assert_derivatives_match, tensors


class LogCosh(dg.Function):
    """``log(cosh(x))``, computed without overflow, with derivative ``tanh(x)``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.abs() + dg.log1p(dg.exp(-2 * x.abs())) - math.log(2.0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * dg.tanh(x)

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * dg.tanh(x)


class BuggyLogCosh(LogCosh):
    """The same function with a derivative that is wrong for negative ``x``."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * dg.tanh(x.abs())

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * dg.tanh(x.abs())


def main() -> None:
    examples = 10 if os.environ.get("DUALGRAD_EXAMPLES_SMALL") else 100
    big = dg.tensor([-1000.0, 0.0, 1000.0])
    print("log(cosh(x)) at -1000, 0, 1000:", LogCosh.apply(big))

    x = dg.tensor([-1.5, -0.2, 0.3, 2.0], requires_grad=True)
    print("gradcheck (reverse and forward mode):", dg.gradcheck(LogCosh.apply, (x,), check_forward_ad=True))

    # Values kept 0.1 away from the kink of |x| at 0, where finite differences are inaccurate.
    drawn = tensors(min_value=-5.0, max_value=5.0, away_from=(0.0,))
    assert_derivatives_match(LogCosh.apply, drawn, max_examples=examples)
    print(f"LogCosh: derivatives match finite differences on {examples} drawn tensors "
          "(first and second order, reverse and forward mode)")

    try:
        assert_derivatives_match(BuggyLogCosh.apply, drawn, max_examples=examples)
    except dg.GradcheckError as error:
        print("BuggyLogCosh:", str(error).splitlines()[0])
        print("  Hypothesis shrank it to: drawn=(" + ", ".join(map(repr, error.inputs)) + ",)")
    else:
        raise AssertionError("the buggy derivative was not caught")


if __name__ == "__main__":
    main()
