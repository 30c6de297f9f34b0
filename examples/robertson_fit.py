"""Estimate the three rate constants of Robertson's stiff chemical kinetics, with exact ODE sensitivities.

    A -> B            (k1 = 0.04)
    B + B -> C + B    (k2 = 3e7)
    B + C -> A + C    (k3 = 1e4)

The three concentrations are "measured" at log-spaced times with 1 % relative noise
(B, the fast intermediate, is what identifies k2 and k3).
``dualgrad.scipy.optimize.least_squares`` fits ``log k`` (the rates span nine orders
of magnitude). Each residual evaluation is one ``solve_ivp(method="BDF")`` of the
state together with its three sensitivity columns: SciPy's Newton iterations get
the exact Jacobian of the kinetics (and exact second-derivative couplings for the
sensitivity blocks), and ``least_squares`` gets the exact Jacobian of the
residuals. The Gauss-Newton curvature is then compared with the exact Hessian
of the misfit (second derivatives through the ODE solution, from a nested
sensitivity solve) and with finite differences of the gradient.

Run: python examples/robertson_fit.py
"""

from __future__ import annotations

import numpy as np

import dualgrad as dg
from dualgrad.func import grad, hessian
from dualgrad.scipy.integrate import solve_ivp
from dualgrad.scipy.optimize import least_squares

TIMES = np.logspace(-3, 2, 16)
TRUE = np.array([0.04, 3e7, 1e4])
Y0 = dg.tensor([1.0, 0.0, 0.0])


def robertson(t, y, log_k):
    k = dg.exp(log_k)
    a, b, c = y[0], y[1], y[2]
    return dg.stack([-k[0] * a + k[2] * b * c, k[0] * a - k[1] * b * b - k[2] * b * c, k[1] * b * b])


def observed(log_k):
    """The three concentrations at ``TIMES``, shape ``(3, len(TIMES))``."""
    return solve_ivp(robertson, (0.0, TIMES[-1]), Y0, args=(log_k,), t_eval=TIMES, method="BDF", rtol=1e-8,
                     atol=1e-14).y


rng = np.random.default_rng(0)
data = dg.tensor(observed(dg.tensor(np.log(TRUE))).numpy() * (1 + 0.01 * rng.normal(size=(3, TIMES.size))))


def residuals(log_k, data):
    """Relative misfits, in units of the noise."""
    return ((observed(log_k) - data) / (0.01 * data.abs() + 1e-12)).reshape(-1)


start = np.log(TRUE * np.array([1.5, 0.7, 1.4]))
fit = least_squares(residuals, dg.tensor(start), args=(data,), xtol=1e-10, ftol=1e-10)
print("true rate constants:  ", np.array2string(TRUE, precision=4))
print("fitted rate constants:", np.array2string(np.exp(fit.x.numpy()), precision=4),
      f"(success: {fit.success}, {fit.nfev} evaluations, {fit.njev} exact Jacobians)")

misfit = lambda log_k: 0.5 * (residuals(log_k, data) ** 2).sum()
at = dg.tensor(fit.x.numpy())
exact = hessian(misfit)(at).numpy()
jac = np.asarray(fit.jac)
gauss_newton = jac.T @ jac
h = 1e-5
gradient = lambda log_k: grad(misfit)(dg.tensor(log_k)).numpy()
fd = np.stack([(gradient(at.numpy() + h * e) - gradient(at.numpy() - h * e)) / (2 * h) for e in np.eye(3)])
scale = np.abs(exact).max()
print("Hessian of the misfit at the fit (exact, second derivatives through the ODE solution):")
print(np.array2string(exact, precision=5))
print("max |finite differences of the gradient - exact| / max |exact| =", f"{np.abs(fd - exact).max() / scale:.1e}")
print("max |Gauss-Newton J^T J - exact| / max |exact| =", f"{np.abs(gauss_newton - exact).max() / scale:.1e}")
print("standard errors of log k (from the exact Hessian):", np.array2string(np.sqrt(np.diag(np.linalg.inv(exact))),
                                                                            precision=4))
