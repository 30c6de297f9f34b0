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
