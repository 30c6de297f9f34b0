"""The solves behind ``solve_ivp``: the state, its forward sensitivities, and the checkpointed adjoint.

``OdeProblem`` holds ``fun``, its parameters and SciPy's options; ``integrate``
returns a ``Trajectory``. When forward sensitivities are wanted with the
solution, SciPy integrates the state and the ``c`` sensitivity columns together
(one solve of ``n (1 + c)`` equations); otherwise it integrates the state alone,
recording checkpoints for a later adjoint (for BDF's discrete adjoint, solver
copies and the last segment's steps: ``_integrate_bdf_adjoint``). Implicit
methods (BDF, Radau) iterate Newton on these systems with one LU of the
``n x n`` matrix shared by every block (``_integrate_linear``); LSODA gets the
dense block-diagonal Jacobian.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np

from ..factories import tensor
from ..implicit import NonConvergedError, Parameters
from ..tensor import Tensor
from ..transforms import func
from ._integrate_bdf_adjoint import BdfAdjoint, BdfTape, recording_bdf
from ._integrate_linear import BlockJacobian, block_matrix, block_solver, recording
from ._integrate_rhs import OdeFunctions, plain_state
from ._problems import scipy_module

STIFF_METHODS = ("Radau", "BDF", "LSODA")
QUADRATURE_ATOL = 1e100  # (the adjoint's μ: out of the error test; LSODA refuses an infinite atol)


def values_of(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


class OdeProblem:
    """``fun``, its parameters and SciPy's options: integrates the state, its sensitivities and adjoints."""

    def __init__(self, fun: Callable, t_span: tuple, params: Parameters, method: Any, t_eval: Any, events: Any,
                 options: dict, sensitivity: str, checkpoint_every: int, allow_nonconverged: bool):
        self.fun = fun
        self.t_span = (float(values_of(t_span[0])), float(values_of(t_span[1])))
        self.params = params
        self.method = method
        self.t_eval = None if t_eval is None else values_of(t_eval).reshape(-1)
        self.events = events
        self.options = options
        self.sensitivity = sensitivity
        self.checkpoint_every = checkpoint_every
        self.allow_nonconverged = allow_nonconverged
        self.y0_columns = True  # (whether forward sensitivities include y0's columns; set by solve_ivp)
        self.continuous_adjoint = False  # (BDF's adjoint by a backward solve rather than the discrete adjoint)
        self.eager = True  # (compute forward sensitivities with the solve: something will be differentiated)
        self.last: Trajectory | None = None

    @property
    def event_list(self) -> list:
        return [] if self.events is None else list(self.events if isinstance(self.events, (list, tuple))
                                                   else [self.events])

    def base_class(self) -> type:
        integrate = scipy_module("integrate")
        return integrate._ivp.ivp.METHODS[self.method] if isinstance(self.method, str) else self.method

    def state_options(self, functions: OdeFunctions) -> dict:
        """SciPy's options for the state alone: the exact Jacobian for stiff methods unless ``jac`` is given."""
        options = dict(self.options)
        if self.method in STIFF_METHODS and "jac" not in options:
            options.pop("jac_sparsity", None)
            options["jac"] = ((lambda t, y: _dense(functions.jacobian(t, y))) if self.method == "LSODA"
                              else functions.jacobian)
        return options

    def block_jacobian(self, functions: OdeFunctions) -> Callable:
        """``(t, y) -> d fun / dy`` from the user's ``jac`` when given, else exact."""
        jac = self.options.get("jac")
        if jac is None:
            return functions.jacobian
        return jac if callable(jac) else (lambda t, y: jac)

    def system(self, n: int, k: int, extra: int, jacobian: Callable, options: dict) -> tuple:
        """``(method, options)`` for a system of ``k`` blocks of ``n`` plus ``extra`` entries whose Jacobian
        is ``jacobian(t, state)`` (a ``BlockJacobian``; only implicit methods call it)."""
        options = {key: value for key, value in options.items() if key not in ("jac", "jac_sparsity")}
        if self.method in ("BDF", "Radau"):
            return block_solver(self.base_class(), n, k, extra, jacobian), options
        if self.method == "LSODA":
            options["jac"] = lambda t, u: block_matrix(jacobian(t, u), k, extra)
        return self.base_class(), options

    @property
    def discrete_adjoint(self) -> bool:
        """Whether the adjoint is BDF's discrete adjoint (``_integrate_bdf_adjoint``) rather than a backward solve."""
        return (self.sensitivity == "adjoint" and self.method == "BDF" and not self.continuous_adjoint
                and self.t_span[1] > self.t_span[0])

    # -- the forward solve -------------------------------------------------------------------------
    def integrate(self, y0: Tensor, tensors: tuple) -> Trajectory:
        integrate = scipy_module("integrate")
        functions = OdeFunctions(self.fun, self.params, tensors, y0.numel())
        trajectory = Trajectory(self, y0, tensors, functions)
        if self.sensitivity == "forward" and self.eager:
            trajectory.solve_with_sensitivities(self.y0_columns)
        else:
            checkpoints: list = []
            if self.discrete_adjoint:
                trajectory.tape = BdfTape(self.checkpoint_every)
                method = recording_bdf(self.base_class(), trajectory.tape)
            else:
                method = recording(self.base_class(), checkpoints, self.checkpoint_every)
            events = _numpy_events(self.event_list, self, tensors) if self.events is not None else None
            raw = integrate.solve_ivp(functions.rhs, self.t_span, values_of(y0).reshape(-1), method=method,
                                      t_eval=self.t_eval, events=events, **self.state_options(functions))
            trajectory.set_result(raw, checkpoints)
        self.last = trajectory
        return trajectory


def _dense(matrix: Any) -> np.ndarray:
    return matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)


def _numpy_events(events: list, problem: OdeProblem, tensors: tuple, n: int | None = None) -> list:
    """SciPy's event callables for ``event(t, y, *args)`` (``y`` the first ``n`` entries of the state when set)."""
    result = []
    for event in events:
        def wrapped(t: float, u: np.ndarray, _event: Callable = event) -> float:
            y = u if not n else u[:n]
            with plain_state():
                return float(values_of(_event(t, tensor(np.asarray(y, dtype=np.float64)),
                                              *problem.params.rebuild(tensors))))
        wrapped.terminal = getattr(event, "terminal", False)
        wrapped.direction = getattr(event, "direction", 0)
        result.append(wrapped)
    return result


def unit_directions(tensors: tuple, counts: list, c: int) -> list:
    """Per Tensor of args: the ``(c, *shape)`` tangents that select its own columns of ``S``."""
    directions, start = [], c - sum(counts)
    for t, count in zip(tensors, counts, strict=True):
        d = np.zeros((c, count))
        d[start:start + count] = np.eye(count)
        directions.append(tensor(d.reshape((c, *t.shape))))
        start += count
    return directions


class Trajectory:
    """One solve: the outputs, checkpoints, and (on demand) the Jacobian ``dY/dθ`` or adjoint gradients."""

    def __init__(self, problem: OdeProblem, y0: Tensor, tensors: tuple, functions: OdeFunctions):
        self.problem = problem
        self.y0 = y0.detach()
        self.tensors = tuple(t.detach() for t in tensors)
        self.functions = functions
        self.raw: Any = None
        self.checkpoints: list = []
        self.tape: BdfTape | None = None  # (what BDF's discrete adjoint needs, when it is used)
        self.times = self.values = np.zeros(0)
        self._jacobian: tuple | None = None  # (with_y0, array (n, m, columns))

    def set_result(self, raw: Any, checkpoints: list) -> None:
        """SciPy's result (of the state, or of the state with its sensitivities: cut to the state)."""
        n = self.y0.numel()
        if raw.y_events is not None:
            raw.y_events = [np.asarray(y)[:, :n] if np.size(y) else np.asarray(y) for y in raw.y_events]
        self.raw, self.checkpoints = raw, checkpoints
        self.times = np.asarray(raw.t, dtype=np.float64)
        self.values = np.asarray(raw.y, dtype=np.float64)[:n].reshape(n, -1).copy()

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
            self._jacobian = (with_y0, self._sensitivity_solve(with_y0, first=False))
        return self._jacobian[1]

    def solve_with_sensitivities(self, with_y0: bool) -> None:
        """Integrate the state together with its sensitivities: the solution and ``dY/dθ`` from one solve."""
        self._jacobian = (with_y0, self._sensitivity_solve(with_y0, first=True))

    def _sensitivity_solve(self, with_y0: bool, first: bool) -> np.ndarray:
        """The forward sensitivity equations ``S' = J_y S + J_p D`` integrated with the state. ``first``: this is
        the solve of the solution itself (SciPy's options, events); else the state's output times are given."""
        problem, integrate, functions = self.problem, scipy_module("integrate"), self.functions
        n, counts = self.y0.numel(), self.columns(with_y0)
        c = sum(counts)
        directions = tuple(unit_directions(self.tensors, counts[1:], c))
        s0 = np.zeros((c, n))
        if with_y0:
            s0[:n, :n] = np.eye(n)

        def augmented(t: float, u: np.ndarray) -> np.ndarray:
            value, moved = functions.moved(t, u[:n], u[n:].reshape(c, n), directions)
            return np.concatenate([value, moved.reshape(-1)])

        block = problem.block_jacobian(functions)

        def jacobian(t: float, u: np.ndarray) -> BlockJacobian:
            y = u[:n]
            return BlockJacobian(block(t, y), functions.couplings(t, y, u[n:].reshape(c, n), directions) if c else None)

        fun = augmented if c else (lambda t, u: functions.rhs(t, u))
        method, options = problem.system(n, 1 + c, 0, jacobian, problem.options)
        u0 = np.concatenate([values_of(self.y0).reshape(-1), s0.reshape(-1)])
        if first:
            events = _numpy_events(problem.event_list, problem, self.tensors, n) if problem.events else None
            raw = integrate.solve_ivp(fun, problem.t_span, u0, method=method, t_eval=problem.t_eval, events=events,
                                      **options)
            self.set_result(raw, [])
        else:
            t_end = self.times[-1] if self.times.size else problem.t_span[1]
            raw = integrate.solve_ivp(fun, (problem.t_span[0], t_end), u0, method=method, t_eval=self.times,
                                      **options)
            if raw.status == -1:
                raise NonConvergedError(f"solve_ivp: the forward sensitivity equations failed to integrate "
                                        f"({raw.message})")
        jacobian = np.asarray(raw.y, dtype=np.float64)[n:].reshape(c, n, -1).transpose(1, 2, 0).copy()
        if self.terminated_by_event and c:
            jacobian[:, -1, :] += self._event_time_correction(jacobian[:, -1, :], counts)
        return jacobian

    def _event_time_correction(self, s_end: np.ndarray, counts: list) -> np.ndarray:
        """``f(t_e, y_e) dt_e/dθ``: the last output sits at a terminal event time that moves with θ."""
        problem = self.problem
        index = next(i for i, times in enumerate(self.raw.t_events) if len(times))
        event = problem.event_list[index]
        t_e, y_e = float(self.times[-1]), tensor(self.values[:, -1].copy())
        g = lambda y, *p: event(t_e, y, *problem.params.rebuild(p))
        with plain_state():
            grads = func.grad(lambda y, *p: g(y, *p).reshape(()), argnums=tuple(range(1 + len(self.tensors))))(
                y_e, *self.tensors)
        dg_dy = grads[0].numpy().reshape(-1)
        dg_dp = np.concatenate([np.zeros(counts[0])] + [gr.numpy().reshape(-1) for gr in grads[1:]])
        f_e = self.functions.rhs(t_e, self.values[:, -1])
        speed = dg_dy @ f_e
        if abs(speed) < 1e-300:
            raise ZeroDivisionError("solve_ivp: the terminal event is crossed tangentially; its time has no derivative")
        dt_dtheta = -(dg_dy @ s_end + dg_dp) / speed
        return np.outer(f_e, dt_dtheta)

    # -- adjoint -----------------------------------------------------------------------------------
    def adjoint(self, cotangent: np.ndarray) -> tuple:
        """``(dL/dy0, dL/dparams)`` for ``dL/dY = cotangent`` (shape ``(n, m)``), by the checkpointed adjoint.

        ``λ' = -J_y^T λ`` and ``μ' = -J_p^T λ`` are integrated backward from the last output time, restarting
        with a jump ``λ += g_i`` at each output time with a nonzero cotangent. The state ``y(t)`` the backward
        solve needs comes from forward re-solves between checkpoints (``_Replay``: one segment alive at a time).
        ``μ`` is a quadrature: like CVODES by default, it is left out of the error test (a huge ``atol`` for it),
        so the steps follow ``λ``."""
        problem, integrate, functions = self.problem, scipy_module("integrate"), self.functions
        n = self.y0.numel()
        sizes = [t.numel() for t in self.tensors]
        p_total = sum(sizes)
        if self.tape is not None:
            adjoint = BdfAdjoint(self.tape, problem.t_eval, problem.t_span[0], problem.block_jacobian(functions),
                                 functions.pullback)
            lam, mu = adjoint.run(values_of(self.y0).reshape(-1), cotangent, p_total)
            return lam.reshape(self.y0.shape), self._split_parameters(mu, sizes)
        t0 = problem.t_span[0]
        t_last = float(self.times[-1]) if self.times.size else t0
        outputs: dict = {}
        for i, t in enumerate(self.times):
            outputs[float(t)] = outputs.get(float(t), 0.0) + cotangent[:, i]
        replay = _Replay(self)
        jumps = sorted({t0, t_last, *(t for t, g in outputs.items() if np.any(g))})
        if problem.method == "LSODA":  # (not reentrant: each segment is re-solved before, not during, its solve)
            jumps = sorted({*jumps, *(float(t) for t in replay.bounds if t <= t_last)})
        lam = np.zeros(n) + outputs.get(t_last, 0.0)
        mu = np.zeros(p_total)
        block = problem.block_jacobian(functions)

        def backward(t: float, z: np.ndarray) -> np.ndarray:
            g_y, g_p = functions.pullback(t, replay(t), z[:n])
            return -np.concatenate([g_y, g_p])

        def jacobian(t: float, z: np.ndarray) -> BlockJacobian:
            y = replay(t)
            return BlockJacobian(-block(t, y).T, extra=-functions.parameter_jacobian(t, y).T)

        method, options = problem.system(n, 1, p_total, jacobian, problem.options)
        last_step: list = [None]  # (the backward solve's last step: the next segment starts with it)
        method = remembering_step(method, last_step)
        atol = np.broadcast_to(np.asarray(problem.options.get("atol", 1e-6), dtype=np.float64), (n,))
        options["atol"] = np.concatenate([atol, np.full(p_total, QUADRATURE_ATOL)])
        for a, b in zip(jumps[-2::-1], jumps[:0:-1], strict=True):
            if problem.method == "LSODA":
                replay((a + b) / 2)
            raw = integrate.solve_ivp(backward, (b, a), np.concatenate([lam, mu]), method=method, t_eval=[a],
                                      **first_step(options, last_step[0] or replay.step_near(b), b - a))
            if raw.status == -1:
                raise NonConvergedError(f"solve_ivp: the adjoint equations failed to integrate ({raw.message})")
            lam, mu = raw.y[:n, -1], raw.y[n:, -1]
            lam = lam + outputs.get(a, 0.0)
        replay.release()
        return lam.reshape(self.y0.shape), self._split_parameters(mu, sizes)

    def _split_parameters(self, mu: np.ndarray, sizes: list) -> list:
        grads, start = [], 0
        for size, t in zip(sizes, self.tensors, strict=True):
            grads.append(mu[start:start + size].reshape(t.shape))
            start += size
        return grads


class _Replay:
    """The forward state ``y(t)``, re-solved from the checkpoint before ``t`` (dense output) when asked: the
    backward solve moves down in time, so each segment between checkpoints is re-solved about once, and only
    one is kept (memory O(checkpoints + one segment))."""

    def __init__(self, trajectory: Trajectory):
        problem = trajectory.problem
        self.trajectory = trajectory
        states = {problem.t_span[0]: values_of(trajectory.y0).reshape(-1)}
        states.update({t: y for t, y, _ in trajectory.checkpoints})
        if trajectory.times.size:  # (the output times are no bounds: a re-solve runs from checkpoint to checkpoint)
            states[float(trajectory.times[-1])] = trajectory.values[:, -1]
        self.bounds = np.array(sorted(states))
        self.states = states
        self.steps = {t: h for t, _, h in trajectory.checkpoints}  # (the solver's step there: restarts take it)
        self.options = problem.state_options(trajectory.functions)
        self.kept: dict = {}  # (segment index -> dense output: the last two, as a rejected step may go back up)

    def step_near(self, t: float) -> float | None:
        return self.steps.get(t)

    def __call__(self, t: float) -> np.ndarray:
        bounds = self.bounds
        if len(bounds) < 2:
            return self.states[float(bounds[0])]
        for index, segment in self.kept.items():
            if bounds[index] <= t <= bounds[index + 1]:
                return segment(t)
        index = int(np.clip(np.searchsorted(bounds, t, side="left") - 1, 0, len(bounds) - 2))
        segment = self.kept.get(index)
        if segment is None:
            a, b = float(bounds[index]), float(bounds[index + 1])
            problem = self.trajectory.problem
            segment = scipy_module("integrate").solve_ivp(
                self.trajectory.functions.rhs, (a, b), self.states[a], method=problem.method, dense_output=True,
                **first_step(self.options, self.steps.get(a), b - a)).sol
            if len(self.kept) >= 2:
                self.kept.pop(max(self.kept))  # (the later one: the backward solve moves down in time)
                gc.collect(1)
            self.kept[index] = segment
        return segment(t)

    def release(self) -> None:
        """Let the segments go. (SciPy's solvers are reference cycles, freed only by the garbage collector:
        collecting the young generation here keeps memory flat.)"""
        self.kept.clear()
        gc.collect(1)


def remembering_step(base: type, last_step: list) -> type:
    """``base`` writing the size of each step it takes into ``last_step[0]``."""

    class Remembering(base):
        def step(self) -> Any:
            message = super().step()
            if self.t_old is not None and self.t != self.t_old:
                last_step[0] = abs(float(self.t) - float(self.t_old))
            return message

    Remembering.__name__ = base.__name__
    return Remembering


def first_step(options: dict, step: float | None, length: float) -> dict:
    """``options`` with SciPy's ``first_step`` set to the forward solve's step at a checkpoint (unless given):
    a restart from a checkpoint then does not climb again from a tiny step (costly for BDF)."""
    if step is None or step <= 0 or "first_step" in options:
        return options
    return dict(options, first_step=min(step, length))
