"""The interface of a problem whose solution is one implicit-solve node (``_node.solve_node``)."""

from __future__ import annotations

from ..tensor import Tensor


class ImplicitProblem:
    """What the node needs: ``residual(x, *inputs)`` (zero at the solution) and ``solve(*inputs)``.

    Subclasses also say how to solve their linearised systems (``linear``) and
    whether the solution may be differentiated (``check_differentiable``).
    """

    name = "implicit solve"
    method = "auto"
    symmetric = False
    potential = None  # a scalar ``p(x, *inputs)`` whose gradient in ``x`` is the residual: its sparse Hessian is J_x

    def residual(self, x: Tensor, *inputs: Tensor) -> Tensor:
        raise NotImplementedError

    def solve(self, *inputs: Tensor) -> Tensor:
        raise NotImplementedError

    def caches(self) -> tuple[dict, dict]:
        """``(factorisations, sparsity patterns)`` kept for the linear systems of this problem's derivatives
        (``dualgrad.implicit._linear``); a subclass may share ``prepared`` between problems of one solver."""
        kept = self.__dict__
        return kept.setdefault("factors", {}), kept.setdefault("prepared", {})

    def check_differentiable(self) -> None:
        """Raise if the solution may not be differentiated (the solver did not converge)."""
