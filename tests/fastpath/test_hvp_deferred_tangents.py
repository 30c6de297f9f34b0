"""``hvp``'s forward pass defers tangents nothing may read (``forward_ad.engine.DeferredTangent``).

A deferred tangent is computed when first read. These tests pin down that every
way of reading one gives the eager values (``unpack_dual`` inside the function,
an intermediate used again, in-place writes, views, broadcasting, dtypes, long
chains, nested levels, ``vmap``, saved-tensor hooks), that the other transforms
are untouched, that nothing stays alive for nothing, and the memory drop itself.
"""

import gc
import tracemalloc

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, hvp, jvp, vhp
from helpers import as_outputs, random_like, rosenbrock, rosenbrock_hvp
from hypothesis import given, settings
from hypothesis import strategies as st
from op_samples import SAMPLES

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.base.state import STATE
from dualgrad.forward_ad import engine
from dualgrad.forward_ad.engine import DeferredTangent
from dualgrad.ops import ALL_OPS


@pytest.fixture
def deferrals(monkeypatch):
    """The outcomes of ``engine._defer`` (True: a tangent was deferred)."""
    outcomes = []
    original = engine._defer

    def spy(*args):
        outcomes.append(original(*args))
        return outcomes[-1]

    monkeypatch.setattr(engine, "_defer", spy)
    return outcomes


def _data(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, n).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.mark.fastpath
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-5)])
def test_rosenbrock_hvp_against_numpy_and_vhp(dtype, rtol, deferrals):
    xn, vn = _data(9, dtype)
    value, product = hvp(rosenbrock, dg.tensor(xn), dg.tensor(vn))
    # the tangents of head**2, tail - ., (.)**2, 100 * ., 1 - head, (.)**2, +, sum
    assert deferrals.count(True) >= 8
    assert product.dtype == dtype and value.dtype == dtype
    scale = np.abs(rosenbrock_hvp(xn.astype(np.float64), vn.astype(np.float64))).max()
    np.testing.assert_allclose(product.numpy(), rosenbrock_hvp(xn, vn), rtol=rtol, atol=rtol * scale)
    _, reverse_over_reverse = vhp(rosenbrock, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), reverse_over_reverse.numpy(), rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(value.numpy(), rosenbrock(dg.tensor(xn)).numpy(), rtol=rtol)


def test_create_graph_defers_nothing(deferrals):
    xn, vn = _data(5, np.float64)
    _, product = hvp(rosenbrock, dg.tensor(xn, requires_grad=True), dg.tensor(vn), create_graph=True)
    assert True not in deferrals
    np.testing.assert_allclose(product.detach().numpy(), rosenbrock_hvp(xn, vn), rtol=1e-13)


@pytest.mark.fastpath
def test_unpack_dual_of_an_intermediate_inside_the_function(deferrals):
    """Reading a deferred tangent (and one that reads other deferred ones) gives its value."""
    xn, vn = _data(6, np.float64)
    seen = {}

    def f(x):
        y = x**2  # deferred
        z = 3.0 * y + x  # deferred, reads y's deferred tangent
        seen["z"] = fwAD.unpack_dual(z).tangent.numpy().copy()
        seen["y"] = fwAD.unpack_dual(y).tangent.numpy().copy()
        return (z * z).sum()

    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    assert True in deferrals
    np.testing.assert_allclose(seen["y"], 2 * xn * vn, rtol=1e-14)
    np.testing.assert_allclose(seen["z"], (6 * xn + 1) * vn, rtol=1e-14)
    z = 3 * xn**2 + xn  # (z**2)'' v = 2 (z'^2 + z z'') v
    np.testing.assert_allclose(product.numpy(), 2 * ((6 * xn + 1) ** 2 + z * 6) * vn, rtol=1e-13)


def test_an_intermediate_used_again_after_its_tangent_was_deferred():
    xn, vn = _data(5, np.float64)

    def f(x):
        y = x * 2.0  # deferred
        first = (y.sin() * y).sum()  # sin reads y (saved), mul reads both
        return first + (y**3).sum() + y.exp().sum()  # exp reads its output: computed at once

    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    y = 2 * xn  # d2/dx2 of f = 4 * (d2/dy2) = 4 (2 cos y - y sin y + 6 y + e^y)
    expected = 4 * (2 * np.cos(y) - y * np.sin(y) + 6 * y + np.exp(y)) * vn
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-13)


@pytest.mark.parametrize("write", [
    lambda y: y.mul_(3.0),
    lambda y: y.add_(y),
    lambda y: y.__setitem__(slice(1, 3), 0.5),
    lambda y: y[1:].mul_(2.0),
    lambda y: y.copy_(y * 2.0),
])
@pytest.mark.fastpath
def test_in_place_writes_after_tangents_were_deferred(write, deferrals, monkeypatch):
    """A write first computes the deferred tangents (they may read what it changes)."""
    xn, vn = _data(6, np.float64)
    c = dg.tensor(np.linspace(0.5, 2.0, 6))

    def f(x):
        y = x * 1.5  # deferred: reads x's tangent only
        z = y * c  # deferred: reads y's tangent and c (saved)
        w = y * 1.0  # deferred: reads y's tangent only
        write(y)  # changes y and its tangent in place
        return (z * w).sum() + (y**3).sum()

    _, deferred = hvp(f, dg.tensor(xn), dg.tensor(vn))
    assert True in deferrals
    monkeypatch.setattr(engine, "_defer", lambda *args: False)
    _, eager = hvp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(deferred.numpy(), eager.numpy(), rtol=1e-13)
    _, reverse_over_reverse = vhp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(deferred.numpy(), reverse_over_reverse.numpy(), rtol=1e-13)


def test_in_place_write_on_a_saved_input_still_raises():
    """A value a backward rule needs, changed in place: torch's error, deferred tangents or not."""

    def f(x):
        y = x * 1.0
        z = y**2  # saves y
        y.mul_(2.0)
        return z.sum()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        hvp(f, dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]))


def test_views_broadcasting_and_reductions_of_deferred_tangents():
    rng = np.random.default_rng(3)
    xn, vn = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    b = dg.tensor(rng.standard_normal(4))

    def f(x):
        y = x * b  # deferred
        rows = y[1:].reshape(8).sum(axis=0, keepdims=True)  # views and a reduction of a deferred tangent
        outer = y.sum(axis=0)[:, None] * y.sum(axis=1)[None, :]  # broadcasting
        return (rows**2).sum() + (outer**2).sum() + (y.mT @ y).sum()

    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    _, expected = vhp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), expected.numpy(), rtol=1e-12)


def test_a_scalar_input_and_a_constant_with_a_broadcast_tangent():
    def f(x):
        s = x.sum() * 2.0  # a deferred 0-d tangent
        return ((x + s) ** 2).sum()  # broadcast into the sum's output

    xn, vn = _data(4, np.float64)
    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    _, expected = vhp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), expected.numpy(), rtol=1e-13)


def test_a_long_chain_is_computed_without_recursion():
    n = 20_000  # far beyond Python's recursion limit

    def f(x):
        y = x
        for _ in range(n):
            y = y * 1.0001  # each tangent deferred, reading the previous one
        return (y**2).sum()  # the square's backward reads y's tangent: the whole chain at once

    xn, vn = np.array([0.5, -1.0]), np.array([1.0, 2.0])
    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), 2 * 1.0001 ** (2 * n) * vn, rtol=1e-9)


@pytest.mark.fastpath
def test_deferred_tangents_keep_nothing_alive_after_hvp():
    """No reference cycles, and the level's exit drops what its deferred tangents held."""
    kept = []

    def f(x):
        y = (x * 2.0) ** 2
        kept.append(y)  # outlives hvp with a deferred tangent
        return y.sum()

    gc.collect()
    gc.disable()
    try:
        hvp(f, dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
        (lazy,) = kept[0]._fw.values()
        assert type(lazy) is DeferredTangent and lazy.op is None and lazy.args is None
        assert lazy.tangents is None and lazy.value is None
        assert not [o for o in gc.get_objects() if type(o) is DeferredTangent and o.op is not None]
    finally:
        gc.enable()


@pytest.mark.fastpath
@pytest.mark.parametrize("defer", [True, False])
def test_deferred_tangents_of_an_inner_level_carry_the_outer_tangents(defer):
    """Forward over forward: a deferred inner tangent is computed with the outer level active."""
    xn, un, vn = np.array([0.3, -0.5, 0.8]), np.array([0.5, 1.0, -1.0]), np.array([1.0, -2.0, 0.5])
    x0 = dg.tensor(xn, requires_grad=True)  # (a node per op: tangents may be deferred)
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(x0, dg.tensor(un))
        with fwAD.dual_level() as inner:
            inner_level = STATE.dual_levels[inner]
            inner_level.tape_tangents = False
            inner_level.defer_tangents = defer
            y = fwAD.make_dual(x, dg.tensor(vn)) ** 3 * 2.0
            assert (type(y._fw[inner_level]) is DeferredTangent) == defer
            tangent = fwAD.unpack_dual(y, level=inner).tangent
            mixed = fwAD.unpack_dual(tangent, level=outer).tangent
            outer_tangent = fwAD.unpack_dual(y, level=outer).tangent
    np.testing.assert_allclose(tangent.detach().numpy(), 6 * xn**2 * vn, rtol=1e-14)
    np.testing.assert_allclose(mixed.detach().numpy(), 12 * xn * un * vn, rtol=1e-14)
    np.testing.assert_allclose(outer_tangent.detach().numpy(), 6 * xn**2 * un, rtol=1e-14)


def test_hvp_under_vmap_and_saved_tensor_hooks(deferrals):
    xn, vs = np.array([0.3, -0.5, 0.8, 1.1]), np.random.default_rng(4).standard_normal((3, 4))
    batched = dg.vmap(lambda v: hvp(rosenbrock, dg.tensor(xn), v)[1])(dg.tensor(vs))
    for row, v in zip(batched.numpy(), vs, strict=True):
        np.testing.assert_allclose(row, rosenbrock_hvp(xn, v), rtol=1e-13)
    deferrals.clear()
    with dg.autograd.graph.saved_tensors_hooks(lambda t: t * 1.0, lambda t: t):
        _, product = hvp(rosenbrock, dg.tensor(xn), dg.tensor(vs[0]))
    np.testing.assert_allclose(product.numpy(), rosenbrock_hvp(xn, vs[0]), rtol=1e-13)


def test_jvp_jacobians_and_hessians_defer_nothing(deferrals):
    xn, vn = _data(4, np.float64)
    x, v = dg.tensor(xn), dg.tensor(vn)
    _, tangent = jvp(lambda x: x.sin() * x, x, v)
    np.testing.assert_allclose(tangent.numpy(), (np.cos(xn) * xn + np.sin(xn)) * vn, rtol=1e-14)
    full = hessian(rosenbrock, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(full.numpy() @ vn, rosenbrock_hvp(xn, vn), rtol=1e-12)
    np.testing.assert_allclose(dg.func.jacfwd(dg.func.jacrev(rosenbrock))(x).numpy(), full.numpy(), rtol=1e-13)
    assert True not in deferrals


def test_gradcheck_and_gradgradcheck_with_forward_over_reverse():
    x = dg.tensor([0.3, -0.5, 0.8], requires_grad=True)
    assert dg.autograd.gradcheck(rosenbrock, (x,), check_forward_ad=True)
    assert dg.autograd.gradgradcheck(rosenbrock, (x,), check_fwd_over_rev=True)


def _peak_arrays(n):
    """hvp's peak traced memory above its inputs, in arrays of n float64."""
    x, v = (dg.tensor(a) for a in _data(n, np.float64))
    hvp(rosenbrock, x, v)  # (warm-up: first-call allocations)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        hvp(rosenbrock, x, v)
        return (tracemalloc.get_traced_memory()[1] - base) / (8 * n)
    finally:
        tracemalloc.stop()


@pytest.mark.fastpath
def test_rosenbrock_hvp_peak_memory_is_at_most_six_arrays():
    """Forward 5 arrays (was 10: every tangent deferred, those of tail - head**2 and 1 - head computed
    only when the backward pass reads them), backward 6."""
    assert _peak_arrays(10**6) <= 6.1


@pytest.mark.fastpath
def test_ops_on_views_of_the_input_defer_their_tangents(deferrals):
    """``x[1:] - x[:-1]``: the tangents of the views are views of the input's (they hold no memory)."""
    xn, vn = _data(7, np.float64)

    def f(x):
        return ((x[1:] - x[:-1]) ** 2).sum() + ((1.0 - x[2:]) * x[:-2]).sum()

    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    assert deferrals[:3] == [False, False, True]  # x[1:] and x[:-1] (views: not deferred), their difference
    _, expected = vhp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), expected.numpy(), rtol=1e-13)


def test_views_of_an_intermediate_do_not_hold_its_tangent_in_a_deferred_one(deferrals):
    """The view of an intermediate takes a view of its tangent, which the graph does not hold: an op
    on it computes its tangent at once (deferring it would keep that tangent alive)."""
    xn, vn = _data(7, np.float64)
    c = dg.tensor(np.linspace(0.5, 1.5, 6))

    def f(x):
        y = x * 2.0  # an intermediate, its tangent deferred
        first = y[1:] + 1.0  # y's tangent computed to take its view; the add's is computed too
        assert not isinstance(first._fw and next(iter(first._fw.values())), DeferredTangent)
        return ((first * c) ** 2).sum()

    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    _, expected = vhp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), expected.numpy(), rtol=1e-13)


def test_a_tangent_of_the_input_changed_in_place_after_a_view_op_deferred():
    """Writing into the input's tangent (a view op's tangent reads it) first computes the deferred ones."""
    xn, vn = _data(6, np.float64)

    def f(x, scale):
        y = x[1:] - x[:-1]  # deferred: reads views of x's tangent
        fwAD.unpack_dual(x).tangent.mul_(scale)  # in place: y's tangent keeps the old values
        return (y**2).sum() + (x**3).sum()

    _, product = hvp(lambda x: f(x, 3.0), dg.tensor(xn), dg.tensor(vn.copy()))
    d = np.diff(vn)  # y's tangent with the original v, x**3's with 3 v
    expected = 6 * xn * 3 * vn
    expected[1:] += 2 * d
    expected[:-1] -= 2 * d
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-13)


DEFERRABLE = sorted(name for name in SAMPLES if ALL_OPS[name].jvp_reads is not None)


def _cubic_hvp(sample, vs):
    """hvp of ``sum(out**3)`` over the op's outputs, w.r.t. its floating inputs (the others fixed).

    Each input enters as ``x * one``, ``one`` requiring grad: the same values, with a
    deferred tangent (``mul`` saves ``x`` for ``one``'s gradient), as most intermediates have.
    """
    floating = [i for i, a in enumerate(sample.arrays) if np.asarray(a).dtype.kind == "f"]

    def f(*xs):
        args = list(sample.arrays)
        for i, x in zip(floating, xs, strict=True):
            args[i] = x * dg.ones((), dtype=x.dtype, requires_grad=True)
        outs = as_outputs(sample.call(*[a if isinstance(a, dg.Tensor) else dg.tensor(a) for a in args]))
        return sum(((o**3).sum() for o in outs), dg.tensor(0.0))

    inputs = tuple(dg.tensor(sample.arrays[i]) for i in floating)
    return hvp(f, inputs, tuple(dg.tensor(vs[i]) for i in floating))[1]


@pytest.mark.parametrize("name", DEFERRABLE)
@settings(max_examples=8)
@given(data=st.data())
def test_every_deferrable_op_gives_the_eager_hvp(name, data):
    """Over the op table: deferring tangents never changes an hvp (the output's tangent is read back)."""
    sample = data.draw(SAMPLES[name], label="sample")
    if not any(np.asarray(a).dtype.kind == "f" for a in sample.arrays):
        return
    vs = random_like(np.random.default_rng(0), sample.arrays)
    deferred = _cubic_hvp(sample, vs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "_defer", lambda *args: False)
        eager = _cubic_hvp(sample, vs)
    for got, want in zip(deferred, eager, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
