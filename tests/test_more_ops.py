"""The functions of ``dualgrad/ops/more.py`` against torch's values and messages (pinned here):
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
