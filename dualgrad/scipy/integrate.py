"""``scipy.integrate.solve_ivp`` whose solution is differentiable with respect to ``y0`` and ``args``.

SciPy integrates ``dy/dt = fun(t, y, *args)``; ``sol.y`` is a Tensor (one node
of the graph) differentiable with respect to ``y0`` and every Tensor in
``args``. ``fun`` is written with dualgrad ops or NumPy calls on Tensors, gets
``t`` as a float and ``y`` as a 1-D Tensor, and must not close over Tensors that
require grad (``ValueError``: pass them in ``args``).

Sensitivities (``sensitivity=``):

* ``"forward"``: the forward sensitivity equations ``S' = J_y S + J_p``,
  ``S(t0) = dy0/dθ``, integrated with the state in one SciPy solve (same method
  and tolerances, so the sensitivities are controlled by ``rtol``/``atol`` too).
  One column per differentiated scalar (the ``y0`` entries when ``y0`` requires
  grad or carries a tangent, and every entry of the Tensors in ``args``),
  computed with batched jvps of ``fun`` (``vmap``). The Jacobian ``dY/dθ`` at
  the output times is then kept, so reverse mode, ``jacrev`` and ``jacfwd`` all
  read it.
* ``"adjoint"``: for a reverse pass. With ``method="BDF"`` it is the discrete
  adjoint of SciPy's steps (``_integrate_bdf_adjoint``): the forward's steps are
  walked backward with one transposed solve ``(I - c J)^T w = d̄`` and one vjp
  of ``fun`` per step, giving the gradient of the computed solution (its
  accuracy is that of the solve's own, uncontrolled sensitivities: about the
  tolerance, up to ten-odd times ``rtol`` on the 2-D Brusselator at
  ``rtol=1e-4``). With the other methods, or ``adjoint="continuous"``, the adjoint ``λ' = -J_y^T λ``,
  ``μ' = -J_p^T λ`` is integrated backward, restarting with ``λ += g_i`` at the
  output times, with the method and tolerances of the solve (``μ``, a
  quadrature, is left out of the error test): its accuracy is that of an ODE
  solve to ``rtol``/``atol`` (the "optimise-then-discretise" adjoint; it agrees
  with forward sensitivities to about the tolerance, not to round-off). Both
  keep memory O(checkpoints + one segment), not O(steps): solver copies or
  states every ``checkpoint_every`` accepted steps, one segment re-run at a
  time. A jvp (forward mode) computes forward sensitivities.
* ``"auto"``: ``"forward"`` when there are at most 16 differentiated scalars
  (or terminal events), else ``"adjoint"``.

For BDF, Radau and LSODA SciPy gets the exact Jacobian of ``fun`` unless
``jac`` is given: dense (``jacfwd``), or sparse from ``dualgrad.sparse`` for a
large state with a sparse pattern. The sensitivity and adjoint systems are
block lower triangular; BDF and Radau solve their Newton systems by block
substitution with one LU of the state's ``n x n`` matrix (``_integrate_linear``).
When ``fun`` never reads ``t`` its evaluations and derivatives are
``dualgrad.compile`` replays (``_integrate_rhs``).

Events: ``events`` (functions ``event(t, y, *args)``, with SciPy's ``terminal``
and ``direction`` attributes) work; ``sol.t_events``/``sol.y_events`` are
arrays (not differentiated). When a terminal event ends the integration, the
last column of ``sol.y`` (at the event time) gets the derivative through the
moving event time (forward sensitivities; adjoint with events raises).

``sol.sol(t)`` (with ``dense_output=True``) is differentiable: each call solves
again with ``t_eval=t``.

Second derivatives (``hessian``, ``jacfwd`` over ``jacrev``, double backward)
work: ``dY/dθ`` is itself a node whose derivatives come from a nested,
differentiable ``solve_ivp`` of the sensitivity equations. A solution ended by
a terminal event is first-order only (``NotImplementedError``). A failed
integration (``status == -1``) raises ``NonConvergedError`` when
differentiated, unless ``allow_nonconverged=True``.

>>> import dualgrad as dg
>>> from dualgrad.scipy.integrate import solve_ivp
>>> k = dg.tensor(0.5, requires_grad=True)
>>> sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 2.0), dg.tensor([1.0]), args=(k,), t_eval=[2.0],
...                 rtol=1e-10, atol=1e-12)
>>> sol.y                                           # exp(-k t)
tensor([[0.3679]], grad_fn=<_OdeSolveBackward>)
>>> dg.autograd.grad(sol.y.sum(), k)[0]             # -t exp(-k t)
tensor(-0.7358)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.state import STATE
from ..factories import tensor, zeros
from ..implicit import Parameters, refuse_closed_over_tensors
from ..implicit._node import levels_in_use, outside_vmap, solve_per_member
from ..ops.shape.core import cat
from ..tensor import Tensor
from ..transforms import func
from ..transforms.function import Function
from ..vmap.batching import BatchedTensor
from ._integrate_solves import OdeProblem, Trajectory, unit_directions, values_of
from ._problems import scipy_module

METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
SENSITIVITIES = ("auto", "forward", "adjoint")
ADJOINTS = ("auto", "discrete", "continuous")
AUTO_FORWARD_LIMIT = 16
SECOND_ORDER_EVENT_MESSAGE = ("solve_ivp: second derivatives of a solution ended by a terminal event are not "
                              "supported (the event time's derivative is first order only); differentiate it once")


class _SensitivityJacobian(Function):
    """``dY/dθ`` (computed by SciPy) as a node of ``y0`` and the Tensors of ``args``: its own derivatives (second
    derivatives of the solution) come from a nested, differentiable ``solve_ivp`` of the sensitivity equations."""

    @staticmethod
    def forward(ctx: Any, trajectory: Trajectory, with_y0: bool, *inputs: Tensor) -> Tensor:
        ctx.trajectory, ctx.with_y0 = trajectory, with_y0
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)
        return tensor(trajectory.jacobian(with_y0))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        inputs = ctx.saved_tensors
        with levels_in_use([g, *inputs]):
            _, pullback = func.vjp(lambda *x: _nested_jacobian(ctx.trajectory, x, ctx.with_y0), *inputs)
            return (None, None, *pullback(g))

    @staticmethod
    def jvp(ctx: Any, _: Any, __: Any, *tangents: Tensor | None) -> Tensor:
        inputs = ctx.saved_tensors
        with levels_in_use([*inputs, *tangents]):
            filled = tuple(zeros(x.shape) if t is None else t for x, t in zip(inputs, tangents, strict=True))
            return func.jvp(lambda *x: _nested_jacobian(ctx.trajectory, x, ctx.with_y0), tuple(inputs), filled)[1]


def _nested_jacobian(trajectory: Trajectory, inputs: tuple, with_y0: bool) -> Tensor:
    """``dY/dθ`` (shape ``(n, m, c)``) as a differentiable function of ``inputs`` (``y0``, then the Tensors of
    ``args``): ``solve_ivp`` of the state with its sensitivity columns, written in dualgrad ops."""
    problem = trajectory.problem
    if trajectory.terminated_by_event:
        raise NotImplementedError(SECOND_ORDER_EVENT_MESSAGE)
    y0, tensors = inputs[0], tuple(inputs[1:])
    n, counts = trajectory.y0.numel(), trajectory.columns(with_y0)
    c = sum(counts)
    directions = unit_directions(trajectory.tensors, counts[1:], c)
    call = trajectory.functions.call

    def augmented(t: float, u: Tensor, *params: Tensor) -> Tensor:
        y, s = u[:n], u[n:].reshape(c, n)
        value, moved = func.vmap(lambda col, *dp: func.jvp(lambda z, *p: call(t, z, p), (y, *params),
                                                           (col, *dp)))(s, *directions)
        return cat([value[0], moved.reshape(-1)])

    s0 = np.zeros((c, n))
    if with_y0:
        s0[:n, :n] = np.eye(n)
    options = {k: v for k, v in problem.options.items() if k not in ("jac", "jac_sparsity")}
    t_end = float(trajectory.times[-1]) if trajectory.times.size else problem.t_span[1]
    sol = solve_ivp(augmented, (problem.t_span[0], t_end), cat([y0.reshape(-1), tensor(s0.reshape(-1))]),
                    args=tensors, method=problem.method, t_eval=trajectory.times, **options)
    return sol.y[n:].reshape(c, n, -1).permute(1, 2, 0)


def _jacobian_tensor(trajectory: Trajectory, inputs: list, with_y0: bool) -> Tensor:
    return _SensitivityJacobian.apply(trajectory, with_y0, *inputs)


class _OdeSolve(Function):
    """``Y = solve_ivp(fun, ..., y0, args).y`` as one node."""

    @staticmethod
    def forward(ctx: Any, problem: OdeProblem, y0: Tensor, *tensors: Tensor) -> Tensor:
        with outside_vmap():
            trajectory = problem.integrate(y0, tensors)
        ctx.trajectory = trajectory
        ctx.set_materialize_grads(False)  # (a missing tangent of y0 must not cost n sensitivity columns)
        ctx.save_for_backward(y0, *tensors)
        ctx.save_for_forward(y0, *tensors)
        return tensor(trajectory.values)

    @staticmethod
    def backward(ctx: Any, g: Tensor | None) -> tuple:
        trajectory = ctx.trajectory
        trajectory.check_differentiable()
        inputs = list(ctx.saved_tensors)
        if g is None:
            return (None,) * (1 + len(inputs))
        with levels_in_use([g, *inputs]):
            wants_y0 = bool(ctx.needs_input_grad[1])
            use_jacobian = (trajectory.problem.sensitivity == "forward" or isinstance(g, BatchedTensor)
                            or STATE.grad_enabled)
            if use_jacobian:
                with_y0 = wants_y0 or trajectory.problem.y0_columns
                flat = _contract(g, _jacobian_tensor(trajectory, inputs, with_y0))
                return (None, *_split(flat, trajectory.columns(with_y0), inputs))
            grad_y0, grads = trajectory.adjoint(values_of(g))
            return (None, tensor(grad_y0) if wants_y0 else None, *(tensor(gr) for gr in grads))

    @staticmethod
    def jvp(ctx: Any, _: Any, *tangents: Tensor | None) -> Tensor:
        trajectory = ctx.trajectory
        trajectory.check_differentiable()
        inputs = list(ctx.saved_tensors)
        with levels_in_use([*inputs, *tangents]):
            with_y0 = tangents[0] is not None or trajectory.problem.y0_columns
            if all(t is None for t in tangents):
                return None
            jacobian = _jacobian_tensor(trajectory, inputs, with_y0)
            direction = _directions(tangents, trajectory.columns(with_y0))
            return (jacobian * direction).sum(-1)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, problem: OdeProblem, y0: Tensor, *tensors: Tensor) -> tuple:
        return solve_per_member(_OdeSolve, info, in_dims, problem, (y0, *tensors))


def _contract(g: Tensor, jacobian: Tensor) -> Tensor:
    """``sum_{i,j} g[i, j] J[i, j, :]``."""
    return (g.unsqueeze(-1) * jacobian).sum((0, 1))


def _split(flat: Tensor, counts: list, inputs: list) -> list:
    """``flat`` (one entry per sensitivity column) cut into one gradient per input (None for one without columns)."""
    grads, start = [], 0
    for count, inp in zip(counts, inputs, strict=True):
        grads.append(None if count == 0 else flat[start:start + count].reshape(inp.shape))
        start += count
    return grads


def _directions(tangents: tuple, counts: list) -> Tensor:
    """The tangents of the inputs with columns, flattened and concatenated (zeros for a missing one)."""
    parts = []
    for t, count in zip(tangents, counts, strict=True):
        if count:
            parts.append(tensor(np.zeros(count)) if t is None else t.reshape(-1))
    return cat(parts)


class OdeResult(dict):
    """SciPy's ``OdeResult`` with ``y`` (and ``sol``) differentiable; fields are also attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __repr__(self) -> str:
        return "\n".join(f"{k:>12}: {v!r}" for k, v in self.items())


def solve_ivp(fun: Callable, t_span: tuple, y0: Any, *, args: Any = (), method: Any = "RK45", t_eval: Any = None,
              dense_output: bool = False, events: Any = None, rtol: float = 1e-3, atol: Any = 1e-6,
              sensitivity: str = "auto", adjoint: str = "auto", checkpoint_every: int = 50,
              allow_nonconverged: bool = False,
              **options: Any) -> OdeResult:
    """``scipy.integrate.solve_ivp`` with ``sol.y`` differentiable with respect to ``y0`` and the Tensors in ``args``.

    See the module documentation for the sensitivity methods. ``adjoint``: ``"auto"`` (the discrete adjoint for
    BDF, the backward solve for the other methods), ``"discrete"`` (BDF only) or ``"continuous"`` (the backward
    solve, whose error the step control watches, for BDF too). Keywords not named
    here (``first_step``, ``max_step``, ``jac``...) go to SciPy.

    >>> import dualgrad as dg
    >>> y0 = dg.tensor([1.0, 0.0], requires_grad=True)
    >>> rotate = lambda t, y: dg.stack([-y[1], y[0]])       # y(t) = R(t) y0
    >>> sol = solve_ivp(rotate, (0.0, 1.0), y0, t_eval=[1.0], rtol=1e-10, atol=1e-12, sensitivity="adjoint")
    >>> dg.autograd.grad(sol.y[0, 0], y0)[0]                # the first row of R(1): cos 1, -sin 1
    tensor([ 0.5403, -0.8415])
    """
    integrate = scipy_module("integrate")
    if sensitivity not in SENSITIVITIES:
        raise ValueError(f"solve_ivp: sensitivity must be one of {', '.join(map(repr, SENSITIVITIES))}, "
                         f"got {sensitivity!r}")
    if isinstance(method, str) and method not in METHODS:
        raise ValueError(f"solve_ivp: method {method!r} is not one of SciPy's {', '.join(METHODS)}")
    if not isinstance(method, str) and not (isinstance(method, type) and issubclass(method, integrate.OdeSolver)):
        raise ValueError(f"solve_ivp: method must be a name or an OdeSolver subclass, got {method!r}")
    if options.get("vectorized"):
        raise ValueError("solve_ivp: vectorized=True is not supported (fun is evaluated on one state at a time)")
    if adjoint not in ADJOINTS:
        raise ValueError(f"solve_ivp: adjoint must be one of {', '.join(map(repr, ADJOINTS))}, got {adjoint!r}")
    if adjoint == "discrete" and method != "BDF":
        raise ValueError(f"solve_ivp: adjoint='discrete' is implemented for method='BDF' only, got {method!r}")
    if not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ValueError(f"solve_ivp: checkpoint_every must be a positive int, got {checkpoint_every!r}")
    span = tuple(float(values_of(t)) for t in t_span)
    y0 = y0 if isinstance(y0, Tensor) else tensor(np.asarray(y0, dtype=np.float64))
    if y0.ndim != 1:
        raise ValueError(f"solve_ivp: y0 must be 1-D, got shape {tuple(y0.shape)}")
    params = Parameters(args if isinstance(args, tuple) else (args,))
    tensors = params.tensors
    from ..transforms.func import _has_tangent

    y0_tracked = isinstance(y0, BatchedTensor) or y0.requires_grad or _has_tangent(y0)
    columns = sum(t.numel() for t in tensors) + (y0.numel() if y0_tracked else 0)
    chosen = sensitivity
    if sensitivity == "auto":
        terminal = events is not None and any(getattr(e, "terminal", False)
                                              for e in (events if isinstance(events, (list, tuple)) else [events]))
        chosen = "forward" if columns <= AUTO_FORWARD_LIMIT or terminal else "adjoint"
    if chosen == "adjoint" and events is not None:
        raise ValueError("solve_ivp: events are not supported with sensitivity='adjoint' (the event time's "
                         "derivative needs forward sensitivities); use sensitivity='forward'")
    if chosen == "adjoint" and span[1] < span[0]:
        raise ValueError("solve_ivp: sensitivity='adjoint' needs t_span increasing (t0 < t1)")
    problem = OdeProblem(fun, span, params, method, t_eval, events, dict(options, rtol=rtol, atol=atol), chosen,
                         checkpoint_every, allow_nonconverged)
    problem.y0_columns = y0_tracked
    problem.continuous_adjoint = adjoint == "continuous"
    problem.eager = y0_tracked or any(isinstance(t, BatchedTensor) or t.requires_grad or _has_tangent(t)
                                      for t in tensors)
    refuse_closed_over_tensors(lambda z, *ts: fun(span[0], z, *params.rebuild(ts)), y0, tensors, "solve_ivp",
                               "function fun")
    y = _OdeSolve.apply(problem, y0, *tensors)
    raw = problem.last.raw
    result = OdeResult(raw)
    result["y"] = y
    result["sensitivity"] = chosen
    if dense_output:
        result["sol"] = _DenseSolution(fun, span, y0, args, method, events, rtol, atol, chosen,
                                       dict(options, adjoint=adjoint),
                                       raw.t[-1] if len(raw.t) else span[1])
    return result


class _DenseSolution:
    """``sol.sol``: ``sol(t)`` is the state at ``t`` (``(n,)``, or ``(n, len(t))``), differentiable (a new solve)."""

    def __init__(self, fun: Callable, span: tuple, y0: Tensor, args: Any, method: Any, events: Any, rtol: float,
                 atol: Any, sensitivity: str, options: dict, t_end: float):
        self._setup = (fun, span, y0, args, method, events, rtol, atol, sensitivity, options)
        self.t_min, self.t_max = min(span[0], t_end), max(span[0], t_end)

    def __call__(self, t: Any) -> Tensor:
        fun, span, y0, args, method, events, rtol, atol, sensitivity, options = self._setup
        times = np.asarray(t, dtype=np.float64)
        sol = solve_ivp(fun, span, y0, args=args, method=method, t_eval=np.atleast_1d(times), events=events,
                        rtol=rtol, atol=atol, sensitivity=sensitivity, **options)
        return sol.y if times.ndim else sol.y[:, 0]


__all__ = ["AUTO_FORWARD_LIMIT", "OdeResult", "solve_ivp"]
