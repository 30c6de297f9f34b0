"""gradcheck / gradgradcheck: they pass on correct derivatives and catch wrong ones.

Every op of the table is checked through its samples; custom Functions with a
deliberately wrong backward, jvp, batching rule or a non-deterministic backward
must each be caught with a message naming what is wrong.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from helpers import leaves
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_samples import SAMPLES

import dualgrad as dg
from dualgrad import Function, GradcheckError, gradcheck, gradgradcheck

HAS_FORWARD_AD = hasattr(dg.forward_ad, "make_dual")
HAS_BATCHING = importlib.util.find_spec("dualgrad.vmap.batching") is not None and hasattr(dg, "vmap")
needs_forward_ad = pytest.mark.skipif(not HAS_FORWARD_AD, reason="dualgrad.forward_ad not built yet")
needs_batching = pytest.mark.skipif(not HAS_BATCHING, reason="dualgrad.vmap / batching not built yet")


def _inputs(*shapes, dtype="float64"):
    return tuple(dg.randn(*s, dtype=dtype, requires_grad=True) for s in shapes)


# -- correct derivatives pass ------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SAMPLES))
@settings(max_examples=3)
@given(data=st.data())
def test_gradcheck_passes_on_every_op_of_the_table(name, data):
    sample = data.draw(SAMPLES[name], label="sample")
    xs = leaves(sample.arrays)
    assert gradcheck(sample.call, xs)
    assert gradcheck(sample.call, xs, fast_mode=True)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_passes_on_a_multi_input_multi_output_function(fast_mode):
    x, y = _inputs((2, 3), (3,))
    assert gradcheck(lambda a, b: (a.sin() * b, (a @ b.exp()).tanh()), (x, y), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradgradcheck_passes_on_second_derivatives(fast_mode):
    x, y = _inputs((2, 2), (2,))
    assert gradgradcheck(lambda a, b: (a * b).sin().sum(0) * a.exp().mean(), (x, y), fast_mode=fast_mode)
    assert gradgradcheck(lambda a: a ** 3, (x,), gen_non_contig_grad_outputs=True)


def test_gradgradcheck_with_given_grad_outputs():
    x, = _inputs((3,))
    v = dg.randn(3, requires_grad=True)
    assert gradgradcheck(lambda a: a.cos() * a, (x,), (v,))


@settings(max_examples=10)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), seed=st.integers(0, 2**16))
def test_gradcheck_passes_on_random_shapes(shape, seed):
    rng = np.random.default_rng(seed)
    x = dg.tensor(rng.uniform(0.5, 2.0, shape), requires_grad=True)
    w = dg.tensor(rng.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda a, b: (a.log() * b + b.sigmoid()) / a, (x, w))


def test_inputs_that_do_not_require_grad_are_constants():
    x, = _inputs((3,))
    c = dg.randn(3)
    assert gradcheck(lambda a, k, s: a * k * s, (x, c, 2.0))


# -- complex numbers (conjugate Wirtinger) --------------------------------------------------
@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_complex_inputs_and_outputs(fast_mode):
    z, = _inputs((3,), dtype="complex128")
    x, = _inputs((3,))
    assert gradcheck(lambda a: a * a * x, (z,), fast_mode=fast_mode)  # holomorphic, complex output
    assert gradcheck(lambda a: (a * a.conj()).real, (z,), fast_mode=fast_mode)  # |z|^2, real output
    assert gradcheck(lambda a: a.abs() * a, (z,), fast_mode=fast_mode)  # neither
    assert gradcheck(lambda a, b: a.exp() * b, (z, x), fast_mode=fast_mode)  # real -> complex


class _ComplexSquareWrongConj(Function):
    """z**2 whose backward forgets the conjugate: g * 2z instead of g * conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * 2 * z


def test_gradcheck_catches_a_missing_conjugate():
    z, = _inputs((2,), dtype="complex128")
    with pytest.raises(GradcheckError, match="part of complex outputs only, Jacobian mismatch"):
        gradcheck(_ComplexSquareWrongConj.apply, (z,))


# -- wrong derivatives are caught ----------------------------------------------------------
class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        ctx.save_for_forward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out

    @staticmethod
    def jvp(ctx, t):
        return t * ctx.saved_tensors[0]


class ExpWrongBackward(Exp):
    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out * 1.01


def test_gradcheck_passes_on_a_correct_custom_function():
    x, = _inputs((2, 2))
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(Exp.apply, (x,))


def test_gradcheck_catches_a_wrong_backward():
    x, = _inputs((3,))
    with pytest.raises(GradcheckError) as info:
        gradcheck(ExpWrongBackward.apply, (x,))
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "numerical:tensor(" in message and "analytical:tensor(" in message
    assert isinstance(info.value, RuntimeError)
    assert gradcheck(ExpWrongBackward.apply, (x,), raise_exception=False) is False


def test_gradcheck_names_the_wrong_input_and_output():
    x, y = _inputs((2,), (2,))
    with pytest.raises(GradcheckError, match="output 1 with respect to input 1"):
        gradcheck(lambda a, b: (a * b, ExpWrongBackward.apply(b) + a), (x, y))


def test_fast_mode_catches_a_wrong_backward_and_rechecks_in_slow_mode():
    x, = _inputs((3,))
    with pytest.raises(GradcheckError) as info:
        gradcheck(ExpWrongBackward.apply, (x,), fast_mode=True)
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "Recomputed in slow mode" in message and "max per-element difference" in message
    assert "passes in slow mode" not in message


class SignedScaleSlightlyOff(Function):
    """x * c with c of mixed signs; backward off by +1e-4 |c| (relative error 1e-4 per element)."""

    c = dg.tensor([1.0, -1.0, 1.0])

    @staticmethod
    def forward(ctx, x):
        return x * SignedScaleSlightlyOff.c

    @staticmethod
    def backward(ctx, g):
        c = SignedScaleSlightlyOff.c
        return g * c + g * c.abs() * 1e-4


def test_fast_mode_says_when_slow_mode_would_pass():
    x, = _inputs((3,))
    # Element-wise the relative error 1e-4 is within rtol; in v^T J u the signs cancel
    # in the value but not in the error, so the fast check fails.
    assert gradcheck(SignedScaleSlightlyOff.apply, (x,), atol=0.0, rtol=1.01e-4)
    with pytest.raises(GradcheckError, match="passes in slow mode"):
        gradcheck(SignedScaleSlightlyOff.apply, (x,), fast_mode=True, atol=0.0, rtol=1.01e-4)


class DetachedCube(Function):
    """x**3 whose backward is not differentiable: its second derivative is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_gradgradcheck_catches_a_wrong_double_backward():
    x, = _inputs((2,))
    assert gradcheck(DetachedCube.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradgradcheck(DetachedCube.apply, (x,))


class NoisyExp(Exp):
    """Correct on average, but each backward adds different noise."""

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (out + dg.randn(*out.shape) * 1e-9)


def test_gradcheck_catches_a_non_deterministic_backward():
    x, = _inputs((3,))
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(NoisyExp.apply, (x,))
    with pytest.raises(GradcheckError, match="nondet_tol"):
        gradcheck(NoisyExp.apply, (x,), fast_mode=True)
    assert gradcheck(NoisyExp.apply, (x,), nondet_tol=1e-6)


class ThreeOutputs(Function):
    """(2x, 3x, 4x); its backward fails when exactly one output gradient is undefined.

    The Jacobian checks differentiate one output at a time (two gradients
    undefined); only the undefined-gradient check leaves out exactly one.
    """

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3, x * 4

    @staticmethod
    def backward(ctx, *grads):
        if sum(g is None for g in grads) == 1:
            raise RuntimeError("cannot handle one missing gradient")
        return sum(g * k for g, k in zip(grads, (2, 3, 4), strict=True) if g is not None)


def test_gradcheck_catches_a_backward_that_cannot_take_undefined_grads():
    x, = _inputs((2,))
    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(ThreeOutputs.apply, (x,))
    assert gradcheck(ThreeOutputs.apply, (x,), check_undefined_grad=False)


class NonzeroForUndefined(Function):
    """2x whose backward answers an undefined gradient with ones instead of zeros or None."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return dg.ones(2) if g is None else g * 2


class NoneTimesTwo(NonzeroForUndefined):
    """2x whose backward cannot take an undefined gradient: ``None * 2`` is a TypeError."""

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_gradcheck_catches_nonzero_grads_for_an_undefined_output_grad():
    x, = _inputs((2,))
    with pytest.raises(GradcheckError, match="Expected all input grads to be undefined or zero"):
        gradcheck(NonzeroForUndefined.apply, (x,))
    assert gradcheck(NonzeroForUndefined.apply, (x,), raise_exception=False) is False
    assert gradcheck(NonzeroForUndefined.apply, (x,), check_undefined_grad=False)


def test_only_a_runtime_error_of_backward_becomes_a_gradcheck_error():
    # As in torch: the TypeError of a backward that multiplies None propagates unchanged,
    # even with raise_exception=False.
    x, = _inputs((2,))
    for raise_exception in (True, False):
        with pytest.raises(TypeError, match="NoneType"):
            gradcheck(NoneTimesTwo.apply, (x,), raise_exception=raise_exception)


class IgnoresGradOutput(Function):
    """Correct Jacobian for grad_output = 1, but not multiplied by grad_output."""

    @staticmethod
    def forward(ctx, x):
        return x.sum()

    @staticmethod
    def backward(ctx, g):
        return dg.ones(2)


def test_gradcheck_catches_a_backward_not_multiplied_by_grad_output():
    x, = _inputs((2,))
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(IgnoresGradOutput.apply, (x,), check_undefined_grad=False)


def test_gradcheck_detects_a_wrong_gradient_shape():
    class WrongShape(Exp):
        @staticmethod
        def backward(ctx, g):
            return (g * ctx.saved_tensors[0]).sum()

    x, = _inputs((3,))
    with pytest.raises((GradcheckError, RuntimeError), match="(?i)shape|size"):
        gradcheck(WrongShape.apply, (x,))


class ExpWrongJvp(Exp):
    @staticmethod
    def jvp(ctx, t):
        return t * ctx.saved_tensors[0] * 1.01


@needs_forward_ad
def test_gradcheck_checks_forward_mode_and_catches_a_wrong_jvp():
    x, = _inputs((3,))
    assert gradcheck(Exp.apply, (x,), check_forward_ad=True)
    assert gradcheck(lambda a: a.sin() * a, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch"):
        gradcheck(ExpWrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(GradcheckError, match="forward mode mismatch"):
        gradcheck(ExpWrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                  fast_mode=True)


@needs_forward_ad
def test_forward_mode_check_with_complex_inputs():
    z, = _inputs((2,), dtype="complex128")
    assert gradcheck(lambda a: a * a.exp(), (z,), check_forward_ad=True)


class ComplexSquareWrongJvp(Function):
    """z**2 whose jvp conjugates: t * conj(2z) instead of t * 2z (backward is right)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        ctx.save_for_forward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * (2 * z).conj()

    @staticmethod
    def jvp(ctx, t):
        z, = ctx.saved_tensors
        return t * (2 * z).conj()


@needs_forward_ad
@pytest.mark.parametrize("fast_mode", [False, True])
def test_forward_mode_check_catches_a_wrong_complex_jvp(fast_mode):
    z, = _inputs((2,), dtype="complex128")
    assert gradcheck(ComplexSquareWrongJvp.apply, (z,), fast_mode=fast_mode)
    with pytest.raises(GradcheckError, match="While considering the imaginary part of complex inputs only, "
                                             "Jacobian computed with forward mode mismatch"):
        gradcheck(ComplexSquareWrongJvp.apply, (z,), check_forward_ad=True, fast_mode=fast_mode)


@needs_forward_ad
@pytest.mark.parametrize("case", ["wrong backward", "wrong jvp", "nondeterministic", "wrong double backward"])
def test_raise_exception_false_returns_false(case):
    x, = _inputs((3,))
    check, func, options = {
        "wrong backward": (gradcheck, ExpWrongBackward.apply, {}),
        "wrong jvp": (gradcheck, ExpWrongJvp.apply, {"check_forward_ad": True}),
        "nondeterministic": (gradcheck, NoisyExp.apply, {}),
        "wrong double backward": (gradgradcheck, DetachedCube.apply, {}),
    }[case]
    for fast_mode in (False, True):
        assert check(func, (x,), raise_exception=False, fast_mode=fast_mode, **options) is False


class ScaleWrongBatching(Function):
    """2x whose vmap rule computes 3x; backward and jvp reuse it, so batched derivatives are wrong."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return ScaleWrongBatching.apply(g)

    @staticmethod
    def jvp(ctx, t):
        return ScaleWrongBatching.apply(t)

    @staticmethod
    def vmap(info, in_dims, x):
        return x * 3, in_dims[0]


@needs_batching
def test_gradcheck_catches_a_wrong_batching_rule():
    x, = _inputs((3,))
    assert gradcheck(lambda a: a.sin() * a, (x,), check_batched_grad=True)
    with pytest.raises(GradcheckError, match="batched"):
        gradcheck(ScaleWrongBatching.apply, (x,), check_batched_grad=True)


# -- bad input ------------------------------------------------------------------------------
def test_no_input_requiring_grad_is_an_error():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (dg.randn(3),))


def test_non_floating_inputs_are_an_error():
    with pytest.raises(ValueError, match="not floating point or complex") as info:
        gradcheck(lambda a: a * 2, (dg.tensor([1, 2, 3]),))
    assert "#0 (int64)" in str(info.value)


def test_check_batched_grad_requires_check_backward_ad():
    x, = _inputs((2,))
    with pytest.raises(AssertionError, match="check_batched_grad=True requires check_backward_ad"):
        gradcheck(lambda a: a, (x,), check_batched_grad=True, check_backward_ad=False,
                  check_forward_ad=True)
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or check_backward_ad"):
        gradcheck(lambda a: a, (x,), check_backward_ad=False)


def test_overlapping_input_memory_is_an_error():
    x = dg.ones(1, 3).expand(2, 3).detach().requires_grad_()
    with pytest.raises(RuntimeError, match="stride 0"):
        gradcheck(lambda a: a * 2, (x,))


def test_low_precision_inputs_warn():
    x = dg.randn(2, dtype="float32", requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_function_without_differentiable_outputs_must_be_constant():
    x, = _inputs((2,))
    assert gradcheck(lambda a: a.detach() * 0 + 1, (x,))
    with pytest.raises(GradcheckError, match="expected to be zero"):
        gradcheck(lambda a: a.detach() * 2, (x,))


def test_inputs_are_left_unchanged():
    x, = _inputs((3,))
    before = x.detach().numpy().copy()
    gradcheck(ExpWrongBackward.apply, (x,), raise_exception=False)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None


@pytest.mark.parametrize("check", [gradcheck, gradgradcheck])
@pytest.mark.parametrize("output", [3.0, None])
def test_an_output_that_is_not_a_tensor_is_an_error(check, output):
    x, = _inputs((2,))
    with pytest.raises(TypeError, match=f"output 1 is a {type(output).__name__}"):
        check(lambda a: (a.sin(), output), (x,), raise_exception=False)


def test_inputs_and_outputs_may_be_a_single_tensor_or_a_list():
    x, y = _inputs((3,), (3,))
    assert gradcheck(lambda a: a.sin(), x)
    assert gradcheck(lambda a, b: [a.sin(), b.cos() * a], [x, y])
    assert gradgradcheck(lambda a: a ** 3, x, dg.randn(3, dtype="float64", requires_grad=True))
    # outputs that do not require grad (integers, detached values) are not differentiated
    assert gradcheck(lambda a: (a.argmax(), a.detach(), a.exp()), (x,))


@needs_batching
@needs_forward_ad
def test_gradcheck_catches_a_wrong_batching_rule_in_forward_mode():
    x, = _inputs((3,))
    assert gradcheck(lambda a: a.sin() * a, (x,), check_forward_ad=True, check_batched_forward_grad=True)
    assert gradcheck(ScaleWrongBatching.apply, (x,), check_forward_ad=True)
    with pytest.raises(GradcheckError, match="batched forward gradient"):
        gradcheck(ScaleWrongBatching.apply, (x,), check_forward_ad=True, check_batched_forward_grad=True)


def test_check_batched_forward_grad_requires_check_forward_ad():
    x, = _inputs((2,))
    with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires check_forward_ad"):
        gradcheck(lambda a: a, (x,), check_batched_forward_grad=True)
