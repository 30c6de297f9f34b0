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

# -- a constrained inner problem: non-negative weights with a budget --------------------------------
# The inner problem is now a linear regression with weights w >= 0 (bounds) and sum(w) <= budget (an
# inequality constraint), solved by SLSQP. Its solution is differentiated through the KKT conditions of
# the active set (the zero weights and the budget); the hypergradient with respect to the budget and to
# log(lambda) is checked against finite differences of the whole constrained solve.
targets = features[:, :5] @ np.array([0.6, 0.0, 0.3, 0.5, -0.2]) + 0.1 * rng.normal(size=2 * n)
a_train, b_train = dg.tensor(features[:n, :5]), dg.tensor(targets[:n])
a_valid, b_valid = dg.tensor(features[n:, :5]), dg.tensor(targets[n:])


def constrained_weights(hyper):
    log_lam, budget = hyper[0], hyper[1]
    objective = lambda w, log_lam: ((a_train @ w - b_train) ** 2).mean() + dg.exp(log_lam) * (w ** 2).sum()
    budget_left = {"type": "ineq", "fun": lambda w, budget: dg.stack([budget - w.sum()]), "args": (budget,)}
    result = minimize(objective, dg.full((5,), 0.1), args=(log_lam,), method="SLSQP", bounds=[(0.0, None)] * 5,
                      constraints=budget_left, options={"ftol": 1e-14, "maxiter": 500})
    return result.x


def constrained_validation(hyper):
    return ((a_valid @ constrained_weights(hyper) - b_valid) ** 2).mean()


hyper = dg.tensor([-3.0, 1.0])  # log(lambda), budget
weights = constrained_weights(hyper)
print("constrained weights:", np.round(weights.numpy(), 6), f"(sum {float(weights.sum()):.6f} <= budget 1)")
exact = grad(constrained_validation)(hyper).numpy()
step = np.eye(2) * 1e-6
fd = np.array([float(constrained_validation(hyper + dg.tensor(e))) - float(constrained_validation(hyper - dg.tensor(e)))
               for e in step]) / 2e-6
print("d validation loss / d (log lambda, budget):", np.round(exact, 8), "finite differences:", np.round(fd, 8))
print(f"constrained relative difference: {np.abs(exact - fd).max() / np.abs(fd).max():.2e}")
