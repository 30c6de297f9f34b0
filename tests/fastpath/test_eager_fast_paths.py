"""Fast paths of the eager per-op path: ``x[index]`` (``fastpath.quiet_getitem``) and matmul's vector gradients.

Each must give what the plain path gives (dispatch through ``indexing.getitem``; the rules written with
ops) in every mode, with the fast paths on and off (``DUALGRAD_FASTPATH=0``); the tests that a
shortcut is taken are marked ``fastpath``.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from helpers import dispatch_calls

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.ops.indexing import getitem

INDICES = [2, -1, slice(1, 4), slice(None, None, 2), slice(2, 2), (1, 2), (0, slice(1, 3)), (slice(None), -1),
           (slice(0, 2), slice(1, None, 2)), ()]


def _base(requires_grad: bool, view: bool) -> dg.Tensor:
    x = dg.tensor(np.arange(20.0).reshape(4, 5) / 7, requires_grad=requires_grad)
    return x[1:] if view else x


def _same(result: dg.Tensor, expected: dg.Tensor) -> None:
    assert type(result) is type(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result.detach().numpy(), expected.detach().numpy())
    assert result.requires_grad == expected.requires_grad
    assert result._is_view() == expected._is_view()
    assert result._base is expected._base
    assert (result.grad_fn is None) == (expected.grad_fn is None)
    if result.grad_fn is not None:
        assert result.grad_fn.name() == expected.grad_fn.name()
    assert result.is_inference() == expected.is_inference()


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("view", [False, True], ids=["tensor", "view"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
def test_indexing_gives_getitems_result(index, requires_grad, view, mode):
    context = {"grad": nullcontext, "no_grad": dg.no_grad, "inference_mode": dg.inference_mode}[mode]
    x = _base(requires_grad, view)
    with context():
        _same(x[index], getitem(x, index))


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_gradients_through_indexing(index):
    x = dg.tensor(np.arange(20.0).reshape(4, 5) / 7, requires_grad=True)
    (g,) = dg.grad((x[index] ** 2).sum() + x[1:][index if index != () else ...].sum(), x)
    xv = x.detach().numpy()
    expected = np.zeros_like(xv)
    np.add.at(expected, index, 2 * xv[index])
    shifted = np.zeros((3, 5))
    shifted[index if index != () else ...] = 1.0
    expected[1:] += shifted
    np.testing.assert_allclose(g.numpy(), expected)


def test_an_index_out_of_range_raises_getitems_error():
    with pytest.raises(IndexError, match=r"getitem: invalid index for a tensor of shape \(3,\)"):
        dg.ones(3)[3]
    with pytest.raises(IndexError, match=r"getitem: invalid index"):
        dg.ones(3)[0, 0]


def test_a_write_into_the_base_is_seen_by_a_saved_element():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    z = y[1] * y[2]
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_a_stale_view_is_rebuilt_before_it_is_indexed():
    base = dg.zeros(2, 3)
    view = base[0]
    base.mul_(dg.ones(2, 3, requires_grad=True))  # (the base now requires grad: the view's graph changes)
    element = view[1]
    assert element.requires_grad and element.grad_fn.name() == "SelectBackward0"


def test_modes_see_the_indexing():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.0, 2.0, 3.0]), dg.tensor([0.0, 1.0, 0.0]))
        assert fwAD.unpack_dual(x[1]).tangent.item() == 1.0
    out = dg.vmap(lambda r: r[1:] * 2.0)(dg.ones(4, 3))
    assert out.shape == (4, 2)
    with dg.profiler.profile() as prof:
        dg.ones(3)[1]
    assert any("getitem" in event.name for event in prof.events())



@pytest.mark.fastpath
def test_the_indexing_shortcut_is_taken_only_when_no_mode_can_see_it():
    x = dg.ones(3, 4, requires_grad=True)
    assert dispatch_calls(lambda: (x[1], x[0:2], x[1, 2:])) == 0
    assert dispatch_calls(lambda: x[[0, 1]]) == 1
    assert dispatch_calls(lambda: x[np.int64(1)]) == 1

    def in_inference_mode():
        with dg.inference_mode():
            x[1]

    assert dispatch_calls(in_inference_mode) == 1


# -- matmul of a vector and a matrix: the gradients by NumPy directly ------------------------------------
@pytest.mark.parametrize("shapes", [((3,), (3, 4)), ((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)),
                                    ((3,), (2, 3, 4))], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_matmul_gradients_match_finite_differences(shapes, dtype):
    rng = np.random.default_rng(0)
    xv, yv = (rng.standard_normal(s).astype(dtype) for s in shapes)
    x, y = dg.tensor(xv, requires_grad=True), dg.tensor(yv, requires_grad=True)
    gx, gy = dg.grad((x @ y).abs().sum(), (x, y))
    assert gx.dtype == x.dtype and gy.dtype == y.dtype
    xd, yd = dg.tensor(xv.astype(np.complex128 if np.iscomplexobj(xv) else np.float64), requires_grad=True), \
        dg.tensor(yv.astype(np.complex128 if np.iscomplexobj(yv) else np.float64), requires_grad=True)
    assert dg.autograd.gradcheck(lambda a, b: (a @ b).abs().sum(), (xd, yd))
    gxd, gyd = dg.grad((xd @ yd).abs().sum(), (xd, yd))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gx.numpy(), gxd.numpy(), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(gy.numpy(), gyd.numpy(), rtol=tolerance, atol=tolerance)


def test_matmul_vector_gradients_differentiate_again():
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w = dg.tensor(np.arange(12.0).reshape(3, 4) / 10, requires_grad=True)
    gx, gw = dg.grad(((x @ w) ** 2).sum(), (x, w), create_graph=True)
    (hx,) = dg.grad(gw.sum(), x)
    # sum(gw) = 2 sum(x) sum(x @ w), whose gradient wrt x is 2 (sum(x @ w) + sum(x) w.sum(1))
    wv, xv = w.detach().numpy(), x.detach().numpy()
    np.testing.assert_allclose(hx.numpy(), 2 * ((xv @ wv).sum() + xv.sum() * wv.sum(1)))
    np.testing.assert_allclose(gx.detach().numpy(), 2 * wv @ (xv @ wv))


# -- x.sum(): the arguments of a sum over every axis, and NumPy's reduction without its wrapper -----------
@pytest.mark.parametrize("value", [np.arange(6.0).reshape(2, 3), np.float32([1.5, 2.5]), np.arange(4, dtype=np.int8),
                                   np.array([True, False, True]), np.array([1 + 2j, 3 - 1j]), np.array(2.5),
                                   np.zeros((0, 3))], ids=["float64", "float32", "int8", "bool", "complex", "0-d",
                                                           "empty"])
def test_sum_over_every_axis_is_numpys(value):
    x = dg.tensor(value)
    for result in (x.sum(), dg.sum(x), x.sum(dim=None, keepdim=False), x.sum(axis=None)):
        expected = np.sum(value)
        assert result.shape == () and result.dtype == expected.dtype
        np.testing.assert_array_equal(result.numpy(), expected)


def test_sum_over_every_axis_records_its_node():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.sum()
    assert y.grad_fn.name() == "SumBackward0"
    (g,) = dg.grad(y * 3.0, x)
    np.testing.assert_array_equal(g.numpy(), np.full((2, 2), 3.0))
    with pytest.raises(TypeError, match="sum"):
        dg.sum("not a tensor")
