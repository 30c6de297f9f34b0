"""``dualgrad.fft``: NumPy's values, derivatives in every mode, complex inputs, errors.

The four ops (fftn, ifftn, rfftn, irfftn) are also walked by the op-table tests
through ``op_samples.py``; here every public function is checked against NumPy
over Hypothesis shapes, sizes, axes and norms, and against finite differences in
reverse, forward and second order, with complex inputs by the
conjugate-Wirtinger identity.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_forward, check_second_order, check_vmap, check_wirtinger
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg

NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]
REAL_INPUT_ONLY = {"rfft", "rfft2", "rfftn"}


@given(name=st.sampled_from(ONE_D), shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
       n=st.none() | st.integers(1, 7), norm=st.sampled_from(NORMS), data=st.data())
def test_one_dimensional_transforms_equal_numpy(name, shape, n, norm, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    if name == "irfft" and n is None and shape[axis] == 1:
        n = 2  # NumPy's default output length 2 (m - 1) would be 0
    x = np.random.default_rng(0).standard_normal(shape)
    if name not in REAL_INPUT_ONLY:
        x = x + 1j * np.random.default_rng(1).standard_normal(shape)
    ours = getattr(dg.fft, name)(dg.tensor(x), n=n, axis=axis, norm=norm)
    theirs = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-12)


@given(name=st.sampled_from(N_D), shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=4),
       norm=st.sampled_from(NORMS), data=st.data())
def test_multi_dimensional_transforms_equal_numpy(name, shape, norm, data):
    axes = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                                          unique=True).map(tuple))
    if name.endswith("2"):
        axes = (-2, -1) if axes is None or len(axes) < 2 else axes[:2]
    count = len(shape) if axes is None else len(axes)
    s = data.draw(st.none() | st.lists(st.integers(1, 5), min_size=count, max_size=count).map(tuple))
    x = np.random.default_rng(0).standard_normal(shape)
    if name not in REAL_INPUT_ONLY:
        x = x + 1j * np.random.default_rng(1).standard_normal(shape)
    ours = getattr(dg.fft, name)(dg.tensor(x), s=s, axes=axes, norm=norm)
    theirs = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-12)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), data=st.data())
def test_shifts_and_frequencies_equal_numpy(shape, data):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    axes = data.draw(st.none() | st.integers(0, len(shape) - 1))
    np.testing.assert_array_equal(dg.fft.fftshift(dg.tensor(x), axes).numpy(), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(dg.fft.ifftshift(dg.tensor(x), axes).numpy(), np.fft.ifftshift(x, axes))
    np.testing.assert_allclose(dg.fft.fftfreq(shape[0], 0.1).numpy(), np.fft.fftfreq(shape[0], 0.1))
    np.testing.assert_allclose(dg.fft.rfftfreq(shape[0], 0.1).numpy(), np.fft.rfftfreq(shape[0], 0.1))


def _parts(z):
    return (z.real, z.imag) if z.is_complex() else z


# Real-input calls (complex outputs split into real and imaginary parts), with sizes that pad and crop.
CALLS = {
    "fft_pad": lambda x: _parts(dg.fft.fft(x, n=7, norm="ortho")),
    "ifft_crop": lambda x: _parts(dg.fft.ifft(x, n=3, axis=0)),
    "rfft": lambda x: _parts(dg.fft.rfft(x, norm="forward")),
    "rfft_odd": lambda x: _parts(dg.fft.rfft(x, n=5, axis=0)),
    "irfft": lambda x: dg.fft.irfft(x * 1j + x * x),
    "irfft_odd_n": lambda x: dg.fft.irfft(x + 1j * x.flip(-1), n=7, norm="ortho"),
    "fft2": lambda x: _parts(dg.fft.fft2(x, s=(3, 6))),
    "ifft2": lambda x: _parts(dg.fft.ifft2(x, norm="forward")),
    "fftn": lambda x: _parts(dg.fft.fftn(x, axes=(1,))),
    "ifftn": lambda x: _parts(dg.fft.ifftn(x, s=(5, 2), norm="ortho")),
    "rfftn": lambda x: _parts(dg.fft.rfftn(x, s=(2, 4))),
    "rfft2": lambda x: _parts(dg.fft.rfft2(x, norm="ortho")),
    "irfftn": lambda x: dg.fft.irfftn(x + 1j * x * x, s=(4, 6)),
    "irfft2": lambda x: dg.fft.irfft2(x * (1 + 1j), norm="forward"),
    "fftshift": lambda x: dg.fft.fftshift(x * x),
    "ifftshift": lambda x: dg.fft.ifftshift(x * x, axes=1),
    "round_trip": lambda x: dg.fft.irfftn(dg.fft.rfftn(x * x), s=x.shape),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_derivatives_in_all_modes(name):
    x = np.random.default_rng(5).standard_normal((4, 5))
    check_first_order(CALLS[name], [x])
    check_forward(CALLS[name], [x])
    check_second_order(CALLS[name], [x])


@pytest.mark.parametrize("name", sorted(CALLS))
def test_vmap_matches_loop(name):
    check_vmap(lambda x: _first(CALLS[name](x)), [np.random.default_rng(6).standard_normal((4, 5))])


def _first(result):
    return result[0] if isinstance(result, tuple) else result


COMPLEX_CALLS = {
    "fft": lambda z: dg.fft.fft(z, n=6),
    "ifft": lambda z: dg.fft.ifft(z, axis=0, norm="ortho"),
    "fftn": lambda z: dg.fft.fftn(z, s=(2, 3)),
    "ifft2": lambda z: dg.fft.ifft2(z, norm="forward"),
    "irfft": lambda z: dg.fft.irfft(z),
    "irfft_odd": lambda z: dg.fft.irfft(z, n=5, axis=0, norm="ortho"),
    "irfftn": lambda z: dg.fft.irfftn(z, s=(3, 4)),
    "power_spectrum": lambda z: dg.fft.fft(z).abs() ** 2,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CALLS))
def test_complex_inputs_follow_conjugate_wirtinger(name):
    rng = np.random.default_rng(7)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check_wirtinger(COMPLEX_CALLS[name], [z])


def test_float32_gives_complex64_and_float32_gradients():
    x = dg.tensor(np.ones(4, dtype=np.float32), requires_grad=True)
    spectrum = dg.fft.rfft(x)
    assert spectrum.dtype == np.complex64
    (grad,) = dg.grad(spectrum.abs().sum(), x)
    assert grad.dtype == np.float32


def test_gradient_of_parseval_energy():
    x = np.random.default_rng(8).standard_normal(6)
    t = dg.tensor(x, requires_grad=True)
    (grad,) = dg.grad((dg.fft.fft(t, norm="ortho").abs() ** 2).sum(), t)  # = ||x||^2
    np.testing.assert_allclose(grad.numpy(), 2 * x)


@pytest.mark.parametrize("call, error, words", [
    (lambda: dg.fft.fft(dg.ones(4), norm="bad"), ValueError, ["norm", "'bad'", "ortho"]),
    (lambda: dg.fft.rfft(dg.ones(4) * 1j), TypeError, ["rfft", "real", "complex128"]),
    (lambda: dg.fft.fft(dg.ones(4), n=0), ValueError, ["fft", "Invalid number of FFT data points (0)"]),
    (lambda: dg.fft.irfft(dg.ones(1)), ValueError, ["irfft", "(0)"]),
    (lambda: dg.fft.fft(dg.ones(4), axis=2), ValueError, ["fft", "axis 2", "(4,)"]),
    (lambda: dg.fft.fftn(dg.ones(2, 2), axes=(0, 0)), ValueError, ["fftn", "repeated axes"]),
    (lambda: dg.fft.fftn(dg.ones(2, 2), s=(2,), axes=(0, 1)), ValueError, ["fftn", "s=(2,)", "axes=(0, 1)"]),
    (lambda: dg.fft.fft(dg.ones(2), out=np.zeros(2, complex)), TypeError, ["fft", "out="]),
])
def test_bad_arguments_raise_clear_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(("name", "numpy_kw", "dim"), [
    ("fft", "axis", 0), ("ifft", "axis", 0), ("rfft", "axis", 0), ("irfft", "axis", 0),
    ("fft2", "axes", (0, 1)), ("ifft2", "axes", (1, 0)), ("rfft2", "axes", (0, 1)), ("irfft2", "axes", (0, 1)),
    ("fftn", "axes", (0,)), ("ifftn", "axes", (1,)), ("rfftn", "axes", (1, 0)), ("irfftn", "axes", (0, 1)),
    ("fftshift", "axes", 0), ("ifftshift", "axes", (0, 1)),
])
def test_torch_dim_keyword_is_numpy_axis(name, numpy_kw, dim):
    """torch.fft's functions name the axes ``dim``: code ported from torch passes ``dim=``."""
    x = dg.tensor(np.random.default_rng(3).standard_normal((4, 6)))
    fn = getattr(dg.fft, name)
    np.testing.assert_array_equal(fn(x, dim=dim).numpy(), fn(x, **{numpy_kw: dim}).numpy())
    with pytest.raises(TypeError, match=f"{name}\\(\\) got both NumPy's axis/axes and torch's dim"):
        fn(x, **{numpy_kw: dim, "dim": dim})
