"""I1: gradient of the solution of a 10^4-unknown sparse nonlinear root with respect to 10^4 parameters.

``x(p)`` solves ``F(x, p) = x^3 + 3 x + (x_{i-1} + x_{i+1}) / 2 - p = 0`` (one
parameter per unknown; the Jacobian ``J = dF/dx`` is tridiagonal). The
gradient of ``sum(x)`` with respect to ``p`` goes through a ``custom_root``
node with ``solve="auto"``, which picks the sparse direct path: ``J`` from
``dualgrad.sparse`` (pattern detected once per decorated solver), a sparse LU,
one transposed solve and one vjp of ``F`` in ``p``.

Issue 29's goal: at most 2x the cost of one Newton step of the solve, a Newton
step being a sparse Jacobian evaluation plus a sparse LU solve. The peer
"numpy" is exactly that, hand-written: ``J^{-T} 1`` with the tridiagonal
Jacobian assembled by hand and SciPy's ``splu`` (the gradient's own formula:
``dx/dp = -J^{-1} F_p = J^{-1}``). ``python -m benchmarks.i1_implicit_root`` also
prints the ratio to one step of the dualgrad Newton solver that produced the
solution (its Jacobian from the same prepared ``dualgrad.sparse.jacobian_fn``),
the first gradient (which detects the pattern), and the peak memory of the
gradient for two iteration counts of the solver (it must not depend on them).
"""

from __future__ import annotations

import argparse
import tracemalloc
from collections.abc import Callable

import numpy as np

from ._harness import Workload, best_times

N = 10_000


def residual(x, p):
    """``x^3 + 3 x + (x_{i-1} + x_{i+1}) / 2 - p``: diagonally dominant, tridiagonal Jacobian."""
    import dualgrad as dg

    zero = dg.zeros(1)
    return x ** 3 + 3 * x + 0.5 * (dg.cat([zero, x[:-1]]) + dg.cat([x[1:], zero])) - p


def hand_jacobian(x: np.ndarray):
    """``dF/dx`` assembled by hand (CSC)."""
    import scipy.sparse

    off = np.full(x.size - 1, 0.5)
    return scipy.sparse.diags([off, 3 * x ** 2 + 3, off], [-1, 0, 1], format="csc")


def newton_solver(iterations: int) -> Callable:
    """A Newton solver ``(init, p) -> x`` on values: sparse Jacobians from ``dualgrad.sparse``, sparse LU."""
    import scipy.sparse.linalg

    import dualgrad as dg
    import dualgrad.sparse

    def solve(init, p):
        target = p.detach()
        x = dg.zeros(target.shape[0]) if init is None else init.detach()
        jacobian = dualgrad.sparse.jacobian_fn(lambda y: residual(y, target), x, format="csc")
        for _ in range(iterations):
            step = scipy.sparse.linalg.splu(jacobian(x)).solve(residual(x, target).numpy())
            x = dg.tensor(x.numpy() - step)
        return x

    solve.step = lambda x, p, jacobian: x.numpy() - scipy.sparse.linalg.splu(jacobian(x)).solve(
        residual(x, p).numpy())
    return solve


def _parameters():
    import dualgrad as dg

    return dg.tensor(np.linspace(1.0, 3.0, N))


def _gradient_fn(solver: Callable) -> Callable:
    """``p -> grad of sum(x(p))`` through one decorated solver (its pattern is detected at the first call)."""
    import dualgrad as dg
    from dualgrad.implicit import custom_root

    solve = custom_root(residual, solve="auto")(solver)

    def gradient(p):
        leaf = p.detach().requires_grad_()
        return dg.autograd.grad(solve(None, leaf).sum(), leaf)[0]

    return gradient


def _dualgrad() -> Callable:
    p = _parameters()
    x = newton_solver(8)(None, p)
    gradient = _gradient_fn(lambda init, q: x)  # (the solve itself is not timed: only the derivative through it)
    return lambda: (gradient(p).numpy(),)


def _numpy() -> Callable:
    import scipy.sparse.linalg

    p = _parameters()
    x = newton_solver(8)(None, p).numpy()
    ones = np.ones(N)
    return lambda: (scipy.sparse.linalg.splu(hand_jacobian(x)).solve(ones, trans="T"),)


def workload() -> Workload:
    """I1 with its goal: at most 2x one hand-written Newton step (sparse Jacobian + sparse LU solve)."""
    return Workload(name="I1 implicit root grad, n=10^4", builders={"dualgrad": _dualgrad, "numpy": _numpy},
                    time_goals={"numpy": 2.0},
                    notes={"numpy": " (peer = one hand-written Newton step: Jacobian + sparse LU)"})


def gradient_peak(iterations: int) -> int:
    """Peak traced bytes of solving with ``iterations`` Newton steps and then taking the gradient."""
    p = _parameters()
    gradient = _gradient_fn(newton_solver(iterations))
    gradient(p)  # (the pattern is detected once per decorated solver: not part of the comparison)
    tracemalloc.start()
    try:
        gradient(p)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> None:
    import time

    import dualgrad.sparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.i1_implicit_root", description=__doc__)
    parser.add_argument("--repeat", type=int, default=10, help="timing samples per implementation")
    args = parser.parse_args(argv)
    p = _parameters()
    solver = newton_solver(8)
    x = solver(None, p)
    jacobian = dualgrad.sparse.jacobian_fn(lambda y: residual(y, p), x, format="csc")
    hand_step = _numpy()
    start = time.perf_counter()
    first = _gradient_fn(lambda init, q: x)
    first(p)
    first_seconds = time.perf_counter() - start
    times = best_times({"gradient": _dualgrad(), "dualgrad Newton step": lambda: solver.step(x, p, jacobian),
                        "hand-written Newton step": hand_step}, args.repeat)
    ours = times["gradient"]
    print(f"I1 sparse root, n={N}: gradient of sum(x) w.r.t. {N} parameters (solve='auto' -> sparse LU)")
    print(f"  gradient                    {ours * 1e3:8.2f} ms")
    for peer in ("dualgrad Newton step", "hand-written Newton step"):
        print(f"  {peer:<27} {times[peer] * 1e3:8.2f} ms   ratio {ours / times[peer]:.2f}x (goal <= 2x)")
    print(f"  first gradient of a newly decorated solver (detects the pattern): {first_seconds * 1e3:.2f} ms, "
          f"{first_seconds / times['dualgrad Newton step']:.2f}x a Newton step")
    peaks = {k: gradient_peak(k) for k in (5, 50)}
    print("  peak memory of solve + gradient: " + ", ".join(
        f"{peak / 2**20:.2f} MiB after {k} Newton iterations" for k, peak in peaks.items()))


if __name__ == "__main__":
    main()
