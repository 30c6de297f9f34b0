"""Reverse-mode transform levels: which graphs an enclosing transform still differentiates.

Each reverse-mode transform (``func.grad``, ``func.grad_and_value``, ``func.vjp`` and
what is built on them, and the ``autograd.functional`` products) runs its function at
a level of its own, as torch.func and JAX do. The level is *alive* while the transform
runs; the tensors the transform differentiates with respect to (its leaves) carry it.
Forward-mode levels are the dual levels of ``forward_ad``, vmap levels those of ``batching``.

A leaf that requires grad is *live* when its level is alive, or when it carries no level
(a tensor the user tracks with ``requires_grad``: the base level, ``dualgrad.grad``'s).
A finished transform's leaves are dead: nothing differentiates with respect to them any more.

Two questions follow, answered from the levels:

* Must a transform record its backward pass (``create_graph``)? Yes when grad mode is on
  and an enclosing reverse level is alive, or when the graph reaches a live base-level leaf
  (``needs_graph``).
* Which graph does a result keep when the transform returns? Its reverse graph only if the
  graph reaches a live leaf; its tangents at the active dual levels always (``lower``). So
  ``grad(outer)(x)`` with ``grad`` inside ``outer`` returns a plain tensor, and the primal
  output of ``vjp`` keeps an enclosing ``jvp``'s tangent.

>>> import dualgrad as dg
>>> from dualgrad.transforms.levels import reaches_live_leaf, reverse_level, tag_leaf
>>> with reverse_level() as level:
...     x = tag_leaf(dg.tensor([1., 2.]).requires_grad_(), level)
...     y = (x * x).sum()
...     reaches_live_leaf([y])                 # x's level is alive: a transform differentiates y
True
>>> reaches_live_leaf([y])                     # it has returned: nothing will
False
>>> reaches_live_leaf([y * dg.tensor(3., requires_grad=True)])   # a base-level leaf
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..base.state import STATE
from ..forward_ad.engine import set_tangent, tangent_at
from ..tensor import Tensor
from ..vmap.batching import from_physical, is_batched_at, physical_value, to_physical

_TAG = "transform_level"


class ReverseLevel:
    """One reverse-mode transform call; ``alive`` is False once the transform has returned.

    ``nodes`` holds, while it is alive, the graph nodes of its leaves that are aliases of tensors
    an enclosing level tracks (``{id: node}``): a walk meets those as nodes, not as tensors.
    """

    __slots__ = ("alive", "nodes")

    def __init__(self) -> None:
        self.alive = True
        self.nodes: dict = {}

    def close(self) -> None:
        self.alive = False
        self.nodes = {}  # (dead: walks pass through these nodes to the leaves they alias)

    def __repr__(self) -> str:
        return f"ReverseLevel({'alive' if self.alive else 'exited'})"


class reverse_level:  # noqa: N801 - used as a function: ``with reverse_level() as level``
    """Make a new innermost reverse level alive for the duration of the block (``as``: the level).

    On exit the level is dead, also when the block raised. Inside ``inference_mode`` the block
    runs with inference mode off (``leave_inference_mode``); with ``grad_mode=True`` also with grad
    mode on (as inside ``enable_grad()``), the modes before restored on exit.
    """

    __slots__ = ("level", "previous", "modes", "grad_mode")

    def __init__(self, grad_mode: bool = False) -> None:
        self.grad_mode = grad_mode

    def __enter__(self) -> ReverseLevel:
        self.level = ReverseLevel()
        self.previous = STATE.reverse_levels
        self.modes = leave_inference_mode()
        if self.grad_mode:
            STATE.grad_enabled = True
        STATE.reverse_levels = self.previous + (self.level,)
        return self.level

    def __exit__(self, *exc_info: Any) -> None:
        STATE.reverse_levels = self.previous
        restore_modes(self.modes)
        self.level.close()


def leave_inference_mode() -> tuple:
    """Turn inference mode off, grad mode as ``is_grad_enabled()`` reported it; the modes before,
    for ``restore_modes``. A transform runs so: it must record its own graph and tangents, or its
    derivatives would be zeros (torch.func's transforms work inside ``inference_mode`` too)."""
    modes = (STATE.grad_enabled, STATE.inference_mode, STATE.inference_grad_mode)
    if STATE.inference_mode:
        STATE.grad_enabled, STATE.inference_mode = STATE.inference_grad_mode, False
    return modes


def restore_modes(modes: tuple) -> None:
    """Put back the modes ``leave_inference_mode`` returned."""
    STATE.grad_enabled, STATE.inference_mode, STATE.inference_grad_mode = modes


def tag_leaf(leaf: Tensor, level: ReverseLevel) -> Tensor:
    """Mark ``leaf`` (a tensor a transform differentiates with respect to) as one of ``level``'s."""
    node = leaf._node()
    if node is None:
        leaf._get_extra()[_TAG] = level
    else:  # an alias of a tensor an enclosing level tracks: its node leads on to that tensor's graph
        level.nodes[id(node)] = node
    return leaf


def _live(leaf: Tensor, base: bool) -> bool:
    extra = leaf._extra
    level = extra.get(_TAG) if extra else None
    return base if level is None else level.alive


def reaches_live_leaf(tensors: Iterable[Any], base: bool = True) -> bool:
    """True if the reverse graph of ``tensors`` (physical values) reaches a live leaf
    (with ``base=False``, a leaf of an alive transform level: the base level's do not count)."""
    alias_nodes = {key for level in STATE.reverse_levels for key in level.nodes}
    stack, seen = [], set()
    for t in tensors:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        node = t._node()
        if node is None:
            if _live(t, base):
                return True
        elif node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:  # (a node is marked seen when it is found: each is walked once)
        node = stack.pop()
        # A chain is walked without the stack (as the backward engine counts dependencies): a
        # transform walks the whole graph of its output when no leaf is live, once per call.
        while node is not None:
            if alias_nodes and id(node) in alias_nodes:
                return True
            # (a compact node's targets read from its slots: ``Node.edges`` builds tuples of pairs)
            arity = getattr(node, "_arity", 0)
            if arity == 1:
                targets = (node._t0,)
            elif arity == 2:
                targets = (node._t0, node._t1)
            else:
                targets = [target for target, _ in getattr(node, "edges", ())]
            node = None
            for target in targets:
                if target is None:
                    continue
                if isinstance(target, Tensor):
                    extra = target._extra  # (``_live``, spelled out: one leaf per edge of a leaf's node)
                    level = extra.get(_TAG) if extra else None
                    if base if level is None else level.alive:
                        return True
                    continue
                if target in seen:
                    continue
                seen.add(target)
                if node is None:
                    node = target
                else:
                    stack.append(target)
    return False


def tangents_of(tensors: Iterable[Any]) -> list:
    """The physical tangents of ``tensors`` at the active dual levels (they have reverse graphs too)."""
    found = []
    for t in tensors:
        for level in STATE.dual_levels:
            tangent = tangent_at(t, level)
            if tangent is not None:
                found.append(physical_value(tangent))
    return found


def needs_graph(grad_was_enabled: bool, tensors: list) -> bool:
    """Whether a transform's backward pass must be recorded (``create_graph``).

    ``tensors`` are the physical tensors the pass reads: outputs, cotangents, leaves. An
    enclosing reverse level that is alive may differentiate any of them (through their
    tangents, or through values the function closed over), so it always gets the graph;
    the base level gets it when the graph of ``tensors`` or of their tangents reaches one of
    its leaves. Nothing is recorded when grad mode was off where the transform was called.
    """
    if not grad_was_enabled:
        return False
    return (bool(STATE.reverse_levels) or reaches_live_leaf(tensors)
            or bool(STATE.dual_levels) and reaches_live_leaf(tangents_of(tensors)))


def _without_graph(phys: Tensor) -> Tensor:
    """``phys`` detached from the reverse graph, with its tangents at the active dual levels."""
    plain = phys.detach()
    for level in STATE.dual_levels:
        tangent = tangent_at(phys, level)
        if tangent is not None:
            set_tangent(plain, level, tangent)
    return plain


def tracked_by_enclosing_transform(x: Tensor) -> bool:
    """True if an enclosing transform differentiates ``x``: its graph reaches a leaf of an alive
    reverse level, or it has a tangent at an active dual level."""
    phys = physical_value(x)
    return bool(tangents_of([phys])) or (bool(STATE.reverse_levels) and reaches_live_leaf([phys], base=False))


def lower(x: Any, keep_graph: bool = True, base: bool = True) -> Any:
    """``x`` (a result of a finished transform) as the enclosing levels see it.

    Its reverse graph stays if ``keep_graph`` and it reaches a live leaf (with ``base=False``,
    a leaf of an alive transform level); its tangents at the active dual levels always stay.
    Non-Tensors are returned as they are.
    """
    if not isinstance(x, Tensor):
        return x
    levels = STATE.vmap_levels
    own = tuple(level for level in levels if is_batched_at(x, level)) if levels else ()
    phys = to_physical(x, own) if own else x
    if not phys.requires_grad or (keep_graph and reaches_live_leaf([phys], base)):
        return x
    plain = _without_graph(phys)
    return from_physical(plain, own) if own else plain
