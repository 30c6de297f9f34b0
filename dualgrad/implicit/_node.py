"""The implicit solve node: one graph node whose derivatives come from the implicit function theorem.

A problem gives a residual ``F(x, *inputs)`` (dualgrad ops) that is zero at the
solution ``x* = solve(*inputs)``. Differentiating ``F(x*(p), p) = 0``::

    J_x dx = -J_p dp                (jvp: one linear solve per tangent)
    J_x^T w = g,   grad_p = -J_p^T w (vjp: one transposed linear solve per cotangent)

``J_x v`` and ``J_x^T w`` are jvps and vjps of ``F``; the linear solves are
themselves ``_ImplicitSolve`` nodes (of the linear residual ``A v - b``) whose
inputs are ``x*`` and the inputs of ``F``. So every derivative is built from
differentiable ops and nodes of this kind: second derivatives, ``hessian``,
``jacfwd``/``jacrev`` and ``vmap`` compose. The forward of a node runs with
tracking off, so the solver's own iterations are never recorded.
"""

from __future__ import annotations

from typing import Any

from ..base.state import STATE
from ..factories import zeros_like
from ..ops.shape.core import stack
from ..tensor import Tensor
from ..transforms import func
from ..transforms.function import Function
from ..vmap.batching import is_batched_at, only_vmap_levels, tangent_batched_at
from ._linear import JacobianSystem
from ._problem import ImplicitProblem


class NonConvergedError(RuntimeError):
    """Differentiating the result of a solver that reported failure."""


class _ImplicitSolve(Function):
    """``x* = problem.solve(*inputs)`` as one node, differentiated by the implicit function theorem."""

    @staticmethod
    def forward(ctx: Any, problem: ImplicitProblem, *inputs: Tensor) -> Tensor:
        with outside_vmap():
            x = problem.solve(*inputs)
        ctx.problem = problem
        ctx.save_for_backward(x, *inputs)
        ctx.save_for_forward(x, *inputs)
        return x

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        problem = ctx.problem
        problem.check_differentiable()
        x, *inputs = ctx.saved_tensors
        with levels_in_use([g, x, *inputs]):
            w = transposed_solve(problem, x, inputs, g)
            if not inputs:
                return (None,)
            _, pullback = func.vjp(lambda *p: problem.residual(x, *p), *inputs)
            return (None, *(-grad for grad in pullback(w)))

    @staticmethod
    def jvp(ctx: Any, _: Any, *tangents: Tensor | None) -> Tensor:
        problem = ctx.problem
        problem.check_differentiable()
        x, *inputs = ctx.saved_tensors
        if not inputs:
            return zeros_like(x)
        with levels_in_use([x, *inputs, *tangents]):
            tangents = tuple(zeros_like(p) if t is None else t for p, t in zip(inputs, tangents, strict=True))
            _, moved = func.jvp(lambda *p: problem.residual(x, *p), tuple(inputs), tangents)
            return forward_solve(problem, x, inputs, -moved)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, problem: ImplicitProblem, *inputs: Tensor) -> tuple:
        return solve_per_member(_ImplicitSolve, info, in_dims, problem, inputs)


def levels_in_use(tensors: list) -> only_vmap_levels:
    """Only the vmap levels at which one of ``tensors`` (or its tangent) is batched are active.

    A node's inputs are never batched (the ``vmap`` rule solves member by member),
    but its backward and jvp may run while the level of that rule is active; the
    transforms they call (``func.vjp``/``jvp`` of the residual) would take the
    unbatched tensors for physical ones of that level.
    """
    return only_vmap_levels(tuple(
        level for level in STATE.vmap_levels
        if any(is_batched_at(t, level) or tangent_batched_at(t, level) for t in tensors if t is not None)))


def outside_vmap() -> only_vmap_levels:
    """No vmap level active: the inputs of a forward are unbatched (the ``vmap`` rule slices them), and
    the transforms a solve may run (``jacfwd`` of the residual) must not see the levels of the caller."""
    return only_vmap_levels(())


def solve_per_member(solve: type, info: Any, in_dims: tuple, problem: Any, inputs: tuple) -> tuple:
    """The vmap rule of a solve node (``solve``, a Function applied as ``solve.apply(problem, *inputs)``): one
    solve per batch member, since the solver is a black box that sees unbatched inputs."""
    dims = in_dims[1:]
    solutions = []
    for member in range(info.batch_size):
        sliced = [p if d is None else p.select(d, member) for p, d in zip(inputs, dims, strict=True)]
        solutions.append(solve.apply(problem, *sliced))
    return stack(solutions), 0


def solve_node(problem: ImplicitProblem, *inputs: Tensor) -> Tensor:
    """The solution of ``problem`` as a node with inputs ``inputs``."""
    return _ImplicitSolve.apply(problem, *inputs)


def transposed_solve(problem: ImplicitProblem, x: Tensor, inputs: list, g: Tensor) -> Tensor:
    """``w`` with ``J_x^T w = g`` (``J_x`` of ``problem.residual`` at ``x``), differentiable in every argument."""
    return solve_node(JacobianSystem(problem, transpose=True), g, x, *inputs)


def forward_solve(problem: ImplicitProblem, x: Tensor, inputs: list, r: Tensor) -> Tensor:
    """``v`` with ``J_x v = r``, differentiable in every argument."""
    return solve_node(JacobianSystem(problem, transpose=False), r, x, *inputs)
