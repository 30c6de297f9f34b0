"""Fit the Lotka-Volterra predator-prey model to noisy counts, with exact ODE sensitivities.

``dualgrad.scipy.optimize.least_squares`` fits the four rate constants; its
residuals go through ``dualgrad.scipy.integrate.solve_ivp``, so SciPy gets the
exact Jacobian of the residuals (forward sensitivity equations, integrated with
the state) instead of finite differences. The gradient of the misfit is then
computed three ways: forward sensitivities, the checkpointed adjoint and finite
differences. (Second derivatives of the ODE solution, e.g. the Hessian of the
misfit, work too: see ``examples/robertson_fit.py``.)

Run: python examples/ode_fit.py   (DUALGRAD_EXAMPLES_SMALL=1: fewer observations)
"""

from __future__ import annotations

import os

import numpy as np

import dualgrad as dg
from dualgrad.func import grad
from dualgrad.scipy.integrate import solve_ivp
from dualgrad.scipy.optimize import least_squares

SMALL = os.environ.get("DUALGRAD_EXAMPLES_SMALL") == "1"
TIMES = np.linspace(0.5, 12.0, 12 if SMALL else 24)
TRUE = np.array([1.1, 0.4, 0.1, 0.4])  # prey growth, predation, predator growth, predator death
Y0 = dg.tensor([10.0, 5.0])


def lotka_volterra(t, y, p):
    prey, predators = y[0], y[1]
    return dg.stack([p[0] * prey - p[1] * prey * predators, p[2] * prey * predators - p[3] * predators])


def trajectory(p, sensitivity="auto"):
    return solve_ivp(lotka_volterra, (0.0, TIMES[-1]), Y0, args=(p,), t_eval=TIMES, rtol=1e-9, atol=1e-9,
                     sensitivity=sensitivity).y


rng = np.random.default_rng(0)
data = dg.tensor(trajectory(dg.tensor(TRUE)).numpy() * (1 + 0.02 * rng.normal(size=(2, TIMES.size))))


def residuals(p, data):
    return (trajectory(p) - data).reshape(-1)


fit = least_squares(residuals, dg.tensor([1.0, 0.5, 0.2, 0.5]), args=(data,), xtol=1e-12, ftol=1e-12)
print("true parameters:  ", np.round(TRUE, 4))
print("fitted parameters:", np.round(fit.x.numpy(), 4), f"(success: {fit.success}, {fit.nfev} evaluations, "
      f"{fit.njev} exact Jacobians)")

# The gradient of the misfit at a trial point: forward sensitivities, the adjoint, finite differences.
trial = np.array([1.0, 0.45, 0.12, 0.38])
misfit = lambda p, sensitivity: ((trajectory(p, sensitivity) - data) ** 2).sum()
forward = grad(lambda p: misfit(p, "forward"))(dg.tensor(trial)).numpy()
adjoint = grad(lambda p: misfit(p, "adjoint"))(dg.tensor(trial)).numpy()
h = 1e-6
fd = np.array([(float(misfit(dg.tensor(trial + h * e), "forward")) - float(misfit(dg.tensor(trial - h * e), "forward")))
               / (2 * h) for e in np.eye(4)])
print("gradient of the misfit (forward sensitivities):", np.round(forward, 6))
scale = np.abs(forward).max()
print("max |adjoint - forward| / max |gradient| =", f"{np.abs(adjoint - forward).max() / scale:.2e}")
print("max |finite differences - forward| / max |gradient| =", f"{np.abs(fd - forward).max() / scale:.2e}")

