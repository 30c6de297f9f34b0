"""Implicit differentiation: derivatives of solutions of equations, without differentiating the solver.

If ``x*(p)`` solves ``F(x, p) = 0`` and ``J_x = dF/dx`` is invertible there, the
implicit function theorem gives ``dx*/dp = -J_x^{-1} J_p``. ``custom_root`` turns
any solver into one graph node with that derivative: the solver runs with
tracking off (its iterations are never recorded, memory does not grow with
them), and

* forward mode solves ``J_x dx = -J_p dp`` (one linear solve per tangent);
* reverse mode solves ``J_x^T w = g`` and returns ``-J_p^T w`` (one per cotangent).

``J_x v``, ``J_x^T w`` and ``J_p`` products are jvps and vjps of ``F``, and the
linear solves are nodes of the same kind, so the derivatives are differentiable
again: second derivatives, ``hessian``, ``jacfwd``, ``jacrev`` and ``vmap`` of the
solution work. Derivatives are taken with respect to the Tensors among the
solver's ``*params`` (nested in tuples, lists and dicts too); the initial guess
gets none (the solution does not depend on it).

``solve`` picks the linear solver of the derivative systems: ``"dense"`` (``J_x``
materialised, LU), ``"cg"``/``"gmres"`` (SciPy's, matrix-free through jvp/vjp),
``"sparse"`` (``dualgrad.sparse`` colouring + sparse LU) or ``"auto"`` (dense up
to 1000 unknowns; above, sparse when ``dualgrad.sparse`` finds at most 5% of
``J_x`` nonzero, else CG if ``symmetric`` else GMRES). The factorisation of
``J_x`` is shared by the jvp and the vjp of one solution, and the sparsity
pattern is detected once per decorated solver and shape (and checked against a
jvp at every solution). A singular ``J_x`` raises ``SingularJacobianError``.

>>> import dualgrad as dg
>>> from dualgrad.implicit import custom_root
>>> def newton_sqrt(x, a):                          # any solver: never differentiated
...     for _ in range(30):
...         x = 0.5 * (x + a / x)
...     return x
>>> sqrt = custom_root(lambda x, a: x * x - a)(newton_sqrt)
>>> a = dg.tensor(4.0, requires_grad=True)
>>> root = sqrt(dg.tensor(1.0), a)
>>> root, dg.autograd.grad(root, a)[0]              # d sqrt(a)/da = 1 / (2 sqrt(a))
(tensor(2., grad_fn=<_ImplicitSolveBackward>), tensor(0.2500))
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import pytree
from ..base.dtypes import is_differentiable_dtype
from ..base.state import STATE
from ..factories import tensor
from ..reverse import enable_grad
from ..tensor import Tensor
from ..vmap.batching import BatchedTensor
from ._linear import DENSE_LIMIT, SingularJacobianError, UserLinearSystem, check_method
from ._node import NonConvergedError, solve_node
from ._problem import ImplicitProblem


def as_float_tensor(value: Any) -> Tensor:
    """A solver's result as a float64 Tensor without history."""
    if isinstance(value, Tensor):
        return value.detach()
    return tensor(np.asarray(value, dtype=np.float64))


class Parameters:
    """The pytree ``params`` split into its floating-point Tensor leaves (the node's inputs) and the rest
    (constants: integer and boolean Tensors, such as indices, have no derivative)."""

    def __init__(self, params: tuple):
        self.leaves, self.spec = pytree.flatten(params)
        self.positions = [i for i, leaf in enumerate(self.leaves)
                          if isinstance(leaf, Tensor) and is_differentiable_dtype(leaf.dtype)]

    @property
    def tensors(self) -> list:
        return [self.leaves[i] for i in self.positions]

    def rebuild(self, tensors: tuple) -> tuple:
        leaves = list(self.leaves)
        for i, t in zip(self.positions, tensors, strict=True):
            leaves[i] = t
        return pytree.unflatten(leaves, self.spec)


def refuse_closed_over_tensors(residual: Callable, x: Tensor, tensors: list, name: str, what: str) -> None:
    """Raise if ``residual`` at detached arguments still depends on a differentiated Tensor.

    That Tensor was closed over (or global) instead of passed as a parameter: its
    derivative would silently be missing.
    """
    if not (STATE.grad_enabled or STATE.dual_levels) or isinstance(x, BatchedTensor):
        return  # (under vmap the residual may read values, e.g. an active set: the check runs unbatched)
    from ..transforms.func import _has_tangent

    with enable_grad():
        value = residual(x.detach(), *(t.detach() for t in tensors))
    if isinstance(value, Tensor) and (value.requires_grad or _has_tangent(value)):
        raise ValueError(
            f"{name}: the {what} uses a Tensor that requires grad (or carries a tangent) without it being passed "
            "as a parameter (in args); its derivative would be missing. Pass every differentiated Tensor "
            "explicitly as an argument"
        )


class RootProblem(ImplicitProblem):
    """``solver(init, *params)`` with ``optimality_fn(x, *params) = 0`` at its result."""

    def __init__(self, optimality_fn: Callable, solver: Callable, init: Any, params: Parameters, *,
                 method: str, symmetric: bool, name: str, prepared: dict | None = None,
                 potential: Callable | None = None):
        self.optimality_fn = optimality_fn
        self.solver = solver
        self.init = init.detach() if isinstance(init, Tensor) else init
        self.params = params
        self.method = method
        self.symmetric = symmetric
        self.name = name
        self.converged = True
        self.failure = ""
        self.allow_nonconverged = False
        self.unsupported = ""  # why the solution has no implicit derivative here (e.g. constraints)
        self.refusal: tuple | None = None  # (error type, why): the solution has no derivative (a degenerate one)
        self.factors: dict = {}
        self.optimality_potential = potential  # (scalar whose x-gradient is optimality_fn: its sparse Hessian)
        self.potential = None if potential is None else self._potential
        self.prepared = {} if prepared is None else prepared  # sparsity patterns, shared by the solver's calls

    def residual(self, x: Tensor, *tensors: Tensor) -> Tensor:
        value = self.optimality_fn(x, *self.params.rebuild(tensors))
        return value if isinstance(value, Tensor) else as_float_tensor(value)

    def sparse_jacobian(self, x: Tensor, *tensors: Tensor) -> Any:
        """``d optimality / dx`` as a SciPy sparse matrix if the optimality function can assemble it, else None."""
        assemble = getattr(self.optimality_fn, "sparse_jacobian", None)
        return None if assemble is None else assemble(x, *self.params.rebuild(tensors))

    def _potential(self, x: Tensor, *tensors: Tensor) -> Tensor:
        return self.optimality_potential(x, *self.params.rebuild(tensors))

    def solve(self, *tensors: Tensor) -> Tensor:
        return as_float_tensor(self.solver(self.init, *self.params.rebuild(tuple(t.detach() for t in tensors))))

    def check_differentiable(self) -> None:
        if self.unsupported:
            raise NotImplementedError(f"{self.name}: cannot differentiate the solution: {self.unsupported}")
        if not self.converged and not self.allow_nonconverged:
            raise NonConvergedError(
                f"{self.name}: cannot differentiate the solution: the solver did not converge ({self.failure}); "
                "its result does not satisfy the optimality condition, so the implicit derivative would be "
                "wrong. Pass allow_nonconverged=True to differentiate it anyway"
            )
        if self.refusal is not None:
            error, why = self.refusal
            raise error(f"{self.name}: cannot differentiate the solution: {why}")


def root_node(problem: RootProblem) -> Tensor:
    """Solve ``problem`` as one node and check that its optimality function sees all differentiated Tensors."""
    tensors = problem.params.tensors
    x = solve_node(problem, *tensors)
    refuse_closed_over_tensors(problem.residual, x, tensors, problem.name, "optimality function")
    return x


def custom_root(optimality_fn: Callable, *, solve: str = "auto", symmetric: bool = False) -> Callable:
    """Decorate ``solver(init, *params) -> x*`` so that ``x*`` is differentiated implicitly.

    ``optimality_fn(x, *params)`` (dualgrad ops or NumPy code on Tensors) is zero at
    the solution and has the shape of ``x``. The decorated solver returns a
    Tensor differentiable with respect to every Tensor in ``params`` (forward and
    reverse mode, any order, under ``vmap``); ``symmetric=True`` says that
    ``d optimality / dx`` is symmetric (a gradient: CG may then be used).

    >>> import dualgrad as dg
    >>> from dualgrad.func import jacrev
    >>> def fixed_iterations(x, a):
    ...     for _ in range(200):
    ...         x = x - 0.1 * (x ** 3 + x - a)
    ...     return x
    >>> solve = custom_root(lambda x, a: x ** 3 + x - a)(fixed_iterations)
    >>> a = dg.tensor([2.0, 10.0])
    >>> jacrev(lambda a: solve(dg.zeros(2), a))(a)       # 1 / (3 x^2 + 1) at x = 1, 2
    tensor([[0.2500, 0.0000],
            [0.0000, 0.0769]])
    """
    method = check_method(solve, "custom_root")

    def decorate(solver: Callable) -> Callable:
        name = f"custom_root({getattr(solver, '__name__', 'solver')})"
        prepared: dict = {}  # the sparsity pattern of the optimality condition, detected once per shape

        @functools.wraps(solver)
        def solved(init: Any, *params: Any) -> Tensor:
            problem = RootProblem(optimality_fn, solver, init, Parameters(params), method=method,
                                  symmetric=symmetric, name=name, prepared=prepared)
            return root_node(problem)

        return solved

    return decorate


def custom_fixed_point(fixed_point_fn: Callable, *, solve: str = "auto") -> Callable:
    """Decorate ``solver(init, *params) -> x*`` where ``x* = fixed_point_fn(x*, *params)``.

    The same as ``custom_root`` with the optimality function ``x - fixed_point_fn(x, *params)``.

    >>> import dualgrad as dg
    >>> def iterate(x, a):
    ...     for _ in range(100):
    ...         x = 0.5 * x + a
    ...     return x
    >>> solve = custom_fixed_point(lambda x, a: 0.5 * x + a)(iterate)
    >>> a = dg.tensor(1.0, requires_grad=True)
    >>> x = solve(dg.tensor(0.0), a)                 # x = 2 a
    >>> dg.autograd.grad(x, a)[0]
    tensor(2.)
    """
    method = check_method(solve, "custom_fixed_point")
    return custom_root(lambda x, *params: x - fixed_point_fn(x, *params), solve=method)


def linear_solve(matvec: Callable, b: Any, *args: Any, symmetric: bool = False, solve: str = "auto") -> Tensor:
    """``x`` with ``matvec(x, *args) = b``, differentiable in ``b`` and in every Tensor of ``args``.

    ``matvec`` is linear in its first argument (dualgrad ops; it is never
    materialised unless ``solve="dense"`` or ``"auto"`` on a small system). The
    parameters of the matrix must be passed in ``args``, not closed over: the
    derivative comes from the implicit rule for ``A(args) x - b = 0``
    (``dx = A^{-1}(db - dA x)``), which only sees ``args``; a closed-over Tensor
    that requires grad raises ``ValueError``. ``symmetric=True`` lets ``"auto"``
    use CG on large systems.

    >>> import dualgrad as dg
    >>> a = dg.tensor([[3.0, 1.0], [1.0, 2.0]], requires_grad=True)
    >>> b = dg.tensor([9.0, 8.0], requires_grad=True)
    >>> x = linear_solve(lambda v, m: m @ v, b, a)
    >>> x
    tensor([2., 3.], grad_fn=<_ImplicitSolveBackward>)
    >>> x.sum().backward()
    >>> b.grad                                       # A^{-T} 1
    tensor([0.2000, 0.4000])
    """
    method = check_method(solve, "linear_solve")
    b = b if isinstance(b, Tensor) else as_float_tensor(b)
    params = Parameters(args)
    system = UserLinearSystem(matvec, params.rebuild, method, symmetric)
    tensors = params.tensors
    x = solve_node(system, b, *tensors)
    refuse_closed_over_tensors(lambda v, *ts: system.matvec(v, *ts), x, tensors, "linear_solve", "matvec")
    return x


__all__ = ["DENSE_LIMIT", "NonConvergedError", "SingularJacobianError", "custom_fixed_point", "custom_root",
           "linear_solve"]
