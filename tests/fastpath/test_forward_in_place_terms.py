"""The derived elementwise jvp writes products and sums into its own temporaries.

These tests pin down when that is allowed: never into a tangent, an input, a
partial derivative that is an input (``mul``'s), a tracked tensor, or under an
observer; and the values are those of the out-of-place formula.
"""

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import fastpath
from dualgrad import forward_ad as fwAD
from dualgrad.ops import registry


@pytest.fixture
def scratch_decisions(monkeypatch):
    """Record each answer of ``is_scratch`` (True: the jvp worked in place)."""
    answers = []
    original = registry.is_scratch

    def spy(x, other):
        answers.append(original(x, other))
        return answers[-1]

    monkeypatch.setattr(registry, "is_scratch", spy)  # (the jvps of the elementwise family)
    monkeypatch.setattr(fastpath, "is_scratch", spy)  # (multiply_into, in the vjps)
    return answers


@pytest.mark.fastpath
def test_square_works_in_place_and_is_exact(scratch_decisions):
    x, v = dg.tensor([0.5, -1.0, 2.0]), dg.tensor([1.0, 2.0, -1.0])
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent
    assert scratch_decisions == [True]
    np.testing.assert_array_equal(tangent.numpy(), 2 * x.numpy() * v.numpy())
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, -1.0])  # the input tangent is untouched


def test_partial_that_is_an_input_is_not_overwritten():
    x, c, v = dg.tensor([1.0, 2.0]), dg.tensor([3.0, 4.0]), dg.tensor([1.0, 1.0])
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, v) * c).tangent  # d(x*c)/dx is c itself
    np.testing.assert_array_equal(tangent.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(c.numpy(), [3.0, 4.0])


def test_sum_of_terms_with_both_tangents():
    x, y = dg.tensor([0.3, 0.7]), dg.tensor([1.5, -2.0])
    u, w = dg.tensor([1.0, -1.0]), dg.tensor([0.5, 2.0])
    with fwAD.dual_level():
        a, b = fwAD.make_dual(x, u), fwAD.make_dual(y, w)
        tangent = fwAD.unpack_dual(dg.atan2(a, b) - dg.hypot(a, b)).tangent
    xn, yn, un, wn = (t.numpy() for t in (x, y, u, w))
    r2 = xn**2 + yn**2
    expected = (yn * un - xn * wn) / r2 - (xn * un + yn * wn) / np.sqrt(r2)
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-14)
    np.testing.assert_array_equal(u.numpy(), [1.0, -1.0])
    np.testing.assert_array_equal(w.numpy(), [0.5, 2.0])


@pytest.mark.fastpath
def test_tracked_terms_stay_out_of_place(scratch_decisions):
    """Forward over reverse: the tangent's graph must see every product."""
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    v = dg.tensor([1.0, 1.0])
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, v).sin()).tangent
        assert scratch_decisions == [False]  # cos(x) requires grad
        (hvp,) = dg.grad(tangent.sum(), x)
    np.testing.assert_allclose(hvp.numpy(), -np.sin([0.5, 1.5]), rtol=1e-14)


def test_nested_levels_give_exact_second_derivative():
    x = dg.tensor([0.2, 0.9])
    with fwAD.dual_level():
        inner = fwAD.make_dual(x, dg.ones(2))
        with fwAD.dual_level():
            outer = fwAD.make_dual(inner, dg.ones(2))
            first = fwAD.unpack_dual(outer**3).tangent
        second = fwAD.unpack_dual(first).tangent
    np.testing.assert_allclose(second.numpy(), 6 * x.numpy(), rtol=1e-14)


def test_profiler_sees_every_op_of_the_rule():
    x, v = dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0])
    with dg.autograd.profiler.profile() as prof, fwAD.dual_level():
        fwAD.make_dual(x, v) ** 2
    names = [event.name for event in prof.function_events]
    assert names.count("mul") >= 2  # 2 * x, then its product with the tangent


@pytest.mark.fastpath
def test_tangent_that_requires_grad_keeps_its_graph(scratch_decisions):
    """Reverse over forward: the partial (2x) is a temporary, but the tangent is tracked."""
    x = dg.tensor([0.5, 1.5])
    v = dg.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent
    assert scratch_decisions == [False]
    (dv,) = dg.grad(tangent.sum(), v)
    np.testing.assert_allclose(dv.numpy(), 2 * x.numpy(), rtol=1e-14)


@pytest.mark.fastpath
def test_reverse_rule_products_in_place_only_when_untracked(scratch_decisions):
    """The same reuse in the derived vjp (``g * d``): not when building a graph of the gradient."""
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    (plain,) = dg.grad(x.sin().sum(), x)
    assert scratch_decisions == [True]
    scratch_decisions.clear()
    (tracked,) = dg.grad(x.sin().sum(), x, create_graph=True)
    assert scratch_decisions == [False]
    expected = np.cos([0.5, 1.5])
    np.testing.assert_allclose(plain.numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(tracked.detach().numpy(), expected, rtol=1e-14)
    (second,) = dg.grad(tracked.sum(), x)
    np.testing.assert_allclose(second.numpy(), -np.sin([0.5, 1.5]), rtol=1e-12)


@pytest.fixture
def dispatched_products(monkeypatch):
    """Count the products that went through the op table's ``mul`` (not the unseen fast lane)."""
    from dualgrad.ops.elementwise.core import MUL

    calls = []
    original = MUL.impl
    monkeypatch.setattr(MUL, "impl", lambda *args, **params: calls.append(1) or original(*args, **params))
    return calls


@pytest.mark.fastpath
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unseen_product_by_a_constant_skips_dispatch_with_exact_values(dispatched_products, dtype):
    x = dg.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=dtype, requires_grad=True)
    (gx,) = dg.grad(dg.sin(x * 1.5).sum(), x)
    assert len(dispatched_products) == 1  # the forward product only
    assert gx.dtype == np.dtype(dtype)  # a Python float does not upcast float32
    expected = np.cos(x.detach().numpy() * 1.5) * 1.5
    np.testing.assert_allclose(gx.numpy(), expected, rtol=1e-6)


def test_products_that_a_mode_can_see_are_dispatched(dispatched_products):
    x = dg.tensor([1.0, -2.0], requires_grad=True)
    (gx,) = dg.grad(((x * 1.5) ** 2).sum(), x, create_graph=True)  # the tracked g * 1.5 is recorded
    assert gx.requires_grad
    np.testing.assert_allclose(gx.detach().numpy(), [4.5, -9.0])
    np.testing.assert_allclose(dg.grad(gx.sum(), x)[0].numpy(), [4.5, 4.5])
    with dg.autograd.profiler.profile() as prof:
        dg.grad((x * 1.5).sum(), x)
    assert [e.name for e in prof.function_events].count("mul") == 2  # the observer sees both
    with fwAD.dual_level():  # forward over reverse: the product's tangent is computed by the op
        xd = fwAD.make_dual(dg.tensor([1.0, -2.0], requires_grad=True), dg.tensor([1.0, 1.0]))
        (g,) = dg.grad((xd ** 3).sum(), xd)
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), [6.0, -12.0])
