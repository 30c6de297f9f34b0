"""``dualgrad.special`` and the gamma/Bessel/normal-distribution ops against torch 2.13 (values pinned
from a differential run; where torch's own float64 result is less accurate, from mpmath at 40
digits, as the comment says), their derivatives, errors and namespaces."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad as dg

S = dg.special

X = [-30.5, -7.25, -2.5, -0.5, 1e-8, 0.25, 0.999, 1.0001, 1.5, 2.0000001, 3.7, 9.99, 10.01, 123.4, 1e6]
B = [-31.0, -5.5, -1.0, -0.25, 0.0, 1e-3, 0.5, 2.0, 7.5, 19.9, 20.1, 55.0, 700.0]
N = [-40.0, -12.0, -3.0, -0.5, 0.0, 0.7, 3.0, 9.0, 40.0]

VALUES = [  # (function, inputs, expected, rtol)
    (dg.lgamma, X, [-75.22646798193337, -7.54188344347575, -0.05624371649767405, 1.2655121234846454,
                    18.42068073818021, 1.2880225246980774, 0.0005780385328913802, -5.771334222047127e-05,
                    -0.12078223763524522, 4.227843666532498e-08, 1.428072326665388, 12.779315214350193,
                    12.824350262448247, 469.3360974421906, 12815504.569147611], 1e-13),
    # mpmath (torch: within 6e-15 relative)
    (dg.digamma, X, [3.434030554207563, 5.189977214956288, 1.103156640645243, 0.03648997397857652,
                     -100000000.57721564, -4.2274535333762655, -0.5788618021086455, -0.5770511835143348,
                     0.03648997397857652, 0.4227843995918717, 1.1671535393615113, 2.250700372831201,
                     2.2528037003181356, 4.8113737751162775, 13.815510057964191], 1e-14),
    # mpmath (torch's trigamma is off by up to 5e-10 relative on this grid)
    (lambda x: dg.polygamma(1, x), X, [
        9.837349132820686, 19.61035453929327, 9.539246644989124, 8.934802200544679, 1.0000000000000002e+16,
        17.19732915450711, 1.6473414317770505, 1.6446936879331444, 0.9348022005446793, 0.6449340264368484,
        0.3100378576700383, 0.10527695014824179, 0.10505595320551508, 0.008136651610865263,
        1.0000005000001667e-06], 1e-14),
    (lambda x: dg.polygamma(2, x), X, [
        -0.001040312187353783, 124.00852603656574, -0.1082040516417274, -0.82879664423432, -2e+24,
        -129.32773993753693, -2.410620209231671, -2.4034645367899485, -0.82879664423432, -0.40411375692525286,
        -0.09539530872855403, -0.011073070531461051, -0.011026672403393367, -6.620473419231093e-05,
        -1.0000010000005e-12], 1e-12),  # (for x < 0, ~1e-13 absolute: at -30.5 the terms cancel, torch too)
    (lambda x: dg.polygamma(3, x), X, [
        194.8181149685331, 1558.5411952034044, 194.74787621918762, 193.40909103400244, 5.999999999999999e+32,
        1538.7821440091884, 6.518886830187096, 6.4914513859393415, 1.4090910340024372, 0.49393931364022736,
        0.058279217956563614, 0.0023272159399640798, 0.002312617263215628, 1.077357827078302e-06,
        2.000003000002e-18], 1e-14),
    (lambda x: dg.mvlgamma(x, 3), [0.75, 1.3, 2.5, 7.0, 40.2],
     [4.797973617454659, 2.856777692484153, 1.8809954616117743, 18.74639984342339, 318.3134845752868], 1e-14),
    (dg.i0, B, [2089962966491.9038, 42.69464515184779, 1.2660658777520082, 1.015686141223608, 1.0,
                1.0000002500000158, 1.0634833707413236, 2.279585302336067, 268.1613115151893, 39513376.52006682,
                48017874.1071365, 4.1487895607331774e+22, 1.5295933476718735e+302], 1e-14),
    (S.i0e, B, [0.07194649669698383, 0.17448325638192988, 0.46575960759364043, 0.7910171621397194, 1.0,
                0.9990007495835156, 0.6450352704491501, 0.308508322553671, 0.1483158300773955, 0.09000858886438959,
                0.08955376362061344, 0.053916898493938756, 0.015081295651531355], 1e-14),
    (S.i1, B, [-2055972795294.565, -38.58816461632738, -0.5651591039924851, -0.12597910894546793, 0.0,
               0.0005000000625000028, 0.25789430539089636, 1.5906368546373295, 249.58436542268808,
               38507423.874862276, 46807739.533029884, 4.11089864529928e+22, 1.5285003902339006e+302], 1e-14),
    (S.i1e, B, [-0.07077639283438569, -0.1577010090167565, -0.2079104153497085, -0.09811262869736825, 0.0,
                0.0004995003123542215, 0.15642080318487173, 0.2152692892489377, 0.13804121154855417,
                0.08771710213170608, 0.0872968518432016, 0.05342447519519452, 0.015070519444716846], 1e-14),
    # mpmath (torch's float64 ndtr gives 0 at -12 and is 7e-15 off at -3)
    (S.ndtr, N, [0.0, 1.776482112077679e-33, 0.0013498980316300946, 0.3085375387259869, 0.5, 0.758036347776927,
                 0.9986501019683699, 1.0, 1.0], 1e-14),
    (S.log_ndtr, N, [-804.6084420137539, -75.41067300156881, -6.60772622151035, -1.1759117615936185,
                     -0.6931471805599453, -0.27702394227713123, -0.0013508099647481923, -1.1285884059538295e-19,
                     -0.0], 1e-14),
    (S.erfcx, [-26.0, -3.0, -0.5, 0.0, 0.5, 3.0, 25.9, 26.1, 1e3, 1e300],
     [7.657724931490568e+293, 16205.988853999586, 1.952360489182557, 1.0, 0.6156903441929258, 0.17900115118138998,
      0.021767181150738214, 0.02160062772634621, 0.0005641893014533876, 5.641895835477562e-301], 1e-13),
    (S.ndtri, [1e-300, 1e-20, 1e-05, 0.02, 0.3, 0.5, 0.5 + 1e-12, 0.7, 0.975, 1 - 1e-10],
     [-37.0470962993612, -9.262340089798409, -4.264890793922825, -2.053748910631823, -0.5244005127080409, 0.0,
      2.5065728237018607e-12, 0.5244005127080407, 1.959963984540054, 6.361340889697422], 1e-13),
    (dg.logit, [1e-10, 0.05, 0.3, 0.5, 0.8, 0.999999],
     [-23.025850929840455, -2.9444389791664403, -0.8472978603872036, 0.0, 1.3862943611198908,
      13.815509557935018], 1e-14),
    (lambda x: dg.logit(x, eps=0.1), [1e-10, 0.05, 0.3, 0.5, 0.8, 0.999999],
     [-2.197224577336219, -2.197224577336219, -0.8472978603872036, 0.0, 1.3862943611198908,
      2.1972245773362196], 1e-14),
    (S.entr, [0.0, 1e-300, 0.3, 1.0, 5.0], [0.0, 6.907755278982137e-298, 0.3611918412977808, -0.0,
                                            -8.047189562170502], 1e-14),
]


@pytest.mark.parametrize("fn, x, expected, rtol", VALUES)
def test_values_match_torch(fn, x, expected, rtol):
    np.testing.assert_allclose(fn(dg.tensor(x)).numpy(), expected, rtol=rtol, atol=0)


def test_binary_values_match_torch():
    x = dg.tensor([0.0, 0.0, 2.0, -1.5, 3.0])
    y = dg.tensor([-1.0, -3.0, 1e-10, 4.0, -0.5])
    np.testing.assert_allclose(S.xlog1py(x, y).numpy(), [0.0, 0.0, 1.9999999999000001e-10, -2.4141568686511503,
                                                         -2.0794415416798357], rtol=1e-14)
    s = dg.tensor([2.0, 3.0, 1.5, 4.0, 10.0, 3.0])
    q = dg.tensor([1.0, 0.3, 17.0, -2.5, 2.0, 1e4])
    np.testing.assert_allclose(S.zeta(s, q).numpy(), [1.6449340668482266, 37.636268294363006, 0.4923095009330629,
                                                      32.457979369864596, 0.0009945751278180857,
                                                      5.000500025000001e-09], rtol=1e-14)


INF, NAN = math.inf, math.nan
SPECIAL_POINTS = [  # torch's values at poles, zeros, infinities and NaN
    (dg.lgamma, [0.0, -0.0, -1.0, -2.0, 1.0, 2.0, INF, -INF, NAN], [INF, INF, INF, INF, 0.0, 0.0, INF, INF, NAN]),
    (dg.digamma, [0.0, -0.0, -1.0, INF, -INF, NAN], [-INF, INF, NAN, INF, NAN, NAN]),
    (lambda x: dg.polygamma(2, x), [0.0, -1.0, NAN], [-INF, -INF, NAN]),
    (lambda x: dg.polygamma(1, x), [0.0, -0.0, INF, NAN], [INF, INF, 0.0, NAN]),
    (dg.logit, [0.0, 1.0, -0.5, 1.5], [-INF, INF, NAN, NAN]),
    (S.entr, [-1.0, INF, NAN], [-INF, -INF, NAN]),
    (S.ndtri, [0.0, 1.0, -0.1, 1.1], [-INF, INF, NAN, NAN]),
    (S.erfcx, [-30.0, INF, -INF], [INF, 0.0, INF]),
    (S.log_ndtr, [INF, -INF], [-0.0, -INF]),
    (S.i0e, [INF, -INF], [0.0, 0.0]),
    (S.i1e, [INF, -INF], [0.0, -0.0]),
    (lambda x: S.zeta(x, 1.0), [1.0, 0.5], [INF, NAN]),
]


@pytest.mark.parametrize("fn, x, expected", SPECIAL_POINTS)
def test_special_points_match_torch(fn, x, expected):
    np.testing.assert_array_equal(fn(dg.tensor(x)).numpy(), expected)


def test_lgamma_near_its_zeros_keeps_relative_precision():
    # mpmath, at the doubles nearest 1 + 1e-10 and 2 - 1e-10
    x = dg.tensor([1 + 1e-10, 2 - 1e-10])
    np.testing.assert_allclose(dg.lgamma(x).numpy(), [-5.772157125783244e-11, -4.2278437004755317e-11], rtol=1e-14)


def grads(fn, x, order=1):
    t = dg.tensor(x, requires_grad=True)
    y = fn(t)
    for _ in range(order):
        (y,) = dg.grad(y.sum(), t, create_graph=True)
    return y.detach().numpy()


GRADIENTS = [  # (function, x, torch's gradient)
    (dg.lgamma, [0.5, 3.0, -2.5], [-1.9635100260214229, 0.922784335098467, 1.1031566406452433]),
    (dg.digamma, [0.5, 3.0], [4.934802200544679, 0.39493406684822643]),  # pi^2/2, pi^2/6 - 5/4 (torch: 3e-10 off)
    (lambda x: dg.polygamma(2, x), [0.5, 3.0], [97.40909103400242, 0.11893940226682916]),
    (lambda x: dg.mvlgamma(x, 2), [1.5, 4.0], [-0.5407256909229565, 2.359274309077043]),
    (lambda x: dg.logit(x, eps=0.25), [0.1, 0.25, 0.5, 0.9], [0.0, 5.333333333333333, 4.0, 0.0]),
    (dg.logit, [-0.5, 0.0, 0.5, 1.5], [NAN, INF, 4.0, NAN]),
    (S.entr, [0.0, 0.5, 2.0], [INF, -0.3068528194400547, -1.6931471805599454]),
    (S.ndtr, [0.0, -2.0], [0.3989422804014327, 0.05399096651318802]),
    (S.log_ndtr, [-3.0, 2.0], [3.2830986549304386, 0.05524786267898997]),
    (S.ndtri, [0.5, 0.975], [2.5066282746310002, 17.110083080332707]),
    (S.erfcx, [-1.0, 2.0], [-11.14633932862008, -0.10679646185348934]),
    (dg.i0, [0.0, 2.0], [0.0, 1.5906368546373295]),
    (S.i1, [0.0, -2.0], [0.5, 1.484266875017402]),
    (S.i0e, [-2.0, 2.0], [0.0932390333047333, -0.0932390333047333]),
    (S.i1e, [0.0, -2.0], [0.5, -0.014395611319735546]),
    (lambda q: S.zeta(3.0, q), [1.0, 2.5], [-3.2469697011334144, -0.11195292440862604]),
]


@pytest.mark.parametrize("fn, x, expected", GRADIENTS)
def test_gradients_match_torch(fn, x, expected):
    np.testing.assert_allclose(grads(fn, x), expected, rtol=1e-12)


def test_derivatives_of_every_order_follow_the_polygamma_chain():
    x = [0.7, 2.2]
    np.testing.assert_allclose(grads(dg.lgamma, x, order=2), dg.polygamma(1, dg.tensor(x)).numpy(), rtol=1e-15)
    np.testing.assert_allclose(grads(dg.lgamma, x, order=3), dg.polygamma(2, dg.tensor(x)).numpy(), rtol=1e-15)
    np.testing.assert_allclose(grads(dg.i0, x, order=2), grads(S.i1, x), rtol=1e-15)


def test_xlog1py_gradients_match_torch():
    x = dg.tensor([0.0, 1.0, 1.0], requires_grad=True)
    y = dg.tensor([-1.0, -1.0, -0.5], requires_grad=True)
    gx, gy = dg.grad(S.xlog1py(x, y).sum(), (x, y))
    np.testing.assert_array_equal(gx.numpy(), [0.0, -INF, -math.log(2)])
    np.testing.assert_array_equal(gy.numpy(), [NAN, INF, 2.0])


def test_zeta_is_not_differentiable_in_x_as_in_torch():
    s = dg.tensor([2.0, 3.0], requires_grad=True)
    y = S.zeta(s, 1.5)
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        y.sum().backward()


@pytest.mark.parametrize("call, error, words", [
    (lambda: dg.polygamma(-1, dg.tensor([1.0])), RuntimeError, "does not support negative n"),
    (lambda: dg.polygamma(1.5, dg.tensor([1.0])), TypeError, "argument 'n' (position 1) must be int, not float"),
    (lambda: dg.mvlgamma(dg.tensor([3.0]), 0), RuntimeError, "p has to be greater than or equal to 1"),
    (lambda: dg.mvlgamma(dg.tensor([3.0]), 1.5), TypeError, "argument 'p' (position 2) must be int, not float"),
    (lambda: dg.logit(dg.tensor([0.5]), dg.tensor([0.1])), TypeError, "argument 'eps' (position 2) must be float"),
    (lambda: dg.lgamma(dg.tensor([1j])), NotImplementedError, "complex"),
    (lambda: S.i0e(dg.tensor([1j])), NotImplementedError, "complex"),
])
def test_errors_as_torch(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_dtypes_follow_torch():
    assert dg.lgamma(dg.tensor([1.0, 2.0], dtype=dg.float32)).dtype == dg.float32
    assert S.i1e(dg.tensor([1.0], dtype=dg.float32)).dtype == dg.float32
    assert dg.polygamma(1, dg.tensor([1, 2])).dtype == dg.get_default_dtype()
    assert S.ndtr(dg.tensor([1])).dtype == dg.get_default_dtype()
    assert S.zeta(dg.tensor([2, 3]), 1).dtype == dg.get_default_dtype()


def test_special_namespace_mirrors_torch_special():
    assert S.expit is dg.sigmoid and S.gammaln is dg.lgamma and S.psi is dg.digamma
    assert S.multigammaln is dg.mvlgamma and S.logsumexp is dg.logsumexp and S.erf is dg.erf
    for name in ["erf", "erfc", "erfinv", "expm1", "exp2", "log1p", "sinc", "round", "logsumexp", "softmax",
                 "log_softmax", "xlogy", "xlog1py", "entr", "ndtr", "log_ndtr", "ndtri", "erfcx", "i0", "i0e",
                 "i1", "i1e", "logit", "polygamma", "zeta"]:
        assert callable(getattr(S, name)), name
    for name in S.__all__:
        assert hasattr(S, name), name


def test_top_level_functions_and_tensor_methods():
    x = dg.tensor([0.5, 3.0])
    for name in ["lgamma", "digamma", "i0", "logit"]:
        np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(dg, name)(x).numpy())
        y = x.clone()
        assert getattr(y, f"{name}_")() is y
        np.testing.assert_array_equal(y.numpy(), getattr(dg, name)(x).numpy())
    np.testing.assert_array_equal(x.polygamma(2).numpy(), dg.polygamma(2, x).numpy())
    np.testing.assert_array_equal(x.mvlgamma(2).numpy(), dg.mvlgamma(x, 2).numpy())
    assert dg.logit(dg.tensor([0.2]), dg.tensor(0.25)).tolist() == [-1.0986122886681098]  # 0-d eps, as torch
    y = dg.tensor([0.2, 0.9])
    assert y.logit_(eps=0.25) is y
    np.testing.assert_allclose(y.numpy(), [-1.0986122886681098, 1.0986122886681098], rtol=1e-15)
    y = x.clone()
    y.polygamma_(1)
    np.testing.assert_array_equal(y.numpy(), dg.polygamma(1, x).numpy())


def test_in_place_forms_record_the_graph():
    x = dg.tensor([0.5, 3.0], requires_grad=True)
    y = x * 1.0
    y.lgamma_()
    assert y.grad_fn.name() == "LgammaBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.9635100260214229, 0.922784335098467], rtol=1e-13)


def test_incomplete_gamma_matches_torch():
    a = dg.tensor([0.5, 1.0, 2.5, 10.0, 0.01, 3.0, 0.0, 2.0, 2.0])
    x = dg.tensor([0.1, 1.0, 3.0, 8.0, 2.0, 40.0, 1.0, 0.0, INF], requires_grad=True)
    p, q = S.gammainc(a, x), S.gammaincc(a, x)
    np.testing.assert_allclose(p.detach().numpy(), [
        0.345279153981423, 0.6321205588285577, 0.6937810815867212, 0.28337574127298903, 0.9995033354627815,
        0.9999999999999964, 1.0, 0.0, 1.0], rtol=1e-14)
    np.testing.assert_allclose(q.detach().numpy(), [
        0.6547208460185769, 0.36787944117144245, 0.30621891841327825, 0.716624258727011, 0.0004966645372185285,
        3.572865928700233e-15, 0.0, 1.0, 0.0], rtol=1e-13)
    density = [1.6143422587153615, 0.36787944117144233, 0.19460869331856584, 0.12407691728941919,
               0.0006852714047930272, 3.3986834042332738e-15]
    (g,) = dg.grad(p[:6].sum(), x)
    np.testing.assert_allclose(g.numpy()[:6], density, rtol=1e-13)
    (g,) = dg.grad(q[:6].sum(), x)
    np.testing.assert_allclose(g.numpy()[:6], -np.array(density), rtol=1e-13)
    edges = S.gammainc(dg.tensor([0.0, -1.0, 2.0, NAN]), dg.tensor([0.0, 1.0, -1.0, 1.0]))
    np.testing.assert_array_equal(edges.numpy(), [NAN, NAN, NAN, NAN])


@pytest.mark.parametrize("fn, words", [(S.gammainc, "igamma: input"), (S.gammaincc, "igammac: input")])
def test_incomplete_gamma_is_not_differentiable_in_a_as_in_torch(fn, words):
    a = dg.tensor([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{words}' is not implemented"):
        fn(a, dg.tensor([1.0])).sum().backward()


@pytest.mark.parametrize(("fn", "x", "expected"), [
    (dg.special.i1, 3.25e-308, 3 * 3.25e-308 / 8),  # i1''(x) ~ 3x/8 (torch 2.13: 0.0)
    (dg.special.i1, -1e-5, -3.7500000000520837e-06),
    (dg.special.i1e, 1e-300, -1.0),  # i1e(x) ~ x/2 - x|x|/2
    (dg.special.i1e, -1e-5, 0.9999812501749988),
])
def test_second_derivatives_of_i1_near_zero(fn, x, expected):
    """``i1(x) / x`` in the first derivative is its series near 0: a quotient's derivative would be
    the difference of two numbers of size 1/x there (it gave 2.5e289 at x = 3.25e-308)."""
    t = dg.tensor(x, requires_grad=True)
    (first,) = dg.grad(fn(t), t, create_graph=True)
    (second,) = dg.grad(first, t)
    assert second.item() == pytest.approx(expected, rel=1e-9, abs=1e-320)
