"""I1: gradient of a scalar of the solution of a sparse nonlinear root, by implicit differentiation.

``x(p)`` solves ``x^3 + 3 x + (x_{i-1} + x_{i+1}) / 2 = p`` (2000 unknowns, one
parameter each); the gradient of ``sum(x)`` with respect to ``p`` goes through a
``custom_root`` node (GMRES on vjps, or ``dualgrad.sparse`` when installed). The
peer "numpy" is the same gradient written by hand, ``J^{-T} 1`` with a sparse LU
of the hand-assembled tridiagonal Jacobian: the cost of one Newton step of the
solve. Goal (issue 29): at most 2x. See ``benchmarks/solvers.py`` for the ODE
sensitivities.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import numpy as np

from ._harness import Workload

N = 2000


def _solution() -> tuple:
    import dualgrad as dg

    from .solvers import chain_jacobian, chain_residual, newton_solver

    p = dg.tensor(np.linspace(1.0, 3.0, N))
    return p, newton_solver(8)(None, p), chain_residual, chain_jacobian


def _dualgrad() -> Callable:
    import dualgrad as dg
    from dualgrad.implicit import custom_root

    p, x, residual, _ = _solution()
    method = "sparse" if importlib.util.find_spec("dualgrad.sparse") else "gmres"
    solve = custom_root(residual, solve=method)(lambda init, q: x)  # (the solve itself is not timed)
    leaf = p.detach().requires_grad_()
    return lambda: (dg.autograd.grad(solve(None, leaf).sum(), leaf)[0].numpy(),)


def _numpy() -> Callable:
    import scipy.sparse.linalg

    _, x, _, jacobian = _solution()
    ones = np.ones(N)
    # dx/dp = J^{-1} (F_p = -I): the gradient of sum(x) is J^{-T} 1
    return lambda: (scipy.sparse.linalg.spsolve(jacobian(x).T.tocsc(), ones),)


def workload() -> Workload:
    """I1 with its goal: at most 2x one hand-written Newton step."""
    return Workload(name="I1 implicit root grad, n=2000", builders={"dualgrad": _dualgrad, "numpy": _numpy},
                    time_goals={"numpy": 2.0})
