"""Inference tensors: what ``inference_mode`` makes, and torch's errors when one is used outside it
(messages as torch 2.x gives them)."""

import pytest

import dualgrad as dg


def made_in_inference_mode():
    x = dg.ones(2)
    with dg.inference_mode():
        return dg.ones(2), x * 2, (x * 2)[0:1]


def test_is_inference():
    x = dg.ones(2)
    factory, computed, view = made_in_inference_mode()
    assert factory.is_inference() and computed.is_inference() and view.is_inference()
    assert computed[0:1].is_inference()  # a view of one, made outside the mode
    with dg.no_grad():
        assert not (x * 2).is_inference()
    with dg.inference_mode(False):
        assert not (x * 2).is_inference()
    assert not x.is_inference() and not (computed + 1).is_inference()


def test_saving_an_inference_tensor_for_backward_raises():
    _, z, _ = made_in_inference_mode()
    a = dg.ones(2, requires_grad=True)
    assert (a + z).requires_grad  # nothing saved
    for fn in (lambda: a * z, lambda: a @ z):
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            fn()


def test_requires_grad_outside_the_mode_raises():
    _, z, _ = made_in_inference_mode()
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        z.requires_grad_()
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        z.requires_grad = True
    z.requires_grad_(False)


def test_in_place_change_outside_the_mode_raises():
    _, z, _ = made_in_inference_mode()
    changes = (lambda: z.add_(1), lambda: z.zero_(), lambda: z.copy_(dg.zeros(2)),
               lambda: z.__setitem__(0, 1.0), lambda: z[0:1].add_(1))
    for change in changes:
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            change()
    with dg.no_grad(), pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        z.add_(1)
    assert z.tolist() == [2.0, 2.0]
    z.data = dg.zeros(2)  # allowed
    with dg.inference_mode():
        z.add_(1)
    assert z.tolist() == [1.0, 1.0]


def test_views_detach_and_data_of_an_inference_tensor_are_inference_tensors():
    with dg.inference_mode():
        x = dg.ones(3)
    w = dg.ones(3, requires_grad=True)
    derived = (x[:2], x.view(3), x[0], x.split(2)[0], x.detach(), x.data, x.detach()[1:])
    assert all(t.is_inference() for t in derived) and not x.clone().is_inference()
    uses = (lambda: (x[:2] * w[:2]).sum().backward(), lambda: x.view(3) * w, lambda: w * x[0],
            lambda: x.split(2)[0] * w[:2], lambda: x.detach() * w, lambda: x.data * w)
    for use in uses:
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            use()
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        x[:2].requires_grad_()
    assert (x.clone() * w).requires_grad


def test_a_view_made_in_inference_mode_of_a_normal_tensor_is_normal():
    normal = dg.ones(4)
    w = dg.ones(2, requires_grad=True)
    with dg.inference_mode():
        views = (normal[:2], normal.view(2, 2)[0], *normal.split(2), normal.unbind(0)[0])
        assert (normal * 2).is_inference()
    assert not any(v.is_inference() for v in views)
    (views[0] * w).sum().backward()
    views[0].add_(1)
    assert normal.tolist() == [2.0, 2.0, 1.0, 1.0]


def test_changing_in_place_outside_the_mode_a_view_made_in_it_raises():
    base = dg.ones(3, requires_grad=True) * 1
    with dg.inference_mode():
        view = base[:2]
    with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace "
                                           "in normal mode"):
        view.add_(1)
    with dg.no_grad():
        view.mul_(2)
    with dg.inference_mode():
        view.mul_(2)
    assert base.tolist() == [4.0, 4.0, 1.0]
