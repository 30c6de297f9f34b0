"""A NumPy array given to an op as an operand and read by its backward rule is kept as a copy: changing
the array in place after the call (no version counter sees that) does not change the gradient."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

CALLS = {
    "x * a": (lambda x, a: x * a, lambda a: a),
    "a * x": (lambda x, a: a * x, lambda a: a),
    "x / a": (lambda x, a: x / a, lambda a: 1 / a),
    "x ** a": (lambda x, a: x ** a, lambda a: a * np.array([1.5, 2.0]) ** (a - 1)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_array_changed_after_the_call_does_not_change_the_gradient(name):
    call, slope = CALLS[name]
    x = dg.tensor([1.5, 2.0], requires_grad=True)
    a = np.array([3.0, 4.0])
    want = slope(a.copy())
    y = call(x, a)
    a[:] = 7.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want)
