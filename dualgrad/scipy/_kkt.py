"""The KKT conditions of a constrained ``minimize``, as the optimality condition of an implicit solve.

SciPy's problem is ``min f(x)`` subject to ``c_eq(x) = 0``, ``c_in(x) >= 0`` and
``lb <= x <= ub``. At a solution with a known active set (the inequalities with
``c_in = 0`` and the coordinates held at a bound) and multipliers ``lam``, the
unknown ``z = (x, lam_eq, lam_in)`` solves

* ``grad_x [f - lam_eq . c_eq - lam_in . c_in] = 0`` on the free coordinates,
  ``x_i - bound_i = 0`` on the held ones (their bound multipliers appear in
  that row only, so the row is replaced);
* ``c_eq(x) = 0``;
* ``c_in,i(x) = 0`` for active inequalities, ``lam_in,i = 0`` for inactive ones.

Differentiating that square system (``dualgrad.implicit``) gives ``dx/dparams``
as long as the active set does not change under a small perturbation: strict
complementarity (an active inequality or bound has a nonzero multiplier). A
solution where it fails (a multiplier zero to the tolerance on an active
constraint) has only one-sided derivatives: ``DegenerateActiveSetError`` is
raised when it is differentiated, as for a point that is not a KKT point of the
active set found (a multiplier of the wrong sign).

The multipliers are solved for at SciPy's solution (least squares of the
stationarity condition), which is exact for the ``x`` SciPy returns, whatever
the accuracy of the method's own multiplier estimates. Those estimates (trust-
constr's ``v``) only say which constraints an interior-point method, stopping
short of them, considers binding. A gradient that the active constraints'
gradients do not explain (``STATIONARITY_TOLERANCE``) means the active set
cannot be told at this accuracy: that raises too, rather than differentiating
a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..factories import tensor
from ..ops.elementwise.core import where
from ..ops.shape.core import cat
from ..tensor import Tensor
from ..transforms import func

ACTIVE_TOLERANCE = 1e-7  # (relative) an inequality or bound this close to zero slack is active
CANDIDATE_TOLERANCE = 1e-4  # (relative) this close, it is active if its multiplier is clearly positive
HINT_TOLERANCE = 1e-3  # (relative to the gradient) a multiplier of the method this large makes a candidate too
STATIONARITY_TOLERANCE = 1e-3  # (relative) the gradient left unexplained by the active constraints: not a KKT point
MULTIPLIER_TOLERANCE = 1e-7  # (relative to the gradient) an active multiplier this small is degenerate


DENSE_ASSEMBLY_LIMIT = 4000  # (unknowns) up to this, a KKT block dualgrad.sparse cannot make sparse is made dense
SPARSE_ASSEMBLY_DENSITY = 0.05  # a block with more nonzeros than this fraction is made dense


class DegenerateActiveSetError(RuntimeError):
    """The active set of a constrained solution is ambiguous (strict complementarity fails), or the solution is not
    a KKT point of the active set found: the solution has no (two-sided) derivative with respect to the parameters."""


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


def _vector(value: Any) -> Tensor:
    value = value if isinstance(value, Tensor) else tensor(np.asarray(value, dtype=np.float64))
    return value.reshape(-1)


class Constraints:
    """SciPy's ``constraints`` (dicts, ``NonlinearConstraint``, ``LinearConstraint``) as two vector functions.

    ``equalities(x, extra)`` (``= 0``) and ``inequalities(x, extra)`` (``>= 0``),
    where ``extra`` holds each dict's ``args`` (their Tensors are differentiated
    like ``minimize``'s ``args``). ``m_eq``/``m_in`` are their sizes at ``x0``.
    """

    def __init__(self, constraints: Any, x0: np.ndarray, shape: tuple):
        items = [constraints] if isinstance(constraints, dict) or not isinstance(constraints, (list, tuple)) \
            else list(constraints)
        self.shape = shape
        self.parts: list = []  # (kind, index of its args, function): "eq"/"in" dicts, "bounded" (fun, lb, ub) objects
        self.args: list = []
        for item in items:
            self._add(item)
        plain = tuple(_as_tuple(a) for a in self.args)
        start = tensor(np.asarray(x0, dtype=np.float64).reshape(shape))
        self.m_eq = int(self.equalities(start, plain).numel())
        self.m_in = int(self.inequalities(start, plain).numel())

    def _add(self, item: Any) -> None:
        index = len(self.args)
        if isinstance(item, dict):
            kind = item.get("type")
            if kind not in ("eq", "ineq"):
                raise ValueError(f"minimize: a constraint dict needs type 'eq' or 'ineq', got {kind!r}")
            fun = item["fun"]
            self.args.append(item.get("args", ()))
            self.parts.append(("eq" if kind == "eq" else "in", index, lambda x, *a, f=fun: _vector(f(x, *a))))
            return
        self.args.append(())
        if hasattr(item, "A") and not hasattr(item, "fun"):  # LinearConstraint
            matrix = tensor(np.atleast_2d(_values(item.A)))
            fun = lambda x, m=matrix: m @ x.reshape(-1)
        elif hasattr(item, "fun"):  # NonlinearConstraint
            fun = lambda x, f=item.fun: _vector(f(x))
        else:
            raise TypeError(f"minimize: constraints must be dicts, NonlinearConstraint or LinearConstraint, got "
                            f"{type(item).__name__}")
        lower, upper = _values(item.lb), _values(item.ub)
        self.parts.append(("bounded", index, (fun, lower, upper)))

    def _collect(self, x: Tensor, extra: tuple, equality: bool) -> Tensor:
        pieces = []
        for kind, index, fun in self.parts:
            if kind == "bounded":
                f, lower, upper = fun
                value = f(x)
                lower = np.broadcast_to(lower, value.shape)
                upper = np.broadcast_to(upper, value.shape)
                eq = lower == upper
                if equality:
                    if eq.any():
                        pieces.append(value[tensor(np.flatnonzero(eq))] - tensor(lower[eq]))
                    continue
                low = ~eq & np.isfinite(lower)
                high = ~eq & np.isfinite(upper)
                if low.any():
                    pieces.append(value[tensor(np.flatnonzero(low))] - tensor(lower[low]))
                if high.any():
                    pieces.append(tensor(upper[high]) - value[tensor(np.flatnonzero(high))])
            elif (kind == "eq") == equality:
                pieces.append(fun(x, *_as_tuple(extra[index])))
        return cat(pieces) if pieces else tensor(np.zeros(0))

    def equalities(self, x: Tensor, extra: tuple) -> Tensor:
        return self._collect(x, extra, equality=True)

    def inequalities(self, x: Tensor, extra: tuple) -> Tensor:
        return self._collect(x, extra, equality=False)

    def for_scipy(self, method: str, extra: tuple) -> list:
        """The constraints for SciPy (values and exact Jacobians on NumPy arrays; Hessians for trust-constr)."""
        import scipy.optimize

        shape = self.shape
        out = []
        for equality, size in ((True, self.m_eq), (False, self.m_in)):
            if not size:
                continue
            g = (lambda y, e=equality: self._collect(y.reshape(shape), extra, e))
            value = lambda x, g=g: _values(g(tensor(np.asarray(x, dtype=np.float64))))
            jac = lambda x, g=g, m=size: func.jacfwd(g)(tensor(np.asarray(x, dtype=np.float64))).numpy().reshape(m, -1)
            if method == "trust-constr":
                hess = (lambda x, v, g=g: func.hessian(lambda y: (g(y) * tensor(np.asarray(v))).sum())(
                    tensor(np.asarray(x, dtype=np.float64))).numpy())
                out.append(scipy.optimize.NonlinearConstraint(value, 0.0, 0.0 if equality else np.inf, jac=jac,
                                                              hess=hess))
            else:
                out.append({"type": "eq" if equality else "ineq", "fun": value, "jac": jac})
        return out


def trust_constr_hints(raw: Any, constraints: Constraints, bounds: tuple | None, n: int) -> np.ndarray | None:
    """trust-constr's multipliers ``v`` as nonnegative strengths of the inequality rows of ``KKTSystem.solution``
    (the inequalities, then the finite lower and the finite upper bounds), or None if they are not there."""
    v = list(getattr(raw, "v", None) or [])
    expected = int(constraints.m_eq > 0) + int(constraints.m_in > 0) + int(bounds is not None)
    if len(v) != expected:
        return None
    if constraints.m_eq:
        v.pop(0)
    inequality = -np.asarray(v.pop(0), dtype=np.float64) if constraints.m_in else np.zeros(0)
    pieces = [inequality]
    if bounds is not None:
        on_bounds = np.asarray(v.pop(0), dtype=np.float64)
        lower, upper = bounds
        pieces += [-on_bounds[np.isfinite(lower)], on_bounds[np.isfinite(upper)]]
    return np.concatenate(pieces)


def _assembled(sparse_block: Callable, dense_block: Callable, n: int) -> Any:
    """A block of the KKT matrix as a ``scipy.sparse`` array: from ``dualgrad.sparse`` (``sparse_block(module)``),
    else dense (``dense_block()``) up to ``DENSE_ASSEMBLY_LIMIT`` unknowns, else None."""
    import scipy.sparse

    import dualgrad.sparse as sparse

    try:
        block = sparse_block(sparse)
        if block.nnz <= SPARSE_ASSEMBLY_DENSITY * block.shape[0] * block.shape[1] or n > DENSE_ASSEMBLY_LIMIT:
            return scipy.sparse.csr_array(block)
    except (sparse.SparsityDetectionError, NotImplementedError, MemoryError):  # (see _problems.UNFOLLOWED_NOTE)
        pass  # (what detection cannot follow: the dense block is exact too)
    if n > DENSE_ASSEMBLY_LIMIT:
        return None
    return scipy.sparse.csr_array(dense_block())


def _as_tuple(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,) if not isinstance(args, list) else tuple(args)


class KKTSystem:
    """The optimality function ``F(z, args, extra)`` of a constrained solution ``z = (x, lam_eq, lam_in)``.

    ``solution(x, args, extra)`` (called by the solve) decides the active set at
    SciPy's ``x`` and solves for the multipliers; the active set is kept by the
    values of ``z`` and read back when ``F`` is evaluated for the derivatives.
    """

    def __init__(self, fun: Callable, constraints: Constraints, bounds: tuple | None, shape: tuple):
        self.fun = fun
        self.constraints = constraints
        self.bounds = bounds
        self.shape = shape
        self.n = int(np.prod(shape))
        self.active: dict = {}  # z bytes -> (held mask, bound values, active inequalities)
        self.refusal: str = ""

    def lagrangian_gradient(self, x: Tensor, lam_eq: Tensor, lam_in: Tensor, args: tuple, extra: tuple) -> Tensor:
        c = self.constraints

        def lagrangian(y: Tensor) -> Tensor:
            value = self.fun(y, *args)
            if c.m_eq:
                value = value - (lam_eq * c.equalities(y, extra)).sum()
            if c.m_in:
                value = value - (lam_in * c.inequalities(y, extra)).sum()
            return value

        return func.grad(lagrangian)(x)

    def solution(self, x: np.ndarray, args: tuple, extra: tuple, hints: np.ndarray | None = None) -> np.ndarray:
        """``z`` at SciPy's ``x``: the active set and the multipliers (least squares), recorded with ``z``.

        Inequalities and bounds within ``CANDIDATE_TOLERANCE`` of zero slack are
        candidates (interior-point methods such as trust-constr stop short of the
        constraint); the multipliers decide: a candidate with a clearly positive
        multiplier is active; one with a zero or negative multiplier is inactive
        if its slack is clearly nonzero, and otherwise makes the active set
        ambiguous (recorded in ``refusal``, raised when differentiating).
        """
        c = self.constraints
        xt = tensor(np.asarray(x, dtype=np.float64).reshape(self.shape))
        flat_x = xt.numpy().reshape(-1)
        g = func.grad(lambda y: self.fun(y, *args))(xt).numpy().reshape(-1)
        scale = 1.0 + np.abs(flat_x).max(initial=0.0)
        jac_eq = func.jacfwd(lambda y: c.equalities(y, extra))(xt).numpy().reshape(c.m_eq, -1) if c.m_eq \
            else np.zeros((0, self.n))
        # inequality rows (value >= 0, gradient): the constraints, then x - lb >= 0 and ub - x >= 0
        slack = [c.inequalities(xt, extra).numpy().reshape(-1) if c.m_in else np.zeros(0)]
        rows = [func.jacfwd(lambda y: c.inequalities(y, extra))(xt).numpy().reshape(c.m_in, -1) if c.m_in
                else np.zeros((0, self.n))]
        names = [f"inequality constraint {i}" for i in range(c.m_in)]
        lower = upper = np.full(self.n, np.inf)
        if self.bounds is not None:
            lower, upper = self.bounds
            eye = np.eye(self.n)
            finite_lower, finite_upper = np.flatnonzero(np.isfinite(lower)), np.flatnonzero(np.isfinite(upper))
            slack += [flat_x[finite_lower] - lower[finite_lower], upper[finite_upper] - flat_x[finite_upper]]
            rows += [eye[finite_lower], -eye[finite_upper]]
            names += [f"the lower bound of x[{i}]" for i in finite_lower] + \
                [f"the upper bound of x[{i}]" for i in finite_upper]
        slack, rows = np.concatenate(slack), np.vstack(rows)
        tight = slack <= ACTIVE_TOLERANCE * scale
        candidate = slack <= CANDIDATE_TOLERANCE * scale
        if hints is not None:  # (the method's own multipliers: an interior-point method stops short of the bound)
            candidate |= hints > HINT_TOLERANCE * (1.0 + np.abs(g).max(initial=0.0))
        tolerance = MULTIPLIER_TOLERANCE * (1.0 + np.abs(g).max(initial=0.0))
        problems: list = []
        while True:
            system = np.vstack([jac_eq, rows[candidate]])
            lam = np.linalg.lstsq(system.T, g, rcond=None)[0] if system.size else np.zeros(system.shape[0])
            lam_rows = np.zeros(len(slack))
            lam_rows[candidate] = lam[c.m_eq:]
            dropped = candidate & (lam_rows <= tolerance) & ~tight
            if not dropped.any():
                break
            candidate &= ~dropped
        for i in np.flatnonzero(candidate):
            if abs(lam_rows[i]) <= tolerance:
                problems.append(f"{names[i]} is active (slack {slack[i]:.3g}) with a zero multiplier "
                                f"({lam_rows[i]:.3g}): strict complementarity fails, the active set is ambiguous")
            elif lam_rows[i] < 0:
                problems.append(f"{names[i]} is active (slack {slack[i]:.3g}) with a negative multiplier "
                                f"({lam_rows[i]:.3g}): not a KKT point")
        active = candidate[:c.m_in]
        held, bound = np.zeros(self.n, dtype=bool), np.zeros(self.n)
        if self.bounds is not None:
            k = c.m_in
            at_lower = candidate[k:k + len(finite_lower)]
            at_upper = candidate[k + len(finite_lower):]
            held[finite_lower[at_lower]] = True
            bound[finite_lower[at_lower]] = lower[finite_lower[at_lower]]
            if (held[finite_upper[at_upper]]).any():
                problems.append("a coordinate is held at both bounds")
            held[finite_upper[at_upper]] = True
            bound[finite_upper[at_upper]] = upper[finite_upper[at_upper]]
        z = np.concatenate([flat_x, lam[:c.m_eq], lam_rows[:c.m_in]])
        self.active[z.tobytes()] = (held, bound, active)
        residual = np.abs(g - np.vstack([jac_eq, rows[candidate]]).T @ lam).max(initial=0.0) if system.size \
            else np.abs(g).max(initial=0.0)
        if not held.all() and residual > STATIONARITY_TOLERANCE * (1.0 + np.abs(g).max(initial=0.0)):
            problems.append(f"the gradient is not a combination of the active constraints' gradients (residual "
                            f"{residual:.3g}): not a KKT point to the accuracy needed to find its active set; "
                            "tighten the solver's tolerances")
        if problems and not self.refusal:
            self.refusal = "; ".join(problems)
        return z

    def sparse_jacobian(self, z: Tensor, args: tuple, extra: tuple) -> Any:
        """From ``DENSE_LIMIT`` unknowns: the Jacobian of this system, assembled as a sparse matrix for a direct
        solve (``dualgrad.implicit`` factorises it with a sparse LU, after checking it against a jvp); None where
        it cannot be assembled (the generic paths: ``dualgrad.sparse`` on the whole system, else GMRES)::

            [[H_L (free rows) | unit rows (held)   -A_eq^T   -A_in^T      ]
             [A_eq                                  0         0           ]
             [A_in (active rows)                    0         I (inactive)]]

        ``H_L`` is the Hessian of the Lagrangian ``f - lam_eq . c_eq - lam_in . c_in`` in ``x`` and ``A`` the
        constraints' Jacobians, sparse from ``dualgrad.sparse`` (dense, up to ``DENSE_ASSEMBLY_LIMIT`` unknowns,
        where detection cannot follow the functions or the pattern is not sparse)."""
        from ..implicit import DENSE_LIMIT

        if self.n <= DENSE_LIMIT:
            return None
        values = _values(z).reshape(-1)
        kept = self.active.get(values.tobytes())
        if kept is None:
            return None
        try:
            import scipy.sparse
        except ImportError:
            return None
        c, n = self.constraints, self.n
        held, _, active = kept
        x = values[:n]
        lam_eq, lam_in = tensor(values[n:n + c.m_eq]), tensor(values[n + c.m_eq:])

        def lagrangian(y: Tensor) -> Tensor:
            point = y.reshape(self.shape)
            value = self.fun(point, *args)
            if c.m_eq:
                value = value - (lam_eq * c.equalities(point, extra)).sum()
            if c.m_in:
                value = value - (lam_in * c.inequalities(point, extra)).sum()
            return value

        hessian = _assembled(lambda sparse: sparse.hessian_fn(lagrangian, x, format="csr")(x),
                             lambda: func.hessian(lagrangian)(tensor(x)).numpy().reshape(n, n), n)
        blocks = []
        for size, part in ((c.m_eq, c.equalities), (c.m_in, c.inequalities)):
            g = (lambda y, part=part: part(y.reshape(self.shape), extra).reshape(-1))
            blocks.append(None if not size else _assembled(
                lambda sparse, g=g: sparse.jacobian_fn(g, x, format="csr")(x),
                lambda g=g, size=size: func.jacfwd(g)(tensor(x)).numpy().reshape(size, n), n))
        if hessian is None or any(b is None for b, size in zip(blocks, (c.m_eq, c.m_in), strict=True) if size):
            return None
        free = scipy.sparse.diags(1.0 - held.astype(np.float64))
        top = [free @ hessian + scipy.sparse.diags(held.astype(np.float64))]
        top += [-(free @ b.T) for b in blocks if b is not None]
        rows = [top]
        if c.m_eq:
            rows.append([blocks[0], None, None] if c.m_in else [blocks[0], None])
        if c.m_in:
            on = active.astype(np.float64)
            inequality = [scipy.sparse.diags(on) @ blocks[1]]
            inequality += [None] * int(c.m_eq > 0)
            inequality.append(scipy.sparse.diags(1.0 - on))
            rows.append(inequality)
        return scipy.sparse.block_array(rows, format="csc")

    def __call__(self, z: Tensor, args: tuple, extra: tuple) -> Tensor:
        c = self.constraints
        n = self.n
        shape, z = z.shape, z.reshape(-1)
        x = z[:n].reshape(self.shape)
        lam_eq, lam_in = z[n:n + c.m_eq], z[n + c.m_eq:]
        kept = self.active.get(_values(z).tobytes())
        if kept is None:  # (not at a recorded solution: the active set read from the values)
            kept = (np.zeros(n, dtype=bool), np.zeros(n), _values(lam_in) != 0)
        held, bound, active = kept
        stationarity = self.lagrangian_gradient(x, lam_eq, lam_in, args, extra).reshape(-1)
        if held.any():
            stationarity = where(tensor(held), x.reshape(-1) - tensor(bound), stationarity)
        pieces = [stationarity]
        if c.m_eq:
            pieces.append(c.equalities(x, extra))
        if c.m_in:
            pieces.append(where(tensor(active), c.inequalities(x, extra), lam_in))
        return cat(pieces).reshape(shape)
