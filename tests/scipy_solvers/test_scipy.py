"""dualgrad.scipy: exact derivatives for scipy.optimize (skipped when SciPy is missing)."""

from __future__ import annotations

import builtins
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dualgrad.scipy as dgs

optimize = pytest.importorskip("scipy.optimize")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def shifted_quartic(x, center):
    return np.sum((x - center) ** 4 + (x - center) ** 2) + x[0] * x[-1]


X0 = np.array([1.3, 0.7, 0.8, 1.9])  # the start of SciPy's tutorial


def fd_gradient(f, x, eps=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * eps) for e in np.eye(x.size) * eps])


def test_fun_and_jac_match_finite_differences():
    problem = dgs.minimize_problem(rosenbrock)
    assert problem.fun(X0) == pytest.approx(rosenbrock(X0))
    assert isinstance(problem.fun(X0), float)
    np.testing.assert_allclose(problem.jac(X0), fd_gradient(rosenbrock, X0), rtol=1e-6)
    np.testing.assert_allclose(problem.jac(X0), optimize.rosen_der(X0), rtol=1e-12)


def test_hess_and_hessp_match_scipy_and_finite_differences():
    problem = dgs.minimize_problem(rosenbrock)
    np.testing.assert_allclose(problem.hess(X0), optimize.rosen_hess(X0), rtol=1e-12)
    fd = np.stack([fd_gradient(lambda x: float(problem.jac(x)[i]), X0) for i in range(X0.size)])
    np.testing.assert_allclose(problem.hess(X0), fd, rtol=1e-5, atol=1e-4)
    p = np.array([0.3, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(problem.hessp(X0, p), optimize.rosen_hess_prod(X0, p), rtol=1e-12)


def test_extra_args_reach_the_function():
    center = np.array([0.5, -0.5])
    problem = dgs.minimize_problem(shifted_quartic)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(problem.jac(x, center), fd_gradient(lambda p: shifted_quartic(p, center), x),
                               rtol=1e-6)
    result = optimize.minimize(problem.fun, x, args=(center,), jac=problem.jac, hess=problem.hess,
                               method="trust-exact")
    assert result.success
    np.testing.assert_allclose(problem.jac(result.x, center), 0.0, atol=1e-6)


def test_value_and_gradient_are_cached_per_point():
    calls = []

    def counted(x):
        calls.append(1)
        return rosenbrock(x)

    problem = dgs.minimize_problem(counted)
    problem.fun(X0)
    problem.jac(X0)
    assert len(calls) == 1
    problem.jac(X0 + 1.0)
    assert len(calls) == 2


@pytest.mark.parametrize("method", ["BFGS", "Newton-CG", "trust-ncg", "trust-exact", "trust-krylov",
                                    "L-BFGS-B"])
def test_minimize_finds_the_rosenbrock_minimum(method):
    result = dgs.minimize(rosenbrock, X0, method=method, options={"maxiter": 2000})
    np.testing.assert_allclose(result.x, np.ones(4), atol=1e-4)


def test_newton_cg_uses_few_iterations_with_exact_hessian_products():
    result = dgs.minimize(rosenbrock, X0, method="Newton-CG", options={"xtol": 1e-10})
    assert result.success and result.nhev > 0
    np.testing.assert_allclose(result.x, np.ones(4), atol=1e-6)


def exponential_residuals(params, t, y):
    return params[0] * np.exp(-params[1] * t) + params[2] - y


def test_residual_jacobian_matches_finite_differences():
    t = np.linspace(0.0, 3.0, 7)
    y = 2.0 * np.exp(-0.7 * t) + 0.1
    problem = dgs.residual_problem(exponential_residuals)
    params = np.array([1.5, 0.5, 0.0])
    jac = problem.jac(params, t, y)
    assert jac.shape == (7, 3)
    fd = np.stack([(exponential_residuals(params + e, t, y) - exponential_residuals(params - e, t, y)) / 2e-6
                   for e in np.eye(3) * 1e-6], axis=1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


def test_residual_jacobian_with_fewer_residuals_than_parameters_uses_reverse_mode():
    problem = dgs.residual_problem(lambda p: np.stack([np.sum(p ** 2), np.prod(p)]))
    p = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(problem.jac(p), [[2.0, 4.0, 6.0], [6.0, 3.0, 2.0]])


def test_least_squares_recovers_the_parameters():
    t = np.linspace(0.0, 3.0, 30)
    y = 2.0 * np.exp(-0.7 * t) + 0.1
    fit = dgs.least_squares(exponential_residuals, [1.0, 0.2, 0.0], args=(t, y))
    np.testing.assert_allclose(fit.x, [2.0, 0.7, 0.1], atol=1e-8)


def test_missing_scipy_raises_a_clear_import_error(monkeypatch):
    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    for module in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ImportError, match=r"dualgrad.scipy needs SciPy.*pip install 'dualgrad\[scipy\]'"):
        dgs.minimize(rosenbrock, X0)
    with pytest.raises(ImportError, match="needs SciPy"):
        dgs.least_squares(exponential_residuals, [1.0, 0.2, 0.0])
    assert dgs.minimize_problem(rosenbrock).fun(X0) == pytest.approx(rosenbrock(X0))


def test_example_fits_the_oscillation_and_the_logistic_regression():
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(root / "examples" / "scipy_fit.py")], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    fitted = done.stdout.split("fitted parameters:")[1].split("\n")[0]
    np.testing.assert_allclose([float(v) for v in re.findall(r"-?\d+\.\d+", fitted)], [2.5, 0.3, 1.7, 0.4],
                               atol=0.02)
    assert "success: True" in done.stdout
