"""Fit models with SciPy's optimizers, given exact derivatives by dualgrad.

1. A nonlinear least-squares fit of a damped oscillation
   ``y = a * exp(-k t) * cos(w t + phi)`` to noisy measurements, with
   ``scipy.optimize.least_squares(jac=...)``: the Jacobian of the residuals is
   computed by forward mode.
2. An L2-regularized logistic regression, minimized by Newton-CG: the gradient by
   reverse mode and Hessian-vector products by forward-over-reverse, so the
   Hessian is never formed.

The model code is plain NumPy; dualgrad Tensors flow through it.

Run: python examples/scipy_fit.py
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from dualgrad.scipy import minimize_problem, residual_problem

rng = np.random.default_rng(0)

# -- 1. damped oscillation, least squares -------------------------------------------------------------
t = np.linspace(0.0, 10.0, 200)
true_params = np.array([2.5, 0.3, 1.7, 0.4])  # amplitude, decay, angular frequency, phase


def oscillation(params, t):
    a, k, w, phi = params[0], params[1], params[2], params[3]
    return a * np.exp(-k * t) * np.cos(w * t + phi)


measured = oscillation(true_params, t) + 0.05 * rng.standard_normal(t.shape)


def residuals(params):
    return oscillation(params, t) - measured


problem = residual_problem(residuals)
fit = scipy.optimize.least_squares(problem.fun, x0=[2.0, 0.2, 1.6, 0.0], jac=problem.jac)
print("damped oscillation fit (least_squares, exact Jacobian)")
print(f"  true parameters:      {np.array2string(true_params, precision=4)}")
print(f"  fitted parameters:    {np.array2string(fit.x, precision=4)}")
print(f"  residual norm: {np.linalg.norm(fit.fun):.4f}, Jacobian evaluations: {fit.njev}")

# -- 2. logistic regression, Newton-CG -------------------------------------------------------------------
n_samples, n_features = 500, 5
features = rng.standard_normal((n_samples, n_features))
true_weights = np.array([1.5, -2.0, 0.0, 0.7, 3.0])
labels = (rng.random(n_samples) < 1.0 / (1.0 + np.exp(-features @ true_weights))).astype(np.float64)


def penalized_nll(w, lam=1e-2):
    z = features @ w
    return np.mean(np.logaddexp(0.0, z) - labels * z) + 0.5 * lam * np.sum(w ** 2)


objective = minimize_problem(penalized_nll)
result = scipy.optimize.minimize(objective.fun, np.zeros(n_features), jac=objective.jac,
                                 hessp=objective.hessp, method="Newton-CG", options={"xtol": 1e-10})
print("logistic regression (Newton-CG, exact gradient and Hessian-vector products)")
print(f"  true weights:         {np.array2string(true_weights, precision=4)}")
print(f"  fitted weights:       {np.array2string(result.x, precision=4)}")
print(f"  gradient norm at the optimum: {np.linalg.norm(objective.jac(result.x)):.2e}, "
      f"iterations: {result.nit}, success: {result.success}")
