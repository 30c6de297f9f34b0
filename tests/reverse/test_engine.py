"""The reverse engine (issue 2, item 4): backward/grad semantics, memory, gradient layouts."""

from __future__ import annotations

import gc
import inspect
import math
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg


@pytest.fixture
def gc_disabled():
    """Memory must come back by reference counting alone."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


# -- signatures ------------------------------------------------------------------------------
def test_signatures_follow_torch():
    assert list(inspect.signature(dg.Tensor.backward).parameters) == [
        "self", "gradient", "retain_graph", "create_graph", "inputs"]
    params = inspect.signature(dg.backward).parameters
    assert list(params)[:4] == ["tensors", "grad_tensors", "retain_graph", "create_graph"]
    assert "inputs" in params
    params = inspect.signature(dg.grad).parameters
    assert list(params)[:5] == ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph"]
    assert params["allow_unused"].default is None and params["materialize_grads"].default is False
    assert params["create_graph"].default is False and params["retain_graph"].default is None


# -- what gets written where -------------------------------------------------------------------
def test_backward_accumulates_into_leaves_only():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18 * np.array([1.0, 2.0]))
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


def test_backward_accumulates_over_calls():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (x ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * 2 * np.array([1.0, 2.0]))


def test_grad_never_touches_dot_grad():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    (gx,) = dg.grad((x ** 3).sum(), x)
    assert x.grad is None
    np.testing.assert_allclose(gx.numpy(), [3.0, 12.0])
    x.grad = dg.ones(2)
    dg.grad((x ** 3).sum(), [x])
    assert x.grad.tolist() == [1.0, 1.0]


def test_grad_with_several_outputs_and_grad_outputs():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2, x ** 2
    (gx,) = dg.grad([a, b], [x], grad_outputs=[dg.tensor([1.0, 1.0]), dg.tensor([3.0, 0.5])])
    np.testing.assert_allclose(gx.numpy(), [2 + 3 * 2, 2 + 0.5 * 4])


def test_backward_inputs_restricts_accumulation():
    x, w = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor(3.0, requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad.item() == 3.0
    dg.backward((x * w).sum(), inputs=x)
    assert x.grad.tolist() == [3.0, 3.0] and w.grad.item() == 3.0


def test_dot_grad_does_not_alias_the_given_gradient():
    x = dg.zeros(2, requires_grad=True)
    g = dg.ones(2)
    x.backward(g)
    x.backward(g)
    assert g.tolist() == [1.0, 1.0] and x.grad.tolist() == [2.0, 2.0]


def test_gradient_accumulates_when_a_tensor_is_used_twice():
    x = dg.tensor(3.0, requires_grad=True)
    y = x * x + x.sin() * x
    (gx,) = dg.grad(y, x)
    assert math.isclose(gx.item(), 2 * 3.0 + math.cos(3.0) * 3.0 + math.sin(3.0))


# -- retain_graph ---------------------------------------------------------------------------------
def test_retain_graph_defaults_to_create_graph():
    x = dg.tensor(2.0, requires_grad=True)
    y = x.exp()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()
    y = x.exp()
    y.backward(create_graph=True)  # retains the graph
    y.backward()
    y = x.exp()
    y.backward(retain_graph=True)
    y.backward()


def test_saved_buffers_are_released_after_backward(gc_disabled):
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    out = a.sin().sum()  # SinBackward0 saves a
    ref = weakref.ref(a)
    del a
    assert ref() is not None
    out.backward(retain_graph=True)
    assert ref() is not None
    out.backward()
    assert ref() is None and out.grad_fn is not None


# -- higher order ------------------------------------------------------------------------------
def nth_derivatives(f, x0: float, n: int) -> list[float]:
    """f', f'', ..., f^(n) at x0 by repeated create_graph=True."""
    x = dg.tensor(x0, requires_grad=True)
    y, values = f(x), []
    for _ in range(n):
        (y,) = dg.grad(y, x, create_graph=True)
        values.append(y.item())
    return values


@given(st.floats(-2.0, 2.0))
def test_higher_order_derivatives_of_polynomial(x0):
    np.testing.assert_allclose(nth_derivatives(lambda x: x ** 5, x0, 5),
                               [5 * x0 ** 4, 20 * x0 ** 3, 60 * x0 ** 2, 120 * x0, 120], atol=1e-9)


@given(st.floats(-3.0, 3.0))
def test_higher_order_derivatives_of_transcendental_functions(x0):
    np.testing.assert_allclose(nth_derivatives(dg.sin, x0, 4),
                               [math.cos(x0), -math.sin(x0), -math.cos(x0), math.sin(x0)], atol=1e-12)
    e = math.exp(x0)
    np.testing.assert_allclose(nth_derivatives(lambda x: (2 * x).exp(), x0, 4),
                               [2 * e ** 2, 4 * e ** 2, 8 * e ** 2, 16 * e ** 2], rtol=1e-12)
    np.testing.assert_allclose(nth_derivatives(lambda x: x * x.tanh(), x0, 3)[0],
                               math.tanh(x0) + x0 * (1 - math.tanh(x0) ** 2), rtol=1e-12)


def test_second_order_of_multivariate_function_is_the_hessian():
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (g,) = dg.grad((x[0] * x[1] ** 2 * x[2].exp()), x, create_graph=True)
    rows = [dg.grad(g[i], x, retain_graph=True)[0].numpy() for i in range(3)]
    a, b, c = 0.5, -1.0, 2.0
    e = math.exp(c)
    expected = [[0, 2 * b * e, b * b * e], [2 * b * e, 2 * a * e, 2 * a * b * e],
                [b * b * e, 2 * a * b * e, a * b * b * e]]
    np.testing.assert_allclose(rows, expected, rtol=1e-12)


def test_create_graph_backward_makes_differentiable_dot_grad():
    x = dg.tensor(1.5, requires_grad=True)
    (x ** 3).backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    (g2,) = dg.grad(x.grad, x)
    assert math.isclose(g2.item(), 6 * 1.5)


# -- depth and memory ------------------------------------------------------------------------------
def test_long_chain_does_not_recurse():
    x = dg.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y  # freeing the chain must not recurse either


def test_no_reference_cycles_between_nodes_and_tensors(gc_disabled):
    x = dg.ones(3, requires_grad=True)
    y = (x * 2).exp()
    z = (y * y).sin().sum()
    refs = [weakref.ref(t) for t in (y, z)] + [weakref.ref(z.grad_fn), weakref.ref(y.grad_fn)]
    del y, z
    assert all(r() is None for r in refs)
    assert x.grad is None


def test_memory_returns_after_backward_and_release(gc_disabled):
    x = dg.ones(3, requires_grad=True)
    z = ((x * 2).exp() * x).tanh().sum()
    node_ref = weakref.ref(z.grad_fn)
    z.backward(retain_graph=True)
    del z
    assert node_ref() is None


def test_graph_of_create_graph_is_freed(gc_disabled):
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = dg.grad(y, x, create_graph=True)
    refs = [weakref.ref(g.grad_fn), weakref.ref(y.grad_fn)]
    del g, y
    assert all(r() is None for r in refs)


# -- default gradient layouts --------------------------------------------------------------------
def test_rule1_dense_non_row_major_param_gets_matching_strides():
    p = dg.from_numpy(np.asfortranarray(np.arange(12.0).reshape(3, 4))).requires_grad_()
    (p * p).sum().backward()
    assert p.grad.strides == p.strides and p.grad.numpy().flags.f_contiguous
    np.testing.assert_allclose(p.grad.numpy(), 2 * np.arange(12.0).reshape(3, 4))
    q = dg.from_numpy(np.ones((4, 3)).T).requires_grad_()
    (q * 3).sum().backward()
    assert q.grad.strides == q.strides


def test_rule2_non_dense_param_gets_row_major_grad():
    p = dg.from_numpy(np.ones((3, 8))[:, ::2]).requires_grad_()
    (p * 2).sum().backward()
    assert p.grad.numpy().flags.c_contiguous and p.grad.shape == (3, 4)
    np.testing.assert_allclose(p.grad.numpy(), 2.0)


def test_rule3_accumulation_is_in_place_without_create_graph():
    p = dg.from_numpy(np.asfortranarray(np.ones((2, 3)))).requires_grad_()
    (p * 2).sum().backward()
    first = p.grad
    (p * 3).sum().backward()
    assert p.grad is first and first.strides == p.strides
    np.testing.assert_allclose(first.numpy(), 5.0)


def test_rule4_create_graph_replaces_grad_with_new_tensor():
    p = dg.ones(2, 3, requires_grad=True)
    (p * 2).sum().backward()
    first = p.grad
    (p * p).sum().backward(create_graph=True)
    assert p.grad is not first and first.tolist() == [[2.0] * 3] * 2
    np.testing.assert_allclose(p.grad.detach().numpy(), 4.0)
    assert p.grad.grad_fn is not None


def test_setting_grad_to_none_resets_accumulation():
    p = dg.ones(2, requires_grad=True)
    (p * 2).sum().backward()
    p.grad = None
    (p * 5).sum().backward()
    assert p.grad.tolist() == [5.0, 5.0]


def test_float32_gradients_stay_float32():
    p = dg.ones(3, dtype="float32", requires_grad=True)
    (p * 0.5 + p.exp()).sum().backward()
    assert p.grad.dtype == np.float32
    (g,) = dg.grad((p * 2.0).sum(), p)
    assert g.dtype == np.float32


def test_backward_from_several_leaves_compares_them_by_identity():
    """torch 2.13: backward([a, b], [ga, gb]) of leaves gives a.grad == ga, b.grad == gb (the ready
    list compared Tensors with ==, which raised for a non-scalar one)."""
    a, b = dg.tensor(1.0, requires_grad=True), dg.ones(3, requires_grad=True)
    dg.autograd.backward([a, b], [dg.tensor(2.0), dg.ones(3)])
    assert a.grad.item() == 2.0 and b.grad.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("turn_off", [lambda x: x.requires_grad_(False), lambda x: x.detach_()])
def test_leaf_that_stopped_requiring_grad_gets_no_grad(turn_off):
    """torch 2.13: its AccumulateGrad does nothing (the leaf's tensor hooks still run)."""
    x = dg.ones(2, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    y = (x * 2).sum()
    turn_off(x)
    y.backward()
    assert x.grad is None and seen == [[2.0, 2.0]]
