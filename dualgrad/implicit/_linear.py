"""Linear systems ``A(params) v = b`` as implicit problems, and the raw solvers that run their forward.

A linear system is an implicit problem with the residual ``A v - b``: solving it
is a node, and its derivatives are again linear solves (with ``A`` or ``A^T``).
The forward solve is plain NumPy/SciPy on the values:

* ``"dense"``: ``A`` is materialised (one batched matvec or a ``jacfwd``),
  its condition number checked, then LU-solved;
* ``"sparse"``: ``A`` from ``dualgrad.sparse`` (pattern detected and coloured
  once per solver and shape, then one compressed evaluation; the values are
  checked against one jvp along a random direction, and the pattern detected
  again if they differ), then a sparse LU (SciPy's ``splu``);
* ``"cg"`` / ``"gmres"``: SciPy's Krylov solvers on a ``LinearOperator`` whose
  matvec is a jvp or vjp (matrix-free).

``"auto"`` is ``"dense"`` up to ``DENSE_LIMIT`` unknowns; above, ``"sparse"``
when ``dualgrad.sparse`` finds at most ``SPARSE_DENSITY`` of the entries
nonzero, else CG for a symmetric system and GMRES otherwise.

A factorisation is kept for the other right-hand sides of the same system, and
shared by ``J_x v = r`` and ``J_x^T w = g`` at the same solution (the jvp and
the vjp of one solution factorise ``J_x`` once; ``jacrev`` solves one system
per row with it).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..factories import tensor
from ..tensor import Tensor
from ..transforms import func
from ._problem import ImplicitProblem

DENSE_LIMIT = 1000
SPARSE_DENSITY = 0.05  # "auto" factorises a sparse Jacobian with at most this fraction of nonzeros
CONDITION_LIMIT = 1e-3 / np.finfo(np.float64).eps  # beyond this the solve has no correct digit left
KRYLOV_RTOL = 1e-12
SOLVE_METHODS = ("auto", "dense", "cg", "gmres", "sparse")
PROBE_SEED = 20260529  # the random direction along which a sparse Jacobian is checked against a jvp

Solver = Callable[[np.ndarray, bool], np.ndarray]  # (rhs, transpose) -> v


class SingularJacobianError(np.linalg.LinAlgError):
    """The linear system of an implicit derivative is singular (or a Krylov solve of it failed)."""


def check_method(solve: str, name: str) -> str:
    if solve not in SOLVE_METHODS:
        raise ValueError(f"{name}: solve must be one of {', '.join(map(repr, SOLVE_METHODS))}, got {solve!r}")
    return solve


def _key(arrays: tuple) -> tuple:
    """The values of ``arrays`` (Tensors) as a hashable key: a factorisation is reused only for equal values."""
    return tuple((a.shape, a.dtype.str, a.numpy().tobytes()) for a in arrays)


class LinearProblem(ImplicitProblem):
    """``A(params) v = b`` (or ``A^T v = b`` when ``transposed``): inputs ``(b, *params)``.

    Subclasses give ``operator(params)`` (the point and the function whose
    Jacobian there is ``A``), the ``factors`` dict where factorisations of ``A``
    are kept, and the ``prepared`` dict where sparsity patterns are kept.
    """

    transposed = False

    def __init__(self, name: str, method: str, symmetric: bool):
        self.name = name
        self.method = method
        self.symmetric = symmetric
        self.factors: dict = {}
        self.prepared: dict = {}

    def operator(self, params: tuple) -> tuple:
        """``(point, f, pattern key)``: ``A`` is the Jacobian of ``f`` at ``point`` (``f`` linear for a matvec)."""
        raise NotImplementedError

    def potential_at(self, params: tuple) -> Callable | None:
        """A scalar function of the point whose Hessian is ``A`` (then ``A`` comes from a sparse Hessian), or None."""
        return None

    def given_matrix(self, params: tuple) -> Any:
        """``A`` as a SciPy sparse matrix if the problem can assemble it itself, else None."""
        return None

    def matvec(self, v: Tensor, *params: Tensor) -> Tensor:
        raise NotImplementedError

    def residual(self, v: Tensor, b: Tensor, *params: Tensor) -> Tensor:
        return self.matvec(v, *params) - b

    def solve(self, b: Tensor, *params: Tensor) -> Tensor:
        return self.solve_values(b, tuple(p.detach() for p in params), self.transposed)

    def solve_values(self, b: Tensor, params: tuple, transposed: bool) -> Tensor:
        """``v`` with ``A(params) v = b`` (``A^T v = b`` if ``transposed``) on values, factorising ``A`` once."""
        rhs = b.detach().numpy().reshape(-1).astype(np.float64, copy=False)
        key = (type(self).__name__, self.method, b.shape, *_key(params))
        solver = self.factors.get(key)
        if solver is None:
            solver = self.factors[key] = self._factorise(b.shape, params, rhs.size)
        v = solver(rhs, transposed)
        if not np.all(np.isfinite(v)):
            raise SingularJacobianError(f"{self.name}: the linear solve gave non-finite values (singular Jacobian?)")
        return tensor(v.reshape(b.shape))

    def _factorise(self, shape: tuple, params: tuple, n: int) -> Solver:
        method = self.method
        if method == "auto" and n <= DENSE_LIMIT:
            method = "dense"
        if method in ("auto", "sparse"):
            matrix = self._sparse_matrix(params, required=method == "sparse")
            if matrix is not None:
                return _sparse_factor(matrix, self.name)
            method = "cg" if self.symmetric else "gmres"
        if method == "dense":
            point, f, _ = self.operator(params)
            jacobian = func.jacfwd(lambda y: f(y.reshape(point.shape)).reshape(-1))(point.reshape(-1)).detach().numpy()
            return _dense_factor(jacobian.reshape(n, n), self.name)
        return self._krylov(method, shape, params)

    def _sparse_matrix(self, params: tuple, required: bool) -> Any:
        """``A`` as a CSC matrix by ``dualgrad.sparse``, or None (``"auto"`` only) where that does not pay.

        The pattern is kept in ``prepared`` by the shapes of the problem; its
        values are checked along one random direction against a jvp, and a stale
        pattern (the function changed, or it depends on parameter values) is
        detected again.
        """
        sparse = _sparse_module(self.name, required)
        if sparse is None:
            return None
        point, f, pattern_key = self.operator(params)
        x = point.reshape(-1)
        flat = lambda y: f(y.reshape(point.shape)).reshape(-1)
        given = self.given_matrix(params)
        if given is not None:  # (the problem knows its sparse Jacobian: still checked against a jvp)
            given = given.tocsc()
            if np.all(np.isfinite(given.data)) and _agrees_with_jvp(given, flat, x):
                return given
        potential = self.potential_at(params)
        scalar = None if potential is None else (lambda y: potential(y.reshape(point.shape)))
        n = x.numel()
        for fresh in (False, True):
            prepared = None if fresh else self.prepared.get(pattern_key)
            if prepared is None:
                try:
                    prepared = (sparse.jacobian_fn(flat, x, format="csc") if scalar is None
                                else sparse.hessian_fn(scalar, x, format="csc"))
                except (sparse.SparsityDetectionError, NotImplementedError, MemoryError):
                    # (a function dualgrad.sparse cannot follow, e.g. a reverse pass inside: "auto" goes Krylov)
                    if required:
                        raise
                    return None
                self.prepared[pattern_key] = prepared
            if not required and prepared.sparsity.nnz > SPARSE_DENSITY * n * n:
                return None
            if scalar is None and prepared.mode == "forward":
                matrix, along_probe = _forward_with_probe(prepared, flat, x)
            else:
                matrix, along_probe = _rebound(prepared, flat if scalar is None else scalar)(x), None
            if not np.all(np.isfinite(matrix.data)):
                raise SingularJacobianError(
                    f"{self.name}: the Jacobian of the optimality condition has non-finite entries")
            if _agrees_with_jvp(matrix, flat, x, along_probe):
                return matrix
        if not required:  # (a freshly detected pattern that does not hold: the matrix-free solve is exact)
            return None
        raise SingularJacobianError(
            f"{self.name}: the sparse Jacobian from dualgrad.sparse disagrees with a jvp of the optimality condition "
            "(its sparsity pattern does not hold); use solve='dense' or 'gmres'")

    def _krylov(self, method: str, shape: tuple, params: tuple) -> Solver:
        try:
            import scipy.sparse.linalg as spla
        except ImportError as err:
            raise ImportError(f"{self.name}: solve={method!r} needs SciPy: pip install 'dualgrad[scipy]'") from err
        point, f, _ = self.operator(params)
        n = point.numel()

        def product(v: np.ndarray, transpose: bool) -> np.ndarray:
            v = tensor(np.asarray(v, dtype=np.float64).reshape(point.shape))
            if transpose:
                return func.vjp(f, point)[1](v)[0].detach().numpy().reshape(-1)
            return func.jvp(f, (point,), (v,))[1].detach().numpy().reshape(-1)

        def solver(rhs: np.ndarray, transpose: bool) -> np.ndarray:
            operator = spla.LinearOperator((n, n), matvec=lambda v: product(v, transpose), dtype=np.float64)
            krylov = spla.cg if method == "cg" else spla.gmres
            v, info = krylov(operator, rhs, rtol=KRYLOV_RTOL, atol=0.0, maxiter=10 * n)
            if info != 0:
                raise SingularJacobianError(
                    f"{self.name}: {method.upper()} did not converge on the linearised optimality condition "
                    f"(info={info}): the Jacobian may be singular or ill-conditioned at the solution; try "
                    "solve='dense'")
            return v

        return solver


def _rebound(prepared: Any, f: Callable) -> Any:
    """The prepared sparse Jacobian ``prepared`` (pattern, colouring, seeds) for the function ``f``."""
    rebound = copy.copy(prepared)
    rebound.f = f
    return rebound


@functools.lru_cache(maxsize=8)
def _probe(n: int) -> np.ndarray:
    probe = np.random.default_rng(PROBE_SEED).standard_normal(n)
    probe.flags.writeable = False
    return probe


def _forward_with_probe(prepared: Any, flat: Callable, x: Tensor) -> tuple:
    """The Jacobian of ``flat`` at ``x`` (CSC) by the column colouring of ``prepared``, and its jvp along the
    random probe: one batched jvp over the colour seeds and the probe (as ``SparseJacobian``, plus one seed)."""
    seeds, where = _forward_seeds(prepared)
    pushed = func.vmap(lambda s: func.jvp(flat, (x,), (s,))[1])(seeds).detach().numpy()
    pattern = prepared.sparsity
    matrix = _sparse_array((pushed.reshape(-1)[where], pattern.indices, pattern.indptr), pattern.shape)
    return matrix.tocsc(), pushed[-1]


def _forward_seeds(prepared: Any) -> tuple:
    """``(seeds, where)`` for ``prepared``: the colour indicators and the probe as rows, and the position in the
    pushed-forward ``(colours + 1, m)`` array of each nonzero of the pattern (kept on ``prepared``)."""
    kept = prepared.__dict__.get("_implicit_seeds")
    if kept is None:
        colors = prepared.coloring.columns
        pattern = prepared.sparsity
        count, n = int(colors.max(initial=-1)) + 1, pattern.shape[1]
        seeds = np.zeros((count + 1, n))
        seeded = colors >= 0
        seeds[colors[seeded], np.flatnonzero(seeded)] = 1.0
        seeds[count] = _probe(n)
        rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
        kept = prepared._implicit_seeds = (tensor(seeds), colors[pattern.indices] * pattern.shape[0] + rows)
    return kept


def _sparse_array(data: tuple, shape: tuple) -> Any:
    import scipy.sparse

    return scipy.sparse.csr_array(data, shape=shape)


def _agrees_with_jvp(matrix: Any, flat: Callable, x: Tensor, along_probe: np.ndarray | None = None) -> bool:
    """``matrix @ v`` equals the jvp of ``flat`` at ``x`` along a random ``v`` (to rounding)."""
    v = _probe(x.numel())
    exact = along_probe if along_probe is not None else func.jvp(flat, (x,), (tensor(v),))[1].detach().numpy()
    scale = abs(matrix) @ np.abs(v)
    return bool(np.all(np.abs(matrix @ v - exact) <= 1e-10 * (scale + np.abs(exact)) + 1e-300))


def _dense_factor(a: np.ndarray, name: str) -> Solver:
    """A solver for ``a v = rhs`` (or ``a^T v = rhs``) after checking that ``a`` is far enough from singular."""
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
        return lambda rhs, transpose: np.linalg.solve(a.T if transpose else a, rhs)
    lu = scipy.linalg.lu_factor(a, check_finite=False)
    return lambda rhs, transpose: scipy.linalg.lu_solve(lu, rhs, trans=1 if transpose else 0, check_finite=False)


def _sparse_factor(a: Any, name: str) -> Solver:
    import scipy.sparse.linalg as spla

    singular = (f"{name}: the sparse Jacobian of the optimality condition with respect to the solution is singular "
                "at the solution ({}): the solution is not locally unique, so it has no derivative with respect "
                "to the parameters")
    try:
        lu = spla.splu(a.tocsc())
    except RuntimeError as err:  # SuperLU: "Factor is exactly singular"
        raise SingularJacobianError(singular.format(err)) from err
    pivots = np.abs(lu.U.diagonal())
    if pivots.size and not pivots.min() > pivots.max() / CONDITION_LIMIT:
        raise SingularJacobianError(singular.format(f"pivots from {pivots.min():.3g} to {pivots.max():.3g}"))
    return lambda rhs, transpose: lu.solve(rhs, trans="T" if transpose else "N")


def _sparse_module(name: str, required: bool) -> Any:
    try:
        import dualgrad.sparse as sparse
    except ImportError as err:
        if not required:
            return None
        raise ImportError(
            f"{name}: solve='sparse' needs dualgrad.sparse (sparse Jacobians by colouring), which is not available "
            "in this installation; use solve='dense', 'cg' or 'gmres'"
        ) from err
    return sparse


def _shapes(arrays: tuple) -> tuple:
    return tuple((a.shape, a.dtype.str) for a in arrays)


class JacobianSystem(LinearProblem):
    """``J_x v = r`` or ``J_x^T v = r`` for the residual of ``problem`` at ``x``: inputs ``(r, x, *inputs)``.

    The factorisations of ``J_x`` and its sparsity pattern are kept on
    ``problem`` (one for both directions, for every derivative of that solution).
    """

    def __init__(self, problem: ImplicitProblem, transpose: bool):
        super().__init__(problem.name, problem.method, problem.symmetric)
        self.problem = problem
        self.transposed = transpose
        self.factors, self.prepared = problem.caches()

    def solve(self, b: Tensor, *params: Tensor) -> Tensor:
        if isinstance(self.problem, LinearProblem):
            # (a derivative of a linear solve: the Jacobian of A v - b in v is A, already factorised)
            _, _, *matrix_params = (p.detach() for p in params)
            return self.problem.solve_values(b, tuple(matrix_params), self.problem.transposed != self.transposed)
        return super().solve(b, *params)

    def matvec(self, v: Tensor, x: Tensor, *inputs: Tensor) -> Tensor:
        at_x = lambda y: self.problem.residual(y, *inputs)
        if self.transposed:
            return func.vjp(at_x, x)[1](v)[0]
        return func.jvp(at_x, (x,), (v,))[1]

    def operator(self, params: tuple) -> tuple:
        x, *inputs = params
        kind = (type(self.problem).__name__, getattr(self.problem, "transposed", None))
        return x, lambda y: self.problem.residual(y, *inputs), (kind, _shapes(params))

    def given_matrix(self, params: tuple) -> Any:
        assemble = getattr(self.problem, "sparse_jacobian", None)
        return None if assemble is None else assemble(*params)

    def potential_at(self, params: tuple) -> Callable | None:
        potential = self.problem.potential
        if potential is None:
            return None
        _, *inputs = params
        return lambda y: potential(y, *inputs)


class UserLinearSystem(LinearProblem):
    """``matvec(v, *args) = b`` for ``linear_solve``; ``args`` holds the pytree leaves, Tensors among them inputs."""

    def __init__(self, matvec: Callable, rebuild: Callable, method: str, symmetric: bool):
        super().__init__("linear_solve", method, symmetric)
        self._matvec = matvec
        self._rebuild = rebuild
        self.shape: tuple = ()

    def solve(self, b: Tensor, *params: Tensor) -> Tensor:
        self.shape = b.shape
        return super().solve(b, *params)

    def matvec(self, v: Tensor, *params: Tensor) -> Tensor:
        return self._matvec(v, *self._rebuild(params))

    def operator(self, params: tuple) -> tuple:
        return (tensor(np.zeros(self.shape)), lambda v: self.matvec(v, *params),
                ("matvec", self.shape, _shapes(params)))
