"""Derivatives at the edges of ops' domains, with torch's conventions (values checked against torch 2.x).

See docs/reliability.md for the table these tests pin down.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.forward_ad as fwAD

INF, NAN = math.inf, math.nan


def _reverse(fn, values):
    x = dg.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = fn(x)
        y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def _forward(fn, values):
    """The forward-mode derivative with a tangent of ones (for elementwise fns: the diagonal)."""
    with warnings.catch_warnings(), fwAD.dual_level():
        warnings.simplefilter("ignore", RuntimeWarning)
        x = dg.tensor(np.asarray(values, dtype=np.float64))
        return fwAD.unpack_dual(fn(fwAD.make_dual(x, dg.ones_like(x)))).tangent.numpy()


ELEMENTWISE = [
    # name, fn, inputs, values, derivative (torch's)
    ("sqrt at 0", lambda x: x.sqrt(), [0.0, 4.0], [0.0, 2.0], [INF, 0.25]),
    ("abs at 0", lambda x: x.abs(), [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]),
    ("relu at 0", dg.relu, [0.0, 1.0, -1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]),
    ("log at 0", lambda x: x.log(), [0.0, 1.0], [-INF, 0.0], [INF, 1.0]),
    ("0 ** 2", lambda x: x ** 2, [0.0], [0.0], [0.0]),
    ("0 ** 3", lambda x: x ** 3, [0.0], [0.0], [0.0]),
    ("0 ** 1", lambda x: x ** 1, [0.0], [0.0], [1.0]),
    ("0 ** 0", lambda x: x ** 0, [0.0], [1.0], [0.0]),
    ("0 ** 0.5", lambda x: x ** 0.5, [0.0], [0.0], [INF]),
    ("0 ** 1.5", lambda x: x ** 1.5, [0.0], [0.0], [0.0]),
    ("0 ** -1", lambda x: x ** -1, [0.0], [INF], [-INF]),
    ("clamp at bounds", lambda x: x.clamp(0.0, 1.0), [0.0, 1.0, 2.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]),
    ("sigmoid saturates", lambda x: x.sigmoid(), [-1000.0, 1000.0], [0.0, 1.0], [0.0, 0.0]),
    ("tanh saturates", lambda x: x.tanh(), [-1000.0, 1000.0], [-1.0, 1.0], [0.0, 0.0]),
]


@pytest.mark.parametrize("case", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_edges_reverse_and_forward(case):
    _, fn, inputs, values, derivative = case
    value, grad = _reverse(fn, inputs)
    np.testing.assert_array_equal(value, values)
    np.testing.assert_array_equal(grad, derivative)
    np.testing.assert_array_equal(_forward(fn, inputs), derivative)


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_pow_exponent_gradient_at_zero_base():
    """d(0**y)/dy is 0 for y >= 0 (torch masks log(0) there)."""
    base = dg.tensor([0.0, 0.0], requires_grad=True)
    exponent = dg.tensor([2.0, 0.5], requires_grad=True)
    (base ** exponent).sum().backward()
    np.testing.assert_array_equal(exponent.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(base.grad.numpy(), [0.0, INF])


@pytest.mark.parametrize("reduce", [lambda x: x.max(), lambda x: x.amax(), lambda x: x.amax(0)],
                         ids=["max", "amax", "amax_dim"])
def test_max_ties_share_the_gradient_evenly(reduce):
    value, grad = _reverse(reduce, [1.0, 3.0, 3.0])
    assert value == 3.0
    np.testing.assert_array_equal(grad, [0.0, 0.5, 0.5])


def test_min_ties_share_the_gradient_evenly():
    _, grad = _reverse(lambda x: x.min(), [1.0, 1.0, 3.0])
    np.testing.assert_array_equal(grad, [0.5, 0.5, 0.0])


def test_maximum_tie_splits_half_half():
    a = dg.tensor([2.0, 1.0], requires_grad=True)
    b = dg.tensor([2.0, 0.0], requires_grad=True)
    dg.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0])


@pytest.mark.parametrize("norm", [
    lambda x: x.norm(), lambda x: dg.linalg.norm(x), lambda x: dg.linalg.vector_norm(x, 1),
    lambda x: dg.linalg.vector_norm(x, 3), lambda x: dg.linalg.vector_norm(x, INF),
], ids=["norm", "linalg.norm", "l1", "l3", "linf"])
def test_norm_at_zero_has_zero_gradient(norm):
    value, grad = _reverse(norm, [0.0, 0.0, 0.0])
    assert value == 0.0
    np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0])


def test_logsumexp_and_softmax_do_not_overflow():
    value, grad = _reverse(lambda x: x.logsumexp(0), [1000.0, 1000.0])
    assert value == pytest.approx(1000.0 + math.log(2.0))
    np.testing.assert_allclose(grad, [0.5, 0.5])
    weights = dg.tensor([1.0, 2.0])
    value, grad = _reverse(lambda x: dg.softmax(x, 0) * weights, [1000.0, 1000.0])
    np.testing.assert_allclose(value, [0.5, 1.0])
    np.testing.assert_allclose(grad, [-0.25, 0.25])
    value, grad = _reverse(lambda x: dg.log_softmax(x, 0) * weights, [1000.0, -1000.0])
    np.testing.assert_allclose(value, [0.0, -4000.0])
    np.testing.assert_allclose(grad, [-2.0, 2.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1000.0, 1000.0]), dg.tensor([1.0, 0.0]))
        tangent = fwAD.unpack_dual(dg.softmax(x, 0)).tangent
    np.testing.assert_allclose(tangent.numpy(), [0.25, -0.25])


def test_logsumexp_of_all_minus_inf_is_minus_inf():
    """As torch: the value is -inf and the gradient 0/0 = nan (there is no meaningful direction)."""
    value, grad = _reverse(lambda x: x.logsumexp(0), [-INF, -INF])
    assert value == -INF
    assert np.isnan(grad).all()


def test_where_unselected_value_does_not_poison_the_gradient():
    """The branch not taken gets an exact zero: its NaN *value* never reaches the gradient."""
    _, grad = _reverse(lambda x: dg.where(x > 0, x, x.log()), [-1.0, 2.0])
    np.testing.assert_array_equal(grad, [-1.0, 1.0])
    _, grad = _reverse(lambda x: dg.where(x > 0, x.sqrt(), 0.0), [0.0, 4.0])
    assert np.isnan(grad[0])  # the derivative of sqrt at 0 (inf) times 0: guard the input instead
    _, grad = _reverse(lambda x: dg.where(x > 0, dg.where(x > 0, x, 1.0).sqrt(), 0.0), [0.0, 4.0])
    np.testing.assert_array_equal(grad, [0.0, 0.25])


def test_atan2_at_origin_has_zero_gradient():
    """Regression: the partials were 0/0 = nan at (0, 0); torch's reverse mode gives 0."""
    y = dg.tensor([0.0, 0.0, 1.0], requires_grad=True)
    x = dg.tensor([0.0, 1.0, 0.0], requires_grad=True)
    dg.atan2(y, x).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, -1.0])
    with fwAD.dual_level():
        out = dg.atan2(fwAD.make_dual(dg.zeros(1), dg.ones(1)), fwAD.make_dual(dg.zeros(1), dg.ones(1)))
        np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(), [0.0])


def test_prod_with_zeros():
    _, grad = _reverse(lambda x: x.prod(), [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(grad, [6.0, 0.0, 0.0])
    _, grad = _reverse(lambda x: x.prod(), [0.0, 0.0, 3.0])
    np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0])


def test_max_along_a_dim_with_ties_goes_to_the_returned_index():
    x = dg.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    values, indices = x.max(1)
    values.sum().backward()
    expected = np.zeros(3)
    expected[indices.item()] = 1.0
    np.testing.assert_array_equal(x.grad.numpy()[0], expected)


@pytest.mark.parametrize("fn", [dg.expm1, dg.nn.functional.elu, dg.nn.functional.celu],
                         ids=["expm1", "elu", "celu"])
def test_exponential_tails_keep_their_digits_in_both_modes(fn):
    """``d expm1(x) / dx = exp(x)``: computed as ``expm1(x) + 1`` it kept 3 digits at x = -30 (so did elu's and
    celu's gradients, made from it)."""
    x = [-30.0, -700.0, -1e-12]
    expected = np.exp(x)
    _, grad = _reverse(fn, x)
    np.testing.assert_allclose(grad, expected, rtol=1e-14, atol=0)
    np.testing.assert_allclose(_forward(fn, x), expected, rtol=1e-14, atol=0)
