"""Ordered hook collections with removable handles."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

_next_hook_id = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook.

    >>> hooks = {}
    >>> handle = add_hook(hooks, print)
    >>> len(hooks)
    1
    >>> handle.remove()
    >>> len(hooks)
    0
    """

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict, hook_id: int):
        self._hooks = hooks
        self.id = hook_id

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def add_hook(hooks: dict, fn: Callable) -> RemovableHandle:
    """Append ``fn`` to the insertion-ordered dict ``hooks``; return its handle."""
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    hook_id = next(_next_hook_id)
    hooks[hook_id] = fn
    return RemovableHandle(hooks, hook_id)
