"""The functions of ``dualgrad/ops/shape/views.py`` against torch's values and messages (pinned here):
real views of complex tensors, ``unfold``, broadcasting, stacking/splitting, index construction,
``isin``. Gradients, tangents and vmap of the ops are also walked by the op-table tests."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

X = np.arange(12.).reshape(3, 4)
Z = np.array([[1 + 2j, 3 - 4j], [5j, -1]])


def _eq(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual.detach().numpy() if isinstance(actual, dg.Tensor) else actual),
                                  np.asarray(expected))


# -- view_as_real / view_as_complex ----------------------------------------------------------------
def test_view_as_real_is_a_view_both_ways():
    z = dg.tensor(Z)
    r = dg.view_as_real(z)
    _eq(r, [[[1, 2], [3, -4]], [[0, 5], [-1, 0]]])
    assert r._base is z and r.dtype == np.float64
    r[1, 0, 0] = 7.
    r.mul_(2)
    _eq(z, [[2 + 4j, 6 - 8j], [14 + 10j, -2]])
    assert z._version == r._version == 2


def test_view_as_real_of_a_transpose_keeps_strides():
    r = dg.view_as_real(dg.tensor(Z).T)
    assert r.stride() == (2, 4, 1)  # torch's
    _eq(r, [[[1, 2], [0, 5]], [[3, -4], [-1, 0]]])


def test_view_as_complex_is_a_view():
    r = dg.tensor(np.arange(12.).reshape(3, 2, 2))
    z = dg.view_as_complex(r)
    _eq(z, [[1j, 2 + 3j], [4 + 5j, 6 + 7j], [8 + 9j, 10 + 11j]])
    z[0] = 1j
    _eq(r[0], [[0, 1], [0, 1]])
    _eq(dg.view_as_complex(dg.tensor([1., 2.])), 1 + 2j)
    assert dg.view_as_complex(dg.arange(12.).reshape(6, 2)[1:]).shape == (5,)


def test_complex_view_gradients_as_torch():
    z = dg.tensor(Z, requires_grad=True)
    (dg.view_as_real(z) * dg.arange(8.).reshape(2, 2, 2)).sum().backward()
    _eq(z.grad, [[1j, 2 + 3j], [4 + 5j, 6 + 7j]])
    r = dg.tensor(np.arange(12.).reshape(3, 2, 2), requires_grad=True)
    (dg.view_as_complex(r) * dg.tensor([[1 + 1j, 2], [3j, 1], [2, -1j]])).abs().sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), [[[0, 1.4142135623730951], [1.1094003924504583, 1.6641005886756874]],
                                                [[1.8740851426632728, 2.3426064283290913],
                                                 [0.6507913734559685, 0.7592566023652966]],
                                                [[1.3287276776598396, 1.4948186373673196],
                                                 [0.6726727939963124, 0.7399400733959437]]], rtol=1e-14)


def test_view_as_complex_with_the_pairs_on_the_batch_axis_under_vmap():
    out = dg.vmap(dg.view_as_complex, in_dims=2)(dg.arange(12.).reshape(3, 2, 2))
    _eq(out, [[0 + 2j, 4 + 6j, 8 + 10j], [1 + 3j, 5 + 7j, 9 + 11j]])


@pytest.mark.parametrize("make, message", [
    (lambda: dg.view_as_real(dg.tensor(X)), "view_as_real is only supported for complex tensors"),
    (lambda: dg.view_as_complex(dg.arange(12).reshape(6, 2)),
     "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: Long"),
    (lambda: dg.view_as_complex(dg.tensor(1.)), "Input tensor must have one or more dimensions"),
    (lambda: dg.view_as_complex(dg.arange(6.).reshape(2, 3)), "Tensor must have a last dimension of size 2"),
    (lambda: dg.view_as_complex(dg.arange(12.).reshape(3, 2, 2).transpose(1, 2)),
     "Tensor must have a last dimension with stride 1"),
    (lambda: dg.view_as_complex(dg.arange(12.).reshape(4, 3)[:, :2]),
     "Tensor must have a stride divisible by 2 for all but last dimension"),
    (lambda: dg.view_as_complex(dg.arange(12.).reshape(3, 4)[:, 1:3]),
     "Tensor must have a storage_offset divisible by 2"),
    (lambda: dg.view_as_complex(dg.zeros(2, dtype=dg.float16)), "NumPy has no complex32"),
])
def test_complex_view_errors(make, message):
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_storage_offset():
    assert dg.zeros(4, 5)[1:, 2:].storage_offset() == 7
    assert dg.view_as_real(dg.zeros(4, dtype=dg.complex128)[1:]).storage_offset() == 2
    assert dg.zeros(3).storage_offset() == 0


def test_no_lazy_conjugate_or_negative_bits():
    z = dg.tensor(Z)
    assert not z.conj().is_conj() and not dg.is_conj(z) and not z.is_neg() and not dg.is_neg(-z)
    assert z.resolve_conj() is z and dg.resolve_neg(z) is z


def test_adjoint():
    _eq(dg.adjoint(dg.tensor(Z)), [[1 - 2j, -5j], [3 + 4j, -1]])
    assert dg.zeros(2, 3, 4).adjoint().shape == (2, 4, 3)
    with pytest.raises(RuntimeError, match=r"only supported on matrices or batches of matrices. Got 1-D tensor"):
        dg.tensor([1.]).adjoint()


# -- unfold and sum_to_size ---------------------------------------------------------------------------
def test_unfold_values_and_layout():
    _eq(dg.tensor(X).unfold(1, 2, 1), [[[0, 1], [1, 2], [2, 3]], [[4, 5], [5, 6], [6, 7]], [[8, 9], [9, 10], [10, 11]]])
    _eq(dg.tensor(X).unfold(-1, 3, 2), [[[0, 1, 2]], [[4, 5, 6]], [[8, 9, 10]]])
    assert dg.tensor(X).unfold(0, 2, 1).stride() == (4, 1, 4)
    assert dg.tensor(X).unfold(1, 0, 1).shape == (3, 5, 0)
    _eq(dg.tensor(3.).unfold(0, 1, 1), [3.])


def test_unfold_is_a_view_with_overlapping_gradients():
    x = dg.tensor(X)
    x.unfold(1, 2, 2)[0, 0, 1] = 100.
    assert x[0, 1].item() == 100.
    x = dg.tensor(X, requires_grad=True)
    (x.unfold(1, 3, 1) * dg.arange(18.).reshape(3, 2, 3)).sum().backward()
    _eq(x.grad, [[0, 4, 6, 5], [6, 16, 18, 11], [12, 28, 30, 17]])  # torch's


def test_unfold_under_vmap():
    out = dg.vmap(lambda a: a.unfold(0, 2, 1))(dg.arange(6.).reshape(2, 3))
    _eq(out, [[[0, 1], [1, 2]], [[3, 4], [4, 5]]])


@pytest.mark.parametrize("args, error, message", [
    ((1, 5, 1), RuntimeError, "maximum size for tensor at dimension 1 is 4 but size is 5"),
    ((1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    ((1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    ((2, 2, 1), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
])
def test_unfold_errors(args, error, message):
    with pytest.raises(error, match=message):
        dg.tensor(X).unfold(*args)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1 but size is 2"):
        dg.tensor(3.).unfold(0, 2, 1)


def test_sum_to_size():
    x = dg.tensor(X)
    _eq(x.sum_to_size(1, 4), [[12, 15, 18, 21]])
    _eq(x.sum_to_size((3, 1)), [[6], [22], [38]])
    _eq(x.sum_to_size(4), [12, 15, 18, 21])
    assert x.sum_to_size(3, 4) is x
    for size in [(2, 4), (1, 3, 4)]:
        with pytest.raises(RuntimeError, match=rf"size {{\[{', '.join(map(str, size))}\]}} is not expandable to "
                                               r"size {\[3, 4\]}"):
            x.sum_to_size(size)


# -- broadcasting -------------------------------------------------------------------------------------
def test_broadcast_tensors_are_views():
    a0 = dg.tensor([[1.], [2.]], requires_grad=True)
    a, b = dg.broadcast_tensors(a0, dg.tensor([3., 4., 5.]))
    _eq(a, [[1, 1, 1], [2, 2, 2]])
    _eq(b, [[3, 4, 5], [3, 4, 5]])
    assert b._base is not None
    (a * b).sum().backward()
    _eq(a0.grad, [[12], [12]])
    assert dg.broadcast_tensors([dg.ones(2)])[0].shape == (2,)


@pytest.mark.parametrize("shapes, message", [
    ([(3,), (4,)], "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    ([(2, 3), (5, 1, 3), (4, 1, 1)],
     "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0"),
])
def test_broadcast_tensors_errors(shapes, message):
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dg.broadcast_tensors(*[dg.ones(s) for s in shapes])


def test_broadcast_shapes():
    assert dg.broadcast_shapes((3, 1), (4,), 1) == (3, 4)
    assert dg.broadcast_shapes() == ()
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 2 at -1! Mismatching "
                                           r"argument at index 2 had \(2,\); but expected shape should be "
                                           r"broadcastable to \[3, 4\]"):
        dg.broadcast_shapes((3, 1), (4,), 2)
    with pytest.raises(RuntimeError, match=r"length 4 at -1! Mismatching argument at index 1 had \(5, 1, 4\); "
                                           r"but expected shape should be broadcastable to \[1, 2, 3\]"):
        dg.broadcast_shapes((2, 3), (5, 1, 4))
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length!"):
        dg.broadcast_shapes((-1,), (4,))


# -- stacking and splitting ----------------------------------------------------------------------------
def test_column_and_row_stack():
    _eq(dg.column_stack([dg.tensor([1, 2]), dg.tensor([[3], [4]]), dg.tensor([5, 6])]), [[1, 3, 5], [2, 4, 6]])
    _eq(dg.column_stack([dg.tensor(1), dg.tensor(2)]), [[1, 2]])
    _eq(dg.row_stack([dg.tensor([1, 2]), dg.tensor([3, 4])]), [[1, 2], [3, 4]])
    with pytest.raises(RuntimeError, match="column_stack expects a non-empty TensorList"):
        dg.column_stack([])


def test_directional_splits():
    y = dg.arange(24).reshape(2, 3, 4)
    assert [p.shape for p in dg.hsplit(y, 3)] == [(2, 1, 4)] * 3
    assert [p.shape for p in y.vsplit([1])] == [(1, 3, 4)] * 2
    assert [p.shape for p in dg.dsplit(y, [1, 3])] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    _eq(dg.hsplit(dg.arange(4), 2)[1], [2, 3])
    assert [p.tolist() for p in dg.arange(6).reshape(1, 6).hsplit([1, 4])] == [[[0]], [[1, 2, 3]], [[4, 5]]]
    assert all(p._base is y._base for p in dg.dsplit(y, 2))


@pytest.mark.parametrize("fn, shape, spec, message", [
    ("hsplit", (2, 3, 4), 2, "torch.hsplit attempted to split along dimension 1, but the size of the dimension 3 is "
                             "not divisible by the split_size 2!"),
    ("hsplit", (2, 3, 4), 0, "dimension 3 is not divisible by the split_size 0!"),
    ("hsplit", (), 1, "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
                      "dimensions!"),
    ("vsplit", (4,), 2, "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 "
                        "dimensions!"),
    ("vsplit", (2, 3, 4), 3, "torch.vsplit attempted to split along dimension 0, but the size of the dimension 2 is "
                             "not divisible by the split_size 3!"),
    ("dsplit", (3, 4), 2, "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 "
                          "dimensions!"),
    ("dsplit", (2, 3, 4), 3, "along dimension 2, but the size of the dimension 4 is not divisible by the split_size "
                             "3!"),
])
def test_directional_split_errors(fn, shape, spec, message):
    with pytest.raises(RuntimeError, match=message):
        getattr(dg, fn)(dg.zeros(shape), spec)


# -- index construction --------------------------------------------------------------------------------
def test_triangle_indices():
    _eq(dg.tril_indices(3, 4, 1), [[0, 0, 1, 1, 1, 2, 2, 2, 2], [0, 1, 0, 1, 2, 0, 1, 2, 3]])
    _eq(dg.triu_indices(3, 3, -1), [[0, 0, 0, 1, 1, 1, 2, 2], [0, 1, 2, 0, 1, 2, 1, 2]])
    assert dg.tril_indices(0, 3).shape == (2, 0) and dg.tril_indices(2, 2).dtype == np.int64
    assert dg.triu_indices(2, 2, dtype=dg.int32).dtype == np.int32
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        dg.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative, got-3"):
        dg.triu_indices(1, -3)
    with pytest.raises(NotImplementedError, match="\"tril_indices\" not implemented for 'Float'"):
        dg.tril_indices(2, 2, dtype=dg.float32)
    # sizes and offset are ints (an integer tensor of one value too), as torch's: a float of 1e6
    # would otherwise ask NumPy for a 1e6 x 1e6 mask
    _eq(dg.tril_indices(dg.tensor(2), np.int64(2)), [[0, 1, 1], [0, 0, 1]])
    with pytest.raises(TypeError, match=r"tril_indices\(\): argument 'row' \(position 1\) must be int, not float"):
        dg.tril_indices(1e6, 1e6)
    with pytest.raises(TypeError, match=r"triu_indices\(\): argument 'offset' \(position 3\) must be int, not Tensor"):
        dg.triu_indices(2, 2, dg.tensor(1.0))
    with pytest.raises(TypeError, match=r"tril_indices\(\): argument 'row' \(position 1\) must be int, not bool"):
        dg.tril_indices(True, 2)


def test_combinations_values_and_gradient():
    _eq(dg.combinations(dg.tensor([1., 2., 3.])), [[1, 2], [1, 3], [2, 3]])
    _eq(dg.combinations(dg.tensor([1., 2.]), 3, True), [[1, 1, 1], [1, 1, 2], [1, 2, 2], [2, 2, 2]])
    assert dg.combinations(dg.tensor([1., 2.]), 3).shape == (0, 3)
    assert dg.combinations(dg.tensor([1., 2.]), 0).shape == (0,)
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    (dg.combinations(x, 2, with_replacement=True) * dg.arange(12.).reshape(6, 2)).sum().backward()
    _eq(x.grad, [7, 24, 35])  # torch's
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[3, 4\]"):
        dg.combinations(dg.tensor(X))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        dg.combinations(dg.tensor([1.]), -1)


def test_unravel_index():
    rows, cols = dg.unravel_index(dg.tensor([4, 1, 7, -1, -7]), (2, 3))
    _eq(rows, [1, 0, 0, 1, 1])
    _eq(cols, [1, 1, 1, 2, 2])
    _eq(dg.unravel_index(dg.tensor([[4, 1], [23, 11]]), (2, 3, 4))[2], [[0, 1], [3, 3]])
    _eq(dg.unravel_index(dg.tensor([4, 1]), 3)[0], [1, 1])
    assert dg.unravel_index(dg.tensor(0), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got torch.float64"):
        dg.unravel_index(dg.tensor(1.), (2, 3))
    with pytest.raises(ValueError, match=r"'shape' cannot have negative values, but got \(-2, 3\)"):
        dg.unravel_index(dg.tensor(1), (-2, 3))


def test_isin():
    _eq(dg.isin(dg.tensor([1, 2, 3]), dg.tensor([2., 3.5])), [False, True, False])
    _eq(dg.isin(dg.tensor([1, 2, 3]), 2), [False, True, False])
    _eq(dg.isin(2, dg.tensor([1, 2])), True)
    _eq(dg.isin(dg.tensor([[1, 2], [3, 4]]), dg.tensor([2, 3]), invert=True), [[True, False], [False, True]])
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        dg.isin(dg.tensor([1j]), dg.tensor([1j]))
    with pytest.raises(TypeError, match=r"isin\(\) received an invalid combination of arguments - got \(int, int\)"):
        dg.isin(2, 3)


@pytest.mark.parametrize("in_dims, invert", [((0, 0), False), ((1, 0), True), ((0, None), False), ((None, 1), True)])
def test_isin_under_vmap_matches_a_loop(in_dims, invert):
    a, b = dg.tensor([[1, 2, 3], [4, 5, 6]]), dg.tensor([[1, 3], [5, 0]])
    a, b = (t.T if d == 1 else t for t, d in zip((a, b), in_dims))
    out = dg.vmap(lambda u, v: dg.isin(u, v, invert=invert), in_dims=in_dims)(a, b)
    rows = [dg.isin(a[k] if in_dims[0] == 0 else a[:, k] if in_dims[0] == 1 else a,
                    b[k] if in_dims[1] == 0 else b[:, k] if in_dims[1] == 1 else b, invert=invert) for k in range(2)]
    _eq(out, np.stack([r.numpy() for r in rows]))


def test_rsub_and_masked_fill():
    _eq(dg.rsub(dg.tensor([1., 2.]), 5., alpha=2), [3, 1])
    _eq(dg.rsub(dg.tensor([1., 2.]), dg.tensor([[1.], [0.]])), [[0, -1], [-1, -2]])
    _eq(dg.masked_fill(dg.tensor([1., 2.]), dg.tensor([True, False]), 0.), [0, 2])


def test_in_place_changes_through_the_new_views_are_differentiable():
    x = dg.tensor(np.arange(1., 7.), requires_grad=True)
    b = x * 1
    b.unfold(0, 2, 2).mul_(dg.tensor([[2.], [3.], [4.]]))
    (b * b).sum().backward()
    _eq(x.grad, [8, 16, 54, 72, 160, 192])  # torch's
    z = dg.tensor(np.array([1 + 2j, 3 - 1j]), requires_grad=True)
    w = z * 1
    dg.view_as_real(w).mul_(2)
    (w.abs() ** 2).sum().backward()
    _eq(z.grad, [8 + 16j, 24 - 8j])
    f = dg.tensor(np.arange(8.).reshape(4, 2), requires_grad=True)
    g = f * 1
    dg.view_as_complex(g).mul_(1j)
    (g * dg.arange(8.).reshape(4, 2)).sum().backward()
    _eq(f.grad, [[1, 0], [3, -2], [5, -4], [7, -6]])


# -- reducing scatters (dualgrad/ops/scatter.py) ----------------------------------------------------
SCATTER_X, SCATTER_INDEX, SCATTER_SRC = [1., 2., 3., 4.], [0, 1, 0, 1, 3], [5., -1., 2., 7., 2.]
# torch's values for (reduce, include_self)
SCATTER_REDUCED = {
    ("sum", True): [8, 8, 3, 6], ("sum", False): [7, 6, 3, 2], ("prod", True): [10, -14, 3, 8],
    ("prod", False): [10, -7, 3, 2], ("mean", True): [8 / 3, 8 / 3, 3, 3], ("mean", False): [3.5, 3, 3, 2],
    ("amax", True): [5, 7, 3, 4], ("amax", False): [5, 7, 3, 2], ("amin", True): [1, -1, 3, 2],
    ("amin", False): [2, -1, 3, 2],
}


@pytest.mark.parametrize("reduce, include_self", sorted(SCATTER_REDUCED))
def test_scatter_reduce_values(reduce, include_self):
    out = dg.tensor(SCATTER_X).scatter_reduce(0, dg.tensor(SCATTER_INDEX), dg.tensor(SCATTER_SRC), reduce,
                                              include_self=include_self)
    np.testing.assert_allclose(out.numpy(), SCATTER_REDUCED[reduce, include_self], rtol=1e-15)


# torch's gradients (of sum(out * [1, 2, 3, 4]) at x = [1, 2, 0, 4], src = [1, 2, 0, 3, 2], index [0, 1, 2, 1, 1]),
# for (reduce, include_self): (x.grad, src.grad)
SCATTER_GRADS = {
    ("prod", True): ([1, 24, 0, 4], [1, 24, 0, 16, 24]), ("prod", False): ([0, 0, 0, 4], [1, 12, 3, 8, 12]),
    ("mean", True): ([.5, .5, 1.5, 4], [.5, .5, 1.5, .5, .5]),
    ("mean", False): ([0, 0, 0, 4], [1, 2 / 3, 3, 2 / 3, 2 / 3]),
    ("amax", True): ([.5, 0, 1.5, 4], [.5, 0, 1.5, 2, 0]),
    ("amin", True): ([.5, 2 / 3, 1.5, 4], [.5, 2 / 3, 1.5, 0, 2 / 3]),
    # without include_self torch counts the target's own value among ties (the shares then add up to
    # less than the gradient: torch gives [.5, 0, 1.5, 2, 0] and [.5, 2/3, 1.5, 0, 2/3]); dualgrad does not
    ("amax", False): ([0, 0, 0, 4], [1, 0, 3, 2, 0]), ("amin", False): ([0, 0, 0, 4], [1, 1, 3, 0, 1]),
}


@pytest.mark.parametrize("reduce, include_self", sorted(SCATTER_GRADS))
def test_scatter_reduce_gradients(reduce, include_self):
    x = dg.tensor([1., 2., 0., 4.], requires_grad=True)
    src = dg.tensor([1., 2., 0., 3., 2.], requires_grad=True)
    out = x.scatter_reduce(0, dg.tensor([0, 1, 2, 1, 1]), src, reduce, include_self=include_self)
    (out * dg.tensor([1., 2., 3., 4.])).sum().backward()
    expected_x, expected_src = SCATTER_GRADS[reduce, include_self]
    np.testing.assert_allclose(x.grad.numpy(), expected_x, rtol=1e-15)
    np.testing.assert_allclose(src.grad.numpy(), expected_src, rtol=1e-15)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_against_finite_differences_to_second_order(reduce, include_self):
    x = dg.tensor([[1., 2.5, 0.3], [4., -1., 0.5]], requires_grad=True)
    src = dg.tensor([[1.2, 2., -0.7], [3., 2.2, 0.1]], requires_grad=True)
    index = dg.tensor([[0, 1, 0], [1, 1, 2]])

    def f(x, src):
        return x.scatter_reduce(1, index, src, reduce, include_self=include_self)

    assert dg.gradcheck(f, (x, src), check_forward_ad=True)
    assert dg.gradgradcheck(f, (x, src))


def test_scatter_reduce_integers_in_place_and_under_vmap():
    x, index = dg.tensor([1, 2, 3, 4]), dg.tensor(SCATTER_INDEX)
    _eq(x.scatter_reduce(0, index, dg.tensor([5, -2, 2, 7, 2]), "mean"), [2, 2, 3, 3])  # rounded down, as torch
    _eq(dg.tensor([0, 0]).scatter_reduce(0, dg.tensor([0, 1]), dg.tensor([-7, 7]), "mean"), [-4, 3])
    _eq(x.scatter_reduce(0, index, dg.tensor([5, -2, 2, 7, 2]), "amax", include_self=False), [5, 7, 3, 2])
    y = dg.arange(6.).reshape(2, 3)
    y.scatter_reduce_(0, dg.tensor([[1, 0], [1, 1]]), dg.tensor([[10., 20., 30.], [40., 50., 60.]]), "prod")
    _eq(y, [[0, 20, 2], [1200, 200, 5]])  # torch's
    _eq(dg.zeros(2).scatter_reduce(0, dg.tensor([], dtype=dg.int64), dg.ones(0), "amax"), [0, 0])
    out = dg.vmap(lambda s: dg.zeros(3).scatter_reduce(0, dg.tensor([0, 2, 0]), s, "amax", include_self=False))(
        dg.tensor([[1., 2., 3.], [6., 5., 4.]]))
    _eq(out, [[3, 0, 2], [6, 0, 5]])
    with pytest.raises(RuntimeError, match="vmap over the index is not supported"):
        dg.vmap(lambda i: dg.zeros(3).scatter_reduce(0, i, dg.ones(2), "sum"))(dg.tensor([[0, 1], [1, 2]]))


@pytest.mark.parametrize("make, error, message", [
    (lambda: dg.zeros(2).scatter_reduce(0, dg.tensor([0]), dg.ones(1), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: dg.zeros(2).scatter_reduce(0, dg.tensor([0]), dg.ones(1, dtype=dg.float32), "sum"), RuntimeError,
     "scatter\\(\\): Expected self.dtype to be equal to src.dtype"),
    (lambda: dg.zeros(4).scatter_reduce(0, dg.tensor([0, 9]), dg.ones(5), "sum"), RuntimeError,
     "index 9 is out of bounds for dimension 0 with size 4"),
    (lambda: dg.zeros(4).scatter_reduce(0, dg.tensor([0., 1.]), dg.ones(5), "sum"), RuntimeError,
     "scatter\\(\\): Expected dtype int32/int64 for index"),
    (lambda: dg.zeros(4).scatter_reduce(0, dg.tensor([[0]]), dg.ones(5), "sum"), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda: dg.zeros(4).scatter_reduce(0, dg.tensor([0, 1, 2, 3, 0, 1]), dg.ones(5), "sum"), RuntimeError,
     r"Expected index \[6\] to be no larger than self \[4\] apart from dimension 0 and to be no larger size than "
     r"src \[5\]"),
    (lambda: dg.zeros(2).scatter_reduce(0, dg.tensor([0]), dg.ones(1), "sum", include_self="x"), TypeError,
     "argument 'include_self' must be bool, not str"),
])
def test_scatter_reduce_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_index_reduce():
    source = dg.tensor([[2., 3.], [4., 5.], [6., 7.]])
    _eq(dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0, 2, 0]), source, "prod"), [[12, 21], [1, 1], [4, 5]])
    _eq(dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0, 2, 0]), source, "mean", include_self=False),
        [[4, 5], [1, 1], [4, 5]])
    _eq(dg.ones(2, 3).index_reduce(1, dg.tensor([2, 2]), dg.tensor([[2., 3.], [4., 5.]]), "amax"),
        [[1, 1, 3], [1, 1, 5]])
    y = dg.ones(2, 3)
    y.index_reduce_(1, dg.tensor([2, 0]), dg.tensor([[2., 3.], [4., 5.]]), "amin")
    _eq(y, [[1, 1, 1], [1, 1, 1]])
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin but got sum."):
        dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0]), dg.ones(1, 2), "sum")
    with pytest.raises(IndexError, match="index out of range in self"):
        dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0, 5, 0]), dg.ones(3, 2), "prod")
    with pytest.raises(RuntimeError, match=r"index_reduce_\(\): Number of indices \(3\) should be equal to "
                                           r"source.size\(dim\): \(2\), for dim: 0"):
        dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0, 1, 0]), dg.ones(2, 2), "prod")


def test_slice_select_and_diagonal_scatter():
    x = dg.arange(6.).reshape(2, 3)
    _eq(dg.select_scatter(x, dg.tensor([7., 8.]), 1, 1), [[0, 7, 2], [3, 8, 5]])
    _eq(x.select_scatter(dg.tensor([7., 8., 9.]), 0, -1), [[0, 1, 2], [7, 8, 9]])
    _eq(x.select_scatter(dg.zeros(2, dtype=dg.float32), 1, 0), [[0, 1, 2], [0, 4, 5]])  # cast to x's dtype
    _eq(dg.slice_scatter(x, dg.zeros(2, 2), 1, 0, 3, 2), [[0, 1, 0], [0, 4, 0]])
    _eq(dg.slice_scatter(x, dg.zeros(1, 3), 0, 1), [[0, 1, 2], [0, 0, 0]])
    _eq(x.slice_scatter(dg.zeros(2, 1), 1, -1), [[0, 1, 0], [3, 4, 0]])
    _eq(dg.slice_scatter(x, dg.zeros(2, 2), 1, 1, 100), [[0, 0, 0], [3, 0, 0]])
    _eq(dg.diagonal_scatter(dg.zeros(3, 4), dg.ones(3), 1), [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    _eq(dg.diagonal_scatter(dg.zeros(3, 4), dg.arange(2.), -1), [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    _eq(dg.diagonal_scatter(dg.zeros(2, 2, 3), dg.ones(3, 2), 0, 0, 1),
        [[[1, 1, 1], [0, 0, 0]], [[0, 0, 0], [1, 1, 1]]])
    _eq(dg.zeros(2, 3, 4).diagonal_scatter(dg.arange(6.).reshape(3, 2), 0, 2, 0),
        [[[0, 0, 0, 0], [2, 0, 0, 0], [4, 0, 0, 0]], [[0, 1, 0, 0], [0, 3, 0, 0], [0, 5, 0, 0]]])


def test_scatter_gradients_as_torch():
    x = dg.arange(6.).reshape(2, 3).requires_grad_()
    s = dg.tensor([[1., 2., 3.]], requires_grad=True)
    y = dg.slice_scatter(x * 1, s * 2, 0, 1)
    d = dg.diagonal_scatter(y, dg.tensor([5., 6.]) * s[0, :2], 1)
    e = dg.select_scatter(d, s[0, 1:] * 3, 1, 0)
    (e * dg.arange(6.).reshape(2, 3)).sum().backward()
    _eq(e, [[6, 5, 2], [9, 4, 12]])  # torch's values and gradients
    _eq(x.grad, [[0, 0, 2], [0, 0, 0]])
    _eq(s.grad, [[5, 38, 9]])


@pytest.mark.parametrize("make, error, message", [
    (lambda: dg.select_scatter(dg.zeros(2, 3), dg.zeros(2), 0, 0), RuntimeError,
     r"expected src to have a size equal to the slice of self. src size = \[2\], slice size = \[3\]"),
    (lambda: dg.select_scatter(dg.zeros(2, 3), dg.zeros(2), 1, 3), IndexError,
     r"select\(\): index 3 out of range for tensor of size \[2, 3\] at dimension 1"),
    (lambda: dg.slice_scatter(dg.zeros(2, 3), dg.zeros(2, 2), 1, 0, 3, 1), RuntimeError,
     r"src size = \[2, 2\], slice size = \[2, 3\]"),
    (lambda: dg.slice_scatter(dg.zeros(2, 3), dg.zeros(2, 2), 1, 0, 3, 0), RuntimeError, "slice step must be positive"),
    (lambda: dg.diagonal_scatter(dg.zeros(3, 4), dg.ones(2)), RuntimeError,
     r"src size = \[2\], slice size = \[3\]"),
])
def test_slice_select_and_diagonal_scatter_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_fill_diagonal_():
    _eq(dg.zeros(3, 3).fill_diagonal_(5), np.eye(3) * 5)
    tall = dg.zeros(7, 3).fill_diagonal_(5, wrap=True)
    _eq(tall, np.vstack([np.eye(3), np.zeros((1, 3)), np.eye(3)]) * 5)
    _eq(dg.zeros(7, 3).fill_diagonal_(5), np.vstack([np.eye(3), np.zeros((4, 3))]) * 5)
    _eq(dg.zeros(2, 4).fill_diagonal_(5, wrap=True), np.eye(2, 4) * 5)
    _eq(dg.zeros(2, 2, 2).fill_diagonal_(5), [[[5, 0], [0, 0]], [[0, 0], [0, 5]]])
    x = dg.arange(9.).reshape(3, 3).requires_grad_()
    y = x * 1
    y.fill_diagonal_(2.)
    (y * y).sum().backward()
    _eq(x.grad, [[0, 2, 4], [6, 0, 10], [12, 14, 0]])
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        dg.zeros(2, 2, 3).fill_diagonal_(5)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        dg.zeros(2).fill_diagonal_(5)


# -- statistics, distances and elementwise extras (dualgrad/ops/statistics.py) --------------------------------
NAN = float("nan")


def _close(actual, expected, tol=1e-4):
    np.testing.assert_allclose(np.asarray(actual.detach().numpy() if isinstance(actual, dg.Tensor) else actual,
                                          dtype=float), np.asarray(expected, dtype=float), rtol=tol, atol=tol)


def test_elementwise_extras():
    m, e = dg.frexp(dg.tensor([8., 0.3, -5., 0.]))
    _eq(m, [0.5, 0.6, -0.625, 0])
    _eq(e, [4, -1, 3, 0])
    assert e.dtype == np.int32
    x = dg.tensor([8., 0.3], requires_grad=True)
    _eq(dg.grad(dg.frexp(x).mantissa.sum(), x)[0], [0.0625, 2])  # torch's
    _eq(dg.ldexp(dg.tensor([1, 3]), dg.tensor([2, -1])), [4, 1.5])
    assert dg.float_power(dg.tensor([2, 3], dtype=dg.int32), 2).dtype == np.float64
    assert dg.float_power(dg.tensor([2.], dtype=dg.float32), dg.tensor([0.5], dtype=dg.float32)).dtype == np.float64
    _eq(dg.float_power(dg.tensor([1j], dtype=dg.complex64), 2), [-1])
    _eq(dg.gcd(dg.tensor([12, -18, 0]), dg.tensor([8, 12, 0])), [4, 6, 0])
    _eq(dg.lcm(dg.tensor([4, -6, 0]), dg.tensor([6, 4, 5])), [12, 12, 0])
    _eq(dg.nextafter(dg.tensor([1., 0.]), dg.tensor([2., -1.])) - dg.tensor([1., 0.]), [2.0 ** -52, -5e-324])
    assert [dg.tensor([1], dtype=d).is_signed() for d in (dg.uint8, dg.bool, dg.int8, dg.float32, dg.complex64)] == \
        [False, False, True, True, True]
    assert dg.zeros(2, 3).is_same_size(dg.ones(2, 3)) and not dg.is_same_size(dg.zeros(2), dg.zeros(3))


@pytest.mark.parametrize("make, error, message", [
    (lambda: dg.frexp(dg.tensor([1])), RuntimeError, r"torch.frexp\(\) only supports floating-point dtypes"),
    (lambda: dg.gcd(dg.tensor([1.]), dg.tensor([2.])), NotImplementedError, "\"gcd_cpu\" not implemented for 'Double'"),
    (lambda: dg.lcm(dg.tensor([1.]), dg.tensor([2])), NotImplementedError, "\"lcm_cpu\" not implemented for 'Double'"),
    (lambda: dg.nextafter(dg.tensor([1]), dg.tensor([2])), NotImplementedError,
     "\"nextafter_cpu\" not implemented for 'Long'"),
    (lambda: dg.aminmax(dg.zeros(0)), RuntimeError, "cannot compute aminmax over an empty dimension"),
])
def test_elementwise_extra_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("fn", [lambda a: dg.gcd((a * 10).to(dg.int64), dg.tensor(6)),
                                lambda a: dg.frexp(a).exponent])
def test_non_differentiable_elementwise_extras_under_vmap(fn):
    x = dg.tensor(np.random.default_rng(0).normal(size=(3, 4)))
    _eq(dg.vmap(fn)(x), np.stack([fn(x[i]).numpy() for i in range(3)]))


def test_aminmax_and_mode():
    mn, mx = dg.aminmax(dg.tensor([[1., 5.], [3., -2.]]))
    _eq(mn, -2)
    _eq(mx, 5)
    r = dg.tensor([[1., 5.], [3., -2.]]).aminmax(dim=1, keepdim=True)
    _eq(r.min, [[1], [-2]])
    _eq(r.max, [[5], [3]])
    x = dg.tensor([1., 5., 5., -2.], requires_grad=True)
    mn, mx = dg.aminmax(x)
    (mn + 2 * mx).backward()
    _eq(x.grad, [0, 1, 1, 1])  # torch's: tied maxima share
    values, indices = dg.mode(dg.tensor([[1., 2., 2., 1., 3.], [5., 4., 4., 5., 5.]]))
    _eq(values, [1, 5])
    _eq(indices, [3, 4])  # the last occurrence, as torch's
    values, indices = dg.tensor([[1., 2.], [1., 3.], [2., 3.]]).mode(0, keepdim=True)
    _eq(values, [[1, 3]])
    _eq(indices, [[1, 2]])
    _eq(dg.mode(dg.tensor(3.)).indices, 0)
    x = dg.tensor([1., 2., 2., 1., 3.], requires_grad=True)
    dg.mode(x).values.backward()
    _eq(x.grad, [0, 0, 0, 1, 0])


A, B = [[1., 2., 3.], [0., 0., 0.]], [[2., 0., 1.], [1., 1., 1.]]
X1, X2 = [[0., 0.], [1., 1.], [2., 0.]], [[0., 0.], [1., 2.]]


def test_distances_as_torch():
    a, b = dg.tensor(A), dg.tensor(B)
    _close([dg.dist(a, b, p) for p in (2, 1, 0, 3, np.inf, -np.inf, 0.5)],
           [3.4641016151377544, 8, 6, 2.7144176165949063, 2, 1, 46.62741699796952], 1e-12)
    _close(dg.cosine_similarity(a, b), [0.5976, 0])
    _close(dg.cosine_similarity(a, b, dim=0), [0.8944, 0, 0.7071])
    _close(dg.cosine_similarity(a, dg.tensor([1., 1., 1.]), dim=-1), [0.9258, 0])
    a.requires_grad_()
    b.requires_grad_()
    dg.cosine_similarity(a, b).sum().backward()
    _close(a.grad, [[1.9636e-01, -8.5373e-02, -8.5373e-03], [5.7735e+07, 5.7735e+07, 5.7735e+07]])  # torch's at 0
    _close(b.grad, [[-0.1195, 0.2390, 0.2390], [0, 0, 0]])
    _close(dg.pairwise_distance(dg.tensor(A), dg.tensor(B)), [3, 1.7320])
    _close(dg.pairwise_distance(dg.tensor(A), dg.tensor(B), 1, keepdim=True), [[5], [3]])
    _close(dg.pairwise_distance(dg.tensor([1., 2.]), dg.tensor([0., 0.])), 2.2361)


def test_cdist_and_pdist_as_torch():
    x1, x2 = dg.tensor(X1, requires_grad=True), dg.tensor(X2)
    _close(dg.cdist(x1, x2), [[0, 2.2361], [1.4142, 1], [2, 2.2361]])
    _close(dg.cdist(x1, x2, p=1), [[0, 3], [2, 1], [2, 3]])
    _close(dg.cdist(x1, x2, p=np.inf), [[0, 2], [1, 1], [2, 2]])
    _close(dg.cdist(x1, x2, p=0), [[0, 2], [2, 1], [1, 2]])
    dg.cdist(x1, x2).sum().backward()
    _close(x1.grad, [[-0.4472, -0.8944], [0.7071, -0.2929], [1.4472, -0.8944]])
    _close(dg.pdist(dg.tensor(X1)), [1.4142, 2, 1.4142])
    _close(dg.pdist(dg.tensor(X1), 1), [2, 2, 2])
    x1 = dg.tensor(X1, requires_grad=True)
    dg.pdist(dg.cat([x1, x1[:1]])).sum().backward()
    _close(x1.grad, [[-3.4142, -1.4142], [0.7071, 2.1213], [2.7071, -0.7071]])


@pytest.mark.parametrize("make, message", [
    (lambda: dg.cdist(dg.tensor(X1), dg.zeros(2, 3)), "X1 and X2 must have the same number of columns. X1: 2 X2: 3"),
    (lambda: dg.cdist(dg.tensor(X1), dg.tensor(X2), p=-1), "cdist only supports non-negative p values"),
    (lambda: dg.cdist(dg.zeros(3), dg.tensor(X2)), "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda: dg.pdist(dg.zeros(2, 2, 2)), "pdist only supports 2D tensors, got: 3D"),
    (lambda: dg.pdist(dg.tensor(X1), -1), "pdist only supports non-negative p values"),
    (lambda: dg.renorm(dg.ones(2, 2), -1, 1, 3.), "renorm: non-positive-norm not supported"),
    (lambda: dg.renorm(dg.ones(2, 2), 2, 1, -3.), "renorm: expected maxnorm to be >= 0 but got -3"),
    (lambda: dg.ones(2).renorm(2, 0, 1.), "renorm: input needs at least 2 dimensions, got 1 dimensions"),
])
def test_distance_errors(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


def test_renorm_as_torch():
    r = dg.tensor([[1., 2., 2.], [3., 4., 0.], [0.1, 0.1, 0.1]], requires_grad=True)
    _close(dg.renorm(r, 2, 0, 2.), [[0.6667, 1.3333, 1.3333], [1.2, 1.6, 0], [0.1, 0.1, 0.1]])
    _close(r.renorm(1, 1, 3.), [[0.7317, 0.9836, 2], [2.1951, 1.9672, 0], [0.0732, 0.0492, 0.1]])
    dg.renorm(r, 2, 0, 2.).sum().backward()
    _close(r.grad, [[0.2963, -0.0741, -0.0741], [0.0640, -0.0480, 0.4], [1, 1, 1]])


C = [[1., 2., 4., 7.], [2., 1., 0., -1.], [0., 3., 3., 5.]]


def test_cov_and_corrcoef_as_torch():
    c = dg.tensor(C, requires_grad=True)
    _close(dg.cov(c), [[7, -3.3333, 4.8333], [-3.3333, 1.6667, -2.5], [4.8333, -2.5, 4.25]])
    _close(c.cov(correction=0), [[5.25, -2.5, 3.625], [-2.5, 1.25, -1.875], [3.625, -1.875, 3.1875]])
    aweights = dg.tensor([0.5, 1., 2., 1.])
    _close(dg.cov(c, fweights=dg.tensor([1, 2, 1, 3]), aweights=aweights),
           [[6.0426, -2.5532, 3.2553], [-2.5532, 1.1170, -1.4362], [3.2553, -1.4362, 2.2021]])
    _close(dg.cov(dg.tensor([1., 2., 4.])), 2.3333)
    _close(dg.cov(dg.tensor([1, 2, 4])), 2.3333)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        _eq(dg.cov(dg.tensor([[1.], [2.]])), [[NAN, NAN], [NAN, NAN]])
    _close(dg.corrcoef(c), [[1, -0.9759, 0.8861], [-0.9759, 1, -0.9393], [0.8861, -0.9393, 1]])
    _close(dg.corrcoef(dg.tensor([1., 2., 4.])), 1)
    dg.corrcoef(c).sum().backward()
    _close(c.grad, [[-0.0647, 0.1153, -0.0628, 0.0122], [-0.0277, 0.1529, -0.2228, 0.0976],
                    [0.0472, -0.0560, -0.0620, 0.0708]])
    c.grad = None
    dg.cov(c, aweights=aweights).sum().backward()
    _close(c.grad, [[-1.3571, -0.7857, -0.2857, 2.4286]] * 3)


@pytest.mark.parametrize("kwargs, message", [
    ({"fweights": dg.tensor([1., 2., 1., 3.])},
     "expected fweights to have integral dtype but got fweights with Double"),
    ({"fweights": dg.tensor([1, -2, 1, 3])}, "fweights cannot be negative"),
    ({"aweights": dg.tensor([1., -2, 1, 3])}, "aweights cannot be negative"),
    ({"fweights": dg.tensor([1, 2, 1])}, "expected fweights to have the same numel as there are observations in the "
                                        "input but got 3 != 4"),
])
def test_cov_errors(kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        dg.cov(dg.tensor(C), **kwargs)
    with pytest.raises(RuntimeError, match="expected input to have two or fewer dimensions but got an input with 3"):
        dg.cov(dg.zeros(2, 2, 2))


Q = [[3., 1., 4., 1.5], [5., 9., 2., 6.]]
QUANTILES = {  # torch's, at q = [0, 0.25, 0.5, 0.9, 1] along dim 1
    "linear": [[1, 2], [1.375, 4.25], [2.25, 5.5], [3.7, 8.1], [4, 9]],
    "lower": [[1, 2], [1, 2], [1.5, 5], [3, 6], [4, 9]],
    "higher": [[1, 2], [1.5, 5], [3, 6], [4, 9], [4, 9]],
    "midpoint": [[1, 2], [1.25, 3.5], [2.25, 5.5], [3.5, 7.5], [4, 9]],
    "nearest": [[1, 2], [1.5, 5], [3, 6], [4, 9], [4, 9]],
}


@pytest.mark.parametrize("interpolation", sorted(QUANTILES))
def test_quantile_interpolations(interpolation):
    out = dg.quantile(dg.tensor(Q), dg.tensor([0., 0.25, 0.5, 0.9, 1.]), dim=1, interpolation=interpolation)
    _close(out, QUANTILES[interpolation], 1e-12)


def test_quantile_shapes_nans_and_gradient():
    q = dg.tensor(Q, requires_grad=True)
    _close(dg.quantile(q, 0.3), 2.1)
    assert dg.quantile(q, dg.tensor([0.3, 0.6]), dim=0, keepdim=True).shape == (2, 1, 4)
    _close(q.quantile(0.3, keepdim=True), [[2.1]])
    _eq(dg.quantile(dg.tensor([1., NAN, 3.]), 0.5), NAN)
    _eq(dg.nanquantile(dg.tensor([[1., NAN, 3.], [NAN] * 3]), 0.5, dim=1), [2, NAN])
    _eq(dg.nanquantile(dg.tensor([1., NAN, 3., 4., 0.5]), dg.tensor([0.5, 0.125, 0.375]), interpolation="nearest"),
        [3, 0.5, 1])
    dg.quantile(q, dg.tensor([0.3, 0.9]), dim=1).sum().backward()
    _close(q.grad, [[0.3, 0.1, 0.7, 0.9], [0.9, 0.7, 0.1, 0.3]], 1e-12)


@pytest.mark.parametrize("make, message", [
    (lambda: dg.quantile(dg.tensor(Q), 1.5), r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"),
    (lambda: dg.quantile(dg.tensor(Q), dg.tensor([0.5, -0.1])), r"q values must be in the range \[0, 1\]"),
    (lambda: dg.quantile(dg.tensor([1, 2]), 0.5), "input tensor must be either float or double dtype"),
    (lambda: dg.quantile(dg.tensor(Q), dg.tensor([0.5], dtype=dg.float32)),
     "q tensor must be same dtype as the input tensor"),
    (lambda: dg.quantile(dg.tensor(Q), dg.tensor([[0.5]])), "q must be a scalar or 1D tensor"),
    (lambda: dg.nanquantile(dg.tensor(Q), 0.5, interpolation="foo"),
     r"nanquantile\(\) interpolation must be one of linear, lower, higher, midpoint or nearest, but got foo"),
    (lambda: dg.quantile(dg.zeros(0), 0.5), "input tensor must be non-empty"),
])
def test_quantile_errors(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


def test_nanmedian_as_torch():
    values, indices = dg.nanmedian(dg.tensor([[1., NAN, 3., 2.], [NAN] * 4, [4., 1., 2., 3.]]), 1)
    _eq(values, [2, NAN, 2])
    _eq(indices[[0, 2]], [3, 2])  # (torch leaves the index of an all-NaN row unspecified)
    _eq(dg.nanmedian(dg.tensor([1., NAN, 3., 2.])), 2)
    _eq(dg.nanmedian(dg.tensor(1.), 0).indices, 0)
    _eq(dg.nanmedian(dg.zeros(0)), NAN)
    x = dg.tensor([1., NAN, 3., 2.], requires_grad=True)
    x.nanmedian().backward()
    _eq(x.grad, [0, 0, 0, 1])


STATS_FUNCTIONS = {
    "cdist": lambda a, b: dg.cdist(a, b), "cdist_p1.5": lambda a, b: dg.cdist(a, b, p=1.5),
    "pdist": lambda a, b: dg.pdist(a), "cosine_similarity": lambda a, b: dg.cosine_similarity(a[:2], b, dim=1),
    "pairwise_distance": lambda a, b: dg.pairwise_distance(a[:2], b), "dist": lambda a, b: dg.dist(a[:2], b, 3),
    "cov": lambda a, b: dg.cov(a, fweights=dg.tensor([1, 2, 1, 3]), aweights=dg.tensor([0.5, 1., 2., 1.])),
    "corrcoef": lambda a, b: dg.corrcoef(a), "renorm": lambda a, b: dg.renorm(a, 2, 0, 1.),
    "quantile": lambda a, b: dg.quantile(a, dg.tensor([0.2, 0.7]), dim=1),
    "nanquantile": lambda a, b: dg.nanquantile(a, 0.4, interpolation="midpoint"),
    "nanmedian": lambda a, b: dg.nanmedian(a, 0).values, "mode": lambda a, b: dg.mode(a).values,
    "frexp": lambda a, b: dg.frexp(a).mantissa, "aminmax": lambda a, b: dg.aminmax(a, dim=1).max,
    "float_power": lambda a, b: dg.float_power(a.abs(), b[0]),
    "ldexp": lambda a, b: dg.ldexp(a, dg.tensor([1, -2, 0, 3])),
}


@pytest.mark.parametrize("name", sorted(STATS_FUNCTIONS))
def test_stats_against_finite_differences_to_second_order(name):
    rng = np.random.default_rng(0)
    x = dg.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    y = dg.tensor(rng.normal(size=(2, 4)), requires_grad=True)
    assert dg.gradcheck(STATS_FUNCTIONS[name], (x, y), check_forward_ad=True)
    assert dg.gradgradcheck(STATS_FUNCTIONS[name], (x, y))


@pytest.mark.parametrize("name", sorted(set(STATS_FUNCTIONS) - {"mode"}))
def test_stats_under_vmap_match_a_loop(name):
    rng = np.random.default_rng(1)
    xs, ys = dg.tensor(rng.normal(size=(3, 3, 4))), dg.tensor(rng.normal(size=(3, 2, 4)))
    fn = STATS_FUNCTIONS[name]
    np.testing.assert_allclose(dg.vmap(fn)(xs, ys).numpy(), np.stack([fn(xs[i], ys[i]).numpy() for i in range(3)]),
                               rtol=1e-12, atol=1e-12)
