"""Indexing ops: ``x[index]``, gather, take, take_along_dim, index_select.

Values are checked against NumPy; gradients against the adjoint identity
``<u, J v> == <J^T u, v>`` (these ops are linear, so ``J v`` is the op applied to
``v``), which makes repeated indices accumulate; forward rules against central
differences; batching rules against a loop over the batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, directional_fd
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad.ops.dispatch import apply
from dualgrad.ops.indexing import GATHER, GETITEM, INDEX_ADD_INTO_ZEROS, SCATTER_ADD_INTO_ZEROS
from dualgrad.ops.indexing import normalize_index as _numpy_index


# -- strategies -------------------------------------------------------------------------------
def _entry(draw, n: int):
    """One index entry for an axis of length ``n`` (ints, slices, arrays with repeats, masks)."""
    kind = draw(st.sampled_from(["int", "slice", "array", "list", "tensor", "mask"]))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "slice":
        bound = st.none() | st.integers(-n - 1, n + 1)
        return slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([1, 2, -1, -2, 3])))
    if kind == "mask":
        mask = draw(hnp.arrays(np.bool_, (n,)))
        return dg.tensor(mask) if draw(st.booleans()) else mask
    shape = draw(st.sampled_from([(3,), (2, 2), (), (4,)]))
    array = draw(hnp.arrays(np.int64, shape, elements=st.integers(-n, n - 1)))
    if kind == "list":
        return array.tolist() if array.ndim else int(array)
    return dg.tensor(array) if kind == "tensor" else array


@st.composite
def indexed(draw, min_dims: int = 1):
    """A shape and an index expression for it (leading axes, optional Ellipsis, trailing axes, Nones)."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    lead = draw(st.integers(0, len(shape)))
    trail = draw(st.integers(0, len(shape) - lead)) if draw(st.booleans()) else None
    entries = [_entry(draw, n) for n in shape[:lead]]
    if trail is not None:
        entries += [Ellipsis] + [_entry(draw, n) for n in shape[len(shape) - trail:]]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    index = tuple(entries)
    if len(index) == 1 and draw(st.booleans()):
        index = index[0]
    return shape, index


def _adjoint_check(call, x: np.ndarray, seed: int) -> None:
    """<u, f(v)> == <grad of <u, f(x)>, v> for the linear function f."""
    rng = np.random.default_rng(seed)
    xt = dg.tensor(x, requires_grad=True)
    out = call(xt)
    u = rng.standard_normal(out.shape)
    v = rng.standard_normal(x.shape)
    (g,) = dg.grad(out, xt, dg.tensor(u), allow_unused=True, materialize_grads=True)
    with dg.no_grad():
        fv = call(dg.tensor(v)).numpy()
    assert g.shape == x.shape and g.dtype == x.dtype
    assert_close(float(np.sum(g.numpy() * v)), float(np.sum(u * fv)), what="<J^T u, v> vs <u, J v>")


# -- getitem ------------------------------------------------------------------------------------
@given(indexed(), st.integers(0, 2**32 - 1))
def test_getitem_values_and_gradient_over_index_expressions(case, seed):
    shape, index = case
    x = np.random.default_rng(seed).standard_normal(shape)
    np_index = _numpy_index(index)
    try:
        expected = x[np_index]
    except IndexError:
        with pytest.raises(IndexError, match="shape"):
            dg.tensor(x)[index]
        return
    np.testing.assert_array_equal(dg.tensor(x)[index].numpy(), expected)
    _adjoint_check(lambda t: t[index], x, seed)


def test_getitem_gradient_accumulates_over_repeated_indices():
    x = dg.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
    rows = dg.tensor([2, 0, 2, 2])
    (x[rows, 1] * dg.tensor([1., 10., 100., 1000.])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0., 10.], [0., 0.], [0., 1101.]])


def test_getitem_bool_mask_tensor_and_array():
    data = np.array([[1., -2.], [-3., 4.]])
    x = dg.tensor(data, requires_grad=True)
    np.testing.assert_array_equal(x[x > 0].detach().numpy(), data[data > 0])
    x[data < 0].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (data < 0).astype(float))


@pytest.mark.parametrize("index", [(0,), (slice(None, None, -1),), (Ellipsis, None, 1),
                                   (slice(1, None, 2), 0)])
def test_basic_indexing_returns_a_view(index):
    x = dg.tensor(np.arange(12.).reshape(3, 4))
    y = x[index]
    assert np.shares_memory(y.numpy(), x.numpy())
    assert y._base is x


def test_advanced_indexing_returns_a_copy():
    x = dg.tensor(np.arange(12.).reshape(3, 4))
    y = x[[0, 0]]
    assert not np.shares_memory(y.numpy(), x.numpy())
    assert y._base is None


def test_getitem_out_of_range_names_the_shape():
    x = dg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        x[5]
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        x[:, [0, 3]]
    with pytest.raises(IndexError, match="getitem"):
        x[dg.tensor([0.5])]


def test_getitem_complex_gradient_is_scatter_of_the_cotangent():
    x = dg.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    y = x[[1, 1, 0]]
    (y * y.conj()).real.sum().backward()  # |x1|^2 twice + |x0|^2: gradient 2 * count * x
    np.testing.assert_allclose(x.grad.numpy(), [2 * (1 + 1j), 4 * (2 - 1j)])


@given(indexed(), st.integers(0, 2**32 - 1))
def test_getitem_jvp_matches_finite_differences(case, seed):
    shape, index = case
    rng = np.random.default_rng(seed)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    np_index = _numpy_index(index)
    try:
        x[np_index]
    except IndexError:
        return
    out = GETITEM.jvp((dg.tensor(t),), None, dg.tensor(x), index=np_index)
    (fd,) = directional_fd(lambda a: a[index], [x], [t])
    np.testing.assert_allclose(out.numpy(), fd, atol=1e-8)


# -- batching rules (against a loop over the batch) ------------------------------------------------
def _batched(draw_rng, shape: tuple, size: int, bdim: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A physical array with the batch at ``bdim`` and its members."""
    members = [draw_rng.standard_normal(shape) for _ in range(size)]
    return np.stack(members, axis=bdim), members


def _unbatch(out: dg.Tensor, bdim: int) -> np.ndarray:
    return np.moveaxis(out.numpy(), bdim, 0)


@given(indexed(), st.integers(1, 3), st.data())
def test_getitem_batching_rule_matches_a_loop(case, size, data):
    shape, index = case
    np_index = _numpy_index(index)
    try:
        np.zeros(shape)[np_index]
    except IndexError:
        return
    bdim = data.draw(st.integers(0, len(shape)))
    physical, members = _batched(np.random.default_rng(0), shape, size, bdim)
    out, out_bdim = GETITEM.batch((dg.tensor(physical),), (bdim,), index=np_index)
    np.testing.assert_array_equal(_unbatch(out, out_bdim), np.stack([m[np_index] for m in members]))


@given(indexed(), st.integers(1, 3), st.data())
def test_index_add_batching_rule_matches_a_loop(case, size, data):
    shape, index = case
    np_index = _numpy_index(index)
    try:
        out_shape = np.zeros(shape)[np_index].shape
    except IndexError:
        return
    bdim = data.draw(st.integers(0, len(out_shape)))
    physical, members = _batched(np.random.default_rng(1), out_shape, size, bdim)
    out, out_bdim = INDEX_ADD_INTO_ZEROS.batch((dg.tensor(physical),), (bdim,), shape=shape, index=np_index)
    expected = []
    for g in members:
        scattered = np.zeros(shape)
        np.add.at(scattered, np_index, g)
        expected.append(scattered)
    np.testing.assert_allclose(_unbatch(out, out_bdim), np.stack(expected))


# -- gather family ----------------------------------------------------------------------------------
@st.composite
def gather_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    d = dim % len(shape)
    index_shape = tuple(draw(st.integers(1, 4)) if k == d else draw(st.integers(1, n))
                        for k, n in enumerate(shape))
    index = draw(hnp.arrays(np.int64, index_shape, elements=st.integers(-shape[d], shape[d] - 1)))
    return shape, dim, index


def _gather_reference(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    """torch.gather's definition, element by element."""
    out = np.empty(index.shape)
    for pos in np.ndindex(index.shape):
        source = list(pos)
        source[dim] = index[pos]
        out[pos] = x[tuple(source)]
    return out


def _scatter_reference(g: np.ndarray, dim: int, index: np.ndarray, shape: tuple) -> np.ndarray:
    """The transpose of gather, element by element: each g[pos] is added where it was read."""
    out = np.zeros(shape)
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[dim] = index[pos]
        out[tuple(target)] += g[pos]
    return out


@given(gather_case(), st.integers(0, 2**32 - 1))
def test_gather_values_and_gradient(case, seed):
    shape, dim, index = case
    x = np.random.default_rng(seed).standard_normal(shape)
    out = dg.gather(dg.tensor(x), dim, dg.tensor(index))
    np.testing.assert_array_equal(out.numpy(), _gather_reference(x, dim % len(shape), index))
    _adjoint_check(lambda t: dg.gather(t, dim, index), x, seed)
    _adjoint_check(lambda t: t.gather(dim, dg.tensor(index)), x, seed)


@given(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), st.integers(0, 2**32 - 1))
def test_take_matches_numpy_take(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    index = rng.integers(-x.size, x.size, size=(2, 3))
    np.testing.assert_array_equal(dg.take(dg.tensor(x), dg.tensor(index)).numpy(), np.take(x, index))
    _adjoint_check(lambda t: t.take(index), x, seed)


@given(st.integers(0, 2**32 - 1), st.sampled_from([None, 0, 1, -1]))
def test_take_along_dim_matches_numpy_take_along_axis(seed, dim):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4))
    if dim is None:
        index = rng.integers(0, 12, size=(5,))
    else:
        index = rng.integers(0, x.shape[dim], size=(1, 4) if dim in (0,) else (3, 1))
    expected = np.take_along_axis(x, index, axis=dim)
    out = dg.take_along_dim(dg.tensor(x), dg.tensor(index), dim=dim)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(dg.take_along_axis(dg.tensor(x), index, dim).numpy(), expected)
    _adjoint_check(lambda t: t.take_along_dim(dg.tensor(index), dim), x, seed)


def test_take_along_dim_broadcasts_input_and_indices():
    x = np.arange(12.).reshape(3, 1, 4)
    index = np.array([[[0, 3]], [[1, 1]]]).reshape(1, 2, 2)
    out = dg.take_along_dim(dg.tensor(x), dg.tensor(index), dim=2)
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(np.broadcast_to(x, (3, 2, 4)),
                                                                  np.broadcast_to(index, (3, 2, 2)), 2))
    _adjoint_check(lambda t: dg.take_along_dim(t, dg.tensor(index), dim=2), x, 0)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), st.data())
def test_index_select_matches_numpy_take_along_an_axis(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = np.asarray(data.draw(st.lists(st.integers(0, shape[dim] - 1), max_size=5)), dtype=np.int64)
    x = np.random.default_rng(0).standard_normal(shape)
    out = dg.index_select(dg.tensor(x), dim, dg.tensor(index))
    np.testing.assert_array_equal(out.numpy(), np.take(x, index, axis=dim))
    _adjoint_check(lambda t: t.index_select(dim, index), x, 0)


def test_index_select_repeated_index_accumulates():
    x = dg.tensor([[1., 2., 3.]], requires_grad=True)
    dg.index_select(x, 1, [2, 2, 0]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1., 0., 2.]])


@given(gather_case(), st.integers(0, 2**32 - 1))
def test_gather_and_scatter_jvp_match_finite_differences(case, seed):
    shape, dim, index = case
    d = dim % len(shape)
    rng = np.random.default_rng(seed)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    idx = dg.tensor(index)
    out = GATHER.jvp((dg.tensor(t), None), None, dg.tensor(x), idx, dim=d)
    (fd,) = directional_fd(lambda a: dg.gather(a, d, index), [x], [t])
    np.testing.assert_allclose(out.numpy(), fd, atol=1e-8)
    g, tg = rng.standard_normal(index.shape), rng.standard_normal(index.shape)
    out = SCATTER_ADD_INTO_ZEROS.jvp((dg.tensor(tg), None), None, dg.tensor(g), idx, shape=shape, dim=d)
    (fd,) = directional_fd(lambda a: apply(SCATTER_ADD_INTO_ZEROS, a, idx, shape=shape, dim=d), [g], [tg])
    np.testing.assert_allclose(out.numpy(), fd, atol=1e-8)


def test_gather_second_order_through_scatter():
    x = dg.tensor([[1., 2., 3.]], requires_grad=True)
    index = dg.tensor([[0, 0, 2]])
    y = (dg.gather(x, 1, index) ** 3).sum()
    (g,) = dg.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[6., 0., 27.]])  # 3 x^2 per use: 2 * 3 * 1, 0, 3 * 9
    (h,) = dg.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [[12., 0., 18.]])  # 6 x per use


@given(gather_case(), st.integers(1, 3), st.sampled_from(["both", "input", "index"]), st.data())
def test_gather_batching_rule_matches_a_loop(case, size, batched, data):
    shape, dim, index = case
    d = dim % len(shape)
    rng = np.random.default_rng(2)
    bx = data.draw(st.integers(0, len(shape))) if batched != "index" else None
    bi = data.draw(st.integers(0, len(shape))) if batched != "input" else None
    if bx is None:
        x_phys = rng.standard_normal(shape)
        xs = [x_phys] * size
    else:
        x_phys, xs = _batched(rng, shape, size, bx)
    if bi is None:
        i_phys, idxs = index, [index] * size
    else:
        idxs = [rng.integers(-shape[d], shape[d], size=index.shape) for _ in range(size)]
        i_phys = np.stack(idxs, axis=bi)
    out, out_bdim = GATHER.batch((dg.tensor(x_phys), dg.tensor(i_phys)), (bx, bi), dim=d)
    expected = np.stack([_gather_reference(xm, d, im) for xm, im in zip(xs, idxs, strict=True)])
    np.testing.assert_array_equal(_unbatch(out, out_bdim), expected)
    g_phys, gs = _batched(rng, index.shape, size, 0)
    out, out_bdim = SCATTER_ADD_INTO_ZEROS.batch((dg.tensor(g_phys), dg.tensor(i_phys)), (0, bi),
                                                 shape=shape, dim=d)
    expected = np.stack([_scatter_reference(g, d, im, shape) for g, im in zip(gs, idxs, strict=True)])
    np.testing.assert_allclose(_unbatch(out, out_bdim), expected)


# -- errors ---------------------------------------------------------------------------------------------
def test_gather_errors():
    x = dg.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"gather\(\).*out of bounds.*\(2, 3\)"):
        dg.gather(x, 1, dg.tensor([[5]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        dg.gather(x, 1, dg.tensor([0]))
    with pytest.raises(RuntimeError, match=r"no larger than self \(2, 3\)"):
        dg.gather(x, 1, dg.tensor([[0, 1, 2, 0]] * 3))
    with pytest.raises(RuntimeError, match="integer dtype"):
        dg.gather(x, 1, dg.tensor([[0.]]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.gather(x, 2, dg.tensor([[0]]))


def test_take_index_select_take_along_dim_errors():
    x = dg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"take\(\): out of range.*index 10.*\(2, 3\)"):
        dg.take(x, dg.tensor([10]))
    with pytest.raises(IndexError, match=r"index_select\(\).*out of bounds.*\(2, 3\)"):
        dg.index_select(x, 1, dg.tensor([7]))
    with pytest.raises(IndexError, match="supposed to be a vector"):
        dg.index_select(x, 1, dg.tensor([[0]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        dg.take_along_dim(x, dg.tensor([0]), dim=1)
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(3, 1\) do not broadcast"):
        dg.take_along_dim(x, dg.tensor([[0], [0], [0]]), dim=1)
    with pytest.raises(RuntimeError, match=r"take_along_dim\(\).*out of bounds"):
        dg.take_along_dim(x, dg.tensor([[5]]), dim=1)


def test_failed_gather_leaves_the_graph_unchanged():
    x = dg.tensor([[1., 2.]], requires_grad=True)
    with pytest.raises(RuntimeError):
        dg.gather(x, 1, dg.tensor([[9]]))
    assert x.grad is None and x.is_leaf


@pytest.mark.parametrize("make_index", [np.array, dg.tensor, list], ids=["ndarray", "tensor", "list"])
def test_an_index_changed_after_indexing_does_not_change_the_gradient(make_index):
    """The node keeps a copy of an array index: changing the caller's array or Tensor in place
    before the backward pass leaves the gradient of the indexing that was done."""
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    index = make_index([0, 1])
    y = x[index]
    if not isinstance(index, list):
        index[0] = 2
    (y * dg.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 10.0, 0.0])


def test_an_index_changed_after_an_indexed_assignment_does_not_change_the_gradient():
    x = dg.zeros(3, requires_grad=True).clone()
    v = dg.tensor([1.0, 2.0], requires_grad=True)
    index = np.array([0, 1])
    x[index] = v
    index[0] = 2
    (x * dg.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [1.0, 10.0])
