"""Forward-mode engine: dual levels and the push of tangents through one op call.

A tensor's tangents live in its ``_fw`` slot: ``None`` or ``{DualLevel: tangent}``.
A ``None`` value is an explicit "no tangent at this level" (the primal returned
by ``unpack_dual``), which stops a view from taking its base's tangent.

Levels nest. The tangent of an op's output at level ``L`` is computed by the
op's jvp rule with only the levels *outer* to ``L`` active, so the rule's own
op calls carry the outer tangents: the result is a tangent whose tangents are
the mixed second derivatives (forward-over-forward). Levels are processed from
the outermost inward, because a rule may read the output (``exp``: ``t * out``)
and must then see the output's outer tangents already attached.

Exited levels are dead: they are never looked up again (only active levels
are), and ``_fw`` entries for them are dropped whenever a dict is touched with
more entries than there are active levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._state import STATE
from ..tensor import Tensor, _wrap

_MISSING = object()


class DualLevel:
    """One forward-AD level (a key of the ``_fw`` dicts); ``alive`` is False once exited.

    ``tape_tangents`` is True unless the caller knows that no reverse pass will
    differentiate this level's tangents (``hvp`` without ``create_graph``): then
    its tangent rules run in no-grad mode and keep no graph (nor its buffers) alive.
    """

    __slots__ = ("depth", "alive", "tape_tangents")

    def __init__(self, depth: int):
        self.depth = depth
        self.alive = True
        self.tape_tangents = True

    def __repr__(self) -> str:
        return f"DualLevel({self.depth}{'' if self.alive else ', exited'})"


def tangent_at(x: Any, level: DualLevel) -> Tensor | None:
    """The tangent of ``x`` at ``level`` (a view takes the same view of its base's tangent)."""
    if not isinstance(x, Tensor):
        return None
    fw = x._fw
    if fw is not None:
        t = fw.get(level, _MISSING)
        if t is not _MISSING:
            return t
    view = x._view
    if view is None or view.base._fw is None:
        return None
    base_tangent = view.base._fw.get(level)
    if base_tangent is None:
        return None
    return _view_tangent(x, level, base_tangent)


def _view_tangent(x: Tensor, level: DualLevel, base_tangent: Tensor) -> Tensor:
    """Apply the view steps of ``x`` to its base's tangent (once; the result is stored on ``x``)."""
    levels = STATE.dual_levels
    STATE.dual_levels = levels[:levels.index(level)]
    try:
        t = base_tangent
        for op, params in x._view.chain:
            t = op.jvp((t,), None, t, **params)
    finally:
        STATE.dual_levels = levels
    set_tangent(x, level, t)
    return t


def set_tangent(x: Tensor, level: DualLevel, tangent: Tensor | None) -> None:
    """Store ``tangent`` (or an explicit "none") as ``x``'s tangent at ``level``."""
    fw = x._fw
    if fw is None:
        x._fw = {level: tangent}
        return
    fw[level] = tangent
    if len(fw) > len(STATE.dual_levels):
        drop_dead(x)


def drop_dead(x: Tensor) -> None:
    """Forget ``x``'s tangents of exited levels."""
    fw = x._fw
    if fw:
        for level in [lv for lv in fw if not lv.alive]:
            del fw[level]
        if not fw:
            x._fw = None


def propagate_tangents(op: Any, args: tuple, params: dict, out: Any) -> None:
    """Attach to ``out`` the tangents of every active dual level at which an input has one."""
    for a in args:
        if isinstance(a, Tensor) and (a._fw is not None or a._view is not None):
            break
    else:
        return
    levels = STATE.dual_levels
    for i, level in enumerate(levels):
        tangents = None
        for j, a in enumerate(args):
            t = tangent_at(a, level)
            if t is not None:
                if tangents is None:
                    tangents = [None] * len(args)
                tangents[j] = t
        if tangents is None:
            continue
        grad_mode = STATE.grad_enabled
        STATE.dual_levels = levels[:i]
        STATE.grad_enabled = grad_mode and level.tape_tangents
        try:
            result = op.jvp(tuple(tangents), out, *args, **params)
            if op.multi_output:
                pairs = [(o, fit_tangent(t, o)) for o, t in zip(out, result, strict=True) if t is not None]
            else:
                pairs = [] if result is None else [(out, fit_tangent(result, out))]
        finally:
            STATE.dual_levels = levels
            STATE.grad_enabled = grad_mode
        for o, t in pairs:
            set_tangent(o, level, t)
            _share_with_saved_output(o)


def _share_with_saved_output(o: Tensor) -> None:
    """Let the node that produced ``o`` see its tangents (it saved its output before they existed)."""
    node = o.grad_fn
    if node is not None:
        for saved in node.saved:
            if saved._is_output and saved._data is o._data:
                saved._fw = o._fw


def fit_tangent(t: Tensor, out: Tensor) -> Tensor:
    """``t`` broadcast to ``out``'s shape and cast to its dtype (real part for a real output)."""
    if t.shape != out.shape:
        t = t.expand(out.shape).clone()
    if t.dtype != out.dtype:
        if t.dtype.kind == "c" and out.dtype.kind != "c":
            t = t.real
        t = t.to(out.dtype)
    return t


def commit_tangents(t: Tensor, result: Tensor) -> None:
    """The in-place API: ``t``'s values were just overwritten by ``result``'s; take its tangents.

    At each active level where ``t`` or ``result`` has a tangent, ``t``'s tangent
    is overwritten in place (so its base and its views see the change) by
    ``result``'s, or by zeros where ``result`` has none. A view whose base had no
    tangent first gives the base a zero tangent, so the base's tangent is zero
    outside the view. The writes run with the outer levels active, so
    tangents of tangents are updated too. A tangent that cannot be written in
    place (read-only, or a leaf that requires grad) is replaced instead.
    """
    levels = STATE.dual_levels
    for i, level in enumerate(levels):
        new = tangent_at(result, level)
        current = tangent_at(t, level)
        if new is None and current is None:
            continue
        if current is None and t._view is not None:
            base = t._view.base
            set_tangent(base, level, _zeros(base))
            current = tangent_at(t, level)
        if current is None or not _writable(current):
            set_tangent(t, level, new if new is not None else _zeros(t))
            continue
        STATE.dual_levels = levels[:i]
        try:
            current.copy_(new if new is not None else 0.0)
        finally:
            STATE.dual_levels = levels


def _zeros(x: Tensor) -> Tensor:
    return _wrap(np.zeros(x._data.shape, x._data.dtype))


def _writable(t: Tensor) -> bool:
    while hasattr(t, "bdim"):  # a tangent batched by vmap: its physical value is what is written
        t = t.value
    return t._data.flags.writeable and not (t._requires_grad and t.grad_fn is None)
