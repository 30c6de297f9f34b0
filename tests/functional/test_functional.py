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
    (lambda: hessian(lambda a: (a ** 3).sum(), dg.ones(2), vectorize=True, strict=True), RuntimeError,
     "jacobian: `strict=True` and `vectorize=True` are not supported together"),
    (lambda: hessian(lambda a: (a * 2).sum(), dg.ones(2), strict=True), RuntimeError,
     "jacobian of the user-provided function with respect to input 0 is independent of the input"),
    (lambda: vhp(lambda a: a, dg.ones(2), dg.ones(2)), RuntimeError,
     "function given to vhp should contain a single element"),
    (lambda: hvp(lambda a: a.sum(), dg.ones(2), dg.ones(3)), RuntimeError, "v has invalid size"),
    (lambda: vjp(lambda a: a, dg.ones(2)), RuntimeError, "v can only be None if the user-provided function"),
    (lambda: jvp(lambda a: a, dg.ones(2)), RuntimeError, "v can only be None if the input"),
    (lambda: jvp(lambda a: dg.ones(2), dg.ones(2), dg.ones(2), strict=True), RuntimeError,
     "Output 0 of the user-provided function does not require gradients"),
    (lambda: jacobian(lambda a: a, [1.0]), TypeError, "must be either a Tensor or a tuple of Tensors"),
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


# -- differential table: torch 2.13's results written out (structure, shapes, dtype, requires_grad) ----
class T:
    """An expected Tensor: its shape, values, dtype and requires_grad."""

    def __init__(self, shape, values, dtype="float64", requires_grad=False):
        self.shape, self.values, self.dtype, self.requires_grad = shape, values, dtype, requires_grad


def check(result, expected):
    """``result`` has ``expected``'s nesting (tuples of Tensors) and each Tensor matches."""
    if isinstance(expected, T):
        assert isinstance(result, dg.Tensor), result
        assert result.shape == expected.shape and result.dtype == getattr(dg, expected.dtype)
        assert result.requires_grad == expected.requires_grad
        np.testing.assert_allclose(result.detach().numpy(), np.array(expected.values), atol=1e-12)
    else:
        assert type(result) is tuple and len(result) == len(expected), result
        for r, e in zip(result, expected, strict=True):
            check(r, e)


def v2():
    return dg.tensor([1., 2.])


EYE2 = [[1., 0.], [0., 1.]]
# jacobian(func, inputs) under every strategy (STRATEGIES), hessian under HESSIAN_STRATEGIES:
# torch gives the same nesting and values
JACOBIAN_TABLE = [
    ("single in, single out: a Tensor", lambda x: x ** 2, v2, T((2, 2), [[2., 0.], [0., 4.]])),
    ("0-d in, 0-d out", lambda x: x ** 3, lambda: dg.tensor(2.), T((), 12.)),
    ("0-d in", lambda x: x * dg.tensor([1., 2., 3.]), lambda: dg.tensor(2.), T((3,), [1., 2., 3.])),
    ("0-d out", lambda x: (x ** 2).sum(), v2, T((2,), [2., 4.])),
    ("tuple in, tuple out: a tuple of tuples", lambda x, y: (x * y.sum(), (x ** 2).sum() * y),
     lambda: (v2(), dg.tensor([[3., 4., 5.]])),
     ((T((2, 2), [[12., 0.], [0., 12.]]), T((2, 1, 3), [[[1., 1., 1.]], [[2., 2., 2.]]])),
      (T((1, 3, 2), [[[6., 12.], [8., 16.], [10., 20.]]]),
       T((1, 3, 1, 3), [[[[5., 0., 0.]], [[0., 5., 0.]], [[0., 0., 5.]]]])))),
    ("tuple in, single out", lambda x, y: x * y, lambda: (v2(), dg.tensor([3., 4.])),
     (T((2, 2), [[3., 0.], [0., 4.]]), T((2, 2), [[1., 0.], [0., 2.]]))),
    ("single in, tuple out", lambda x: (x, x.sum()), v2, (T((2, 2), EYE2), T((2,), [1., 1.]))),
    ("1-tuple in", lambda x: x * 2, lambda: (v2(),), (T((2, 2), [[2., 0.], [0., 2.]]),)),
    ("1-tuple out", lambda x: (x * 2,), v2, (T((2, 2), [[2., 0.], [0., 2.]]),)),
    ("the input returned unchanged", lambda x: x, v2, T((2, 2), EYE2)),
    ("an output independent of the input: zeros", lambda x: dg.ones(3), v2, T((3, 2), [[0., 0.]] * 3)),
    ("an unused input: zeros", lambda x, y: x * 2, lambda: (v2(), dg.ones(3)),
     (T((2, 2), [[2., 0.], [0., 2.]]), T((2, 3), [[0., 0., 0.]] * 2))),
    ("an input requiring grad: the result is detached", lambda x: x ** 2,
     lambda: dg.tensor([1., 2.], requires_grad=True), T((2, 2), [[2., 0.], [0., 4.]])),
    ("float32 stays float32", lambda x: x * x, lambda: dg.tensor([1., 2.], dtype=dg.float32),
     T((2, 2), [[2., 0.], [0., 4.]], "float32")),
]


HESSIAN_TABLE = [
    ("single input: a Tensor", lambda x: (x ** 3).sum(), v2, T((2, 2), [[6., 0.], [0., 12.]])),
    ("0-d input", lambda x: x ** 3, lambda: dg.tensor(2.), T((), 12.)),
    ("a (1,) output", lambda x: (x ** 3).sum().reshape(1), v2, T((2, 2), [[6., 0.], [0., 12.]])),
    ("tuple input: a tuple of tuples", lambda x, y: (x ** 2).sum() * y.sum(),
     lambda: (v2(), dg.tensor([3., 4., 5.])),
     ((T((2, 2), [[24., 0.], [0., 24.]]), T((2, 3), [[2., 2., 2.], [4., 4., 4.]])),
      (T((3, 2), [[2., 4.]] * 3), T((3, 3), [[0., 0., 0.]] * 3)))),
    ("1-tuple input", lambda x: (x ** 3).sum(), lambda: (v2(),), ((T((2, 2), [[6., 0.], [0., 12.]]),),)),
    ("linear: zeros", lambda x: (x * 2).sum(), v2, T((2, 2), [[0., 0.], [0., 0.]])),
    ("an unused input: zeros", lambda x, y: (x ** 3).sum(), lambda: (v2(), dg.ones(1)),
     ((T((2, 2), [[6., 0.], [0., 12.]]), T((2, 1), [[0.], [0.]])), (T((1, 2), [[0., 0.]]), T((1, 1), [[0.]])))),
    ("float32", lambda x: (x ** 3).sum(), lambda: dg.tensor([1., 2.], dtype=dg.float32),
     T((2, 2), [[6., 0.], [0., 12.]], "float32")),
]


MATRIX_ROWS = [(fn, options, *row) for fn, table, strategies in [(jacobian, JACOBIAN_TABLE, STRATEGIES),
                                                                    (hessian, HESSIAN_TABLE, HESSIAN_STRATEGIES)]
               for row in table for options in strategies]


@pytest.mark.parametrize("fn, options, func, point, expected", [row[:2] + row[3:] for row in MATRIX_ROWS],
                         ids=[f"{row[0].__name__} {row[2]} {row[1]}" for row in MATRIX_ROWS])
def test_jacobian_and_hessian_tables(fn, options, func, point, expected):
    check(fn(func, point(), **options), expected)


def rg(*values):
    return dg.tensor(list(values), requires_grad=True)


CUBE = (lambda x: (x ** 3).sum())
PRODUCTS_TABLE = [
    # vjp / jvp: (outputs, product); v may be omitted for one single-element output / input
    ("vjp", lambda: vjp(lambda x: x ** 2, v2(), dg.tensor([1., 3.])), (T((2,), [1., 4.]), T((2,), [2., 12.]))),
    ("jvp", lambda: jvp(lambda x: x ** 2, v2(), dg.tensor([1., 3.])), (T((2,), [1., 4.]), T((2,), [2., 12.]))),
    ("vjp v omitted, 0-d", lambda: vjp(lambda x: x ** 2, dg.tensor(3.)), (T((), 9.), T((), 6.))),
    ("jvp v omitted, (1,)", lambda: jvp(lambda x: x ** 2, dg.tensor([3.])), (T((1,), [9.]), T((1,), [6.]))),
    ("vjp v omitted, 0-d output", lambda: vjp(lambda x: (x ** 2).sum(), v2()), (T((), 5.), T((2,), [2., 4.]))),
    ("jvp v omitted, 0-d input", lambda: jvp(lambda x: x * v2(), dg.tensor(2.)),
     (T((2,), [2., 4.]), T((2,), [1., 2.]))),
    ("vjp tuples", lambda: vjp(lambda x, y: (x * y, x.sum()), (v2(), dg.tensor([3., 4.])),
                               (dg.tensor([1., 1.]), dg.tensor(2.))),
     ((T((2,), [3., 8.]), T((), 3.)), (T((2,), [5., 6.]), T((2,), [1., 2.])))),
    ("jvp tuples", lambda: jvp(lambda x, y: (x * y, x.sum()), (v2(), dg.tensor([3., 4.])),
                               (dg.tensor([1., 1.]), v2())),
     ((T((2,), [3., 8.]), T((), 3.)), (T((2,), [4., 8.]), T((), 2.)))),
    ("vjp a 1-tuple v for a single output", lambda: vjp(lambda x: x * 2, v2(), (v2(),)),
     (T((2,), [2., 4.]), T((2,), [2., 4.]))),
    ("vjp output independent of the input: zeros", lambda: vjp(lambda x: dg.ones(2), v2(), v2()),
     (T((2,), [1., 1.]), T((2,), [0., 0.]))),
    ("jvp output independent of the input: zeros", lambda: jvp(lambda x: dg.ones(2), v2(), v2()),
     (T((2,), [1., 1.]), T((2,), [0., 0.]))),
    ("vjp identity", lambda: vjp(lambda x: x, v2(), dg.tensor([5., 6.])), (T((2,), [1., 2.]), T((2,), [5., 6.]))),
    ("jvp identity", lambda: jvp(lambda x: x, v2(), dg.tensor([5., 6.])), (T((2,), [1., 2.]), T((2,), [5., 6.]))),
    ("vjp input requiring grad: detached", lambda: vjp(lambda x: x ** 3, rg(1., 2.), dg.tensor([5., 6.])),
     (T((2,), [1., 8.]), T((2,), [15., 72.]))),
    ("vjp create_graph", lambda: vjp(lambda x: x ** 3, rg(1., 2.), dg.tensor([5., 6.]), create_graph=True),
     (T((2,), [1., 8.], requires_grad=True), T((2,), [15., 72.], requires_grad=True))),
    ("jvp create_graph", lambda: jvp(lambda x: x ** 3, rg(1., 2.), dg.tensor([5., 6.]), create_graph=True),
     (T((2,), [1., 8.], requires_grad=True), T((2,), [15., 72.], requires_grad=True))),
    ("vjp create_graph, a constant product", lambda: vjp(lambda x: x, rg(1., 2.), v2(), create_graph=True),
     (T((2,), [1., 2.], requires_grad=True), T((2,), [1., 2.]))),
    ("vjp strict", lambda: vjp(lambda x: x * 2, v2(), v2(), strict=True), (T((2,), [2., 4.]), T((2,), [2., 4.]))),
    ("vjp complex", lambda: vjp(lambda x: x * x, dg.tensor([1 + 2j, 3 - 1j]), dg.tensor([1 + 0j, 1j])),
     (T((2,), [-3 + 4j, 8 - 6j], "complex128"), T((2,), [2 - 4j, -2 + 6j], "complex128"))),
    ("jvp complex", lambda: jvp(lambda x: x * x, dg.tensor([1 + 2j, 3 - 1j]), dg.tensor([1 + 0j, 1j])),
     (T((2,), [-3 + 4j, 8 - 6j], "complex128"), T((2,), [2 + 4j, 2 + 6j], "complex128"))),
    ("vjp complex input, real output", lambda: vjp(lambda x: x.abs() ** 2, dg.tensor([1 + 2j, 3 - 1j]), v2()),
     (T((2,), [5., 10.]), T((2,), [2 + 4j, 12 - 4j], "complex128"))),
    ("jvp float32", lambda: jvp(lambda x: x * x, dg.tensor([1., 2.], dtype=dg.float32),
                                dg.tensor([1., 1.], dtype=dg.float32)),
     (T((2,), [1., 4.], "float32"), T((2,), [2., 4.], "float32"))),
    # vhp / hvp: (the 0-d or (1, 1) output, the product shaped as the inputs)
    *[(f"{name} {what}", call, expected) for name in ("vhp", "hvp") for what, call, expected in [
        ("", lambda f=F.__dict__[name]: f(CUBE, v2(), dg.tensor([1., 3.])), (T((), 9.), T((2,), [6., 36.]))),
        ("v omitted, 0-d", lambda f=F.__dict__[name]: f(lambda x: x ** 3, dg.tensor(2.)), (T((), 8.), T((), 12.))),
        ("a (1, 1) output", lambda f=F.__dict__[name]: f(lambda x: CUBE(x).reshape(1, 1), v2(), v2()),
         (T((1, 1), [[9.]]), T((2,), [6., 24.]))),
        ("tuples", lambda f=F.__dict__[name]: f(lambda x, y: (x ** 2).sum() * y.sum(),
                                                (v2(), dg.tensor([3., 4., 5.])),
                                                (dg.tensor([1., 0.]), dg.tensor([0., 1., 0.]))),
         (T((), 60.), (T((2,), [26., 4.]), T((3,), [2., 2., 2.])))),
        ("1-tuple", lambda f=F.__dict__[name]: f(CUBE, (v2(),), (v2(),)), (T((), 9.), (T((2,), [6., 24.]),))),
        ("linear: zeros", lambda f=F.__dict__[name]: f(lambda x: (x * 2).sum(), v2(), v2()),
         (T((), 6.), T((2,), [0., 0.]))),
        ("an unused input: zeros", lambda f=F.__dict__[name]: f(lambda x, y: CUBE(x), (v2(), dg.ones(1)),
                                                               (v2(), dg.ones(1))),
         (T((), 9.), (T((2,), [6., 24.]), T((1,), [0.])))),
        ("create_graph", lambda f=F.__dict__[name]: f(CUBE, rg(1., 2.), rg(5., 6.), create_graph=True),
         (T((), 9., requires_grad=True), T((2,), [30., 72.], requires_grad=True))),
        ("float32", lambda f=F.__dict__[name]: f(CUBE, dg.tensor([1., 2.], dtype=dg.float32),
                                                 dg.tensor([1., 1.], dtype=dg.float32)),
         (T((), 9., "float32"), T((2,), [6., 12.], "float32"))),
    ]],
]


@pytest.mark.parametrize("call, expected", [row[1:] for row in PRODUCTS_TABLE],
                         ids=[row[0] for row in PRODUCTS_TABLE])
def test_products_table(call, expected):
    check(call(), expected)


ALL = {"jacobian": jacobian, "hessian": hessian, "vjp": vjp, "jvp": jvp, "vhp": vhp, "hvp": hvp}
ERRORS_TABLE = [
    # arguments: a list is not a tuple; torch's wording
    *[(f"{name}: inputs a float", lambda f=f: f(lambda x: x, 2.0), TypeError,
       f"^The inputs given to {name} must be either a Tensor or a tuple of Tensors but the given inputs has "
       "type <class 'float'>.$") for name, f in ALL.items()],
    *[(f"{name}: inputs a list", lambda f=f: f(lambda x: (x * x).sum(), [v2()]), TypeError,
       f"The inputs given to {name} must be either a Tensor or a tuple of Tensors but the given inputs has "
       "type <class 'list'>") for name, f in ALL.items()],
    *[(f"{name}: output a float", lambda f=f: f(lambda x: 3.0, v2(), v2()), TypeError,
       f"The outputs of the user-provided function given to {name} must be either a Tensor or a tuple of "
       "Tensors but the given outputs of the user-provided function has type <class 'float'>")
      for name, f in ALL.items() if name not in ("jacobian", "hessian")],
    *[(f"{name}: output a list", lambda f=f: f(lambda x: [x.sum()], v2()), TypeError,
       f"The outputs of the user-provided function given to {name} must be either a Tensor or a tuple of "
       "Tensors but the given outputs of the user-provided function has type <class 'list'>")
      for name, f in (("jacobian", jacobian), ("hessian", hessian))],
    ("jacobian: an input not a Tensor", lambda: jacobian(lambda x, y: x, (v2(), 3.0)), TypeError,
     "must be either a Tensor or a tuple of Tensors but the value at index 1 has type <class 'float'>"),
    ("jacobian forward: an output not a Tensor",
     lambda: jacobian(lambda x: (x, 3), v2(), vectorize=True, strategy="forward-mode"), TypeError,
     "but the value at index 1 has type <class 'int'>"),
    ("hessian: output a tuple", lambda: hessian(lambda x: (x.sum(),), v2()), RuntimeError,
     "The function given to hessian should return a single Tensor"),
    # v
    ("vjp: v omitted, two elements", lambda: vjp(lambda x: x, v2()), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor with a single element."),
    *[(f"{name}: v omitted, two elements", lambda f=f: f(lambda x: x.sum(), v2()), RuntimeError,
       "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
       "single element.") for name, f in (("jvp", jvp), ("vhp", vhp), ("hvp", hvp))],
    *[(f"{name}: v of the wrong shape", lambda f=f: f(lambda x: x.sum(), v2(), dg.ones(3)), RuntimeError,
       r"^v has invalid size: should be \(2,\) but got \(3,\).$") for name, f in (("jvp", jvp), ("vhp", vhp))],
    ("vjp: an entry of v of the wrong shape",
     lambda: vjp(lambda x, y: (x, y), (v2(), dg.ones(1)), (v2(), dg.ones(3))), RuntimeError,
     r"^Entry 1 in v has invalid size: should be \(1,\) but got \(3,\).$"),
    ("hvp: two vectors for one input", lambda: hvp(lambda x: x.sum(), v2(), (v2(), v2())), RuntimeError,
     "^The given v should contain a single Tensor.$"),
    ("jvp: one vector for two inputs", lambda: jvp(lambda x, y: x, (v2(), v2()), (v2(),)), RuntimeError,
     "^v is a tuple of invalid length: should be 2 but got 1.$"),
    ("vjp: v a list", lambda: vjp(lambda x: x, v2(), [v2()]), TypeError,
     "The v given to vjp must be either a Tensor or a tuple of Tensors but the given v has type <class 'list'>"),
    # strategies, in torch's order of checks
    ("forward-mode with create_graph, before vectorize",
     lambda: jacobian(lambda x: x, v2(), strategy="forward-mode", create_graph=True, strict=True),
     NotImplementedError, '`create_graph=True` and `strategy="forward-mode"` are not supported together'),
    ("forward-mode with strict, before vectorize",
     lambda: jacobian(lambda x: x, v2(), strategy="forward-mode", strict=True), RuntimeError,
     r'jacobian: `strict=True` and `strategy="forward-mode"` are not supported together \(yet\)'),
    ("forward-mode without vectorize, after the inputs' check",
     lambda: jacobian(lambda x: x, 3, strategy="forward-mode"), TypeError, "The inputs given to jacobian"),
    ("hessian forward-over-reverse with strict",
     lambda: hessian(CUBE, v2(), vectorize=True, strict=True, outer_jacobian_strategy="forward-mode"),
     RuntimeError, '`strict=True` and `strategy="forward-mode"` are not supported together'),
    ("hessian checks its inputs before the strategy", lambda: hessian(CUBE, 3.0, outer_jacobian_strategy="x"),
     TypeError, "The inputs given to hessian"),
    ("strict and vectorize: the outputs checked first",
     lambda: jacobian(lambda x: dg.ones(2), v2(), strict=True, vectorize=True), RuntimeError,
     "Output 0 of the user-provided function does not require gradients"),
    ("strict and vectorize",
     lambda: jacobian(lambda x: x * x, v2(), strict=True, vectorize=True), RuntimeError,
     "jacobian: `strict=True` and `vectorize=True` are not supported together"),
    # strict mode
    ("hessian strict: the outputs checked before their size",
     lambda: hessian(lambda x: dg.ones(2), v2(), strict=True), RuntimeError,
     "Output 0 of the user-provided function does not require gradients"),
    ("hessian strict: an unused input", lambda: hessian(lambda x, y: CUBE(x), (v2(), v2()), strict=True),
     RuntimeError, "found that the jacobian of the user-provided function with respect to input 1 is "
                   "independent of the input"),
    ("hessian strict: separable", lambda: hessian(lambda x, y: CUBE(x) + CUBE(y), (v2(), v2()), strict=True),
     RuntimeError, "^Output 0 of the user-provided function is independent of input 1. This is not allowed"),
    ("jvp strict: an output that does not reach the inputs",
     lambda: jvp(lambda x: (x * 2, dg.ones(2, requires_grad=True)), v2(), v2(), strict=True), RuntimeError,
     "independent of entry 1 in the grad_outputs when using the double backward trick"),
    *[(f"{name} strict create_graph: a constant {what}", call, RuntimeError,
       f"^The {what} of the user-provided function is independent of input {i}. This is not allowed in "
       "strict mode when create_graph=True.$") for name, what, i, call in [
        ("jacobian", "jacobian", 0, lambda: jacobian(lambda x, y: (x * 2, x * y), (v2(), v2()), strict=True,
                                                     create_graph=True)),
        ("jacobian", "jacobian", 1, lambda: jacobian(lambda x, y: x * x + y * 2, (v2(), v2()), strict=True,
                                                     create_graph=True)),
        ("vjp", "jacobian", 0, lambda: vjp(lambda x: x * 2, v2(), v2(), strict=True, create_graph=True)),
        ("jvp", "jacobian", 1, lambda: jvp(lambda x: (x * x, x * 2), v2(), v2(), strict=True,
                                           create_graph=True)),
        ("hessian", "jacobian", 0, lambda: hessian(lambda x: (x * x).sum(), v2(), strict=True,
                                                   create_graph=True)),
        ("vhp", "hessian", 0, lambda: vhp(lambda x: (x * x).sum(), v2(), v2(), strict=True, create_graph=True)),
        ("hvp", "hessian", 0, lambda: hvp(lambda x: (x * x).sum(), v2(), v2(), strict=True, create_graph=True)),
    ]],
]


@pytest.mark.parametrize("call, error, words", [row[1:] for row in ERRORS_TABLE],
                         ids=[row[0] for row in ERRORS_TABLE])
def test_errors_table(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_strict_create_graph_passes_when_the_results_depend_on_the_inputs():
    check(jacobian(lambda x: x ** 3, v2(), strict=True, create_graph=True),
          T((2, 2), [[3., 0.], [0., 12.]], requires_grad=True))
    check(hessian(CUBE, v2(), strict=True, create_graph=True), T((2, 2), [[6., 0.], [0., 12.]], requires_grad=True))
    check(jvp(lambda x: x * 2, v2(), rg(5., 6.), strict=True, create_graph=True),
          (T((2,), [2., 4.], requires_grad=True), T((2,), [10., 12.], requires_grad=True)))


@pytest.mark.parametrize("name", list(ALL))
def test_the_callers_tensors_keep_their_requires_grad(name):
    x, y = dg.tensor([1., 2.], requires_grad=True), dg.tensor([3., 4.])
    v = {"vjp": (dg.tensor(1.),), "jacobian": (), "hessian": ()}.get(name, ((x, y),))
    ALL[name](lambda a, b: (a ** 2 * b).sum(), (x, y), *v)
    assert x.requires_grad and not y.requires_grad and x.grad is None and y.grad is None
