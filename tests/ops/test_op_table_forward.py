"""Table-driven forward-mode tests: every op in the table, against finite differences.

For each op, Hypothesis draws inputs (``op_samples.SAMPLES``) and directions:
the tangents of the outputs must match central differences, agree with reverse
mode on ``<u, J v>`` up to rounding, and with two nested dual levels the
tangent of the tangent must match central differences of first derivatives
(the second directional derivative).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import as_outputs, assert_close, directional_fd, leaves, random_like, vdot
from hypothesis import given
from hypothesis import strategies as st
from op_samples import SAMPLES

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.ops import ALL_OPS

DIFFERENTIABLE = sorted(name for name, op in ALL_OPS.items() if op.differentiable)
SAMPLED = sorted(SAMPLES)


def _dense(t, like) -> np.ndarray:
    """A tangent as an array (None, i.e. no dependence, is zeros shaped like ``like``)."""
    return np.zeros(like.shape, like.dtype) if t is None else t.detach().numpy()


def forward_tangents(call, arrays, directions) -> list[np.ndarray]:
    """Tangents of ``call``'s floating outputs at ``arrays`` along ``directions`` (one level)."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(v)) for a, v in zip(arrays, directions, strict=True)]
        outs = as_outputs(call(*duals))
        return [_dense(fwAD.unpack_dual(o).tangent, o) for o in outs]


def test_every_differentiable_op_has_a_forward_rule():
    missing = [n for n in DIFFERENTIABLE if ALL_OPS[n].jvp is None]
    assert not missing, f"ops without a jvp rule: {missing}"


def _draw(name, data):
    sample = data.draw(SAMPLES[name], label="sample")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    return sample, rng


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_jvp_matches_finite_differences(name, data):
    sample, rng = _draw(name, data)
    vs = random_like(rng, sample.arrays)
    tangents = forward_tangents(sample.call, sample.arrays, vs)
    expected = directional_fd(sample.call, sample.arrays, vs)
    assert len(tangents) == len(expected)
    for got, want in zip(tangents, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype, f"{name}: tangent shape/dtype"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} J v")


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_forward_and_reverse_agree_on_dot_product(name, data):
    sample, rng = _draw(name, data)
    vs = random_like(rng, sample.arrays)
    tangents = forward_tangents(sample.call, sample.arrays, vs)
    us = random_like(rng, tangents)
    xs = leaves(sample.arrays)
    outs = as_outputs(sample.call(*xs))
    grads = dg.grad(outs, xs, [dg.tensor(u) for u in us], allow_unused=True, materialize_grads=True)
    assert_close(vdot(us, tangents), vdot(grads, vs), rtol=1e-10, atol=1e-12,
                 what=f"{name} <u, J v> vs <J^T u, v>")


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_nested_levels_give_second_directional_derivative(name, data):
    sample, rng = _draw(name, data)
    vs = random_like(rng, sample.arrays)
    ws = random_like(rng, sample.arrays)
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(v), level=outer)
                 for a, v in zip(sample.arrays, vs, strict=True)]
        duals = [fwAD.make_dual(d, dg.tensor(w), level=inner) for d, w in zip(duals, ws, strict=True)]
        outs = as_outputs(sample.call(*duals))
        first = [fwAD.unpack_dual(o, level=inner).tangent for o in outs]
        seconds = [None if t is None else fwAD.unpack_dual(t, level=outer).tangent for t in first]
    if all(t is None for t in seconds):
        return  # the first derivative is piecewise constant: nothing to check at second order
    second = [_dense(t, o) for t, o in zip(seconds, outs, strict=True)]

    def along_w(*tensors):
        arrays = [t.numpy() for t in tensors]
        return tuple(dg.tensor(t) for t in forward_tangents(sample.call, arrays, ws))

    expected = directional_fd(along_w, sample.arrays, vs, eps=1e-5)
    for got, want in zip(second, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} d2f[v, w]")
