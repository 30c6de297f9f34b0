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
    with pytest.raises(RuntimeError, match="rounding_mode"):
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


def test_lerp_is_exact_at_both_ends_as_torch():
    """torch computes ``end - (end - start) (1 - weight)`` for weights of at least 1/2: weight 1 is ``end``
    (``start + 1 * (end - start)`` is not always: -7.364540870016669 + (-1.6290994799305278 + 7.364540870016669)
    gives -1.6290994799305283)."""
    start, end = dg.tensor([-7.364540870016669, 1e-300, 3.3]), dg.tensor([-1.6290994799305278, -2.2, 1e300])
    assert dg.lerp(start, end, 1.0).tolist() == end.tolist()
    assert dg.lerp(start, end, 0.0).tolist() == start.tolist()
    assert dg.lerp(start, end, dg.tensor([1.0, 0.0, 1.0])).tolist() == [-1.6290994799305278, 1e-300, 1e300]
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    assert dg.lerp(x, dg.tensor([3.0, 5.0]), 0.75).grad_fn._saved_weight == 0.75  # torch 2.13: 0.75


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


# -- ops a torch user missed: erf, median, tensor_split, kron, cross, addmm, det/inverse/logdet ---------
def test_erf_erfc_erfinv_values_and_gradients_equal_torchs():
    x = [-2.5, -0.3, 0.0, 0.2, 1.1, 5.0]
    erf = [-0.999593047982555, -0.3286267594591274, 0.0, 0.22270258921047847, 0.8802050695740817,
           0.9999999999984626]
    erf_grad = [0.00217828423035271, 1.031260909618963, 1.1283791670955126, 1.084134787104863, 0.3364795977932441,
                1.5670866531017336e-11]
    np.testing.assert_allclose(dg.erf(dg.tensor(x)).numpy(), erf, rtol=2e-16, atol=0)
    np.testing.assert_allclose(grad_of(dg.erf, x)[0], erf_grad, rtol=1e-15)
    np.testing.assert_allclose(dg.erfc(dg.tensor(x)).numpy(), [1.999593047982555, 1.3286267594591274, 1.0,
                                                               0.7772974107895215, 0.11979493042591827,
                                                               1.537459794428035e-12], rtol=4e-16, atol=0)
    np.testing.assert_allclose(grad_of(dg.erfc, x)[0], -np.array(erf_grad), rtol=1e-15)
    assert dg.erfc(dg.tensor([10.0, 26.0])).tolist() == [2.088487583762545e-45, 5.663192408856143e-296]
    y = [-0.999, -0.5, 0.0, 0.3, 0.9999999]
    np.testing.assert_allclose(dg.erfinv(dg.tensor(y)).numpy(), [-2.3267537655135246, -0.4769362762044699, 0.0,
                                                                0.2724627147267543, 3.7665625816384707], rtol=3e-16)
    np.testing.assert_allclose(grad_of(dg.erfinv, y)[0], [198.93951776442498, 1.1125848189719496,
                                                          0.8862269254527579, 0.9545203588405493,
                                                          1284925.687325147], rtol=1e-9)
    edges = dg.erfinv(dg.tensor([1.0, -1.0, 1.5, -0.0])).tolist()
    assert edges[:2] == [math.inf, -math.inf] and math.isnan(edges[2]) and math.copysign(1, edges[3]) == -1
    assert dg.erf(dg.tensor([1, 2])).dtype == np.float64
    assert dg.tensor([1.0], dtype=np.float32).erf().dtype == np.float32
    assert dg.erf(dg.tensor([math.inf, -math.inf])).tolist() == [1.0, -1.0]
    with pytest.raises(NotImplementedError, match="complex"):
        dg.erf(dg.tensor([1j]))


def test_median_is_the_lower_median_with_torchs_indices_and_gradients():
    x = dg.tensor([[3.0, 1.0, 2.0, 5.0], [0.0, 1.0, 1.0, 9.0]])
    assert dg.median(x).item() == 1.0
    values, indices = dg.median(x, 1)
    assert values.tolist() == [2.0, 1.0] and indices.tolist() == [2, 1]
    assert x.median(0).indices.tolist() == [1, 0, 1, 0]  # torch's choice among tied values
    kept = dg.median(x, dim=1, keepdim=True)
    assert kept.values.shape == (2, 1) and kept.indices.tolist() == [[2], [1]]
    assert dg.median(dg.tensor([2.0, 1.0, 1.0, 1.0, 3.0]), 0).indices.item() == 3
    assert dg.median(dg.tensor([3, 1, 2, 4])).item() == 2
    assert math.isnan(dg.median(dg.tensor([1.0, math.nan, 2.0])).item())
    assert dg.median(dg.tensor([1.0, math.nan, 2.0]), 0).indices.item() == 1
    # without dim ties share the gradient; with dim it goes to the index returned
    assert grad_of(dg.median, [3.0, 1.0, 2.0, 2.0, 5.0])[0].tolist() == [0.0, 0.0, 0.5, 0.5, 0.0]
    assert grad_of(lambda t: dg.median(t, 0).values, [2.0, 1.0, 2.0, 2.0, 5.0])[0].tolist() == [0, 0, 1, 0, 0]
    t = dg.tensor([1.0, 2.0], requires_grad=True)
    assert dg.median(t).grad_fn.name() == "MedianBackward0"
    assert dg.median(t, 0).values.grad_fn.name() == "MedianBackward1"
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero size"):
        dg.median(dg.zeros(0, 3), 0)


def test_tensor_split_sections_and_indices_as_torch():
    x = dg.arange(7.0)
    assert [p.tolist() for p in dg.tensor_split(x, 3)] == [[0.0, 1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert [p.tolist() for p in x.tensor_split([5, 2])] == [[0.0, 1.0, 2.0, 3.0, 4.0], [], [2.0, 3.0, 4.0, 5.0, 6.0]]
    assert [len(p) for p in dg.tensor_split(x, [-10, 3])] == [0, 3, 4]
    assert [len(p) for p in dg.tensor_split(x, indices=[2, 10])] == [2, 5, 0]
    assert [len(p) for p in dg.tensor_split(x, dg.tensor([1, 3]))] == [1, 2, 4]
    assert [len(p) for p in dg.tensor_split(x, dg.tensor(2))] == [4, 3]
    assert [len(p) for p in dg.tensor_split(dg.arange(2.0), sections=4)] == [1, 1, 0, 0]
    assert [p.shape for p in dg.tensor_split(dg.zeros(2, 5), 3, dim=1)] == [(2, 2), (2, 2), (2, 1)]
    assert grad_of(lambda t: dg.tensor_split(t, [3, 1])[1].sum() * 0 + dg.tensor_split(t, [3, 1])[2].sum() * 2,
                   [1.0, 2.0, 3.0, 4.0])[0].tolist() == [0.0, 2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        dg.tensor_split(x, 0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional tensor"):
        dg.tensor_split(dg.tensor(1.0), 2)


def test_kron_cross_addmm_and_ger_values_and_gradients_equal_torchs():
    k1, k2 = [[1.0, 2.0]], [[1.0], [10.0], [100.0]]
    weights = dg.arange(6.0).reshape(3, 2)
    assert dg.kron(dg.tensor(k1), dg.tensor(k2)).tolist() == [[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]]
    assert [g.tolist() for g in grad_of(lambda a, b: dg.kron(a, b) * weights, k1, k2)] == [
        [[420.0, 531.0]], [[2.0], [8.0], [14.0]]]
    assert dg.kron(dg.ones(2, 3), dg.ones(4, 1, 5)).shape == (4, 2, 15)
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[0.0, 1.0, 2.0]]
    assert dg.linalg.cross(dg.tensor(a), dg.tensor(b)).tolist() == [[1.0, -2.0, 1.0], [4.0, -8.0, 4.0]]
    assert [g.tolist() for g in grad_of(lambda s, t: dg.linalg.cross(s, t) * dg.tensor([1.0, 2.0, 3.0]), a, b)] == [
        [[-1.0, 2.0, -1.0], [-1.0, 2.0, -1.0]], [[-3.0, 6.0, -3.0]]]
    assert dg.cross(dg.eye(3), dg.ones(3, 3)).tolist() == [[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]]
    assert dg.tensor([1, 0, 0]).cross(dg.tensor([0, 1, 0]), dim=0).tolist() == [0, 0, 1]
    for call, message in [
        (lambda: dg.linalg.cross(dg.ones(2, 3), dg.ones(3)), "inputs must have the same number of dimensions"),
        (lambda: dg.linalg.cross(dg.ones(3, 2), dg.ones(3, 2)), "inputs dimension -1 must have length 3. Got 2 and 2"),
        (lambda: dg.cross(dg.ones(2, 2), dg.ones(2, 2)), "no dimension of size 3 in input"),
        (lambda: dg.addmm(dg.ones(2), dg.ones(2), dg.ones(2, 2)), "mat1 must be a matrix, got 1-D tensor"),
        (lambda: dg.ger(dg.ones(2, 2), dg.ones(2)), "outer: Expected 1-D argument self, but got 2-D"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()
    out = dg.addmm(dg.tensor([1.0, 2.0]), dg.tensor([[1.0, 2.0], [3.0, 4.0]]), dg.tensor([[0.0, 1.0], [1.0, 1.0]]),
                   beta=0.5, alpha=2)
    assert out.tolist() == [[4.5, 7.0], [8.5, 15.0]]
    grads = grad_of(lambda i, m1, m2: dg.addmm(i, m1, m2, beta=0.5, alpha=2), [1.0, 2.0], [[1.0, 2.0], [3.0, 4.0]],
                    [[0.0, 1.0], [1.0, 1.0]])
    assert [g.tolist() for g in grads] == [[1.0, 1.0], [[2.0, 4.0], [2.0, 4.0]], [[8.0, 8.0], [12.0, 12.0]]]
    assert dg.addmm(dg.tensor([math.nan, 2.0]), dg.eye(2), dg.eye(2), beta=0).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert dg.ger(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 3.0])).tolist() == [[1.0, 3.0], [2.0, 6.0]]


def test_top_level_det_inverse_and_logdet():
    m = [[1.0, 2.0], [0.5, 3.0]]
    assert dg.det(dg.tensor(m)).item() == 2.0 and dg.tensor(m).det().item() == 2.0
    assert dg.inverse(dg.tensor(m)).tolist() == [[1.5, -1.0], [-0.25, 0.5]]
    assert dg.logdet(dg.tensor(m)).item() == math.log(2.0)
    np.testing.assert_allclose(grad_of(dg.logdet, m)[0], [[1.5, -0.25], [-1.0, 0.5]], rtol=1e-15)
    assert math.isnan(dg.logdet(dg.tensor([[-1.0, 0.0], [0.0, 2.0]])).item())
    assert grad_of(dg.logdet, [[-1.0, 0.0], [0.0, 2.0]])[0].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert dg.logdet(dg.zeros(2, 2)).item() == -math.inf
    assert dg.tensor([[-1.0, 0.0], [0.0, 1.0]]).logdet().tolist() != dg.logdet(dg.eye(2)).tolist()
    np.testing.assert_allclose(dg.logdet(dg.tensor([[-1.0 + 0j, 0.0], [0.0, 2.0]])).item(), math.log(2) + math.pi * 1j)
    assert dg.logdet(dg.stack([dg.eye(2), -dg.eye(2)])).tolist() == [0.0, 0.0]


# -- linalg: solve's vector rule and left=, qr(mode='r') -------------------------------------------------
def test_solve_reads_b_as_vectors_by_torchs_rule_and_solves_from_the_right():
    a = dg.tensor([[2.0, 1.0], [1.0, 3.0]])
    stack, b = dg.stack([a, 2 * a]), dg.tensor([[1.0, 1.0], [2.0, 0.0]])
    np.testing.assert_allclose(dg.linalg.solve(stack, b).numpy(), [[0.4, 0.2], [0.6, -0.2]], rtol=1e-15)
    np.testing.assert_allclose(grad_of(lambda s: dg.linalg.solve(dg.stack([s, 2 * s]), b), a.tolist())[0],
                               [[-0.4, 0.0], [-0.2, 0.0]], atol=1e-15)
    assert np.linalg.solve(stack, b).shape == (2, 2, 2)  # NumPy's function keeps NumPy 2's rule: a matrix
    rhs = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    np.testing.assert_allclose(dg.linalg.solve(a, dg.tensor(rhs), left=False).numpy(),
                               [[0.2, 0.6], [1.0, 1.0], [1.8, 1.4]], rtol=1e-15)
    np.testing.assert_allclose(grad_of(lambda s: dg.linalg.solve(s, dg.tensor(rhs), left=False), a.tolist())[0],
                               [[-1.2, -0.6], [-1.2, -0.6]], rtol=1e-15)
    for call, equation in [(lambda: dg.linalg.solve(stack, dg.ones(1, 2)), "AX = B (2x2 and 1x2)"),
                           (lambda: dg.linalg.solve(a, dg.ones(2), left=False), "XA = B (2x2 and 2x1)")]:
        with pytest.raises(RuntimeError, match=rf"linalg.solve: Incompatible shapes of A and B for the equation "
                                                rf"{equation.replace('(', '[(]').replace(')', '[)]')}"):
            call()


def test_qr_mode_r_returns_an_empty_q_as_torch_and_r_alone_through_numpy():
    a = dg.tensor([[3.0, 0.0], [4.0, 1.0]])
    q, r = dg.linalg.qr(a, mode="r")
    assert q.shape == (0,) and q.dtype == np.float64
    np.testing.assert_allclose(r.numpy(), [[-5.0, -0.8], [0.0, 0.6]], rtol=1e-15)
    np.testing.assert_allclose(np.linalg.qr(a, mode="r").numpy(), r.numpy())


# -- error types torch users catch ------------------------------------------------------------------------
def test_integers_to_negative_integer_powers_raise_runtime_error():
    for call in [lambda: dg.tensor([2, 3]) ** -1, lambda: dg.pow(dg.tensor([2]), -2),
                 lambda: dg.tensor([True]) ** -1, lambda: dg.tensor([2, 3]).pow_(-1)]:
        with pytest.raises(RuntimeError, match=r"^Integers to negative integer powers are not allowed.$"):
            call()
    assert dg.tensor([2, 4]).pow(-1.0).tolist() == [0.5, 0.25]


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_max_and_min_of_nothing_raise_torchs_errors(name):
    fn = getattr(dg, name)
    with pytest.raises(RuntimeError, match=rf"^{name}\(\): Expected reduction dim to be specified for "
                                           rf"input.numel\(\) == 0. Specify the reduction dim with the 'dim' "
                                           rf"argument.$"):
        fn(dg.zeros(0, 3))
    with pytest.raises(IndexError, match=rf"^{name}\(\): Expected reduction dim 0 to have non-zero size.$"):
        fn(dg.zeros(0, 3), 0)
    assert tuple(dg.amax(dg.zeros(0, 3), 1).shape) == (0,)


def test_indexing_with_an_empty_list_selects_nothing():
    x = dg.arange(6.0).reshape(2, 3).requires_grad_()
    assert x[[]].shape == (0, 3) and x[[]].dtype == np.float64
    assert x[:, []].shape == (2, 0) and x[[], 0].shape == (0,)
    assert dg.grad(x[[]].sum(), x)[0].tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    y = dg.ones(2, 3)
    y[[]] = 5.0
    assert y.tolist() == [[1.0] * 3] * 2


# -- torch's aliases, shifts, value tests, nan_to_num, complex/polar --------------------------------
def test_torch_aliases_are_the_ops_as_functions_and_methods():
    x, y = dg.tensor([1.0, 2.0, 3.0]), dg.tensor([2.0, 2.0, 2.0])
    for alias, name in [("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                        ("not_equal", "ne"), ("multiply", "mul"), ("divide", "div"), ("subtract", "sub")]:
        assert getattr(dg, alias)(x, y).tolist() == getattr(dg, name)(x, y).tolist()
        assert getattr(x, alias)(y).tolist() == getattr(dg, name)(x, y).tolist()
    assert dg.negative(x).tolist() == [-1.0, -2.0, -3.0] and dg.absolute(-x).tolist() == [1.0, 2.0, 3.0]
    assert dg.divide(dg.tensor([7.0]), 2, rounding_mode="floor").tolist() == [3.0]
    assert dg.tensor([1.0]).subtract(2, alpha=2).tolist() == [-3.0]
    assert dg.clamp_min(dg.tensor([1.0, -2.0]), 0).tolist() == [1.0, 0.0]
    clamped = dg.clamp_max(dg.tensor([1, -2]), 0.5)
    assert clamped.dtype == np.float64 and clamped.tolist() == [0.5, -2.0]
    assert grad_of(lambda t: t.clamp_min(0.0), [-1.0, 2.0])[0].tolist() == [0.0, 1.0]
    assert dg.positive(x) is x
    with pytest.raises(RuntimeError, match="`\\+` operator, on a bool tensor"):
        dg.positive(dg.tensor([True]))


def test_in_place_forms_of_the_aliases():
    x = dg.tensor([1.0, -2.0, 4.0])
    x.multiply_(3).subtract_(1, alpha=2).clamp_min_(0.0)
    assert x.tolist() == [1.0, 0.0, 10.0]
    x.negative_()
    assert x.tolist() == [-1.0, -0.0, -10.0]
    leaf = dg.tensor([0.5, 0.25], requires_grad=True)
    y = leaf * 1
    y.arcsin_()
    (g,) = dg.grad(y.sum(), leaf)
    assert np.allclose(g.numpy(), 1 / np.sqrt(1 - np.array([0.25, 0.0625])))


def test_shifts_of_integer_tensors():
    a = dg.tensor([1, -8, 3])
    assert (a << 2).tolist() == [4, -32, 12] and (a >> 1).tolist() == [0, -4, 1]
    assert (a << dg.tensor([1, 2, 70])).tolist() == [2, -32, 0]  # past the width: 0
    assert (a >> dg.tensor([1, 2, 70])).tolist() == [0, -2, 0]  # arithmetic: the sign stays
    assert (2 << dg.tensor([1, 3])).tolist() == [4, 16] and (64 >> dg.tensor([1, 3])).tolist() == [32, 8]
    assert dg.bitwise_left_shift(dg.tensor([True]), 1).tolist() == [2]
    assert a.bitwise_right_shift(1).tolist() == dg.bitwise_right_shift(a, 1).tolist() == [0, -4, 1]
    assert (dg.tensor([1], dtype=dg.uint8) << 9).tolist() == [0]
    b = dg.tensor([1, 2])
    b <<= 2
    b >>= 1
    b.bitwise_left_shift_(1)
    assert b.tolist() == [4, 8]
    with pytest.raises(NotImplementedError, match='"lshift_cpu" not implemented for \'Float\''):
        dg.tensor([1.5], dtype=dg.float32) << 1
    with pytest.raises(NotImplementedError, match="rshift_cpu"):
        a >> 1.5


def test_sign_and_infinity_tests():
    inf = float("inf")
    assert dg.signbit(dg.tensor([-0.0, 1.0, -2.0])).tolist() == [True, False, True]
    assert dg.tensor([inf, -inf, 1.0]).isposinf().tolist() == [True, False, False]
    assert dg.isneginf(dg.tensor([inf, -inf, 1.0])).tolist() == [False, True, False]
    assert dg.isneginf(dg.tensor([1])).tolist() == [False]
    assert dg.isreal(dg.tensor([1 + 0j, 1j])).tolist() == [True, False]
    assert dg.tensor([1.0]).isreal().tolist() == [True]
    with pytest.raises(RuntimeError, match="signbit does not support complex"):
        dg.signbit(dg.tensor([1j]))
    with pytest.raises(RuntimeError, match="isposinf does not support complex"):
        dg.isposinf(dg.tensor([1j]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sign_of_nan_is_zero_and_so_is_abs_gradient_there(dtype):
    # torch 2.13: sign(nan) == sgn(nan) == 0, so abs's gradient and tangent there are 0 (not nan)
    values = [math.nan, -2.0, 0.0, 3.0]
    assert dg.sign(dg.tensor(values, dtype=dtype)).tolist() == [0.0, -1.0, 0.0, 1.0]
    assert dg.sgn(dg.tensor(values, dtype=dtype)).dtype == dtype
    assert dg.sign(dg.tensor(math.nan)).item() == 0.0
    x = dg.tensor(values, requires_grad=True)
    assert grad_of(dg.abs, values)[0].tolist() == [0.0, -1.0, 0.0, 1.0]
    with dg.forward_ad.dual_level():
        tangent = dg.forward_ad.unpack_dual(dg.abs(dg.forward_ad.make_dual(x.detach(), dg.ones(4)))).tangent
    assert tangent.tolist() == [0.0, -1.0, 0.0, 1.0]
    y = dg.tensor([math.nan, 2.0])
    y.sign_()
    assert y.tolist() == [0.0, 1.0]


def test_nan_to_num_replaces_and_gives_a_zero_gradient_there():
    inf, nan = float("inf"), float("nan")
    x = dg.tensor([nan, inf, -inf, 1.5], dtype=dg.float32, requires_grad=True)
    y = dg.nan_to_num(x)
    assert y.dtype == np.float32 and y.tolist() == [0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.5]
    (g,) = dg.grad(y.sum(), x)
    assert g.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert x.detach().nan_to_num(nan=2.0, posinf=1.0, neginf=-1.0).tolist() == [2.0, 1.0, -1.0, 1.5]
    assert dg.nan_to_num(dg.tensor([1, 2])).tolist() == [1, 2]
    z = dg.nan_to_num(dg.tensor([complex(nan, inf)]), posinf=5.0)
    assert z.tolist() == [5j]
    w = dg.tensor([nan, 3.0])
    w.nan_to_num_(nan=-1.0)
    assert w.tolist() == [-1.0, 3.0]


def test_nan_to_num_selects_the_gradient_where_the_input_is_finite():
    """torch's NanToNumBackward0: 0 where a value was replaced, even for an inf or NaN gradient."""
    x = dg.tensor([float("nan"), float("inf"), -float("inf"), 1.5], requires_grad=True)
    y = dg.nan_to_num(x, posinf=9.0, neginf=-9.0)
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 9.0, -9.0, 1.5])
    (g,) = dg.grad(y, x, dg.tensor([np.inf, np.nan, 1.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0, 2.0])
    _, tangent = dg.func.jvp(lambda x: dg.nan_to_num(x), (x.detach(),), (dg.ones(4),))
    np.testing.assert_array_equal(tangent.numpy(), [0.0, 0.0, 0.0, 1.0])
    assert dg.nan_to_num(x.detach(), nan=None).tolist()[0] == 0.0  # (None is torch's default 0)


def test_complex_and_polar_are_differentiable_and_check_dtypes():
    z = dg.complex(dg.tensor([1.0, 2.0], dtype=dg.float32), dg.tensor([3.0, -4.0], dtype=dg.float32))
    assert z.dtype == np.complex64 and z.tolist() == [1 + 3j, 2 - 4j]
    weights = dg.tensor([1 + 2j, 3 - 1j])
    gr, gi = grad_of(lambda r, i: (dg.complex(r, i) * weights).abs(), [1.0, 2.0], [3.0, 4.0])
    assert np.allclose(gr, [0.70710678, 1.41421356]) and np.allclose(gi, [2.12132034, 2.82842712])
    ga, gt = grad_of(lambda r, t: (dg.polar(r, t) * weights).abs(), [1.0, 2.0], [3.0, 4.0])
    assert np.allclose(ga, [2.23606798, 3.16227766]) and np.allclose(gt, [0.0, 0.0], atol=1e-12)
    assert np.allclose(dg.polar(dg.tensor([2.0]), dg.tensor([math.pi])).numpy(), [-2.0])
    with pytest.raises(RuntimeError, match="Expected object of scalar type Double but got scalar type Float"):
        dg.complex(dg.tensor([1.0]), dg.tensor([2.0], dtype=dg.float32))
    with pytest.raises(RuntimeError, match="Half, Float or Double tensors but got Long and Long"):
        dg.complex(dg.tensor([1]), dg.tensor([2]))


# -- diff, meshgrid, atleast_nd, block_diag, cartesian_prod, rot90, trapezoid -------------------------
def test_diff_orders_dims_prepend_append_and_errors():
    x = dg.tensor([1.0, 4.0, 9.0, 16.0])
    assert dg.diff(x).tolist() == [3.0, 5.0, 7.0] and x.diff(n=2).tolist() == [2.0, 2.0]
    assert dg.diff(x, n=0).tolist() == x.tolist() and dg.diff(x, n=5).shape == (0,)
    assert dg.diff(x, prepend=dg.tensor([0.0]), append=dg.tensor([20.0])).tolist() == [1.0, 3.0, 5.0, 7.0, 4.0]
    assert dg.diff(dg.tensor([[1, 2], [4, 8]]), dim=0).tolist() == [[3, 6]]
    assert dg.diff(dg.tensor([True, False, False])).tolist() == [True, False]
    assert grad_of(lambda t: dg.diff(t, n=2) * dg.tensor([1.0, 10.0]), [1.0, 2.0, 4.0, 7.0])[0].tolist() == \
        [1.0, 8.0, -19.0, 10.0]
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        dg.diff(dg.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        dg.diff(x, n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        dg.diff(x, prepend=dg.tensor([[0.0]]))
    with pytest.raises(TypeError, match="argument 'prepend' must be Tensor, not float"):
        dg.diff(x, prepend=0.0)


def test_meshgrid_indexing_and_errors():
    a, b = dg.tensor([1, 2]), dg.tensor([3, 4, 5])
    gi, gj = dg.meshgrid(a, b, indexing="ij")
    assert gi.tolist() == [[1, 1, 1], [2, 2, 2]] and gj.tolist() == [[3, 4, 5], [3, 4, 5]]
    gx, gy = dg.meshgrid([a, b], indexing="xy")
    assert gx.tolist() == [[1, 2]] * 3 and gy.tolist() == [[3, 3], [4, 4], [5, 5]]
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        assert dg.meshgrid(a, b)[0].shape == (2, 3)
    leaf = dg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = dg.grad(dg.meshgrid(leaf, dg.tensor([0.0, 0.0, 0.0]), indexing="ij")[0].sum(), leaf)
    assert g.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        dg.meshgrid(dg.ones(2, 2), indexing="ij")
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: foo'):
        dg.meshgrid(a, indexing="foo")
    with pytest.raises(RuntimeError, match="same dtype"):
        dg.meshgrid(a, dg.tensor([1.0]), indexing="ij")
    with pytest.raises(RuntimeError, match="non-empty TensorList"):
        dg.meshgrid(indexing="ij")


def test_atleast_nd_block_diag_cartesian_prod():
    assert dg.atleast_1d(dg.tensor(1.0)).shape == (1,) and dg.atleast_2d(dg.tensor([1.0, 2.0])).shape == (1, 2)
    assert dg.atleast_3d(dg.ones(2)).shape == (1, 2, 1) and dg.atleast_3d(dg.ones(2, 3)).shape == (2, 3, 1)
    pair = dg.atleast_1d(dg.tensor(1.0), dg.tensor(2.0))
    assert isinstance(pair, tuple) and [t.shape for t in pair] == [(1,), (1,)]
    assert isinstance(dg.atleast_1d([dg.tensor(1.0)]), tuple) and dg.atleast_1d() == ()
    blocks = dg.block_diag(dg.tensor([[1, 2], [3, 4]]), dg.tensor(5.0), dg.tensor([6, 7]))
    assert blocks.dtype == np.float64 and blocks.tolist() == [
        [1, 2, 0, 0, 0], [3, 4, 0, 0, 0], [0, 0, 5, 0, 0], [0, 0, 0, 6, 7]]
    assert dg.block_diag().shape == (1, 0)
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        dg.block_diag(dg.ones(2, 2, 2))
    assert grad_of(lambda t: dg.block_diag(t, t) * 2, [1.0, 2.0])[0].tolist() == [4.0, 4.0]
    assert dg.cartesian_prod(dg.tensor([1, 2]), dg.tensor([3, 4])).tolist() == [[1, 3], [1, 4], [2, 3], [2, 4]]
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        dg.cartesian_prod(dg.ones(2, 2))


def test_rot90_turns_and_errors():
    a = dg.arange(6.0).reshape(2, 3)
    assert dg.rot90(a).tolist() == [[2.0, 5.0], [1.0, 4.0], [0.0, 3.0]]
    assert a.rot90(2).tolist() == [[5.0, 4.0, 3.0], [2.0, 1.0, 0.0]]
    assert dg.rot90(a, -1).tolist() == dg.rot90(a, 1, [1, 0]).tolist() == [[3.0, 0.0], [4.0, 1.0], [5.0, 2.0]]
    assert dg.rot90(a, 4).tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="rotation dims to be different"):
        dg.rot90(a, 1, [0, 0])
    with pytest.raises(RuntimeError, match="expected total dims >= 2"):
        dg.rot90(dg.ones(2))
    with pytest.raises(RuntimeError, match="total rotation dims == 2"):
        dg.rot90(a, 1, [0, 1, 2])


def test_trapezoid_and_cumulative_trapezoid():
    y = dg.tensor([1.0, 4.0, 9.0, 16.0])
    points = dg.tensor([0.0, 1.0, 3.0, 4.0])
    assert dg.trapezoid(y).item() == 21.5 and dg.trapezoid(y, dx=2).item() == dg.trapz(y, dx=2).item() == 43.0
    assert dg.trapezoid(y, points).item() == 28.0
    assert dg.cumulative_trapezoid(y).tolist() == [2.5, 9.0, 21.5]
    assert dg.cumulative_trapezoid(y, points).tolist() == [2.5, 15.5, 28.0]
    assert dg.trapezoid(dg.ones(2, 3), dim=0).tolist() == [1.0, 1.0, 1.0]
    assert dg.trapezoid(dg.ones(0)).item() == 0.0
    gy, gx = grad_of(dg.trapezoid, [1.0, 4.0, 9.0], [0.0, 1.0, 3.0])
    assert gy.tolist() == [0.5, 1.5, 1.0] and gx.tolist() == [-2.5, -4.0, 6.5]
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        dg.trapezoid(y, dg.tensor([0.0, 1.0]))


# -- topk, kthvalue, msort -------------------------------------------------------------------------
def test_topk_kthvalue_msort():
    x = dg.tensor([[1.0, 5.0, 3.0, 4.0], [2.0, 0.0, 7.0, 1.0]])
    values, indices = dg.topk(x, 2)
    assert values.tolist() == [[5.0, 4.0], [7.0, 2.0]] and indices.tolist() == [[1, 3], [2, 0]]
    values, indices = x.topk(1, dim=0, largest=False, sorted=True)
    assert values.tolist() == [[1.0, 0.0, 3.0, 1.0]] and indices.tolist() == [[0, 1, 0, 1]]
    assert dg.topk(x, 0).values.shape == (2, 0)
    values, indices = dg.kthvalue(x, 2)
    assert values.tolist() == [3.0, 1.0] and indices.tolist() == [2, 3]
    assert x.kthvalue(1, 0, keepdim=True).values.tolist() == [[1.0, 0.0, 3.0, 1.0]]
    assert dg.msort(x).tolist() == [[1.0, 0.0, 3.0, 1.0], [2.0, 5.0, 7.0, 4.0]]
    assert grad_of(lambda t: dg.topk(t, 2).values * dg.tensor([1.0, 10.0]), [1.0, 5.0, 3.0, 4.0])[0].tolist() == \
        [0.0, 1.0, 0.0, 10.0]
    assert grad_of(lambda t: dg.kthvalue(t, 2).values, [1.0, 5.0, 3.0])[0].tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        dg.topk(x, 5)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        dg.kthvalue(x, 0)


# -- index_add, index_copy, index_fill, masked_scatter, put, index_put ----------------------------
def _grads(out, *inputs, weights=(1.0, 10.0, 100.0)):
    """The gradients of ``sum(out * weights)`` (weights along the last dimension)."""
    return [g.tolist() for g in dg.grad((out * dg.tensor(weights)).sum(), inputs, materialize_grads=True)]


def test_index_add():
    x = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0], requires_grad=True)
    out = dg.index_add(x, 0, dg.tensor([1, 1]), src, alpha=3)
    assert out.tolist() == [0.0, 9.0, 0.0]  # repeated indices accumulate
    assert _grads(out, x, src) == [[1.0, 10.0, 100.0], [30.0, 30.0]]
    rows = dg.zeros(3, 2).index_add(0, dg.tensor([0, 2, 0]), dg.ones(3, 2), alpha=2)
    assert rows.tolist() == [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0]]
    assert dg.index_add(dg.tensor(1.0), 0, dg.tensor([0]), dg.tensor(2.0)).tolist() == 3.0
    ints = dg.index_add(dg.zeros(3, dtype=dg.int64), 0, dg.tensor([0, 0]), dg.tensor([1, 2]))
    assert ints.dtype == np.int64 and ints.tolist() == [3, 0, 0]
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, 3]), dg.ones(2, 2))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, -1]), dg.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, 2]), dg.ones(3, 2))
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, 2]), dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="must have the same dtype"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, 2]), dg.ones(2, 2, dtype=dg.float32))
    with pytest.raises(RuntimeError, match="integer dtype for index"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0.0, 2.0]), dg.ones(2, 2))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        dg.index_add(dg.zeros(3, 2), 0, dg.tensor([[0, 2]]), dg.ones(2, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.index_add(dg.zeros(3, 2), 2, dg.tensor([0, 2]), dg.ones(2, 2))


def test_index_copy():
    x = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0], requires_grad=True)
    out = dg.index_copy(x, 0, dg.tensor([1, 1]), src)
    assert out.tolist() == [0.0, 2.0, 0.0]  # the last write wins
    # as torch: zero for the copied slices of x, every repeat of an index gets the gradient there
    assert _grads(out, x, src) == [[1.0, 0.0, 100.0], [10.0, 10.0]]
    cols = dg.zeros(2, 3).index_copy(1, dg.tensor([2, 0]), dg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert cols.tolist() == [[2.0, 0.0, 1.0], [4.0, 0.0, 3.0]]
    assert dg.index_copy(dg.zeros(3), 0, dg.tensor(1), dg.tensor(1.0)).tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0 with size 3"):
        dg.index_copy(dg.zeros(3), 0, dg.tensor([-1]), dg.ones(1))
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        dg.index_copy(dg.zeros(3, 2), 0, dg.tensor([1]), dg.ones(2))
    with pytest.raises(RuntimeError, match="same dtype"):
        dg.index_copy(dg.zeros(3), 0, dg.tensor([1]), dg.ones(1, dtype=dg.float32))


def test_index_fill():
    x = dg.zeros(3, requires_grad=True)
    value = dg.tensor(1.0, requires_grad=True)
    out = dg.index_fill(x, 0, dg.tensor([1, 2]), value)
    assert out.tolist() == [0.0, 1.0, 1.0]
    assert _grads(out, x, value) == [[1.0, 0.0, 0.0], 110.0]
    assert dg.zeros(2, 3).index_fill(1, dg.tensor([0, -1]), 5).tolist() == [[5.0, 0.0, 5.0], [5.0, 0.0, 5.0]]
    ints = dg.index_fill(dg.tensor([1, 2]), 0, dg.tensor([0]), 2.5)
    assert ints.dtype == np.int64 and ints.tolist() == [2, 2]  # the value is cast to the tensor's dtype
    assert dg.index_fill(dg.tensor(1.0), 0, dg.tensor(0), 3).tolist() == 3.0
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        dg.index_fill(dg.zeros(3), 0, dg.tensor([3]), 1.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        dg.index_fill(dg.zeros(3), 0, dg.tensor([1]), dg.ones(1))


def test_masked_scatter():
    x = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = dg.masked_scatter(x, dg.tensor([False, True, True]), src)
    assert out.tolist() == [0.0, 1.0, 2.0]
    assert _grads(out, x, src) == [[1.0, 0.0, 0.0], [10.0, 100.0, 0.0]]
    src = dg.arange(1.0, 7.0).reshape(2, 3)
    mask = dg.tensor([[True, False], [False, True], [True, True]])
    assert dg.zeros(3, 2).masked_scatter(mask, src).tolist() == [[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]
    # self broadcasts with the mask (out of place)
    assert dg.masked_scatter(dg.zeros(2), dg.ones(3, 2, dtype=dg.bool), src).tolist() == \
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        dg.masked_scatter(dg.zeros(3), dg.tensor([1, 0, 1]), dg.ones(3))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        dg.masked_scatter(dg.zeros(3), dg.tensor([True, False, True]), dg.ones(1))
    with pytest.raises(RuntimeError, match="same dtypes"):
        dg.masked_scatter(dg.zeros(3), dg.tensor([True, False, True]), dg.ones(3, dtype=dg.float32))
    with pytest.raises(RuntimeError, match="must match"):
        dg.masked_scatter(dg.zeros(3), dg.ones(2, dtype=dg.bool), dg.ones(3))


def test_put():
    x = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0], requires_grad=True)
    out = dg.put(x, dg.tensor([1, 1]), src)
    assert out.tolist() == [0.0, 2.0, 0.0]
    assert _grads(out, x, src) == [[1.0, 0.0, 100.0], [10.0, 10.0]]
    added = x.put(dg.tensor([1, -1, 1]), dg.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert added.tolist() == [0.0, 4.0, 2.0]
    assert _grads(added, x) == [[1.0, 10.0, 100.0]]
    square = dg.put(dg.zeros(2, 2), dg.tensor([0, 3, 0]), dg.tensor([1.0, 2.0, 3.0]))
    assert square.tolist() == [[3.0, 0.0], [0.0, 2.0]]
    with pytest.raises(IndexError, match="out of range: tried to access index 4 on a tensor of 4 elements"):
        dg.put(dg.zeros(2, 2), dg.tensor([0, 4]), dg.ones(2))
    with pytest.raises(IndexError, match="index -5"):
        dg.put(dg.zeros(2, 2), dg.tensor([0, -5]), dg.ones(2))
    with pytest.raises(IndexError, match=r"same number of elements, but got source.numel\(\) = 3, index.numel\(\) = 2"):
        dg.put(dg.zeros(2, 2), dg.tensor([0, 1]), dg.ones(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        dg.put(dg.zeros(2, 2), dg.tensor([0, 1]), dg.ones(2, dtype=dg.float32))


def test_index_put():
    x = dg.zeros(3, requires_grad=True)
    src = dg.tensor([1.0, 2.0], requires_grad=True)
    out = dg.index_put(x, (dg.tensor([1, 1]),), src)
    assert out.tolist() == [0.0, 2.0, 0.0]
    assert _grads(out, x, src) == [[1.0, 0.0, 100.0], [10.0, 10.0]]
    added = dg.index_put(x, [dg.tensor([1, 1])], src, accumulate=True)
    assert added.tolist() == [0.0, 3.0, 0.0]
    assert _grads(added, x, src) == [[1.0, 10.0, 100.0], [10.0, 10.0]]
    rows, cols = dg.tensor([0, 1, 0]), dg.tensor([1, 1, 1])
    y = dg.zeros(2, 2)
    assert y.index_put((rows, cols), dg.tensor([1.0, 2.0, 3.0])).tolist() == [[0.0, 3.0], [0.0, 2.0]]
    assert dg.index_put(y, (rows, cols), dg.tensor([1.0, 2.0, 3.0]), True).tolist() == [[0.0, 4.0], [0.0, 2.0]]
    assert dg.index_put(y, (rows,), dg.tensor([1.0, 2.0]), accumulate=True).tolist() == [[2.0, 4.0], [1.0, 2.0]]
    mask = dg.tensor([[True, False, True], [False, False, True]])
    assert dg.index_put(dg.zeros(2, 3), (mask,), dg.tensor([1.0, 2.0, 3.0]), accumulate=True).tolist() == \
        [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        dg.index_put(y, (dg.tensor([0, 2]),), dg.tensor(5.0))
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 2\]"):
        dg.index_put(y, (dg.tensor([0, 1]),), dg.ones(3), accumulate=True)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        dg.index_put(y, (dg.tensor([0, 1]),), dg.ones(2, dtype=dg.float32))
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        dg.index_put(y, (dg.tensor([1.0]),), dg.ones(1))
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        dg.index_put(y, (dg.tensor([1]),) * 3, dg.ones(1))
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        dg.index_put(y, dg.tensor([1]), dg.ones(1))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        dg.index_put(y, (dg.tensor([1]),), 3.0)


def test_index_family_under_vmap_matches_a_loop():
    x, src = dg.arange(24.0).reshape(4, 3, 2), dg.arange(16.0).reshape(4, 2, 2)

    def fn(x, s):
        out = dg.index_add(x, 0, dg.tensor([0, 2]), s).index_copy(0, dg.tensor([1]), s[:1] * 2)
        out = dg.masked_scatter(out, dg.tensor([[True, False], [False, True], [True, True]]), s)
        return dg.index_put(dg.put(out, dg.tensor([5, 0]), s[0], accumulate=True), (dg.tensor([1]),), s[1:, 0])

    np.testing.assert_array_equal(dg.vmap(fn)(x, src).numpy(), dg.stack([fn(a, b) for a, b in zip(x, src)]).numpy())


# -- cummax, cummin, logcumsumexp -----------------------------------------------------------------
def test_cummax_and_cummin():
    x = dg.tensor([1.0, 3.0, 3.0, 2.0, 5.0, 5.0], requires_grad=True)
    values, indices = dg.cummax(x, 0)
    assert values.tolist() == [1.0, 3.0, 3.0, 3.0, 5.0, 5.0]
    assert indices.tolist() == [0, 1, 2, 2, 4, 5] and indices.dtype == np.int64  # ties: the last index
    (g,) = dg.grad(values, x, dg.arange(1.0, 7.0))
    assert g.tolist() == [1.0, 2.0, 7.0, 0.0, 5.0, 6.0]  # each value's gradient goes to its index
    values, indices = dg.tensor([3.0, 1.0, 1.0, 2.0, 0.0, 0.0]).cummin(0)
    assert values.tolist() == [3.0, 1.0, 1.0, 1.0, 0.0, 0.0] and indices.tolist() == [0, 1, 2, 2, 4, 5]
    values, indices = dg.cummax(dg.tensor([1.0, math.nan, 3.0, math.nan, 5.0]), 0)
    assert np.isnan(values.numpy()[1:]).all() and indices.tolist() == [0, 1, 1, 3, 3]  # NaN propagates
    assert dg.cummin(dg.tensor([1.0, math.nan, 3.0]), 0).indices.tolist() == [0, 1, 1]
    values, indices = dg.tensor([[1.0, 4.0], [3.0, 2.0], [0.0, 5.0]]).cummin(0)
    assert values.tolist() == [[1.0, 4.0], [1.0, 2.0], [0.0, 2.0]] and indices.tolist() == [[0, 0], [0, 1], [2, 1]]
    assert dg.cummax(dg.tensor([True, False, True]), 0).indices.tolist() == [0, 0, 2]
    assert dg.cummax(dg.tensor([1, 3, 2]), -1).values.tolist() == [1, 3, 3]
    values, indices = dg.cummax(dg.tensor(2.0), 0)
    assert values.shape == () and indices.tolist() == 0
    assert dg.cummax(dg.ones(2, 0), 1).indices.shape == (2, 0)
    batch = dg.tensor([[1.0, 0.0, 2.0], [2.0, 3.0, 1.0]])
    assert dg.vmap(lambda r: dg.cummax(r, 0).indices)(batch).tolist() == [[0, 0, 2], [0, 1, 1]]
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.cummax(dg.ones(2, 3), 2)
    with pytest.raises(NotImplementedError, match="complex"):
        dg.cummin(dg.tensor([1j]), 0)


def test_logcumsumexp_is_stable_and_differentiable():
    x = dg.tensor([-1000.0, 0.0, 1000.0], requires_grad=True)
    y = dg.logcumsumexp(x, 0)
    assert y.tolist() == [-1000.0, 0.0, 1000.0]
    (g,) = dg.grad(y, x, dg.tensor([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(g.numpy(), [1.0, -2.0, 3.0])  # no overflow: exp(x_k - out_i)
    assert dg.logcumsumexp(dg.tensor([-math.inf, -math.inf, 0.0]), 0).tolist() == [-math.inf, -math.inf, 0.0]
    assert dg.logcumsumexp(dg.tensor([math.inf, 1.0]), 0).tolist() == [math.inf, math.inf]
    rows = dg.logcumsumexp(dg.tensor([[0.5, 1.0, -0.3], [2.0, -1.0, 0.0]]), dim=1)
    np.testing.assert_allclose(rows.numpy(), [[0.5, 1.4740769841801067, 1.6307729571044476],
                                              [2.0, 2.048587351573742, 2.1698460195562856]])
    assert dg.logcumsumexp(dg.tensor(2.0), 0).tolist() == 2.0
    assert dg.logcumsumexp(dg.ones(2, dtype=dg.float32), 0).dtype == np.float32
    assert dg.logcumsumexp(dg.tensor([0, 0]), 0).dtype == np.float64  # integers: the default float dtype
    with pytest.raises(TypeError, match="dim"):
        dg.logcumsumexp(dg.ones(2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.logcumsumexp(dg.ones(2), 1)


@pytest.mark.parametrize("call", [
    lambda: dg.tensor([5]) // 0, lambda: dg.tensor([5]) % 0, lambda: dg.fmod(dg.tensor([5]), 0),
    lambda: dg.div(dg.tensor([5]), 0, rounding_mode="trunc"), lambda: dg.div(dg.tensor([5]), 0, rounding_mode="floor"),
    lambda: dg.tensor([5, 2]) // dg.tensor([1, 0]), lambda: dg.remainder(dg.tensor([5], dtype=dg.uint8), 0),
])
def test_integer_division_by_zero_raises_as_torch(call):
    """torch 2.13 raises RuntimeError('ZeroDivisionError'); NumPy would give 0 with a warning."""
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call()


def test_float_division_by_zero_still_gives_inf_and_nan():
    with np.errstate(divide="ignore", invalid="ignore"):
        assert (dg.tensor([5.0]) // 0).tolist() == [math.inf]
        assert math.isnan((dg.tensor([5.0]) % 0).item())
        assert (dg.tensor([7]) // 2).tolist() == [3] and (dg.tensor([-7]) % 3).tolist() == [2]


def test_a_number_divided_by_a_tensor_is_torchs_reciprocal_times_the_number():
    """torch computes ``3 / x`` as ``x.reciprocal() * 3``: its graph and its float32 bits (NumPy's
    one division gives 0.4285714328 for 3 / 7)."""
    x = dg.tensor([7.0, 0.1, 3.3], dtype=dg.float32, requires_grad=True)
    y = 3 / x
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert y.tolist() == [0.4285714626312256, 30.0, 0.9090909361839294]
    y.sum().backward()
    assert x.grad.tolist() == [-0.06122449412941933, -300.0, -0.2754821181297302]
    assert (dg.tensor([2.0]) / dg.tensor([4.0])).grad_fn is None  # (two tensors: div, as before)
    assert (dg.tensor([2.0], requires_grad=True) / x[:1]).grad_fn.name() == "DivBackward0"
