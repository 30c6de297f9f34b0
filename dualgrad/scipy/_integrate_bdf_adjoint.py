"""The discrete adjoint of SciPy's BDF solve: the exact gradient of the computed solution, on the forward's steps.

SciPy's BDF keeps the solution as a difference array ``D`` (rows ``0..7`` of
length ``n``). One accepted step of order ``q`` from ``t_old`` to ``t_new``
(``h = t_new - t_old``, ``c = h / α_q``) is, as a function of ``D``:

1. a rescaling of ``D[:q+1]`` from the step it was built for to ``h``
   (SciPy's ``change_D``; the rescalings of rejected attempts compose into one);
2. the prediction ``y_p = Σ_{i≤q} D[i]`` and ``ψ = Σ_{1≤i≤q} γ_i D[i] / α_q``;
3. the corrector ``d = c f(t_new, y_p + d) - ψ`` (solved by Newton);
4. the update ``D[q+2] = d - D[q+1]``, ``D[q+1] = d``, ``D[i] += D[i+1]`` for
   ``i = q..0``;
5. when SciPy changes order or step after it, a rescaling of ``D[:q'+1]``.

The outputs are ``D[0]`` after a step, or the step's interpolant (linear in
``D``) at the ``t_eval`` it covers. Everything but 3 is linear; 3's adjoint is
one transposed solve ``(I - c J)^T w = d̄`` with the exact Jacobian ``J`` at
``(t_new, y_new)``, then ``ȳ_p = c J^T w``, ``ψ̄ = -w`` and ``θ̄ += c J_θ^T w``
(one vjp of ``fun``). Step sizes and orders are the forward's and are held
fixed (they are decisions, not functions of θ), and Newton's iterate is taken as
the exact root. The result is the gradient of the discrete solution: it agrees
with forward sensitivities and finite differences to about the solver's
tolerance, and costs about one forward step per step (no extra steps for the
fast transients a continuous adjoint would resolve after each output time).

Memory: the solver is copied (``D``, its step state and Jacobian; of a sparse
LU only the matrix, refactorised when a re-run needs it) every
``checkpoint_every`` accepted steps, and the states of the steps since the last
copy are kept (the final segment's come from the forward solve itself); the
backward pass re-runs one earlier segment at a time from its copy (SciPy's BDF
is deterministic, so the re-run takes the very same steps).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ..implicit import NonConvergedError

REFINE_STEPS = 8  # (transposed solves refined against the exact vjp: enough unless a given jac is far off)
REFINE_TOLERANCE = 1e-10  # (of the residual of (I - c J)^T w = d̄, relative to its terms)


class StepRecord:
    """One accepted step: its times, the step size ``D`` was scaled for before and after it, its order before and
    after, whether SciPy rescaled ``D`` after it, and the new state."""

    __slots__ = ("t_old", "t_new", "h_entry", "order", "h_exit", "order_exit", "rescaled", "y")

    def __init__(self, t_old: float, t_new: float, h_entry: float, order: int, h_exit: float, order_exit: int,
                 rescaled: bool, y: np.ndarray):
        self.t_old, self.t_new, self.h_entry, self.order = t_old, t_new, h_entry, order
        self.h_exit, self.order_exit, self.rescaled, self.y = h_exit, order_exit, rescaled, y


class BdfTape:
    """What the forward BDF solve leaves for the discrete adjoint: solver copies at segment starts (with their
    number of steps) and the steps of the last segment."""

    def __init__(self, every: int):
        self.every = every
        self.starts: list = []  # [solver copy, steps in its segment]
        self.steps: list = []  # (the records of the current segment)
        self.h0 = 0.0

    def start_segment(self, solver: Any) -> None:
        snapshot = copy.copy(solver)
        snapshot.D = solver.D.copy()
        snapshot._sink = None
        if isinstance(solver.LU, _Factor):  # (a copy keeps the sparse matrix, not its fill-in: refactorised on use)
            snapshot.LU = _Factor(solver.LU.matrix)
        self.starts.append([snapshot, 0])
        self.steps = []


class _Factor:
    """A sparse LU with the matrix it factorises: a solver copy keeps only the matrix, and the factor comes back
    bit for bit when a re-run first solves with it (the same matrix, the same ``splu``)."""

    __slots__ = ("matrix", "factor")

    def __init__(self, matrix: Any, factor: Any = None):
        self.matrix, self.factor = matrix, factor

    def solve(self, b: np.ndarray) -> np.ndarray:
        if self.factor is None:
            from scipy.sparse.linalg import splu

            self.factor = splu(self.matrix)
        return self.factor.solve(b)


def recording_bdf(base: type, tape: BdfTape) -> type:
    """``base`` (SciPy's BDF) recording its accepted steps and segment copies into ``tape``."""

    class RecordingBDF(base):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self._sink = tape
            if _is_sparse(self.I):  # (sparse Newton matrices: see _Factor)
                factorise = self.lu
                self.lu = lambda matrix: _Factor(matrix, factorise(matrix))
                self.solve_lu = lambda factor, b: factor.solve(b)
            tape.h0 = float(self.h_abs)
            tape.start_segment(self)

        def step(self) -> Any:
            sink = self._sink
            entry = (float(self.t), float(self.h_abs), int(self.order))
            stepping = self.n != 0 and self.t != self.t_bound
            message = super().step()
            if sink is None or not stepping or self.status == "failed":
                return message
            record = StepRecord(entry[0], float(self.t), entry[1], entry[2], float(self.h_abs), int(self.order),
                                self.n_equal_steps == 0, np.array(self.y, dtype=np.float64))
            if isinstance(sink, list):  # (a re-run of one segment)
                sink.append(record)
                return message
            sink.steps.append(record)
            sink.starts[-1][1] += 1
            if sink.starts[-1][1] == sink.every and self.status == "running":
                sink.start_segment(self)
            return message

    RecordingBDF.__name__ = base.__name__
    return RecordingBDF


def _is_sparse(matrix: Any) -> bool:
    import scipy.sparse

    return scipy.sparse.issparse(matrix)


def _rescale_matrix(order: int, factor: float) -> np.ndarray:
    """SciPy's ``change_D`` as ``D[:order+1] <- M^T D[:order+1]``: ``M`` (its adjoint is ``D̄ <- M D̄``)."""
    from scipy.integrate._ivp.bdf import compute_R

    return compute_R(order, factor) @ compute_R(order, 1)


class BdfAdjoint:
    """The backward pass over a ``BdfTape`` for a cotangent of the outputs.

    ``jacobian(t, y)``: ``d fun / dy`` (dense or ``scipy.sparse``); ``pullback(t, y, w)``: ``(J^T w, J_θ^T w)``.
    """

    def __init__(self, tape: BdfTape, t_eval: np.ndarray | None, t0: float, jacobian: Callable, pullback: Callable):
        self.tape, self.t_eval, self.t0 = tape, t_eval, t0
        self.jacobian, self.pullback = jacobian, pullback

    def run(self, y0: np.ndarray, cotangent: np.ndarray, p_total: int) -> tuple:
        """``(ȳ0, θ̄)`` for ``dL/dY = cotangent`` (``(n, m)``, the columns of SciPy's ``sol.y``)."""
        tape = self.tape
        n = y0.size
        if not tape.starts:
            raise RuntimeError("solve_ivp: the BDF tape holds no solve")
        solver = tape.starts[0][0]
        gamma, alpha = np.asarray(solver.gamma), np.asarray(solver.alpha)
        bar = np.zeros((solver.D.shape[0], n))
        theta = np.zeros(p_total)
        first_index = 0
        counts = [count for _, count in tape.starts]
        for index in range(len(tape.starts) - 1, -1, -1):
            first_index = sum(counts[:index])
            steps = tape.steps if index == len(tape.starts) - 1 else self._rerun(index)
            for k in range(len(steps) - 1, -1, -1):
                self._step_back(steps[k], first_index + k, bar, theta, cotangent, gamma, alpha)
        grad_y0 = bar[0].copy()
        if self.t_eval is None:
            grad_y0 += cotangent[:, 0]
        if np.any(bar[1]):  # (D[1] = h0 f(t0, y0) at the start)
            g_y, g_p = self.pullback(self.t0, y0, tape.h0 * bar[1])
            grad_y0 += g_y
            theta += g_p
        return grad_y0, theta

    def _rerun(self, index: int) -> list:
        snapshot, count = self.tape.starts[index]
        solver = copy.copy(snapshot)
        solver.D = snapshot.D.copy()
        solver._sink = steps = []
        for _ in range(count):
            solver.step()
        expected_end = self.tape.starts[index + 1][0].t
        if len(steps) != count or steps[-1].t_new != expected_end:
            raise RuntimeError("solve_ivp: re-running a BDF segment for the adjoint did not repeat the forward's "
                               "steps (is fun deterministic?)")
        return steps

    def _outputs(self, step: StepRecord, index: int) -> tuple:
        """The output columns this step produced and, per column, the weights of ``D[0..q']`` in it."""
        if self.t_eval is None:
            return [index + 1], [np.array([1.0])]
        t_eval = self.t_eval
        start = 0 if index == 0 else int(np.searchsorted(t_eval, step.t_old, side="right"))
        stop = int(np.searchsorted(t_eval, step.t_new, side="right"))
        columns, weights = [], []
        h = step.h_exit  # (t_span increases: direction +1)
        q = step.order_exit
        shifts = step.t_new - h * np.arange(q)
        denominators = h * (1 + np.arange(q))
        for column in range(start, stop):
            x = (t_eval[column] - shifts) / denominators
            weights.append(np.concatenate([[1.0], np.cumprod(x)]))
            columns.append(column)
        return columns, weights

    def _step_back(self, step: StepRecord, index: int, bar: np.ndarray, theta: np.ndarray, cotangent: np.ndarray,
                   gamma: np.ndarray, alpha: np.ndarray) -> None:
        columns, weights = self._outputs(step, index)
        for column, weight in zip(columns, weights, strict=True):
            g = cotangent[:, column]
            if np.any(g):
                bar[:weight.size] += np.outer(weight, g)
        h = step.t_new - step.t_old
        q = step.order
        if step.rescaled:
            q_exit = step.order_exit
            bar[:q_exit + 1] = _rescale_matrix(q_exit, step.h_exit / abs(h)) @ bar[:q_exit + 1]
        # the update D[q+2] = d - D[q+1]; D[q+1] = d; D[i] += D[i+1] (i = q..0), backward
        for i in range(q + 1):
            bar[i + 1] += bar[i]
        d_bar = bar[q + 1] + bar[q + 2]
        bar[q + 1] = -bar[q + 2]
        bar[q + 2] = 0.0
        predicted_bar, psi_bar = np.zeros_like(d_bar), np.zeros_like(d_bar)
        if np.any(d_bar):
            c = h / alpha[q]
            w, g_y, g_p = self._corrector_adjoint(step.t_new, step.y, c, d_bar)
            predicted_bar, psi_bar = c * g_y, -w
            theta += c * g_p
        bar[:q + 1] += predicted_bar
        bar[1:q + 1] += np.outer(gamma[1:q + 1] / alpha[q], psi_bar)
        bar[:q + 1] = _rescale_matrix(q, abs(h) / step.h_entry) @ bar[:q + 1]

    def _corrector_adjoint(self, t: float, y: np.ndarray, c: float, d_bar: np.ndarray) -> tuple:
        """``w = (I - c J)^{-T} d̄`` with ``(J^T w, J_θ^T w)``: one LU of the Jacobian at ``(t, y)``, refined against
        the exact vjp (so an inexact user ``jac`` still gives the exact ``w``)."""
        import scipy.linalg
        import scipy.sparse

        matrix = self.jacobian(t, y)
        n = y.size
        if scipy.sparse.issparse(matrix):
            from scipy.sparse.linalg import splu

            factor = splu(scipy.sparse.csc_matrix(scipy.sparse.eye(n, format="csc") - c * matrix))

            def solve(b: np.ndarray) -> np.ndarray:
                return factor.solve(b, trans="T")
        else:
            lu = scipy.linalg.lu_factor(np.eye(n) - c * np.asarray(matrix), check_finite=False)

            def solve(b: np.ndarray) -> np.ndarray:
                return scipy.linalg.lu_solve(lu, b, trans=1, check_finite=False)

        magnitude = abs(matrix) if scipy.sparse.issparse(matrix) else np.abs(np.asarray(matrix))
        w = solve(d_bar)
        for _ in range(REFINE_STEPS):
            g_y, g_p = self.pullback(t, y, w)
            residual = d_bar - (w - c * g_y)
            if not np.all(np.isfinite(residual)):
                break
            # (relative to the sizes of the terms summed, |c| |J|^T |w| among them: J^T w of a stiff J cancels,
            # leaving a rounding residual no refinement removes)
            size = np.linalg.norm(d_bar) + np.linalg.norm(w) + abs(c) * np.linalg.norm(magnitude.T @ np.abs(w))
            if np.linalg.norm(residual) <= REFINE_TOLERANCE * size:
                return w, g_y, g_p
            w = w + solve(residual)
        raise NonConvergedError(f"solve_ivp: the BDF adjoint's linear system (I - c J)^T w = d̄ at t = {t:g} did not "
                                "solve (is the Jacobian given in jac far from d fun/dy, or I - c J singular?)")
