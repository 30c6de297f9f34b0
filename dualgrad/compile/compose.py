"""A compiled call on tensors that require grad, carry tangents or are batched: one custom Function node.

``CompiledFunction`` sends such a call here. The call becomes one ``Function.apply`` whose

* forward is the compiled function itself, replayed on the detached inputs;
* backward (vjp) is a compiled function of ``(inputs, cotangents)`` that runs ``func.vjp`` of ``fn``;
* jvp is a compiled function of ``(inputs, tangents)`` that runs ``func.jvp`` of ``fn``;
* vmap rule is a compiled function that runs ``vmap(fn)`` on the unwrapped inputs.

Each derived function is a ``CompiledFunction`` of its own (traced once per guard set, cached), so it
composes again: the backward of a backward (``hessian``, ``create_graph=True``) is the compiled vjp
of the compiled vjp, and so on for every order and every mix of transforms. A call the primal trace
cannot replay (or that closes over a tensor an enclosing transform differentiates, whose derivative
the node would not see) runs ``fn`` eagerly instead.
"""

from __future__ import annotations

from typing import Any

from ..base.pytree import flatten, unflatten
from ..base.state import STATE
from ..tensor import Tensor
from ..transforms.function import Function, _vmap_level_of, _without_level
from ..vmap.batching import BatchedTensor, make_batched, only_vmap_levels

_FLOATING_KINDS = "fc"


def arguments(leaves: list, spec: Any) -> tuple:
    """``(args, kwargs)`` from ``flat_arguments``' leaves and spec (an int: that many positional Tensors)."""
    if type(spec) is int:
        return tuple(leaves), {}
    return unflatten(leaves, spec)


class Eager(Exception):
    """The composed call cannot be one node: run the function eagerly (``why``)."""


class _Flat:
    """``fn`` as a function of the tensor leaves of one call's arguments (the other leaves fixed)."""

    def __init__(self, fn: Any, spec: Any, template: list, positions: tuple) -> None:
        self.fn = fn
        self.spec = spec
        self.template = template
        self.positions = positions

    def __call__(self, *tensors: Any) -> Any:
        leaves = list(self.template)
        for position, t in zip(self.positions, tensors, strict=True):
            leaves[position] = t
        args, kwargs = arguments(leaves, self.spec)
        return self.fn(*args, **kwargs)


class _Selected:
    """``flat`` as a function of the tensors at ``diff`` (the others fixed), returning the output leaves at
    ``out_diff``: what ``func.vjp`` and ``func.jvp`` differentiate."""

    def __init__(self, flat: _Flat, tensors: tuple, diff: tuple, out_diff: tuple) -> None:
        self.flat, self.tensors, self.diff, self.out_diff = flat, tensors, diff, out_diff

    def __call__(self, *chosen: Any) -> tuple:
        tensors = list(self.tensors)
        for position, t in zip(self.diff, chosen, strict=True):
            tensors[position] = t
        leaves, _ = flatten(self.flat(*tensors))
        return tuple(leaves[i] for i in self.out_diff)


class _Vjp:
    """``(inputs..., cotangents...) -> gradients of the inputs at diff``: the node's backward."""

    def __init__(self, flat: _Flat, n: int, diff: tuple, out_diff: tuple) -> None:
        self.flat, self.n, self.diff, self.out_diff = flat, n, diff, out_diff

    def __call__(self, *values: Any) -> tuple:
        from ..transforms.func import vjp

        tensors, cotangents = values[:self.n], values[self.n:]
        selected = _Selected(self.flat, tensors, self.diff, self.out_diff)
        _, pullback = vjp(selected, *(tensors[i] for i in self.diff))
        return tuple(pullback(tuple(cotangents)))


class _ValueAndGrad:
    """``(inputs...) -> (output leaves..., gradients of the inputs at diff)``: the call's value and the vjp of its
    output ``out`` (a scalar) with cotangent 1, in one replay. The node's forward, once a backward is known to
    follow calls of its structure: the backward then returns the saved gradients (its cotangent 1, as from
    ``grad`` or ``loss.backward()``) instead of replaying the forward again inside a vjp."""

    def __init__(self, flat: _Flat, n: int, diff: tuple, out: int) -> None:
        self.flat, self.n, self.diff, self.out = flat, n, diff, out

    def __call__(self, *tensors: Any) -> tuple:
        from ..factories import ones_like
        from ..transforms.func import vjp

        def value(*chosen: Any) -> tuple:
            values = list(tensors)
            for position, t in zip(self.diff, chosen, strict=True):
                values[position] = t
            leaves, _ = flatten(self.flat(*values))
            return leaves[self.out], tuple(leaves)
        out, pullback, leaves = vjp(value, *(tensors[i] for i in self.diff), has_aux=True)
        return (*leaves, *pullback(ones_like(out)))


class _Jvp:
    """``(inputs..., tangents of the inputs at diff...) -> tangents of the outputs at out_diff``."""

    def __init__(self, flat: _Flat, n: int, diff: tuple, out_diff: tuple) -> None:
        self.flat, self.n, self.diff, self.out_diff = flat, n, diff, out_diff

    def __call__(self, *values: Any) -> tuple:
        from ..transforms.func import jvp

        tensors, tangents = values[:self.n], values[self.n:]
        selected = _Selected(self.flat, tensors, self.diff, self.out_diff)
        _, out_tangents = jvp(selected, tuple(tensors[i] for i in self.diff), tuple(tangents))
        return tuple(out_tangents)


class _Batched:
    """``vmap(flat, in_dims)``: the node's vmap rule (outputs batched at dimension 0)."""

    def __init__(self, flat: _Flat, in_dims: tuple, randomness: str) -> None:
        self.flat, self.in_dims, self.randomness = flat, in_dims, randomness

    def __call__(self, *tensors: Any) -> Any:
        from ..vmap.batching import vmap

        return vmap(self.flat, in_dims=self.in_dims, randomness=self.randomness)(*tensors)


class Call:
    """What one composed call knows: the compiled function, its argument structure, and (after the
    forward) its output structure."""

    def __init__(self, compiled: Any, leaves: list, spec: Any, positions: tuple, static: tuple) -> None:
        self.compiled = compiled
        self.spec = spec
        self.positions = positions
        self.template = [None if i in positions else leaf for i, leaf in enumerate(leaves)]
        self.key = (repr(spec), positions, static)
        self.grad_mode = STATE.grad_enabled
        self.out_spec: Any = None
        self.out_diff: tuple = ()
        self.n_outputs = 0

    def derived(self, kind: str, extra: tuple, make: Any) -> Any:
        """The compiled ``kind`` function of this call's structure (made once, then cached)."""
        return self.compiled.derived((kind, self.key, extra), make)

    def flat(self) -> _Flat:
        return _Flat(self.compiled.fn, self.spec, self.template, self.positions)

    def outputs(self, result: Any) -> tuple:
        leaves, self.out_spec = flatten(result)
        self.n_outputs = len(leaves)
        self.out_diff = tuple(i for i, leaf in enumerate(leaves)
                              if isinstance(leaf, Tensor) and leaf.dtype.kind in _FLOATING_KINDS)
        return tuple(leaves)


def outside_error(exc: BaseException) -> bool:
    """Whether ``exc`` is vmap's error for a tensor batched at a level ``outside_vmap`` hid (or one it would
    raise eagerly too: the eager call then raises it again)."""
    return isinstance(exc, RuntimeError) and str(exc).startswith("vmap:")


def outside_vmap() -> only_vmap_levels:
    """Run the block with the active vmap levels inactive, for a call whose arguments none of them batches:
    its values do not depend on them, and transforms inside (``func.vjp``) would otherwise batch their
    results at every active level. Levels with ``randomness="different"`` stay (random draws differ per
    batch member there). A tensor batched at a hidden level, met inside, raises RuntimeError ("... used
    outside the vmap call ..."): callers then run the function eagerly."""
    return only_vmap_levels(tuple(v for v in STATE.vmap_levels if v.randomness == "different"))


def _plain(t: Any) -> Any:
    """``t`` itself where a transform may differentiate it (it requires grad in grad mode, or carries
    tangents); else its detached alias (an argument no one else holds: no identity guard on it)."""
    if not isinstance(t, Tensor) or (STATE.grad_enabled and t._requires_grad) or t._fw:
        return t
    return t.detach()


class CompiledCall(Function):
    """The node of a composed call (``apply(call, *tensors)``)."""

    @staticmethod
    def forward(ctx: Any, call: Call, *tensors: Tensor) -> tuple:
        ctx.saved_gradients = None
        follows = call.compiled.backward_follows.get(call.key)
        if follows is not None:
            outputs = _value_and_gradients(ctx, call, tensors, *follows)
            if outputs is not None:
                return outputs
        compiled = call.compiled
        leaves = list(call.template)
        for position, t in zip(call.positions, tensors, strict=True):
            leaves[position] = t.detach()
        args, kwargs = arguments(leaves, call.spec)
        previous = STATE.grad_enabled
        STATE.grad_enabled = call.grad_mode  # (the caller's grad mode: fn may compute derivatives itself)
        try:
            with outside_vmap():
                result, entry = compiled.run(leaves, call.spec, args, kwargs)
        except RuntimeError as exc:
            if not outside_error(exc):
                raise
            raise Eager("it closes over a batched tensor") from exc
        finally:
            STATE.grad_enabled = previous
        if entry is None or entry.program is None:
            raise Eager(f"its trace runs eagerly ({entry.reason if entry is not None else 'see above'})")
        for guard in entry.held:
            held = guard.tensor
            if held._requires_grad or held._fw:
                raise Eager("it closes over a tensor that requires grad or carries tangents")
        if any(kind in ("input", "held") for kind, _ in entry.template):
            raise Eager("it returns an input or a closed-over tensor itself")
        ctx.call = call
        ctx.save_for_backward(*tensors)
        ctx.save_for_forward(*tensors)
        outputs = call.outputs(result)
        ctx.output_shapes = tuple(o.shape if isinstance(o, Tensor) else None for o in outputs)
        ctx.mark_non_differentiable(*(o for i, o in enumerate(outputs)
                                      if isinstance(o, Tensor) and i not in call.out_diff))
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        call: Call = ctx.call
        tensors = ctx.saved_tensors
        need = ctx.needs_input_grad[1:]
        diff = tuple(i for i, n in enumerate(need) if n and tensors[i].dtype.kind in _FLOATING_KINDS)
        result: list = [None] * (1 + len(tensors))
        if not diff:
            return tuple(result)
        out_diff = call.out_diff
        saved = _saved_gradients(ctx, call, tensors, grads, diff)
        if saved is not None:
            for position, g in zip(diff, saved, strict=True):
                result[1 + position] = g
            return tuple(result)
        if len(out_diff) == 1 and call.n_outputs and ctx.output_shapes[out_diff[0]] == ():
            # (a scalar output, as a loss: later forwards of this structure also give the gradients)
            call.compiled.backward_follows[call.key] = (out_diff[0], call.out_spec)
        compiled_vjp = call.derived("vjp", (diff, out_diff), lambda: _Vjp(call.flat(), len(tensors), diff, out_diff))
        gradients = compiled_vjp(*(_plain(t) for t in tensors), *(_plain(grads[i]) for i in out_diff))
        for position, g in zip(diff, gradients, strict=True):
            result[1 + position] = g
        return tuple(result)

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> tuple:
        call: Call = ctx.call
        tensors = ctx.saved_tensors
        diff = tuple(i for i, t in enumerate(tensors) if t.dtype.kind in _FLOATING_KINDS)
        out_diff = call.out_diff
        compiled_jvp = call.derived("jvp", (diff, out_diff), lambda: _Jvp(call.flat(), len(tensors), diff, out_diff))
        out_tangents = compiled_jvp(*(_plain(t) for t in tensors), *(_plain(tangents[1 + i]) for i in diff))
        by_output = dict(zip(out_diff, out_tangents, strict=True))
        return tuple(by_output.get(i) for i in range(call.n_outputs))


def _value_and_gradients(ctx: Any, call: Call, tensors: tuple, out: int, out_spec: Any) -> tuple | None:
    """The node's outputs from the compiled ``_ValueAndGrad`` (its gradients saved on ``ctx``), or None to take
    the plain forward (the call does not fit: a trace that runs eagerly, a result of another structure)."""
    need = ctx.needs_input_grad[1:]
    diff = tuple(i for i, n in enumerate(need) if n and tensors[i].dtype.kind in _FLOATING_KINDS)
    if not diff:
        return None
    both = call.derived("value and grad", (diff, out), lambda: _ValueAndGrad(call.flat(), len(tensors), diff, out))
    detached = [t.detach() for t in tensors]
    previous = STATE.grad_enabled
    STATE.grad_enabled = call.grad_mode
    try:
        with outside_vmap():
            values, entry = both.run(detached, len(detached), tuple(detached), {})
    except RuntimeError as exc:
        if not outside_error(exc):
            raise
        return None
    finally:
        STATE.grad_enabled = previous
    if entry is None or entry.program is None or any(g.tensor._requires_grad or g.tensor._fw for g in entry.held):
        call.compiled.backward_follows.pop(call.key, None)  # (not replayable: the plain forward from now on)
        return None
    leaves, gradients = list(values[:-len(diff)]), values[-len(diff):]
    try:
        result = unflatten(leaves, out_spec)
    except Exception:  # noqa: BLE001 - another output structure: the plain forward
        return None
    outputs = call.outputs(result)
    if call.out_diff != (out,) or outputs[out].shape != ():
        return None
    ctx.call = call
    ctx.save_for_backward(*tensors)
    ctx.save_for_forward(*tensors)
    ctx.output_shapes = tuple(o.shape if isinstance(o, Tensor) else None for o in outputs)
    ctx.saved_gradients = (diff, outputs[out].dtype, tuple(gradients))
    ctx.gradients_given = False
    ctx.mark_non_differentiable(*(o for i, o in enumerate(outputs) if isinstance(o, Tensor) and i != out))
    return outputs


def _saved_gradients(ctx: Any, call: Call, tensors: tuple, grads: tuple, diff: tuple) -> tuple | None:
    """The gradients the forward saved, if they are this backward's: the same inputs differentiated, a cotangent
    of exactly 1 (bit for bit the vjp's), and nothing to differentiate the backward itself (no input or cotangent
    that a transform differentiates: ``create_graph``, ``hessian``)."""
    saved = ctx.saved_gradients
    if saved is None or saved[0] != diff:
        return None
    g = grads[call.out_diff[0]]
    if (not isinstance(g, Tensor) or type(g) is not Tensor or g._data.dtype != saved[1] or g._data.shape != ()
            or not g._data == 1.0 or _plain(g) is g or any(_plain(t) is t for t in tensors)):
        return None
    if ctx.gradients_given:  # (a second backward of the node, retain_graph: arrays of its own)
        return tuple(t.clone() for t in saved[2])
    ctx.gradients_given = True
    return saved[2]


def needs_node(leaves: list) -> bool | None:
    """True if a call on ``leaves`` must be one node (an argument requires grad in grad mode, carries
    tangents, or is batched); None if an argument is a Tensor subclass (eager); else False."""
    grad = STATE.grad_enabled
    found = False
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            if type(leaf) is BatchedTensor:
                found = True
            elif type(leaf) is not Tensor:
                return None
            elif (grad and leaf._requires_grad) or leaf._fw:
                found = True
    return found


def composed_call(compiled: Any, leaves: list, spec: Any, static: tuple) -> Any:
    """``compiled``'s call on ``leaves`` as one ``CompiledCall`` node, or (batched arguments) as the compiled
    ``vmap`` of ``fn`` on their values one vmap level down; raises ``Eager`` if it cannot be."""
    positions = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor))
    call = Call(compiled, leaves, spec, positions, static)
    tensors = [leaves[i] for i in positions]
    level = _vmap_level_of(tensors)
    if level is not None:
        return _batched_call(call, tensors, level)
    outputs = CompiledCall.apply(call, *tensors)
    return unflatten(list(outputs), call.out_spec)


def _batched_call(call: Call, tensors: list, level: Any) -> Any:
    """The call on tensors batched at vmap ``level``: ``compile(vmap(fn, in_dims))`` on their values, with that
    level inactive (as a Function's generated vmap rule runs), its outputs batched at dimension 0 again."""
    top = level.id
    values, dims = [], []
    for t in tensors:
        mine = type(t) is BatchedTensor and t.level == top
        value = t.value if mine else t
        # (a value no transform differentiates is passed as its alias: the BatchedTensor holding it is no
        # other way for the function to reach it, which would guard it by identity)
        values.append(_plain(value) if mine and type(value) is Tensor else value)
        dims.append(t.bdim if mine else None)
    in_dims = tuple(dims)
    randomness = level.randomness
    batched = call.derived("vmap", (in_dims, randomness), lambda: _Batched(call.flat(), in_dims, randomness))
    try:
        with _without_level(level):
            result = batched(*values)
    except RuntimeError as exc:
        if not outside_error(exc):
            raise
        raise Eager("it closes over a tensor batched at the vmap level of its arguments") from exc
    leaves, spec = flatten(result)
    return unflatten([make_batched(o, 0, top) if isinstance(o, Tensor) else o for o in leaves], spec)
