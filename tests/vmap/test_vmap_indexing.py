"""Indexing inside vmap with index Tensors that are themselves batched.

``x[index]``, ``x[index] = v``, ``gather`` and ``take_along_dim`` with an index
that differs per batch member are compared with a Python loop over the batch:
values, reverse mode (``vmap(grad(f))`` and ``grad`` of the vmapped function)
and forward mode. Hypothesis draws index expressions mixing batched and
unbatched integer Tensors, masks, ints, slices, ``None`` and ``...``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad.func import grad, jvp, vmap

BATCHED = "batched"


@st.composite
def batched_index_case(draw):
    """``(x, spec, tensors, size)``: per-example ``x``, an index whose ``BATCHED`` entries take
    the next of ``tensors`` (batched along axis 0 with ``size`` members; the rest are constants)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    size = draw(st.integers(1, 3))
    x = draw(hnp.arrays(np.float64, (size,) + shape, elements=st.floats(-2, 2)))
    lead = draw(st.integers(0, len(shape)))
    trail = draw(st.integers(1 if lead == 0 else 0, len(shape) - lead)) if lead < len(shape) else 0
    indexed = list(shape[:lead]) + list(shape[len(shape) - trail:])
    with_mask = draw(st.booleans())
    int_shapes = st.sampled_from([(), (1,)] if with_mask else [(), (2,), (1, 2), (3, 1)])
    kinds = [draw(st.sampled_from(["slice", "int", BATCHED, "array"])) for _ in indexed]
    kinds[draw(st.integers(0, len(kinds) - 1))] = BATCHED
    if with_mask and "slice" in kinds:
        kinds[kinds.index("slice")] = "mask"
    entries, tensors = [], []
    for kind, n in zip(kinds, indexed):
        if kind == "slice":
            entries.append(slice(draw(st.none() | st.integers(-n, n)), None, draw(st.sampled_from([1, -1, 2]))))
        elif kind == "int":
            entries.append(draw(st.integers(-n, n - 1)))
        elif kind == "mask":
            entries.append(draw(hnp.arrays(np.bool_, (n,))))
        else:
            batch = (size,) if kind == BATCHED else ()
            values = draw(hnp.arrays(np.int64, batch + draw(int_shapes), elements=st.integers(-n, n - 1)))
            if kind == BATCHED:
                entries.append(BATCHED)
                tensors.append(values)
            else:
                entries.append(values)
    if trail or draw(st.booleans()):
        entries.insert(lead, Ellipsis)
    for _ in range(draw(st.integers(0, 1))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    return x, tuple(entries), tensors, size


def _index(spec: tuple, tensors) -> tuple:
    tensors = iter(tensors)
    return tuple(next(tensors) if entry is BATCHED else entry for entry in spec)


def _loop(fn, *batched, size: int) -> np.ndarray:
    """``fn`` applied to member ``b`` of every argument (a list of per-member arrays or a shared array)."""
    return np.stack([np.asarray(fn(*[a[b] if isinstance(a, list) else a for a in batched])) for b in range(size)])


@settings(max_examples=60, deadline=None)
@given(batched_index_case(), st.booleans(), st.integers(0, 2 ** 31))
def test_getitem_with_batched_indices_matches_a_loop(case, x_batched, seed):
    x, spec, tensors, size = case
    x = x if x_batched else x[0]
    rng = np.random.default_rng(seed)

    def f(x, *index):
        return x[_index(spec, index)]

    in_dims = (0 if x_batched else None,) + (0,) * len(tensors)
    args = [dg.tensor(x)] + [dg.tensor(t) for t in tensors]
    out = vmap(f, in_dims=in_dims)(*args)
    members = [list(x) if x_batched else x] + [list(t) for t in tensors]
    expected = _loop(lambda x, *index: x[_index(spec, index)], *members, size=size)
    np.testing.assert_array_equal(out.numpy(), expected)

    u = rng.standard_normal(expected.shape)
    loss = lambda x, u, *index: (f(x, *index) * u).sum()  # noqa: E731
    loop_grads = _loop(lambda x, u, *index: grad(loss)(dg.tensor(x), dg.tensor(u), *map(dg.tensor, index)).numpy(),
                       *members[:1], list(u), *members[1:], size=size)
    per_example = vmap(grad(loss), in_dims=(in_dims[0], 0) + in_dims[1:])(args[0], dg.tensor(u), *args[1:])
    np.testing.assert_allclose(per_example.numpy(), loop_grads if x_batched else loop_grads, rtol=1e-12)
    total = grad(lambda x: vmap(loss, in_dims=(in_dims[0], 0) + in_dims[1:])(x, dg.tensor(u), *args[1:]).sum())(
        args[0])
    np.testing.assert_allclose(total.numpy(), loop_grads if x_batched else loop_grads.sum(0), rtol=1e-12,
                               atol=1e-12)

    t = rng.standard_normal(x.shape)
    _, tangent = jvp(lambda x: vmap(f, in_dims=in_dims)(x, *args[1:]), (args[0],), (dg.tensor(t),))
    np.testing.assert_array_equal(tangent.numpy(), vmap(f, in_dims=in_dims)(dg.tensor(t), *args[1:]).numpy())


@pytest.mark.parametrize("index", [
    lambda i: (i,), lambda i: (slice(None), i), lambda i: (i, Ellipsis, None), lambda i: (1, slice(None), i),
])
@pytest.mark.parametrize("x_batched", [True, False])
def test_setitem_with_batched_indices_matches_a_loop(index, x_batched):
    rng = np.random.default_rng(0)
    size = 3
    xs = rng.standard_normal((size, 3, 4, 3))
    positions = np.stack([rng.permutation(3)[:2] for _ in range(size)])
    region = xs[0][index(positions[0])].shape
    values = rng.standard_normal((size,) + region)

    def f(x, v, i):
        y = x + dg.zeros_like(v).sum()  # batched even where x is not (zeros_like is batched like v)
        y[index(i)] = v * v
        return y

    in_dims = (0 if x_batched else None, 0, 0)
    x = xs if x_batched else xs[0]
    out = vmap(f, in_dims=in_dims)(dg.tensor(x), dg.tensor(values), dg.tensor(positions))
    members = [list(x) if x_batched else x, list(values), list(positions)]

    def numpy_f(x, v, i):
        y = x.copy()
        y[index(i)] = v * v
        return y

    np.testing.assert_array_equal(out.numpy(), _loop(numpy_f, *members, size=size))

    def loss(x, v, i):
        return (f(x, v, i) ** 2).sum()

    per_example = vmap(grad(loss, argnums=(0, 1)), in_dims=in_dims)(dg.tensor(x), dg.tensor(values),
                                                                     dg.tensor(positions))
    loops = [grad(loss, argnums=(0, 1))(dg.tensor(m), dg.tensor(v), dg.tensor(i))
             for m, v, i in zip(members[0] if x_batched else [x] * size, values, positions)]
    np.testing.assert_allclose(per_example[0].numpy(), np.stack([g[0].numpy() for g in loops]), rtol=1e-12)
    np.testing.assert_allclose(per_example[1].numpy(), np.stack([g[1].numpy() for g in loops]), rtol=1e-12)
    tangent = rng.standard_normal(values.shape)
    _, out_dot = jvp(lambda v: vmap(f, in_dims=in_dims)(dg.tensor(x), v, dg.tensor(positions)),
                     (dg.tensor(values),), (dg.tensor(tangent),))

    def numpy_tangent(v, t, i):
        y = np.zeros(xs.shape[1:])
        y[index(i)] = 2 * v * t
        return y

    expected = _loop(numpy_tangent, list(values), list(tangent), list(positions), size=size)
    np.testing.assert_allclose(out_dot.numpy(), expected, rtol=1e-12)


def test_setitem_of_a_batched_index_into_an_unbatched_tensor_raises():
    x = dg.zeros(4)

    def f(i):
        x[i] = 1.0

    with pytest.raises(RuntimeError, match=r"vmap: __setitem__\(self, \*extra_args\) is not possible"):
        vmap(f)(dg.tensor([0, 1]))


def test_nested_vmap_with_indices_batched_at_both_levels():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    index = rng.integers(0, 5, (3, 2, 2))  # batched along axis 1 for the outer vmap, 0 for the inner

    def f(row, i):
        return row[:, i].sin()

    out = vmap(vmap(f), in_dims=(0, 1))(dg.tensor(x), dg.tensor(index))
    expected = np.stack([np.stack([np.sin(x[a, b][:, index[b, a]]) for b in range(3)]) for a in range(2)])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14)
    per_example = vmap(vmap(grad(lambda r, i: f(r, i).sum())), in_dims=(0, 1))(dg.tensor(x), dg.tensor(index))
    loop = np.stack([np.stack([grad(lambda r: f(r, dg.tensor(index[b, a])).sum())(dg.tensor(x[a, b])).numpy()
                               for b in range(3)]) for a in range(2)])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12)


def test_batched_boolean_masks_with_equal_counts():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 2))
    masks = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 0]], dtype=bool)
    out = vmap(lambda r, m: r[m])(dg.tensor(x), dg.tensor(masks))
    np.testing.assert_array_equal(out.numpy(), np.stack([x[b][masks[b]] for b in range(3)]))
    per_example = vmap(grad(lambda r, m: (r[m] ** 2).sum()))(dg.tensor(x), dg.tensor(masks))
    np.testing.assert_allclose(per_example.numpy(), 2 * x * masks[:, :, None], rtol=1e-14)
    columns = vmap(lambda r, m: r[:, m], in_dims=(None, 0))(dg.tensor(x[0].T), dg.tensor(masks))
    np.testing.assert_array_equal(columns.numpy(), np.stack([x[0].T[:, masks[b]] for b in range(3)]))


def test_batched_boolean_masks_with_different_counts_raise():
    x = dg.ones(2, 3)
    masks = dg.tensor([[True, False, False], [True, True, False]])
    with pytest.raises(RuntimeError, match=r"different number of elements .*counts \[1, 2\].* dualgrad.where"):
        vmap(lambda r, m: r[m])(x, masks)
    with pytest.raises(RuntimeError, match="0-d or batched at several vmap levels"):
        vmap(vmap(lambda r, m: r[m]))(dg.ones(2, 2, 3), dg.tensor(np.ones((2, 2, 3), dtype=bool)))
    with pytest.raises(RuntimeError, match="0-d or batched at several vmap levels"):
        vmap(lambda r, m: r[m])(x, dg.tensor([True, True]))


@pytest.mark.parametrize("op", ["gather", "take_along_dim"])
def test_gather_and_take_along_dim_with_batched_indices(op):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5))
    index = rng.integers(0, 5, (3, 4, 2))

    def f(row, i):
        return dg.gather(row, 1, i) if op == "gather" else dg.take_along_dim(row, i, 1)

    out = vmap(f)(dg.tensor(x), dg.tensor(index))
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x, index, 2))
    per_example = vmap(grad(lambda r, i: (f(r, i) ** 2).sum()))(dg.tensor(x), dg.tensor(index))
    loop = np.stack([grad(lambda r: (f(r, dg.tensor(index[b])) ** 2).sum())(dg.tensor(x[b])).numpy()
                     for b in range(3)])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-14)
    shared = vmap(f, in_dims=(None, 0))(dg.tensor(x[0]), dg.tensor(index))
    np.testing.assert_array_equal(shared.numpy(), np.stack([np.take_along_axis(x[0], i, 1) for i in index]))
