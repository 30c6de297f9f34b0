"""``dualgrad.compile``: trace a function once, replay it as plain NumPy calls."""

from __future__ import annotations

import functools
import gc
import sys
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.pytree import flatten, unflatten
from ..base.state import STATE, install_observer, remove_observer
from ..tensor import Tensor, _wrap, mark_inference
from .compose import Eager, composed_call, needs_node, outside_error, outside_vmap
from .guards import (
    INCOMPLETE,
    HeldGuard,
    NotGuardable,
    _leaf_key,
    call_key,
    closure_failure,
    closure_guards,
    describe_difference,
    drawn_at_random,
    dynamic_key,
    flat_arguments,
    random_sources,
)
from .replay import LazyProgram, Miss
from .trace import (
    ACTIVE,
    LOCAL,
    TraceObserver,
    Tracer,
    Unsupported,
    install_hooks,
    install_size_hooks,
    remove_hooks,
    remove_size_hooks,
    unchanged,
)

# The first replay of every new trace is also run eagerly and compared; a mismatch sends that
# guard set to eager for good (tests switch this off to prove the replays exact on their own).
SAFETY_NET = [True]
_NODE = "node"


class CompileWarning(UserWarning):
    """``dualgrad.compile`` runs a call eagerly (unsupported construct, cache full, safety net)."""


class CompileError(RuntimeError):
    """Raised instead of running eagerly when ``fullgraph=True``."""


class _Entry:
    """One trace: its replay (None: run eagerly), its held-tensor and closure guards, its outputs."""

    __slots__ = ("program", "held", "closure", "template", "spec", "verified", "reason", "identity", "sources",
                 "polymorphic", "checked")

    def __init__(self) -> None:
        self.program: LazyProgram | None = None
        self.held: list = []
        self.closure: list = []
        self.template: list = []
        self.spec: Any = None
        self.verified = False
        self.reason = ""
        self.identity: list = []  # (leaf position, weakref): arguments the function may also reach otherwise
        self.sources: list = []  # (array or list, snapshot): what constants were copied from
        self.polymorphic = False  # (dynamic=True) replayed for any input sizes of its guard set
        self.checked: set = set()  # (polymorphic) exact guard keys the safety net compared with eager


class CompiledFunction:
    """The callable ``dualgrad.compile`` returns: ``fn``'s semantics, replayed where a trace fits."""

    def __init__(self, fn: Callable, fullgraph: bool, cache_size: int, dynamic: bool = False) -> None:
        self.fn = fn
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.cache_size = cache_size
        self.cache: dict = {}
        self.traces = 0
        self.events: list[str] = []
        self._warned: set = set()
        self._derived: dict = {}
        # call structure -> (output position, output spec) of composed calls whose backward ran with a scalar loss:
        # their later forwards also give the gradients (compose._ValueAndGrad)
        self.backward_follows: dict = {}
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):  # (a callable object: named by its class in messages)
            self.__name__ = type(fn).__name__

    # -- public -----------------------------------------------------------------
    def explain(self) -> str:
        """Why each trace was made (which guard failed) and every fallback to eager, in order."""
        lines = [f"{self.__name__}: {self.traces} trace(s), cache size {self.cache_size}"]
        lines += [f"  {i + 1}. {event}" for i, event in enumerate(self.events)]
        for derived in self._derived.values():  # (the vjp, jvp and vmap of differentiated or batched calls)
            lines += ["  " + line for line in derived.explain().splitlines()]
        return "\n".join(lines)

    def source(self) -> str:
        """The Python source of every replay in the cache (guards are ``raise Miss`` statements)."""
        parts = []
        for entries in self.cache.values():
            for entry in entries:
                if entry.program is not None:
                    parts.append(entry.program.source_text)
        for key, derived in self._derived.items():
            text = derived.source()
            if text:
                parts.append(f"# {key[0]} of {self.__name__}\n{text}")
        return "\n".join(parts)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    # -- calls --------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if LOCAL.tracer is not None:  # inside another trace: its tracer records our ops
            return self.fn(*args, **kwargs)
        leaves, spec = flat_arguments(args, kwargs)
        eager = self._eager_reason(leaves)
        if eager is None:
            if not STATE.vmap_levels:
                return self.run(leaves, spec, args, kwargs)[0]
            try:
                with outside_vmap():
                    return self.run(leaves, spec, args, kwargs)[0]
            except RuntimeError as exc:
                if not outside_error(exc):
                    raise
                self.events.append("eager: it closes over a batched tensor")
                return self.fn(*args, **kwargs)
        if eager == _NODE:
            try:
                static = tuple(_leaf_key(leaf) for leaf in leaves if not isinstance(leaf, Tensor))
            except NotGuardable as exc:
                self._fallback(str(exc))
                return self.fn(*args, **kwargs)
            try:
                return composed_call(self, leaves, spec, static)
            except Eager as exc:
                self.events.append(f"eager (differentiated or batched call): {exc}")
                return self.fn(*args, **kwargs)
        if eager:
            self._fallback(eager)
        return self.fn(*args, **kwargs)

    def derived(self, key: tuple, make: Callable) -> CompiledFunction:
        """The compiled function ``make()`` of a composed call (its vjp, jvp or vmap), made once per ``key``."""
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = CompiledFunction(make(), self.fullgraph, self.cache_size, self.dynamic)
            found.__name__ = f"{key[0]} of {self.__name__}"
        return found

    def run(self, leaves: list, spec: Any, args: tuple, kwargs: dict) -> tuple:
        """``(result, entry)``: the call replayed (or traced) on arguments that need no node; ``entry`` is the
        trace used, None when the call ran eagerly."""
        try:
            key = call_key(leaves, spec)
        except NotGuardable as exc:
            self._fallback(str(exc))
            return self.fn(*args, **kwargs), None
        group = self.cache.get(key)
        candidates = [(group, entry) for entry in group] if group else []
        dkey = None
        if self.dynamic:
            dkey = ("any sizes",) + dynamic_key(leaves, spec)
            group = self.cache.get(dkey)
            if group:
                candidates += [(group, entry) for entry in group]
        reasons = []
        if candidates:
            arrays = [leaf._data if type(leaf) is Tensor else leaf for leaf in leaves
                      if isinstance(leaf, (Tensor, np.ndarray))]
            for group, entry in candidates:
                failure = self._other_arguments(entry, leaves)
                if failure is not None:
                    reasons.append(failure)
                    continue
                failure = self._stale(entry)
                if failure is not None:
                    group.remove(entry)
                    reasons.append(failure)
                    continue
                if entry.program is None:
                    return self.fn(*args, **kwargs), entry
                try:
                    out = entry.program.run(*arrays)
                except Miss as miss:
                    step = miss.step
                    reasons.append(f"guard {step.name}" + (f" at {step.where}" if step.where else "") + " failed")
                    continue
                except Exception:  # noqa: BLE001 - NumPy raised: the eager call raises dualgrad's own error
                    return self.fn(*args, **kwargs), None
                if entry.program.effects:
                    for guard in entry.held:
                        guard.refresh()
                result = self._outputs(entry, out, leaves)
                unchecked = key not in entry.checked if entry.polymorphic else not entry.verified
                if unchecked and SAFETY_NET[0] and not entry.program.effects:  # (effects: not twice)
                    return self._check(entry, result, args, kwargs, key), entry
                return result, entry
        elif self.cache:
            nearest = list(self.cache)[-1]
            if nearest[0] == "any sizes":  # (a dynamic trace: its key has ranks and a broadcasting pattern)
                text = describe_difference(nearest[1:5], dkey[1:5])
                reasons.append("which dimensions are 1 or equal changed" if text == "a new guard set" else text)
            else:
                reasons.append(describe_difference(nearest, key))
        else:
            reasons.append("first call")
        if self.traces >= self.cache_size:
            self._fallback(f"cache_size={self.cache_size} reached (last miss: {'; '.join(reasons)})",
                           once="cache")
            return self.fn(*args, **kwargs), None
        return self._trace(key, leaves, args, kwargs, "; ".join(reasons), dkey)

    def _eager_reason(self, leaves: list) -> str | None:
        """None to replay; ``_NODE`` for one node (arguments that require grad, carry tangents or are batched);
        "" to run eagerly without a warning (a Tensor subclass); else the warning."""
        state = STATE
        if state.observers:
            return "an observer (profiler or anomaly mode) is active"
        if state.saved_tensor_hooks:
            return "saved-tensor hooks are active"
        node = needs_node(leaves)
        if node is None:
            return ""
        return _NODE if node else None

    def _fallback(self, why: str, once: str | None = None) -> None:
        if self.fullgraph:
            raise CompileError(f"dualgrad.compile({self.__name__}): {why}")
        tag = once or why
        self.events.append(f"eager: {why}")
        if tag not in self._warned:
            self._warned.add(tag)
            warnings.warn(f"dualgrad.compile({self.__name__}) runs eagerly: {why}", CompileWarning, stacklevel=3)

    @staticmethod
    def _other_arguments(entry: _Entry, leaves: list) -> str | None:
        for position, ref in entry.identity:
            if leaves[position] is not ref():
                return f"argument {position} is not the tensor traced (the function also holds that one)"
        return None

    def _stale(self, entry: _Entry) -> str | None:
        for value, copy in entry.sources:
            if not unchanged(value, copy):
                return f"a {type(value).__name__} a constant was made from changed"
        for guard in entry.held:
            failure = guard.failure()
            if failure is not None:
                return failure
        return closure_failure(entry.closure)

    # -- tracing -------------------------------------------------------------------
    def _trace(self, key: tuple, leaves: list, args: tuple, kwargs: dict, reason: str,
               dkey: tuple | None = None) -> Any:
        self.traces += 1
        self.events.append(f"trace {self.traces}: {reason}")
        entry = _Entry()
        reached: set = set()
        entry.closure = closure_guards(self.fn, reached)
        generators = random_sources(entry.closure)
        inputs = [leaf for leaf in leaves if isinstance(leaf, (Tensor, np.ndarray))]
        before = [_tensor_state(t) for t in inputs if isinstance(t, Tensor)]
        tracer = Tracer(inputs, dynamic=dkey is not None)
        observer = TraceObserver(tracer)
        LOCAL.tracer = tracer
        install_hooks()
        if dkey is not None:
            install_size_hooks()
        ACTIVE.add(tracer)
        install_observer(observer)
        collecting = gc.isenabled()
        if collecting:  # (the trace keeps every array and step alive: collections would scan them again and again)
            gc.disable()
        try:
            result = self.fn(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()
            remove_observer(observer)
            LOCAL.tracer = None
            ACTIVE.discard(tracer)
            remove_hooks()
            if dkey is not None:
                remove_size_hooks()
        tracer.pending.clear()
        out_leaves, entry.spec = flatten(result)
        try:
            if tracer.failure is not None:
                raise tracer.failure
            generator = drawn_at_random(generators)
            if generator is not None:
                raise Unsupported(f"the call draws random numbers from {generator}, which a replay would "
                                  "repeat; draw them with dualgrad's factories (dg.rand, dg.randn, ...) or pass them "
                                  "as arguments")
            entry.template, slots = self._template(tracer, out_leaves, inputs)
            changed = [t for t, state in zip([t for t in inputs if isinstance(t, Tensor)], before)
                       if _tensor_state(t) != state]
            if changed:
                raise Unsupported("the call changed a tensor it was given (in place, .data or .grad)")
            if call_key(*flat_arguments(args, kwargs)) != key:
                raise Unsupported("the call changed its arguments or a global mode (grad mode, inference mode, "
                                  "default dtype) and did not restore it")
            for t, array, version, requires_grad, grad in tracer.held:
                counter = t._counter
                moved = (0 if counter is None else counter.value) != version
                if (t._data is not array or t._requires_grad != requires_grad
                        or moved and not (tracer.opaque or id(t) in tracer.written)
                        or t._grad is not grad and not (tracer.opaque or id(t) in tracer.grad_set)):
                    raise Unsupported("the call changed a tensor the caller holds (.data, requires_grad, or "
                                      "in place where the trace does not see it)")
            _check_escapes(tracer, out_leaves)
            entry.identity = _held_arguments(leaves, (args, kwargs), result, inputs, reached)
            entry.sources = tracer.sources
            entry.program = LazyProgram(tracer, slots)
        except Unsupported as failure:
            entry.program = None
            entry.reason = str(failure)
            if failure.quiet and not self.fullgraph:
                self.events.append(f"eager: {failure}")
            else:
                self._fallback(str(failure))
        # (an eager entry for a result that required grad keeps them too: a closed-over tensor that no
        # longer requires grad makes the call traceable; one that mutates held tensors stays eager)
        if entry.program is not None or "requires grad" in entry.reason:
            # (versions after the call: the next call starts from them; .grad None or not as before it)
            entry.held = [HeldGuard(t, array, version, requires_grad, tracer.grad_before.get(id(t), grad is None),
                                    tracer.grad_identity.get(id(t)))
                          for t, array, version, requires_grad, grad in tracer.held]
            for guard in entry.held:
                guard.refresh()
        if dkey is not None and entry.program is not None:
            why = tracer.size_dependent or entry.program.size_dependence()
            if why is None:
                entry.polymorphic = True
                entry.checked.add(key)  # (the traced call itself was eager)
                key = dkey
            self.events[-1] += " (for any sizes of these ranks)" if why is None else f" (for these sizes only: {why})"
        self.cache.setdefault(key, []).append(entry)
        return result, entry

    def _template(self, tracer: Tracer, out_leaves: list, inputs: list) -> tuple:
        """How to rebuild each output leaf from a replay, and the slots the replay returns."""
        template, slots, made = [], [], {}
        protected = [a._data if isinstance(a, Tensor) else a for a in inputs]
        protected += [h[1] for h in tracer.held]
        for leaf in out_leaves:
            if isinstance(leaf, Tensor):
                if type(leaf) is not Tensor:
                    raise Unsupported(f"the result holds a {type(leaf).__name__}")
                if leaf._requires_grad or leaf._fw or leaf._grad_fn is not None:
                    raise Unsupported("the result requires grad or carries tangents (the function closes over a tensor "
                                      "that requires grad or carries tangents: eager, for its derivative)", quiet=True)
                position = next((i for i, t in enumerate(inputs) if t is leaf), None)
                if position is not None:
                    template.append(("input", position))
                    continue
                if id(leaf) in made:
                    template.append(("same", made[id(leaf)]))
                    continue
                slot = tracer.slot_of_tensor(leaf)
                if tracer.origin[slot] == "held" and leaf._data is tracer.arrays[slot]:
                    template.append(("held", leaf))
                    continue
                array = tracer.arrays[slot]
                if any(np.may_share_memory(array, p) for p in protected):
                    raise Unsupported("the result shares memory with an input or a closed-over tensor (a view)")
                protected.append(array)
                made[id(leaf)] = len(template)
                template.append(("slot", len(slots)))  # (the replay copies what shares a constant's memory)
                slots.append(slot)
            elif type(leaf) in (type(None), bool, int, float, complex, str):
                template.append(("value", leaf))
            else:
                raise TypeError(
                    f"dualgrad.compile({self.__name__}): the function returned an object of type "
                    f"{type(leaf).__name__}, which a replay cannot rebuild; return Tensors, Python numbers, "
                    "strings, None, and tuples, lists or dicts of them"
                )
        return template, slots

    def _outputs(self, entry: _Entry, arrays: tuple, leaves: list) -> Any:
        inputs = [leaf for leaf in leaves if isinstance(leaf, (Tensor, np.ndarray))]
        built: list = []
        inference = STATE.inference_mode
        for kind, value in entry.template:
            if kind == "slot":
                array = arrays[value]
                t = _wrap(array)
                if inference:
                    mark_inference(t)
                built.append(t)
            elif kind == "input":
                built.append(inputs[value])
            elif kind == "held":
                built.append(value)
            elif kind == "same":
                built.append(built[value])
            else:
                built.append(value)
        return unflatten(built, entry.spec)

    def _check(self, entry: _Entry, result: Any, args: tuple, kwargs: dict, key: tuple = ()) -> Any:
        """The safety net: compare the first replay of a trace with an eager call."""
        expected = self.fn(*args, **kwargs)
        got_leaves, got_spec = flatten(result)
        want_leaves, want_spec = flatten(expected)
        same = repr(got_spec) == repr(want_spec) and len(got_leaves) == len(want_leaves) and all(
            (isinstance(a, Tensor) and isinstance(b, Tensor) and _ulp_equal(a._data, b._data))
            or (not isinstance(a, Tensor) and repr(a) == repr(b))
            for a, b in zip(got_leaves, want_leaves))
        if not same:
            entry.program = None
            entry.reason = "safety net: the replay differs from eager"
            self._fallback(entry.reason)
            return expected
        entry.verified = True
        entry.checked.add(key)
        return result


def _ulp_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and dtype, and the same values up to a few ulps (eager's shortcuts outside dispatch, off
    while tracing, may order a product differently or give ``0.0`` for ``-0.0``); exactly for other dtypes."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=8 * np.finfo(a.dtype).eps, atol=0.0, equal_nan=True))
    return bool(np.array_equal(a, b))


def _tensor_state(t: Tensor) -> tuple:
    counter = t._counter
    return (id(t._data), 0 if counter is None else counter.value, id(t._grad), t._requires_grad)


def _containers(tree: Any, found: set) -> None:
    if isinstance(tree, (tuple, list, dict)):
        found.add(id(tree))
        for child in tree.values() if isinstance(tree, dict) else tree:
            _containers(child, found)


def _held_arguments(leaves: list, call: tuple, result: Any, inputs: list, reached: set) -> list:
    """``(position, weakref)`` of each tensor or array argument the function may also reach without its
    arguments (a closure cell, a global, an attribute, a list it names): a replay is then valid only for
    that same object (else ``f(w)`` traced with ``x is w`` would replay ``x * x`` for ``x * w``)."""
    positions = [i for i, leaf in enumerate(leaves) if type(leaf) is Tensor or type(leaf) is np.ndarray]
    if not positions:
        return []
    mine: set = {id(leaves), id(inputs), id(positions)}
    _containers(call, mine)
    _containers(result, mine)
    return [(i, weakref.ref(leaves[i])) for i in positions if _reachable(leaves[i], mine, reached)]


_CONTAINER_TYPES = (list, tuple, dict, set, enumerate, zip, map, filter, reversed)


def _is_module_namespace(namespace: dict) -> bool:
    module = sys.modules.get(namespace.get("__name__")) if isinstance(namespace.get("__name__"), str) else None
    return module is not None and getattr(module, "__dict__", None) is namespace


def _reachable(obj: Any, mine: set, reached: set) -> bool:
    """Whether the function can reach ``obj`` other than through its arguments: found by the closure
    walk (``reached``), or referred to by a closure cell or a module global the function names, or by
    an object (an attribute: conservatively). Lists, dicts and frames (local variables) that refer to it
    count only if the walk found them."""
    if ("object", id(obj)) in reached:
        return True
    if INCOMPLETE not in reached:  # (the walk followed everything the function can reach, and not obj)
        return False
    referrers = gc.get_referrers(obj)
    mine.add(id(referrers))
    for referrer in referrers:
        if id(referrer) in mine or isinstance(referrer, types.FrameType):
            continue
        if type(referrer) is types.CellType:
            if id(referrer) in reached:
                return True
            continue  # (another function's closure)
        if type(referrer) is dict and _is_module_namespace(referrer):
            if any(v is obj and (id(referrer), k) in reached for k, v in referrer.items()):
                return True
            continue
        if type(referrer) in _CONTAINER_TYPES or type(referrer).__name__.endswith("iterator"):
            continue  # (a container the walk did not reach)
        return True
    return False


def _check_escapes(tracer: Tracer, out_leaves: list) -> None:
    """A tensor made in the call that is still alive and not returned was stored somewhere: a Python
    side effect the replay would not repeat."""
    allowed = {id(t) for t in out_leaves if isinstance(t, Tensor)} | tracer.installed
    for t in out_leaves:
        view = getattr(t, "_view", None)
        while view is not None:
            allowed.add(id(view.base))
            view = view.base._view

    def escaped() -> list:
        found = []
        for key, (ref, *_) in list(tracer.created.items()):
            t = ref()
            if t is None or key in allowed:
                continue
            found.append(t)
        return found

    if escaped():
        gc.collect()
        if escaped():
            raise Unsupported("a tensor made in the call was stored outside it (a Python side effect)")


def compile(fn: Callable | None = None, *, dynamic: bool = False, fullgraph: bool = False,  # noqa: A001
            cache_size: int = 8) -> Any:
    """Compile ``fn``: trace it on the first call, then replay the recorded NumPy calls.

    The replay repeats exactly the primitive array operations of the traced call (the
    derivative computation included when ``fn`` computes derivatives) without dispatch,
    graph nodes or mode checks. Guards decide when a replay is valid: input shapes,
    dtypes, strides class, ``requires_grad``, grad and inference mode, Python argument
    values, closed-over tensors (identity, version, ``.grad`` None or not), closure and global
    values, and every Python-level look at a traced value (``bool``, ``int``, ``float``,
    ``item``, ``tolist``). A miss traces again (at most ``cache_size`` traces, then eager
    with one warning). Constructs a replay cannot repeat run eagerly with a
    ``CompileWarning``, or raise ``CompileError`` with ``fullgraph=True``.

    It composes both ways: a call on tensors that require grad, carry tangents or are batched
    is one node whose vjp, jvp and vmap rules are compiled replays of ``func.vjp``,
    ``func.jvp`` and ``vmap`` of ``fn`` (``grad(compile(f))``, ``hessian``, ``vmap``,
    ``.backward()``). A training step (``backward()`` into parameters' ``.grad``, in-place
    updates under ``no_grad``, an optimizer's ``zero_grad``/``step``) replays with its
    effects. With ``dynamic=True`` a trace is guarded on ranks instead of sizes and replays
    for any sizes when all its steps allow it (else it keeps to its sizes).

    >>> import dualgrad as dg
    >>> f = dg.compile(dg.func.grad(lambda x: (x.sin() * x).sum()))
    >>> x = dg.tensor([0.5, 1.0])
    >>> bool((f(x) == f(x)).all())
    True
    """
    if fn is None:
        return lambda f: compile(f, dynamic=dynamic, fullgraph=fullgraph, cache_size=cache_size)
    if not callable(fn):
        raise TypeError(f"dualgrad.compile() expects a callable, got {type(fn).__name__}")
    if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 1:
        raise ValueError(f"dualgrad.compile(): cache_size must be a positive int, got {cache_size!r}")
    return CompiledFunction(fn, fullgraph, cache_size, bool(dynamic))
