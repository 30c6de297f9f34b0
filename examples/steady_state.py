"""Sensitivity of the steady state of a 2-D nonlinear reaction-diffusion equation, through ``root``.

The steady state ``u`` of ``u_t = lap(u) - k u^3 + a exp(-|x - c|^2 / s^2)`` on
the unit square with ``u = 0`` on the boundary solves the discretised residual
``F(u; a, s, k) = 0`` (five-point Laplacian, ``m x m`` interior points). SciPy
solves it (``method="krylov"``: Newton-Krylov, Jacobian-free). The derivatives
of the steady state with respect to ``(a, s, k)`` come from the implicit
function theorem: ``solve="auto"`` finds the five-diagonal sparsity of
``dF/du`` with ``dualgrad.sparse`` (more than 1000 unknowns: it does not go
dense), evaluates it by colouring, factorises it once with a sparse LU, and
both modes reuse that factorisation (one transposed solve for the gradient,
one solve per parameter forward).

Run: python examples/steady_state.py   (DUALGRAD_EXAMPLES_SMALL=1: a coarser grid)
"""

from __future__ import annotations

import importlib.util
import os
import time

import numpy as np

import dualgrad as dg
from dualgrad.func import jacfwd, jacrev
from dualgrad.scipy.optimize import root

SMALL = os.environ.get("DUALGRAD_EXAMPLES_SMALL") == "1"
M = 12 if SMALL else 48  # interior points per side: M^2 unknowns
H = 1.0 / (M + 1)
GRID = np.linspace(H, 1 - H, M)
R2 = dg.tensor((GRID[:, None] - 0.5) ** 2 + (GRID[None, :] - 0.5) ** 2)
# (dense up to 1000 unknowns under "auto": the small grid asks for the sparse path explicitly)
SOLVE = "sparse" if SMALL and importlib.util.find_spec("dualgrad.sparse") else "auto"


def residual(u, params):
    a, s, k = params[0], params[1], params[2]
    grid = u.reshape(M, M)
    padded = dg.nn.functional.pad(grid, (1, 1, 1, 1))
    laplacian = (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * grid) / H ** 2
    return (laplacian - k * grid ** 3 + a * dg.exp(-R2 / s ** 2)).reshape(-1)


def steady_state(params):
    result = root(residual, dg.zeros(M * M), args=(params,), method="krylov", tol=1e-11, solve=SOLVE)
    assert result.success, result.message
    return result.x


def mean_state(params):
    return steady_state(params).mean()


params = dg.tensor([50.0, 0.2, 20.0])  # source amplitude, source width, reaction rate
start = time.perf_counter()
u = steady_state(params)
solve_seconds = time.perf_counter() - start
print(f"grid: {M} x {M} = {M * M} unknowns; max u = {float(u.max()):.6f}, "
      f"max |F(u)| = {float(residual(u, params).abs().max()):.1e}")
leaf = params.detach().requires_grad_()
state = steady_state(leaf)
start = time.perf_counter()
gradient = dg.autograd.grad(state.mean(), leaf)[0]
gradient_seconds = time.perf_counter() - start
reverse = jacrev(mean_state)(params).numpy()
forward = jacfwd(mean_state)(params).numpy()
h = 1e-5 * params.numpy()
fd = np.array([(float(mean_state(params + dg.tensor(e))) - float(mean_state(params - dg.tensor(e)))) / (2 * e.max())
               for e in np.diag(h)])
print("d mean(u) / d (a, s, k), reverse mode:", np.round(reverse, 8))
print("max |forward - reverse| =", f"{np.abs(forward - reverse).max():.2e}")
scale = np.abs(reverse).max()
print("max |finite differences - reverse| / max |reverse| =", f"{np.abs(fd - reverse).max() / scale:.2e}")
centre = (M // 2) * M + M // 2
profile = jacrev(steady_state)(params).numpy()  # (M^2, 3): one transposed solve per grid point, factorised once
print("d u / d a at the centre:", f"{profile[centre, 0]:.8f}", "(the cubic reaction makes it less than u / a =",
      f"{float(u[centre]) / 50.0:.8f})")
print(f"time: SciPy's solve {solve_seconds * 1e3:.0f} ms, the gradient of mean(u) {gradient_seconds * 1e3:.1f} ms "
      f"(sparse pattern detection, sparse LU, one transposed solve)")
