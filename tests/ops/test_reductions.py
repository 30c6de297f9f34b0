"""Reductions and axis-wise ops: values, torch's argument semantics, derivatives at the
special points the table tests avoid (zeros, ties, constant inputs), batching rules and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from batch_checks import check_batch_rule
from grad_checks import check_first_order, check_second_order
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.ops import reductions as R

INF = float("inf")


@st.composite
def array_and_axis(draw, min_dims=0, min_side=1):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=min_side, max_side=4))
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3, allow_subnormal=False)))
    axis = draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim)) + ([(0, -1)] if x.ndim > 1 else [])))
    return x, axis, draw(st.booleans())


def _np_axis(axis, ndim):
    return None if axis is None else tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


# -- values ---------------------------------------------------------------------------------------
@given(array_and_axis())
def test_sum_mean_prod_amax_amin_match_numpy(case):
    x, axis, keep = case
    t = dg.tensor(x)
    for ours, theirs in [(dg.sum, np.sum), (dg.mean, np.mean), (dg.prod, np.prod)]:
        np.testing.assert_allclose(ours(t, axis, keep).numpy(), theirs(x, axis=axis, keepdims=keep))
    if x.size:
        np.testing.assert_array_equal(dg.amax(t, axis, keep).numpy(), np.max(x, axis=axis, keepdims=keep))
        np.testing.assert_array_equal(dg.amin(t, dim=axis, keepdim=keep).numpy(),
                                      np.min(x, axis, keepdims=keep))


@given(array_and_axis(min_dims=1, min_side=3), st.sampled_from([0, 1, 2, 0.5]))
def test_var_and_std_divide_by_n_minus_correction(case, correction):
    x, axis, keep = case
    axes = _np_axis(axis, x.ndim)
    n = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    centered = x - x.mean(axis=axes, keepdims=True)
    expected = (centered ** 2).sum(axis=axes, keepdims=keep) / (n - correction)
    got = dg.var(dg.tensor(x), axis, keepdim=keep, correction=correction).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(dg.std(dg.tensor(x), axis, keepdim=keep, correction=correction).numpy(),
                               np.sqrt(expected), atol=1e-12)


def test_var_spellings_of_the_correction():
    x = dg.tensor([1., 2., 4., 7.])
    assert dg.var(x).item() == pytest.approx(np.var(x.numpy(), ddof=1))
    assert dg.var(x, unbiased=False).item() == pytest.approx(np.var(x.numpy()))
    assert dg.var(x, 0, False).item() == pytest.approx(np.var(x.numpy()))
    assert dg.var(x, ddof=0).item() == dg.var(x, correction=0).item()
    assert dg.std(x, ddof=2).item() == pytest.approx(np.std(x.numpy(), ddof=2))
    assert x.var(0, True, True).shape == (1,)


@given(array_and_axis())
def test_logsumexp_softmax_log_softmax_values(case):
    x, axis, keep = case
    t = dg.tensor(x)
    np.testing.assert_allclose(dg.logsumexp(t, axis, keep).numpy(),
                               np.log(np.sum(np.exp(x), axis=axis, keepdims=keep)), rtol=1e-12, atol=1e-12)
    if x.ndim and not isinstance(axis, tuple) and axis is not None:
        e = np.exp(x)
        np.testing.assert_allclose(dg.softmax(t, axis).numpy(), e / e.sum(axis, keepdims=True), rtol=1e-12)
        np.testing.assert_allclose(dg.log_softmax(t, axis).numpy(),
                                   np.log(e / e.sum(axis, keepdims=True)), rtol=1e-12, atol=1e-12)


def test_logsumexp_and_softmax_do_not_overflow():
    x = dg.tensor([1000., 1000., -1000.], requires_grad=True)
    assert dg.logsumexp(x, 0).item() == pytest.approx(1000 + math.log(2))
    np.testing.assert_allclose(dg.softmax(x, 0).detach().numpy(), [0.5, 0.5, 0.0])
    log2 = math.log(2)
    np.testing.assert_allclose(dg.log_softmax(x, -1).detach().numpy(), [-log2, -log2, -2000 - log2])
    (g,) = dg.grad(dg.logsumexp(x, 0), x)
    np.testing.assert_allclose(g.numpy(), [0.5, 0.5, 0.0])
    assert np.isfinite(dg.grad(dg.log_softmax(x, 0)[2], x)[0].numpy()).all()


def test_softmax_defaults_to_the_last_dim():
    x = dg.randn(2, 3)
    np.testing.assert_allclose(dg.softmax(x).numpy(), dg.softmax(x, -1).numpy())
    np.testing.assert_allclose(x.softmax(axis=1).numpy(), dg.softmax(x, 1).numpy())


@given(array_and_axis(), st.sampled_from([1, 2, 3, 0.5, INF, -INF, "fro", 0]))
def test_norm_matches_the_p_norm_formula(case, p):
    x, axis, keep = case
    if x.size == 0:
        return
    a = np.abs(x)
    q = 2 if p == "fro" else p
    if q == INF:
        expected = a.max(axis=axis, keepdims=keep)
    elif q == -INF:
        expected = a.min(axis=axis, keepdims=keep)
    elif q == 0:
        expected = (a != 0).sum(axis=axis, keepdims=keep)
    else:
        expected = (a ** q).sum(axis=axis, keepdims=keep) ** (1 / q)
    np.testing.assert_allclose(dg.norm(dg.tensor(x), p, axis, keep).numpy(), expected, rtol=1e-12)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(-2, 2)), st.data())
def test_cumsum_cumprod_match_numpy(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    t = dg.tensor(x)
    np.testing.assert_allclose(dg.cumsum(t, axis).numpy(), np.cumsum(x, axis))
    np.testing.assert_allclose(t.cumprod(dim=axis).numpy(), np.cumprod(x, axis))
    np.testing.assert_allclose(dg.cumsum(t).numpy(), np.cumsum(x))  # no dim: flattened, as NumPy


def test_all_any_argmax_argmin():
    x = dg.tensor([[1., 5., 0.], [4., 2., 3.]])
    assert x.all().item() is False and x.any().item() is True
    np.testing.assert_array_equal(dg.all(x, dim=1).numpy(), [False, True])
    np.testing.assert_array_equal(dg.any(x == 0, 0, keepdim=True).numpy(), [[False, False, True]])
    assert dg.argmax(x).item() == 1 and dg.argmin(x).item() == 2
    assert dg.argmax(x, keepdim=True).shape == (1, 1)  # torch: flattened index, all dims kept
    np.testing.assert_array_equal(x.argmax(1).numpy(), [1, 0])
    np.testing.assert_array_equal(dg.argmin(x, 0, keepdim=True).numpy(), [[0, 1, 0]])
    assert not dg.argmax(dg.tensor([1., 2.], requires_grad=True)).requires_grad


def test_max_and_min_have_torchs_three_forms():
    x = dg.tensor([[1., 5.], [4., 2.]])
    assert dg.max(x).item() == 5 and x.min().item() == 1
    values, indices = dg.max(x, 1)
    np.testing.assert_array_equal(values.numpy(), [5., 4.])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    result = x.min(dim=0, keepdim=True)
    assert result.values.shape == (1, 2) and result.indices.dtype == np.int64
    np.testing.assert_array_equal(result.indices.numpy(), [[0, 1]])
    np.testing.assert_array_equal(dg.max(x, dg.tensor([3., 3.])).numpy(), [[3., 5.], [4., 3.]])
    np.testing.assert_array_equal(dg.min(x, axis=(0, 1)).numpy(), 1.)


# -- derivatives at ties, zeros and constant inputs -----------------------------------------------------
def test_ties_share_the_gradient_evenly_for_amax_and_full_max():
    for fn in (dg.amax, dg.max, lambda t: dg.norm(t, INF)):
        x = dg.tensor([1., 3., 3., -2.], requires_grad=True)
        (g,) = dg.grad(fn(x), x)
        np.testing.assert_allclose(g.numpy(), [0., 0.5, 0.5, 0.])
    x = dg.tensor([[2., 2.], [1., 0.]], requires_grad=True)
    (g,) = dg.grad(dg.amin(x, 1).sum(), x)
    np.testing.assert_allclose(g.numpy(), [[0.5, 0.5], [0., 1.]])


def test_max_along_a_dim_sends_the_gradient_to_the_returned_index():
    x = dg.tensor([1., 3., 3.], requires_grad=True)
    values, indices = dg.max(x, 0)
    (g,) = dg.grad(values, x)
    expected = np.zeros(3)
    expected[indices.item()] = 1.0
    np.testing.assert_array_equal(g.numpy(), expected)


@pytest.mark.parametrize("x", [[2., 0., 3., 5.], [0., 2., 0., 3.], [0., 0., 0., 1.], [1.5, -2., 3., 0.5]])
def test_prod_gradient_is_exact_with_zeros_to_second_order(x):
    x = np.asarray(x)
    t = dg.tensor(x, requires_grad=True)
    (g,) = dg.grad(dg.prod(t), t)
    others = [np.prod(np.delete(x, i)) for i in range(x.size)]
    np.testing.assert_allclose(g.numpy(), others)
    check_first_order(lambda a: dg.prod(a.reshape(2, 2), 1), [x])
    check_second_order(lambda a: dg.prod(a), [x])
    check_second_order(lambda a: dg.prod(a.reshape(2, 2), 0, keepdim=True), [x])


@pytest.mark.parametrize("x", [[2., 0., 3., 5.], [0., 2., 0., 3.], [1., 2., 0., 0.], [0., 0., 0., 0.]])
def test_cumprod_derivatives_are_exact_with_zeros_to_first_order(x):
    x = np.asarray(x)
    check_first_order(lambda a: dg.cumprod(a, 0), [x])
    check_first_order(lambda a: dg.cumprod(a.reshape(2, 2), 1), [x])
    v = np.arange(1.0, 5.0)
    with fwAD.dual_level():
        out = dg.cumprod(fwAD.make_dual(dg.tensor(x), dg.tensor(v)), 0)
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    exact = [sum(v[k] * np.prod(np.delete(x[:i + 1], k)) for k in range(i + 1)) for i in range(x.size)]
    np.testing.assert_allclose(tangent, exact)


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, INF, -INF, "fro", 0])
def test_norm_has_zero_gradient_and_no_nan_at_zero(p):
    x = dg.zeros(2, 3, requires_grad=True)
    (g,) = dg.grad(dg.norm(x, p), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 3)))
    (g,) = dg.grad(dg.norm(x, p, dim=1).sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 3)))


def test_two_norm_is_twice_differentiable_away_from_zero():
    check_second_order(lambda a: dg.norm(a, dim=1), [np.array([[3., -4.], [0., 1.]])])


def test_std_of_a_constant_has_zero_gradient():
    x = dg.full((3,), 2.0, requires_grad=True)
    (g,) = dg.grad(dg.std(x), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))


def test_complex_reductions_follow_the_conjugate_convention():
    z = np.array([1 + 2j, -0.5 + 1j, 2 - 1j])
    t = dg.tensor(z, requires_grad=True)
    (g,) = dg.grad(dg.norm(t) ** 2, t)  # |z|^2 summed -> 2z
    np.testing.assert_allclose(g.numpy(), 2 * z)
    (g,) = dg.grad(dg.var(t, correction=0), t)
    np.testing.assert_allclose(g.numpy(), 2 * (z - z.mean()) / 3)
    (g,) = dg.grad(dg.prod(t).real, t)  # d Re(prod)/dconj(z) convention: conj of the other factors
    np.testing.assert_allclose(g.numpy(), [np.conj(np.prod(np.delete(z, i))) for i in range(3)])


def test_float32_stays_float32():
    x = dg.tensor([1., 2., 3.], dtype="float32", requires_grad=True)
    for fn in (dg.prod, dg.var, dg.norm, dg.logsumexp, lambda t: dg.softmax(t, 0)[0],
               lambda t: dg.cumprod(t, 0)[-1]):
        out = fn(x)
        assert out.dtype == np.float32
        assert dg.grad(out, x)[0].dtype == np.float32


# -- batching rules ----------------------------------------------------------------------------------
def _bool(rng, shape):
    return rng.standard_normal(shape) > 0


BATCH_CASES = [
    (R.SUM, (2, 3), {"axis": (1,), "keepdims": False}),
    (R.SUM, (2, 3), {"axis": None, "keepdims": True}),
    (R.MEAN, (2, 3), {"axis": (0, 1), "keepdims": False}),
    (R.PROD, (2, 3), {"axis": (0,), "keepdims": True}),
    (R.AMAX, (2, 3), {"axis": None, "keepdims": False}),
    (R.AMIN, (2, 3), {"axis": (1,), "keepdims": True}),
    (R.VAR, (2, 3), {"axis": (1,), "keepdims": False, "correction": 1}),
    (R.STD, (2, 3), {"axis": None, "keepdims": False, "correction": 0}),
    (R.LOGSUMEXP, (2, 3), {"axis": (0,), "keepdims": False}),
    (R.NORM, (2, 3), {"axis": (1,), "keepdims": False, "p": 3.0}),
    (R.NORM, (2, 3), {"axis": None, "keepdims": True, "p": INF}),
    (R.CUMSUM, (2, 3), {"axis": 1}),
    (R.CUMPROD, (2, 3), {"axis": 0}),
    (R.SOFTMAX, (2, 3), {"axis": 1}),
    (R.LOG_SOFTMAX, (2, 3), {"axis": 0}),
    (R.MAX, (2, 3), {"axis": 1, "keepdims": False}),
    (R.MIN, (2, 3), {"axis": 0, "keepdims": True}),
    (R.ARGMAX, (2, 3), {"axis": 1, "keepdims": True}),
    (R.ARGMIN, (2, 3), {"axis": 0, "keepdims": False}),
]


@pytest.mark.parametrize("bdim", [0, 1, 2])
@pytest.mark.parametrize(("op", "shape", "params"), BATCH_CASES, ids=lambda c: getattr(c, "name", None))
def test_batching_rule_equals_a_loop(op, shape, params, bdim):
    check_batch_rule(op, [shape], [bdim], dict(params))


@pytest.mark.parametrize("op", [R.ALL, R.ANY])
def test_batching_rule_of_boolean_reductions(op):
    for bdim in (0, 2):
        check_batch_rule(op, [(2, 3)], [bdim], {"axis": (1,), "keepdims": False}, make=_bool)


def test_vmap_of_public_reductions_equals_a_loop():
    x = np.random.default_rng(1).standard_normal((4, 2, 3))

    def f(t):
        return dg.std(t, 1) + dg.max(t, 0).values.sum() + dg.log_softmax(t).sum() + dg.argmax(t)

    got = dg.vmap(f)(dg.tensor(x)).numpy()
    np.testing.assert_allclose(got, np.stack([f(dg.tensor(row)).numpy() for row in x]))


# -- errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin", "var", "std", "logsumexp",
                                  "norm", "cumsum", "cumprod", "softmax", "log_softmax", "max", "min",
                                  "argmax", "all"])
def test_dim_out_of_range_names_the_op_and_the_range(name):
    fn = (lambda t, d: dg.norm(t, 2, d)) if name == "norm" else getattr(dg, name)
    message = r": Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"
    with pytest.raises(IndexError, match="^" + name + message):
        fn(dg.ones(2, 3), 2)


def test_error_messages_name_the_op():
    with pytest.raises(IndexError, match="cumprod"):
        dg.cumprod(dg.ones(2), -2)
    with pytest.raises(TypeError, match="only one of 'correction', 'unbiased' and 'ddof'"):
        dg.var(dg.ones(3), unbiased=True, correction=0)
    with pytest.raises(TypeError, match="either 'dim' or 'axis'"):
        dg.sum(dg.ones(3), 0, axis=0)


def test_median_forward_mode_and_vmap():
    x = np.array([[3.0, 1.0, 2.0, 5.0], [0.5, 1.5, 1.0, 9.0]])
    t = np.arange(8.0).reshape(2, 4)
    with fwAD.dual_level():
        whole = fwAD.unpack_dual(dg.median(fwAD.make_dual(dg.tensor(x), dg.tensor(t)))).tangent
        rows = fwAD.unpack_dual(dg.median(fwAD.make_dual(dg.tensor(x), dg.tensor(t)), 1).values).tangent
    assert whole.item() == 5.0 and rows.tolist() == [2.0, 6.0]  # the tangents at the medians 1.5; 2.0 and 1.0
    assert dg.vmap(dg.median)(dg.tensor(x)).tolist() == [2.0, 1.0]
    assert dg.vmap(lambda r: dg.median(r, 0).indices)(dg.tensor(x)).tolist() == [2, 2]
