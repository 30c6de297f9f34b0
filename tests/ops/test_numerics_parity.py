"""Numerical robustness at extreme and special inputs, pinned to torch 2.13's values (literals: the
tests do not import torch), or to the exact value where torch loses digits (said so per test).

Each test is one behaviour a differential audit found dualgrad to get wrong: a NaN where torch is
finite, a value that lost precision, a NaN-propagation rule, a dtype widened by a Python number.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order

import dualgrad as dg

INF, NAN = math.inf, math.nan


def _grads(fn, *values, dtype=np.float64):
    xs = [dg.tensor(np.asarray(v, dtype), requires_grad=True) for v in values]
    return [g.numpy() for g in dg.autograd.grad(fn(*xs).sum(), xs)]


# -- logaddexp: sigmoid partials, finite at infinite inputs, exactly 1/2 at ties ---------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", [dg.logaddexp, dg.logaddexp2])
def test_logaddexp_gradients_at_infinite_inputs_match_torch(op, dtype):
    x = [1e-3, 1e3, INF, -1e3, -INF, 2.0]
    y = [INF, INF, 1e3, -1e3, 3.0, 2.0]
    with np.errstate(invalid="ignore", over="ignore"):
        gx, gy = _grads(op, x, y, dtype=dtype)
    # torch: gx [0, 0, 1, .5, 0, .5], gy [1, 1, 0, .5, 1, .5] (exactly, float32 too)
    np.testing.assert_array_equal(gx, np.array([0, 0, 1, 0.5, 0, 0.5], dtype))
    np.testing.assert_array_equal(gy, np.array([1, 1, 0, 0.5, 1, 0.5], dtype))
    assert gx.dtype == gy.dtype == dtype


@pytest.mark.parametrize("op", [dg.logaddexp, dg.logaddexp2])
def test_logaddexp_derivatives_against_finite_differences(op):
    x, y = np.array([-1.0, 0.3, 2.0]), np.array([0.5, 0.3, -4.0])
    check_first_order(op, [x, y])
    check_second_order(op, [x, y])


# -- pow: d(0 ** y)/dy for y < 0 ----------------------------------------------------------------------
def test_pow_exponent_gradient_at_zero_base_and_negative_exponent_is_minus_inf():
    with np.errstate(divide="ignore", invalid="ignore"):
        (gy,) = _grads(lambda y: dg.tensor([0.0, 0.0, 2.0]) ** y, [-1.0, 1.0, -1.0])
        (gz,) = _grads(lambda y: 0.0 ** y, [-2.0, 0.0, 1.0])
    assert gy[0] == -INF and gy[1] == 0.0  # torch: [-inf, 0, 0.34657359]
    assert gy[2] == pytest.approx(0.5 * math.log(2.0), rel=1e-15)
    np.testing.assert_array_equal(gz, [-INF, 0.0, 0.0])  # torch: [-inf, 0, 0]


# -- NaN propagation rules of relu, maximum/minimum and of max()/min()/median() -------------------------
def test_relu_passes_the_gradient_at_nan():
    (g,) = _grads(dg.relu, [NAN, -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 1.0])  # torch: [1, 0, 0, 1]


def test_maximum_and_minimum_give_both_inputs_the_gradient_where_one_is_nan():
    x, y = [NAN, 1.0, NAN, 1.0, 3.0], [0.0, NAN, NAN, 1.0, 2.0]
    gx, gy = _grads(dg.maximum, x, y)
    np.testing.assert_array_equal(gx, [1, 1, 1, 0.5, 1])  # torch
    np.testing.assert_array_equal(gy, [1, 1, 1, 0.5, 0])
    gx, gy = _grads(dg.minimum, x, y)
    np.testing.assert_array_equal(gx, [1, 1, 1, 0.5, 0])  # torch
    np.testing.assert_array_equal(gy, [1, 1, 1, 0.5, 1])


@pytest.mark.parametrize("fn", [dg.max, dg.min, dg.median])
def test_whole_tensor_max_min_median_share_a_nan_result_among_the_nans(fn):
    (g,) = _grads(fn, [3.0, NAN, 1.0, NAN, 3.0])
    np.testing.assert_array_equal(g, [0, 0.5, 0, 0.5, 0])  # torch: [0, .5, 0, .5, 0]
    x = dg.tensor([3.0, 3.0, 1.0], requires_grad=True)  # (ties without NaN: unchanged)
    (g,) = dg.autograd.grad(dg.max(x), x)
    np.testing.assert_array_equal(g.numpy(), [0.5, 0.5, 0])
    assert dg.max(x).grad_fn.name() == "MaxBackward1"


def test_amax_of_a_nan_keeps_nan_gradients_as_torch():
    (g,) = _grads(dg.amax, [3.0, NAN, 1.0])
    assert np.isnan(g).all()  # torch: [nan, nan, nan]


# -- vector norms of negative order at a zero element ----------------------------------------------------
@pytest.mark.parametrize("order", [-1, -2])
def test_negative_order_norm_with_a_zero_element_has_zero_gradient(order):
    (g,) = _grads(lambda x: dg.linalg.vector_norm(x, ord=order, dim=1), [[0.0, 1.0], [2.0, 3.0]])
    expected = {-1: [0.36, 0.16], -2: [0.5760349035263062, 0.17067700624465942]}[order]  # torch
    np.testing.assert_array_equal(g[0], [0.0, 0.0])  # (the norm is 0 near [0, 1]: torch's 0, was [0, 1])
    np.testing.assert_allclose(g[1], expected, rtol=1e-6)


# -- dtypes ---------------------------------------------------------------------------------------------
def test_xlogy_with_a_python_number_keeps_float32():
    x = dg.tensor(np.array([0.0, 2.0], np.float32))
    assert dg.xlogy(x, 3.0).dtype == np.float32  # torch: float32
    assert dg.xlogy(x, 0.0).dtype == np.float32
    np.testing.assert_allclose(dg.xlogy(x, 3.0).numpy(), [0.0, 2 * math.log(3.0)], rtol=1e-6)


# -- cumsum accumulates float16/float32 in float64 (as torch on CPU) --------------------------------------
def test_cumsum_of_float32_keeps_small_terms_after_a_large_one():
    out = dg.cumsum(dg.tensor(np.array([1e8, 1.0, -1e8, 1.0], np.float32)), 0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [1e8, 1e8, 1.0, 2.0])  # torch; NumPy's float32: [.., 0, 1]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_cumsum_of_many_small_terms_does_not_drift(dtype):
    out = dg.cumsum(dg.tensor(np.full(10000, 0.1, dtype)), 0)
    assert out.dtype == dtype
    assert out[-1].item() == 1000.0  # torch: 1000.0 (float16 accumulation stalled at 256)


def test_cumsum_of_complex64_accumulates_in_complex128():
    out = dg.cumsum(dg.tensor(np.array([1e8, 1.0, -1e8, 1.0], np.complex64)), 0)
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(out.numpy(), [1e8, 1e8, 1.0, 2.0])  # torch


def test_cumsum_gradient_of_float32_is_float32():
    x = dg.tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    (g,) = dg.autograd.grad(dg.cumsum(x, 0).sum(), x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), [3.0, 2.0, 1.0])


# -- softmax over an empty axis ---------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [dg.softmax, dg.log_softmax])
def test_softmax_over_an_empty_axis_is_empty(fn):
    x = dg.zeros(3, 0, requires_grad=True)
    out = fn(x, 1)
    assert out.shape == (3, 0)  # torch: torch.Size([3, 0])
    (g,) = dg.autograd.grad(out.sum(), x)
    assert g.shape == (3, 0)


# -- angle of -0.0 --------------------------------------------------------------------------------------
def test_angle_of_negative_zero_is_zero():
    out = dg.angle(dg.tensor([-0.0, 0.0, -2.0, NAN]))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, math.pi, NAN])  # torch: [0, 0, 3.1416, nan]
    assert dg.angle(dg.tensor(np.array([-0.0], np.float32))).dtype == np.float32


# -- sinc's derivative near 0: exact (torch loses digits there) ------------------------------------------
@pytest.mark.parametrize("x", [1e-8, 1e-5, 1e-3, 0.1, 0.1999, 0.2, 0.3, -0.05])
def test_sinc_derivative_is_accurate_near_zero(x):
    (g,) = _grads(dg.sinc, [x])
    t = math.pi * x
    exact = (math.cos(t) - math.sin(t) / t) / x if abs(x) >= 0.1 else math.pi * sum(
        (-1) ** k * 2 * k * t ** (2 * k - 1) / math.factorial(2 * k + 1) for k in range(1, 12))
    # torch at 1e-8: -2.766e-08 (16% off); exact -pi^2/3 * 1e-8 = -3.2899e-08
    assert g[0] == pytest.approx(exact, rel=2e-15)


def test_sinc_derivative_at_zero_and_second_order():
    (g,) = _grads(dg.sinc, [0.0])
    assert g[0] == 0.0
    check_first_order(dg.sinc, [np.array([-0.15, 0.05, 0.5, 1.3])])
    check_second_order(dg.sinc, [np.array([-0.15, 0.05, 0.5, 1.3])])
    (g,) = _grads(dg.sinc, [1e-8], dtype=np.float32)
    assert g.dtype == np.float32 and g[0] == pytest.approx(-math.pi ** 2 / 3 * 1e-8, rel=1e-6)


# -- svd / svdvals / matrix norms of huge and tiny matrices (s^2 would overflow/underflow) --------------
@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_svd_gradients_are_scale_invariant_for_huge_and_tiny_matrices(scale):
    a = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0]])

    def grads(m):
        x = dg.tensor(m, requires_grad=True)
        u, s, vh = dg.linalg.svd(x, full_matrices=False)
        loss = (u * dg.tensor([[1.0, -2.0], [0.5, 3.0]])).sum() + (vh * dg.tensor([[1.0, 2.0, 3.0],
                                                                                  [0.0, -1.0, 1.0]])).sum()
        return dg.autograd.grad(loss, x)[0].numpy()

    reference = grads(a)
    assert np.isfinite(reference).all()
    # U, Vh do not depend on the scale: dL/dA scales as 1/scale (torch gives nan at 1e200)
    np.testing.assert_allclose(grads(a * scale) * scale, reference, rtol=1e-12, atol=1e-14)


def test_svdvals_and_nuclear_norm_gradient_of_a_huge_rank_one_matrix():
    x = dg.tensor([[1e200, 1e200], [3e38, 3e38]], requires_grad=True)
    (g,) = dg.autograd.grad(dg.linalg.svdvals(x)[0], x)  # the leading singular value: u1 v1^T
    np.testing.assert_allclose(g.numpy(), [[0.5 ** 0.5, 0.5 ** 0.5], [0.0, 0.0]], atol=1e-15)
    (g,) = dg.autograd.grad(dg.linalg.matrix_norm(x, 2), x)
    np.testing.assert_allclose(g.numpy(), [[0.5 ** 0.5, 0.5 ** 0.5], [0.0, 0.0]], atol=1e-15)
    (g,) = dg.autograd.grad(dg.linalg.matrix_norm(x, "nuc"), x)
    assert np.isfinite(g.numpy()).all()  # torch: finite (was nan)


def test_svd_forward_mode_of_a_huge_matrix_is_finite():
    import dualgrad.forward_ad as fwAD

    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = np.array([[0.5, -1.0], [2.0, 0.25]])
    with fwAD.dual_level():
        u_ref = fwAD.unpack_dual(dg.linalg.svd(fwAD.make_dual(dg.tensor(a), dg.tensor(t)))[0]).tangent.numpy()
        u_big = fwAD.unpack_dual(dg.linalg.svd(fwAD.make_dual(dg.tensor(a * 1e200), dg.tensor(t * 1e200)))[0])
    np.testing.assert_allclose(u_big.tangent.numpy(), u_ref, rtol=1e-12, atol=1e-14)


# -- float16 reductions compute in float32 (as torch on CPU): no overflow of float16's 65504 -------------
def _half_data():
    return (10 + np.random.default_rng(0).standard_normal(100000)).astype(np.float16)


@pytest.mark.parametrize("name", ["var", "std", "vector_norm", "norm"])
def test_float16_variance_and_norm_of_many_values_do_not_overflow(name):
    x = _half_data()
    fn = {"var": dg.var, "std": dg.std, "vector_norm": dg.linalg.vector_norm, "norm": dg.norm}[name]
    t = dg.tensor(x, requires_grad=True)
    out = fn(t)
    wide = x.astype(np.float64)
    exact = {"var": wide.var(ddof=1), "std": wide.std(ddof=1)}.get(name, np.linalg.norm(wide))
    assert out.dtype == np.float16
    assert out.item() == pytest.approx(exact, rel=1e-3)  # torch: finite, the same float16 (was inf)
    (g,) = dg.autograd.grad(out, t)
    assert g.dtype == np.float16 and np.isfinite(g.numpy()).all()


def test_float16_softmax_family_over_many_equal_values():
    x = dg.tensor(np.zeros(100000, np.float16))
    np.testing.assert_array_equal(dg.softmax(x, 0).numpy()[:2], np.float16(1.0014e-05))  # torch: 1.0014e-05
    # exact log(1e5) = 11.5129 (torch gives inf and -inf here: its float16 kernel overflows)
    assert dg.logsumexp(x, 0).item() == pytest.approx(math.log(1e5), rel=1e-3)
    assert dg.log_softmax(x, 0)[0].item() == pytest.approx(-math.log(1e5), rel=1e-3)
    assert dg.softmax(x, 0).dtype == dg.logsumexp(x, 0).dtype == np.float16


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_logcumsumexp_of_many_float16_float32_values_accumulates_in_float64(dtype):
    x = np.random.default_rng(0).uniform(0, 1, 20000).astype(np.float16).astype(dtype)
    out = dg.logcumsumexp(dg.tensor(x), 0)
    assert out.dtype == dtype
    exact = np.logaddexp.accumulate(x.astype(np.float64))
    # torch: 10.4453125 (float16), 10.447066307067871 (float32); float16 accumulation stalled at 7.24
    tol = {np.float16: 4e-3, np.float32: 1e-6}[dtype]
    np.testing.assert_allclose(out.numpy().astype(np.float64), exact, rtol=tol, atol=tol)
    assert out[-1].item() == {np.float16: 10.4453125, np.float32: 10.447066307067871}[dtype]
