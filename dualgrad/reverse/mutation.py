"""``allow_mutation_on_saved_tensors``: saved tensors are cloned when mutated in place.

Inside the context, every tensor saved for backward is packed (through the
saved-tensor hooks) into a record kept by the context. An in-place operation
calls ``note_mutation`` first, which clones the old value of every saved tensor
that shares memory and version counter with the mutated one; backward then
unpacks the clone instead of the changed tensor.
"""

from __future__ import annotations

import threading
from typing import Any

from ..base.state import STATE
from ..tensor import Tensor, _wrap
from .saved import push_saved_tensor_hooks

_LOCAL = threading.local()


class _Packed:
    """One saved tensor, and its clone once it has been mutated."""

    __slots__ = ("tensor", "clone", "context")

    def __init__(self, tensor: Tensor, context: _AllowMutationOnSavedContext):
        self.tensor = tensor
        self.clone: Tensor | None = None
        self.context = context


class _AllowMutationOnSavedContext:
    """State of one ``allow_mutation_on_saved_tensors`` block: the saved tensors by counter."""

    def __init__(self) -> None:
        self.saved: dict[int, list[_Packed]] = {}
        self.active = True

    def pack(self, tensor: Tensor) -> _Packed:
        packed = _Packed(tensor, self)
        self.saved.setdefault(id(tensor._version_counter()), []).append(packed)
        return packed

    def unpack(self, packed: _Packed) -> Tensor:
        if not packed.context.active:
            raise RuntimeError(
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context "
                "in which the graph was originally recorded."
            )
        return packed.clone if packed.clone is not None else packed.tensor

    def clone_saved(self, tensor: Tensor) -> None:
        """Keep the current value of every saved tensor sharing ``tensor``'s counter."""
        for packed in self.saved.get(id(tensor._counter), ()):
            if packed.clone is None:
                packed.clone = _wrap(packed.tensor._data.copy())


class allow_mutation_on_saved_tensors:  # noqa: N801 - torch's name
    """Context manager under which tensors saved for backward may be mutated in place.

    A saved tensor is cloned when it is mutated, so backward still sees the
    value it had when it was saved. Run forward and backward inside the same
    context; entering returns the context's state object.

    >>> import dualgrad as dg
    >>> from dualgrad.reverse.mutation import allow_mutation_on_saved_tensors
    >>> with allow_mutation_on_saved_tensors():
    ...     # forward
    ...     a = dg.ones(2, 3, requires_grad=True)
    ...     b = a.clone()
    ...     out = (b**2).sum()
    ...     b.sin_()
    ...     # backward
    ...     out.sum().backward()
    ...
    tensor([[0.8415, 0.8415, 0.8415],
            [0.8415, 0.8415, 0.8415]], grad_fn=<SinBackward0>)
    >>> a.grad
    tensor([[2., 2., 2.],
            [2., 2., 2.]])
    """

    def __enter__(self) -> _AllowMutationOnSavedContext:
        if getattr(_LOCAL, "context", None) is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        context = _AllowMutationOnSavedContext()
        self._context = context
        self._prev_hooks = STATE.saved_tensor_hooks
        push_saved_tensor_hooks((context.pack, context.unpack))
        _LOCAL.context = context
        return context

    def __exit__(self, *exc: Any) -> None:
        STATE.saved_tensor_hooks = self._prev_hooks
        _LOCAL.context = None
        self._context.active = False
        self._context.saved.clear()


def note_mutation(tensor: Tensor) -> None:
    """Called by every in-place operation before it writes into ``tensor``."""
    context = getattr(_LOCAL, "context", None)
    if context is not None and tensor._counter is not None:
        context.clone_saved(tensor)
