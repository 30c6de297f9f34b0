"""Bad input (issue 2): a clear error of torch's type and wording, and state left unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg


@pytest.fixture
def leaves():
    """Two leaves with gradients already accumulated, to check nothing changes on failure."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    w = dg.tensor([3.0, 4.0], requires_grad=True)
    x.grad, w.grad = dg.tensor([10.0, 20.0]), dg.tensor([30.0, 40.0])
    return x, w


def assert_grads_unchanged(x, w):
    assert x.grad.tolist() == [10.0, 20.0] and w.grad.tolist() == [30.0, 40.0]


def test_backward_of_non_scalar_needs_a_gradient(leaves):
    x, w = leaves
    y = x * w
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        dg.grad(y, x)
    assert_grads_unchanged(x, w)
    y.backward(dg.ones(2))  # the graph is intact
    assert x.grad.tolist() == [13.0, 24.0]


def test_second_backward_through_freed_graph(leaves):
    x, w = leaves
    y = (x * w).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"backward through the graph a second time.*retain_graph=True"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        dg.grad(y, x)
    assert x.grad.tolist() == [13.0, 24.0] and w.grad.tolist() == [31.0, 42.0]


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_and_bool_tensors_cannot_require_grad(dtype):
    message = "Only Tensors of floating point and complex dtype can require gradients"
    with pytest.raises(RuntimeError, match=message):
        dg.tensor([1, 0], dtype=dtype, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        dg.ones(2, dtype=dtype, requires_grad=True)
    t = dg.tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError, match=message):
        t.requires_grad = True
    assert not t.requires_grad


def test_output_that_does_not_require_grad(leaves):
    x, w = leaves
    message = "does not require grad and does not have a grad_fn"
    with pytest.raises(RuntimeError, match=message):
        dg.grad(dg.ones(2).sum(), x)
    with pytest.raises(RuntimeError, match=message):
        dg.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match=message):
        with dg.no_grad():
            y = (x * w).sum()
        y.backward()
    assert_grads_unchanged(x, w)


def test_input_not_reached_by_the_graph(leaves):
    x, w = leaves
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph.*allow_unused=True"):
        dg.grad(y, [x, w], retain_graph=True)
    gx, gw = dg.grad(y, [x, w], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 2.0] and gw is None
    gx, gw = dg.grad(y, [x, w], allow_unused=True, materialize_grads=True)
    assert gw.tolist() == [0.0, 0.0] and gw.dtype == w.dtype
    assert_grads_unchanged(x, w)


def test_gradient_of_wrong_shape_names_both_shapes(leaves):
    x, w = leaves
    y = x * w
    with pytest.raises(RuntimeError, match=r"Mismatch in shape.*\(3,\).*\(2,\)"):
        y.backward(dg.ones(3))
    with pytest.raises(RuntimeError, match=r"Mismatch in shape.*\(2, 1\).*\(2,\)"):
        dg.grad(y, x, grad_outputs=dg.ones(2, 1))
    assert_grads_unchanged(x, w)
    y.backward(dg.ones(2))
    assert x.grad.tolist() == [13.0, 24.0]


def test_operands_that_do_not_broadcast_name_both_shapes(leaves):
    x, w = leaves
    with pytest.raises(RuntimeError, match=r"(?s)add.*\(2,\).*\(3,\)"):
        x + dg.ones(3)
    with pytest.raises(RuntimeError, match=r"(?s)mul.*\(2, 3\).*\(2,\)"):
        dg.ones(2, 3, requires_grad=True) * w
    assert_grads_unchanged(x, w)


def test_assigning_grad_of_wrong_shape_or_dtype(leaves):
    x, w = leaves
    with pytest.raises(RuntimeError, match=r"gradient of size .\[3\]. to a tensor of size .\[2\]."):
        x.grad = dg.ones(3)
    with pytest.raises(RuntimeError, match=r"gradient with dtype .float32. to a tensor with dtype .float64."):
        x.grad = dg.ones(2, dtype="float32")
    with pytest.raises(TypeError, match="Tensor or None"):
        x.grad = np.ones(2)
    assert_grads_unchanged(x, w)


def test_failed_backward_leaves_every_grad_unchanged_and_frees_as_torch(leaves):
    """``.grad`` is committed only after a whole pass; saved tensors are freed as each node runs
    (torch's peak memory), so a failed pass leaves its graph partly freed, as torch's does."""
    x, w = leaves
    u = x * 2  # runs last: the failure comes after w's gradient is known
    v = w.exp()  # its node ran (and freed its saved output) before the failure
    handle = u.register_hook(lambda g: 1 / 0)
    y = (u + v).sum()
    with pytest.raises(ZeroDivisionError):
        y.backward()
    assert_grads_unchanged(x, w)
    handle.remove()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    assert_grads_unchanged(x, w)


def test_failed_backward_with_retain_graph_can_be_retried(leaves):
    x, w = leaves
    u = x * 2
    v = w.exp()
    handle = u.register_hook(lambda g: 1 / 0)
    y = (u + v).sum()
    with pytest.raises(ZeroDivisionError):
        y.backward(retain_graph=True)
    assert_grads_unchanged(x, w)
    handle.remove()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 22.0])
    np.testing.assert_allclose(w.grad.numpy(), [30.0, 40.0] + np.exp([3.0, 4.0]))


def test_wrong_number_of_gradients(leaves):
    x, w = leaves
    with pytest.raises(RuntimeError, match="got 1 tensors and 2 gradients"):
        dg.backward([x * w], [dg.ones(2), dg.ones(2)])
    assert_grads_unchanged(x, w)


def test_grad_of_input_that_does_not_require_grad(leaves):
    x, w = leaves
    with pytest.raises(RuntimeError, match="does not require grad"):
        dg.grad((x * 2).sum(), dg.ones(2))
    assert_grads_unchanged(x, w)
