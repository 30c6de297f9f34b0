"""dualgrad.compile: replays equal eager calls bit for bit, for plain functions and derivative transforms.

The safety net (first replay compared with eager) is switched off here: the replays must be
exact on their own.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.base import pytree
from dualgrad.compile import CompileError, CompileWarning, api

pytestmark = pytest.mark.usefixtures("no_safety_net")


def leaves(value):
    flat, _ = pytree.flatten(value)
    return flat


def assert_same(got, want):
    """Same structure, and every tensor the same dtype, shape and bits."""
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for a, b in zip(got_leaves, want_leaves, strict=True):
        if isinstance(b, dg.Tensor):
            assert isinstance(a, dg.Tensor)
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.ascontiguousarray(a._data).tobytes() == np.ascontiguousarray(b._data).tobytes()
        else:
            assert repr(a) == repr(b)


def replayed(fn, *calls):
    """Compile ``fn``, call it on each argument tuple (twice), and check every result against eager."""
    compiled = dg.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for args in calls:
            for _ in range(2):
                assert_same(compiled(*args), fn(*args))
    return compiled


def test_grad_replay_equals_eager_and_skips_tracing():
    f = dg.compile(dg.func.grad(lambda x: (x.sin() * x).sum()))
    x = dg.tensor([0.5, 1.0, 2.0])
    first = f(x)
    assert f.traces == 1
    for _ in range(3):
        assert_same(f(x), first)
    assert f.traces == 1
    assert_same(f(x * 3), dg.func.grad(lambda x: (x.sin() * x).sum())(x * 3))
    assert f.traces == 1


@pytest.mark.parametrize("transform", [dg.func.jacfwd, dg.func.jacrev])
def test_jacobians(transform):
    def f(x):
        return dg.stack([x[0] * x[1].exp(), x.sin().sum(), (x * x).prod()])
    x = dg.tensor([0.3, -0.7, 1.1])
    replayed(transform(f), (x,), (x * 2,))


def test_hessian_and_linalg():
    def f(x):
        a = dg.outer(x, x) + dg.eye(3)
        return dg.linalg.det(a) + dg.linalg.solve(a, x).sum()
    x = dg.tensor([0.3, -0.7, 1.1])
    replayed(dg.func.hessian(f), (x,), (x * 0.5,))


@pytest.mark.parametrize("vmap", [dg.vmap, dg.func.vmap])
def test_vmap_of_grad(vmap):
    f = vmap(dg.func.grad(lambda x: (x.exp() * x.cos()).sum()))
    xs = dg.tensor(np.random.rand(4, 3))
    replayed(f, (xs,), (xs + 1,))


def test_plain_numeric_function_with_numpy_calls_and_constants():
    scale = np.array([1.0, 2.0, 3.0])

    def f(x, y):
        return np.sin(x) * scale + dg.tanh(y) @ dg.ones(3, 3), (x * 2).sum()
    x, y = dg.tensor([0.1, 0.2, 0.3]), dg.tensor([1.0, -1.0, 0.5])
    replayed(f, (x, y), (y, x))


def test_in_place_writes_into_fresh_tensors_are_replayed():
    def rhs(x):
        out = dg.zeros(3)
        out[0] = x[1] * 2
        out[1:] = x[:2].sin()
        out.mul_(x)
        return out
    x = dg.tensor([0.5, -1.0, 2.0])
    c = replayed(rhs, (x,), (x * 2,))
    # the constant zeros is copied for every replay: two results do not share memory
    a, b = c(x), c(x)
    assert not np.may_share_memory(a._data, b._data)


def test_integer_and_boolean_dtypes_and_python_arguments():
    def f(x, n, flag):
        y = x * n
        return y + 1 if flag else y - 1
    xi = dg.tensor([1, 2, 3])
    replayed(f, (xi, 2, True), (xi, 3, False), (xi.to(dg.float64), 2, True))


def test_outputs_structures_and_repeated_objects():
    def f(x):
        y = x.exp()
        return {"y": y, "pair": (y, x.sum()), "n": 3, "none": None}
    x = dg.tensor([0.5, 1.0])
    c = replayed(f, (x,))
    out = c(x)
    assert out["y"] is out["pair"][0]


def test_returning_an_input_returns_the_same_object():
    c = dg.compile(lambda x: (x, x * 2))
    x = dg.tensor([1.0, 2.0])
    c(x)
    assert c(x)[0] is x


def test_results_are_fresh_arrays():
    c = dg.compile(lambda x: x * 2)
    x = dg.tensor([1.0, 2.0])
    c(x)
    a, b = c(x), c(x)
    a.add_(1.0)
    assert b.tolist() == [2.0, 4.0]


def test_requires_grad_inputs_run_eagerly_and_stay_differentiable():
    c = dg.compile(lambda x: (x.sin() * x).sum())
    x = dg.tensor([0.5, 1.0], requires_grad=True)
    y = c(x)
    assert y.requires_grad
    (g,) = dg.autograd.grad(y, x)
    assert_same(g, dg.func.grad(lambda x: (x.sin() * x).sum())(x.detach()))
    # grad(compile(f)) and jacfwd(compile(f)), vmap(compile(f)): eager inside the transform
    f = dg.compile(lambda x: (x.sin() * x).sum())
    assert_same(dg.func.grad(f)(x.detach()), dg.func.grad(lambda x: (x.sin() * x).sum())(x.detach()))
    assert_same(dg.func.jacfwd(f)(x.detach()), dg.func.jacfwd(lambda x: (x.sin() * x).sum())(x.detach()))
    xs = dg.tensor(np.random.rand(3, 2))
    assert_same(dg.vmap(f)(xs), dg.vmap(lambda x: (x.sin() * x).sum())(xs))


def test_inference_mode_results_are_inference_tensors():
    c = dg.compile(lambda x: x * 2)
    x = dg.tensor([1.0])
    with dg.inference_mode():
        c(x)
        assert c(x).is_inference()


def test_decorator_forms():
    @dg.compile
    def f(x):
        return x + 1

    @dg.compile(cache_size=2)
    def g(x):
        return x - 1
    x = dg.tensor([1.0])
    assert f(x).tolist() == [2.0] and g(x).tolist() == [0.0]
    assert g.cache_size == 2 and f.__name__ == "f"


def test_source_is_python_that_runs():
    c = dg.compile(dg.func.grad(lambda x: (x.sin() * x).sum()))
    x = dg.tensor([0.5, 1.0])
    c(x)
    source = c.source()
    assert source.startswith("def replay(x0):") and "sin" in source and "return" in source
    namespace = dict(c.cache[next(iter(c.cache))][0].program.namespace)
    exec(compile(source, "<test>", "exec"), namespace)  # noqa: S102
    (array,) = namespace["replay"](x._data)
    assert array.tobytes() == c(x)._data.tobytes()


def test_dead_values_are_pruned_and_common_subexpressions_merged():
    def f(x):
        unused = x.exp() * 3  # noqa: F841 - dead: pruned
        return x.sin() + x.sin()
    c = dg.compile(f)
    x = dg.tensor([0.5, 1.0])
    c(x)
    source = c.source()
    assert "exp" not in source
    assert source.count("sin") == 1 + source.count("# sin")  # one call (its comment names it too)
    assert_same(c(x), f(x))


# -- unsupported constructs: eager with one warning, or CompileError with fullgraph --------------
UNSUPPORTED = [
    (lambda x: dg.tensor(np.sin(x.numpy())), "numpy"),
    (lambda x: x + dg.randn(2), "_random"),
    (lambda x: dg.unique(x.round()), "outside dispatch"),
    (lambda x: print(x) or x * 2, "__str__"),
]


@pytest.mark.parametrize(("fn", "match"), UNSUPPORTED)
def test_unsupported_constructs_fall_back_with_a_warning(fn, match, capsys):
    c = dg.compile(fn)
    x = dg.tensor([0.5, 1.5])
    dg.manual_seed(1)
    with pytest.warns(CompileWarning, match=match):
        got = c(x)
    dg.manual_seed(1)
    assert_same(got, fn(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning only
        dg.manual_seed(2)
        got = c(x)
    dg.manual_seed(2)
    assert_same(got, fn(x))


@pytest.mark.parametrize(("fn", "match"), UNSUPPORTED)
def test_fullgraph_raises(fn, match, capsys):
    c = dg.compile(fn, fullgraph=True)
    with pytest.raises(CompileError, match=match):
        c(dg.tensor([0.5, 1.5]))


def test_python_side_effect_on_a_traced_value_falls_back():
    log = []

    def f(x):
        y = x.sin()
        log.append(y)
        return y * 2
    c = dg.compile(f)
    with pytest.warns(CompileWarning, match="stored outside"):
        c(dg.tensor([1.0]))
    c(dg.tensor([1.0]))
    assert len(log) == 2


def test_training_step_accumulating_into_an_existing_grad_is_replayed():
    w = dg.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        with dg.no_grad():
            w.sub_(0.5 * w.grad)
            w.grad.zero_()
        return loss.detach()
    c = dg.compile(step)
    x = dg.tensor([1.0, 1.0])
    c(x)  # (.grad None before the call: traced, the new .grad an effect of the replay)
    assert w.tolist() == [0.5, 1.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        c(x)  # (.grad zeros: a second trace, backward accumulates into it)
        c(x)  # (replayed)
    assert w.tolist() == [-0.5, 0.5] and w.grad.tolist() == [0.0, 0.0]
    assert c.traces == 2


@pytest.mark.filterwarnings("ignore:Using backward")
def test_backward_with_create_graph_falls_back_naming_why():
    w = dg.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        (w * x).sum().backward(create_graph=True)
        return x * 1.0
    c = dg.compile(step)
    with pytest.warns(CompileWarning, match=r"create_graph=True\) sets .grad to a tensor with a graph"):
        c(dg.tensor([1.0, 1.0]))


def test_write_into_an_input_falls_back():
    def f(x):
        x.mul_(2)
        return x.sum()
    c = dg.compile(f)
    x = dg.tensor([1.0, 2.0])
    with pytest.warns(CompileWarning, match="caller holds"):
        c(x)
    c(x)
    assert x.tolist() == [4.0, 8.0]


def test_profiler_runs_eagerly():
    c = dg.compile(lambda x: x * 2)
    x = dg.tensor([1.0])
    with dg.autograd.profiler.profile() as prof, pytest.warns(CompileWarning, match="observer"):
        c(x)
    assert any(e.name == "mul" or "mul" in e.name for e in prof.function_events)


# -- bad input -------------------------------------------------------------------------
def test_non_callable_is_a_type_error():
    with pytest.raises(TypeError, match=r"dualgrad.compile\(\) expects a callable, got int"):
        dg.compile(3)


def test_bad_options():
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        dg.compile(lambda x: x, cache_size=0)


def test_returning_an_unguardable_object_is_a_type_error():
    c = dg.compile(lambda x: (x * 2, object()))
    with pytest.raises(TypeError, match="returned an object of type object, which a replay cannot rebuild"):
        c(dg.tensor([1.0]))


def test_an_error_in_the_function_propagates_and_leaves_no_state():
    def f(x):
        if x.sum() > 10:
            raise ValueError("too big")
        return x * 2
    c = dg.compile(f)
    with pytest.raises(ValueError, match="too big"):
        c(dg.tensor([20.0]))
    from dualgrad.base.state import STATE
    assert not STATE.observers and dg.Tensor.__bool__.__name__ == "__bool__"
    assert "_recording" not in dg.Tensor.__init__.__name__
    assert c(dg.tensor([1.0])).tolist() == [2.0]
    assert c(dg.tensor([1.0])).tolist() == [2.0]


def test_safety_net_catches_a_wrong_replay(monkeypatch):
    api.SAFETY_NET[0] = True
    c = dg.compile(lambda x: x * 2)
    x = dg.tensor([1.0, 2.0])
    c(x)
    entry = c.cache[next(iter(c.cache))][0]
    monkeypatch.setattr(entry.program, "run", lambda *arrays: (np.array([0.0, 0.0]),))
    with pytest.warns(CompileWarning, match="safety net"):
        assert c(x).tolist() == [2.0, 4.0]
    assert c(x).tolist() == [2.0, 4.0]
    assert entry.program is None


# -- property tests: random compositions of ops and transforms --------------------------
UNARY = [dg.sin, dg.cos, dg.exp, dg.tanh, lambda x: x * x, lambda x: x * 1.5 + 0.25, dg.sigmoid,
         lambda x: x.cumsum(0), lambda x: x.flip(0), lambda x: (x * x + 1).log()]


def _chain(ops):
    def f(x):
        y = x
        for i in ops:
            y = UNARY[i](y) + (y[:1] if i % 3 == 0 else 0.0)
        return (y * x).sum()
    return f


@given(ops=st.lists(st.integers(0, len(UNARY) - 1), min_size=1, max_size=5),
       values=st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3),
       transform=st.sampled_from(["plain", "grad", "jacfwd", "hessian", "jacrev_grad", "vmap_grad"]))
def test_compiled_equals_eager_on_random_compositions(ops, values, transform):
    f = _chain(ops)
    fn = {"plain": f, "grad": dg.func.grad(f), "jacfwd": dg.func.jacfwd(dg.func.grad(f)),
          "hessian": dg.func.hessian(f), "jacrev_grad": dg.func.jacrev(dg.func.grad(f)),
          "vmap_grad": dg.vmap(dg.func.grad(f))}[transform]
    x = dg.tensor(values)
    if transform == "vmap_grad":
        x = dg.stack([x, x * 0.5])
    compiled = dg.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        compiled(x)
        assert_close(compiled(x), fn(x))
        assert_close(compiled(x * 0.75), fn(x * 0.75))
    assert compiled.traces == 1


def assert_close(got, want):
    """``assert_same`` up to a few ulps: eager's shortcuts outside dispatch (off while tracing) may order a
    product differently or give 0.0 for -0.0."""
    for a, b in zip(leaves(got), leaves(want), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a._data, b._data, rtol=8 * np.finfo(b.dtype).eps, atol=0.0)


def test_custom_function_inside_grad():
    class Square(dg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    replayed(dg.func.grad(lambda x: Square.apply(x).sin().sum()), (dg.tensor([0.5, 1.0]),), (dg.tensor([2.0, 1.0]),))


@pytest.mark.parametrize("fn", [lambda x: x * 2 if 1.0 in x else x, lambda x: x * 2 if x.equal(x * 1) else x,
                                lambda x: x if x.allclose(x + 1e-3) else -x])
def test_python_values_computed_from_raw_data_fall_back(fn):
    c = dg.compile(fn)
    with pytest.warns(CompileWarning, match="takes the raw values out of the trace"):
        c(dg.tensor([1.0, 2.0]))
    assert_same(c(dg.tensor([3.0, 2.0])), fn(dg.tensor([3.0, 2.0])))


def test_an_error_during_a_replay_is_the_eager_error():
    c = dg.compile(lambda a, b: dg.linalg.solve(a, b))
    b = dg.tensor([1.0, 2.0])
    c(dg.eye(2), b)
    with pytest.raises(np.linalg.LinAlgError, match="linalg.solve: The solver failed because the input matrix is "
                                                    "singular"):
        c(dg.tensor([[1.0, 2.0], [2.0, 4.0]]), b)


def test_signed_zero_parameters_are_not_merged():
    def f(x):
        return dg.clamp(x, min=0.0) * 1.0, dg.clamp(x, min=-0.0) * 1.0, x * 0.0 + x * -0.0
    x = dg.tensor([-1.0, 2.0])
    replayed(f, (x,), (-x,))


def test_hooks_registered_in_the_call_fall_back():
    seen = []

    def f(x):
        x = x.clone().requires_grad_()
        y = x * 2
        y.register_hook(lambda g: seen.append(1))
        (g,) = dg.autograd.grad(y.sum(), x)
        return g
    c = dg.compile(f)
    with dg.enable_grad(), pytest.warns(CompileWarning, match="hook"):
        c(dg.tensor([1.0]))
    c(dg.tensor([1.0]))
    assert len(seen) == 2


def test_reading_grad_of_a_held_tensor_falls_back():
    p = dg.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    c = dg.compile(lambda p: p.detach() - 0.1 * p.grad)
    with dg.no_grad(), pytest.warns(CompileWarning, match=r"reads \.grad of an argument"):
        c(p)
    p.grad = dg.tensor([10.0, 10.0])
    with dg.no_grad():
        assert c(p).tolist() == [0.0, 1.0]


def test_a_tensor_computed_by_another_thread_during_the_call_falls_back():
    from concurrent.futures import ThreadPoolExecutor

    def f(x):
        with ThreadPoolExecutor(1) as pool:
            y = pool.submit(lambda: x * 2).result()
        return y + 1
    c = dg.compile(f)
    with pytest.warns(CompileWarning, match="another thread"):
        c(dg.tensor([1.0]))
    assert c(dg.tensor([5.0])).tolist() == [11.0]


def test_writes_read_the_initial_value_of_a_fresh_constant_and_views():
    def f(x):
        out = dg.zeros(2, 3)
        out[0].add_(x)  # reads the zeros
        y = x * 2
        y.view(3).mul_(3)  # writes y through a view
        out[1] = y
        out.t()[0, 0] += 7.0
        return out * 1, y + 0
    replayed(f, (dg.tensor([1.0, 2.0, 3.0]),), (dg.tensor([4.0, 5.0, 6.0]),), (dg.tensor([1.0, 2.0, 3.0]),))


def test_results_in_a_constants_memory_are_copied():
    def f(x):
        c = dg.ones(3)
        return c[1:], (c * 2)[:2], x * 1
    compiled = replayed(f, (dg.tensor([1.0, 2.0]),))
    a = compiled(dg.tensor([1.0, 2.0]))
    for t in a[:2]:
        t.mul_(0.0)
    assert_same(compiled(dg.tensor([1.0, 2.0])), f(dg.tensor([1.0, 2.0])))


def test_the_callers_arrays_are_read_live_and_never_written_by_a_replay():
    w = np.array([1.0, 2.0, 3.0])
    held = dg.tensor([1.0, 1.0, 1.0])

    def f(x):
        return x * dg.from_numpy(w).exp() + x * np.sqrt(w) + held.exp()
    compiled = replayed(f, (dg.tensor([1.0, 2.0, 3.0]),))
    x = dg.tensor([1.0, 2.0, 3.0])
    w[:] = [3.0, 2.0, 1.0]  # (no version counter sees this)
    held.data[0] = 5.0  # (an alias with a counter of its own)
    assert_same(compiled(x), f(x))

    def g(x):
        dg.from_numpy(w).add_(1.0)
        return x * 1
    c = dg.compile(g)
    with pytest.warns(CompileWarning, match="caller holds"):
        c(x)
    c(x)
    assert w.tolist() == [5.0, 4.0, 3.0]


def test_changing_a_global_mode_or_an_argument_falls_back():
    def f(x, log):
        log.append(1)
        return x * 2
    c = dg.compile(f)
    log = []
    with pytest.warns(CompileWarning, match="changed its arguments"):
        c(dg.tensor([1.0]), log)
    c(dg.tensor([1.0]), log)
    assert log == [1, 1]

    def g(x):
        dg.set_grad_enabled(False)
        return x * 2
    c = dg.compile(g)
    try:
        with pytest.warns(CompileWarning, match="global mode"):
            c(dg.tensor([1.0]))
    finally:
        dg.set_grad_enabled(True)


@pytest.mark.parametrize("make", [dg.as_tensor, dg.from_numpy, dg.tensor])
def test_tensors_made_from_array_arguments(make):
    c = dg.compile(lambda a: make(a).sin() * 2 + float(a[0]) + dg.as_tensor(np.sqrt(a)))
    for values in ([1.0, 2.0], [3.0, 4.0], [1.0, 2.0]):
        a = np.array(values)
        assert_same(c(a), dg.tensor(a).sin() * 2 + float(a[0]) + dg.as_tensor(np.sqrt(a)))
    assert c.traces == 2  # (a NumPy array argument is guarded by value: NumPy code reads it unseen)
    assert "argument 0 values" in c.explain()


def test_a_factory_copying_an_argument_among_other_values_falls_back():
    c = dg.compile(lambda a: dg.tensor([a, a]) * 2)
    with pytest.warns(CompileWarning, match="copies an argument's array"):
        c(np.array([1.0, 2.0]))
    c(np.array([1.0, 2.0]))
    assert_same(c(np.array([3.0, 4.0])), dg.tensor([[3.0, 4.0], [3.0, 4.0]]) * 2)


@pytest.mark.parametrize("transform", [dg.func.jacrev, dg.func.jacfwd, dg.func.hessian])
def test_in_place_writes_under_batched_transforms(transform):
    def rhs(x):
        out = dg.zeros(3)
        out[0] = x[1] * x[2]
        out[1:] = x[:2].sin() * x[0]
        return out.sum() if transform is dg.func.hessian else out
    x = dg.tensor([0.5, -1.0, 2.0])
    replayed(transform(rhs), (x,), (x * 2,))
