"""Table-driven reverse-mode tests: every op in the table, against finite differences.

For each op, Hypothesis draws inputs (``op_samples.SAMPLES``); the reverse rule
must satisfy the dot-product identity ``<u, J v>`` (central differences) ==
``<J^T u, v>`` (``dualgrad.grad``), and to second order, the gradient of
``<grad, w>`` must match central differences of the first-order gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import as_outputs, assert_close, directional_fd, leaves, random_like, vdot
from hypothesis import given
from hypothesis import strategies as st
from op_samples import COVERED_BY, SAMPLES

import dualgrad as dg
from dualgrad.ops import ALL_OPS

DIFFERENTIABLE = sorted(name for name, op in ALL_OPS.items() if op.differentiable)
SAMPLED = sorted(SAMPLES)
# Ops whose derivative is piecewise constant, so second order is zero almost everywhere.
FIRST_ORDER_ONLY: set[str] = set()


def test_every_differentiable_op_has_a_reverse_rule_and_samples():
    missing_rule = [n for n in DIFFERENTIABLE if ALL_OPS[n].vjp is None]
    missing_samples = [n for n in DIFFERENTIABLE if n not in SAMPLES and n not in COVERED_BY]
    assert not missing_rule, f"ops without a vjp rule: {missing_rule}"
    assert not missing_samples, f"ops without samples in tests/op_samples.py: {missing_samples}"


def test_samples_name_real_ops():
    unknown = [n for n in list(SAMPLES) + list(COVERED_BY) if n not in ALL_OPS]
    assert not unknown, f"samples for ops that are not in the table: {unknown}"


def _op_names_in_graph(outputs) -> set:
    seen, stack, names = set(), [o.grad_fn for o in outputs if o.grad_fn is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or not hasattr(node, "op"):
            continue
        seen.add(id(node))
        name = getattr(node.op, "name", None)
        names.add(COVERED_BY.get(name, name))  # (an overload's node counts for the op whose samples made it)
        stack.extend(t for t, _ in node.edges if t is not None and not isinstance(t, dg.Tensor))
    return names


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_vjp_matches_finite_differences(name, data):
    sample = data.draw(SAMPLES[name], label="sample")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    xs = leaves(sample.arrays)
    outs = as_outputs(sample.call(*xs))
    assert outs, f"{name}: sample produced no floating output"
    assert name in _op_names_in_graph(outs), f"{name}: the sample does not exercise op {name!r}"
    us = random_like(rng, outs)
    vs = random_like(rng, sample.arrays)
    grads = dg.grad(outs, xs, [dg.tensor(u) for u in us], allow_unused=True, materialize_grads=True)
    for x, g in zip(xs, grads):
        assert g.shape == x.shape and g.dtype == x.dtype
    expected = vdot(us, directional_fd(sample.call, sample.arrays, vs))
    assert_close(vdot(grads, vs), expected, rtol=1e-5, atol=1e-6, what=f"{name} <J^T u, v>")


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SAMPLED if n not in FIRST_ORDER_ONLY])
@given(data=st.data())
def test_second_order_matches_finite_differences(name, data):
    sample = data.draw(SAMPLES[name], label="sample")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    xs = leaves(sample.arrays)
    outs = as_outputs(sample.call(*xs))
    us = [dg.tensor(u) for u in random_like(rng, outs)]
    ws = random_like(rng, sample.arrays)
    vs = random_like(rng, sample.arrays)

    def gradient_dot_w(*tensors):
        inner = [t.detach().requires_grad_() for t in tensors]
        with dg.enable_grad():
            o = as_outputs(sample.call(*inner))
            gs = dg.grad(o, inner, us, allow_unused=True, materialize_grads=True)
        return dg.tensor(vdot(gs, ws))

    grads = dg.grad(outs, xs, us, create_graph=True, allow_unused=True, materialize_grads=True)
    scalar = sum((g * dg.tensor(w)).sum() for g, w in zip(grads, ws))
    if not scalar.requires_grad:
        return  # the first derivative is constant: nothing to check at second order
    second = dg.grad(scalar, xs, allow_unused=True, materialize_grads=True)
    expected = vdot([1.0], directional_fd(gradient_dot_w, sample.arrays, vs, eps=1e-5))
    assert_close(vdot(second, vs), expected, rtol=1e-4, atol=1e-5, what=f"{name} second order")
