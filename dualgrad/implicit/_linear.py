"""Linear systems ``A(params) v = b`` as implicit problems, and the raw solvers that run their forward.

A linear system is an implicit problem with the residual ``A v - b``: solving it
is a node, and its derivatives are again linear solves (with ``A`` or ``A^T``).
The forward solve is plain NumPy/SciPy on the values:

* ``"dense"``: ``A`` is materialised (one batched matvec or a ``jacfwd``),
  its condition number checked, then LU-solved; the factorisation is kept for
  the other right-hand sides of the same system (``jacrev`` solves one per row);
* ``"cg"`` / ``"gmres"``: SciPy's Krylov solvers on a ``LinearOperator`` whose
  matvec is a jvp or vjp (matrix-free);
* ``"sparse"``: ``A`` from ``dualgrad.sparse.jacobian_fn`` (colouring), then a
  sparse LU (SciPy's ``splu``).

``"auto"`` is ``"dense"`` up to ``DENSE_LIMIT`` unknowns, else CG for a
symmetric system and GMRES otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..factories import tensor
from ..tensor import Tensor
from ..transforms import func
from ._problem import ImplicitProblem

DENSE_LIMIT = 1000
CONDITION_LIMIT = 1e-3 / np.finfo(np.float64).eps  # beyond this the solve has no correct digit left
KRYLOV_RTOL = 1e-12
SOLVE_METHODS = ("auto", "dense", "cg", "gmres", "sparse")


class SingularJacobianError(np.linalg.LinAlgError):
    """The linear system of an implicit derivative is singular (or a Krylov solve of it failed)."""


def check_method(solve: str, name: str) -> str:
    if solve not in SOLVE_METHODS:
        raise ValueError(f"{name}: solve must be one of {', '.join(map(repr, SOLVE_METHODS))}, got {solve!r}")
    return solve


class LinearProblem(ImplicitProblem):
    """``A(params) v = b``: inputs ``(b, *params)``, residual ``matvec(v, *params) - b``.

    Subclasses give ``matvec`` and may give ``dense_matrix``/``sparse_matrix``.
    """

    def __init__(self, name: str, method: str, symmetric: bool):
        self.name = name
        self.method = method
        self.symmetric = symmetric
        self._factor: tuple | None = None  # (key of the params' values, factorisation)

    def matvec(self, v: Tensor, *params: Tensor) -> Tensor:
        raise NotImplementedError

    def residual(self, v: Tensor, b: Tensor, *params: Tensor) -> Tensor:
        return self.matvec(v, *params) - b

    def dense_matrix(self, shape: tuple, params: tuple) -> np.ndarray:
        """``A`` as an ``(n, n)`` array: one batched matvec over the identity (rows ``A e_i``, so transpose)."""
        n = int(np.prod(shape))
        basis = tensor(np.eye(n).reshape((n, *shape)))
        rows = func.vmap(lambda e: self.matvec(e, *params))(basis)
        return rows.detach().numpy().reshape(n, n).T

    def sparse_matrix(self, shape: tuple, params: tuple) -> Any:
        sparse = _sparse_module(self.name)
        n = int(np.prod(shape))
        flat = lambda v: self.matvec(v.reshape(shape), *params).reshape(-1)
        return sparse.jacobian_fn(flat, tensor(np.zeros(n)), format="csr")(tensor(np.zeros(n)))

    def solve(self, b: Tensor, *params: Tensor) -> Tensor:
        rhs = b.detach().numpy().reshape(-1).astype(np.float64, copy=False)
        params = tuple(p.detach() for p in params)
        method = self.method
        if method == "auto":
            method = "dense" if rhs.size <= DENSE_LIMIT else ("cg" if self.symmetric else "gmres")
        if method in ("cg", "gmres"):
            v = self._krylov(method, b.shape, params, rhs)
        else:
            v = self._direct(method, b.shape, params, rhs)
        if not np.all(np.isfinite(v)):
            raise SingularJacobianError(f"{self.name}: the linear solve gave non-finite values (singular Jacobian?)")
        return tensor(v.reshape(b.shape))

    def _direct(self, method: str, shape: tuple, params: tuple, rhs: np.ndarray) -> np.ndarray:
        key = (method, shape, *(p.numpy().tobytes() for p in params))
        if self._factor is None or self._factor[0] != key:
            factor = (_dense_factor(self.dense_matrix(shape, params), self.name) if method == "dense"
                      else _sparse_factor(self.sparse_matrix(shape, params), self.name))
            self._factor = (key, factor)
        return self._factor[1](rhs)

    def _krylov(self, method: str, shape: tuple, params: tuple, rhs: np.ndarray) -> np.ndarray:
        try:
            import scipy.sparse.linalg as spla
        except ImportError as err:
            raise ImportError(f"{self.name}: solve={method!r} needs SciPy: pip install 'dualgrad[scipy]'") from err
        n = rhs.size
        apply = lambda v: self.matvec(tensor(np.asarray(v, dtype=np.float64).reshape(shape)),
                                      *params).detach().numpy().reshape(-1)
        operator = spla.LinearOperator((n, n), matvec=apply, dtype=np.float64)
        solver = spla.cg if method == "cg" else spla.gmres
        v, info = solver(operator, rhs, rtol=KRYLOV_RTOL, atol=0.0, maxiter=10 * n)
        if info != 0:
            raise SingularJacobianError(
                f"{self.name}: {method.upper()} did not converge on the linearised optimality condition "
                f"(info={info}): the Jacobian may be singular or ill-conditioned at the solution; try solve='dense'"
            )
        return v


def _dense_factor(a: np.ndarray, name: str) -> Callable[[np.ndarray], np.ndarray]:
    """A solver for ``a v = rhs`` after checking that ``a`` is far enough from singular."""
    if not np.all(np.isfinite(a)):
        raise SingularJacobianError(f"{name}: the Jacobian of the optimality condition has non-finite entries")
    condition = np.linalg.cond(a) if a.size else 1.0
    if not condition < CONDITION_LIMIT:
        raise SingularJacobianError(
            f"{name}: the Jacobian of the optimality condition with respect to the solution is singular at the "
            f"solution (condition number {condition:.3g}): the solution is not locally unique, so it has no "
            "derivative with respect to the parameters"
        )
    try:
        import scipy.linalg
    except ImportError:
        return lambda rhs: np.linalg.solve(a, rhs)
    lu = scipy.linalg.lu_factor(a, check_finite=False)
    return lambda rhs: scipy.linalg.lu_solve(lu, rhs, check_finite=False)


def _sparse_factor(a: Any, name: str) -> Callable[[np.ndarray], np.ndarray]:
    import scipy.sparse
    import scipy.sparse.linalg as spla

    try:
        lu = spla.splu(scipy.sparse.csc_matrix(a))
    except RuntimeError as err:  # SuperLU: "Factor is exactly singular"
        raise SingularJacobianError(
            f"{name}: the sparse Jacobian of the optimality condition is singular at the solution ({err})"
        ) from err
    return lu.solve


def _sparse_module(name: str) -> Any:
    try:
        import dualgrad.sparse as sparse
    except ImportError as err:
        raise ImportError(
            f"{name}: solve='sparse' needs dualgrad.sparse (sparse Jacobians by colouring), which is not available "
            "in this installation; use solve='dense', 'cg' or 'gmres'"
        ) from err
    return sparse


class JacobianSystem(LinearProblem):
    """``J_x v = r`` or ``J_x^T v = r`` for the residual of ``problem`` at ``x``: inputs ``(r, x, *inputs)``."""

    def __init__(self, problem: ImplicitProblem, transpose: bool):
        super().__init__(problem.name, problem.method, problem.symmetric)
        self.problem = problem
        self.transpose = transpose

    def matvec(self, v: Tensor, x: Tensor, *inputs: Tensor) -> Tensor:
        at_x = lambda y: self.problem.residual(y, *inputs)
        if self.transpose:
            return func.vjp(at_x, x)[1](v)[0]
        return func.jvp(at_x, (x,), (v,))[1]

    def dense_matrix(self, shape: tuple, params: tuple) -> np.ndarray:
        x, *inputs = params
        n = int(np.prod(shape))
        jacobian = func.jacfwd(lambda y: self.problem.residual(y, *inputs))(x).detach().numpy().reshape(n, n)
        return jacobian.T if self.transpose else jacobian

    def sparse_matrix(self, shape: tuple, params: tuple) -> Any:
        sparse = _sparse_module(self.name)
        x, *inputs = params
        flat = lambda y: self.problem.residual(y.reshape(x.shape), *inputs).reshape(-1)
        jacobian = sparse.jacobian_fn(flat, x.reshape(-1), format="csr")(x.reshape(-1))
        return jacobian.T.tocsr() if self.transpose else jacobian


class UserLinearSystem(LinearProblem):
    """``matvec(v, *args) = b`` for ``linear_solve``; ``args`` holds the pytree leaves, Tensors among them inputs."""

    def __init__(self, matvec: Callable, rebuild: Callable, method: str, symmetric: bool):
        super().__init__("linear_solve", method, symmetric)
        self._matvec = matvec
        self._rebuild = rebuild

    def matvec(self, v: Tensor, *params: Tensor) -> Tensor:
        return self._matvec(v, *self._rebuild(params))
