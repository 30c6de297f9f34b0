"""dualgrad.func transforms and their compositions, against finite differences and their definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp, vmap

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))


def f(x):
    """R^3 -> R^4, nonlinear."""
    return (dg.tensor(A) @ x).tanh() + 0.5 * x.sum() * x.sin().sum()


def scalar(x):
    return (f(x) ** 2).sum() + (x ** 3).sum()


def numeric_jacobian(fn, x0: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences, column by column: shape out.shape + x.shape."""
    with dg.no_grad():
        cols = []
        for i in range(x0.size):
            e = np.zeros(x0.size)
            e[i] = eps
            e = e.reshape(x0.shape)
            cols.append((fn(dg.tensor(x0 + e)).numpy() - fn(dg.tensor(x0 - e)).numpy()) / (2 * eps))
    out_shape = np.shape(cols[0])
    return np.moveaxis(np.array(cols), 0, -1).reshape(out_shape + x0.shape)


def numeric_gradient(fn, x0):
    return numeric_jacobian(fn, x0)


vectors = hnp.arrays(np.float64, 3, elements=st.floats(-1.5, 1.5))


@given(x0=vectors)
def test_jacrev_and_jacfwd_match_finite_differences(x0):
    expected = numeric_jacobian(f, x0)
    np.testing.assert_allclose(jacrev(f)(dg.tensor(x0)).numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jacfwd(f)(dg.tensor(x0)).numpy(), expected, rtol=1e-6, atol=1e-7)


@given(x0=vectors)
def test_hessians_all_ways_agree_are_symmetric_and_match_finite_differences(x0):
    x = dg.tensor(x0)
    expected = numeric_jacobian(lambda t: grad(scalar)(t), x0)
    ways = [hessian(scalar)(x), jacfwd(jacrev(scalar))(x), jacrev(jacfwd(scalar))(x),
            jacrev(jacrev(scalar))(x), jacfwd(jacfwd(scalar))(x), jacrev(grad(scalar))(x)]
    for h in ways:
        np.testing.assert_allclose(h.numpy(), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h.numpy(), h.numpy().T, rtol=1e-12, atol=1e-12)


def test_grad_of_grad_is_the_second_derivative():
    x = dg.tensor(0.7)
    assert np.isclose(grad(grad(lambda t: t.sin() * t ** 3))(x).item(),
                      -np.sin(0.7) * 0.7 ** 3 + 6 * np.cos(0.7) * 0.7 ** 2 + 6 * 0.7 * np.sin(0.7))


def test_grad_argnums_has_aux_and_grad_and_value():
    x, y = dg.tensor([1., 2.]), dg.tensor([3., -1.])

    def g(a, b):
        return (a * b).sum(), {"a": a}

    (ga, gb), aux = grad(g, argnums=(0, 1), has_aux=True)(x, y)
    np.testing.assert_allclose(ga.numpy(), y.numpy())
    np.testing.assert_allclose(gb.numpy(), x.numpy())
    assert set(aux) == {"a"}
    gy, value = grad_and_value(lambda a, b: (a * b).sum(), argnums=-1)(x, y)
    np.testing.assert_allclose(gy.numpy(), x.numpy())
    assert value.item() == 1.0 and not value.requires_grad


def test_per_example_gradients_match_a_loop_of_grad_calls():
    rng = np.random.default_rng(1)
    w = dg.tensor(rng.standard_normal(5))
    X, y = rng.standard_normal((8, 5)), rng.integers(0, 2, 8).astype(float)

    def loss(w, x, t):
        z = x @ w
        return dg.softplus(z) - t * z

    batched = vmap(grad(loss), in_dims=(None, 0, 0))(w, dg.tensor(X), dg.tensor(y))
    for k in range(8):
        single = grad(loss)(w, dg.tensor(X[k]), dg.tensor(y[k]))
        np.testing.assert_allclose(batched.numpy()[k], single.numpy(), rtol=1e-12)


def test_vmap_of_jacrev_and_jacfwd_match_per_example_jacobians():
    X = RNG.standard_normal((3, 3))
    for transform in (jacrev, jacfwd):
        batched = vmap(transform(f))(dg.tensor(X))
        for k in range(3):
            np.testing.assert_allclose(batched.numpy()[k], numeric_jacobian(f, X[k]), rtol=1e-6, atol=1e-7)


def test_grad_through_func_grad_reaches_closure_tensors():
    w = dg.tensor([0.5, -0.3], requires_grad=True)
    x = dg.tensor([1.0, 2.0])
    g = grad(lambda t: ((t * w).sum()) ** 2)(x)  # 2 (t.w) w
    (dw,) = dg.grad(g.sum(), w)
    s, total = float(x.numpy() @ w.detach().numpy()), float(w.detach().numpy().sum())
    np.testing.assert_allclose(dw.numpy(), 2 * x.numpy() * total + 2 * s, rtol=1e-12)


def test_vjp_and_jvp_satisfy_the_dot_product_identity():
    x = dg.tensor(RNG.standard_normal(3))
    u, v = dg.tensor(RNG.standard_normal(4)), dg.tensor(RNG.standard_normal(3))
    out, vjp_fn = vjp(f, x)
    (vjp_u,) = vjp_fn(u)
    out2, jvp_v = jvp(f, (x,), (v,))
    np.testing.assert_allclose(out.numpy(), out2.numpy())
    assert np.isclose(float(vjp_u.numpy() @ v.numpy()), float(u.numpy() @ jvp_v.numpy()))
    _, lin = linearize(f, x)
    np.testing.assert_allclose(lin(v).numpy(), jvp_v.numpy())


def test_chunk_size_of_jacrev_and_jacfwd():
    x = dg.tensor(RNG.standard_normal(3))
    full = jacrev(f)(x).numpy()
    np.testing.assert_allclose(jacrev(f, chunk_size=1)(x).numpy(), full)
    np.testing.assert_allclose(jacfwd(f, chunk_size=2)(x).numpy(), full)


def test_tuple_argnums_and_outputs_give_nested_jacobians():
    x, y = dg.tensor([1., 2.]), dg.tensor([3.])

    def g(a, b):
        return a * b, (a ** 2).sum()

    for transform in (jacrev, jacfwd):
        (dx0, dy0), (dx1, dy1) = transform(g, argnums=(0, 1))(x, y)
        assert dx0.shape == (2, 2) and dy0.shape == (2, 1) and dx1.shape == (2,) and dy1.shape == (1,)
        np.testing.assert_allclose(dx0.numpy(), 3 * np.eye(2))
        np.testing.assert_allclose(dy1.numpy(), [0.])


@pytest.mark.parametrize("call, error, words", [
    (lambda: grad(lambda x: x * 2)(dg.ones(2)), RuntimeError,
     "Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"),
    (lambda: grad(lambda x: 1.0)(dg.ones(2)), RuntimeError, "to return a Tensor"),
    (lambda: grad(lambda x: x.sum(), argnums=2)(dg.ones(2)), RuntimeError,
     "Got argnum=2, but only 1 positional inputs"),
    (lambda: grad(lambda x: x.sum(), argnums=1.0)(dg.ones(2)), RuntimeError, "argnums must be int or Tuple"),
    (lambda: grad(lambda x: x.sum(), has_aux=True)(dg.ones(2)), RuntimeError,
     "should be a tuple: \\(output, aux\\)"),
    (lambda: jvp(lambda x: x, dg.ones(2), (dg.ones(2),)), RuntimeError, "Expected primals to be a tuple"),
    (lambda: jvp(lambda x: x, (dg.ones(2),), (dg.ones(2), dg.ones(2))), RuntimeError,
     "same python structure"),
    (lambda: vjp(lambda x: x, dg.ones(2))[1](dg.ones(3)), RuntimeError, "Mismatch in shape"),
])
def test_func_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


# -- torch.func parity (messages and semantics checked against torch 2.13) -------------------
def two(a, b):
    return (a * b).sum()


X2, Y2 = dg.tensor([1., 2.]), dg.tensor([3., 4.])


@pytest.mark.parametrize("argnums, words", [
    ([0, 1], "argnums must be int or Tuple\\[int, ...\\], got: <class 'list'>"),
    (1.0, "argnums must be int or Tuple\\[int, ...\\], got: <class 'float'>"),
    ((), "argnums must be non-empty"),
    (((0,), 1), "argnum must be int, got: <class 'tuple'>"),
    (2, "Got argnum=2, but only 2 positional inputs"),
    (-3, "Got argnum=-3, but only 2 positional inputs"),
    ((0, -2), "argnums elements must be unique, got \\(0, 0\\)"),
])
@pytest.mark.parametrize("transform", [grad, grad_and_value, jacrev, jacfwd, hessian])
def test_bad_argnums_raise_torchs_errors(transform, argnums, words):
    with pytest.raises(RuntimeError, match=words):
        transform(two, argnums=argnums)(X2, Y2)


def test_argnums_accepts_negative_and_bool_like_torch():
    np.testing.assert_allclose(grad(two, argnums=True)(X2, Y2).numpy(), X2.numpy())
    gy, gx = grad(two, argnums=(-1, 0))(X2, Y2)
    np.testing.assert_allclose(gy.numpy(), X2.numpy())
    np.testing.assert_allclose(gx.numpy(), Y2.numpy())


@pytest.mark.parametrize("call", [
    lambda: grad(lambda x: x * 2.)(3.0),
    lambda: grad(lambda d: (d["a"] * 2).sum())({"a": X2, "b": 3}),
    lambda: vjp(lambda x: x, 3.0),
    lambda: jacrev(lambda x: x)(3.0),
    lambda: jacfwd(lambda x: x)(3.0),
])
def test_non_tensor_inputs_to_differentiate_raise_value_error(call):
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class"):
        call()


def test_aux_is_returned_as_is_and_not_differentiated():
    def g(x):
        return (x * x).sum(), {"t": x * 3, "n": 3}

    _, aux = grad(g, has_aux=True)(X2)
    assert aux["n"] == 3 and not aux["t"].requires_grad
    np.testing.assert_allclose(aux["t"].numpy(), [3., 6.])
    _, (_, aux) = grad_and_value(g, has_aux=True)(X2)
    assert not aux["t"].requires_grad
    assert not vjp(g, X2, has_aux=True)[2]["t"].requires_grad
    assert not jacrev(lambda x: (x * 2, x * 3), has_aux=True)(X2)[1].requires_grad
    batched = vmap(grad(lambda x: ((x * x).sum(), x * 3), has_aux=True))(dg.ones(2, 3))[1]
    assert batched.shape == (2, 3) and not batched.requires_grad


def test_aux_keeps_the_graph_of_tensors_tracked_outside():
    x, w = dg.tensor([1., 2.], requires_grad=True), dg.tensor([1., 2.], requires_grad=True)
    _, aux = grad(lambda t: ((t * t).sum(), (t * 3, t.detach() * w, t.detach() * 2)), has_aux=True)(x)
    assert [a.requires_grad for a in aux] == [True, True, False]
    (dx,) = dg.grad(aux[0].sum(), x)
    np.testing.assert_allclose(dx.numpy(), [3., 3.])


def test_vjp_fn_cotangent_checks_and_keywords():
    out, vjp_fn = vjp(lambda x: x * 2, X2)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        vjp_fn(1.0)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        vjp_fn(None)
    assert vjp(lambda x: (x * x).sum(), X2)[1](None)[0].tolist() == [2., 4.]
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point or complex Tensors"):
        vjp(lambda x: (x * 2).to(dg.int64), X2)
    _, vjp_fn = vjp(lambda x: x.exp(), X2)
    vjp_fn(dg.ones(2), retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        vjp_fn(dg.ones(2))


def test_vjp_fn_result_is_differentiable_only_with_create_graph():
    x = dg.tensor([1., 2.], requires_grad=True)
    _, vjp_fn = vjp(lambda t: t * t, x)
    assert vjp_fn(dg.ones(2))[0].requires_grad
    assert not vjp_fn(dg.ones(2), create_graph=False)[0].requires_grad
    with dg.no_grad():
        assert not vjp_fn(dg.ones(2))[0].requires_grad


@pytest.mark.parametrize("call, words", [
    (lambda: vjp(lambda x: 3.0, X2), "vjp\\(f, \\*primals\\): expected f\\(\\*primals\\) to return only tensors"),
    (lambda: vjp(lambda x: None, X2), "vjp\\(f, \\*primals\\): Expected f to be a function that has non-empty"),
    (lambda: vjp(lambda x: x, X2, has_aux=True),
     "vjp\\(f, \\*primals\\): output of function f should be a tuple"),
    (lambda: jvp(lambda x: 3.0, (X2,), (X2,)),
     "jvp\\(f, primals, tangents\\): expected f\\(\\*primals\\) to return only tensors"),
    (lambda: jvp(lambda x: x, (X2,), (X2,), has_aux=True),
     "jvp\\(f, primals, tangents\\): output of function f should be a tuple"),
    (lambda: jvp(lambda x: x, (2.0,), (1.0,)), "Expected primals to only contain Tensors, got <class 'float'>"),
    (lambda: jvp(lambda x: x, (X2,), (1.0,)), "Expected tangents to only contain Tensors, got <class 'float'>"),
    (lambda: jvp(lambda: dg.ones(1), (), ()), "Expected primals to contain at least one Tensor"),
    (lambda: jvp(lambda x: dg.ones(2), (X2,), (X2,), strict=True),
     "strict=True\\): The output of f is independent of the inputs"),
    (lambda: jvp(lambda x: (x, dg.ones(2)), (X2,), (X2,), strict=True), "independent of the inputs"),
    (lambda: linearize(lambda x: x.exp(), X2)[1](dg.ones(3)),
     "tangent:0 with shape \\(3,\\) in flattened pytree doesn't match the shape \\(2,\\)"),
    (lambda: linearize(lambda x: x.exp(), X2)[1](dg.ones(2, dtype=dg.float32)),
     "tangent:0 with dtype float32 in flattened pytree doesn't match the dtype float64"),
    (lambda: linearize(lambda x: x.exp(), X2)[1](X2, X2), "Expected the tangents .* same argspec as the primals"),
])
def test_vjp_jvp_linearize_errors(call, words):
    with pytest.raises(RuntimeError, match=words):
        call()


def test_jvp_strict_accepts_outputs_that_depend_on_the_primals():
    out, tangent = jvp(lambda x: x * 2, (X2,), (dg.ones(2),), strict=True)
    assert tangent.tolist() == [2., 2.]


@pytest.mark.parametrize("transform", [jacrev, jacfwd])
def test_jacobian_chunk_size_must_be_positive(transform):
    with pytest.raises(ValueError, match=f"{transform.__name__}: `chunk_size` should be greater than 0"):
        transform(lambda x: x, chunk_size=0)


def test_functionalize_keeps_the_semantics_and_composes():
    def f(x):
        y = x.clone()
        y.mul_(x)
        return y.sum()

    g = dg.func.functionalize(f)
    assert g.__name__ == "f"
    x = dg.tensor([1.0, 2.0])
    np.testing.assert_allclose(dg.func.grad(g)(x).numpy(), [2.0, 4.0])
    x = dg.zeros(2)
    dg.func.functionalize(lambda t: t.add_(1), remove="mutations_and_views")(x)
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0])  # input mutations stay, as torch's


def test_functionalize_refuses_an_unknown_remove_option():
    with pytest.raises(RuntimeError, match=r"received invalid argument for remove=views\. Valid options"):
        dg.func.functionalize(lambda x: x, remove="views")


def _writes_into_a_buffer(p):
    buf = dg.zeros(2, dtype=p.dtype)
    buf[0] = p[0] * p[1]
    buf[1] = p[1] ** 2
    return buf.sum()


def test_hessian_of_a_function_that_writes_into_a_tensor_it_creates():
    # forward over reverse: inside jacfwd's vmap only the tangents are batched, so the values
    # written into the unbatched buffer are unbatched (as in torch.func.hessian)
    calls = []

    def f(p):
        calls.append(1)
        return _writes_into_a_buffer(p)

    np.testing.assert_allclose(hessian(f)(dg.tensor([0.5, 1.3])).numpy(), [[0.0, 1.0], [1.0, 2.0]])
    assert len(calls) == 1


def test_vmap_over_jvp_of_grad_with_a_value_batched_at_the_tangent_level():
    # f uses w, batched at the level of the tangents: each member gets its own Hessian product
    x = dg.tensor([0.5, 1.3])
    w = dg.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = vmap(lambda v, w: jvp(grad(lambda x: (x * x * w).sum()), (x,), (v,))[1])(dg.eye(2), w)
    np.testing.assert_allclose(out.numpy(), [[2.0, 0.0], [0.0, 8.0]])


def test_jvp_with_tangents_batched_at_a_level_where_the_primal_is_not():
    # torch.func's NTK-vector-product pattern: vmap over data (outer) of vmap over tangents
    # (inner) of jvp; the tangents vary over both levels, the primal over none. The tangent
    # of the result came back batched twice at the outer level, and unwrapping raised
    # "vmap: cannot read the values of a batched tensor".
    w = dg.tensor([0.5, -1.0, 2.0])
    b = dg.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])

    def per_datum(bb):
        return vmap(lambda vec: jvp(lambda q: (q * bb).tanh(), (w,), (vec * bb.sum(),))[1])(dg.eye(3))

    out = vmap(per_datum)(b)
    assert out.shape == (2, 3, 3)
    for i in range(2):  # d tanh(w * b) [t] = (1 - tanh^2(w * b)) * b * t, t = e_k * sum(b)
        expected = dg.diag((1 - (w * b[i]).tanh() ** 2) * b[i] * b[i].sum())
        np.testing.assert_allclose(out[i].numpy(), expected.numpy(), rtol=1e-12)

    # the same with the tangents made by a vjp inside the vmaps (the tutorial's code)
    def ntk(x1, x2):
        _, vjp_fn = vjp(lambda q: (q * x1).tanh(), w)
        return vmap(lambda vec: jvp(lambda q: (q * x2).tanh(), (w,), vjp_fn(vec))[1])(dg.eye(3))

    full = vmap(vmap(ntk, (None, 0)), (0, None))(b, b)
    j = [jacrev(lambda q, x=x: (q * x).tanh())(w) for x in b]
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(full[i, k].numpy(), (j[k] @ j[i].T).numpy(), rtol=1e-12, atol=1e-15)
