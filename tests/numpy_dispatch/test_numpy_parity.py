"""Unmodified NumPy code on Tensors against HIPS autograd and JAX (``jax_enable_x64``).

Values and gradients of a scalar loss written with ``numpy`` functions that autograd or
JAX differentiate, pinned from JAX (central differences where JAX lacks the option:
``np.gradient`` with ``edge_order=2``, ``np.delete``), then checked against central
differences here too. Also: ``np.where``'s gradient is selected, not multiplied by the
mask (a NaN gradient in the branch not taken gives 0, as in torch, JAX and autograd),
and the options still without a rule raise dualgrad's TypeError.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order

import dualgrad as dg
from dualgrad import forward_ad as fwAD

V = np.array([0.3, -1.2, 2.0, 0.7, -0.4])
A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
CV = np.array([0.5 + 1.0j, -1.0 + 0.5j, 2.0 - 1.0j])
K = np.array([1.0, -2.0, 0.5])
K7 = np.array([1.0, -2.0, 0.5, 3.0, -1.0, 0.25, 2.0])
WA = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

# (loss written with numpy, input, JAX's value, JAX's gradient (conjugated for complex inputs: torch's
# convention))
CASES = [
    pytest.param(lambda x: np.nansum(np.where(x > 0, x, np.nan) ** 2), V, 4.58, [0.6, 0.0, 4.0, 1.4, 0.0], id="nansum"),
    pytest.param(
        lambda x: np.sum(np.nanmean(np.where(x > 0, x, np.nan), axis=0) * np.array([1.0, 2.0, 3.0])),
        A,
        7.5,
        [[0.5, 0.0, 3.0], [0.5, 2.0, 0.0]],
        id="nanmean_axis",
    ),
    pytest.param(
        lambda x: np.nanmax(np.where(x > 1.0, np.nan, x)) - 2 * np.nanmin(x),
        V,
        3.0999999999999996,
        [0.0, -2.0, 0.0, 1.0, 0.0],
        id="nanmax_nanmin",
    ),
    pytest.param(
        lambda x: np.nanvar(np.where(x > 1.0, np.nan, x), ddof=1),
        V,
        0.6966666666666667,
        [0.3, -0.7, 0.0, 0.566666666667, -0.166666666667],
        id="nanvar_ddof",
    ),
    pytest.param(
        lambda x: np.sum(np.nanstd(np.where(x > 1.9, np.nan, x), axis=1)),
        A,
        1.6704467514322718,
        [[0.5, -0.5, 0.0], [0.422500148198, -0.030178582014, -0.392321566184]],
        id="nanstd_axis",
    ),
    pytest.param(
        lambda x: np.nanprod(x) + np.sum(np.nancumsum(x) * np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
        V,
        16.2016,
        [15.672, 13.832, 12.1008, 9.288, 4.496],
        id="nanprod_nancumsum",
    ),
    pytest.param(lambda x: np.sum(np.ptp(x, axis=1) ** 2), A, 14.0625, [[0.0, -6.0, 6.0], [4.5, 0.0, -4.5]], id="ptp"),
    pytest.param(
        lambda x: np.median(x) + np.sum(np.median(x[None, :4], axis=1)), V, 0.8, [1.5, 0.0, 0.0, 0.5, 0.0], id="median"
    ),
    pytest.param(
        lambda x: np.nanmedian(np.where(x > 1.0, np.nan, x)),
        V,
        -0.05000000000000002,
        [0.5, 0.0, 0.0, 0.0, 0.5],
        id="nanmedian",
    ),
    pytest.param(
        lambda x: np.sum(np.quantile(x, np.array([0.2, 0.9]), axis=(0, 1)) * np.array([1.0, 3.0])),
        A,
        4.5,
        [[0.0, 0.0, 1.5], [1.5, 0.0, 1.0]],
        id="quantile_axis_tuple",
    ),
    pytest.param(
        lambda x: np.sum(np.quantile(x, 0.4, axis=1, method="lower", keepdims=True) * x),
        A,
        -2.25,
        [[-1.0, 0.5, -1.0], [-0.75, -0.75, 0.25]],
        id="quantile_lower_keepdims",
    ),
    pytest.param(
        lambda x: np.percentile(x, 30.0) + np.nanpercentile(x, 75.0),
        V,
        0.4399999999999999,
        [0.2, 0.0, 0.0, 1.0, 0.8],
        id="percentile",
    ),
    pytest.param(
        lambda x: np.sum(np.cov(x) * WA[:, :2]) + np.sum(np.cov(x, rowvar=False, bias=True)),
        A,
        4.166666666666668,
        [[3.75, -1.5, -1.5], [5.583333333333, -5.166666666667, -1.166666666667]],
        id="cov",
    ),
    pytest.param(
        lambda x: np.sum(np.corrcoef(x[0], x[1] ** 2) * np.array([[1.0, 2.0], [3.0, 4.0]])),
        A,
        6.09054863853153,
        [[1.878167099693, -0.939083549847, -0.939083549847], [-1.608262015991, -0.904647383995, -3.51807315998]],
        id="corrcoef",
    ),
    pytest.param(
        lambda x: np.sum(np.sinc(x) + np.i0(x)),
        V,
        8.689831116273009,
        [-0.750334290135, -0.1704261801, 2.090636854637, -0.993360697743, 0.915497579931],
        id="sinc_i0",
    ),
    pytest.param(
        lambda x: np.sum(np.nan_to_num(np.log(x), neginf=-5.0, nan=1.0) * np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
        V,
        6.44876896159897,
        [3.333333333333, -0.0, 1.5, 5.714285714286, -0.0],
        id="nan_to_num",
    ),
    pytest.param(
        lambda x: np.sum(np.select([x > 1.0, x < 0], [x**2, x**3], default=2 * x)),
        V,
        4.208,
        [2.0, 4.32, 4.0, 2.0, 0.48],
        id="select",
    ),
    pytest.param(
        lambda x: np.sum(np.piecewise(x, [x < 0, x > 1.0], [lambda t: t**3, 5.0, lambda t: np.sqrt(t)])),
        V,
        4.592382584039242,
        [0.912870929175, 4.32, 0.0, 0.597614304667, 0.48],
        id="piecewise",
    ),
    pytest.param(
        lambda x: np.sum(np.linspace(x[0], x[2], 4) * np.array([1.0, 2.0, 3.0, 4.0])),
        V,
        14.333333333333332,
        [3.333333333333, 0.0, 6.666666666667, 0.0, 0.0],
        id="linspace",
    ),
    pytest.param(
        lambda x: np.trapezoid(x**2, dx=0.5) + np.trapezoid(x, np.array([0.0, 1.0, 3.0, 4.0, 7.0])),
        V,
        5.1775,
        [0.65, 0.3, 3.5, 2.7, 1.3],
        id="trapezoid",
    ),
    pytest.param(
        lambda x: np.sum(
            np.gradient(x, np.array([0.0, 1.0, 1.5, 3.0, 4.0]), edge_order=2) * np.array([1.0, 2.0, 3.0, 4.0, 5.0])
        ),
        V,
        4.523333333333335,
        [-2.3333333, -3.5, 5.6, -9.1666667, 9.4],
        id="gradient",
    ),
    pytest.param(
        lambda x: np.sum(np.gradient(x, 2.0)[1] * WA + np.gradient(x)[0] ** 2),
        A,
        16.4375,
        [[-5.0, -6.0, 13.0], [0.75, 4.0, -6.75]],
        id="gradient_2d",
    ),
    pytest.param(
        lambda x: np.sum(
            np.ediff1d(x, to_begin=np.array([1.0]), to_end=x[0]) * np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        ),
        V,
        -1.299999999999999,
        [4.0, -1.0, -1.0, -1.0, 5.0],
        id="ediff1d",
    ),
    pytest.param(
        lambda x: np.sum(np.convolve(x, K7, "same") * np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
        V,
        28.375,
        [14.5, 17.25, 21.0, 8.75, 8.5],
        id="convolve_same",
    ),
    pytest.param(
        lambda x: np.sum(np.convolve(x, K, "valid") * np.array([1.0, 2.0, 3.0])),
        V,
        -5.649999999999999,
        [0.5, -1.0, -1.5, -4.0, 3.0],
        id="convolve_valid",
    ),
    pytest.param(
        lambda x: np.sum(np.correlate(x, K7, "full") * np.arange(1.0, 12.0)),
        V,
        24.974999999999994,
        [9.0, 12.75, 16.5, 20.25, 24.0],
        id="correlate_full",
    ),
    pytest.param(
        lambda x: np.sum(np.abs(np.correlate(x, K * 1j + 1, "same"))),
        CV,
        12.613154785664069,
        [(2.264911064067 + 1.367544467966j), (-2.756550433946 + 0.322154000807j), (2.98321446331 - 1.229098424696j)],
        id="correlate_complex",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.interp(np.array([-3.0, 0.5, 1.0, 2.5, 9.0]), np.array([0.0, 1.0, 2.0, 3.0, 4.0]), x))
            + np.sum(np.interp(x, np.array([-1.0, 0.0, 1.0]), np.array([2.0, -1.0, 4.0])))
        ),
        V,
        8.799999999999999,
        [6.5, 1.5, 0.5, 5.5, -2.0],
        id="interp",
    ),
    pytest.param(lambda x: np.sum(np.polyval(x[:3], x)), V, 10.174, [5.16, -0.52, 5.0, -0.78, -1.44], id="polyval"),
    pytest.param(
        lambda x: np.sum(np.vander(x, 3) * np.arange(15.0).reshape(5, 3)),
        V,
        85.94999999999999,
        [1.0, -3.2, 31.0, 22.6, 3.4],
        id="vander",
    ),
    pytest.param(
        lambda x: np.sum(np.unwrap(x * 4) * np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
        V,
        43.93274122871834,
        [4.0, 8.0, 12.0, 16.0, 20.0],
        id="unwrap",
    ),
    pytest.param(
        lambda x: np.sum(np.real_if_close(x * 0 + x.real) * np.array([1.0, 2.0, 3.0])),
        CV,
        4.5,
        [(1 + 0j), (2 + 0j), (3 + 0j)],
        id="real_if_close",
    ),
    pytest.param(
        lambda x: np.sum(
            np.ldexp(x, 3) + np.frexp(x)[0] * np.array([1.0, 2.0, 3.0, 4.0, 5.0]) + np.modf(3 * x)[0] ** 2
        ),
        V,
        12.120000000000001,
        [15.4, 5.4, 8.75, 12.6, 16.8],
        id="ldexp_frexp_modf",
    ),
    pytest.param(
        lambda x: np.sum(np.subtract.outer(x, x[:2]) ** 2 * np.arange(10.0).reshape(5, 2)),
        V,
        105.42,
        [1.8, -82.0, 45.6, 31.4, 3.2],
        id="ufunc_outer",
    ),
    pytest.param(
        lambda x: np.sum(np.maximum.accumulate(x) * np.array([1.0, 2.0, 3.0, 4.0, 5.0])) + np.logaddexp.reduce(x),
        V,
        27.36165353551619,
        [3.115134584427, 0.025689998262, 12.630240658124, 0.171760616602, 0.057174142585],
        id="ufunc_accumulate_reduce",
    ),
    pytest.param(
        lambda x: np.sum(np.reshape(x, (3, 2), order="F") * WA.T) + np.sum(np.ravel(x, order="F") * WA.ravel()),
        A,
        14.0,
        [[2.0, 6.0, 10.0], [4.0, 8.0, 12.0]],
        id="reshape_order_F",
    ),
    pytest.param(
        lambda x: np.sum(np.rollaxis(x[None], 2, 1) * WA.T[None]),
        A,
        7.25,
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
        id="rollaxis",
    ),
    pytest.param(
        lambda x: np.sum(np.hsplit(x, 3)[1] ** 2) + np.sum(np.vsplit(x, 2)[1] ** 3),
        A,
        4.03125,
        [[0.0, -2.0, 0.0], [6.75, 0.6875, 1.6875]],
        id="hsplit_vsplit",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.pad(x, ((1, 2), (2, 0)), mode="reflect") * np.arange(25.0).reshape(5, 5))
            + np.sum(np.pad(x, 1, mode="edge") ** 2)
        ),
        A,
        108.375,
        [[28.0, 44.0, 64.0], [48.0, 73.0, 66.0]],
        id="pad_modes",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.pad(x, (2, 3), mode="wrap") * np.arange(10.0)) + np.sum(np.pad(x, 2, mode="symmetric") ** 3)
        ),
        V,
        21.356,
        [9.54, 19.64, 25.0, 7.94, 7.96],
        id="pad_wrap_symmetric",
    ),
    pytest.param(
        lambda x: np.sum(np.pad(x, 1, constant_values=((1.0, 2.0), (3.0, 4.0))) ** 2),
        A,
        123.125,
        [[1.0, -2.0, 4.0], [3.0, 0.5, -1.5]],
        id="pad_constant_per_side",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.rot90(x, 3) * WA.T)
            + np.sum(np.kron(x, np.array([[1.0, -1.0]])) ** 2)
            + np.sum(np.diagflat(x[0], 1) ** 3)
        ),
        A,
        32.125,
        [[6.75, 4.0, 26.0], [7.0, 3.0, 0.0]],
        id="rot90_kron_diagflat",
    ),
    pytest.param(
        lambda x: np.sum(np.block([[x, x[:, :1]], [x[:1] * 2, 1.0]]) ** 2) + np.sum(np.append(x, 3.0) * np.arange(7.0)),
        A,
        55.375,
        [[6.0, -9.0, 22.0], [9.0, 4.5, 3.5]],
        id="block_append",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.delete(x, np.array([0, 2])) ** 2) + np.sum(np.resize(x, (2, 4)) * np.arange(8.0).reshape(2, 4))
        ),
        V,
        13.690000000000001,
        [5.0, 4.6, 9.0, 4.4, 3.2],
        id="delete_resize",
    ),
    pytest.param(
        lambda x: (
            np.sum(np.extract(x > 0, x) ** 2)
            + np.sum(np.compress([False, True, True], x, axis=1) ** 3)
            + np.sum(np.choose(np.array([[0, 1, 1], [1, 0, 0]]), [x, x**2]))
        ),
        A,
        20.40625,
        [[2.0, 1.0, 20.0], [6.0, 1.6875, 2.6875]],
        id="extract_compress_choose",
    ),
    pytest.param(
        lambda x: np.sum(np.partition(x, 2)[:2]) + 3 * np.partition(x, 2)[2],
        V,
        -0.7000000000000002,
        [3.0, 1.0, 0.0, 0.0, 1.0],
        id="partition",
    ),
]


def _value_and_grad(loss, x0):
    x = dg.tensor(x0, requires_grad=True)
    y = loss(x)
    assert isinstance(y, dg.Tensor) and y.requires_grad
    y.backward()
    return y.item(), x.grad.numpy()


@pytest.mark.parametrize("loss, x0, value, grad", CASES)
def test_numpy_code_matches_jax(loss, x0, value, grad):
    got_value, got_grad = _value_and_grad(loss, x0)
    np.testing.assert_allclose(got_value, value, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_grad, grad, rtol=1e-6, atol=1e-7)


# (real inputs; frexp's mantissa jumps at 2.0, an entry of V)
@pytest.mark.parametrize(
    "loss, x0, value, grad", [case for case in CASES if case.values[1] is not CV and case.id != "ldexp_frexp_modf"]
)
def test_numpy_code_gradients_match_central_differences(loss, x0, value, grad):
    check_first_order(loss, [x0])


# -- np.where: the gradient of the branch not taken is 0, even where the branch's gradient is NaN --------
def test_where_gradient_is_selected_not_multiplied_by_the_mask():
    x = dg.tensor([1.0, -1.0], requires_grad=True)
    (grad,) = dg.autograd.grad(dg.where(x > 0, x, np.nan), x, dg.tensor([1.0, np.nan]))
    np.testing.assert_array_equal(grad.numpy(), [1.0, 0.0])  # torch: tensor([1., 0.])
    (grad,) = dg.autograd.grad(dg.where(x > 0, 2.0, x), x, dg.tensor([np.nan, 3.0]))
    np.testing.assert_array_equal(grad.numpy(), [0.0, 3.0])


def test_where_tangent_is_selected_not_multiplied_by_the_mask():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor([1.0, -1.0]), dg.tensor([1.0, np.nan]))
        tangent = fwAD.unpack_dual(dg.where(dual > 0, dual, 0.0)).tangent
    np.testing.assert_array_equal(tangent.numpy(), [1.0, 0.0])  # torch: tensor([1., 0.])


def test_where_gradients_broadcast_and_match_central_differences():
    x = dg.tensor([1.0, -1.0], requires_grad=True)
    y = dg.tensor([[1.0], [2.0]], requires_grad=True)
    gx, gy = dg.autograd.grad(dg.where(x > 0, x, y).sum(), (x, y))
    np.testing.assert_array_equal(gx.numpy(), [2.0, 0.0])
    np.testing.assert_array_equal(gy.numpy(), [[1.0], [1.0]])
    check_first_order(lambda a, b: dg.where(a > 0, a**2, b * a), [V, V[::-1].copy()])


def test_nan_masked_by_where_gives_a_zero_gradient():
    # JAX and autograd: [0.6, 0.0, 4.0, 1.4, 0.0]; the NaN of the branch not taken used to leak
    _, grad = _value_and_grad(lambda x: np.sum(np.nan_to_num(np.where(x > 0, x, np.nan) ** 2)), V)
    np.testing.assert_array_equal(grad, [0.6, 0.0, 4.0, 1.4, 0.0])


# -- the new adaptors in forward mode and under vmap -------------------------------------------------
def test_new_adaptors_run_under_vmap_and_forward_mode():
    rows = dg.tensor([[1.0, 2.0, 5.0], [3.0, np.nan, 0.0]])
    np.testing.assert_allclose(dg.vmap(np.nanmedian)(rows).numpy(), [2.0, 1.5])
    np.testing.assert_allclose(dg.vmap(lambda r: np.pad(r, 1, mode="edge"))(rows).numpy()[0], [1.0, 1.0, 2.0, 5.0, 5.0])
    np.testing.assert_allclose(dg.vmap(np.gradient)(rows[:1]).numpy(), [[1.0, 2.0, 3.0]])
    jacobian = dg.func.jacfwd(lambda x: np.convolve(x, np.ones(2)))(dg.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(jacobian.numpy(), [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])


def test_results_match_numpy_on_untracked_tensors():
    np.testing.assert_allclose(
        np.quantile(dg.tensor(A), [0.2, 0.9], axis=1).numpy(), np.quantile(A, [0.2, 0.9], axis=1)
    )
    np.testing.assert_allclose(np.cov(dg.tensor(V)).numpy(), np.cov(V))
    assert np.cov(dg.tensor(V)).shape == ()
    np.testing.assert_allclose(
        np.linspace(dg.tensor([0.0, 1.0]), 2.0, 4, axis=1, endpoint=False).numpy(),
        np.linspace([0.0, 1.0], 2.0, 4, axis=1, endpoint=False),
    )
    frac, whole = np.modf(dg.tensor([-1.5, 2.25]))
    np.testing.assert_array_equal(frac.numpy(), [-0.5, 0.25])
    np.testing.assert_array_equal(whole.numpy(), [-1.0, 2.0])
    np.testing.assert_array_equal(
        np.nanmax(dg.tensor([[np.nan, 1.0], [np.nan, np.nan]]), axis=1).numpy(), [1.0, np.nan]
    )


# -- what still has no rule -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: np.quantile(x, 0.5, method="weibull"), "numpy.quantile with method='weibull'"),
        (lambda x: np.pad(x, 1, mode="linear_ramp"), "numpy.pad with mode='linear_ramp'"),
        (lambda x: np.pad(x, 1, mode="reflect", reflect_type="odd"), "numpy.pad with mode='reflect'"),
        (lambda x: np.gradient(dg.tensor([1.0, 4.0, 9.0]), x), "numpy.gradient with tracked spacings"),
        (lambda x: np.interp(1.5, [1.0, 2.0, 3.0], x, period=2.0), "numpy.interp with period= or tracked xp"),
        (
            lambda x: np.nanmean(x, where=[True, False, True]) + np.nanvar(x, where=[True, True, False]),
            "numpy.nanvar with where=",
        ),
        (lambda x: np.insert(x, 1, 2.0), "numpy.insert"),
    ],
)
def test_options_without_a_rule_raise_dualgrads_type_error(call, name):
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(TypeError, match=f"dualgrad has no derivative rule for {name}"):
        call(x)


def test_numpy_errors_keep_their_type_and_words():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(ValueError, match="only works on arrays of 3 or more dimensions"):
        np.dsplit(x, 2)
    with pytest.raises(ValueError, match="list of cases must be same length as list of conditions"):
        np.select([x > 0], [x, x])
    with pytest.raises(np.exceptions.AxisError):
        np.rollaxis(x, 2)
    with pytest.raises(ValueError, match="mode must be one of"):
        np.convolve(x[0], x[1], mode="circular")
