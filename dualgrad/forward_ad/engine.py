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

import weakref
from typing import Any

import numpy as np

from .._state import STATE
from ..reverse.saved import modified_error
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
    """Attach to ``out`` the tangents of every active dual level at which an input has one.

    If the node that produced ``out`` saved it, the node is told how to get these
    tangents back (see ``TangentRecipe``).
    """
    taped = _push_tangents(op, args, params, out)
    if taped is not None and STATE.grad_enabled:  # (no grad mode, no node)
        _give_recipe_to_saved_outputs(op, args, params, out, taped)


def _push_tangents(op: Any, args: tuple, params: dict, out: Any) -> bool | None:
    """Run ``op``'s jvp rule at each active level where an input has a tangent.

    Returns None if no tangent was set, else whether a rule ran with grad mode on (taped).
    """
    for a in args:
        if isinstance(a, Tensor) and (a._fw is not None or a._view is not None):
            break
    else:
        return None
    pushed = taped_any = False
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
        STATE.grad_enabled = taped = grad_mode and level.tape_tangents
        try:
            result = op.jvp(tuple(tangents), _alias(out) if taped and _tracked(out, tangents) else out,
                            *args, **params)
            if op.multi_output:
                pairs = [(o, fit_tangent(t, o)) for o, t in zip(out, result, strict=True) if t is not None]
            else:
                pairs = [] if result is None else [(out, fit_tangent(result, out))]
        finally:
            STATE.dual_levels = levels
            STATE.grad_enabled = grad_mode
        for o, t in pairs:
            set_tangent(o, level, t)
            pushed = True
        taped_any = taped_any or taped
    return taped_any if pushed else None


def _tracked(out: Any, tangents: list) -> bool:
    """True if ``out`` or a tangent requires grad: only then can a taped rule's graph hold ``out``."""
    outs = out if type(out) is tuple else (out,)
    return any(isinstance(o, Tensor) and o._requires_grad for o in outs) or \
        any(t is not None and t._requires_grad for t in tangents)


def _alias(out: Any) -> Any:
    """``out`` as a taped jvp rule sees it: new Tensors with the tangents set so far (outer levels).

    The tangent being computed must not hold ``out``, whose ``_fw`` will hold
    that tangent: a cycle when the rule saves ``out``, as ``exp``'s ``t * out``
    does for a tangent that requires grad. An alias shares the data, version
    counter and place in the graph.
    """
    if type(out) is tuple:
        return tuple(_alias(o) for o in out)
    if type(out) is not Tensor:
        return out
    alias = _wrap(out._data)
    alias._counter = out._version_counter()
    alias._requires_grad = out._requires_grad
    alias._grad_fn = out._grad_fn
    alias._output_nr = out._output_nr
    if out._fw is not None:
        alias._fw = dict(out._fw)
    return alias


def _give_recipe_to_saved_outputs(op: Any, args: tuple, params: dict, out: Any, taped: bool) -> None:
    """Tell the node of ``out``, if it saved ``out``, how to get its tangents back."""
    if type(out) is tuple:
        node = next((o._grad_fn for o in out if isinstance(o, Tensor) and o._grad_fn is not None), None)
    else:
        node = out._grad_fn
    if node is None or node.op is not op:
        return
    recipe = None
    for saved in node.saved:
        if saved._is_output:
            if recipe is None:
                recipe = TangentRecipe(op, args if taped else None, params, out, node)
            saved._tangents = recipe


class TangentRecipe:
    """How a node gets back the tangents of the outputs it saved, when a backward rule reads them.

    Forward over reverse: a backward rule run inside a dual level must see the
    tangents of the saved output it reads. But a node must not hold tangents
    whose graph leads back to it, as a taped tangent rule reading the output
    makes (node -> tangent -> ``MulBackward0`` of ``exp``'s ``t * out`` ->
    node): a reference cycle that only the garbage collector frees. So:

    * tangents computed untaped (no graph) are kept as they are;
    * otherwise the recipe keeps what they were computed from (the op's
      arguments and parameters, all older than the node) and a weak reference
      to each output: the tangents come from the output if it is still alive
      (a later op saved it, say), else the jvp rule computes them again, after
      checking that no argument changed in place since (torch's error).
    """

    __slots__ = ("op", "args", "params", "versions", "multi", "outputs")

    def __init__(self, op: Any, args: tuple | None, params: dict, out: Any, node: Any):
        self.op = op
        self.args = args  # None: the tangents had no graph and are kept in ``outputs``
        self.params = params
        self.versions = None if args is None else tuple(a._version if isinstance(a, Tensor) else None for a in args)
        self.multi = type(out) is tuple
        self.outputs = tuple(self._entry(o, node) for o in (out if self.multi else (out,)))

    def _entry(self, o: Tensor, node: Any) -> tuple:
        """``(output_nr, data, counter, version, source)`` for output ``o``.

        ``output_nr`` is None if ``o`` is not ``node``'s; ``data`` is kept for a
        multi-output op (to rebuild the other outputs); ``source`` is the kept
        tangents, or a weak reference to ``o`` when they are recomputed.
        """
        source = weakref.ref(o) if self.args is not None else None if o._fw is None else dict(o._fw)
        return (o._output_nr if o._grad_fn is node else None, o._data if self.multi else None,
                o._version_counter(), o._version, source)

    def attach(self, out: Tensor, node: Any, output_nr: int) -> None:
        """Give ``out``, output ``output_nr`` of ``node`` unpacked, its tangents at the active levels."""
        index = self._position(out, output_nr)
        if index is None:
            return
        source = self.outputs[index][4]
        if self.args is None:
            _copy_active(source, out)
            return
        self._check_versions(node, index)
        live = source()
        if live is not None and live._fw is not None:
            _copy_active(live._fw, out)
        elif not self.multi:
            _push_tangents(self.op, self.args, self.params, out)
        else:
            _push_tangents(self.op, self.args, self.params, tuple(
                out if i == index else _output_of(node, data, nr)
                for i, (nr, data, _, _, _) in enumerate(self.outputs)))

    def _position(self, out: Tensor, output_nr: int) -> int | None:
        """Which of the op's outputs ``out`` is: same data, else (packed by hooks) same output_nr."""
        if not self.multi:
            return 0
        for i, (_, data, _, _, _) in enumerate(self.outputs):
            if data is out._data:
                return i
        return next((i for i, (nr, _, _, _, _) in enumerate(self.outputs) if nr == output_nr), None)

    def _check_versions(self, node: Any, index: int) -> None:
        """Before recomputing: raise torch's in-place error if an argument or another output changed."""
        for a, expected in zip(self.args, self.versions, strict=True):
            if expected is not None and a._version != expected:
                raise modified_error(f"{a.dtype} {tuple(a.shape)}", node, a._version, expected)
        for i, (_, data, counter, expected, _) in enumerate(self.outputs):
            if i != index and counter.value != expected:
                raise modified_error(f"{data.dtype} {data.shape}", node, counter.value, expected)


def _copy_active(fw: dict | None, out: Tensor) -> None:
    """Give ``out`` the tangents of ``fw`` (a ``_fw`` dict) at the active levels."""
    if fw is not None:
        out._fw = {level: fw[level] for level in STATE.dual_levels if fw.get(level) is not None} or None


def _output_of(node: Any, data: Any, output_nr: int | None) -> Tensor:
    """Another output of a multi-output node, rebuilt (a jvp rule may read all outputs)."""
    out = _wrap(data)
    if output_nr is not None:
        out._requires_grad = True
        out._grad_fn = node
        out._output_nr = output_nr
    return out


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
