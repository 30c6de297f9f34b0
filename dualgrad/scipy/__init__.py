"""SciPy integration (optional extra ``dualgrad[scipy]``): differentiable solvers and exact derivatives for SciPy.

* ``dualgrad.scipy.optimize``: ``root``, ``minimize``, ``least_squares``,
  ``root_scalar``, ``minimize_scalar`` with SciPy's signatures. SciPy solves with
  exact derivatives from dualgrad, and the solution is a Tensor differentiable
  with respect to the Tensors in ``args`` (implicit differentiation).
* ``dualgrad.scipy.integrate``: ``solve_ivp`` whose solution is differentiable
  with respect to ``y0`` and the Tensors in ``args`` (forward or adjoint
  sensitivities).
* ``minimize_problem``/``residual_problem``: the ``fun``/``jac``/``hess``/``hessp``
  callables to give SciPy yourself (no SciPy needed to build them).

``dualgrad.scipy.minimize`` and ``least_squares`` are those of ``optimize``
(they return the solution as a Tensor). The solvers import SciPy when called
and raise ImportError if it is not installed.

>>> import numpy as np
>>> from dualgrad.scipy import minimize
>>> rosen = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
>>> result = minimize(rosen, np.array([-1.2, 1.0]), method="Newton-CG")
>>> bool(result.success), result.x.round(decimals=4)
(True, tensor([1., 1.]))
"""

from __future__ import annotations

from . import integrate, optimize
from ._problems import MinimizeProblem, ResidualProblem, minimize_problem, residual_problem
from .optimize import least_squares, minimize, minimize_scalar, root, root_scalar

__all__ = ["MinimizeProblem", "ResidualProblem", "integrate", "least_squares", "minimize", "minimize_problem",
           "minimize_scalar", "optimize", "residual_problem", "root", "root_scalar"]
