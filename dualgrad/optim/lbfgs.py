"""``LBFGS``: limited-memory BFGS over all parameters as one flat vector, optionally with a strong-Wolfe
line search; torch's algorithm step for step (a port of minFunc's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..reverse import enable_grad, no_grad
from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, real_view

__all__ = ["LBFGS"]


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2``, clipped to
    ``bounds`` (default: the interval between the points); the middle of the bounds if the cubic has none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, low), high)
    return (low + high) / 2.0


def _strong_wolfe(obj_func: Callable, x: list, t: float, d: np.ndarray, f: float, g: np.ndarray, gtd: float,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, np.ndarray, float, int]:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions (sufficient decrease ``c1``, curvature
    ``c2``): bracketing, then zoom by cubic interpolation. Returns ``(f_new, g_new, t, evaluations)``."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    # zoom: shrink the bracket until a point meets the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # keep away from the bracket's ends unless the last step made too little progress
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS over all parameters as one vector (one parameter group only), torch's algorithm.

    ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` evaluations of ``closure``, which
    must zero the gradients, compute the loss, call ``backward`` and return the loss); each iteration
    takes the two-loop-recursion direction from the last ``history_size`` curvature pairs, then a step of
    ``lr`` (``min(1, 1/|g|_1) * lr`` on the first iteration) or, with ``line_search_fn='strong_wolfe'``, a
    step meeting the strong Wolfe conditions. It stops early when the largest gradient entry is below
    ``tolerance_grad`` or the step or loss changes by less than ``tolerance_change``.
    State (of the first parameter, as torch's): ``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``,
    ``old_stps``, ``ro``, ``al``, ``H_diag``, ``prev_flat_grad``, ``prev_loss`` (torch's 0-d tensors among
    them are Python floats here).

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.5, -0.5], requires_grad=True)
    >>> opt = dg.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 2.0) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> w
    tensor([2., 2.], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                    "tolerance_change": tolerance_change, "history_size": history_size,
                    "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> np.ndarray:
        return np.concatenate([real_view(np.zeros_like(p._data) if p.grad is None else p.grad._data).reshape(-1)
                               for p in self._params])

    def _add_grad(self, step_size: float, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            theta = real_view(p._data)
            theta += step_size * update[offset:offset + theta.size].reshape(theta.shape)
            offset += theta.size
            p._bump_version()

    def _clone_param(self) -> list[np.ndarray]:
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data: list[np.ndarray]) -> None:
        for p, data in zip(self._params, params_data):
            p._data[...] = data
            p._bump_version()

    def _directional_evaluate(self, closure: Callable, x: list, t: float, d: np.ndarray) -> tuple:
        self._add_grad(t, d)
        with enable_grad():
            loss = closure()
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return float(loss), flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run one optimisation (up to ``max_iter`` iterations); returns the loss of the first evaluation."""
        self._opt_called = True
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss
        d = _array(state.get("d"))
        t = state.get("t")
        old_dirs = [_array(v) for v in state.get("old_dirs", [])]
        old_stps = [_array(v) for v in state.get("old_stps", [])]
        ro = state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad = _array(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                # update the curvature pairs, then the two-loop recursion for d = -H g
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                al = state.setdefault("al", [None] * history_size)  # kept between steps, as torch's
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q) * ro[i])
                    q += -al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x: list, t: float, d: np.ndarray) -> tuple:
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = closure()
                    loss = float(loss)
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        state.update(d=_tensor(d), t=float(t), old_dirs=[_tensor(v) for v in old_dirs],
                     old_stps=[_tensor(v) for v in old_stps], ro=[float(v) for v in ro],
                     H_diag=float(h_diag), prev_flat_grad=_tensor(prev_flat_grad), prev_loss=prev_loss)
        return orig_loss


def _array(value: Tensor | None) -> np.ndarray | None:
    return None if value is None else value._data


def _tensor(value: np.ndarray | None) -> Tensor | None:
    return None if value is None else _wrap(value)
