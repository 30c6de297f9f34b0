"""In-place ops and views compared with torch 2.13 (expected values and messages pinned from it).

Covers: one value written into an expanded tensor (``fill_``, ``zero_``, ``x[i] = v``), the
in-place shape changes (``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapdims_``,
``swapaxes_``), ``resize_``/``resize_as_``, and ``_is_view``.
"""

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.forward_ad as fwAD

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


# -- writing one value into memory shared by several elements ------------------------------
@pytest.mark.parametrize("write", [lambda e: e.fill_(2.0), lambda e: e.zero_()])
def test_one_value_may_be_written_into_an_expanded_tensor(write):
    base = dg.tensor([[1.0], [5.0]])
    e = base.expand(2, 3)
    write(e)
    assert e._version == base._version == 1
    np.testing.assert_array_equal(base.numpy().ravel(), e.numpy()[:, 0])
    assert len(set(e.numpy().ravel())) == 1


def test_an_element_of_an_expanded_tensor_may_be_assigned():
    e = dg.tensor([1.0]).expand(3)
    e[0] = 2.0  # one element: no overlap within what is written (torch)
    np.testing.assert_array_equal(e.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("write", [lambda e: e.add_(1), lambda e: e.copy_(dg.tensor([1.0, 2.0, 3.0])),
                                   lambda e: e.__setitem__(slice(0, 2), 1.0), lambda e: e[None].__setitem__(0, 1.0),
                                   lambda e: e.fill_(dg.tensor(2.0, requires_grad=True))])
def test_other_writes_into_an_expanded_tensor_raise(write):
    e = dg.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match=OVERLAP):
        write(e)
    assert e._version == 0


def test_item_assignment_into_a_leaf_names_the_view_it_writes_into():
    x = dg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        x[[0]] = 1.0  # (advanced indexing: index_put_ on the leaf itself)


def test_item_assignment_into_an_expanded_tensor_is_differentiable():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    s = dg.tensor(5.0, requires_grad=True)
    y = (w * 1)[:, None].expand(2, 3)
    y[:, 1] = s  # one element of each row: the whole row's memory
    np.testing.assert_array_equal(y.detach().numpy(), np.full((2, 3), 5.0))
    (y * dg.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])  # torch: tensor([0., 0.]), tensor(15.)
    assert s.grad.item() == 15.0


# -- in-place shape changes --------------------------------------------------------------
# (torch 2.13's names of its in-place overloads: the same rules as the out-of-place views)
RESTRIDING = {
    "unsqueeze_": (lambda t: t.unsqueeze_(0), (1, 1, 2), "UnsqueezeBackward1"),
    "squeeze_": (lambda t: t.squeeze_(), (2,), "SqueezeBackward3"),
    "squeeze_dim": (lambda t: t.squeeze_(0), (2,), "SqueezeBackward4"),
    "squeeze_dims": (lambda t: t.squeeze_((0,)), (2,), "SqueezeBackward5"),
    "t_": (lambda t: t.t_(), (2, 1), "TBackward1"),
    "transpose_": (lambda t: t.transpose_(0, 1), (2, 1), "TransposeBackward1"),
    "swapdims_": (lambda t: t.swapdims_(0, 1), (2, 1), "TransposeBackward1"),
    "swapaxes_": (lambda t: t.swapaxes_(0, 1), (2, 1), "TransposeBackward1"),
}


@pytest.mark.parametrize("name", sorted(RESTRIDING))
def test_shape_changes_in_place_as_torch(name):
    change, shape, node = RESTRIDING[name]
    plain = dg.tensor([[1.0, 2.0]])
    assert change(plain) is plain and plain.shape == shape and plain._version == 1 and plain.grad_fn is None

    x = dg.tensor([[1.0, 2.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        change(x)
    assert x.shape == (1, 2) and x._version == 0
    with dg.no_grad():
        change(x)
    assert x.shape == shape and x.is_leaf and x.requires_grad and x._version == 1

    x = dg.tensor([[1.0, 2.0]], requires_grad=True)
    y = x * 1
    change(y)
    assert (y.shape, y.grad_fn.name(), y.is_leaf, y._is_view(), y._version) == (shape, node, False, False, 1)
    (y * dg.arange(1.0, 3.0).reshape(shape)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0]])  # torch: [[1.0, 2.0]]

    y = x * 1
    v = y[:]
    change(v)
    assert v.shape == shape and v._is_view() and v._base is y


@pytest.mark.parametrize("name", sorted(RESTRIDING))
def test_a_tensor_saved_for_backward_may_not_change_shape(name):
    x = dg.tensor([[1.0, 2.0]], requires_grad=True)
    y = x * 1
    z = y.sin()
    RESTRIDING[name][0](y)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*is at version 1; expected version 0"):
        z.sum().backward()


def test_a_view_changed_in_shape_then_in_values_updates_its_base():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = y[:, :1]
    v.t_()
    v.mul_(3)
    assert v.shape == (1, 2) and v._base is y and y.grad_fn.name() == "torch::autograd::CopySlices"
    np.testing.assert_array_equal(y.detach().numpy(), [[3.0, 2.0], [9.0, 4.0]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 1.0], [3.0, 1.0]])  # torch's values


def test_views_taken_before_their_base_changed_shape_refuse_autograd():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    old = y[0]
    y.t_()
    with pytest.raises(RuntimeError, match=r"a view of shape \[2\] cannot be rebuilt from its base of shape \[2, 2\]"):
        old.sum().backward()
    new = y[1]  # a view taken after the change is fine
    new.mul_(10)
    (y * dg.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 30.0], [2.0, 40.0]])  # torch's values


def test_shape_change_in_place_keeps_tangents():
    with fwAD.dual_level():
        y = fwAD.make_dual(dg.tensor([[1.0, 2.0]]), dg.tensor([[3.0, 4.0]])) * 1
        y.t_()
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), [[3.0], [4.0]])


def test_shape_change_in_place_is_refused_inside_vmap():
    with pytest.raises(NotImplementedError, match="unsqueeze_: changing the shape of a tensor in place"):
        dg.vmap(lambda row: row.unsqueeze_(0))(dg.ones(2, 3))


# -- resize_ ------------------------------------------------------------------------------
def test_resize_keeps_the_first_elements():
    x = dg.arange(6.0)
    assert x.resize_(2, 2) is x
    np.testing.assert_array_equal(x.numpy(), [[0.0, 1.0], [2.0, 3.0]])
    assert x._version == 1
    x.resize_(2, 2)
    assert x._version == 1  # the same shape: nothing changes (torch)
    assert x.resize_as_(dg.zeros(5)).shape == (5,) and x._version == 2
    np.testing.assert_array_equal(x.numpy()[:4], [0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("make", [lambda: dg.ones(2, requires_grad=True),
                                  lambda: dg.ones(2, requires_grad=True) * 1])
def test_resize_refuses_tensors_that_require_grad(make):
    x = make()
    for resize in (lambda: x.resize_(3), lambda: x.resize_as_(dg.zeros(1, 2))):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            resize()
        with dg.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            resize()


def test_resize_as_takes_a_tensor():
    with pytest.raises(TypeError, match=r"resize_as_\(\): argument 'the_template' \(position 1\) must be Tensor, "
                                        "not NoneType"):
        dg.zeros(2).resize_as_(None)


def test_resize_of_a_view_is_not_supported():
    with pytest.raises(NotImplementedError, match="resize_: dualgrad resizes only writable contiguous tensors"):
        dg.arange(6.0)[:3].resize_(6)


def test_is_view():
    x = dg.zeros(2, 3)
    assert not x._is_view() and x[0]._is_view() and x.t()._is_view() and x.expand(4, 2, 3)._is_view()
    assert not x.detach()._is_view() and not (x + 1)._is_view()


def test_output_of_a_division_may_change_in_place_before_backward():
    """torch 2.13's DivBackward0 saves self and other, not the result: ``y = a / b; y.add_(1)`` then
    backward works (gradients 1/b and -a/b**2). dualgrad saved the result and raised a version error."""
    a, b = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([3.0, 4.0], requires_grad=True)
    y = a / b
    assert y.grad_fn._saved_self is not None and y.grad_fn._saved_other is not None
    y.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1 / 3, 1 / 4], rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), [-1 / 9, -2 / 16], rtol=1e-15)
