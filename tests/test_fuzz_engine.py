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


def test_mark_dirty_bumps_a_returned_non_input():
    other = dg.zeros(2)

    class DirtyNonInput(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(other)
            return x * 2, other

        @staticmethod
        def backward(ctx, g, g_other):
            return 2 * g

    # torch 2.13: warns, returns `other` itself (requiring grad) with its version bumped to 1
    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        _, out = DirtyNonInput.apply(dg.ones(2, requires_grad=True))
    assert out is other and out.requires_grad and other._version == 1


def test_mark_dirty_on_a_non_input_that_is_not_returned_raises():
    other = dg.zeros(2)

    class DirtyNonInput(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(other)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    # torch 2.13 raises (it warned and returned before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward method were not"):
            DirtyNonInput.apply(dg.ones(2, requires_grad=True))
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


def test_inference_tensors_have_no_version_counter():
    x = dg.ones(2, requires_grad=True)
    with dg.inference_mode():
        y = x * 2
        view = x[1:]
        with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter.$"):
            y._version  # noqa: B018
    # torch 2.13: raises inside and outside the mode, for a view of an inference tensor too;
    # a view made in the mode of a normal tensor keeps its counter
    for t in (y, y[0], y.detach()):
        with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter.$"):
            t._version  # noqa: B018
    assert view._version == 0
