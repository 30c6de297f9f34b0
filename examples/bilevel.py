"""A bilevel problem: choose the regularization of a model by the gradient of its validation error.

The inner problem fits a logistic regression with an L2 penalty ``exp(log_lam)``
(``dualgrad.scipy.optimize.minimize``, Newton-CG with exact Hessian-vector
products). Its solution is differentiated with respect to ``log_lam`` by the
implicit function theorem (one linear solve with the Hessian, never through
the optimizer's iterations), so the outer problem, the validation loss as a
function of ``log_lam``, is minimized by SciPy with an exact hypergradient.

Run: python examples/bilevel.py   (DUALGRAD_EXAMPLES_SMALL=1: a smaller data set)
"""

from __future__ import annotations

import os

import numpy as np

import dualgrad as dg
from dualgrad.func import grad
from dualgrad.scipy.optimize import minimize

SMALL = os.environ.get("DUALGRAD_EXAMPLES_SMALL") == "1"
rng = np.random.default_rng(0)
n, d = (60, 8) if SMALL else (200, 20)
w_true = rng.normal(size=d) * (rng.random(d) < 0.4)
features = rng.normal(size=(2 * n, d))
labels = (features @ w_true + 0.8 * rng.normal(size=2 * n) > 0).astype(float)
x_train, y_train = dg.tensor(features[:n]), dg.tensor(labels[:n])
x_valid, y_valid = dg.tensor(features[n:]), dg.tensor(labels[n:])


def logistic_loss(w, x, y):
    z = x @ w
    return (dg.logaddexp(dg.zeros_like(z), z) - y * z).mean()


def training_objective(w, log_lam):
    return logistic_loss(w, x_train, y_train) + 0.5 * dg.exp(log_lam) * (w ** 2).sum()


def fitted_weights(log_lam):
    return minimize(training_objective, dg.zeros(d), args=(log_lam,), method="Newton-CG",
                    options={"xtol": 1e-12}).x


def validation_loss(log_lam):
    return logistic_loss(fitted_weights(log_lam), x_valid, y_valid)


start = dg.tensor(0.0)
hypergradient = float(grad(validation_loss)(start))
h = 1e-5
fd = (float(validation_loss(dg.tensor(h))) - float(validation_loss(dg.tensor(-h)))) / (2 * h)
print(f"d validation loss / d log(lambda) at lambda = 1: {hypergradient:.8f} (finite differences {fd:.8f})")
print(f"relative difference: {abs(hypergradient - fd) / abs(fd):.2e}")

outer = minimize(lambda v: validation_loss(v.reshape(())), dg.tensor([0.0]), method="BFGS",
                 options={"gtol": 1e-7})
best = float(outer.x[0])
print(f"best lambda: {np.exp(best):.5f} (validation loss {float(outer.fun):.5f}, "
      f"at lambda = 1: {float(validation_loss(start)):.5f}; outer success: {outer.success})")
print(f"|hypergradient| at the optimum: {abs(float(grad(validation_loss)(dg.tensor(best)))):.2e}")
