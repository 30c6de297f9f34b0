"""Unmodified NumPy code, written as a user would (``import numpy as np`` only), differentiated by dualgrad.

The functions below know nothing about dualgrad. Their gradients, Jacobians and
Hessians from ``dualgrad.func`` / ``dualgrad.functional`` are checked against
central differences of the same functions run on plain ndarrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg


# -- third-party-style NumPy code --------------------------------------------------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic_loss(w):
    X = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7], [-0.2, 0.8, 0.1], [1.0, 1.0, 1.0]])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.01 * np.dot(w, w)


def softmax(z, axis=-1):
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def cross_entropy(logits):
    labels = np.array([2, 0])
    p = softmax(np.reshape(logits, (2, 3)))
    return -np.mean(np.log(p[np.arange(2), labels]))


def mlp(params):
    w1 = np.reshape(params[:6], (3, 2))
    b1 = params[6:8]
    w2 = params[8:10]
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    hidden = np.tanh(np.dot(x, w1) + b1)
    return np.sum(np.square(hidden @ w2 - np.sin(x[:, 0])))


def pendulum_energy(state):
    theta, omega = state[0], state[1]
    kinetic = 0.5 * omega ** 2
    potential = 9.81 * (1.0 - np.cos(theta))
    return kinetic + potential


def spring_chain(positions):
    """Energy of masses on springs, with a clipped penalty for neighbours closer than 0.2."""
    gaps = np.diff(np.concatenate([[0.0], positions, [4.0]]))
    stretch = gaps - 1.0
    overlap = np.clip(0.2 - gaps, 0.0, None)
    return 0.5 * np.sum(stretch ** 2) + 10.0 * np.sum(overlap ** 2)


def checked_spring_chain(positions):
    """The same, refusing crossed masses (data-dependent control flow: fine outside vmap)."""
    if np.any(np.diff(positions) < 0):
        raise ValueError("masses crossed")
    return spring_chain(positions)


def polar_to_cartesian(r_theta):
    r, theta = r_theta[..., 0], r_theta[..., 1]
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=-1)


def normalize_rows(a):
    a = np.reshape(a, (2, 3))
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    return np.where(norms > 0, a / norms, 0.0).flatten()


def gaussian_log_likelihood(params):
    data = np.array([0.3, -1.2, 0.8, 2.1, 0.0])
    mu, log_sigma = params[0], params[1]
    sigma = np.exp(log_sigma)
    return np.sum(-0.5 * ((data - mu) / sigma) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi))


SCALAR_FUNCTIONS = {
    "rosenbrock": (rosenbrock, np.array([-1.2, 1.0, 0.5])),
    "logistic_loss": (logistic_loss, np.array([0.3, -0.1, 0.2])),
    "cross_entropy": (cross_entropy, np.array([0.1, 0.5, -0.3, 1.0, -0.2, 0.4])),
    "mlp": (mlp, np.linspace(-0.5, 0.6, 10)),
    "pendulum_energy": (pendulum_energy, np.array([0.4, -1.3])),
    "spring_chain": (spring_chain, np.array([0.9, 2.1, 2.95])),
    "checked_spring_chain": (checked_spring_chain, np.array([0.9, 1.95, 3.1])),
    "gaussian_log_likelihood": (gaussian_log_likelihood, np.array([0.2, -0.3])),
}
VECTOR_FUNCTIONS = {
    "polar_to_cartesian": (polar_to_cartesian, np.array([[1.5, 0.3], [0.7, -2.0]])),
    "normalize_rows": (normalize_rows, np.array([0.3, -1.0, 2.0, 1.1, 0.2, -0.4])),
}


# -- finite differences on plain ndarrays --------------------------------------------------------------------
def fd_jacobian(f, x, eps=1e-6):
    """d f(x) / dx by central differences, shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    out_shape = np.shape(f(x))
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def fd_hessian(f, x, eps=1e-4):
    gradient = lambda p: fd_jacobian(f, p, eps=1e-6)
    return fd_jacobian(gradient, x, eps=eps)


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_grad_of_numpy_code(name):
    f, x = SCALAR_FUNCTIONS[name]
    gradient = dg.func.grad(f)(dg.tensor(x))
    np.testing.assert_allclose(gradient.numpy(), fd_jacobian(f, x), rtol=1e-6, atol=1e-7)


# Hessians use vmap, where data-dependent Python control flow cannot run.
VMAPPABLE = sorted(set(SCALAR_FUNCTIONS) - {"checked_spring_chain"})


@pytest.mark.parametrize("name", VMAPPABLE)
def test_hessian_of_numpy_code(name):
    f, x = SCALAR_FUNCTIONS[name]
    hessian = dg.func.hessian(f)(dg.tensor(x))
    expected = fd_hessian(f, x)
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(hessian.numpy(), expected, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_allclose(hessian.numpy(), hessian.numpy().T, atol=1e-10)


@pytest.mark.parametrize("name", VMAPPABLE)
def test_functional_hessian_agrees_with_func_hessian(name):
    f, x = SCALAR_FUNCTIONS[name]
    np.testing.assert_allclose(dg.functional.hessian(f, dg.tensor(x)).numpy(),
                               dg.func.hessian(f)(dg.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(VECTOR_FUNCTIONS))
@pytest.mark.parametrize("mode", ["functional", "jacrev", "jacfwd"])
def test_jacobian_of_numpy_code(name, mode):
    f, x = VECTOR_FUNCTIONS[name]
    if mode == "functional":
        jacobian = dg.functional.jacobian(f, dg.tensor(x))
    else:
        jacobian = getattr(dg.func, mode)(f)(dg.tensor(x))
    np.testing.assert_allclose(jacobian.numpy(), fd_jacobian(f, x), rtol=1e-6, atol=1e-7)


def test_user_code_errors_still_surface():
    with pytest.raises(ValueError, match="masses crossed"):
        dg.func.grad(checked_spring_chain)(dg.tensor([2.0, 1.0, 3.0]))


def test_numpy_code_is_vmapped():
    xs = np.array([[-1.2, 1.0, 0.5], [0.3, 0.2, 0.1], [1.0, 1.0, 1.0]])
    batched = dg.vmap(dg.func.grad(rosenbrock))(dg.tensor(xs))
    for k, x in enumerate(xs):
        np.testing.assert_allclose(batched.numpy()[k], fd_jacobian(rosenbrock, x), rtol=1e-6, atol=1e-6)
