"""Ops, keywords and results a torch 2.13 user expects (found by a differential run against torch;
the expected values here are literal, torch is not imported)."""

import math

import numpy as np
import pytest

import dualgrad as dg


def grad_of(fn, *values, dtype=np.float64):
    xs = [dg.tensor(np.asarray(v, dtype=dtype), requires_grad=True) for v in values]
    return [g.numpy() for g in dg.grad(fn(*xs).real.sum(), xs, allow_unused=True, materialize_grads=True)]


# -- elementwise --------------------------------------------------------------------------------
def test_div_rounding_modes():
    x = dg.tensor([-7.0, 7.0, -6.0])
    assert dg.div(x, 2.0).tolist() == [-3.5, 3.5, -3.0]
    assert dg.div(x, 2.0, rounding_mode="trunc").tolist() == [-3.0, 3.0, -3.0]
    assert x.div(2.0, rounding_mode="floor").tolist() == [-4.0, 3.0, -3.0]
    ints = dg.div(dg.tensor([-7, 7]), dg.tensor([2, -2]), rounding_mode="trunc")
    assert ints.dtype == np.int64 and ints.tolist() == [-3, -3]
    assert dg.div(dg.tensor([-7, 7]), 2, rounding_mode="floor").tolist() == [-4, 3]
    assert dg.div(dg.tensor([1, 2]), 4).dtype == np.float64
    with pytest.raises(ValueError, match="rounding_mode"):
        dg.div(x, 2.0, rounding_mode="round")


@pytest.mark.parametrize("fn", [
    lambda x: dg.floor(x), lambda x: dg.ceil(x), lambda x: dg.trunc(x), lambda x: dg.round(x, decimals=1),
    lambda x: x.round(), lambda x: dg.sign(x), lambda x: dg.sgn(x), lambda x: dg.floor_divide(x, 0.7),
    lambda x: dg.div(x, 0.7, rounding_mode="trunc"), lambda x: x.div(0.7, rounding_mode="floor"),
])
def test_rounding_ops_require_grad_and_have_a_zero_gradient(fn):
    x = dg.tensor([-1.26, 0.3, 2.71], requires_grad=True)
    y = fn(x)
    assert y.requires_grad
    (g,) = dg.grad(y.sum(), x)
    assert g.tolist() == [0.0, 0.0, 0.0]


def test_round_decimals_frac_and_aliases():
    assert dg.round(dg.tensor([1.2345, -2.5]), decimals=2).tolist() == [1.23, -2.5]
    assert dg.round(dg.tensor([0.5, 1.5, 2.5])).tolist() == [0.0, 2.0, 2.0]
    assert np.allclose(dg.frac(dg.tensor([-1.25, 2.5])).numpy(), [-0.25, 0.5])
    assert grad_of(dg.frac, [-1.25, 2.5])[0].tolist() == [1.0, 1.0]
    x = dg.tensor([0.5])
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arctanh", "atanh")]:
        assert getattr(dg, alias)(x).tolist() == getattr(dg, name)(x).tolist()
        assert getattr(x, alias)().tolist() == getattr(dg, name)(x).tolist()
    assert dg.arctan2(x, x).tolist() == dg.atan2(x, x).tolist()
    assert dg.true_divide(dg.tensor([1]), 4).tolist() == [0.25]
    assert dg.fix(dg.tensor([-1.5])).tolist() == [-1.0]


def test_sgn_of_complex_has_torchs_gradient():
    z = np.array([1.0 + 2.0j, -0.5 + 0.1j])
    w = np.array([0.3 - 1.0j, 2.0 + 0.5j])
    (g,) = grad_of(lambda t: dg.sgn(t) * dg.tensor(w), z, dtype=np.complex128)
    # torch 2.13: (w* - Re(w* conj(sgn)) sgn) / |z| with w* the conjugated weight
    sgn, wc = z / abs(z), np.conj(w)
    np.testing.assert_allclose(g, (wc - (wc * np.conj(sgn)).real * sgn) / abs(z), rtol=1e-12)


def test_torch_keyword_names():
    x, y = dg.tensor([1.0, 2.0]), dg.tensor([3.0, 4.0])
    assert dg.add(input=x, other=y, alpha=2).tolist() == [7.0, 10.0]
    assert dg.sub(x, other=y).tolist() == [-2.0, -2.0]
    assert dg.mul(input=x, other=y).tolist() == [3.0, 8.0]
    assert dg.pow(x, exponent=2).tolist() == [1.0, 4.0]
    assert dg.pow(self=2.0, exponent=x).tolist() == [2.0, 4.0]
    assert dg.exp(input=dg.tensor([0.0])).tolist() == [1.0]
    assert dg.clip(x, min=1.5).tolist() == [1.5, 2.0]
    assert dg.max(x, other=y).tolist() == [3.0, 4.0]
    assert dg.min(x, other=y).tolist() == [1.0, 2.0]
    m = dg.ones(2, 3)
    assert dg.matmul(m, other=dg.ones(3)).tolist() == [3.0, 3.0]
    assert m.mm(mat2=dg.ones(3, 1)).shape == (2, 1)
    assert m.mv(vec=dg.ones(3)).tolist() == [3.0, 3.0]
    assert dg.reshape(m, shape=(3, 2)).shape == (3, 2)
    assert dg.permute(m, dims=(1, 0)).shape == (3, 2)
    assert dg.ones(3).expand(size=(2, 3)).shape == (2, 3)
    assert [p.shape for p in m.split(split_size=2, dim=1)] == [(2, 2), (2, 1)]
    assert dg.zeros(2, 3, 4).flip(0, 2).shape == (2, 3, 4)
    assert dg.tensor([[1.0, 2.0]]).flip(0, 1).tolist() == [[2.0, 1.0]]
    assert m.tile(2, 1).shape == (4, 3)


def test_clamp_without_bounds_is_torchs_runtime_error():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        dg.clamp(dg.ones(2))


def test_where_with_the_condition_only_is_nonzero_as_tuple():
    (i, j) = dg.where(dg.tensor([[True, False], [False, True]]))
    assert i.tolist() == [0, 1] and j.tolist() == [0, 1]
    with pytest.raises(TypeError, match="where"):
        dg.where(dg.tensor([True]), dg.ones(1))


def test_reciprocal_of_integers_is_floating():
    r = dg.reciprocal(dg.tensor([2, 4]))
    assert r.dtype == np.float64 and r.tolist() == [0.5, 0.25]


def test_new_elementwise_ops():
    nan = float("nan")
    assert dg.fmax(dg.tensor([1.0, nan, nan]), dg.tensor([nan, 2.0, nan])).tolist()[:2] == [1.0, 2.0]
    assert grad_of(dg.fmax, [1.0, 2.0], [1.0, 1.0]) == [pytest.approx([1.0, 1.0]), pytest.approx([0.0, 0.0])]
    assert dg.xlogy(dg.tensor([0.0, 2.0]), dg.tensor([0.0, math.e])).tolist() == [0.0, 2.0]
    gx, gy = grad_of(dg.xlogy, [0.0, 2.0], [3.0, 4.0])
    np.testing.assert_allclose(gx, [math.log(3.0), math.log(4.0)])
    np.testing.assert_allclose(gy, [0.0, 0.5])
    assert dg.sinc(dg.tensor([0.0])).tolist() == [1.0]
    assert grad_of(dg.sinc, [0.0])[0].tolist() == [0.0]
    assert dg.lerp(dg.tensor([0.0]), dg.tensor([10.0]), 0.25).tolist() == [2.5]
    assert dg.ones(1).addcmul(dg.tensor([2.0]), dg.tensor([3.0]), value=0.5).tolist() == [4.0]
    assert dg.addcdiv(dg.ones(1), dg.tensor([2.0]), dg.tensor([4.0])).tolist() == [1.5]


# -- reductions ---------------------------------------------------------------------------------
def test_cumulative_and_softmax_of_a_0d_tensor_are_0d():
    x = dg.tensor(2.0, requires_grad=True)
    for fn in (dg.cumsum, dg.cumprod, dg.softmax, dg.log_softmax):
        y = fn(x, 0)
        assert y.shape == ()
        (g,) = dg.grad(y, x)
        assert g.shape == ()


def test_norm_nuc_var_mean_and_nan_reductions():
    m = dg.tensor([[3.0, 0.0], [0.0, -4.0]])
    assert dg.norm(m, p="nuc").item() == pytest.approx(7.0)
    v, mu = dg.var_mean(dg.tensor([1.0, 2.0, 3.0, 4.0]), correction=0)
    assert (v.item(), mu.item()) == (1.25, 2.5)
    s, mu = dg.std_mean(dg.tensor([[1.0, 3.0]]), dim=1, keepdim=True)
    assert s.shape == mu.shape == (1, 1) and s.item() == pytest.approx(math.sqrt(2.0))
    x = dg.tensor([1.0, float("nan"), 2.0])
    assert dg.nansum(x).item() == 3.0 and x.nanmean().item() == 1.5
    assert dg.nanmean(dg.tensor([1.0, 2.0], dtype=np.float32)).dtype == np.float32
    assert grad_of(dg.nanmean, [1.0, float("nan"), 2.0])[0].tolist() == [0.5, 0.0, 0.5]
    c = dg.count_nonzero(dg.tensor([[0.0, 1.0], [2.0, 3.0]]), dim=0)
    assert c.dtype == np.int64 and c.tolist() == [1, 2]


# -- shape and indexing -------------------------------------------------------------------------
def test_stacking_flipping_and_unflatten():
    v = dg.ones(3)
    assert dg.hstack([v, v]).shape == (6,) and dg.hstack([dg.ones(2, 1), dg.ones(2, 2)]).shape == (2, 3)
    assert dg.vstack([v, v]).shape == (2, 3)
    assert dg.dstack([v, v]).shape == (1, 3, 2) and dg.dstack([dg.ones(2, 3)] * 2).shape == (2, 3, 2)
    assert dg.concat([v, v]).shape == (6,)
    assert dg.swapdims(dg.ones(2, 3), 0, 1).shape == (3, 2)
    assert dg.ones(2, 6).unflatten(-1, (2, -1)).shape == (2, 2, 3)
    assert dg.fliplr(dg.tensor([[1.0, 2.0]])).tolist() == [[2.0, 1.0]]
    assert dg.flipud(dg.tensor([1.0, 2.0])).tolist() == [2.0, 1.0]
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        dg.fliplr(v)


def test_select_masked_select_and_nonzero():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert dg.select(x, 1, -1).tolist() == [2.0, 4.0]
    with pytest.raises(IndexError, match="out of range"):
        x.select(0, 2)
    picked = x.masked_select(dg.tensor([True, False]))
    assert picked.tolist() == [1.0, 3.0]
    (g,) = dg.grad(picked.sum(), x)
    assert g.tolist() == [[1.0, 0.0], [1.0, 0.0]]
    with pytest.raises(RuntimeError, match="BoolTensor"):
        dg.masked_select(x, dg.tensor([1, 0]))
    mask = dg.tensor([[0.0, 2.0], [3.0, 0.0]])
    assert dg.nonzero(mask).tolist() == [[0, 1], [1, 0]]
    assert dg.argwhere(mask).tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in mask.nonzero(as_tuple=True)] == [[0, 1], [1, 0]]
    assert [t.tolist() for t in dg.nonzero(dg.tensor(5.0), as_tuple=True)] == [[0]]
    with pytest.raises(RuntimeError, match="vmap: nonzero"):
        dg.vmap(dg.nonzero)(mask)


def test_scatter_and_scatter_add_out_of_place():
    base = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0, 5.0], requires_grad=True)
    index = dg.tensor([2, 0, 2])
    out = dg.scatter(base, 0, index, src)
    assert out.tolist() == [2.0, 0.0, 5.0]  # the last write to a repeated target wins
    g_base, g_src = dg.grad((out * dg.tensor([1.0, 10.0, 100.0])).sum(), (base, src))
    assert g_base.tolist() == [0.0, 10.0, 0.0] and g_src.tolist() == [0.0, 1.0, 100.0]
    assert dg.zeros(2).scatter(0, dg.tensor([1]), value=7.0).tolist() == [0.0, 7.0]
    added = dg.scatter_add(base, 0, index, src)
    assert added.tolist() == [2.0, 0.0, 6.0]
    g_base, g_src = dg.grad((added * dg.tensor([1.0, 10.0, 100.0])).sum(), (base, src))
    assert g_base.tolist() == [1.0, 10.0, 100.0] and g_src.tolist() == [100.0, 1.0, 100.0]
    rows = dg.zeros(2, 3).scatter_add(1, dg.tensor([[0, 0]]), dg.ones(2, 2))
    assert rows.tolist() == [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


# -- products -----------------------------------------------------------------------------------
def test_vdot_and_bmm_batch_check():
    assert dg.vdot(dg.tensor([1j, 2.0]), dg.tensor([1j, 1.0])).item() == 3.0
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        dg.vdot(dg.ones(2, 2), dg.ones(2))
    with pytest.raises(RuntimeError, match="first two dimensions of batch2"):
        dg.bmm(dg.ones(2, 3, 4), dg.ones(1, 4, 5))
