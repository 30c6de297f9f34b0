"""Sensitivity of the steady state of a nonlinear reaction-diffusion equation, through ``root``.

The steady state ``u`` of ``u_t = u_xx - k u^3 + a exp(-((x - 1/2) / s)^2)`` on
(0, 1) with ``u = 0`` at both ends solves the discretised residual
``F(u; a, s, k) = 0`` (central differences, ``n`` interior points).
``dualgrad.scipy.optimize.root`` gives SciPy the exact (tridiagonal) Jacobian;
the derivatives of the steady state with respect to ``(a, s, k)`` come from one
transposed linear solve with ``dF/du`` (reverse mode) or one solve per parameter
(forward mode). The solve uses ``dualgrad.sparse`` (a sparse Jacobian by
colouring and a sparse LU) when it is installed, else a dense LU.

Run: python examples/steady_state.py   (DUALGRAD_EXAMPLES_SMALL=1: a coarser grid)
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

import dualgrad as dg
from dualgrad.func import jacfwd, jacrev
from dualgrad.scipy.optimize import root

SMALL = os.environ.get("DUALGRAD_EXAMPLES_SMALL") == "1"
N = 60 if SMALL else 200
H = 1.0 / (N + 1)
X = dg.tensor(np.linspace(H, 1 - H, N))
SOLVE = "sparse" if importlib.util.find_spec("dualgrad.sparse") else "dense"


def residual(u, params):
    a, s, k = params[0], params[1], params[2]
    padded = dg.cat([dg.zeros(1), u, dg.zeros(1)])
    laplacian = (padded[:-2] - 2 * u + padded[2:]) / H ** 2
    return laplacian - k * u ** 3 + a * dg.exp(-(((X - 0.5) / s) ** 2))


def steady_state(params):
    result = root(residual, dg.zeros(N), args=(params,), tol=1e-13, solve=SOLVE)
    assert result.success, result.message
    return result.x


def mean_state(params):
    return steady_state(params).mean()


params = dg.tensor([50.0, 0.1, 20.0])  # source amplitude, source width, reaction rate
u = steady_state(params)
print(f"grid: {N} points, derivative solves: {SOLVE}; max u = {float(u.max()):.6f}, "
      f"max |F(u)| = {float(residual(u, params).abs().max()):.1e}")
reverse = jacrev(mean_state)(params).numpy()
forward = jacfwd(mean_state)(params).numpy()
h = 1e-6 * params.numpy()
fd = np.array([(float(mean_state(params + dg.tensor(e))) - float(mean_state(params - dg.tensor(e)))) / (2 * e.max())
               for e in np.diag(h)])
print("d mean(u) / d (a, s, k), reverse mode:", np.round(reverse, 8))
print("max |forward - reverse| =", f"{np.abs(forward - reverse).max():.2e}")
scale = np.abs(reverse).max()
print("max |finite differences - reverse| / max |reverse| =", f"{np.abs(fd - reverse).max() / scale:.2e}")
profile = jacrev(steady_state)(params).numpy()  # (N, 3): one transposed solve per grid point, factorised once
print("d u / d a at the centre:", f"{profile[N // 2, 0]:.8f}", "(the cubic reaction makes it less than u / a =",
      f"{float(u[N // 2]) / 50.0:.8f})")
