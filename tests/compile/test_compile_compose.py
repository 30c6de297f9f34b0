"""dualgrad.compile composes both ways: grad, jacrev, jacfwd, hessian, vmap and .backward() of a compiled function.

A compiled call on tensors that require grad, carry tangents or are batched is one node whose vjp, jvp and
vmap rules are compiled replays. Each result is compared with the same transform of the eager function (the
safety net off: the replays must be exact on their own), with central finite differences in float64, and
no call may fall back to eager (CompileWarning is an error).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.compile import CompileWarning

func = dg.func


pytestmark = pytest.mark.usefixtures("no_safety_net", "compile_warnings_are_errors")


def leaves(value):
    return dg.base.pytree.flatten(value)[0]


def assert_close(got, want, ulps=8):
    """Same structure, dtypes and shapes; values equal up to a few ulps (eager's shortcuts outside dispatch,
    off while tracing, may order a product differently or give 0.0 for -0.0)."""
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for a, b in zip(got_leaves, want_leaves, strict=True):
        if not isinstance(b, dg.Tensor):
            assert repr(a) == repr(b)
            continue
        assert isinstance(a, dg.Tensor) and type(a) is dg.Tensor
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a._data, b._data, rtol=ulps * np.finfo(b.dtype).eps, atol=1e-300)


def assert_bits(got, want):
    """Exactly equal values (0.0 and -0.0 count as equal: eager adds zero blocks its own way, e.g. in jacobians
    whose entries a branch of the graph does not reach)."""
    for a, b in zip(leaves(got), leaves(want), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a._data, b._data), (a, b)


def f_scalar(x):
    return (x.sin() * x).sum()


X = dg.tensor([0.5, 1.0, 2.0], dtype=dg.float64)

TRANSFORMS = {
    "grad": func.grad,
    "jacrev": func.jacrev,
    "jacfwd": func.jacfwd,
    "hessian": func.hessian,
    "jacrev_jacrev": lambda g: func.jacrev(func.jacrev(g)),
    "jacfwd_jacfwd": lambda g: func.jacfwd(func.jacfwd(g)),
    "jacrev_jacfwd": lambda g: func.jacrev(func.jacfwd(g)),
    "grad_of_grad_sum": lambda g: func.grad(lambda x: func.grad(g)(x).sum()),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_of_compiled_equals_transform_of_eager_bit_for_bit(name):
    transform = TRANSFORMS[name]
    compiled = dg.compile(f_scalar)
    for x in (X, X * 0.7, X):
        assert_bits(transform(compiled)(x), transform(f_scalar)(x))
    assert compiled.traces == 1  # (the primal trace; vjp/jvp are derived compiled functions, also cached)


@pytest.mark.parametrize("name", ["vmap", "vmap_grad", "grad_vmap_sum", "vmap_hessian", "jacfwd_vmap", "vmap_vmap"])
def test_vmap_compositions(name):
    xs = dg.stack([X, X * 0.3, -X])
    transform = {
        "vmap": dg.vmap,
        "vmap_grad": lambda g: dg.vmap(func.grad(g)),
        "grad_vmap_sum": lambda g: func.grad(lambda y: dg.vmap(g)(y).sum()),
        "vmap_hessian": lambda g: dg.vmap(func.hessian(g)),
        "jacfwd_vmap": lambda g: func.jacfwd(dg.vmap(g)),
        "vmap_vmap": lambda g: dg.vmap(dg.vmap(lambda v: g(v * 1.0))),
    }[name]
    arg = xs.reshape(3, 3, 1) if name == "vmap_vmap" else xs
    compiled = dg.compile(f_scalar)
    for scale in (1.0, 0.5):
        assert_bits(transform(compiled)(arg * scale), transform(f_scalar)(arg * scale))


def test_backward_through_a_compiled_call_is_one_node():
    compiled = dg.compile(f_scalar)
    for x0 in (X, X * 2.0):
        x = x0.clone().requires_grad_()
        y = compiled(x)
        assert type(y.grad_fn).__name__ == "CompiledCallBackward"
        y.backward()
        assert_bits(x.grad, func.grad(f_scalar)(x0))
    assert compiled.traces == 1


def test_second_order_through_create_graph():
    compiled = dg.compile(f_scalar)
    x = X.clone().requires_grad_()
    (g,) = dg.autograd.grad(compiled(x), x, create_graph=True)
    (h,) = dg.autograd.grad(g.sum(), x)
    assert_bits(h, func.hessian(f_scalar)(X).sum(0))


def test_finite_differences_of_the_compiled_function():
    compiled = dg.compile(lambda x: (x.exp() * x.cos()).sum() + (x * x).prod())
    x = dg.tensor([0.3, -0.7, 1.1], dtype=dg.float64)
    g, h = func.grad(compiled)(x), func.hessian(compiled)(x)
    eps = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = eps
        plus, minus = x + dg.tensor(e), x - dg.tensor(e)
        assert abs((compiled(plus).item() - compiled(minus).item()) / (2 * eps) - g[i].item()) < 1e-7
        fd = (func.grad(compiled)(plus) - func.grad(compiled)(minus)) / (2 * eps)
        np.testing.assert_allclose(fd._data, h._data[i], rtol=1e-6, atol=1e-7)


def test_several_inputs_kwargs_python_values_and_integer_tensors():
    def f(x, y, *, scale, idx):
        return {"value": (x[1:] * y * idx).sum() * scale, "count": idx.shape[0], "rows": idx * 2}
    compiled = dg.compile(f)
    x, y = dg.tensor([1.0, 2.0, 3.0]), dg.tensor([0.5, -1.0])
    idx = dg.tensor([2, 0])
    for s in (1.5, 1.5, 2.0):
        got = func.grad(lambda a, b: compiled(a, b, scale=s, idx=idx)["value"], argnums=(0, 1))(x, y)
        want = func.grad(lambda a, b: f(a, b, scale=s, idx=idx)["value"], argnums=(0, 1))(x, y)
        assert_bits(got, want)
    xr = x.clone().requires_grad_()
    out = compiled(xr, y, scale=2.0, idx=idx)
    assert out["count"] == 2 and out["rows"].tolist() == [4, 0] and not out["rows"].requires_grad
    out["value"].backward()
    assert_bits(xr.grad, func.grad(lambda a: f(a, y, scale=2.0, idx=idx)["value"])(x))


def test_only_the_inputs_that_require_grad_get_gradients():
    compiled = dg.compile(lambda x, y: (x * y.exp()).sum())
    x, y = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([0.5, 0.25])
    compiled(x, y).backward()
    assert y.grad is None
    assert_bits(x.grad, y.exp())


def test_closed_over_tensor_that_requires_grad_runs_eagerly_and_gets_its_gradient():
    w = dg.tensor([1.0, -2.0], requires_grad=True)
    compiled = dg.compile(lambda x: (x * w).sin().sum())
    x = dg.tensor([0.5, 0.25], requires_grad=True)
    compiled(x).backward()
    assert_bits(w.grad, (x * w).cos().detach() * x.detach())
    assert_bits(x.grad, (x * w).cos().detach() * w.detach())
    assert "closes over a tensor that requires grad" in compiled.explain()
    for _ in range(2):
        x.grad = w.grad = None
        compiled(x).backward()
        assert_bits(w.grad, (x * w).cos().detach() * x.detach())


def test_returning_an_input_itself_runs_eagerly():
    compiled = dg.compile(lambda x: (x, x * 2))
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    a, b = compiled(x)
    assert a is x
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_closed_over_batched_tensor_runs_eagerly():
    def outer(x):
        inner = dg.compile(lambda c: (x * c).sum())
        return inner(dg.tensor([1.0, 2.0]))
    xs = dg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert dg.vmap(outer)(xs).tolist() == [5.0, 11.0]


def test_explain_and_source_show_the_derived_functions():
    compiled = dg.compile(f_scalar)
    func.grad(compiled)(X)
    text = compiled.explain()
    assert "vjp of f_scalar" in text and "trace 1: first call" in text
    assert "# vjp of f_scalar" in compiled.source()


# -- property tests: random op compositions, every transform combination ---------------------------
UNARY = [dg.sin, dg.cos, dg.exp, dg.tanh, lambda x: x * x, lambda x: x * 1.5 + 0.25, dg.sigmoid,
         lambda x: x.cumsum(0), lambda x: x.flip(0), lambda x: (x * x + 1).log(), lambda x: x / (1.0 + x * x)]


def _chain(ops):
    def f(x, y):
        z = x
        for i in ops:
            z = UNARY[i](z) + (z[:1] * y if i % 3 == 0 else 0.0)
        return (z * x).sum() + (y * z[:1]).sum()
    return f


COMBINATIONS = {
    "value": lambda f: f,
    "grad": lambda f: func.grad(f, argnums=(0, 1)),
    "jacrev": lambda f: func.jacrev(f),
    "jacfwd": lambda f: func.jacfwd(f, argnums=1),
    "hessian": lambda f: func.hessian(f),
    "jacrev_grad": lambda f: func.jacrev(func.grad(f, argnums=1)),
    "jacfwd_grad": lambda f: func.jacfwd(func.grad(f)),
    "vmap": lambda f: dg.vmap(f, in_dims=(0, None)),
    "vmap_grad": lambda f: dg.vmap(func.grad(f), in_dims=(0, None)),
    "grad_vmap": lambda f: func.grad(lambda x, y: dg.vmap(f, in_dims=(0, None))(x, y).sum()),
    "vmap_hessian": lambda f: dg.vmap(func.hessian(f), in_dims=(0, None)),
}


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.integers(0, len(UNARY) - 1), min_size=1, max_size=4),
       values=st.lists(st.floats(-1.5, 1.5), min_size=4, max_size=4),
       combination=st.sampled_from(sorted(COMBINATIONS)))
def test_transform_of_compiled_equals_eager_on_random_compositions(ops, values, combination):
    f = _chain(ops)
    x, y = dg.tensor(values[:3], dtype=dg.float64), dg.tensor(values[3:], dtype=dg.float64)
    if combination.startswith(("vmap", "grad_vmap")):
        x = dg.stack([x, x * 0.5])
    compiled = dg.compile(f)
    transform = COMBINATIONS[combination]
    for scale in (1.0, 0.75):
        assert_close(transform(compiled)(x * scale, y), transform(f)(x * scale, y))


@settings(max_examples=15, deadline=None)
@given(ops=st.lists(st.integers(0, len(UNARY) - 1), min_size=1, max_size=4),
       values=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4))
def test_first_and_second_derivatives_match_finite_differences(ops, values):
    compiled = dg.compile(_chain(ops))
    x, y = dg.tensor(values[:3], dtype=dg.float64), dg.tensor(values[3:], dtype=dg.float64)
    grad = func.grad(compiled)
    g, h = grad(x, y), func.hessian(compiled)(x, y)
    eps = 1e-6
    for i in range(3):
        e = dg.tensor(np.eye(3)[i] * eps)
        fd = (compiled(x + e, y) - compiled(x - e, y)).item() / (2 * eps)
        assert abs(fd - g[i].item()) <= 1e-6 * (1 + abs(fd))
        fd2 = ((grad(x + e, y) - grad(x - e, y)) / (2 * eps))._data
        np.testing.assert_allclose(fd2, h._data[i], rtol=1e-5, atol=1e-6)


def test_vmap_with_other_in_dims_and_structured_outputs():
    def f(x, y):
        return {"a": (x * y).sin(), "b": x.exp().sum()}
    compiled = dg.compile(f)
    xs, y = dg.tensor(np.random.default_rng(1).standard_normal((3, 4))), dg.tensor([0.5, 1.0, 1.5])
    got = dg.vmap(compiled, in_dims=(1, None), out_dims={"a": 1, "b": 0})(xs, y)
    want = dg.vmap(f, in_dims=(1, None), out_dims={"a": 1, "b": 0})(xs, y)
    assert_bits(got, want)


def test_an_unsupported_trace_under_a_transform_runs_eagerly_with_one_warning():
    def f(x):
        return x.sin() * float(x.detach().numpy().sum())
    compiled = dg.compile(f)
    with pytest.warns(CompileWarning, match="numpy"):
        got = func.grad(lambda x: compiled(x).sum())(X)
    assert_bits(got, func.grad(lambda x: f(x).sum())(X))


def test_float32_and_random_vmap():
    compiled = dg.compile(lambda x: (x * x.cos()).sum())
    x = dg.tensor([0.5, 1.0], dtype=dg.float32)
    g = func.grad(compiled)(x)
    assert g.dtype == dg.float32 and np.array_equal(g._data, func.grad(lambda x: (x * x.cos()).sum())(x)._data)
    noisy = dg.compile(lambda x: x + dg.randn(2))
    with pytest.warns(CompileWarning, match="outside dispatch"):
        out = dg.vmap(noisy, randomness="different")(dg.zeros(3, 2))
    again = dg.vmap(noisy, randomness="different")(dg.zeros(3, 2))
    assert out.shape == (3, 2) and not np.array_equal(out._data[0], out._data[1])
    assert not np.array_equal(out._data, again._data)


def test_random_draws_under_a_compiled_vmap_are_not_constants():
    # (drawn by a lambda of factories.py under vmap: a random draw, never a constant of the trace)
    compiled = dg.compile(dg.vmap(lambda x: x + dg.randn(2), randomness="different"))
    with pytest.warns(CompileWarning, match="outside dispatch"):
        first = compiled(dg.zeros(3, 2))
    assert not np.array_equal(first._data, compiled(dg.zeros(3, 2))._data)


def test_a_batched_call_replays_without_retracing():
    compiled = dg.compile(lambda x: x.sin() * 2)
    for _ in range(3):
        xs = dg.tensor(np.random.default_rng(2).standard_normal((3, 2)))
        assert_bits(dg.vmap(compiled)(xs), dg.vmap(lambda x: x.sin() * 2)(xs))
    assert "trace 2" not in compiled.explain()
