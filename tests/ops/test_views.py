"""Views share memory and the version counter with their base; in-place ops on a
view re-base the base's graph (CopySlices), and in-place ops on the base are seen
through its views, in values and in gradients."""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order

import dualgrad as dg

RNG = np.random.default_rng(2)

# name -> a view of a (2, 3, 4) tensor
VIEWS = {
    "slice": lambda t: t[1:, ::2],
    "int_index": lambda t: t[1],
    "full_int_index": lambda t: t[1, 2, 3],
    "diagonal": lambda t: t.diagonal(0, 1, 2),
    "ellipsis_none": lambda t: t[..., None, 1:3],
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(3, 8),
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(2, 0, 1),
    "T": lambda t: t.T,
    "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t[:1].squeeze(0),
    "chain": lambda t: t.transpose(0, 1)[1:].reshape(2, 2, 4)[:, 1],
}
SHAPE = (2, 3, 4)


@pytest.mark.parametrize("name", sorted(VIEWS) + ["expand", "detach"])
def test_views_share_memory_and_version_counter(name):
    base = dg.zeros(*SHAPE)
    others = {"expand": lambda t: t[:1].expand(3, 3, 4), "detach": lambda t: t.detach()}
    make = others.get(name, VIEWS.get(name))
    view = make(base)
    assert np.shares_memory(view.numpy(), base.numpy())
    base.add_(1)
    assert base._version == view._version == 1
    np.testing.assert_allclose(view.numpy(), 1.0)
    if name not in ("expand", "detach"):
        assert view._base is base
        view.mul_(3)
        assert base._version == view._version == 2
        assert np.all(make(base).numpy() == 3.0)


def test_reshape_that_must_copy_is_not_a_view():
    base = dg.zeros(3, 4)
    copy = base.T.reshape(12)
    assert copy._base is None
    base.add_(1)
    assert copy._version == 0 and np.all(copy.numpy() == 0.0)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_inplace_on_view_gradients(name):
    make = VIEWS[name]

    def call(x, w):
        base = x * 1.0
        view = make(base)
        view.mul_(make(w))
        view.sin_()
        return base * x

    arrays = [RNG.standard_normal(SHAPE), RNG.standard_normal(SHAPE)]
    check_first_order(call, arrays)
    check_second_order(call, arrays)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_inplace_on_view_matches_out_of_place_formulation(name):
    make = VIEWS[name]
    x0, w0 = RNG.standard_normal(SHAPE), RNG.standard_normal(SHAPE)
    marks = dg.zeros(*SHAPE)
    make(marks)[...] = 1.0  # ones on the view's region
    x, w = dg.tensor(x0, requires_grad=True), dg.tensor(w0, requires_grad=True)
    base = x * 1.0
    view = make(base)
    view.mul_(make(w))
    assert base.grad_fn.name() == "torch::autograd::CopySlices"
    m = marks
    expected = x * (1 - m) + x * w * m
    np.testing.assert_allclose(base.detach().numpy(), expected.detach().numpy())
    np.testing.assert_allclose(view.detach().numpy(), make(expected).detach().numpy())
    u = dg.tensor(RNG.standard_normal(SHAPE))
    got = dg.grad(base, (x, w), u, retain_graph=True)
    want = dg.grad(expected, (x, w), u, retain_graph=True)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-12)
    # the view's own graph is rebuilt from the re-based base
    gv = dg.grad(view, (x, w), dg.ones(*view.shape))
    ev = dg.grad(make(expected), (x, w), dg.ones(*view.shape))
    for g, e in zip(gv, ev, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-12)


def test_inplace_on_base_is_seen_through_views_in_gradients():
    def call(x):
        base = x * 1.0
        view = base[1:]
        base.mul_(x)
        return view * 2.0

    x0 = RNG.standard_normal(4)
    x = dg.tensor(x0, requires_grad=True)
    np.testing.assert_allclose(call(x).detach().numpy(), 2 * x0[1:] ** 2)
    check_first_order(call, [x0])
    check_second_order(call, [x0])


def test_inplace_on_one_view_is_seen_by_an_overlapping_sibling():
    def call(x):
        base = x * 1.0
        left, right = base[:3], base[1:]
        left.mul_(3.0)
        right.exp_()
        return base, left

    x0 = RNG.standard_normal(4)
    x = dg.tensor(x0, requires_grad=True)
    base, left = call(x)
    expected = np.exp(x0 * np.array([3., 3., 3., 1.]))
    expected[0] = 3 * x0[0]
    np.testing.assert_allclose(base.detach().numpy(), expected)
    np.testing.assert_allclose(left.detach().numpy(), expected[:3])
    check_first_order(call, [x0])
    check_second_order(call, [x0])


def test_inplace_on_a_view_of_a_constant_base_makes_the_base_require_grad():
    w = dg.tensor([1., 2.], requires_grad=True)
    base = dg.zeros(2, 2)
    row = base[0]
    row.add_(w)
    assert base.requires_grad and base.grad_fn.name() == "torch::autograd::CopySlices"
    assert row.requires_grad
    (base * dg.tensor([[1., 2.], [3., 4.]])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1., 2.])


def test_view_grad_fn_after_inplace_names_the_view_op():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    base = x * 1.0
    view = base[1:]
    view.mul_(2)
    assert view.grad_fn.name() == "SliceBackward0"  # (torch's is AsStridedBackward0: it does not replay views)
    assert base.grad_fn.name() == "torch::autograd::CopySlices"


def test_detach_shares_version_so_saved_values_are_protected():
    a = dg.tensor([1., 2.], requires_grad=True) * 1.0
    b = a * a
    a.detach().zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_inplace_on_a_diagonal_view_writes_through_to_the_base():
    x = dg.tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    base = x * 1.0
    base.diagonal().mul_(2.0)
    expected = x.detach().numpy() * (1 + np.eye(3))
    np.testing.assert_allclose(base.detach().numpy(), expected)
    assert base.grad_fn.name() == "torch::autograd::CopySlices"
    base.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 + np.eye(3))


def test_a_full_integer_index_is_a_view_that_sees_base_changes():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x * 1.0
    first = base[0]
    assert first.shape == () and first._base is base
    base.mul_(x)  # base = x ** 2, seen through first
    assert first.item() == 1.0 and first._version == base._version == 1
    first.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 0.0])


def test_writing_into_a_full_integer_index_changes_the_base():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x * 1.0
    base[2].mul_(x[1])
    np.testing.assert_allclose(base.detach().numpy(), [1.0, 2.0, 6.0])
    base.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 4.0, 2.0])


def test_real_and_imag_of_a_complex_tensor_are_views_as_torchs():
    """torch 2.13: ``z.real`` is ``view_as_real(z).select(-1, 0)``; writes through it re-base z's
    graph (CopySlices); a real tensor's ``real`` is the tensor itself, its ``imag`` read-only zeros."""
    z = dg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = z * 1
    r, i = w.real, w.imag
    assert r._base is w and i._base is w
    assert r.grad_fn.name() == "SelectBackward0"
    assert i.grad_fn.next_functions[0][0].name() == "ViewAsRealBackward0"
    r.mul_(2)
    assert w.grad_fn.name() == "torch::autograd::CopySlices"
    assert w.tolist() == [2 + 2j, 6 - 1j]
    (w.abs() ** 2).sum().backward()
    assert z.grad.tolist() == [8 + 4j, 24 - 2j]

    plain = dg.tensor([1 + 2j])
    plain.real[0] = 7.0
    plain.imag = dg.tensor([5.0])
    assert plain.tolist() == [7 + 5j]
    plain.real = 1
    assert plain.tolist() == [1 + 5j]

    x = dg.tensor([1.0, 2.0], requires_grad=True)
    assert x.real is x and dg.real(x) is x
    # (the attribute is NumPy's read-only zeros, so that duck-array libraries' hasattr(t, "imag") holds;
    # the function keeps torch's error)
    assert x.imag.tolist() == [0.0, 0.0] and not x.imag.requires_grad
    with pytest.raises(RuntimeError, match="read-only"):
        x.imag[0] = 1.0
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes."):
        dg.imag(x)
    np.testing.assert_array_equal(np.imag(x.detach()).numpy(), [0.0, 0.0])  # (NumPy's np.imag: zeros)


def test_an_empty_slice_is_a_view_as_torchs():
    x = dg.ones(3, requires_grad=True)
    y = x * 1
    empty = y[2:2]
    assert empty._base is y and empty.grad_fn.name() == "SliceBackward0"
    empty.add_(1)  # (writes nothing, but re-bases y as torch's)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    assert dg.ones(0, 3).view(3, 0)._base is not None
    assert dg.ones(0, 3).clone()._base is None
