"""dualgrad.testing: tensor strategies and the one-call derivative property."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import Phase, given, settings

import dualgrad as dg
from dualgrad import Function, GradcheckError
from dualgrad.testing import assert_derivatives_match, check_derivatives, dtypes, shapes, tensors


@given(shape=shapes(min_dims=1, max_dims=2, min_side=2, max_side=3))
def test_shapes_respect_their_bounds(shape):
    assert 1 <= len(shape) <= 2 and all(2 <= n <= 3 for n in shape)


@given(t=tensors(dtype=dtypes(complex=True, single=True), min_value=-1.0, max_value=3.0,
                 away_from=(0.0, 1.0), gap=0.2))
def test_tensors_respect_range_dtype_and_gaps(t):
    assert t.requires_grad and t.ndim <= 3
    assert t.dtype in (np.float64, np.float32, np.complex128, np.complex64)
    values = t.detach().numpy()
    assert np.all(np.abs(values - 0.0) >= 0.2 - 1e-6) and np.all(np.abs(values - 1.0) >= 0.2 - 1e-6)
    assert np.all(values.real >= -1.0 - 0.2) and np.all(values.real <= 3.0 + 0.2)


@given(t=tensors(shape=shapes(min_dims=2, max_dims=2), requires_grad=False))
def test_tensors_with_a_shape_strategy(t):
    assert t.ndim == 2 and not t.requires_grad


def test_dtypes_needs_a_kind():
    with pytest.raises(ValueError, match="at least one of real and complex"):
        dtypes(real=False)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x ** 2

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * 3 * x ** 2


class CubeWrongBackward(Cube):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x.abs()  # right only for x >= 0


class CubeWrongJvp(Cube):
    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * 2 * x ** 2


class CubeDetachedBackward(Cube):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_a_correct_custom_function_passes():
    assert_derivatives_match(Cube.apply, tensors(max_dims=2), max_examples=10)


def test_several_inputs_and_complex_values_pass():
    assert_derivatives_match(lambda x, z: (x.sin() * z, (z * z.conj()).real * x),
                             tensors(shape=(2,)), tensors(shape=(2,), dtype="complex128"), max_examples=3)


@pytest.mark.parametrize("wrong, message", [
    (CubeWrongBackward, "Jacobian mismatch"),
    (CubeWrongJvp, "Jacobian computed with forward mode mismatch"),
    (CubeDetachedBackward, "Jacobian"),
])
def test_wrong_derivatives_are_caught(wrong, message):
    no_shrinking = settings(max_examples=20, phases=[Phase.generate], database=None)
    with pytest.raises(GradcheckError, match=message):
        assert_derivatives_match(wrong.apply, tensors(shape=(2,), away_from=(0.0,)),
                                 hypothesis_settings=no_shrinking)


def test_modes_can_be_left_out():
    assert_derivatives_match(CubeWrongJvp.apply, tensors(shape=(2,)), forward=False, max_examples=3)
    assert_derivatives_match(CubeDetachedBackward.apply, tensors(shape=(2,)), second_order=False,
                             max_examples=3)


def test_check_derivatives_on_fixed_inputs():
    x = dg.tensor([0.5, -1.5], requires_grad=True)
    check_derivatives(Cube.apply, (x,))
    with pytest.raises(GradcheckError):
        check_derivatives(CubeWrongBackward.apply, (x,))


@settings(max_examples=5)
@given(x=tensors(max_dims=2, min_value=0.5, max_value=2.0))
def test_strategies_compose_with_given(x):
    check_derivatives(lambda t: t.log() * t.sqrt(), (x,))


def test_missing_hypothesis_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    with pytest.raises(ImportError, match="needs the 'hypothesis' package"):
        tensors()
