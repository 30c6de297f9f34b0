"""Table-driven vmap tests: every op's batching rule equals a Python loop over the batch.

For each op, Hypothesis draws its sample inputs (``op_samples.SAMPLES``), a batch
size and, per input, whether it is batched and at which position. The batch
members are distinct scalings of the sample (kept inside the op's domain);
``vmap`` of the sample must equal stacking the sample's results member by
member. A second test nests two vmaps.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_samples import COVERED_BY, SAMPLES, Sample, broadcastable, shapes

import dualgrad as dg
from dualgrad.ops import ALL_OPS
from dualgrad.ops.batch_rules import rule_for
from dualgrad.ops.dispatch import apply


def _unary_sample(fn, dtype=np.float64):
    @st.composite
    def draw(draw):
        shape = draw(shapes())
        x = draw(hnp.arrays(dtype, shape, elements=_elements(dtype)))
        return Sample(fn, (x,))
    return draw()


def _binary_sample(fn, dtype=np.float64):
    @st.composite
    def draw(draw):
        s1, s2 = broadcastable(draw)
        x = draw(hnp.arrays(dtype, s1, elements=_elements(dtype)))
        y = draw(hnp.arrays(dtype, s2, elements=_elements(dtype)))
        return Sample(fn, (x, y))
    return draw()


def _elements(dtype):
    if dtype == np.bool_:
        return st.booleans()
    if np.issubdtype(dtype, np.integer):
        return st.integers(0, 5)  # (shift counts and values within every integer width)
    return st.floats(-3, 3, allow_subnormal=False)


def _op(name: str):
    return lambda *xs: apply(ALL_OPS[name], *xs)


# Samples of the ops that have none in op_samples (not differentiable, so not needed there).
_BINARY = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]
_UNARY = ["floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal",
          "signbit", "sign", "sgn", "logical_not"]
_EXTRA = {
    **{name: _binary_sample(_op(name)) for name in _BINARY},
    **{name: _unary_sample(_op(name)) for name in _UNARY},
    **{name: _binary_sample(_op(name), np.bool_) for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]},
    "bitwise_not": _unary_sample(_op("bitwise_not"), np.bool_),
    **{name: _binary_sample(_op(name), np.int64) for name in ["bitwise_left_shift", "bitwise_right_shift"]},
    "floor_divide": _binary_sample(lambda x, y: dg.floor_divide(x, y.abs() + 1)),
    "all": _unary_sample(lambda x: dg.all(x > 0, dim=-1) if x.ndim else dg.all(x > 0)),
    "any": _unary_sample(lambda x: dg.any(x > 0)),
    "argmax": _unary_sample(lambda x: dg.argmax(x, -1) if x.ndim else dg.argmax(x)),
    "argmin": _unary_sample(lambda x: dg.argmin(x)),
}


@st.composite
def _searchsorted_sample(draw):
    """A sequence sorted along its last dimension (1-d, or with rows matching the values')."""
    rows = draw(st.sampled_from([(), (2,)]))
    sequence = np.sort(draw(hnp.arrays(np.float64, rows + (draw(st.integers(1, 4)),), elements=_elements(np.float64))))
    values_shape = rows + (draw(st.integers(1, 3)),) if rows else draw(shapes())
    values = draw(hnp.arrays(np.float64, values_shape, elements=_elements(np.float64)))
    right = draw(st.booleans())
    return Sample(lambda s, v: dg.searchsorted(s, v, right=right), (sequence, values))


_EXTRA["searchsorted"] = _searchsorted_sample()
ALL_SAMPLES = {**_EXTRA, **SAMPLES}
SAMPLED = sorted(ALL_SAMPLES)


def test_every_op_has_a_batching_rule():
    missing = sorted(name for name, op in ALL_OPS.items() if rule_for(op) is None)
    assert not missing, f"ops without a batching rule (batch= or a family rule): {missing}"


def test_every_op_is_sampled_for_batching():
    missing = sorted(n for n in ALL_OPS if n not in ALL_SAMPLES and n not in COVERED_BY)
    assert not missing, f"ops without samples in tests/op_samples.py: {missing}"


def _member(array: np.ndarray, k: int) -> np.ndarray:
    """Batch member ``k``: a slight scaling of the sample (distinct members, same domain)."""
    return array * (1.0 + 0.03 * k) if array.dtype.kind == "f" else array


def as_outputs(result) -> tuple:
    """A sample's result as a tuple of Tensors (any dtype)."""
    outs = result if isinstance(result, tuple) else (result,)
    return tuple(o for o in outs if isinstance(o, dg.Tensor))


def _results(call, tensors) -> list[np.ndarray]:
    with dg.no_grad():
        return [np.asarray(o.detach().numpy()) for o in as_outputs(call(*tensors))]


def _batched_input(array: np.ndarray, size: int, dim: int | None) -> dg.Tensor:
    if dim is None:
        return dg.tensor(array)
    return dg.tensor(np.stack([_member(array, k) for k in range(size)], axis=dim))


@st.composite
def batch_layouts(draw, arrays: tuple) -> tuple:
    """Per input an in_dim (None for unbatched), at least one batched."""
    dims = [draw(st.none() | st.integers(0, a.ndim)) for a in arrays]
    if all(d is None for d in dims):
        i = draw(st.integers(0, len(arrays) - 1))
        dims[i] = draw(st.integers(0, arrays[i].ndim))
    return tuple(dims)


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_batching_rule_matches_loop(name, data):
    sample = data.draw(ALL_SAMPLES[name], label="sample")
    size = data.draw(st.integers(1, 3), label="batch size")
    dims = data.draw(batch_layouts(sample.arrays), label="in_dims")
    out_dim = data.draw(st.sampled_from([0, -1]), label="out_dims")
    inputs = [_batched_input(a, size, d) for a, d in zip(sample.arrays, dims, strict=True)]

    with dg.no_grad():
        got = dg.vmap(lambda *xs: as_outputs(sample.call(*xs)), in_dims=dims, out_dims=out_dim)(*inputs)
    for k in range(size):
        members = [dg.tensor(a if d is None else _member(a, k))
                   for a, d in zip(sample.arrays, dims, strict=True)]
        expected = _results(sample.call, members)
        assert len(got) == len(expected), f"{name}: vmap gave {len(got)} outputs, the loop {len(expected)}"
        for g, e in zip(got, expected, strict=True):
            member = np.take(g.numpy(), k, axis=out_dim)
            np.testing.assert_allclose(member, e, rtol=1e-10, atol=1e-12, err_msg=f"{name}, member {k}")


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED)
@given(data=st.data())
def test_nested_vmap_matches_double_loop(name, data):
    sample = data.draw(ALL_SAMPLES[name], label="sample")
    outer, inner = data.draw(st.integers(1, 2), label="outer"), data.draw(st.integers(1, 3), label="inner")
    which = data.draw(st.integers(0, len(sample.arrays) - 1), label="batched input")
    arrays = list(sample.arrays)
    stacked = np.stack([np.stack([_member(arrays[which], i * inner + j) for j in range(inner)])
                        for i in range(outer)])
    dims = tuple(0 if i == which else None for i in range(len(arrays)))

    def call(*xs):
        return as_outputs(sample.call(*xs))

    inputs = [dg.tensor(stacked) if i == which else dg.tensor(a) for i, a in enumerate(arrays)]
    with dg.no_grad():
        got = dg.vmap(dg.vmap(call, in_dims=dims), in_dims=dims)(*inputs)
    for i in range(outer):
        for j in range(inner):
            members = [dg.tensor(stacked[i, j]) if n == which else dg.tensor(a) for n, a in enumerate(arrays)]
            for g, e in zip(got, _results(sample.call, members), strict=True):
                np.testing.assert_allclose(g.numpy()[i, j], e, rtol=1e-10, atol=1e-12,
                                           err_msg=f"{name}, member ({i}, {j})")
