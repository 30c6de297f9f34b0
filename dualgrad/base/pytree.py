"""Nested tuples (named tuples too), lists and dicts of values ("pytrees"): flatten, rebuild, match a prefix.

vmap's ``in_dims``/``out_dims`` and the transforms' ``argnums`` and outputs are
pytrees; these helpers are all they need.

>>> leaves, spec = flatten((1, [2, {"a": 3}]))
>>> leaves
[1, 2, 3]
>>> unflatten([4, 5, 6], spec)
(4, [5, {'a': 6}])
"""

from __future__ import annotations

from typing import Any

_CONTAINERS = (tuple, list, dict)


def _children(tree: Any) -> tuple[list, Any]:
    """``(children, keys)`` of a container (keys are None for tuples and lists)."""
    if isinstance(tree, dict):
        keys = list(tree)
        return [tree[k] for k in keys], keys
    return list(tree), None


def flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of ``tree`` (depth first) and a spec to rebuild it with ``unflatten``."""
    leaves: list = []
    return leaves, _walk(tree, leaves)


def _walk(node: Any, leaves: list) -> Any:
    """The spec of ``node``; its leaves are appended to ``leaves``.

    A module-level function, not a closure: a recursive closure is a reference
    cycle (function -> cell -> function) that would keep ``leaves`` alive until
    the garbage collector runs.
    """
    if type(node) not in _CONTAINERS and not (isinstance(node, tuple) and _is_named_tuple(node)):
        leaves.append(node)
        return None
    children, keys = _children(node)
    specs = []
    for child in children:  # (a leaf child, the common case, without a call of _walk)
        if type(child) in _CONTAINERS or isinstance(child, tuple):
            specs.append(_walk(child, leaves))
        else:
            leaves.append(child)
            specs.append(None)
    return (type(node), keys, specs)


def _is_named_tuple(node: Any) -> bool:
    """True for a named tuple (such as ``max(x, dim)``'s ``(values, indices)``): a container, rebuilt as its type.
    (Callers test ``isinstance(node, tuple)`` first: no call for the common leaf, a Tensor.)"""
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def unflatten(leaves: list, spec: Any) -> Any:
    """Rebuild the tree described by ``spec`` with ``leaves`` in order."""
    return _build(spec, iter(leaves))


def _build(node: Any, it: Any) -> Any:
    """The tree of spec ``node``, taking its leaves from the iterator ``it`` (no closure: see ``_walk``)."""
    if node is None:
        return next(it)
    kind, keys, children = node
    values = [next(it) if c is None else _build(c, it) for c in children]  # (a leaf without a call)
    if kind is dict:
        return dict(zip(keys, values, strict=True))
    return kind(values) if kind is tuple or kind is list else kind(*values)  # (else a named tuple)


def describe(spec: Any) -> str:
    """A short text form of a spec: ``(*, [*, {'a': *}], Point(x=*, y=*))``."""
    if spec is None:
        return "*"
    kind, keys, children = spec
    parts = [describe(c) for c in children]
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts, strict=True)) + "}"
    if kind is not tuple and kind is not list:  # a named tuple
        return f"{kind.__name__}(" + ", ".join(f"{f}={p}" for f, p in zip(kind._fields, parts, strict=True)) + ")"
    text = ", ".join(parts)
    return f"[{text}]" if kind is list else f"({text},)" if len(parts) == 1 else f"({text})"


def broadcast_prefix(prefix: Any, tree: Any) -> list | None:
    """One value per leaf of ``tree``: ``prefix`` is a tree whose leaves cover whole subtrees.

    Returns None when ``prefix`` does not match the structure of ``tree``.

    >>> broadcast_prefix((0, None), ([1, 2], 3))
    [0, 0, None]
    """
    if type(prefix) not in _CONTAINERS and not (isinstance(prefix, tuple) and _is_named_tuple(prefix)):
        leaf = type(tree) not in _CONTAINERS and not (isinstance(tree, tuple) and _is_named_tuple(tree))
        return [prefix] if leaf else [prefix] * len(flatten(tree)[0])
    if type(tree) is not type(prefix) or len(tree) != len(prefix):
        return None
    if isinstance(prefix, dict) and set(prefix) != set(tree):
        return None
    if isinstance(tree, dict):
        pairs = [(prefix[k], tree[k]) for k in tree]
    else:
        pairs = list(zip(prefix, tree, strict=True))
    result: list = []
    for p, t in pairs:
        if type(p) is int or p is None:  # (the common prefix leaves, without a call when t is a leaf)
            if type(t) not in _CONTAINERS and not isinstance(t, tuple):
                result.append(p)
                continue
        part = broadcast_prefix(p, t)
        if part is None:
            return None
        result += part
    return result
