"""Sparse Jacobians and Hessians from dualgrad.sparse, handed to SciPy.

The models are plain NumPy code. ``dualgrad.sparse`` finds each pattern once (by running the code
on index sets), colors it, and then evaluates the derivative at new points in one batched pass,
returning ``scipy.sparse`` arrays:

1. ``solve_ivp`` (BDF and Radau) on a stiff 1-D Brusselator, with ``jac=``;
2. ``least_squares`` on a smoothed fit of 2000 samples, with a sparse ``jac=`` and ``tr_solver='lsmr'``;
3. ``minimize(method='trust-constr')`` on the chained Rosenbrock function, with a sparse ``hess=``;
4. ``root`` on a discretised nonlinear boundary-value problem, with ``jac=`` (MINPACK wants a dense matrix:
   the sparse one is converted; evaluating it costs 3 Jacobian-vector products whatever n is).

Run: python examples/sparse_scipy.py
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from scipy.integrate import solve_ivp

import dualgrad as dg
import dualgrad.sparse as dgs


def gradient_of(f):
    """The gradient of a NumPy function ``f`` as a NumPy function (reverse mode)."""
    g = dg.func.grad(f)
    return lambda x: g(dg.tensor(x)).numpy()


# -- 1. solve_ivp: a stiff 1-D Brusselator, state [u, v] on 100 grid points --------------------------------
M = 100
ALPHA = 0.02 * (M + 1) ** 2


def brusselator(y):
    u, v = y[:M], y[M:]
    padded_u = np.concatenate([np.ones(1), u, np.ones(1)])  # boundary values u = 1, v = 3
    padded_v = np.concatenate([3 * np.ones(1), v, 3 * np.ones(1)])
    lap_u = padded_u[:-2] - 2 * u + padded_u[2:]
    lap_v = padded_v[:-2] - 2 * v + padded_v[2:]
    return np.concatenate([1 + u * u * v - 4 * u + ALPHA * lap_u, 3 * u - u * u * v + ALPHA * lap_v])


grid = np.linspace(0, 1, M + 2)[1:-1]
y0 = np.concatenate([1 + np.sin(2 * np.pi * grid), 3 * np.ones(M)])
jac = dgs.jacobian_fn(brusselator, y0, check=True)
print(f"1. Brusselator Jacobian: {jac.shape[0]}x{jac.shape[1]}, {jac.sparsity.nnz} nonzeros, "
      f"{jac.ncolors} colors ({jac.mode} mode)")
for method in ("BDF", "Radau"):
    ours = solve_ivp(lambda t, y: brusselator(y), (0, 10), y0, method=method, rtol=1e-8, atol=1e-10,
                     jac=lambda t, y: jac(y))
    grouped = solve_ivp(lambda t, y: brusselator(y), (0, 10), y0, method=method, rtol=1e-8, atol=1e-10,
                        jac_sparsity=jac.sparsity)
    print(f"   {method}: success {ours.success}, Jacobians {ours.njev}, "
          f"end state agrees with grouped finite differences to {np.abs(ours.y[:, -1] - grouped.y[:, -1]).max():.0e}")

# -- 2. least_squares: a smooth positive profile exp(p) fitted to 2000 noisy samples ----------------------------
N = 2000
positions = np.linspace(0, 1, N)
samples = np.exp(np.sin(3 * positions)) + 0.05 * np.random.default_rng(0).standard_normal(N)


def smoothed_fit(p):  # data misfit, and a penalty on the differences of neighbouring p (4000 x 2000 Jacobian)
    return np.concatenate([np.exp(p) - samples, 10.0 * (p[1:] - p[:-1])])


fit_jac = dgs.jacobian_fn(smoothed_fit, np.zeros(N))
fit = scipy.optimize.least_squares(smoothed_fit, np.zeros(N), jac=fit_jac, tr_solver="lsmr")
print(f"2. least squares: {fit_jac.ncolors} colors, success {fit.success}, "
      f"max |exp(p) - exp(sin 3t)| = {np.abs(np.exp(fit.x) - np.exp(np.sin(3 * positions))).max():.2f}")

# -- 3. minimize(trust-constr): the chained Rosenbrock function, n = 1000 ----------------------------------------


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


n = 1000
start = np.full(n, 0.5)
hess = dgs.hessian_fn(rosenbrock, start, check=True)
result = scipy.optimize.minimize(lambda x: float(rosenbrock(x)), start, method="trust-constr",
                                 jac=gradient_of(rosenbrock), hess=hess, options={"gtol": 1e-10})
print(f"3. Rosenbrock: Hessian with {hess.ncolors} colors, success {result.success}, "
      f"max |x - 1| = {np.abs(result.x - 1).max():.1e}")

# -- 4. root: u'' = u^3 - 1 + x on 200 points, u(0) = 0, u(1) = 1 ---------------------------------------------------
K = 200
xs = np.linspace(0, 1, K + 2)[1:-1]
step = 1.0 / (K + 1)


def boundary_value(u):
    padded = np.concatenate([np.zeros(1), u, np.ones(1)])
    return (padded[:-2] - 2 * u + padded[2:]) / step ** 2 - u ** 3 + 1 - xs


root_jac = dgs.jacobian_fn(boundary_value, xs.copy())
solution = scipy.optimize.root(boundary_value, xs.copy(), jac=lambda u: root_jac(u).toarray(), method="hybr")
print(f"4. root: {root_jac.ncolors} colors, success {solution.success}, "
      f"max |residual| {np.abs(boundary_value(solution.x)).max():.1e}")
