"""dualgrad.scipy.optimize on large sparse problems: SciPy gets sparse Jacobians and Hessians from dualgrad.sparse,
and the implicit derivative factorises the sparse optimality Jacobian (a sparse Hessian for minimize)."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

pytest.importorskip("scipy.optimize")
pytest.importorskip("dualgrad.sparse")
import scipy.sparse  # noqa: E402

import dualgrad.sparse  # noqa: E402
from dualgrad.implicit import _linear  # noqa: E402
from dualgrad.scipy import optimize  # noqa: E402

N = 1200


def energy(x, a):
    """A chain energy: tridiagonal Hessian ``diag(2 + 12 x^2) + coupling``."""
    return ((x - a) ** 2).sum() + (x ** 4).sum() + 0.5 * ((x[1:] - x[:-1]) ** 2).sum()


def energy_hessian(x):
    main = 2 + 12 * x ** 2 + np.r_[1.0, 2.0 * np.ones(x.size - 2), 1.0]
    return scipy.sparse.diags([-np.ones(x.size - 1), main, -np.ones(x.size - 1)], [-1, 0, 1]).toarray()


@pytest.fixture
def calls(monkeypatch):
    seen = []
    for name in ("hessian_fn", "jacobian_fn"):
        original = getattr(dualgrad.sparse, name)
        monkeypatch.setattr(dualgrad.sparse, name, lambda *a, _n=name, _f=original, **k: seen.append(_n) or _f(*a, **k))
    factor = _linear._sparse_factor
    monkeypatch.setattr(_linear, "_sparse_factor", lambda a, name: seen.append("splu") or factor(a, name))
    return seen


def test_trust_constr_gets_a_sparse_hessian_and_the_derivative_a_sparse_lu(calls):
    a = dg.tensor(np.sin(np.arange(N)), requires_grad=True)
    result = optimize.minimize(energy, dg.zeros(N), args=(a,), method="trust-constr", options={"gtol": 1e-10})
    assert result.success
    assert calls.count("hessian_fn") == 1  # (SciPy's Hessian)
    weights = dg.tensor(np.cos(np.arange(N)))
    g = dg.autograd.grad((result.x * weights).sum(), a)[0].numpy()
    assert calls.count("hessian_fn") == 2 and calls.count("splu") == 1  # (the derivative's Hessian, factorised)
    # dx/da = H^{-1} 2 I
    expected = 2 * np.linalg.solve(energy_hessian(result.x.detach().numpy()), weights.numpy())
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-10)


def sparse_residuals(p, y):
    return dg.cat([p - y, 0.3 * (p[1:] - p[:-1]) ** 2])


def test_least_squares_gets_a_sparse_jacobian_and_the_derivative_matches_dense(calls):
    y = dg.tensor(np.cos(np.arange(N) / 7.0))
    fit = optimize.least_squares(sparse_residuals, dg.zeros(N), args=(y,), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert scipy.sparse.issparse(fit.jac) and "jacobian_fn" in calls
    weights = dg.tensor(np.sin(np.arange(N)))
    leaf = y.detach().requires_grad_()
    refit = optimize.least_squares(sparse_residuals, fit.x, args=(leaf,), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    sparse_grad = dg.autograd.grad((refit.x * weights).sum(), leaf)[0].numpy()
    assert "splu" in calls
    dense = optimize.least_squares(sparse_residuals, fit.x, args=(leaf,), xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                   solve="dense")
    np.testing.assert_allclose(sparse_grad, dg.autograd.grad((dense.x * weights).sum(), leaf)[0].numpy(),
                               rtol=1e-9, atol=1e-12)


def test_root_derivative_of_a_large_sparse_system_uses_sparse_lu(calls):
    def chain(x, p):
        zero = dg.zeros(1)
        return x ** 3 + 3 * x + 0.5 * (dg.cat([zero, x[:-1]]) + dg.cat([x[1:], zero])) - p

    p = dg.tensor(np.linspace(1.0, 2.0, N), requires_grad=True)
    result = optimize.root(chain, dg.zeros(N), args=(p,), method="krylov", tol=1e-12)
    g = dg.autograd.grad(result.x.sum(), p)[0].numpy()
    x = result.x.detach().numpy()
    jacobian = np.diag(3 * x ** 2 + 3) + 0.5 * (np.eye(N, k=1) + np.eye(N, k=-1))
    np.testing.assert_allclose(g, np.linalg.solve(jacobian.T, np.ones(N)), rtol=1e-8)
    assert calls == ["jacobian_fn", "splu"]


def test_bounded_minimize_derivative_factorises_the_sparse_hessian_with_held_rows(calls):
    a = dg.tensor(3 * np.sin(np.arange(N) / 5.0), requires_grad=True)
    result = optimize.minimize(energy, dg.zeros(N), args=(a,), method="L-BFGS-B", bounds=[(-0.5, 0.5)] * N,
                               options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 5000})
    x = result.x.detach().numpy()
    held = np.abs(x) >= 0.5 - 1e-9
    assert 0 < held.sum() < N
    weights = dg.tensor(np.cos(np.arange(N)))
    g = dg.autograd.grad((result.x * weights).sum(), a)[0].numpy()
    assert calls.count("splu") == 1 and "hessian_fn" in calls
    # held coordinates do not move; the free ones solve H_ff dx_f = 2 da_f (rows of H at held coordinates dropped)
    hessian = energy_hessian(x)
    free = ~held
    expected = np.zeros(N)
    expected[free] = 2 * np.linalg.solve(hessian[np.ix_(free, free)].T, weights.numpy()[free])
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-10)
