"""Differentiable solvers (issue 29): the sparse nonlinear root, with the memory of its gradient.

``python -m benchmarks.solvers [--full] [--repeat N]`` prints the best-of-N time
of the gradient of a scalar of the solution of a sparse nonlinear root with one
parameter per unknown (``n = 10^4`` with ``--full``, else ``2000``; implicit
differentiation, GMRES on vjps, or ``dualgrad.sparse`` when installed) against one
Newton step of the solve (a sparse Jacobian assembled by hand and a sparse LU);
goal <= 2x. Also the peak memory of the gradient for two iteration counts of the
solver (it must not depend on them). Its time ratio is workload I1 of
``python -m benchmarks``; the ODE sensitivities are workloads O1-O4
(``benchmarks/_ode_problems.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import tracemalloc

import numpy as np

import dualgrad as dg
from dualgrad.implicit import custom_root

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.solvers", description=__doc__)
    parser.add_argument("--full", action="store_true", help="the issue's sizes (slow)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for line in sparse_root(10_000 if args.full else 2000, args.repeat):
        print(line, flush=True)


if __name__ == "__main__":
    main()
