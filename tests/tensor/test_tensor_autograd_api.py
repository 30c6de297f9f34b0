"""The Tensor autograd API (issue 2, item 6)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad as dg


def test_requires_grad_and_is_leaf():
    x = dg.ones(2)
    assert not x.requires_grad and x.is_leaf
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert (dg.ones(2) * 2).is_leaf  # results of untracked ops are leaves


def test_requires_grad_of_non_leaf_cannot_be_changed():
    y = dg.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    assert y.requires_grad and y.grad_fn is not None


def test_grad_fn_names():
    x = dg.ones(2, requires_grad=True)
    assert x.grad_fn is None
    names = {"AddBackward0": x + 1, "MulBackward0": x * x, "SubBackward0": x - 1,
             "DivBackward0": x / 2, "NegBackward0": -x, "PowBackward0": x ** 2,
             "ExpBackward0": x.exp(), "SumBackward0": x.sum(), "MeanBackward0": x.mean()}
    for name, t in names.items():
        assert t.grad_fn.name() == name


def test_detach_shares_data_and_leaves_the_graph():
    x = dg.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    assert np.shares_memory(d.numpy(), y.detach().numpy())
    assert y.grad_fn is not None  # y itself is unchanged


def test_detach_in_place():
    x = dg.ones(2, requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None
    z = (y * x).sum()
    z.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_grad_keeps_grad_of_a_non_leaf():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])
    x.retain_grad()  # a no-op on leaves
    assert not x.retains_grad


def test_register_hook_sees_and_replaces_the_gradient():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    handle = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[1.0, 1.0]] and x.grad.tolist() == [20.0, 20.0]
    handle.remove()
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: g * 10).remove()
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_register_hook_on_leaf_changes_what_is_accumulated():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]
    handle.remove()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        dg.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook_runs_after_accumulation():
    p = dg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (p * 2).sum().backward()
    (p * 2).sum().backward()
    assert seen == [[2.0, 2.0], [4.0, 4.0]]
    handle.remove()
    (p * 2).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (p * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_data_is_a_detached_alias():
    x = dg.ones(2, requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d.numpy()[0] = 5.0
    assert x.detach().tolist() == [5.0, 1.0]
    x.data = dg.zeros(2)
    assert x.detach().tolist() == [0.0, 0.0] and x.requires_grad


def test_variable_shim_returns_a_tensor_without_warning_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = dg.Variable(dg.ones(2), requires_grad=True)
        w = dg.autograd.Variable(dg.ones(2))
    assert type(v) is dg.Tensor and v.requires_grad and v.is_leaf
    assert type(w) is dg.Tensor and not w.requires_grad


# -- behaviours checked against torch 2.13 (messages and warnings as torch words them) ---------------
def test_reading_grad_of_a_non_leaf_warns_as_torch():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    (y * y).sum().backward(retain_graph=True)
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor"):
        assert y.grad is None
    y.retain_grad()
    (y * y).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad.tolist() == [4., 8.]  # 2y, retained: no warning
        assert x.grad.tolist() == [16., 32.]  # a leaf: no warning


def test_requires_grad_true_on_a_non_leaf_is_allowed_false_is_not():
    y = dg.tensor([1.], requires_grad=True) * 2
    assert y.requires_grad_(True) is y and y.requires_grad
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_backward_and_grad_messages_match_torch():
    x = dg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `backward\(\)` cannot be empty\."):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `grad\(\)` cannot be empty\."):
        dg.autograd.grad((x * 2).sum(), [])
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        dg.tensor([1, 2], requires_grad=True)


def test_grad_only_inputs_false_is_deprecated_and_ignored():
    x = dg.tensor([1., 2.], requires_grad=True)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = dg.autograd.grad((x * 3).sum(), x, only_inputs=False)
    assert g.tolist() == [3., 3.] and x.grad is None


def test_detach_in_place_refuses_a_view_as_torch():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    for view in (y[:2], x[:2], y.reshape(3), dg.ones(3)[:2], y.detach()[:2]):
        with pytest.raises(RuntimeError, match=r"^Can't detach views in-place. Use detach\(\) instead.$"):
            view.detach_()
    assert y[[0, 1]].detach_().grad_fn is None  # (advanced indexing copies: not a view)
    assert y.detach().detach_().requires_grad is False
