"""Backward rules that skip full-size passes: what they compute, and when they must not apply.

Three savings, each checked for values (against closed forms, finite differences
and the other mode), for being taken where it should (a spy on the helper that
does it), and for being refused where writing in place would show:

* ``fastpath.scatter_into_buffer``: the gradient of a basic slice ``x[i:j]`` is
  added straight into the gradient ``x`` already received from another use,
  instead of a full-size scatter and a full-size sum;
* ``fastpath.broadcast_product``: a gradient that is one value broadcast (as
  ``sum``'s and ``mean``'s) times a number stays one value; a square's vjp then
  doubles the gradient instead of ``x``. ``dualgrad.grad`` and ``.grad`` never
  hand out such a read-only broadcast;
* ``fastpath.scale_into``: ``-g`` (the vjp of ``c - x``) in the gradient's own
  memory when the engine holds its only reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, hvp, vhp, vjp

import dualgrad as dg
from dualgrad import fastpath
from dualgrad.func import grad as func_grad
from dualgrad.ops import registry
from dualgrad.reverse import engine


def _spy(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper that records each call's result."""
    results = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        results.append(result)
        return result

    monkeypatch.setattr(module, name, spy)
    return results


def _rosenbrock(x):
    head, tail = x[:-1], x[1:]
    return (100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2).sum()


def _rosenbrock_gradient(x):
    head, tail = x[:-1], x[1:]
    g = np.zeros_like(x)
    g[:-1] += -400.0 * head * (tail - head**2) - 2.0 * (1.0 - head)
    g[1:] += 200.0 * (tail - head**2)
    return g


def _rosenbrock_hvp(x, v):
    head, tail = x[:-1], x[1:]
    hv = np.zeros_like(x)
    hv[:-1] += (1200.0 * head**2 - 400.0 * tail + 2.0) * v[:-1] - 400.0 * head * v[1:]
    hv[1:] += 200.0 * v[1:] - 400.0 * head * v[:-1]
    return hv


RNG = np.random.default_rng(7)
X = RNG.uniform(-1.0, 1.0, 9)
V = RNG.standard_normal(9)


# -- slices added into the gradient already there ---------------------------------------------
@pytest.mark.fastpath
def test_second_slice_is_added_in_place_and_the_gradient_is_exact(monkeypatch):
    taken = _spy(monkeypatch, engine, "scatter_into_buffer")
    x = dg.tensor(X, requires_grad=True)
    (g,) = dg.grad(_rosenbrock(x), x)
    np.testing.assert_allclose(g.numpy(), _rosenbrock_gradient(X), rtol=1e-12)
    assert taken == [False, True]  # the first slice makes the buffer, the second adds into it


@pytest.mark.fastpath
def test_hvp_adds_the_second_slice_and_its_tangent_in_place(monkeypatch):
    taken = _spy(monkeypatch, engine, "scatter_into_buffer")
    value, product = hvp(_rosenbrock, dg.tensor(X), dg.tensor(V))
    np.testing.assert_allclose(product.numpy(), _rosenbrock_hvp(X, V), rtol=1e-10)
    np.testing.assert_allclose(vhp(_rosenbrock, dg.tensor(X), dg.tensor(V))[1].numpy(),
                               product.numpy(), rtol=1e-10)
    assert True in taken


@pytest.mark.parametrize("index", [
    (slice(1, None),), (slice(None, -1),), (slice(2, 7, 2),), (3,), (slice(1, 3), 2), (Ellipsis, 1),
])
def test_slices_of_a_matrix_and_of_a_vector_accumulate_like_the_scatter(index):
    a = RNG.standard_normal((5, 4))
    x = dg.tensor(a, requires_grad=True)
    out = (x * x).sum() + (x[index] * 3.0).sum() + (x[index] ** 2).sum()
    (g,) = dg.grad(out, x)
    expected = 2 * a
    expected[index] += 3.0 + 2 * a[index]
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)


def test_repeated_advanced_index_uses_the_scatter(monkeypatch):
    calls = _spy(monkeypatch, engine, "scatter_into_buffer")
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = dg.grad((x * 1.0).sum() + x[[0, 0, 2]].sum(), x)
    np.testing.assert_array_equal(g.numpy(), [3.0, 1.0, 2.0])
    assert calls == [False]  # (not basic: the op declares no block)


@pytest.mark.fastpath
def test_retained_and_hooked_gradients_see_the_whole_sum(monkeypatch):
    taken = _spy(monkeypatch, engine, "scatter_into_buffer")
    x = dg.tensor(X, requires_grad=True)
    y = x * 1.0
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y[1:].sum() * 2.0 + y[:-1].sum()).backward()
    expected = np.full(9, 3.0)
    expected[0], expected[-1] = 1.0, 2.0
    np.testing.assert_array_equal(y.grad.numpy(), expected)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(seen[0], expected)
    assert True in taken


@pytest.mark.parametrize("hooked", [0, 1])
def test_a_gradient_that_a_hook_kept_is_not_written(hooked):
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    slices = y[1:], y[:-1]
    kept = []
    slices[hooked].grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    (slices[0].sum() * 2.0 + slices[1].sum()).backward()
    np.testing.assert_array_equal(kept[0].numpy(), [[0.0, 2.0, 2.0], [1.0, 1.0, 0.0]][hooked])
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 3.0, 2.0])


def test_a_node_with_a_post_hook_is_run_by_its_rule():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    first, second = x[1:], x[:-1]
    received = []
    second.grad_fn.register_hook(lambda grad_inputs, grad_outputs: received.append(grad_inputs))
    (first.sum() + second.sum() * 2.0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0, 1.0])
    assert len(received) == 1 and received[0][0] is not None


def test_create_graph_keeps_the_slices_differentiable():
    x = dg.tensor(X, requires_grad=True)
    (g,) = dg.grad(_rosenbrock(x), x, create_graph=True)
    (hv,) = dg.grad(g, x, grad_outputs=dg.tensor(V))
    np.testing.assert_allclose(hv.numpy(), _rosenbrock_hvp(X, V), rtol=1e-10)


def test_a_failed_backward_leaves_grad_as_it_was():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.grad = dg.tensor([5.0, 5.0, 5.0])
    failing = x[1:] * 1.0

    def hook(g):
        raise ValueError("hook failed")

    failing.register_hook(hook)
    with pytest.raises(ValueError, match="hook failed"):
        (failing.sum() + x[:-1].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])


# -- a broadcast of one value times a number ----------------------------------------------------
@pytest.mark.fastpath
def test_broadcast_product_keeps_one_value_and_the_dtype():
    g = dg.tensor(np.float32(1.5)).expand(4, 3)
    product = fastpath.broadcast_product(g, 2.0)
    assert product.dtype == np.float32 and product.shape == (4, 3)
    assert not any(product._data.strides)
    np.testing.assert_array_equal(product.numpy(), np.full((4, 3), 3.0, np.float32))


@pytest.mark.parametrize("g", [
    dg.ones(3),                                          # a full array
    dg.tensor(1.0),                                      # one element
    dg.tensor(1.0, requires_grad=True).expand(3),        # tracked
])
def test_broadcast_product_declines_other_gradients(g):
    assert fastpath.broadcast_product(g, 2.0) is None


def test_broadcast_product_declines_a_gradient_with_a_tangent():
    import dualgrad.forward_ad as fwAD

    with fwAD.dual_level():
        g = fwAD.make_dual(dg.tensor(1.0), dg.tensor(1.0)).expand(3)
        assert fastpath.broadcast_product(g, 2.0) is None


@pytest.mark.parametrize("loss", [
    lambda x: (3.0 * x).sum(),
    lambda x: (x ** 2).sum() * 0.5,
    lambda x: (x ** 2).mean(),
    lambda x: dg.square(x - 1.0).mean(),
    lambda x: ((x ** 2) * 4.0).sum(),
])
def test_grad_returns_dense_writable_gradients(loss):
    x = dg.tensor(X.reshape(3, 3), requires_grad=True)
    (g,) = dg.grad(loss(x), x)
    assert g._data.flags.writeable and all(g._data.strides)
    g += 1.0  # (a read-only broadcast would refuse this)
    loss(x).backward()
    x.grad.zero_()
    loss(x).backward(create_graph=True)
    assert x.grad._data.flags.writeable
    x.grad.zero_()


def test_functional_api_returns_dense_writable_gradients():
    x = dg.tensor(X[:3])
    for result in (vjp(lambda x: (3.0 * x).sum(), x)[1], func_grad(lambda x: (x ** 2).mean())(x),
                   dg.grad((3.0 * x.requires_grad_()).sum(), x)[0]):
        assert result._data.flags.writeable and all(result._data.strides)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_square_and_mean_gradients_against_finite_differences(dtype):
    a = X.reshape(3, 3).astype(dtype)
    for loss, grad in [
        (lambda x: (x ** 2).mean(), lambda a: 2 * a / a.size),
        (lambda x: dg.square(x).sum() * 3.0, lambda a: 6 * a),
        (lambda x: ((x - 0.5) ** 2).sum(axis=0).sum(), lambda a: 2 * (a - 0.5)),
    ]:
        x = dg.tensor(a, requires_grad=True)
        (g,) = dg.grad(loss(x), x)
        assert g.dtype == dtype
        np.testing.assert_allclose(g.numpy(), grad(a), rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_square_of_complex_keeps_the_conjugate():
    a, b = np.array([1.0, -0.5]), np.array([2.0, 1.0])
    z = dg.tensor(a + 1j * b, requires_grad=True)
    # L = Re(z^2) + Im(z^2) = a^2 - b^2 + 2ab; the gradient is dL/da + i dL/db
    for loss in (lambda z: (z ** 2).real.sum() + (z ** 2).imag.sum(),
                 lambda z: dg.square(z).real.sum() + dg.square(z).imag.sum()):
        (g,) = dg.grad(loss(z), z)
        np.testing.assert_allclose(g.numpy(), (2 * a + 2 * b) + 1j * (2 * a - 2 * b), rtol=1e-12)


def test_second_order_through_a_doubled_gradient():
    h = hessian(lambda x: (x ** 2).sum() * 1.5 + (x ** 3).mean(), dg.tensor(X[:4]))
    expected = np.diag(3.0 + 6.0 * X[:4] / 4)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-12)


# -- the negated gradient -----------------------------------------------------------------------
@pytest.mark.fastpath
def test_negation_of_a_private_gradient_is_in_place(monkeypatch):
    done = _spy(monkeypatch, registry, "scale_into")
    x = dg.tensor(X, requires_grad=True)
    (g,) = dg.grad(((1.0 - x) ** 2).sum(), x)
    np.testing.assert_allclose(g.numpy(), -2.0 * (1.0 - X), rtol=1e-12)
    assert done == [True]


@pytest.mark.fastpath
def test_negation_of_a_private_gradient_and_its_tangent_in_hvp(monkeypatch):
    done = _spy(monkeypatch, registry, "scale_into")
    value, product = hvp(lambda x: ((1.0 - x) ** 3).sum(), dg.tensor(X), dg.tensor(V))
    np.testing.assert_allclose(product.numpy(), 6.0 * (1.0 - X) * V, rtol=1e-12)
    assert True in done


def test_a_gradient_shared_by_both_operands_is_not_negated_in_place():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    b = dg.tensor([3.0, 5.0], requires_grad=True)
    ((a - b) * dg.tensor([2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [-2.0, -3.0])


def test_a_gradient_the_user_holds_is_not_negated():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = 1.0 - x
    v = dg.tensor([1.0, 10.0])
    (g,) = dg.grad(y, x, grad_outputs=v)
    np.testing.assert_array_equal(g.numpy(), [-1.0, -10.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 10.0])


def test_grad_fn_called_directly_does_not_write_its_argument():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    g = dg.tensor([1.0, 3.0])
    result = (1.0 - x).grad_fn(g)
    np.testing.assert_array_equal(result[1].numpy(), [-1.0, -3.0])
    np.testing.assert_array_equal(g.numpy(), [1.0, 3.0])


# -- a square's vjp in the gradient's own memory ------------------------------------------------
def _record_scales(monkeypatch):
    """Spy on ``scale_into`` as the op rules call it: ``(c, done)`` per call."""
    calls = []
    original = registry.scale_into

    def spy(g, c):
        done = original(g, c)
        calls.append((c, done))
        return done

    monkeypatch.setattr(registry, "scale_into", spy)
    import dualgrad.ops.elementwise.core as elementwise

    monkeypatch.setattr(elementwise, "scale_into", spy)
    return calls


@pytest.mark.fastpath
@pytest.mark.parametrize("square", [lambda x: x ** 2, dg.square])
def test_square_of_an_owned_gradient_is_computed_in_its_memory(monkeypatch, square):
    calls = _record_scales(monkeypatch)
    w = dg.tensor(V)
    x = dg.tensor(X, requires_grad=True)
    (g,) = dg.grad((w * square(x)).sum(), x)
    np.testing.assert_allclose(g.numpy(), 2.0 * V * X, rtol=1e-12)
    assert (2.0, True) in calls


@pytest.mark.fastpath
def test_square_in_hvp_doubles_the_gradient_and_its_tangent_in_place(monkeypatch):
    calls = _record_scales(monkeypatch)
    value, product = hvp(_rosenbrock, dg.tensor(X), dg.tensor(V))
    np.testing.assert_allclose(product.numpy(), _rosenbrock_hvp(X, V), rtol=1e-10)
    assert (2.0, True) in calls


def test_square_under_create_graph_stays_differentiable():
    w = dg.tensor(V)
    x = dg.tensor(X, requires_grad=True)
    (g,) = dg.grad((w * x ** 2).sum(), x, create_graph=True)
    (second,) = dg.grad(g, x, grad_outputs=dg.ones(9))
    np.testing.assert_allclose(second.numpy(), 2.0 * V, rtol=1e-12)


def test_a_gradient_the_user_passed_is_not_doubled_in_place():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    v = dg.tensor([1.0, 10.0])
    (g,) = dg.grad(x ** 2, x, grad_outputs=v)
    np.testing.assert_array_equal(g.numpy(), [2.0, 40.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 10.0])
    (g,) = dg.grad(dg.square(x), x, grad_outputs=v)
    np.testing.assert_array_equal(v.numpy(), [1.0, 10.0])
