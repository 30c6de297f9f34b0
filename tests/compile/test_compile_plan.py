"""The replay plan: buffer reuse through ``out=`` (bit for bit equal to the plan without it), the tracer's
constant-maker table (resolved to functions), and the cheaper tracing (signature checks, the closure walk
that replaces the garbage collector's referrer scan)."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.compile import CompileWarning, api, replay, trace
from dualgrad.compile.guards import INCOMPLETE, closure_guards

pytestmark = pytest.mark.usefixtures("no_safety_net")


def _bits(values):
    return [np.ascontiguousarray(v._data).tobytes() for v in values]


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = dg.tensor(rng.standard_normal((64, 48)))
    target = dg.tensor(rng.standard_normal((64, 8)))
    weights = [dg.tensor(rng.standard_normal(s) * 0.2) for s in ((48, 40), (40, 40), (40, 8))]

    def loss(w1, w2, w3):
        out = (x @ w1).tanh().matmul(w2).tanh() @ w3
        return ((out - target) ** 2).mean()
    return dg.func.grad(loss, argnums=(0, 1, 2)), weights


def _compiled_twice(fn, args, reuse):
    replay.BUFFER_REUSE[0] = reuse
    try:
        compiled = dg.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            compiled(*args)
            result = compiled(*args)  # (the replay)
    finally:
        replay.BUFFER_REUSE[0] = True
    return compiled, result


def test_buffer_reuse_gives_the_bits_of_the_plan_without_it_and_of_eager():
    gradient, weights = _mlp()
    with_reuse, got = _compiled_twice(gradient, weights, True)
    without, plain = _compiled_twice(gradient, weights, False)
    assert "np.matmul(" in with_reuse.source() and ", out=v" in with_reuse.source()
    assert ", out=v" not in without.source()
    assert _bits(got) == _bits(plain) == _bits(gradient(*weights))
    for seed in (1, 2):  # (other values through the same replays)
        _, other = _mlp(seed)
        assert _bits(with_reuse(*other)) == _bits(without(*other)) == _bits(gradient(*other))


def test_gradient_of_the_compiled_mlp_matches_finite_differences():
    gradient, weights = _mlp()
    compiled = dg.compile(gradient)
    compiled(*weights)
    grads = compiled(*weights)  # (the replay, with its buffers reused)
    w1, w2, w3 = (w._data for w in weights)
    rng = np.random.default_rng(0)  # (the data of _mlp(0), drawn in the same order)
    x, target = rng.standard_normal((64, 48)), rng.standard_normal((64, 8))

    def value(a1, a2, a3):
        out = np.tanh(np.tanh(x @ a1) @ a2) @ a3
        return float(((out - target) ** 2).mean())
    h = 1e-6
    for i in range(3):
        direction = np.random.default_rng(10 + i).standard_normal(weights[i].shape)
        plus = [w1, w2, w3]
        minus = [w1, w2, w3]
        plus[i] = plus[i] + h * direction
        minus[i] = minus[i] - h * direction
        numeric = (value(*plus) - value(*minus)) / (2 * h)
        assert np.isclose(float((grads[i]._data * direction).sum()), numeric, rtol=1e-6, atol=1e-9)


def test_reused_buffers_are_never_inputs_outputs_or_closed_over():
    rng = np.random.default_rng(3)
    held = dg.tensor(rng.standard_normal((40, 40)))
    held_before = held._data.copy()

    def f(a, b):
        c = (a @ b).sin()  # (dies into the next products)
        d = (c @ held).exp()
        e = (d @ b) * 2.0
        return e, c.cos()

    a, b = dg.tensor(rng.standard_normal((40, 40))), dg.tensor(rng.standard_normal((40, 40)))
    a_before, b_before = a._data.copy(), b._data.copy()
    compiled, first = _compiled_twice(f, (a, b), True)
    kept = [t._data.copy() for t in first]
    second = compiled(a, b)
    assert all(np.array_equal(k, t._data) for k, t in zip(kept, first))  # (earlier results untouched)
    assert not any(np.may_share_memory(x._data, y._data) for x in first for y in second)
    assert np.array_equal(a._data, a_before) and np.array_equal(b._data, b_before)
    assert np.array_equal(held._data, held_before)
    assert _bits(second) == _bits(f(a, b))


def test_a_viewed_buffer_is_not_reused():
    rng = np.random.default_rng(4)

    def f(a):
        c = a.exp()
        t = c.T  # (a view of c: c's buffer stays c's)
        d = (c * 3.0).sin()
        return t @ d, d

    a = dg.tensor(rng.standard_normal((40, 40)))
    _, got = _compiled_twice(f, (a,), True)
    assert _bits(got) == _bits(f(a))


def test_reuse_plan_picks_dead_buffers_of_the_same_layout_only():
    rng = np.random.default_rng(6)

    def f(a, b):
        c = a @ b          # (40, 40)
        d = c.tanh()       # into c (dies here)
        e = d @ b          # d still read below: not into d
        g = (e * d).sum(0)
        return g

    a, b = dg.tensor(rng.standard_normal((40, 40))), dg.tensor(rng.standard_normal((40, 40)))
    compiled, got = _compiled_twice(f, (a, b), True)
    assert _bits([got]) == _bits([f(a, b)])
    source = compiled.source()
    assert "tanh" in source and "out=v" in source


def test_constant_maker_table_resolves_to_existing_functions():
    makers, factories, index_makers = trace._codes()
    for module, name in trace.CONSTANT_CREATORS + trace.SHAPE_ONLY_INDEX_MAKERS:
        assert trace._resolve(module, name)  # (raises AttributeError for a name that no longer exists)
    assert dg.zeros.__code__ in factories and dg.zeros.__code__ in makers
    from dualgrad.ops import einsum
    assert einsum._operand_gradient.__code__ in makers
    assert dg.sin.__code__ not in makers


def test_resolving_a_stale_name_raises():
    with pytest.raises(AttributeError):
        trace._resolve("dualgrad.ops.einsum", "no_such_function")


def test_einsum_gradient_with_a_repeated_index_compiles():
    # (its eye constant comes from einsum's _operand_gradient, a constant maker)
    f = dg.func.grad(lambda a: dg.einsum("ii->", a.sin()))
    a = dg.tensor(np.arange(9.0).reshape(3, 3) / 10)
    compiled, got = _compiled_twice(f, (a,), True)
    assert compiled.traces == 1 and "eager" not in compiled.explain()
    assert _bits([got]) == _bits([f(a)])


def test_each_op_signature_is_checked_against_dispatch_once_per_trace(monkeypatch):
    calls = []
    original = trace.primal_callable

    def counting(op, args, params):
        calls.append(op.name)
        return original(op, args, params)
    monkeypatch.setattr(trace, "primal_callable", counting)
    f = dg.compile(lambda x: x.sin().sin().sin() * 2.0 * 3.0)
    x = dg.tensor([0.1, 0.2])
    assert f(x).tolist() == (x.sin().sin().sin() * 2.0 * 3.0).tolist()
    assert sorted(calls) == ["mul", "sin"]


def test_closure_walk_is_complete_for_plain_functions_and_incomplete_for_objects():
    w = dg.tensor([1.0])

    def plain(x):
        return x * w + np.pi

    reached = set()
    closure_guards(plain, reached)
    assert INCOMPLETE not in reached and ("object", id(w)) in reached

    class Holder:
        pass
    holder = Holder()
    holder.w = w

    def through_object(x):
        return x * holder.w

    reached = set()
    closure_guards(through_object, reached)
    assert INCOMPLETE in reached
    items = [holder]

    def through_list(x):
        return x * items[0].w

    reached = set()
    closure_guards(through_list, reached)
    assert INCOMPLETE in reached


def test_argument_reached_through_an_unwalked_object_is_guarded_by_identity(monkeypatch):
    class Holder:
        pass
    holder = Holder()
    items = [holder]
    holder.w = dg.tensor([2.0])
    f = dg.compile(lambda x: x * items[0].w)
    scans = []
    original = gc.get_referrers
    monkeypatch.setattr(api.gc, "get_referrers", lambda *a: scans.append(1) or original(*a))
    assert f(holder.w).tolist() == [4.0]
    assert scans  # (an incomplete walk: the referrer scan decides)
    other = dg.tensor([3.0])
    assert f(other).tolist() == [6.0]  # (x * w, not x * x: the trace was for that argument only)


def test_plain_function_needs_no_referrer_scan(monkeypatch):
    scans = []
    original = gc.get_referrers
    monkeypatch.setattr(api.gc, "get_referrers", lambda *a: scans.append(1) or original(*a))
    f = dg.compile(dg.func.grad(lambda y: (y.sin() * 1.01 + 0.1).sin()))
    y = dg.tensor(0.3)
    f(y)
    dg.compile(dg.func.grad(lambda y: dg.sin(dg.sin(y) * 1.01)))(y)  # (dualgrad's own objects in its closures)
    assert not scans
    assert f(dg.tensor(0.4)).tolist() == dg.func.grad(lambda y: (y.sin() * 1.01 + 0.1).sin())(dg.tensor(0.4)).tolist()


def test_argument_also_closed_over_is_guarded_by_identity():
    w = dg.tensor([2.0])
    f = dg.compile(lambda x: x * w)
    assert f(w).tolist() == [4.0]
    assert f(dg.tensor([3.0])).tolist() == [6.0]
    assert f(w).tolist() == [4.0]


def test_tracing_leaves_automatic_garbage_collection_on():
    f = dg.compile(lambda x: x.sin())
    f(dg.tensor([1.0]))
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        dg.compile(lambda x: x.sin() / 0 if False else 1 / 0)(dg.tensor([1.0]))
    assert gc.isenabled()


# -- grad(compile(f)): the backward returns what the forward's replay computed -------------------------------

class _Runs:
    """Counts the replays (or traces) of each compiled function by name: the forward ``f``, its ``vjp`` (a
    replay of the forward and the backward) and its ``value and grad`` (both at once, in the forward)."""

    def __init__(self, monkeypatch):
        self.names = []
        original = api.CompiledFunction.run
        runs = self

        def run(compiled, *args):
            runs.names.append(compiled.__name__)
            return original(compiled, *args)
        monkeypatch.setattr(api.CompiledFunction, "run", run)


def _loss(x):
    return (x.sin() * x + x.exp() * 0.5).sum()


def test_grad_of_compiled_does_not_replay_the_forward_again(monkeypatch):
    runs = _Runs(monkeypatch)
    compiled = dg.compile(_loss)
    gradient = dg.func.grad(compiled)
    x = dg.tensor([0.5, 1.0, 2.0])
    want = dg.func.grad(_loss)(x)
    assert _bits([gradient(x)]) == _bits([want])  # (first: forward, then the vjp replays it again)
    assert runs.names == ["_loss", "vjp of _loss"]
    for _ in range(3):
        runs.names.clear()
        assert _bits([gradient(x)]) == _bits([want])
        assert runs.names == ["value and grad of _loss"]  # (one replay: no forward inside the backward)
    y = dg.tensor([0.1, -0.3, 0.7])
    assert _bits([gradient(y)]) == _bits([dg.func.grad(_loss)(y)])


def test_backward_of_compiled_loss_uses_the_saved_gradient(monkeypatch):
    runs = _Runs(monkeypatch)
    compiled = dg.compile(_loss)
    w = dg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    expected = dg.func.grad(_loss)(w.detach())
    for _ in range(3):
        runs.names.clear()
        w.grad = None
        loss = compiled(w)
        loss.backward()
        assert _bits([w.grad]) == _bits([expected])
        assert loss.item() == _loss(w.detach()).item()
    assert runs.names == ["value and grad of _loss"]
    h = 1e-6
    for i in range(3):  # (central differences)
        e = np.zeros(3)
        e[i] = h
        plus, minus = _loss(dg.tensor(w._data + e)).item(), _loss(dg.tensor(w._data - e)).item()
        assert np.isclose(w.grad._data[i], (plus - minus) / (2 * h), rtol=1e-7, atol=1e-9)


def test_cotangent_other_than_one_replays_the_vjp(monkeypatch):
    compiled = dg.compile(_loss)
    w = dg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    compiled(w).backward()  # (a scalar loss: later forwards save the gradient)
    w.grad = None
    runs = _Runs(monkeypatch)
    compiled(w).backward(dg.tensor(2.0))
    assert "vjp of _loss" in runs.names
    want = dg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    _loss(want).backward(dg.tensor(2.0))
    assert _bits([w.grad]) == _bits([want.grad])


def test_retained_graph_backward_twice_gives_separate_equal_gradients():
    compiled = dg.compile(_loss)
    w = dg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    compiled(w).backward()
    loss = compiled(w)
    first = dg.grad(loss, w, retain_graph=True)[0]
    second = dg.grad(loss, w)[0]
    assert _bits([first]) == _bits([second])
    assert not np.may_share_memory(first._data, second._data)


def test_second_derivatives_of_compiled_still_differentiate_the_backward():
    compiled = dg.compile(_loss)
    x = dg.tensor([0.5, 1.0, 2.0])
    dg.func.grad(compiled)(x)
    dg.func.grad(compiled)(x)  # (the value-and-grad forward is in use)
    got = dg.func.hessian(compiled)(x)
    want = dg.func.hessian(_loss)(x)
    assert np.allclose(got._data, want._data, rtol=1e-12, atol=0)
    w = dg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    (g,) = dg.grad(compiled(w), w, create_graph=True)
    (gg,) = dg.grad(g.sum(), w)
    assert np.allclose(gg._data, want._data.sum(0), rtol=1e-12, atol=0)


def test_non_scalar_output_keeps_the_vjp_backward():
    compiled = dg.compile(lambda x: x.sin() * x)
    w = dg.tensor([0.5, 1.0], requires_grad=True)
    for _ in range(3):
        w.grad = None
        compiled(w).backward(dg.tensor([1.0, 1.0]))
    assert not compiled.backward_follows
    assert _bits([w.grad]) == _bits([dg.func.grad(lambda x: (x.sin() * x).sum())(w.detach())])


def test_module_weight_passed_as_its_own_input_is_guarded_by_identity():
    lin = dg.nn.Linear(3, 3)
    compiled = dg.compile(lin)
    reached = set()
    closure_guards(lin, reached)
    assert INCOMPLETE in reached  # (a module holds its parameters in attributes the walk follows by name only)
    with dg.no_grad():
        assert _bits([compiled(lin.weight)]) == _bits([lin(lin.weight)])
        x = dg.tensor(np.arange(9.0).reshape(3, 3))
        assert _bits([compiled(x)]) == _bits([lin(x)])
        assert _bits([compiled(x)]) == _bits([lin(x)])
