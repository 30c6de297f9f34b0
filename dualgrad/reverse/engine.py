"""The backward engine: dependency counting and a ready queue, never recursion.

``run_backward`` walks the graph once to count, for every node and leaf, how many
edges lead into it; then it runs nodes whose incoming gradients are complete,
highest sequence number first (the order in which torch runs them). Leaf
gradients are committed to ``.grad`` only after the whole pass succeeded, so a
failed backward leaves every ``.grad`` as it was.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from heapq import heappop, heappush
from typing import Any

import numpy as np

from .. import fastpath
from ..base.state import STATE
from ..fastpath import add_into_buffer, scatter_into_buffer
from ..tensor import Tensor, _wrap
from .node import ACCUMULATE_GRAD_NAME, Node


def run_backward(
    roots: Sequence[Tensor],
    root_grads: Sequence[Tensor],
    *,
    retain_graph: bool,
    create_graph: bool,
    inputs: Sequence[Tensor] | None = None,
    accumulate: bool = True,
) -> list:
    """Back-propagate ``root_grads`` from ``roots``.

    With ``accumulate=True`` leaf gradients go to ``.grad`` (of ``inputs`` only,
    when given). With ``accumulate=False`` nothing is written and the gradients
    reaching ``inputs`` are returned, ``None`` for inputs the graph never reached.
    Without ``retain_graph`` each node's saved tensors are freed as soon as it ran
    (torch's peak memory): a pass that fails leaves ``.grad`` as it was, but its
    graph partly freed, as torch's; ``retain_graph=True`` keeps it for a retry.
    """
    start = []
    for root, grad in zip(roots, root_grads):
        target = root._node() or root
        start.append((target, root._output_nr, grad))

    captures: dict = {}  # (target, output_nr) -> index in inputs
    if inputs is not None:
        for i, t in enumerate(inputs):
            node = t._node()
            key = (node, t._output_nr) if node is not None else (t, 0)
            captures.setdefault(key, []).append(i)
    deps, needed = _count_dependencies([s[0] for s in start], captures if inputs is not None else None)

    prev_mode, prev_task = STATE.grad_enabled, STATE.graph_task
    STATE.grad_enabled = create_graph
    STATE.graph_task = GraphTask(deps, needed, [s[0] for s in start])
    try:
        captured, staged = _execute(start, deps, needed, captures, retain_graph,
                                    accumulate, len(inputs) if inputs is not None else 0)
        if accumulate and inputs is not None:  # (non-leaf inputs retain their grad: backward made them)
            staged = [(t, g) for t, g in zip(inputs, captured) if g is not None and t._grad_fn is None]
        _commit(staged, create_graph)
    finally:
        STATE.grad_enabled, STATE.graph_task = prev_mode, prev_task
    return [_dense(g) for g in captured]


def _dense(g: Any) -> Any:
    """``g`` as a dense array if it is a read-only broadcast that backward rules made to save
    passes (see ``ops.registry.broadcast_product``): gradients are returned as torch returns
    them. (The results of view ops, such as ``expand``'s, stay views.)"""
    if type(g) is Tensor and not g._data.flags.writeable and g._view is None and not (g._requires_grad or g._fw):
        return _wrap(g._data.copy())
    return g


class GraphTask:
    """What the running backward pass will compute (read by multi-grad hooks)."""

    __slots__ = ("deps", "needed", "roots", "__weakref__")

    def __init__(self, deps: dict, needed: set | None, roots: list):
        self.deps = deps
        self.needed = needed
        self.roots = {id(r): r for r in roots}

    def will_compute(self, target: Any) -> bool:
        """True if this pass computes the gradient flowing into ``target`` (a node or leaf)."""
        reached = target in self.deps or id(target) in self.roots
        return reached and (self.needed is None or target in self.needed)


def _commit(staged: list, create_graph: bool) -> None:
    """Write gradients into ``.grad``, then run post-accumulate-grad and AccumulateGrad hooks
    (also for a leaf the pass reached with a None gradient, as torch does)."""
    for leaf, grad in staged:
        if grad is not None:
            _accumulate_into_leaf(leaf, grad, create_graph)
    for leaf, grad in staged:
        extra = leaf._extra
        if not extra:
            continue
        for hook in list(extra.get("post_accumulate_hooks", {}).values()):
            result = hook(leaf)
            if result is not None:
                raise RuntimeError(
                    f"Tensor post accumulate grad hooks should return None (hook '{_hook_name(hook)}' "
                    f"returned {type(result).__name__})"
                )
        for hook in list(extra.get("accumulate_post_hooks", {}).values()):
            _checked_all(hook((), (grad,)), (), hook, "AccumulateGrad")


_by_seq = operator.attrgetter("seq")


def _count_dependencies(targets: list, captures: dict | None) -> tuple[dict, Any]:
    """Incoming-edge counts of all reachable nodes; with captures, only needed ones.

    Returns ``(deps, needed)``; ``needed`` is None when every node and leaf is needed.
    """
    roots = {t for t in targets if isinstance(t, Node)}
    deps: dict = dict.fromkeys(roots, 0)  # (roots in deps from the start: none is walked twice)
    stack = list(roots)
    leaves = []
    while stack:
        node = stack.pop()
        # A chain is walked without the stack: emptied and refilled at every node, the stack
        # would be reallocated twice per node.
        while node is not None:
            # (the targets read from the node's slots: no pair per edge, see ``Node.__slots__``)
            arity = node._arity
            if arity == 1:
                targets = (node._t0,)
            elif arity == 2:
                targets = (node._t0, node._t1)
            else:
                targets = node._edges[::2]
            node = None
            for target in targets:
                if target is None:
                    continue
                if target in deps:
                    deps[target] += 1
                    continue
                deps[target] = 1  # first edge into it: a node is walked once
                if type(target) is Tensor:
                    leaves.append(target)
                elif node is None:  # (the first new node is walked next)
                    node = target
                else:
                    stack.append(target)
    if captures is None:
        return deps, None
    wanted = {key[0] for key in captures}
    if all(type(t) is Tensor for t in wanted) and all(t in wanted for t in leaves):
        return deps, None  # every node leads to some leaf, and every leaf reached is wanted
    # A node is needed when a captured gradient lies at or below it. Inputs of a
    # node are older than the node, so increasing sequence numbers is a
    # topological order from the leaves up.
    needed: set = {t for t in wanted if isinstance(t, Tensor)}
    needed_deps: dict = {}
    for node in sorted([t for t in deps if type(t) is not Tensor], key=_by_seq):
        below = [target for target, _ in node.edges if target in needed]
        if below or node in wanted:
            needed.add(node)
            for target in below:
                needed_deps[target] = needed_deps.get(target, 0) + 1
    return needed_deps, needed


def _add(buffer: Any, grad: Tensor | None) -> Any:
    """``buffer + grad`` (either may be None); into ``buffer``'s memory when only the caller's container holds it."""
    if grad is None:
        return buffer
    if buffer is None:
        return grad
    if add_into_buffer(buffer, grad):
        return buffer
    return buffer + grad


def _execute(start, deps, needed, captures, retain_graph, to_grad, n_inputs) -> list:
    """Run the ready queue; ``to_grad`` is True for ``backward`` (leaf gradients go to ``.grad``)."""
    buffers: dict = {}
    ready_nodes: list = []
    ready_leaves: list = []
    for target, nr, grad in start:
        if needed is not None and target not in needed:
            continue
        if type(target) is Tensor:
            buffers[target] = _add(buffers.get(target), grad)
            if deps.get(target, 0) == 0 and not any(leaf is target for leaf in ready_leaves):  # (not ==)
                ready_leaves.append(target)
        else:
            buf = buffers.get(target)
            if buf is None:
                buf = buffers[target] = [None] * target.n_outputs
            buf[nr] = _add(buf[nr], grad)
    for target in list(buffers):  # roots that no other root leads to are ready
        if type(target) is not Tensor and deps.get(target, 0) == 0:
            heappush(ready_nodes, (-target.seq, target, buffers.pop(target)))

    captured: list = [None] * n_inputs
    staged: list = []  # (leaf, grad) to commit into .grad after success
    captured_nodes = {target for target, _ in captures}
    observed = STATE.observed
    if observed:
        _observe_node(_GRAPH_ROOT, [s[2] for s in start], lambda node, grads: grads)
    # The next node to run when it is the only ready one, as in a chain: kept out of the heap,
    # which would cost a push and a pop.
    only_ready = only_ready_grads = None
    while ready_nodes or ready_leaves or only_ready is not None:
        if ready_leaves:
            leaf = ready_leaves.pop(0)  # (in the order of the edges that made them ready, as torch)
            grad = buffers.pop(leaf, None)
            if observed and to_grad and grad is not None:
                grad = _observe_node(_ACCUMULATE_GRAD, grad, lambda node, g, leaf=leaf: (
                    _run_leaf_hooks(leaf, g, to_grad) if leaf._extra else g))
            elif leaf._extra:  # (hooks see a None gradient too, as in torch)
                grad = _run_leaf_hooks(leaf, grad, to_grad)
            key = (leaf, 0)
            if key in captures:
                for i in captures[key]:
                    captured[i] = grad
            elif to_grad and (grad is not None or leaf._extra) and leaf._requires_grad:
                # (a leaf whose requires_grad was turned off after the graph was made gets no .grad, as in torch)
                staged.append((leaf, grad))
            continue
        if only_ready is not None:
            node, grads = only_ready, only_ready_grads
            only_ready = only_ready_grads = None
        else:
            _, node, grads = heappop(ready_nodes)
        hooks = node._hooks
        # (one test for what most nodes lack: hooks, captured outputs, a pass that prunes nodes)
        if hooks is not None or needed is not None or node in captured_nodes:
            grads = _before_node(node, grads, needed, captures, captured, to_grad)
            if grads is None:
                continue  # only captured: nothing below it is wanted
        if grads[0] is None and (len(grads) == 1 or all(g is None for g in grads)) and not node.op.runs_on_undefined:
            grad_inputs = (None,) * len(node.edges)
        elif observed:  # (post-hooks run inside the observers: anomaly mode checks their result)
            grad_inputs = _observe_node(node, grads, _with_post_hooks if hooks is not None and hooks.post else None)
            hooks = None
        elif node.op.scatter_index is not None and scatter_into_buffer(node, grads[0], buffers):
            grad_inputs = (None,)  # (already added into its input's gradient)
        elif needed is not None and fastpath.ENABLED:
            grad_inputs = _backward_of_needed_inputs(node, grads, needed)
        else:
            grad_inputs = node.op.backward(node, grads)
        if hooks is not None and hooks.post:
            grad_inputs = _run_post_hooks(node, grad_inputs, grads)
        # (a node without saved tensors has nothing to release; ``Node.saves`` spelled out)
        if not retain_graph and (node._saved or node._v0 is not None or node._v1 is not None or node.out is not None):
            node.release()
        arity = node._arity  # (the compact layout's edges read from its slots: no call of ``edges``)
        if arity == 1:
            edges = ((node._t0, node._n0),)
        elif arity == 2:
            edges = ((node._t0, node._n0), (node._t1, node._n1))
        else:
            edges = node.edges
        i = -1  # (an index rather than zip: a zip object per node costs more than this loop's work)
        for target, nr in edges:
            i += 1
            if target is None or (needed is not None and target not in needed):
                continue
            grad = grad_inputs[i]
            if type(target) is Tensor:
                buffers[target] = _add(buffers.get(target), grad)
                deps[target] -= 1
                if deps[target] == 0:
                    ready_leaves.append(target)
                continue
            remaining = deps[target] - 1
            deps[target] = remaining
            # (a node's gradients wait in buffers until its last one arrives, then go with it onto
            # the heap: most nodes, with one consumer, never enter buffers)
            if remaining:
                buf = buffers.get(target)
            else:
                buf = buffers.pop(target, None) if buffers else None
            if buf is None:
                if target.n_outputs == 1:  # (the common case: its one gradient is this one)
                    buf = [grad]
                else:
                    buf = [None] * target.n_outputs
                    buf[nr] = grad
                if remaining:
                    buffers[target] = buf
            elif grad is not None:  # (the first gradient is stored without a call of _add)
                buf[nr] = grad if buf[nr] is None else _add(buf[nr], grad)
            if not remaining:
                if only_ready is None and not ready_nodes:
                    only_ready, only_ready_grads = target, buf
                    continue
                if only_ready is not None:
                    heappush(ready_nodes, (-only_ready.seq, only_ready, only_ready_grads))
                    only_ready = None
                heappush(ready_nodes, (-target.seq, target, buf))  # (sequence numbers are unique)
        grads = grad_inputs = grad = buf = None  # (used: large gradients must not live on into the next node)
    return captured, staged


def _backward_of_needed_inputs(node: Node, grads: list, needed: set) -> Any:
    """``node.op.backward(node, grads)`` computing only the gradients this pass needs (torch's engine
    likewise gives its nodes the mask of the inputs its task needs): ``autograd.grad(y, x)`` through a
    layer skips its weights' gradients. The edges into what is not needed are hidden for the call, as
    the edge of an input that needs no gradient is None, which every rule skips; the pass discards the
    gradients of such edges anyway, so the results are the same."""
    arity = node._arity
    if arity == 2:
        t0, t1 = node._t0, node._t1
        if (t0 is None or t0 in needed) and (t1 is None or t1 in needed):
            return node.op.backward(node, grads)
        node._t0 = t0 if t0 in needed else None
        node._t1 = t1 if t1 in needed else None
        try:
            return node.op.backward(node, grads)
        finally:
            node._t0, node._t1 = t0, t1
    if arity == 0:
        flat = node._edges
        targets = flat[::2]
        if all(t is None or t in needed for t in targets):
            return node.op.backward(node, grads)
        hidden = list(flat)
        hidden[::2] = [t if t is None or t in needed else None for t in targets]
        node._edges = tuple(hidden)
        try:
            return node.op.backward(node, grads)
        finally:
            node._edges = flat
    return node.op.backward(node, grads)  # (one input: the node runs because its edge is needed)


def _before_node(node: Node, grads: list, needed: set | None, captures: dict, captured: list,
                 to_grad: bool) -> list | None:
    """Tensor hooks, captures, the ``retain_grad`` update and pre-hooks before ``node`` runs, in
    that order (torch's); the gradients to run it with, or None if it does not run.

    It runs when something below it is needed, and (as torch's) when ``backward(inputs=...)``
    names one of its outputs: then its hooks run and its saved tensors are used and released,
    though no gradient it makes goes further.
    """
    hooks = node._hooks
    if hooks is not None and hooks.tensor_pre:
        _run_tensor_hooks(node, grads)
    input_of_backward = False
    for nr in range(node.n_outputs):
        for i in captures.get((node, nr), ()):
            captured[i] = grads[nr]
            input_of_backward = to_grad
    runs = needed is None or input_of_backward or any(t in needed for t, _ in node.edges)
    if hooks is not None:
        if hooks.retain:
            _update_retained(node, grads)
        if runs and hooks.pre:
            grads = _run_pre_hooks(node, grads)
    return grads if runs else None


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


REPLACED_NONE_MESSAGE = "can't replace a None gradient with a non-None value"


def _checked(new: Any, old: Tensor | None, hook: Any, where: str, index: int) -> Tensor | None:
    """A hook's non-None replacement for gradient ``index`` of ``where``, validated as torch does."""
    name = _hook_name(hook)
    if not isinstance(new, Tensor):
        raise TypeError(
            f"hook '{name}' of {where}: expected Tensor or None for gradient {index}, but hook "
            f"returned '{type(new).__name__}'"
        )
    if old is None:
        raise RuntimeError(f"hook '{name}' of {where}: {REPLACED_NONE_MESSAGE} (gradient {index})")
    if new.shape != old.shape:
        raise RuntimeError(
            f"hook '{name}' of {where} has changed the size of gradient {index}: expected "
            f"shape {old.shape}, got shape {new.shape}"
        )
    if new.dtype != old.dtype:
        raise RuntimeError(
            f"hook '{name}' of {where} has changed the type of gradient {index}: expected "
            f"dtype {old.dtype}, got dtype {new.dtype}"
        )
    return new


def _run_tensor_hook(hook: Any, grad: Tensor | None, where: str, index: int) -> Tensor | None:
    """One tensor hook (called even for a None gradient, as torch does); None keeps ``grad``."""
    new = hook(grad)
    return grad if new is None else _checked(new, grad, hook, where, index)


def _checked_all(new: Any, old: Any, hook: Any, where: str) -> Any:
    """A node hook's replacement tuple of gradients, validated; None keeps ``old``.

    As in torch, the tuple replaces every gradient: a None in it makes that gradient None.
    """
    if new is None:
        return old
    name = _hook_name(hook)
    if type(new) is not tuple:
        raise TypeError(
            f"hook '{name}' of {where}: expected tuple of gradients or None, but hook returned "
            f"'{type(new).__name__}'"
        )
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{name}' of {where} has returned an incorrect number of values "
            f"(got {len(new)}, but expected {len(old)})"
        )
    return [None if n is None else _checked(n, o, hook, where, i) for i, (n, o) in enumerate(zip(new, old))]


def _run_leaf_hooks(leaf: Tensor, grad: Tensor | None, to_grad: bool) -> Tensor | None:
    """Tensor hooks of a leaf, then (when accumulating) its AccumulateGrad pre-hooks."""
    extra = leaf._extra
    for hook in list(extra.get("hooks", {}).values()):
        grad = _run_tensor_hook(hook, grad, f"the leaf tensor of shape {leaf.shape}", 0)
    if to_grad:
        for hook in list(extra.get("accumulate_pre_hooks", {}).values()):
            grad = _checked_all(hook((grad,)), (grad,), hook, "AccumulateGrad")[0]
    return grad


def _run_tensor_hooks(node: Node, grads: list) -> None:
    """Hooks registered on the node's output tensors, in place on ``grads``."""
    for nr, tensor_hooks in node._hooks.tensor_pre.items():
        for hook in list(tensor_hooks.values()):
            grads[nr] = _run_tensor_hook(hook, grads[nr], f"output {nr} of {node.name()}", nr)


def _run_pre_hooks(node: Node, grads: list) -> list:
    for hook in list(node._hooks.pre.values()):
        grads = _checked_all(hook(tuple(grads)), grads, hook, f"{node.name()} (pre-hook)")
    return grads


def _update_retained(node: Node, grads: list) -> None:
    """The ``retain_grad`` update of the node's outputs (after their tensor hooks, before its
    pre-hooks, as in torch). A tensor whose node an in-place op replaced since is updated by
    its new node, not this one."""
    for nr, ref in node._hooks.retain.items():
        tensor = ref()
        if tensor is not None and grads[nr] is not None and tensor._grad_fn is node:
            if tensor._grad is None:
                tensor._grad = grads[nr] if STATE.grad_enabled else _wrap(grads[nr]._data.copy())
            else:
                tensor._grad = tensor._grad + grads[nr]


def _run_post_hooks(node: Node, grad_inputs: Any, grad_outputs: list) -> Any:
    """The node's post-hooks; as in torch, a gradient that the pass does not need shows as None."""
    needed = STATE.graph_task.needed
    if needed is not None:
        grad_inputs = [None if target is None or target not in needed else g
                       for g, (target, _) in zip(grad_inputs, node.edges, strict=True)]
    for hook in list(node._hooks.post.values()):
        grad_inputs = _checked_all(hook(tuple(grad_inputs), tuple(grad_outputs)), grad_inputs,
                                   hook, node.name())
    return grad_inputs


def _with_post_hooks(node: Any, grads: list) -> Any:
    """The node's backward, then its post-hooks (the run an observer wraps, for a node with post-hooks)."""
    return _run_post_hooks(node, node.op.backward(node, grads), grads)


class _EngineStep:
    """Names an engine step that has no graph node (GraphRoot, AccumulateGrad) for observers."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def name(self) -> str:
        return self._name


# (torch's names, which its profiler shows: see the profiler example of the torch.autograd reference)
_GRAPH_ROOT = _EngineStep("torch::autograd::GraphRoot")
_ACCUMULATE_GRAD = _EngineStep(ACCUMULATE_GRAD_NAME)


def _observe_node(node: Any, grads: Any, run: Any = None) -> Any:
    """Run a node (or an engine step's ``run``) with every installed observer around it."""
    if run is None:
        run = node.op.backward
    for observer in STATE.observers:
        run = observer.wrap_node(node, run)
    return run(node, grads)


def _accumulate_into_leaf(leaf: Tensor, grad: Tensor, create_graph: bool) -> None:
    """Default gradient layouts, rules 1 to 4 of the reference."""
    current = leaf._grad
    if current is None:
        if create_graph:  # (a broadcast, such as sum's gradient, is copied: .grad must be writable)
            leaf._grad = grad if grad._data.flags.writeable else grad.clone()
            return
        data = leaf._data
        dense = data.flags.c_contiguous or data.flags.f_contiguous or _is_dense(data)
        new = np.empty_like(data) if dense else np.empty(data.shape, data.dtype)
        np.copyto(new, grad._data)
        leaf._grad = _wrap(new)
    elif create_graph:
        leaf._grad = current + grad
    else:
        np.add(current._data, grad._data, out=current._data, casting="unsafe")
        current._bump_version()


def _is_dense(array: np.ndarray) -> bool:
    """True if the array's elements occupy a gap-free, non-overlapping block."""
    if array.size == 0:
        return True
    span = sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides)) + array.itemsize
    return span == array.nbytes and 0 not in array.strides
