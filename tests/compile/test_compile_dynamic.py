"""dualgrad.compile(dynamic=True): one trace for every input size of the same ranks, when the trace allows it.

A dynamic trace is guarded on ranks, dtypes, which dimensions are 1 and which input dimensions have equal
sizes (the broadcasting pattern). It replays for other sizes only if every step holds for any sizes:
elementwise ops, reductions over axes, rank-based shape ops, and reshapes/expands whose target shape is
written in terms of the input sizes. Anything else (the user's code reading a size, a mean's count, a
constant array, indexing, cat) makes the trace hold for its sizes only: explain() says why. Every result is
compared with eager (the safety net off).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgrad as dg

pytestmark = pytest.mark.usefixtures("no_safety_net", "compile_warnings_are_errors")


def equal(got, want):
    got, want = dg.base.pytree.flatten(got)[0], dg.base.pytree.flatten(want)[0]
    return len(got) == len(want) and all(
        a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a._data, b._data, equal_nan=True)
        for a, b in zip(got, want))


def rand(*shape, seed=0):
    return dg.tensor(np.random.default_rng(seed + sum(shape)).standard_normal(shape))


def test_one_trace_for_every_size():
    f = lambda x, y: (x.sin() * y + x.exp()).sum(axis=-1).tanh()  # noqa: E731
    c = dg.compile(f, dynamic=True)
    for n, m in [(5, 7), (6, 11), (13, 4), (5, 7)]:
        x, y = rand(n, m), rand(n, m, seed=1)
        assert equal(c(x, y), f(x, y))
    assert c.traces == 1 and "for any sizes of these ranks" in c.explain()


def test_gradient_with_reshape_and_expand_written_in_the_input_sizes():
    grad = dg.func.grad(lambda x, y: (x.sin() * y).sum(axis=1).exp().sum(), argnums=(0, 1))
    c = dg.compile(grad, dynamic=True)
    for n, m in [(5, 7), (6, 11), (13, 4)]:
        x, y = rand(n, m), rand(m, seed=1)
        assert equal(c(x, y), grad(x, y))
    assert c.traces == 1
    assert "x0.shape[0]" in c.source()


def test_a_dimension_becoming_one_retraces():
    grad = dg.func.grad(lambda x, y: (x * y).exp().sum(), argnums=(0, 1))
    c = dg.compile(grad, dynamic=True)
    for x, y in [(rand(5, 7), rand(5, 7)), (rand(6, 11), rand(6, 11)), (rand(6, 11), rand(1, 11)),
                 (rand(8, 13), rand(1, 13))]:
        assert equal(c(x, y), grad(x, y))  # (y broadcast: its gradient is summed over the rows)
    assert c.traces == 2 and "-> (2, (True, False))" in c.explain()


def test_equal_sizes_becoming_different_retrace_and_raise_as_eager():
    f = lambda x, y: x * y  # noqa: E731
    c = dg.compile(f, dynamic=True)
    c(rand(5), rand(5))
    with pytest.raises(RuntimeError) as compiled_error:
        c(rand(5), rand(6))
    with pytest.raises(RuntimeError) as eager_error:
        f(rand(5), rand(6))
    assert str(compiled_error.value) == str(eager_error.value)


@pytest.mark.parametrize(("f", "why"), [
    (lambda x: x * x.shape[0], "Tensor.shape read"),
    (lambda x: x * len(x), "Tensor.__len__ read"),
    (lambda x: dg.func.grad(lambda v: v.mean())(x), "may be a size"),
    (lambda x: x[1:] * 2.0, "getitem"),
    (lambda x: dg.cat([x, x]).exp(), "cat"),
    (lambda x: x + dg.ones(x.shape), "Tensor.shape read"),
])
def test_size_dependent_traces_hold_for_their_sizes_only(f, why):
    c = dg.compile(f, dynamic=True)
    for n in (5, 7, 5):
        x = rand(n)
        assert equal(c(x), f(x))
    assert c.traces == 2 and why in c.explain() and "for these sizes only" in c.explain()


def test_value_guards_still_hold_for_new_sizes():
    def f(x):
        return x.exp() if bool(x.sum() > 0) else -x
    c = dg.compile(f, dynamic=True)
    for x in (rand(5).abs(), rand(7).abs(), -rand(9).abs(), -rand(4).abs()):
        assert equal(c(x), f(x))
    assert c.traces == 2


def test_closed_over_array_of_fixed_size_makes_the_trace_size_specific():
    w = rand(5)
    f = lambda x: x * w  # noqa: E731
    c = dg.compile(f, dynamic=True)
    assert equal(c(rand(5)), f(rand(5)))
    assert "constant of shape (5,)" in c.explain()


UNARY = [dg.sin, dg.exp, dg.tanh, lambda x: x * 1.5 + 0.25, dg.sigmoid, lambda x: x.flip(-1) * 2.0,
         lambda x: x.sum(axis=-1, keepdims=True) * x, lambda x: x.permute(1, 0).exp().permute(1, 0)]


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.integers(0, len(UNARY) - 1), min_size=1, max_size=4),
       sizes=st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=4),
       gradient=st.booleans())
def test_dynamic_replays_equal_eager_for_random_sizes(ops, sizes, gradient):
    def f(x):
        for i in ops:
            x = UNARY[i](x)
        return x.sum() if gradient else x
    fn = dg.func.grad(f) if gradient else f
    c = dg.compile(fn, dynamic=True)
    for n, m in sizes:
        x = rand(n, m)
        assert equal(c(x), fn(x))


def test_a_gradient_that_does_not_depend_on_the_values_follows_the_sizes():
    # (every step reads only constants: the expand of the seed to x's shape must not be folded into a constant)
    grad = dg.func.grad(lambda x: (x * 1.5 + 0.25).sum())
    c = dg.compile(grad, dynamic=True)
    for n, m in [(2, 2), (3, 3), (5, 4)]:
        x = rand(n, m)
        assert equal(c(x), grad(x))
