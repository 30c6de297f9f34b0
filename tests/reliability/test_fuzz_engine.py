"""Regressions found by a differential fuzzer of autograd scenarios (torch 2.13 against dualgrad):
scripts mixing leaves, views, in-place ops, custom Functions, grad modes and backward calls,
compared step by step (``.grad``, values, ``requires_grad``, ``is_leaf``, ``grad_fn`` names,
``_version``, errors). torch's values and messages are pinned literally."""

from __future__ import annotations

import warnings

import pytest

import dualgrad as dg
from dualgrad.autograd import Function


class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_mark_dirty_bumps_the_version_before_refusing_a_leaf_that_requires_grad():
    # torch 2.13: x._version == 2 after the error (1 for mul_, 1 for mark_dirty)
    x = dg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used in an in-place"):
        DoubleInPlace.apply(x)
    assert x._version == 2


def test_mark_dirty_on_a_view_of_a_leaf_that_requires_grad_raises_and_leaves_the_leaf_a_leaf():
    # torch 2.13 raises; dualgrad gave the leaf a CopySlices node (it was no longer a leaf)
    x = dg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in"):
        DoubleInPlace.apply(x[0:1])
    assert x.is_leaf and x.grad_fn is None and x._version == 2 and x.detach().tolist() == [2., 2.]


def test_mark_dirty_on_a_view_of_a_non_leaf_rebases_it():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 1
    DoubleInPlace.apply(y[0:1])
    y.sum().backward()
    assert y.grad_fn.name() == "torch::autograd::CopySlices" and x.grad.tolist() == [2., 1.]


def _dirty_non_input(other, returned: bool) -> type:
    """A Function that marks ``other`` (not an input) dirty and returns it if ``returned``."""

    class DirtyNonInput(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(other)
            return (x * 2, other) if returned else x * 2

        @staticmethod
        def backward(ctx, g, *g_other):
            return 2 * g

    return DirtyNonInput


def test_mark_dirty_bumps_a_returned_non_input():
    other = dg.zeros(2)
    # torch 2.13: warns, returns `other` itself (requiring grad) with its version bumped to 1
    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        _, out = _dirty_non_input(other, returned=True).apply(dg.ones(2, requires_grad=True))
    assert out is other and out.requires_grad and other._version == 1


def test_mark_dirty_on_a_non_input_that_is_not_returned_raises():
    other = dg.zeros(2)
    # torch 2.13 raises (dualgrad warned and returned)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward method were not"):
            _dirty_non_input(other, returned=False).apply(dg.ones(2, requires_grad=True))
    assert other._version == 0


@pytest.mark.parametrize(("output", "grad_outputs", "message"), [
    (dg.ones(3, requires_grad=True) * 2, None, "grad can be implicitly created only for scalar outputs"),
    (dg.ones(1, dtype=dg.complex128, requires_grad=True) * 2, None,
     "grad can be implicitly created only for real scalar outputs"),
    (dg.ones(3, requires_grad=True) * 2, dg.tensor(2.), r"Mismatch in shape: grad_output\[0\] has a shape of"),
])
def test_grad_checks_outputs_before_inputs_that_do_not_require_grad(output, grad_outputs, message):
    # torch 2.13: the output's errors come first, before "One of the differentiated Tensors ..."
    with pytest.raises(RuntimeError, match=message):
        dg.autograd.grad(output, [dg.ones(3)], grad_outputs)


def test_unbind_of_a_vector_gives_views_that_write_into_it():
    # torch 2.13: b == [5., 2., 3.] and b._version == 1 (dualgrad's pieces were copied scalars)
    b = dg.tensor([1., 2., 3.])
    b.unbind(0)[0].mul_(5)
    assert b.tolist() == [5., 2., 3.] and b._version == 1


def test_a_custom_function_view_output_changed_under_no_grad_refuses_its_grad_fn():
    class FirstTwo(Function):
        @staticmethod
        def forward(ctx, x):
            return x[0:2]

        @staticmethod
        def backward(ctx, g):
            return dg.cat([g, dg.zeros(2)])

    view = FirstTwo.apply(dg.ones(4, requires_grad=True) * 1)
    with dg.no_grad():
        view.mul_(2)
    # torch 2.13 raises here; dualgrad gave the stale FirstTwoBackward
    with pytest.raises(RuntimeError, match="^Output 0 of FirstTwo is a view and its base or another view of its base"):
        view.grad_fn  # noqa: B018


@pytest.mark.parametrize(("fill", "name"), [
    (lambda t: t.fill_(0.5), "FillBackward2"), (lambda t: t.fill_(dg.tensor(2.)), "FillBackward3"),
    (lambda t: t.zero_(), "ZeroBackward0"), (lambda t: t.uniform_(), "UniformBackward0"),
    (lambda t: t.normal_(), "NormalBackward0"), (lambda t: t.copy_(dg.zeros(3)), "torch::autograd::CopyBackwards"),
])
def test_in_place_fills_are_named_as_torch_names_them(fill, name):
    # torch 2.13's grad_fn.name(); dualgrad said CopyBackwards for all
    y = dg.ones(3, requires_grad=True) * 1
    assert fill(y).grad_fn.name() == name


def test_fill_with_a_tensor_sends_the_sum_of_the_gradient_to_it():
    value = dg.tensor(2., requires_grad=True)
    x = dg.ones(3, requires_grad=True)
    y = x * 1
    y.fill_(value)
    (y * dg.tensor([1., 2., 3.])).sum().backward()
    assert value.grad.item() == 6. and x.grad.tolist() == [0., 0., 0.]


NO_GRAD_VIEW = "^A view was created in no_grad mode and is being modified inplace with grad mode enabled."


@pytest.mark.parametrize("write", [
    lambda v, w: v.add_(w), lambda v, w: v.copy_(w), lambda v, w: v.fill_(w), lambda v, w: v.__setitem__(0, w),
])
def test_a_view_made_under_no_grad_refuses_a_value_that_requires_grad(write):
    # torch 2.13: refused even though the base does not require grad (dualgrad recorded a CopySlices)
    b = dg.tensor([1., 2.])
    with dg.no_grad():
        view = b[0:1]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        write(view, dg.tensor(1.5, requires_grad=True))
    assert b.tolist() == [1., 2.] and b.grad_fn is None


def test_a_view_made_in_inference_mode_refuses_a_value_that_requires_grad():
    b = dg.tensor([1., 2.])
    with dg.inference_mode():
        view = b[0:1]
    with pytest.raises(RuntimeError, match="^A view was created in inference mode and is being modified inplace"):
        view.add_(dg.tensor(1.5, requires_grad=True))
    assert b.tolist() == [1., 2.]
