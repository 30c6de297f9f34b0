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

import itertools
import weakref
from typing import Any

import numpy as np

from .. import fastpath
from ..base.state import STATE
from ..fastpath import owns_array
from ..reverse.saved import modified_error
from ..tensor import Tensor, TensorMeta, _wrap, meta_of

_MISSING = object()


class DualLevel:
    """One forward-AD level (a key of the ``_fw`` dicts); ``alive`` is False once exited.

    ``tape_tangents`` is True unless the caller knows that no reverse pass will
    differentiate this level's tangents (``hvp`` without ``create_graph``): then
    its tangent rules run in no-grad mode and keep no graph (nor its buffers) alive.
    ``defer_tangents`` (only with ``tape_tangents`` False) lets ops store a
    ``DeferredTangent`` instead of computing the tangent (``hvp``'s forward pass);
    ``deferred`` holds weak references to those made, for ``flush_deferred``.
    """

    __slots__ = ("depth", "alive", "tape_tangents", "defer_tangents", "deferred", "_prune_at")

    def __init__(self, depth: int):
        self.depth = depth
        self.alive = True
        self.tape_tangents = True
        self.defer_tangents = False
        self.deferred: list = []
        self._prune_at = 64

    def close(self) -> None:
        """Mark the level exited and let its deferred tangents drop what they hold."""
        self.alive = False
        for lazy in self._pending():
            lazy.release()
        self.deferred = []

    def _pending(self) -> list:
        """The deferred tangents still alive and not computed, oldest first."""
        return [lazy for ref in self.deferred if (lazy := ref()) is not None and lazy.op is not None]

    def _register(self, lazy: DeferredTangent) -> None:
        self.deferred.append(weakref.ref(lazy))
        if len(self.deferred) >= self._prune_at:  # forget the dead ones now and then
            self.deferred = [weakref.ref(lazy) for lazy in self._pending()]
            self._prune_at = max(64, 2 * len(self.deferred))

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
            return t if type(t) is not DeferredTangent else _computed(fw, level)
    view = x._view
    if view is None or view.base._fw is None:
        return None
    base_tangent = _computed(view.base._fw, level)
    if base_tangent is None:
        return None
    return _view_tangent(x, level, base_tangent)


fastpath.TANGENT_AT[0] = tangent_at  # (the fast paths of forward over reverse read tangents)


def _computed(fw: dict, level: DualLevel) -> Tensor | None:
    """The tangent that ``fw`` (a ``_fw`` dict) holds at ``level``, computed (and stored) if deferred."""
    t = fw.get(level)
    if type(t) is DeferredTangent:
        t = fw[level] = t.force()
    return t


def _stored_tangent(x: Any, level: DualLevel) -> Any:
    """``tangent_at``, except that a tangent stored as a ``DeferredTangent`` is returned as it is."""
    if isinstance(x, Tensor) and x._fw is not None:
        t = x._fw.get(level, _MISSING)
        if t is not _MISSING:
            return t.value if type(t) is DeferredTangent and t.op is None else t
    return tangent_at(x, level)


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


def propagate_tangents(op: Any, args: tuple, params: dict, out: Any, recipe: bool = True) -> None:
    """Attach to ``out`` the tangents of every active dual level at which an input has one, running
    ``op``'s jvp rule at each such level.

    If the node that produced ``out`` saved it, the node is told how to get these
    tangents back (see ``TangentRecipe``), unless ``recipe`` is False (the recipe
    itself recomputing them). (One function, not a wrapper around the push: this
    runs for every op in forward mode.)
    """
    taped_any = None  # (None until a tangent is set; then whether a rule ran with grad mode on)
    flags = STATE.__dict__  # (a dict read or write costs less than a thread-local attribute)
    levels = flags["dual_levels"]
    for level in levels:  # (no enumerate: the index is only needed where a tangent is pushed)
        tangents = _input_tangents(args, level)
        if tangents is None:
            continue
        outer = levels[:levels.index(level)]
        if level.defer_tangents:
            if _defer(op, args, params, out, tangents, level, outer):
                taped_any = bool(taped_any)  # (a deferred tangent is untaped)
                continue
            tangents = tuple([t.force() if type(t) is DeferredTangent else t for t in tangents])
        grad_mode = flags["grad_enabled"]
        flags["dual_levels"] = outer
        flags["grad_enabled"] = taped = grad_mode and level.tape_tangents
        try:
            seen = _alias(out) if taped and _tracked(out, tangents) else out
            # (``**params`` only if there are any: it copies the dict)
            result = op.jvp(tangents, seen, *args, **params) if params else op.jvp(tangents, seen, *args)
            if op.multi_output:  # (a loop, not a comprehension: that would make args and tangents cells)
                pairs = []
                for o, t in zip(out, result, strict=True):
                    if t is not None:
                        pairs.append((o, _output_tangent(t, o, args, tangents)))
            elif result is not None:
                tangent = _output_tangent(result, out, args, tangents)
        finally:
            flags["dual_levels"] = levels
            flags["grad_enabled"] = grad_mode
        # (tangents are set with all levels active; one output, the common case, without a list of pairs)
        if op.multi_output:
            for o, t in pairs:
                set_tangent(o, level, t)
                taped_any = taped_any or taped
        elif result is not None:
            if out._fw is None:  # (set_tangent's first case, without the call: a new output)
                out._fw = {level: tangent}
            else:
                set_tangent(out, level, tangent)
            taped_any = taped_any or taped
    # (no tangent or no node, no recipe: a one-output op without a node, the common case, skips the
    # call and the grad mode read; no grad mode, no node of this call)
    if (recipe and taped_any is not None and (type(out) is tuple or out._grad_fn is not None)
            and flags["grad_enabled"]):
        _give_recipe_to_saved_outputs(op, args, params, out, taped_any)


def _input_tangents(args: tuple, level: DualLevel) -> tuple | None:
    """Per argument, its tangent at ``level`` (None if it has none); None if no argument has one.

    (Calls with one or two arguments, almost all, are spelled out: no list, no loop, and no call
    for a float nor for a plain Tensor holding a computed tangent at ``level``, read from its dict.)
    """
    if len(args) == 1:
        a = args[0]
        t = a._fw.get(level) if type(a) is Tensor and a._fw else None
        if type(t) is not Tensor:  # (none, a deferred one, a view's, a batched one: ``_read`` tells)
            t = _read(a, level)
        return None if t is None else (t,)
    if len(args) == 2:
        a, b = args
        t_a = a._fw.get(level) if type(a) is Tensor and a._fw else None
        if type(t_a) is not Tensor:
            t_a = _read(a, level)
        if type(b) is float:  # (x * 1.01)
            t_b = None
        else:
            t_b = b._fw.get(level) if type(b) is Tensor and b._fw else None
            if type(t_b) is not Tensor:
                t_b = _read(b, level)
        return None if t_a is None and t_b is None else (t_a, t_b)
    tangents = tuple([_read(a, level) for a in args])
    for t in tangents:
        if t is not None:
            return tangents
    return None


def _read(x: Any, level: DualLevel) -> Any:
    """The tangent of ``x`` at ``level`` for an op's jvp: ``tangent_at``, except that tangents stored
    as ``DeferredTangent`` stay so at a level that defers them."""
    return _stored_tangent(x, level) if level.defer_tangents else tangent_at(x, level)


def _defer(op: Any, args: tuple, params: dict, out: Any, tangents: list, level: DualLevel,
           outer: tuple) -> bool:
    """Give ``out`` a ``DeferredTangent`` at ``level`` instead of its tangent, if that keeps nothing alive.

    Only for an op whose jvp declares what it reads (``op.jvp_reads``), with a
    node just recorded for this call: every input with a tangent requires grad
    (so its tensor and tangent stay reachable from the node), every input the
    jvp reads was saved by the node, and every tangent held is deferred itself or
    belongs to a saved input. The recipe then holds nothing the graph does not
    hold already: deferring never raises the peak memory while the graph lives.
    """
    reads = getattr(op, "jvp_reads", None)
    node = out._grad_fn if type(out) is Tensor else None
    if (reads is None or node is None or node.op is not op or level.tape_tangents or STATE.vmap_depth
            or not fastpath.ENABLED):
        return False
    read_inputs, read_out = reads(tuple(t is not None for t in tangents))
    if read_out:
        return False
    saved = node.saved_input_tensors()
    held = []
    for a, t, needed in zip(args, tangents, read_inputs, strict=True):
        if not isinstance(a, Tensor):
            held.append(a)
            continue
        kept = any(s is a for s in saved)
        if (needed and not kept) or (t is not None and not (
                a._requires_grad and (kept or (type(t) is DeferredTangent and t.op is not None)
                                      or _view_of_leaf_tangent(a, t, level)))):
            return False
        held.append(a if needed else meta_of(a._data))
    lazy = DeferredTangent(op, tuple(held), tuple(tangents), params, meta_of(out._data),
                           outer, _inputs_shared_by(out, args, tangents))
    level._register(lazy)
    set_tangent(out, level, lazy)
    return True


def _view_of_leaf_tangent(a: Tensor, t: Any, level: DualLevel) -> bool:
    """True if ``t``, the tangent of ``a`` at ``level``, holds no memory of its own: ``a`` is a view
    (``x[1:]``) of a leaf that requires grad, and ``t`` a view of that leaf's tangent.

    The node recorded for ``a``'s view op holds the leaf (an edge to it), and the leaf its
    tangent: a deferred tangent holding ``t`` keeps alive no memory the graph does not.
    """
    view = a._view
    if type(t) is not Tensor or view is None or t._data.base is None:
        return False
    base = view.base
    if not base._requires_grad or base._grad_fn is not None or not base._fw:
        return False
    own = base._fw.get(level)
    return type(own) is Tensor and own._data.base is None and t._data.base is own._data


class DeferredTangent:
    """A tangent not computed yet: the jvp rule, what it reads and the input tangents.

    ``hvp`` discards the tangent of its scalar output, and most intermediate
    tangents of its forward pass are only ever read to compute that one (in
    Rosenbrock, four full-size tangents of ten arrays): they are deferred, and
    computed when first read (``tangent_at``: by a backward rule reading a saved
    input's tangent, by ``unpack_dual``, by an op that cannot defer, ...), with
    the levels and grad mode of the op call that deferred them. Deferred inputs
    are computed first, oldest first, with a loop (chains may be long). Once
    computed, a recipe keeps only its value. ``flush_deferred`` computes them all
    before any in-place write (which could change what they read), and a level's
    exit drops what its remaining ones hold.
    """

    __slots__ = ("op", "args", "tangents", "params", "meta", "outer", "shared", "seq", "value", "__weakref__")

    _count = itertools.count()

    def __init__(self, op: Any, args: tuple, tangents: tuple, params: dict, meta: TensorMeta, outer: tuple,
                 shared: tuple):
        self.op = op  # None once computed (or released)
        self.args = args  # the inputs the jvp reads, TensorMeta for the others
        self.tangents = tangents  # per input: None, a Tensor, or a DeferredTangent
        self.params = params
        self.meta = meta  # the output's shape and dtype
        self.outer = outer  # the dual levels active while the jvp runs
        self.shared = shared  # per input: whether the output's primal may share its memory
        self.seq = next(DeferredTangent._count)  # creation order: inputs come first
        self.value = None

    def force(self) -> Tensor:
        """The tangent, computed now (with the deferred tangents it reads) if it was not yet."""
        if self.op is not None:
            _compute_in_order(self._pending_inputs())
            self._compute()
        return self.value

    def _pending_inputs(self) -> list:
        """The deferred tangents not computed yet that this one reads, directly or not, oldest first."""
        found: dict = {}
        stack = [self]
        while stack:
            for t in stack.pop().tangents:
                if type(t) is DeferredTangent and t.op is not None and id(t) not in found:
                    found[id(t)] = t
                    stack.append(t)
        return sorted(found.values(), key=_by_seq)

    def _compute(self) -> None:
        """Run the jvp rule (its deferred inputs are computed), keep the value, drop the rest."""
        tangents = tuple(t.value if type(t) is DeferredTangent else t for t in self.tangents)
        levels, grad_mode = STATE.dual_levels, STATE.grad_enabled
        STATE.dual_levels, STATE.grad_enabled = self.outer, False
        try:
            value = fit_tangent(self.op.jvp(tangents, None, *self.args, **self.params), self.meta)
            own = all(self.shared[j] for j in _aliased_tangents(value, tangents))
            self.value = value if own else _copy(value)
        finally:
            STATE.dual_levels, STATE.grad_enabled = levels, grad_mode
        self.release()

    def release(self) -> None:
        """Drop the recipe (after computing it, or when its level exits)."""
        self.op = self.args = self.tangents = self.params = self.shared = None


def _by_seq(lazy: DeferredTangent) -> int:
    return lazy.seq


def _compute_in_order(pending: list) -> None:
    """Compute ``pending`` (oldest first), letting go of each as it is done: a value then lives
    only as long as its tensor or a deferred tangent that reads it (a long chain stays small)."""
    pending.reverse()
    while pending:
        lazy = pending.pop()
        if lazy.op is not None:
            lazy._compute()


def flush_deferred() -> None:
    """Compute every deferred tangent of the active levels (before an in-place write changes their inputs)."""
    for level in STATE.dual_levels:
        if level.deferred:
            _compute_in_order(level._pending())
            level.deferred = []


def _tracked(out: Any, tangents: list) -> bool:
    """True if ``out`` or a tangent requires grad: only then can a taped rule's graph hold ``out``.

    (Loops rather than ``any`` over generators: this runs for every op in forward mode.)
    """
    if type(out) is not tuple:
        if out._requires_grad:
            return True
    else:
        for o in out:
            if isinstance(o, Tensor) and o._requires_grad:
                return True
    for t in tangents:
        if t is not None and t._requires_grad:
            return True
    return False


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
    # (a folded output becomes a SavedTensor, which takes the recipe: see ``Node.saved``)
    for saved in node.saved if node._ov is not None else node.saved_objects():
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
            propagate_tangents(self.op, self.args, self.params, out, recipe=False)
        else:
            propagate_tangents(self.op, self.args, self.params, tuple(
                out if i == index else _output_of(node, data, nr)
                for i, (nr, data, _, _, _) in enumerate(self.outputs)), recipe=False)

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


def _output_tangent(t: Tensor, out: Tensor, args: tuple, tangents: tuple) -> Tensor:
    """``out``'s tangent from ``t``, the one its jvp rule gave: fitted to ``out``'s shape and dtype
    (``fit_tangent``), and a copy if it aliases an input's tangent that it must not.

    An output may share its tangent (the object, or memory) with an input only
    if its primal shares memory with that input (a view, or an op returning its
    input): else an in-place op on either tensor later changes the other's
    tangent. Rules may return an input's tangent as it is (``x + c``, a
    ``Function``'s jvp, ...): this is where it is copied (and in
    ``DeferredTangent._compute``, for a deferred tangent).
    """
    if not (type(t) is Tensor and type(out) is Tensor and t._data.shape == out._data.shape
            and t._data.dtype == out._data.dtype):  # (the common case passes without four property calls)
        t = fit_tangent(t, out)
    if type(t) is Tensor and owns_array(t):
        for other in tangents:  # the array is t's alone (a fresh result): only t itself can be an input's
            if other is t:
                break
        else:
            return t
        # (the loop below, without its calls, for the common case of a rule returning the first input's
        # tangent, as x + c's: that input owns its array, and the new output owns another one)
        a = args[0]
        if (tangents[0] is t and type(out) is Tensor and type(a) is Tensor and out._data.base is None
                and a._data.base is None and out._data is not a._data):
            return _copy(t)
    for j in _aliased_tangents(t, tangents):
        if not _may_overlap(_memory(out), _memory(args[j])):
            return _copy(t)
    return t


def _copy(t: Tensor) -> Tensor:
    """A copy of the tangent ``t``: ``clone`` (which keeps its graph and its own tangents), or only its
    array if it has neither (nor a view base that could give it tangents)."""
    if type(t) is Tensor and not t._requires_grad and t._fw is None and t._view is None:
        return _wrap(t._data.copy())
    return t.clone()


def _inputs_shared_by(out: Tensor, args: tuple, tangents: list) -> tuple:
    """Per input: whether ``out``'s primal may share memory with it (inputs with a tangent only)."""
    return tuple(t is not None and _may_overlap(_memory(out), _memory(a)) for a, t in zip(args, tangents))


def _aliased_tangents(t: Tensor, tangents: Any) -> tuple:
    """The positions of the tangents in ``tangents`` that are ``t`` or may share its memory."""
    found = ()
    data = _memory(t)
    for j, other in enumerate(tangents):
        if other is not None and (other is t or _may_overlap(data, _memory(other))):
            found += (j,)
    return found


def _memory(x: Tensor) -> np.ndarray:
    """The array that holds ``x``'s values (for a tensor batched by vmap, its physical value's)."""
    while type(x) is not Tensor and hasattr(x, "bdim"):
        x = x.value
    return x._data


def _may_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """``np.may_share_memory(a, b)``, without the call when ownership already answers.

    An array whose ``base`` is None owns its memory; a view's ``base`` is the
    array owning its memory (NumPy collapses chains of views) unless that is
    another kind of buffer.
    """
    if a is b:
        return True
    base_a, base_b = a.base, b.base
    if base_a is None and base_b is None:
        return False
    if base_a is None and type(base_b) is np.ndarray and base_b.base is None:
        return base_b is a
    if base_b is None and type(base_a) is np.ndarray and base_a.base is None:
        return base_a is b
    return np.may_share_memory(a, b)


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
    return t._data.flags.writeable and not (t._requires_grad and t._node() is None)
