"""torch's Tensor methods and functions that are compositions of dualgrad ops (``t``, ``mm``, ``bmm``,
``mv``, ``view_as``, ``masked_fill``, ...): values, gradients (``gradcheck``) and errors."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

RNG = np.random.default_rng(7)


def _leaf(*shape: int) -> dg.Tensor:
    return dg.tensor(RNG.standard_normal(shape), requires_grad=True)


@pytest.mark.parametrize("name, shapes, expected", [
    ("mm", ((2, 3), (3, 4)), lambda a, b: a @ b),
    ("bmm", ((5, 2, 3), (5, 3, 4)), lambda a, b: a @ b),
    ("mv", ((2, 3), (3,)), lambda a, b: a @ b),
])
def test_matrix_products_match_numpy_and_gradcheck(name, shapes, expected):
    a, b = (_leaf(*s) for s in shapes)
    for result in (getattr(dg, name)(a, b), getattr(a, name)(b)):
        np.testing.assert_allclose(result.numpy(force=True), expected(a.numpy(force=True), b.numpy(force=True)))
    assert dg.gradcheck(getattr(dg, name), (a, b))


@pytest.mark.parametrize("name, shapes", [("mm", ((2, 3), (3,))), ("bmm", ((2, 3), (3, 4))),
                                          ("mv", ((2, 3), (3, 1)))])
def test_matrix_products_refuse_other_ranks_naming_both_shapes(name, shapes):
    a, b = (dg.ones(*s) for s in shapes)
    with pytest.raises(RuntimeError, match=rf"{name}: expected operands .*{shapes[0]}.*{shapes[1]}".replace("(", r"\(")
                       .replace(")", r"\)")):
        getattr(dg, name)(a, b)


def test_t_transposes_matrices_keeps_vectors_and_refuses_3d():
    x = _leaf(2, 3)
    assert dg.t(x).shape == (3, 2) and x.t().shape == (3, 2)
    np.testing.assert_array_equal(x.t().numpy(force=True), x.numpy(force=True).T)
    assert dg.gradcheck(lambda a: a.t(), (x,))
    v = dg.ones(3, requires_grad=True)
    assert v.t().shape == (3,) and dg.ones(()).t().shape == ()
    assert v.t() is not v and v.t().grad_fn.name() == "TBackward0"  # a view, as torch's
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        dg.ones(2, 2, 2).t()


def test_as_methods_take_the_other_tensors_shape_or_dtype():
    x, other = _leaf(6), dg.zeros(2, 3)
    assert x.view_as(other).shape == (2, 3) and x.reshape_as(other).shape == (2, 3)
    assert dg.gradcheck(lambda a: a.view_as(other), (x,))
    row = _leaf(1, 3)
    assert row.expand_as(other).shape == (2, 3)
    assert dg.gradcheck(lambda a: a.expand_as(other), (row,))
    assert dg.ones(2).type_as(dg.zeros(1, dtype="float32")).dtype == np.float32


def test_contiguous_returns_self_when_row_major_else_a_tracked_copy():
    x = _leaf(2, 3)
    assert x.contiguous() is x
    y = x.T.contiguous()
    assert y._data.flags.c_contiguous and y.grad_fn is not None
    assert dg.gradcheck(lambda a: a.T.contiguous(), (x,))


def test_masked_fill_and_where_methods_are_out_of_place():
    x = _leaf(4)
    mask = dg.tensor([True, False, True, False])
    filled = x.masked_fill(mask, 0.5)
    expected = np.where(mask.numpy(), 0.5, x.numpy(force=True))
    np.testing.assert_array_equal(filled.numpy(force=True), expected)
    assert dg.gradcheck(lambda a: a.masked_fill(mask, 0.5), (x,))
    np.testing.assert_array_equal(x.where(mask, dg.zeros(4)).numpy(force=True),
                                  np.where(mask.numpy(), x.numpy(force=True), 0.0))


def test_isnan_isinf_isfinite_functions():
    x = dg.tensor([1.0, np.nan, np.inf, -np.inf])
    assert dg.isnan(x).tolist() == [False, True, False, False]
    assert dg.isinf(x).tolist() == [False, False, True, True]
    assert dg.isfinite(x).tolist() == [True, False, False, False]
    assert x.isnan().tolist() == dg.isnan(x).tolist() and not dg.isnan(x).requires_grad


@pytest.mark.parametrize("name", ["view_as", "reshape_as", "expand_as", "type_as"])
def test_as_methods_refuse_a_non_tensor_with_a_type_error(name):
    with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'input' must be a Tensor, not NoneType"):
        getattr(dg.ones(2), name)(None)


@pytest.mark.parametrize("name, expected", [
    ("eq", [False, True, False]), ("ne", [True, False, True]), ("lt", [True, False, False]),
    ("le", [True, True, False]), ("gt", [False, False, True]), ("ge", [False, True, True]),
])
def test_comparison_functions_and_methods(name, expected):
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result in (getattr(dg, name)(x, 2.0), getattr(x, name)(dg.tensor(2.0))):
        assert result.dtype == np.bool_ and result.tolist() == expected and not result.requires_grad


def test_logical_and_bitwise_functions_and_methods():
    p, q = dg.tensor([True, True, False]), dg.tensor([True, False, False])
    assert dg.logical_and(p, q).tolist() == [True, False, False] == p.logical_and(q).tolist()
    assert dg.logical_or(p, q).tolist() == [True, True, False] and p.logical_xor(q).tolist() == [False, True, False]
    assert dg.logical_not(dg.tensor([0.0, 2.0])).tolist() == [True, False]
    assert dg.logical_and(dg.tensor([1.0, 0.0]), dg.tensor([3, 3])).dtype == np.bool_
    i = dg.tensor([5, 6, 7])
    assert dg.bitwise_and(i, 3).tolist() == [1, 2, 3] and i.bitwise_or(8).tolist() == [13, 14, 15]
    assert dg.bitwise_xor(i, 1).tolist() == [4, 7, 6] == (1 ^ i).tolist()
    assert dg.bitwise_not(i).tolist() == [-6, -7, -8] == i.bitwise_not().tolist()


def test_div_rounding_modes():
    i = dg.tensor([-7, 7])
    assert dg.div(i, 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert i.div(2, rounding_mode="floor").tolist() == [-4, 3]
    assert dg.div(i, 2, rounding_mode="trunc").dtype == np.int64
    x = dg.tensor([-7.0, 7.0])
    assert x.div(2, rounding_mode="trunc").tolist() == [-3.0, 3.0] and dg.div(x, 2).tolist() == [-3.5, 3.5]
    with pytest.raises(RuntimeError, match="one of None, 'trunc', or 'floor' but found 'round'"):
        dg.div(x, 2, rounding_mode="round")
