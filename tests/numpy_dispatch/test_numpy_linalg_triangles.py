"""NumPy's Hermitian routines read one triangle: called on Tensors, their derivative is that of the
function NumPy computes, along every perturbation (not only Hermitian ones). ``dualgrad.linalg``'s
functions keep torch's convention: the derivative of ``f((A + A^H) / 2)``."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

RNG = np.random.default_rng(7)


def _matrix(dtype):
    a = RNG.standard_normal((2, 3, 3))
    if dtype == "complex":
        a = a + 1j * RNG.standard_normal((2, 3, 3))
    a = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(3)
    # not Hermitian: the triangle not read differs, and the diagonal has an imaginary part (ignored)
    return a + np.triu(RNG.standard_normal((3, 3)), 1) + (0.3j * np.eye(3) if dtype == "complex" else 0)


def _direction(a):
    v = RNG.standard_normal(a.shape)
    return v + 1j * RNG.standard_normal(a.shape) if np.iscomplexobj(a) else v


# functions of what NumPy returns that do not depend on LAPACK's choice of signs (phases)
NUMPY_FUNCTIONS = {
    "eigh": lambda a: np.linalg.eigh(a)[0],
    "eigh vectors": lambda a: (lambda v: (v * np.arange(1.0, 4.0)) @ np.conj(np.swapaxes(v, -1, -2)))(
        np.linalg.eigh(a)[1]),
    "eigh UPLO=U": lambda a: np.linalg.eigh(a, UPLO="U").eigenvalues,
    "eigvalsh": lambda a: np.linalg.eigvalsh(a),
    "eigvalsh UPLO=U": lambda a: np.linalg.eigvalsh(a, "U"),
    "cholesky": lambda a: np.linalg.cholesky(a),
    "cholesky upper": lambda a: np.linalg.cholesky(a, upper=True),
    "svd hermitian": lambda a: np.linalg.svd(a, hermitian=True, compute_uv=False),
    "pinv hermitian": lambda a: np.linalg.pinv(a, hermitian=True),
}


def _fd(f, a, v, eps=1e-6):
    return (f(a + eps * v) - f(a - eps * v)) / (2 * eps)


def _array(result):
    return result.detach().numpy() if isinstance(result, dg.Tensor) else np.asarray(result)


@pytest.mark.parametrize("dtype", ["real", "complex"])
@pytest.mark.parametrize("name", list(NUMPY_FUNCTIONS))
def test_numpy_function_is_differentiated_as_numpy_computes_it(name, dtype):
    f = NUMPY_FUNCTIONS[name]
    a = _matrix(dtype)
    v = _direction(a)
    want = _fd(f, a, v)
    value, tangent = dg.func.jvp(f, (dg.tensor(a),), (dg.tensor(v),))
    np.testing.assert_allclose(_array(value), f(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_array(tangent), want, rtol=1e-6, atol=1e-7)
    u = _direction(want)
    x = dg.tensor(a, requires_grad=True)
    (g,) = dg.autograd.grad(f(x), x, dg.tensor(u))
    np.testing.assert_allclose(np.vdot(g.numpy(), v).real, np.vdot(u, want).real, rtol=1e-6)


def test_matrix_rank_hermitian_reads_the_lower_triangle():
    a = np.array([[1.0, 5.0], [0.0, 1.0]])  # NumPy's hermitian rank: of the identity
    assert np.linalg.matrix_rank(dg.tensor(a), hermitian=True).item() == np.linalg.matrix_rank(a, hermitian=True)


def test_dualgrad_linalg_keeps_torchs_convention():
    a = _matrix("real")[0]
    v = np.triu(RNG.standard_normal((3, 3)), 1)  # a perturbation of the upper triangle only
    _, numpy_tangent = dg.func.jvp(np.linalg.eigvalsh, (dg.tensor(a),), (dg.tensor(v),))
    _, torch_tangent = dg.func.jvp(dg.linalg.eigvalsh, (dg.tensor(a),), (dg.tensor(v),))
    np.testing.assert_allclose(numpy_tangent.numpy(), 0.0, atol=1e-12)  # NumPy's function never reads it
    # torch's: the derivative along the symmetric part of the direction
    np.testing.assert_allclose(torch_tangent.numpy(), _fd(np.linalg.eigvalsh, a, (v + v.T) / 2), rtol=1e-6)
    x = dg.tensor(a, requires_grad=True)
    (g,) = dg.autograd.grad(dg.linalg.eigvalsh(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), g.numpy().T)  # torch's: a symmetric gradient


def test_bad_uplo_names_the_function_and_argument():
    with pytest.raises(ValueError, match="eigh: UPLO argument must be 'L' or 'U', got 'X'"):
        np.linalg.eigh(dg.tensor(np.eye(2)), UPLO="X")
