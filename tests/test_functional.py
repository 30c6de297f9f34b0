"""dualgrad.autograd.functional against finite differences and against each other."""

from __future__ import annotations

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 2))
STRATEGIES = [dict(vectorize=False), dict(vectorize=True),
              dict(vectorize=True, strategy="forward-mode")]
HESSIAN_STRATEGIES = [dict(vectorize=False), dict(vectorize=True),
                      dict(vectorize=True, outer_jacobian_strategy="forward-mode")]


def two_in_two_out(x, y):
    """(R^2, R^3) -> (R^3, R^2)."""
    return (dg.tensor(A) @ x).sin() * y, x.exp() * y.sum()


def scalar(x, y):
    a, b = two_in_two_out(x, y)
    return (a ** 2).sum() * b.sum() + (x ** 3).sum() * y.prod()


def numeric_jacobian(fn, xs, i, o, eps=1e-6):
    """d fn(*xs)[o] / d xs[i] by central differences, shape out.shape + x.shape."""
    cols = []
    for k in range(xs[i].size):
        e = np.zeros(xs[i].size)
        e[k] = eps
        plus, minus = list(xs), list(xs)
        plus[i], minus[i] = xs[i] + e.reshape(xs[i].shape), xs[i] - e.reshape(xs[i].shape)
        with dg.no_grad():
            hi = _as_tuple(fn(*[dg.tensor(a) for a in plus]))[o].numpy()
            lo = _as_tuple(fn(*[dg.tensor(a) for a in minus]))[o].numpy()
        cols.append((hi - lo) / (2 * eps))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(cols[0]) + xs[i].shape)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def gradient(x, y):
    """The gradient of ``scalar`` by reverse mode (the reference for Hessians)."""
    with dg.enable_grad():
        x, y = x.detach().requires_grad_(), y.detach().requires_grad_()
        return tuple(g.detach() for g in dg.grad(scalar(x, y), (x, y)))


points = st.tuples(hnp.arrays(np.float64, 2, elements=st.floats(-1, 1)),
                   hnp.arrays(np.float64, 3, elements=st.floats(0.5, 1.5)))


@pytest.mark.parametrize("options", STRATEGIES)
@given(point=points)
def test_jacobian_tuple_inputs_and_outputs_match_finite_differences(options, point):
    jac = jacobian(two_in_two_out, tuple(dg.tensor(p) for p in point), **options)
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(row) == 2 for row in jac)
    for o in range(2):
        for i in range(2):
            np.testing.assert_allclose(jac[o][i].numpy(), numeric_jacobian(two_in_two_out, point, i, o),
                                       rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("options", STRATEGIES)
def test_jacobian_single_input_and_output_is_a_tensor(options):
    x0 = RNG.standard_normal(2)
    jac = jacobian(lambda x: two_in_two_out(x, dg.ones(3))[0], dg.tensor(x0), **options)
    assert isinstance(jac, dg.Tensor) and jac.shape == (3, 2)
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(lambda x: two_in_two_out(x, dg.ones(3))[0],
                                                             (x0,), 0, 0), rtol=1e-6)


@pytest.mark.parametrize("options", HESSIAN_STRATEGIES)
@given(point=points)
def test_hessian_matches_finite_differences_of_the_gradient_and_is_symmetric(options, point):
    hess = hessian(scalar, tuple(dg.tensor(p) for p in point), **options)
    for i in range(2):
        for j in range(2):
            expected = numeric_jacobian(gradient, point, j, i)
            np.testing.assert_allclose(hess[i][j].numpy(), expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(hess[i][j].numpy(), hess[j][i].numpy().T, rtol=1e-10, atol=1e-12)


@given(point=points, seed=st.integers(0, 2**32 - 1))
def test_vector_products_agree_with_jacobians_and_hessians(point, seed):
    rng = np.random.default_rng(seed)
    xs = tuple(dg.tensor(p) for p in point)
    u = tuple(dg.tensor(rng.standard_normal(s)) for s in (3, 2))
    v = tuple(dg.tensor(rng.standard_normal(p.shape)) for p in point)
    jac = jacobian(two_in_two_out, xs)
    _, vjp_u = vjp(two_in_two_out, xs, u)
    _, jvp_v = jvp(two_in_two_out, xs, v)
    for i in range(2):
        expected = sum(np.tensordot(u[o].numpy(), jac[o][i].numpy(), axes=1) for o in range(2))
        np.testing.assert_allclose(vjp_u[i].numpy(), expected, rtol=1e-10, atol=1e-12)
    for o in range(2):
        expected = sum(jac[o][i].numpy() @ v[i].numpy() for i in range(2))
        np.testing.assert_allclose(jvp_v[o].numpy(), expected, rtol=1e-10, atol=1e-12)
    hess = hessian(scalar, xs)
    value, vhp_v = vhp(scalar, xs, v)
    value2, hvp_v = hvp(scalar, xs, v)
    assert np.isclose(value.item(), value2.item())
    for i in range(2):
        expected = sum(hess[i][j].numpy() @ v[j].numpy() for j in range(2))
        np.testing.assert_allclose(hvp_v[i].numpy(), expected, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(vhp_v[i].numpy(), expected, rtol=1e-9, atol=1e-10)


def test_create_graph_results_are_differentiable():
    x = dg.tensor([0.3, -0.2], requires_grad=True)
    y = dg.tensor([1.0, 1.2, 0.8])
    jac = jacobian(lambda a: two_in_two_out(a, y)[1], x, create_graph=True)
    (g,) = dg.grad(jac.sum(), x)
    expected = numeric_jacobian(lambda a: jacobian(lambda b: two_in_two_out(b, y)[1], a).sum(),
                                (x.detach().numpy(),), 0, 0)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6)
    assert not jacobian(lambda a: a * 2, x).requires_grad


def test_non_strict_unused_inputs_give_zeros():
    x, y = dg.ones(2), dg.ones(3)
    for options in STRATEGIES:
        jac = jacobian(lambda a, b: a * 2, (x, y), **options)
        assert np.all(jac[1].numpy() == 0) and jac[1].shape == (2, 3)


@pytest.mark.parametrize("call, error, words", [
    (lambda: jacobian(lambda a: a, dg.ones(2), vectorize=True, strict=True), RuntimeError,
     "`strict=True` and `vectorize=True` are not supported together"),
    (lambda: jacobian(lambda a: a, dg.ones(2), strategy="forward-mode"), NotImplementedError,
     "only implemented for `vectorize=True`"),
    (lambda: jacobian(lambda a: a, dg.ones(2), strategy="forward-mode", vectorize=True, create_graph=True),
     NotImplementedError, "`create_graph=True` and `strategy=\"forward-mode\"` are not supported together"),
    (lambda: jacobian(lambda a: a, dg.ones(2), strategy="sideways"), AssertionError,
     'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more'),
    (lambda: hessian(lambda a: a.sum(), dg.ones(2), outer_jacobian_strategy="bad"), AssertionError,
     '^Expected strategy to be either "forward-mode" or "reverse-mode".$'),
    (lambda: jacobian(lambda a: dg.ones(2), dg.ones(2), strict=True), RuntimeError,
     "Output 0 of the user-provided function does not require gradients"),
    (lambda: jacobian(lambda a, b: a * 2, (dg.ones(2), dg.ones(2)), strict=True), RuntimeError,
     "Output 0 of the user-provided function is independent of input 1"),
    (lambda: vjp(lambda a, b: a * 2, (dg.ones(2), dg.ones(2)), dg.ones(2), strict=True), RuntimeError,
     "independent of input 1"),
    (lambda: hessian(lambda a: a, dg.ones(2)), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda: hessian(lambda a: a.sum(), dg.ones(2), outer_jacobian_strategy="forward-mode"),
     NotImplementedError, "only implemented for `vectorize=True`"),
    (lambda: hessian(lambda a: a.sum(), dg.ones(2), vectorize=True, strict=True), RuntimeError,
     "`strict=True` and `vectorize=True` are not supported together"),
    (lambda: hessian(lambda a: (a * 2).sum(), dg.ones(2), strict=True), RuntimeError,
     "jacobian of the user-provided function with respect to input 0 is independent of the input"),
    (lambda: vhp(lambda a: a, dg.ones(2), dg.ones(2)), RuntimeError,
     "function given to vhp should contain a single element"),
    (lambda: hvp(lambda a: a.sum(), dg.ones(2), dg.ones(3)), RuntimeError, "v has invalid size"),
    (lambda: vjp(lambda a: a, dg.ones(2)), RuntimeError, "v can only be None if the user-provided function"),
    (lambda: jvp(lambda a: a, dg.ones(2)), RuntimeError, "v can only be None if the input"),
    (lambda: jvp(lambda a: dg.ones(2), dg.ones(2), dg.ones(2), strict=True), RuntimeError,
     "Output 0 of the user-provided function does not require gradients"),
    (lambda: jacobian(lambda a: a, [1.0]), TypeError, "must be a Tensor or a tuple of Tensors"),
])
def test_functional_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


# -- strict mode as torch 2.13 words and applies it ----------------------------------------------------
F = dg.autograd.functional


def test_strict_jvp_rejects_an_unused_input_and_a_constant_output():
    x, v = dg.tensor([1., 2.]), dg.tensor([1., 1.])
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
        F.jvp(lambda a, b: a * 2, (x, x), (v, v), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        F.jvp(lambda a: dg.ones(2), x, v, strict=True)
    assert F.jvp(lambda a, b: a * b, (x, x), (v, v), strict=True)[1].tolist() == [2., 4.]


def test_jvp_result_has_the_output_dtype_whatever_v_dtype():
    # torch's jvp (a double backward): the output's dtype, even where the tangent passes as it is
    x, v = dg.ones(2), dg.ones(2, dtype=dg.float32)
    for fn in (lambda a: a, lambda a: a[:1], lambda a: a * 2):
        assert jvp(fn, x, v)[1].dtype == np.float64


@pytest.mark.parametrize("product", ["hvp", "vhp"])
def test_strict_hessian_products_reject_a_linear_function(product):
    x = dg.tensor([1., 2.])
    with pytest.raises(RuntimeError, match="found that the jacobian of the user-provided function with respect "
                                           "to input 0 is independent of the input"):
        getattr(F, product)(lambda a: a.sum(), x, x, strict=True)
