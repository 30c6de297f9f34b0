"""Floating and complex dtypes: gradients and tangents keep the input's dtype, type promotion,
float16/bfloat16 accuracy, and complex autograd's conjugate-Wirtinger convention."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD

ml_dtypes = pytest.importorskip("ml_dtypes")
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
REAL = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), BFLOAT16]
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]


def loss(x):
    """A real scalar through NumPy calls: holomorphic ops, then |.|^2 for complex values."""
    y = np.sin(x) * x + np.exp(x * 0.5)
    return np.sum(np.real(y * np.conj(y))) if np.iscomplexobj(y) else np.sum(y)


@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=str)
def test_gradient_keeps_the_input_dtype(dtype):
    x = dg.tensor(np.array([0.5, -1.0, 1.5]).astype(dtype), requires_grad=True)
    loss(x).backward()
    assert x.grad.dtype == dtype


@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=str)
def test_tangent_keeps_the_input_dtype(dtype):
    x = np.array([0.5, -1.0, 1.5]).astype(dtype)
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(x), dg.tensor(np.ones(3, dtype)))
        primal, tangent = fwAD.unpack_dual(np.sin(dual) * dual + np.exp(dual) * 0.5)
    assert primal.dtype == tangent.dtype == dtype


@pytest.mark.parametrize("first, second", [
    (np.float32, np.float64), (np.float16, np.float32), (np.float16, np.float64),
    (np.complex64, np.float32), (np.complex64, np.float64), (np.float32, np.complex128),
])
def test_mixed_dtypes_follow_numpy_promotion(first, second):
    a = dg.tensor(np.array([0.5, 1.5], first), requires_grad=True)
    b = dg.tensor(np.array([2.0, -1.0], second), requires_grad=True)
    out = np.multiply(a, b) + np.sin(a) * b
    assert out.dtype == np.result_type(first, second)
    np.real(np.sum(out)).backward()
    assert a.grad.dtype == first and b.grad.dtype == second


# (bfloat16 too: NumPy with ml_dtypes alone would promote bfloat16 and a Python float to float32)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64, BFLOAT16], ids=str)
def test_python_scalars_do_not_upcast(dtype):
    x = dg.tensor(np.array([0.5, 1.5], dtype), requires_grad=True)
    for out in (x * 2.5, np.add(x, 1), np.power(x, 2.0), 3.0 - x, np.exp(x * 0.5)):
        assert out.dtype == np.dtype(dtype)


# Measured worst error of a float16 / bfloat16 gradient relative to the gradient's scale, for
# sum(sin(x) * x**2 + exp(x / 2)) at 256 points in [-2, 2]: float16 ~9e-4 (eps 9.8e-4),
# bfloat16 ~9e-3 (eps 7.8e-3), float32 ~1.5e-7 (eps 1.2e-7): a few units of the dtype's epsilon.
@pytest.mark.parametrize("dtype, eps", [(np.float16, 9.77e-4), (ml_dtypes.bfloat16, 7.81e-3),
                                        (np.float32, 1.19e-7)], ids=str)
def test_low_precision_gradient_accuracy(dtype, eps):
    x = np.random.default_rng(0).uniform(-2.0, 2.0, 256)
    f = lambda t: np.sum(np.sin(t) * t ** 2 + np.exp(t / 2))
    exact = 2 * x * np.sin(x) + x ** 2 * np.cos(x) + 0.5 * np.exp(x / 2)
    gradient = dg.func.grad(f)(dg.tensor(x.astype(dtype)))
    assert gradient.dtype == np.dtype(dtype)
    error = np.max(np.abs(gradient.numpy().astype(np.float64) - exact)) / np.max(np.abs(exact))
    assert error < 4 * eps


# -- complex autograd: z.grad == dL/da + 1j dL/db for a real loss L(a + ib) -------------------------------
WEIGHTS = np.array([0.7, -1.3, 0.4])
COEFFICIENTS = np.array([0.5 - 1.0j, 1.2 + 0.3j, -0.8 + 0.6j])
COMPLEX_OPS = {
    # real-valued, non-holomorphic
    "abs": (lambda z: np.abs(z), True),
    "angle": (lambda z: np.angle(z), True),
    "real": (lambda z: np.real(z), True),
    "imag": (lambda z: np.imag(z), True),
    # complex-valued: non-holomorphic, then holomorphic
    "conj": (lambda z: np.conj(z), False),
    "z_conj_z": (lambda z: z * np.conj(z), False),
    "sin": (lambda z: np.sin(z), False),
    "exp": (lambda z: np.exp(z), False),
    "square": (lambda z: np.square(z) / (z + 3.0), False),
    "log": (lambda z: np.log(z), False),
    "sqrt": (lambda z: np.sqrt(z), False),
    "rsqrt": (lambda z: 1 / np.sqrt(z), False),
    "reciprocal": (lambda z: 1 / z, False),
    "cube": (lambda z: z ** 3, False),
    "cos": (lambda z: np.cos(z), False),
    "tan": (lambda z: np.tan(z), False),
    "sinh": (lambda z: np.sinh(z), False),
    "cosh": (lambda z: np.cosh(z), False),
    "tanh": (lambda z: np.tanh(z), False),
    "asin": (lambda z: np.arcsin(z), False),
    "acos": (lambda z: np.arccos(z), False),
    "atan": (lambda z: np.arctan(z), False),
    "asinh": (lambda z: np.arcsinh(z), False),
    "acosh": (lambda z: np.arccosh(z), False),  # (a point with Re z < 0: the branch of the derivative)
    "atanh": (lambda z: np.arctanh(z), False),
    "expm1": (lambda z: np.expm1(z), False),
    "log1p": (lambda z: np.log1p(z), False),
    "log2": (lambda z: np.log2(z), False),
    "log10": (lambda z: np.log10(z), False),
    "sigmoid": (lambda z: dg.sigmoid(z) if isinstance(z, dg.Tensor) else 1 / (1 + np.exp(-z)), False),
}


def _real_loss(op, real_valued):
    if real_valued:
        return lambda z: np.sum(op(z) * WEIGHTS)
    return lambda z: np.sum(np.real(op(z) * COEFFICIENTS))


@pytest.mark.parametrize("name", sorted(COMPLEX_OPS))
def test_complex_gradient_is_conjugate_wirtinger(name):
    op, real_valued = COMPLEX_OPS[name]
    f = _real_loss(op, real_valued)
    z0 = np.array([0.8 + 0.6j, -1.1 + 0.4j, 0.3 - 1.2j])
    z = dg.tensor(z0, requires_grad=True)
    f(z).backward()
    eps = 1e-6
    expected = np.zeros(3, np.complex128)
    for k in range(3):
        step = np.zeros(3)
        step[k] = eps
        d_real = (f(z0 + step) - f(z0 - step)) / (2 * eps)
        d_imag = (f(z0 + 1j * step) - f(z0 - 1j * step)) / (2 * eps)
        expected[k] = d_real + 1j * d_imag
    np.testing.assert_allclose(z.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_abs_squared_gives_two_z():
    z = dg.tensor(np.array([1.0 + 2.0j, -0.5 + 0.1j]), requires_grad=True)
    np.sum(np.abs(z) ** 2).backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy())


@pytest.mark.parametrize("name", sorted(COMPLEX_OPS))
def test_complex_forward_mode_matches_finite_differences(name):
    op, _ = COMPLEX_OPS[name]
    z0 = np.array([0.8 + 0.6j, -1.1 + 0.4j, 0.3 - 1.2j])
    direction = np.array([0.3 - 0.2j, 1.0 + 0.5j, -0.4 + 0.9j])
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(z0), dg.tensor(direction))
        tangent = fwAD.unpack_dual(op(dual)).tangent.numpy()
    eps = 1e-6
    expected = (op(z0 + eps * direction) - op(z0 - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


# -- errors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.uint8], ids=str)
def test_requires_grad_on_unsupported_dtype_names_it(dtype):
    with pytest.raises(RuntimeError, match=f"floating point and complex.*{np.dtype(dtype).name}"):
        dg.tensor(np.zeros(2, dtype), requires_grad=True)
    t = dg.tensor(np.zeros(2, dtype))
    with pytest.raises(RuntimeError, match=np.dtype(dtype).name):
        t.requires_grad_()
    assert not t.requires_grad


def test_complex_tangent_for_real_input_is_an_error():
    with fwAD.dual_level():
        with pytest.raises(ValueError, match=r"tangent is complex .* primal is real"):
            fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0j, 0.0j]))
