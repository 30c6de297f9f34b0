"""The op paths of the B1 and B2 workloads: cheaper impls and rules that must not change a result.

* ``sigmoid``'s impl computes ``exp(min(x, 0)) / (1 + exp(-|x|))``: the same quotients, bit for bit
  (NaN payloads and signs included), as the selection ``where(x >= 0, 1 / (1 + e), e / (1 + e))``;
* ``matmul``'s impl takes a vector times a matrix with its first tests;
* ``logsumexp``'s impl calls the ufunc reductions directly, and its vjp runs NumPy directly when no
  mode can see it (a fast path: the plain rule of ops otherwise);
* ``x.sum(axis=(...))`` over increasing axes of an unseen tensor, and ``x.reshape(shape_tuple)``,
  skip the argument checks that cannot fail there (fast paths; ``fit_gradient`` calls both).

Each is compared with the plain computation in every mode; the tests that a shortcut is taken are
marked ``fastpath`` (skipped with ``DUALGRAD_FASTPATH=0``, under which the rest must pass too).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import dispatch_calls

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.ops import dispatch
from dualgrad.ops.elementwise.core import _sigmoid_impl
from dualgrad.ops.linalg.products import _matmul_impl
from dualgrad.ops.reductions import _LOGSUMEXP_RULES, _logsumexp_impl, _logsumexp_vjp

_BITS = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}


def _selection_sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _specials(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    payloads = np.array([0x7FF8000000000123, 0xFFF8000000000456], np.uint64).view(np.float64)
    values = np.concatenate([rng.standard_normal(2000) * 30, rng.standard_normal(200) * 1e-3,
                             [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e300, -1e300, 5e-324], payloads])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_gives_the_selections_bits(dtype):
    x = _specials(dtype)
    got = _sigmoid_impl(x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.view(_BITS[dtype]), _selection_sigmoid(x).view(_BITS[dtype]))
    block = x[:24].reshape(2, 3, 4)[:, ::2]  # (a strided view)
    np.testing.assert_array_equal(_sigmoid_impl(block), _selection_sigmoid(block))


def test_sigmoid_of_one_value_bools_and_complex_keep_their_results():
    assert _sigmoid_impl(np.array(0.25)) == _selection_sigmoid(np.array(0.25))
    np.testing.assert_array_equal(_sigmoid_impl(np.array([True, False])), [1 / (1 + np.exp(-1.0)), 0.5])
    z = np.array([0.5 + 1j, -2 - 0.5j])
    np.testing.assert_array_equal(_sigmoid_impl(z), 1 / (1 + np.exp(-z)))


def test_sigmoid_derivatives_against_finite_differences():
    x = dg.tensor(np.linspace(-4, 4, 7), requires_grad=True)
    assert dg.autograd.gradcheck(dg.sigmoid, (x,))
    assert dg.autograd.gradgradcheck(dg.sigmoid, (x,))
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(dg.sigmoid(fwAD.make_dual(x.detach(), dg.ones(7)))).tangent
    (reverse,) = dg.grad(dg.sigmoid(x).sum(), x)
    np.testing.assert_allclose(tangent.numpy(), reverse.numpy(), rtol=1e-15)


def test_vector_times_matrix_is_numpys_product():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(16), rng.standard_normal((16, 64))
    np.testing.assert_array_equal(_matmul_impl(x, w), np.matmul(x, w))
    assert _matmul_impl(np.ones(0), np.ones((0, 3))).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(3,\) and \(4, 2\) cannot be multiplied"):
        _matmul_impl(np.ones(3), np.ones((4, 2)))


def _reference_logsumexp(x, axis, keepdims):
    m = np.amax(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("axis", [(0,), (1,), (0, 1), None])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_logsumexp_impl_gives_the_reference_values(axis, keepdims, dtype):
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(dtype)
    x[0, 1], x[1, 2], x[2, :] = np.inf, np.nan, -np.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        got, expected = _logsumexp_impl(x, axis=axis, keepdims=keepdims), _reference_logsumexp(x, axis, keepdims)
    assert type(got) is np.ndarray and got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("axis, keepdims", [((0,), False), ((1,), True), ((0, 1), False), (None, False)])
def test_logsumexps_gradient_is_the_plain_rules(axis, keepdims):
    rng = np.random.default_rng(3)
    x = dg.tensor(rng.standard_normal((3, 4)))
    out = dg.tensor(_logsumexp_impl(x.numpy(), axis=axis, keepdims=keepdims))
    g = dg.tensor(rng.standard_normal(out.shape))
    got = _logsumexp_vjp(g, out, x, axis=axis, keepdims=keepdims)
    expected = _LOGSUMEXP_RULES[0][0](g, out, x, axis=axis, keepdims=keepdims)
    assert got.shape == expected.shape == x.shape
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("dim", [0, 1, (0, 1)])
def test_logsumexps_derivatives_in_every_mode(dim):
    x = dg.tensor(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
    assert dg.autograd.gradcheck(lambda t: dg.logsumexp(t, dim), (x,))
    assert dg.autograd.gradgradcheck(lambda t: dg.logsumexp(t, dim), (x,))
    (reverse,) = dg.grad(dg.logsumexp(x, dim).sum(), x)
    direction = dg.tensor(np.random.default_rng(5).standard_normal((3, 4)))
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(dg.logsumexp(fwAD.make_dual(x.detach(), direction), dim).sum()).tangent
    np.testing.assert_allclose(float(tangent), float((reverse * direction).sum()), rtol=1e-12)
    per_row = dg.vmap(dg.func.grad(lambda r: dg.logsumexp(r, 0)))(x.detach())
    loop = np.stack([dg.grad(dg.logsumexp(row, 0), row)[0].numpy()
                     for row in (x.detach()[i].clone().requires_grad_() for i in range(3))])
    np.testing.assert_allclose(per_row.numpy(), loop, rtol=1e-15)


def test_logsumexp_of_one_value_and_float16():
    x = dg.tensor(1.5, requires_grad=True)
    assert dg.grad(dg.logsumexp(x, 0), x)[0].item() == 1.0
    h = dg.tensor(np.array([1.0, 2.0, 3.0], np.float16), requires_grad=True)
    (g,) = dg.grad(dg.logsumexp(h, 0), h)
    assert g.dtype == dg.float16
    np.testing.assert_allclose(g.numpy(), np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum(), rtol=2e-3)


def _same(result: dg.Tensor, expected: dg.Tensor) -> None:
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result.detach().numpy(), expected.detach().numpy())
    assert result.requires_grad == expected.requires_grad
    assert (result.grad_fn is None) == (expected.grad_fn is None)
    if result.grad_fn is not None:
        assert result.grad_fn.name() == expected.grad_fn.name()
    assert result.is_inference() == expected.is_inference()
    assert result._is_view() == expected._is_view()


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1, 2), (), (1, 0), (-1,), (2, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("mode", ["plain", "requires_grad", "no_grad", "inference_mode", "view"])
def test_sum_over_axes_is_dispatchs_sum(axes, keepdims, mode):
    data = np.random.default_rng(6).standard_normal((2, 3, 4))
    x = dg.tensor(data, requires_grad=mode == "requires_grad")
    if mode == "view":
        x = dg.tensor(np.concatenate([data, data]))[2:]
    context = {"no_grad": dg.no_grad, "inference_mode": dg.inference_mode}.get(mode, dg.enable_grad)
    with context():
        if len(set(axes)) < len(axes):
            with pytest.raises(RuntimeError):
                x.sum(axis=axes, keepdims=keepdims)
            return
        _same(x.sum(axis=axes, keepdims=keepdims), dg.sum(x, dim=list(axes) or None, keepdim=keepdims)
              if axes else dispatch.apply(dg.ops.reductions.SUM, x, axis=(), keepdims=keepdims))


@pytest.mark.parametrize("shape", [(6,), (2, 3), (3, 2, 1), (1, 6)])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_reshape_by_a_tuple_is_the_checked_reshape(shape, requires_grad):
    x = dg.tensor(np.arange(6.0), requires_grad=requires_grad)
    _same(x.reshape(shape), x.reshape(*shape))
    _same(x.reshape(shape), x.reshape(shape=list(shape)))
    with pytest.raises(RuntimeError, match=r"reshape: shape \(4, 2\) is invalid"):
        x.reshape((4, 2))
    _same(x.reshape((2, -1)), x.reshape(2, 3))


def test_gradients_through_broadcasts_against_finite_differences():
    """B1's per-observation products of a vector with one value: ``fit_gradient`` sums them back."""
    v = dg.tensor([0.3, -1.2, 2.0], requires_grad=True)
    s = dg.tensor(0.7, requires_grad=True)

    def f(v, s):
        return (v * s + v / s.cos()).sin() * s

    assert dg.autograd.gradcheck(f, (v, s))
    assert dg.autograd.gradgradcheck(f, (v, s))



@pytest.mark.fastpath
def test_the_shortcuts_are_taken_only_when_no_mode_can_see_them():
    x = dg.ones(2, 3)
    assert dispatch_calls(lambda: x.sum(axis=(1,), keepdims=True)) == 0
    assert dispatch_calls(lambda: x.sum(axis=(-1,))) == 1
    assert dispatch_calls(lambda: x.requires_grad_().sum(axis=(1,))) == 1
    with dg.no_grad():
        assert dispatch_calls(lambda: x.sum(axis=(1,))) == 0
    with dg.inference_mode():
        assert dispatch_calls(lambda: x.sum(axis=(1,))) == 1
    g, out, y = dg.ones(2), dg.zeros(2), dg.zeros(2, 3)
    assert dispatch_calls(lambda: _logsumexp_vjp(g, out, y, axis=(1,), keepdims=False)) == 0
    assert dispatch_calls(lambda: _logsumexp_vjp(g.requires_grad_(), out, y, axis=(1,), keepdims=False)) > 0


@pytest.mark.parametrize("index", [(1,), (slice(1, 3),), (slice(None), 2), (slice(None, None, 2), slice(1, None)),
                                   (np.array([0, 2, 0]),), (np.array([True, False, True, False]),), (Ellipsis, 1)],
                         ids=repr)
def test_indexings_gradient_is_the_scatters(index):
    from dualgrad.ops.indexing import INDEX_ADD_INTO_ZEROS, _getitem_vjp

    x = dg.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    g = dg.tensor(np.random.default_rng(7).standard_normal(x.detach().numpy()[index].shape))
    expected = dispatch.apply(INDEX_ADD_INTO_ZEROS, g, shape=x.shape, index=index)
    _same(_getitem_vjp(g, None, x, index), expected)
    assert dg.autograd.gradcheck(lambda t: (t[index] ** 2).sum(), (x,))
    assert dg.autograd.gradgradcheck(lambda t: t[index] ** 2, (x,))
    per_row = dg.vmap(dg.func.grad(lambda t: (t[index[-1:]] ** 2).sum()))(x.detach()[None])
    np.testing.assert_allclose(per_row.numpy()[0], dg.grad((x[index[-1:]] ** 2).sum(), x)[0].numpy())


@pytest.mark.fastpath
def test_indexings_gradient_dispatches_only_when_seen():
    from dualgrad.ops.indexing import _getitem_vjp

    x, g = dg.ones(4, 3), dg.ones(3)
    assert dispatch_calls(lambda: _getitem_vjp(g, None, x, (1,))) == 0
    assert dispatch_calls(lambda: _getitem_vjp(g.requires_grad_(), None, x, (1,))) == 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
def test_the_output_slopes_of_tanh_and_sigmoid_keep_their_values(dtype):
    from dualgrad.ops.elementwise.core import _sigmoid_slope, _tanh_slope

    y = np.random.default_rng(8).standard_normal(40).astype(dtype)
    for got, expected in ((_sigmoid_slope(y), (1 - y) * y), (_tanh_slope(y), 1 - y * y)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert _sigmoid_slope(np.array(0.5, dtype)) == 0.25 and _tanh_slope(np.array(0.5, dtype)) == 0.75


def _bits(t: dg.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().numpy()).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((), ()), ((3,), ()), ((), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4))], ids=str)
def test_divisions_partials_are_the_expressions_bits(dtype, shapes):
    from dualgrad.ops.elementwise.core import _div_partial_x, _div_partial_y

    rng = np.random.default_rng(9)
    specials = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-30, 3.0])
    for _ in range(30):
        x, y = (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 4) for shape in shapes)
        if rng.random() < 0.4:
            x = np.full(shapes[0], rng.choice(specials))
        if rng.random() < 0.4:
            y = np.full(shapes[1], rng.choice(specials))
        x, y = dg.tensor(np.asarray(x, dtype)), dg.tensor(np.asarray(y, dtype))
        with np.errstate(all="ignore"):
            pairs = ((_div_partial_x(None, x, y), 1 / y), (_div_partial_y(None, x, y), -(x / y) / y))
        for got, expected in pairs:
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_division_derivatives_in_every_mode():
    x = dg.tensor([0.3, -1.2, 2.0], requires_grad=True)
    y = dg.tensor(0.7, requires_grad=True)
    assert dg.autograd.gradcheck(lambda a, b: a / b, (x, y))
    assert dg.autograd.gradgradcheck(lambda a, b: a / b, (x, y))
    gx, gy = dg.grad((x / y).sum(), (x, y))
    with fwAD.dual_level():
        quotient = fwAD.make_dual(x.detach(), dg.ones(3)) / fwAD.make_dual(y.detach(), dg.tensor(1.0))
        out = fwAD.unpack_dual(quotient.sum())
    np.testing.assert_allclose(float(out.tangent), float(gx.sum() + gy), rtol=1e-14)
    gradient_of_y = dg.func.grad(lambda a, b: (a / b).sum(), argnums=1)
    per_row = dg.vmap(gradient_of_y, in_dims=(0, None))(x.detach()[None], y.detach())
    np.testing.assert_allclose(per_row.numpy(), [float(gy)], rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_the_partials_of_sin_and_cos_are_the_ops_bits(dtype, shape):
    from dualgrad.ops.elementwise.core import _cos_partial, _sin_partial

    for values in (np.random.default_rng(10).standard_normal(shape) * 5, np.full(shape, np.nan),
                   np.full(shape, -0.0), np.full(shape, np.inf)):
        x = dg.tensor(np.asarray(values, dtype))
        with np.errstate(invalid="ignore"):
            pairs = ((_sin_partial(None, x), dg.cos(x)), (_cos_partial(None, x), -dg.sin(x)))
        for got, expected in pairs:
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(_bits(got), _bits(expected))
    x = dg.tensor(np.linspace(-3, 3, 5), requires_grad=True)
    for fn in (dg.sin, dg.cos):
        assert dg.autograd.gradcheck(fn, (x,)) and dg.autograd.gradgradcheck(fn, (x,))
