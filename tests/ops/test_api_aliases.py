"""torch's other spellings (``dualgrad/ops/torch_names.py``): values, dtypes, node names, gradients and errors
pinned from torch 2.13 (float64 default dtype)."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import dualgrad as dg

TOL = dict(rtol=1e-12, atol=1e-12)


def close(actual: dg.Tensor, expected: list) -> None:
    np.testing.assert_allclose(actual.numpy(force=True).reshape(-1), expected, **TOL)


# name, arguments ("T": the int64 Tensor [1, -1, 2]), input, torch 2.13's value, gradient of the sum and node
IN_PLACE = [
    ("abs_", (), [0.25, 0.5, 0.75], [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], "AbsBackward0"),
    ('acos_', (), [0.25, 0.5, 0.75], [1.318116071652818, 1.047197551196598, 0.722734247813416],
     [-1.032795558988644, -1.154700538379252, -1.511857892036909], 'AcosBackward0'),
    ('acosh_', (), [1.25, 1.5, 1.75], [0.693147180559945, 0.962423650119207, 1.158810360429947],
     [1.333333333333333, 0.894427190999916, 0.696310623822791], 'AcoshBackward1'),
    ('arccos_', (), [0.25, 0.5, 0.75], [1.318116071652818, 1.047197551196598, 0.722734247813416],
     [-1.032795558988644, -1.154700538379252, -1.511857892036909], 'AcosBackward0'),
    ('arccosh_', (), [1.25, 1.5, 1.75], [0.693147180559945, 0.962423650119207, 1.158810360429947],
     [1.333333333333333, 0.894427190999916, 0.696310623822791], 'AcoshBackward1'),
    ('arcsin_', (), [0.25, 0.5, 0.75], [0.252680255142079, 0.523598775598299, 0.848062078981481],
     [1.032795558988644, 1.154700538379252, 1.511857892036909], 'AsinBackward0'),
    ('arcsinh_', (), [0.25, 0.5, 0.75], [0.247466461547263, 0.481211825059603, 0.693147180559945],
     [0.970142500145332, 0.894427190999916, 0.8], 'AsinhBackward1'),
    ('arctan_', (), [0.25, 0.5, 0.75], [0.244978663126864, 0.463647609000806, 0.643501108793284],
     [0.941176470588235, 0.8, 0.64], 'AtanBackward0'),
    ('arctanh_', (), [0.25, 0.5, 0.75], [0.255412811882995, 0.549306144334055, 0.972955074527657],
     [1.066666666666667, 1.333333333333333, 2.285714285714286], 'AtanhBackward1'),
    ('asin_', (), [0.25, 0.5, 0.75], [0.252680255142079, 0.523598775598299, 0.848062078981481],
     [1.032795558988644, 1.154700538379252, 1.511857892036909], 'AsinBackward0'),
    ('asinh_', (), [0.25, 0.5, 0.75], [0.247466461547263, 0.481211825059603, 0.693147180559945],
     [0.970142500145332, 0.894427190999916, 0.8], 'AsinhBackward1'),
    ('atan_', (), [0.25, 0.5, 0.75], [0.244978663126864, 0.463647609000806, 0.643501108793284],
     [0.941176470588235, 0.8, 0.64], 'AtanBackward0'),
    ('atanh_', (), [0.25, 0.5, 0.75], [0.255412811882995, 0.549306144334055, 0.972955074527657],
     [1.066666666666667, 1.333333333333333, 2.285714285714286], 'AtanhBackward1'),
    ("ceil_", (), [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], "CeilBackward0"),
    ('cos_', (), [0.25, 0.5, 0.75], [0.968912421710645, 0.877582561890373, 0.731688868873821],
     [-0.247403959254523, -0.479425538604203, -0.681638760023334], 'CosBackward0'),
    ('cosh_', (), [1.25, 1.5, 1.75], [1.888423877161016, 2.352409615243247, 2.964188309728088],
     [1.601919080300826, 2.129279455094817, 2.790414366277642], 'CoshBackward0'),
    ('deg2rad_', (), [0.25, 0.5, 0.75], [0.004363323129986, 0.008726646259972, 0.013089969389957],
     [0.017453292519943, 0.017453292519943, 0.017453292519943], 'Deg2RadBackward0'),
    ('erf_', (), [0.25, 0.5, 0.75], [0.276326390168237, 0.520499877813047, 0.711155633653515],
     [1.060014129376114, 0.878782578935445, 0.642931069195207], 'ErfBackward0'),
    ('erfc_', (), [0.25, 0.5, 0.75], [0.723673609831763, 0.479500122186953, 0.288844366346485],
     [-1.060014129376114, -0.878782578935445, -0.642931069195207], 'ErfcBackward0'),
    ('exp2_', (), [0.25, 0.5, 0.75], [1.189207115002721, 1.414213562373095, 1.681792830507429],
     [0.824295558865963, 0.980258143468547, 1.165729958752154], 'Exp2Backward0'),
    ('exp_', (), [0.25, 0.5, 0.75], [1.284025416687741, 1.648721270700128, 2.117000016612675],
     [1.284025416687741, 1.648721270700128, 2.117000016612675], 'ExpBackward0'),
    ('expm1_', (), [0.25, 0.5, 0.75], [0.284025416687742, 0.648721270700128, 1.117000016612675],
     [1.284025416687741, 1.648721270700128, 2.117000016612675], 'Expm1Backward0'),
    ("fix_", (), [0.25, 0.5, 0.75], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "TruncBackward0"),
    ("floor_", (), [0.25, 0.5, 0.75], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "FloorBackward0"),
    ("frac_", (), [0.25, 0.5, 0.75], [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], "FracBackward0"),
    ('i0_', (), [0.25, 0.5, 0.75], [1.015686141223608, 1.063483370741324, 1.145646778044001],
     [0.125979108945468, 0.257894305390896, 0.401992461580922], 'I0Backward0'),
    ('log10_', (), [0.25, 0.5, 0.75], [-0.602059991327962, -0.301029995663981, -0.1249387366083],
     [1.737177927613007, 0.868588963806504, 0.579059309204336], 'Log10Backward0'),
    ('log1p_', (), [0.25, 0.5, 0.75], [0.22314355131421, 0.405465108108164, 0.559615787935423],
     [0.8, 0.666666666666667, 0.571428571428571], 'Log1PBackward0'),
    ('log2_', (), [0.25, 0.5, 0.75], [-2.0, -1.0, -0.415037499278844],
     [5.770780163555854, 2.885390081777927, 1.923593387851951], 'Log2Backward0'),
    ('log_', (), [0.25, 0.5, 0.75], [-1.386294361119891, -0.693147180559945, -0.287682072451781],
     [4.0, 2.0, 1.333333333333333], 'LogBackward0'),
    ("neg_", (), [0.25, 0.5, 0.75], [-0.25, -0.5, -0.75], [-1.0, -1.0, -1.0], "NegBackward0"),
    ("negative_", (), [0.25, 0.5, 0.75], [-0.25, -0.5, -0.75], [-1.0, -1.0, -1.0], "NegBackward0"),
    ('rad2deg_', (), [0.25, 0.5, 0.75], [14.32394487827058, 28.64788975654116, 42.97183463481174],
     [57.29577951308232, 57.29577951308232, 57.29577951308232], 'Rad2DegBackward0'),
    ('reciprocal_', (), [0.25, 0.5, 0.75], [4.0, 2.0, 1.333333333333333], [-16.0, -4.0, -1.777777777777778],
     'ReciprocalBackward0'),
    ("relu_", (), [0.25, 0.5, 0.75], [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], "ReluBackward0"),
    ('rsqrt_', (), [0.25, 0.5, 0.75], [2.0, 1.414213562373095, 1.154700538379252],
     [-4.0, -1.414213562373095, -0.769800358919501], 'RsqrtBackward0'),
    ('sigmoid_', (), [0.25, 0.5, 0.75], [0.562176500885798, 0.622459331201855, 0.679178699175393],
     [0.246134082737598, 0.235003712201594, 0.217894993761814], 'SigmoidBackward0'),
    ('sin_', (), [0.25, 0.5, 0.75], [0.247403959254523, 0.479425538604203, 0.681638760023334],
     [0.968912421710645, 0.877582561890373, 0.731688868873821], 'SinBackward0'),
    ('sinc_', (), [0.25, 0.5, 0.75], [0.900316316157106, 0.636619772367581, 0.300105438719035],
     [-0.772838139882234, -1.273239544735163, -1.342949626540777], 'SincBackward0'),
    ('sinh_', (), [0.25, 0.5, 0.75], [0.252612316808168, 0.521095305493747, 0.82231673193583],
     [1.031413099879573, 1.127625965206381, 1.294683284676845], 'SinhBackward0'),
    ('sqrt_', (), [0.25, 0.5, 0.75], [0.5, 0.707106781186548, 0.866025403784439],
     [1.0, 0.707106781186547, 0.577350269189626], 'SqrtBackward0'),
    ("square_", (), [0.25, 0.5, 0.75], [0.0625, 0.25, 0.5625], [0.5, 1.0, 1.5], "PowBackward0"),
    ('tan_', (), [0.25, 0.5, 0.75], [0.255341921221036, 0.54630248984379, 0.931596459944072],
     [1.06519949673285, 1.298446410409525, 1.867871964180328], 'TanBackward0'),
    ('tanh_', (), [0.25, 0.5, 0.75], [0.244918662403709, 0.46211715726001, 0.635148952387287],
     [0.940014848806378, 0.786447732965927, 0.596585808281331], 'TanhBackward0'),
    ("trunc_", (), [0.25, 0.5, 0.75], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "TruncBackward0"),
    ("zero_", (), [0.25, 0.5, 0.75], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "ZeroBackward0"),
    ("round_", (), [0.25, 0.5, 0.75], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0], "RoundBackward0"),
    ("clamp_", (0.3, 0.6), [0.25, 0.5, 0.75], [0.3, 0.5, 0.6], [0.0, 1.0, 0.0], "ClampBackward1"),
    ("clip_", (None, 0.6), [0.25, 0.5, 0.75], [0.25, 0.5, 0.6], [1.0, 1.0, 0.0], "ClampBackward1"),
    ("clamp_max_", (0.6,), [0.25, 0.5, 0.75], [0.25, 0.5, 0.6], [1.0, 1.0, 0.0], "ClampMaxBackward0"),
    ("clamp_min_", (0.3,), [0.25, 0.5, 0.75], [0.3, 0.5, 0.75], [0.0, 1.0, 1.0], "ClampMinBackward0"),
    ("fill_", (2.5,), [0.25, 0.5, 0.75], [2.5, 2.5, 2.5], [0.0, 0.0, 0.0], "FillBackward2"),
    ('xlogy_', (3.0,), [0.25, 0.5, 0.75], [0.274653072167027, 0.549306144334055, 0.823959216501082],
     [1.09861228866811, 1.09861228866811, 1.09861228866811], 'XlogyBackward2'),
    ('logit_', (0.1,), [0.25, 0.5, 0.75], [-1.09861228866811, 0.0, 1.09861228866811],
     [5.333333333333333, 4.0, 5.333333333333333], 'LogitBackward0'),
    ("nan_to_num_", (0.0,), [0.25, 0.5, 0.75], [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], "NanToNumBackward0"),
    ("ldexp_", ('T',), [0.25, 0.5, 0.75], [0.5, 0.25, 3.0], [2.0, 0.5, 4.0], "LdexpBackward0"),

]
# torch 2.13 records these in-place methods under their own nodes; dualgrad's existing methods record the ops
# they are made of (its in-place inverse hyperbolic functions are differentiable, torch's *Backward1 raise)
OWN_NODE_NAMES = {"acosh_", "arccosh_", "arcsinh_", "arctanh_", "asinh_", "atanh_", "ldexp_"}


def _arguments(args: tuple) -> tuple:
    return tuple(dg.tensor([1, -1, 2]) if a == "T" else a for a in args)


@pytest.mark.parametrize("name, args, x, value, grad, node", IN_PLACE, ids=[row[0] for row in IN_PLACE])
def test_top_level_in_place_forms_write_into_their_input_as_torch(name, args, x, value, grad, node):
    leaf = dg.tensor(x, requires_grad=True)
    y = leaf * 1
    version = y._version
    assert getattr(dg, name)(y, *_arguments(args)) is y
    assert y._version == version + 1 and y.dtype == dg.float64
    close(y, value)
    if name not in OWN_NODE_NAMES:
        assert y.grad_fn.name() == node
    y.sum().backward()
    close(leaf.grad, grad)
    assert getattr(dg, name).__name__ == name and "input" in getattr(dg, name).__doc__


@pytest.mark.parametrize("name, signature", [
    ("abs_", "(input)"), ("clamp_", "(input, min=None, max=None)"),
    ("index_put_", "(input, indices, values, accumulate=False)"),
    ("round_", "(input, *, decimals=0)"), ("nan_to_num_", "(input, nan=None, posinf=None, neginf=None)"),
    ("resize_as_", "(input, the_template, *, memory_format=None)"), ("detach", "(input)"),
    ("slice_copy", "(input, dim=0, start=None, end=None, step=1)"), ("expand_copy", "(input, size, *, implicit=False)"),
])
def test_generated_functions_have_torchs_signatures(name, signature):
    assert str(inspect.signature(getattr(dg, name))) == signature


@pytest.mark.parametrize("call, error, message", [
    (lambda: dg.abs_(3.0), TypeError, "abs_(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: dg.abs_(dg.ones(2), 2), TypeError, "abs_() takes 1 positional argument but 2 were given"),
    (lambda: dg.abs_(dg.ones(2, requires_grad=True)), RuntimeError, "a leaf Variable that requires grad"),
    (lambda: dg.clamp_max_(dg.ones(2)), TypeError, "clamp_max_(): missing a required argument: 'max'"),
    (lambda: dg.clamp_(dg.ones(2), low=1), TypeError, "clamp_(): got an unexpected keyword argument 'low'"),
    (lambda: dg.threshold_(dg.ones(2, requires_grad=True), 1.0, 0.0), RuntimeError, "a leaf Variable"),
    (lambda: dg.tensor([2.0], dtype=dg.float32).float_power_(2), RuntimeError,
     "the base given to float_power_ has dtype Float but the operation's result requires dtype Double"),
    (lambda: dg.tensor([2.0]).float_power_(1j), RuntimeError,
     "the base given to float_power_ has dtype Double but the operation's result requires dtype ComplexDouble"),
    (lambda: dg.tensor([4.0]).gcd_(dg.tensor([6.0])), NotImplementedError, '"gcd_cpu" not implemented for \'Double\''),
    (lambda: dg.split_with_sizes(dg.zeros(3), [1, 1]), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 0), but got "
     "split_sizes=[1, 1]"),
    (lambda: dg.split_with_sizes(dg.zeros(3), 1), TypeError,
     "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not int"),
    (lambda: dg.fill(dg.zeros(2), dg.zeros(2)), RuntimeError,
     "fill only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    (lambda: dg.range(3, 0), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (lambda: dg.range(0, 3, 0), RuntimeError, "step must be nonzero"),
    (lambda: dg.range(5), TypeError, 'range() missing 1 required positional arguments: "end"'),
    (lambda: dg.empty_strided((2, 3), (1,)), RuntimeError,
     "dimensionality of sizes (2) must match dimensionality of strides (1)"),
    (lambda: dg.asarray(dg.ones(2), dtype=dg.float32, copy=False), ValueError,
     "can't alias tensor with dtype 'Double' into dtype 'Float'."),
    (lambda: dg.asarray(np.ones(2), dtype=dg.float32, copy=False), ValueError,
     "can't alias tensor with dtype 'Double' into dtype 'Float'."),
    (lambda: dg.asarray([1.0, 2.0], copy=False), ValueError, "can't alias arbitrary sequence into a tensor."),
    (lambda: dg.gradient(dg.ones(3, 4), edge_order=3), RuntimeError,
     "torch.gradient only supports edge_order=1 and edge_order=2."),
    (lambda: dg.gradient(dg.ones(2), edge_order=2), RuntimeError,
     "torch.gradient expected each dimension size to be at least edge_order+1"),
    (lambda: dg.gradient(dg.ones(3, 4), spacing=[1.0, 2.0, 3.0]), RuntimeError,
     "torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() = 2', "
     "since dim argument was not given, but got a list of length 3"),
    (lambda: dg.gradient(dg.ones(3, 4), spacing=[1.0], dim=[0, 1]), RuntimeError,
     "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the "
     "same length, but got a spacing argument of length 1 and a dim argument of length 2."),
    (lambda: dg.gradient(dg.ones(3), spacing=[dg.tensor(2.0)]), RuntimeError,
     "torch.gradient expected each element of spacing to have one dimension, but got an element with 0 dimensions!"),
    (lambda: dg.gradient(dg.ones(3, 4), dim=5), IndexError, "Dimension out of range"),
])
def test_errors_are_torchs(call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as info:
            call()
    assert message in str(info.value)


# method, arguments, input, torch 2.13's value and dtype
NEW_IN_PLACE_METHODS = [
    ("float_power_", (2,), [2.0, 3.0], [4.0, 9.0], dg.float64),
    ("float_power_", (dg.tensor([2, 1]),), [2.0, 3.0], [4.0, 3.0], dg.float64),
    ("gcd_", (dg.tensor([6, 9]),), [4, 6], [2, 3], dg.int64),
    ("lcm_", (dg.tensor([6, 9]),), [4, 6], [12, 18], dg.int64),
    ("ldexp_", (dg.tensor([1, 3]),), [1.0, 2.0], [2.0, 16.0], dg.float64),
    ("nextafter_", (dg.tensor([2.0, 0.0]),), [1.0, 2.0], [1.0000000000000002, 1.9999999999999998], dg.float64),
    ("renorm_", (2, 0, 4.0), [[3.0, 4.0], [0.3, 0.4]], [2.399999952000001, 3.199999936000001, 0.3, 0.4], dg.float64),
    ("igamma_", (dg.tensor([1.0, 3.0]),), [0.5, 2.0], [0.842700792949715, 0.800851726528544], dg.float64),
    ("igammac_", (dg.tensor([1.0, 3.0]),), [0.5, 2.0], [0.157299207050285, 0.199148273471456], dg.float64),
    ("conj_physical_", (), [1 + 2j], [1 - 2j], dg.complex128),
]


@pytest.mark.parametrize("name, args, x, value, dtype", NEW_IN_PLACE_METHODS, ids=[r[0] for r in NEW_IN_PLACE_METHODS])
def test_new_in_place_methods_write_torchs_values(name, args, x, value, dtype):
    t = dg.tensor(x)
    assert getattr(t, name)(*args) is t and t._version == 1 and t.dtype == dtype
    np.testing.assert_allclose(t.numpy().reshape(-1), value, **TOL)


def test_igamma_is_gammainc_differentiable_in_other_only():
    a, x = dg.tensor([0.5, 2.0]), dg.tensor([1.0, 3.0], requires_grad=True)
    for out, value, grad, node in ((dg.igamma(a, x), [0.842700792949715, 0.800851726528544],
                                    [0.207553748710297, 0.149361205103592], "IgammaBackward0"),
                                   (a.igammac(x), [0.157299207050285, 0.199148273471456],
                                    [-0.207553748710297, -0.149361205103592], "IgammacBackward0")):
        assert out.grad_fn.name() == node
        close(out, value)
        x.grad = None
        out.sum().backward()
        close(x.grad, grad)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        dg.igamma(a.requires_grad_(), x).sum().backward()


def test_threshold_passes_the_gradient_where_input_exceeds_the_threshold():
    x = dg.tensor([-1.0, 0.5, 1.0, 2.0], requires_grad=True)
    y = dg.threshold(x, 0.5, -3.0)  # torch 2.13: [-3, -3, 1, 2], ThresholdBackward0, grad [0, 0, 1, 1]
    assert y.grad_fn.name() == "ThresholdBackward0"
    close(y, [-3.0, -3.0, 1.0, 2.0])
    y.sum().backward()
    close(x.grad, [0.0, 0.0, 1.0, 1.0])
    z = x * 1
    assert dg.threshold_(z, 1.0, 7.0) is z and z._version == 1 and z.grad_fn.name() == "ThresholdBackward1"
    close(z, [7.0, 7.0, 7.0, 2.0])
    assert dg.threshold(dg.tensor([1, 2, 3]), 2, 0).tolist() == [0, 0, 3]


def test_threshold_selects_the_gradient():
    """torch 2.13: grad [0, 1, inf] for a gradient [nan, 1, inf] at x = [0.5, 2, 3], threshold 1 (a gradient
    multiplied by the 0/1 derivative gave nan where the input does not pass)."""
    x = dg.tensor([0.5, 2.0, 3.0], requires_grad=True)
    (g,) = dg.grad(dg.threshold(x, 1.0, -1.0), x, dg.tensor([math.nan, 1.0, math.inf]))
    assert g.tolist() == [0.0, 1.0, math.inf]


def test_fill_is_out_of_place_and_sends_the_gradient_to_the_value():
    x, v = dg.ones(2, requires_grad=True), dg.tensor(2.0, requires_grad=True)
    assert dg.fill(x, 3.0).grad_fn.name() == "FillBackward0"
    y = dg.fill(x, v)
    assert y.grad_fn.name() == "FillBackward1" and x.tolist() == [1.0, 1.0]
    y.sum().backward()
    close(x.grad, [0.0, 0.0])
    close(v.grad, [2.0])


def test_detach_forms():
    x = dg.ones(2, requires_grad=True) * 2
    assert not dg.detach(x).requires_grad and x.requires_grad
    assert dg.detach_(x) is x and not x.requires_grad


X = (np.arange(6.0).reshape(2, 3, 1) ** 1.5).tolist()
# name, arguments, torch 2.13's shapes, values, node of the first output and the gradient of
# sum(out_i * (1, 2, 3, ...)) over the outputs
COPIES = [
    ('view_copy', ((3, 2),), [(3, 2)], [[0.0, 1.0, 2.82842712474619, 5.196152422706632, 8.0, 11.180339887498949]],
     'ViewBackward0_copy', [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ('permute_copy', ((2, 0, 1),), [(1, 2, 3)],
     [[0.0, 1.0, 2.82842712474619, 5.196152422706632, 8.0, 11.180339887498949]], 'PermuteBackward0_copy',
     [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ('t_copy', (), [(3, 2)], [[0.0, 5.196152422706632, 1.0, 8.0, 2.82842712474619, 11.180339887498949]],
     'TBackward0_copy', [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]),
    ('transpose_copy', (0, 1), [(3, 2, 1)],
     [[0.0, 5.196152422706632, 1.0, 8.0, 2.82842712474619, 11.180339887498949]], 'TransposeBackward0_copy',
     [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]),
    ('expand_copy', ((2, 3, 2),), [(2, 3, 2)],
     [[0.0, 0.0, 1.0, 1.0, 2.82842712474619, 2.82842712474619, 5.196152422706632, 5.196152422706632, 8.0, 8.0,
       11.180339887498949, 11.180339887498949]],
     'ExpandBackward0_copy', [3.0, 7.0, 11.0, 15.0, 19.0, 23.0]),
    ('diagonal_copy', (1,), [(1, 2)], [[1.0, 11.180339887498949]], 'DiagonalBackward0_copy',
     [0.0, 1.0, 0.0, 0.0, 0.0, 2.0]),
    ('select_copy', (1, -1), [(2, 1)], [[2.82842712474619, 11.180339887498949]], 'SelectBackward0_copy',
     [0.0, 0.0, 1.0, 0.0, 0.0, 2.0]),
    ('slice_copy', (1, 1, None, 1), [(2, 2, 1)], [[1.0, 2.82842712474619, 8.0, 11.180339887498949]],
     'SliceBackward0_copy', [0.0, 1.0, 2.0, 0.0, 3.0, 4.0]),
    ('squeeze_copy', (), [(2, 3)], [[0.0, 1.0, 2.82842712474619, 5.196152422706632, 8.0, 11.180339887498949]],
     'SqueezeBackward0_copy', [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ('unsqueeze_copy', (0,), [(1, 2, 3, 1)],
     [[0.0, 1.0, 2.82842712474619, 5.196152422706632, 8.0, 11.180339887498949]], 'UnsqueezeBackward0_copy',
     [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ('unbind_copy', (1,), [(2, 1), (2, 1), (2, 1)],
     [[0.0, 5.196152422706632], [1.0, 8.0], [2.82842712474619, 11.180339887498949]], 'UnbindBackward0_copy',
     [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]),
    ('split_copy', (2, 1), [(2, 2, 1), (2, 1, 1)],
     [[0.0, 1.0, 5.196152422706632, 8.0], [2.82842712474619, 11.180339887498949]], 'SplitBackward0_copy',
     [1.0, 2.0, 1.0, 3.0, 4.0, 2.0]),
    ('split_with_sizes_copy', ([1, 2], 1), [(2, 1, 1), (2, 2, 1)],
     [[0.0, 5.196152422706632], [1.0, 2.82842712474619, 8.0, 11.180339887498949]], 'SplitWithSizesBackward0_copy',
     [1.0, 1.0, 2.0, 2.0, 3.0, 4.0]),
    ('unfold_copy', (1, 2, 1), [(2, 2, 1, 2)],
     [[0.0, 1.0, 1.0, 2.82842712474619, 5.196152422706632, 8.0, 8.0, 11.180339887498949]], 'UnfoldBackward0_copy',
     [1.0, 5.0, 4.0, 5.0, 13.0, 8.0]),
    ('unsafe_split', (2, 1), [(2, 2, 1), (2, 1, 1)],
     [[0.0, 1.0, 5.196152422706632, 8.0], [2.82842712474619, 11.180339887498949]], 'UnsafeSplitBackward0',
     [1.0, 2.0, 1.0, 3.0, 4.0, 2.0]),
    ('unsafe_chunk', (2, 1), [(2, 2, 1), (2, 1, 1)],
     [[0.0, 1.0, 5.196152422706632, 8.0], [2.82842712474619, 11.180339887498949]], 'UnsafeSplitBackward0',
     [1.0, 2.0, 1.0, 3.0, 4.0, 2.0]),
    ('unsafe_split_with_sizes', ([1, 2], 1), [(2, 1, 1), (2, 2, 1)],
     [[0.0, 5.196152422706632], [1.0, 2.82842712474619, 8.0, 11.180339887498949]], 'UnsafeSplitWithSizesBackward0',
     [1.0, 1.0, 2.0, 2.0, 3.0, 4.0]),
]


@pytest.mark.parametrize("name, args, shapes, values, node, grad", COPIES, ids=[r[0] for r in COPIES])
def test_copies_and_unsafe_splits_are_new_memory_with_torchs_nodes(name, args, shapes, values, node, grad):
    x = dg.tensor(X, requires_grad=True)
    out = getattr(dg, name)(x[:, :, 0] if name == "t_copy" else x, *args)
    outs = out if isinstance(out, tuple) else (out,)
    assert [o.shape for o in outs] == shapes
    for o, v in zip(outs, values):
        close(o, v)
        assert o.grad_fn.name() == node
        assert o._base is None and o.is_contiguous()
    sum((o * dg.arange(1.0, o.numel() + 1).reshape(o.shape)).sum() for o in outs).backward()
    close(x.grad, grad)
    outs[0].detach().zero_()  # the source is not written through a copy
    close(x, np.asarray(X).reshape(-1))


def test_copies_without_a_graph_are_contiguous_and_not_views():
    x = dg.arange(6.0).reshape(2, 3)
    y = dg.t_copy(x)
    assert y._base is None and y.is_contiguous() and y.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    y[0, 0] = 9.0
    assert x[0, 0].item() == 0.0


def test_split_with_sizes_method_gives_views():
    x = dg.ones(3, 2, requires_grad=True)
    pieces = x.split_with_sizes([1, 2])
    assert [p.grad_fn.name() for p in pieces] == ["SplitWithSizesBackward0"] * 2
    assert all(p._base is x for p in pieces)


def test_deprecated_norms_warn_and_match_torch():
    x = dg.tensor(X, requires_grad=True)[:, :, 0]
    with pytest.warns(UserWarning, match="at::frobenius_norm is deprecated"):
        f = dg.frobenius_norm(x, (0, 1))
    assert f.grad_fn.name() == "NormBackward1"
    close(f, [15.0])
    with pytest.warns(UserWarning, match="at::nuclear_norm is deprecated"):
        n = dg.nuclear_norm(x)
    close(n, [16.238226463346464])
    with pytest.warns(UserWarning):
        assert dg.nuclear_norm(x, True).shape == (1, 1)
    with pytest.warns(UserWarning):
        close(dg.nuclear_norm(dg.ones(2, 2, 2)), [2.0, 2.0])


def test_range_includes_its_end_and_warns():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = dg.range(1, 4)
    assert r.dtype == dg.float64 and r.tolist() == [1.0, 2.0, 3.0, 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert dg.range(0, 1, 0.1).shape == (11,)
        assert dg.range(3, 0, -1).tolist() == [3.0, 2.0, 1.0, 0.0]
        assert dg.range(1, 4, dtype=dg.int64).tolist() == [1, 2, 3, 4]
        assert dg.range(0.0, 2, requires_grad=True).requires_grad


def test_asarray_shares_copies_and_sets_requires_grad_as_torch():
    a = np.zeros(2)
    dg.asarray(a)[0] = 5.0
    assert a.tolist() == [5.0, 0.0]
    b = np.zeros(2)
    dg.asarray(b, copy=True)[0] = 5.0
    assert b.tolist() == [0.0, 0.0]
    leaf = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert dg.asarray(leaf) is leaf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dg.asarray(leaf, copy=True).grad_fn.name() == "CloneBackward0"
        cast = dg.asarray(leaf, dtype=dg.float32)
        assert cast.grad_fn.name() == "ToCopyBackward0" and cast.dtype == dg.float32
        assert dg.asarray(leaf, requires_grad=False) is leaf and not leaf.requires_grad
    assert dg.asarray([1, 2]).dtype == dg.int64 and dg.asarray(3.5).shape == ()
    assert dg.asarray([1.0, 2.0], requires_grad=True).is_leaf


GRADIENTS = [
    ('{}', [[1.0, -5.0, -8.5, -13.0, 1.0, -5.0, -8.5, -13.0], [3.0, 4.0, 6.0, 7.0, -3.0, -0.75, 2.0, 2.5]],
     [-8.0, -8.5, -13.0, -6.5, -2.0, 9.5, 5.0, 23.5]),
    ('dict(spacing=2.0, dim=1, edge_order=2)', [[1.0, 2.0, 3.0, 4.0, -2.625, -0.375, 1.0, 1.5]],
     [-1.25, 1.25, -3.75, 3.75, -5.25, 5.25, -7.75, 7.75]),
    ('dict(dim=1, spacing=[dg.tensor([0., 1., 1.5, 3.5])])',
     [[3.0, 7.666666666666667, 8.7, 3.5, -3.0, 1.0, 2.65, 1.25]],
     [-1.666666666666667, -5.800000000000001, 5.166666666666666, 2.3, -7.0, -12.200000000000001, 14.5, 4.7]),
    ('dict(dim=1, spacing=[dg.tensor([0., 1., 1.5, 3.5])], edge_order=2)',
     [[-1.666666666666666, 7.666666666666667, 8.7, -1.700000000000001, -7.000000000000001, 1.0, 2.65, -0.15]],
     [-2.333333333333333, 2.6, -4.166666666666668, 3.9, -10.333333333333334, 10.600000000000001, -8.166666666666664,
      7.9]),
    ('dict(spacing=[0.5, 2.0])',
     [[2.0, -10.0, -17.0, -26.0, 2.0, -10.0, -17.0, -26.0], [1.5, 2.0, 3.0, 3.5, -1.5, -0.375, 1.0, 1.25]],
     [-13.0, -16.25, -21.5, -21.25, 8.0, 16.75, 17.5, 29.75]),
]


@pytest.mark.parametrize("kwargs, values, grad", GRADIENTS)
def test_gradient_matches_torch_with_its_derivative(kwargs, values, grad):
    f = dg.tensor([[1.0, 4.0, 9.0, 16.0], [2.0, -1.0, 0.5, 3.0]], requires_grad=True)
    out = dg.gradient(f, **eval(kwargs))
    assert isinstance(out, tuple) and [o.grad_fn.name() for o in out] == ["CatBackward0"] * len(out)
    for o, v in zip(out, values):
        close(o, v)
    sum((o * dg.arange(1.0, o.numel() + 1).reshape(o.shape)).sum() for o in out).backward()
    close(f.grad, grad)


def test_gradient_of_integers_is_floating_and_of_a_scalar_empty():
    assert dg.gradient(dg.tensor([1, 4, 9, 3]))[0].tolist() == [3.0, 4.0, -0.5, -6.0]
    assert dg.gradient(dg.tensor(1.0)) == ()


def test_empty_strided_typename_and_process_settings():
    e = dg.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)
    assert dg.empty_strided((2, 3), (3, 1), requires_grad=True).requires_grad
    assert dg.empty_strided((0, 3), (3, 1)).shape == (0, 3)
    assert [dg.typename(v) for v in (dg.ones(2), dg.ones(2, dtype=dg.int64), dg.ones(1, dtype=dg.float32), 3,
                                     np.zeros(1), "s")] == [
        "torch.DoubleTensor", "torch.LongTensor", "torch.FloatTensor", "int", "numpy.ndarray", "str"]
    threads = dg.get_num_threads()
    dg.set_num_threads(3)
    assert dg.get_num_threads() == 3
    dg.set_num_threads(threads)
    assert dg.get_num_interop_threads() >= 1
    dg.use_deterministic_algorithms(True)
    assert dg.are_deterministic_algorithms_enabled()
    dg.use_deterministic_algorithms(False)
    dg.set_warn_always(False)
    assert not dg.is_warn_always_enabled()
    dg.set_default_device("cpu")
    assert dg.get_default_device() == dg.device("cpu")
    with pytest.raises(AssertionError, match="CPU only"):
        dg.set_default_device("cuda")
