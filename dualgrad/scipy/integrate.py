"""``scipy.integrate.solve_ivp`` whose solution is differentiable with respect to ``y0`` and ``args``.

SciPy integrates ``dy/dt = fun(t, y, *args)``; ``sol.y`` is a Tensor (one node
of the graph) differentiable with respect to ``y0`` and every Tensor in
``args``. ``fun`` is written with dualgrad ops or NumPy calls on Tensors, gets
``t`` as a float and ``y`` as a 1-D Tensor, and must not close over Tensors that
require grad (``ValueError``: pass them in ``args``).

Sensitivities (``sensitivity=``):

* ``"forward"``: the forward sensitivity equations ``S' = J_y S + J_p``,
  ``S(t0) = dy0/dθ``, integrated with the state by SciPy (same method and
  tolerances, so the sensitivities are controlled by ``rtol``/``atol`` too). One
  column per differentiated scalar (the ``y0`` entries when ``y0`` requires grad
  or carries a tangent, and every entry of the Tensors in ``args``), computed
  with batched jvps of ``fun`` (``vmap``). The Jacobian ``dY/dθ`` at the output
  times is then kept, so reverse mode, ``jacrev`` and ``jacfwd`` all read it.
* ``"adjoint"``: for a reverse pass, the adjoint ``λ' = -J_y^T λ``,
  ``μ' = -J_p^T λ`` is integrated backward, with jumps ``λ += g_i`` at the output
  times. The state on each backward segment comes from a forward re-solve from
  a checkpoint: the state is stored every ``checkpoint_every`` accepted steps
  (and at the output times), so memory is O(checkpoints + one segment), not
  O(steps). The adjoint uses the solver's method and tolerances: its accuracy
  is that of an ODE solve to ``rtol``/``atol`` (the "optimise-then-discretise"
  adjoint; it agrees with forward sensitivities to about the tolerance, not to
  round-off). A jvp (forward mode) computes forward sensitivities.
* ``"auto"``: ``"forward"`` when there are at most 16 differentiated scalars
  (or terminal events), else ``"adjoint"``.

For BDF, Radau and LSODA SciPy gets the exact Jacobian of ``fun`` (dense, by
``jacfwd``) unless ``jac`` is given, and the exact Jacobian of the sensitivity
and adjoint systems.

Events: ``events`` (functions ``event(t, y, *args)``, with SciPy's ``terminal``
and ``direction`` attributes) work; ``sol.t_events``/``sol.y_events`` are
arrays (not differentiated). When a terminal event ends the integration, the
last column of ``sol.y`` (at the event time) gets the derivative through the
moving event time (forward sensitivities; adjoint with events raises).

``sol.sol(t)`` (with ``dense_output=True``) is differentiable: each call solves
again with ``t_eval=t`` (same steps, so the same values as SciPy's interpolant).

The result is first-order differentiable: differentiating ``sol.y`` twice (a
Hessian) raises ``NotImplementedError``. A failed integration (``status == -1``)
raises ``NonConvergedError`` when differentiated, unless
``allow_nonconverged=True``.

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

import gc
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.state import STATE
from ..factories import tensor
from ..implicit import NonConvergedError, Parameters, refuse_closed_over_tensors
from ..implicit._node import _levels_in_use, _outside_vmap
from ..ops.shape.core import cat, stack
from ..reverse import enable_grad
from ..reverse import grad as autograd_grad
from ..tensor import Tensor
from ..transforms import func
from ..transforms.function import Function
from ..vmap.batching import BatchedTensor
from ._problems import scipy_module

METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
STIFF_METHODS = ("Radau", "BDF", "LSODA")
SENSITIVITIES = ("auto", "forward", "adjoint")
AUTO_FORWARD_LIMIT = 16
SECOND_ORDER_MESSAGE = ("solve_ivp: second derivatives of an ODE solution are not supported (its sensitivities "
                        "are computed once, by SciPy); differentiate it once")


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


class OdeProblem:
    """``fun``, its parameters and SciPy's options: integrates the state, its sensitivities and adjoints."""

    def __init__(self, fun: Callable, t_span: tuple, params: Parameters, method: Any, t_eval: Any, events: Any,
                 options: dict, sensitivity: str, checkpoint_every: int, allow_nonconverged: bool):
        self.fun = fun
        self.t_span = (float(_values(t_span[0])), float(_values(t_span[1])))
        self.params = params
        self.method = method
        self.t_eval = None if t_eval is None else _values(t_eval).reshape(-1)
        self.events = events
        self.options = options
        self.sensitivity = sensitivity
        self.checkpoint_every = checkpoint_every
        self.allow_nonconverged = allow_nonconverged
        self.y0_columns = True  # (whether forward sensitivities include y0's columns; set by solve_ivp)
        self.eager = True  # (compute forward sensitivities with the solve: something will be differentiated)
        self.last: Trajectory | None = None

    # -- fun and its derivatives on values ---------------------------------------------------------
    def rhs(self, t: float, y: Tensor, tensors: tuple) -> Tensor:
        out = self.fun(t, y, *self.params.rebuild(tensors))
        return out if isinstance(out, Tensor) else tensor(np.asarray(out, dtype=np.float64))

    def numpy_rhs(self, tensors: tuple) -> Callable:
        return lambda t, y: _values(self.rhs(t, tensor(np.asarray(y, dtype=np.float64)), tensors)).reshape(-1)

    def numpy_jac(self, tensors: tuple) -> Callable:
        """The exact ``d fun / dy`` (``jacfwd``), dense."""
        return lambda t, y: func.jacfwd(lambda z: self.rhs(t, z, tensors))(
            tensor(np.asarray(y, dtype=np.float64))).numpy()

    def solver_options(self, tensors: tuple) -> dict:
        options = dict(self.options)
        if self.method in STIFF_METHODS and "jac" not in options:
            options["jac"] = self.numpy_jac(tensors)
        return options

    # -- the forward solve -------------------------------------------------------------------------
    def integrate(self, y0: Tensor, tensors: tuple) -> Trajectory:
        integrate = scipy_module("integrate")
        checkpoints: list = []
        method = _recording(integrate, self.method, checkpoints, self.checkpoint_every)
        events = None if self.events is None else _numpy_events(self.events, self, tensors)
        y_start = _values(y0).reshape(-1)
        raw = integrate.solve_ivp(self.numpy_rhs(tensors), self.t_span, y_start, method=method,
                                  t_eval=self.t_eval, events=events, **self.solver_options(tensors))
        trajectory = Trajectory(self, y0, tensors, raw, checkpoints)
        if self.sensitivity == "forward" and self.eager:
            trajectory.jacobian(with_y0=self.y0_columns)
        self.last = trajectory
        return trajectory


def _recording(integrate: Any, method: Any, checkpoints: list, every: int) -> type:
    """``method``'s OdeSolver class, recording ``(t, y)`` every ``every`` accepted steps into ``checkpoints``."""
    base = integrate._ivp.ivp.METHODS[method] if isinstance(method, str) else method

    class Recording(base):
        def step(self) -> Any:
            message = super().step()
            if self.status != "failed":
                self._accepted = getattr(self, "_accepted", 0) + 1
                if self._accepted % every == 0:
                    checkpoints.append((float(self.t), np.array(self.y, dtype=np.float64),
                                        abs(float(self.t) - float(self.t_old))))
            return message

    Recording.__name__ = base.__name__
    return Recording


def _numpy_events(events: Any, problem: OdeProblem, tensors: tuple) -> list:
    result = []
    for event in events if isinstance(events, (list, tuple)) else [events]:
        def wrapped(t: float, y: np.ndarray, _event: Callable = event) -> float:
            return float(_values(_event(t, tensor(np.asarray(y, dtype=np.float64)),
                                        *problem.params.rebuild(tensors))))
        wrapped.terminal = getattr(event, "terminal", False)
        wrapped.direction = getattr(event, "direction", 0)
        result.append(wrapped)
    return result


class Trajectory:
    """One solve: the outputs, checkpoints, and (on demand) the Jacobian ``dY/dθ`` or adjoint gradients."""

    def __init__(self, problem: OdeProblem, y0: Tensor, tensors: tuple, raw: Any, checkpoints: list):
        self.problem = problem
        self.y0 = y0.detach()
        self.tensors = tuple(t.detach() for t in tensors)
        self.raw = raw
        self.checkpoints = checkpoints
        self.times = np.asarray(raw.t, dtype=np.float64)
        self.values = np.asarray(raw.y, dtype=np.float64)
        self._jacobian: tuple | None = None  # (with_y0, array (n, m, columns))

    @property
    def terminated_by_event(self) -> bool:
        return self.raw.status == 1 and self.times.size > 0 and self.problem.events is not None

    def check_differentiable(self) -> None:
        if self.raw.status == -1 and not self.problem.allow_nonconverged:
            raise NonConvergedError(
                f"solve_ivp: cannot differentiate the solution: the integration failed ({self.raw.message}); pass "
                "allow_nonconverged=True to differentiate the part that was integrated"
            )

    # -- forward sensitivities ---------------------------------------------------------------------
    def columns(self, with_y0: bool) -> list:
        """Per input (y0, then the Tensors of args): its number of sensitivity columns (0 when left out)."""
        return [self.y0.numel() if with_y0 else 0, *(t.numel() for t in self.tensors)]

    def jacobian(self, with_y0: bool = True) -> np.ndarray:
        """``dY/dθ`` at the output times, shape ``(n, m, columns)`` (y0's columns first, then args')."""
        if self._jacobian is None or (with_y0 and not self._jacobian[0]):
            self._jacobian = (with_y0, self._forward_sensitivities(with_y0))
        return self._jacobian[1]

    def _forward_sensitivities(self, with_y0: bool) -> np.ndarray:
        problem, integrate = self.problem, scipy_module("integrate")
        n, counts = self.y0.numel(), self.columns(with_y0)
        c = sum(counts)
        if c == 0:
            return np.zeros((n, self.times.size, 0))
        tensors = self.tensors
        directions = _unit_directions(tensors, counts[1:], c)
        s0 = np.zeros((n, c))
        if with_y0:
            s0[:, :n] = np.eye(n)

        def moved(t: float, y: Tensor, s: Tensor) -> Tensor:
            """``J_y S + J_p D`` as ``(c, n)``: one batched jvp of ``fun`` per column."""
            return func.vmap(lambda col, *dp: func.jvp(lambda z, *p: problem.rhs(t, z, p), (y, *tensors),
                                                       (col, *dp))[1])(s, *directions)

        def augmented(t: float, u: np.ndarray) -> np.ndarray:
            y, s = tensor(u[:n]), tensor(u[n:].reshape(c, n))  # (the columns of S, one after the other)
            return np.concatenate([_values(problem.rhs(t, y, tensors)), moved(t, y, s).numpy().reshape(-1)])

        options = dict(problem.options)
        options.pop("jac", None)
        if problem.method in STIFF_METHODS:
            options["jac"] = _augmented_jacobian(problem.numpy_jac(tensors), moved, n, c, problem.method)
        u0 = np.concatenate([_values(self.y0).reshape(-1), s0.T.reshape(-1)])
        t_end = self.times[-1] if self.times.size else problem.t_span[1]
        raw = integrate.solve_ivp(augmented, (problem.t_span[0], t_end), u0, method=problem.method,
                                  t_eval=self.times, **options)
        if raw.status == -1:
            raise NonConvergedError(f"solve_ivp: the forward sensitivity equations failed to integrate ({raw.message})")
        jacobian = raw.y[n:].reshape(c, n, -1).transpose(1, 2, 0).copy()
        if self.terminated_by_event:
            jacobian[:, -1, :] += self._event_time_correction(jacobian[:, -1, :], counts)
        return jacobian

    def _event_time_correction(self, s_end: np.ndarray, counts: list) -> np.ndarray:
        """``f(t_e, y_e) dt_e/dθ``: the last output sits at a terminal event time that moves with θ."""
        problem = self.problem
        index = next(i for i, times in enumerate(self.raw.t_events) if len(times))
        events = problem.events if isinstance(problem.events, (list, tuple)) else [problem.events]
        event = events[index]
        t_e, y_e = float(self.times[-1]), tensor(self.values[:, -1].copy())
        g = lambda y, *p: event(t_e, y, *problem.params.rebuild(p))
        grads = func.grad(lambda y, *p: g(y, *p).reshape(()), argnums=tuple(range(1 + len(self.tensors))))(
            y_e, *self.tensors)
        dg_dy = grads[0].numpy().reshape(-1)
        dg_dp = np.concatenate([np.zeros(counts[0])] + [gr.numpy().reshape(-1) for gr in grads[1:]])
        f_e = _values(problem.rhs(t_e, y_e, self.tensors)).reshape(-1)
        speed = dg_dy @ f_e
        if abs(speed) < 1e-300:
            raise ZeroDivisionError("solve_ivp: the terminal event is crossed tangentially; its time has no derivative")
        dt_dtheta = -(dg_dy @ s_end + dg_dp) / speed
        return np.outer(f_e, dt_dtheta)

    # -- adjoint -----------------------------------------------------------------------------------
    def adjoint(self, cotangent: np.ndarray) -> tuple:
        """``(dL/dy0, dL/dparams flat)`` for ``dL/dY = cotangent`` (shape ``(n, m)``), by the checkpointed adjoint."""
        problem, integrate = self.problem, scipy_module("integrate")
        n = self.y0.numel()
        tensors = self.tensors
        sizes = [t.numel() for t in tensors]
        shapes = [t.shape for t in tensors]
        p_total = sum(sizes)
        t0 = problem.t_span[0]
        states = {t0: _values(self.y0).reshape(-1)}
        states.update({t: y for t, y, _ in self.checkpoints})
        steps = {t: h for t, _, h in self.checkpoints}  # (the solver's step there: segments start with it)
        states.update({float(t): self.values[:, i] for i, t in enumerate(self.times)})
        outputs: dict = {}
        for i, t in enumerate(self.times):
            outputs[float(t)] = outputs.get(float(t), 0.0) + cotangent[:, i]
        boundaries = sorted(t for t in states if t <= (self.times[-1] if self.times.size else t0))
        lam, mu = np.zeros(n), np.zeros(p_total)
        lam = lam + outputs.get(boundaries[-1], 0.0)
        options = dict(problem.options)
        options.pop("jac", None)
        forward_options = problem.solver_options(tensors)
        leaves = tuple(t.detach().requires_grad_() for t in tensors)
        rhs = problem.numpy_rhs(tensors)
        for a, b in zip(boundaries[-2::-1], boundaries[:0:-1], strict=True):
            # (SciPy's solvers are reference cycles, freed only by the garbage collector: they reach the
            # segment's dense output only through ``segment``, emptied after use, so memory stays flat)
            segment = [integrate.solve_ivp(rhs, (a, b), states[a], method=problem.method, dense_output=True,
                                           **_first_step(forward_options, steps.get(a), b - a)).sol]

            def backward(t: float, z: np.ndarray, segment: list = segment) -> np.ndarray:
                y = tensor(segment[0](t), requires_grad=True)
                with enable_grad():  # (one reverse pass on plain leaves: cheaper than a func.vjp per call)
                    out = problem.rhs(t, y, leaves)
                grads = autograd_grad(out, (y, *leaves), tensor(z[:n].copy()), allow_unused=True)
                return -np.concatenate([np.zeros(leaf.numel()) if g is None else g.numpy().reshape(-1)
                                        for leaf, g in zip((y, *leaves), grads, strict=True)])

            stiff = {}
            if problem.method in STIFF_METHODS:
                stiff["jac"] = _adjoint_jacobian(problem, tensors, segment, n, p_total)
            raw = integrate.solve_ivp(backward, (b, a), np.concatenate([lam, mu]), method=problem.method,
                                      t_eval=[a], **_first_step(options, steps.get(b), b - a), **stiff)
            segment.clear()
            gc.collect(1)  # (this segment's young cycles: without it they pile up until a full collection)
            if raw.status == -1:
                raise NonConvergedError(f"solve_ivp: the adjoint equations failed to integrate ({raw.message})")
            lam, mu = raw.y[:n, -1], raw.y[n:, -1]
            lam = lam + outputs.get(a, 0.0)
        grads, start = [], 0
        for size, shape in zip(sizes, shapes, strict=True):
            grads.append(mu[start:start + size].reshape(shape))
            start += size
        return lam.reshape(self.y0.shape), grads


def _first_step(options: dict, step: float | None, length: float) -> dict:
    """``options`` with SciPy's ``first_step`` set to the forward solve's step at a checkpoint (unless given):
    a restart from a checkpoint then does not climb again from a tiny step (costly for BDF)."""
    if step is None or step <= 0 or "first_step" in options:
        return options
    return dict(options, first_step=min(step, length))


def _unit_directions(tensors: tuple, counts: list, c: int) -> list:
    """Per Tensor of args: the ``(c, *shape)`` tangents that select its own columns of ``S``."""
    directions, start = [], c - sum(counts)
    for t, count in zip(tensors, counts, strict=True):
        d = np.zeros((c, count))
        d[start:start + count] = np.eye(count)
        directions.append(tensor(d.reshape((c, *t.shape))))
        start += count
    return directions


def _augmented_jacobian(jac: Callable, moved: Callable, n: int, c: int, method: str) -> Callable:
    """The exact Jacobian of the state with its ``c`` sensitivity columns: ``J_y`` on the diagonal blocks, and
    ``d(J_y s_j + J_p d_j)/dy`` (second derivatives of ``fun``, by ``jacfwd`` over the batched jvps) in the
    first block column."""
    import scipy.sparse

    def jacobian(t: float, u: np.ndarray) -> Any:
        j = jac(t, u[:n])
        s = tensor(u[n:].reshape(c, n))
        coupling = func.jacfwd(lambda y: moved(t, y, s))(tensor(u[:n])).numpy()  # (c, n, n)
        blocks = [[None] * (c + 1) for _ in range(c + 1)]
        for k in range(c + 1):
            blocks[k][k] = j
        for k in range(c):
            blocks[k + 1][0] = coupling[k]
        full = scipy.sparse.bmat(blocks, format="csc")
        return full.toarray() if method == "LSODA" else full

    return jacobian


def _adjoint_jacobian(problem: OdeProblem, tensors: tuple, segment: list, n: int, p_total: int) -> Callable:
    """``d/dz`` of the adjoint right-hand side: ``[[-J_y^T, 0], [-J_p^T, 0]]``."""

    def jacobian(t: float, z: np.ndarray) -> np.ndarray:
        y = tensor(segment[0](t))
        full = np.zeros((n + p_total, n + p_total))
        j = func.jacfwd(lambda z, *p: problem.rhs(t, z, p), argnums=tuple(range(1 + len(tensors))))(y, *tensors)
        full[:n, :n] = -j[0].numpy().reshape(n, n).T
        start = n
        for jp in j[1:]:
            block = jp.numpy().reshape(n, -1)
            full[start:start + block.shape[1], :n] = -block.T
            start += block.shape[1]
        return full

    return jacobian


class _FirstOrderOnly(Function):
    """Passes a constant (a Jacobian computed by SciPy) through; differentiating it with respect to the
    ODE's inputs (a second derivative) raises instead of treating it as constant."""

    @staticmethod
    def forward(ctx: Any, value: Tensor, *inputs: Tensor) -> Tensor:
        return value.clone()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        raise NotImplementedError(SECOND_ORDER_MESSAGE)

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> Tensor:
        raise NotImplementedError(SECOND_ORDER_MESSAGE)


def _jacobian_tensor(trajectory: Trajectory, inputs: list, with_y0: bool) -> Tensor:
    return _FirstOrderOnly.apply(tensor(trajectory.jacobian(with_y0)), *inputs)


class _OdeSolve(Function):
    """``Y = solve_ivp(fun, ..., y0, args).y`` as one node."""

    @staticmethod
    def forward(ctx: Any, problem: OdeProblem, y0: Tensor, *tensors: Tensor) -> Tensor:
        with _outside_vmap():
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
        with _levels_in_use([g, *inputs]):
            wants_y0 = bool(ctx.needs_input_grad[1])
            use_jacobian = (trajectory.problem.sensitivity == "forward" or isinstance(g, BatchedTensor)
                            or STATE.grad_enabled)
            if use_jacobian:
                with_y0 = wants_y0 or trajectory.problem.y0_columns
                flat = _contract(g, _jacobian_tensor(trajectory, inputs, with_y0))
                return (None, *_split(flat, trajectory.columns(with_y0), inputs))
            grad_y0, grads = trajectory.adjoint(_values(g))
            return (None, tensor(grad_y0) if wants_y0 else None, *(tensor(gr) for gr in grads))

    @staticmethod
    def jvp(ctx: Any, _: Any, *tangents: Tensor | None) -> Tensor:
        trajectory = ctx.trajectory
        trajectory.check_differentiable()
        inputs = list(ctx.saved_tensors)
        with _levels_in_use([*inputs, *tangents]):
            with_y0 = tangents[0] is not None or trajectory.problem.y0_columns
            if all(t is None for t in tangents):
                return None
            jacobian = _jacobian_tensor(trajectory, inputs, with_y0)
            direction = _directions(tangents, trajectory.columns(with_y0))
            return (jacobian * direction).sum(-1)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, problem: OdeProblem, y0: Tensor, *tensors: Tensor) -> tuple:
        inputs = (y0, *tensors)
        dims = in_dims[1:]
        solutions = []
        for member in range(info.batch_size):
            sliced = [p if d is None else p.select(d, member) for p, d in zip(inputs, dims, strict=True)]
            solutions.append(_OdeSolve.apply(problem, *sliced))
        return stack(solutions), 0


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
              sensitivity: str = "auto", checkpoint_every: int = 50, allow_nonconverged: bool = False,
              **options: Any) -> OdeResult:
    """``scipy.integrate.solve_ivp`` with ``sol.y`` differentiable with respect to ``y0`` and the Tensors in ``args``.

    See the module documentation for the sensitivity methods. Keywords not named
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
    if not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ValueError(f"solve_ivp: checkpoint_every must be a positive int, got {checkpoint_every!r}")
    span = tuple(float(_values(t)) for t in t_span)
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
    problem.eager = y0_tracked or any(isinstance(t, BatchedTensor) or t.requires_grad or _has_tangent(t)
                                      for t in tensors)
    refuse_closed_over_tensors(lambda z, *ts: problem.rhs(span[0], z, ts), y0, tensors, "solve_ivp", "function fun")
    y = _OdeSolve.apply(problem, y0, *tensors)
    raw = problem.last.raw
    result = OdeResult(raw)
    result["y"] = y
    result["sensitivity"] = chosen
    if dense_output:
        result["sol"] = _DenseSolution(fun, span, y0, args, method, events, rtol, atol, chosen, options,
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
