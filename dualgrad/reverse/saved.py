"""Saved tensors: what a graph node keeps for its backward rule.

A node never holds its own output Tensor (that would be a reference cycle
node -> output -> node); it keeps the output's raw data, version counter and
tangents, and rebuilds a Tensor pointing back at the node when unpacked.
Every unpack checks the version counter, so an in-place change after the save
raises instead of silently giving a wrong gradient (except for tensors packed by
saved-tensor hooks, which own the value they return, as in torch).
"""

from __future__ import annotations

import weakref
from typing import Any

from .._state import STATE
from ..tensor import Tensor, _wrap
from .node import Node

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the graph "
    "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward."
)


class SavedTensor:
    """One tensor saved for backward (an input by reference, an output by data)."""

    __slots__ = ("_tensor", "_data", "_counter", "_version", "_fw", "_is_output",
                 "_requires_grad", "_hooks", "_packed", "_shape", "_dtype", "_origin", "_freed")

    def __init__(self, tensor: Tensor, is_output: bool = False):
        self._is_output = is_output
        self._counter = counter = tensor._version_counter()
        self._version = counter.value
        self._shape = tensor._data.shape
        self._dtype = tensor._data.dtype
        self._freed = False
        self._hooks = hooks = _active_hooks()
        if hooks is not None:
            self._packed = hooks[0](tensor)
            self._tensor = self._data = self._fw = None
            self._requires_grad = tensor._requires_grad
            self._origin = None if is_output or not tensor._requires_grad else _origin_of(tensor)
        elif is_output:
            self._tensor = None
            self._data = tensor._data
            self._fw = tensor._fw
            self._requires_grad = tensor._requires_grad
        else:
            self._tensor = tensor

    def unpack(self, node: Any = None, output_nr: int = 0) -> Tensor:
        """The saved tensor, after checking it was neither freed nor modified."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self._hooks is None and self._counter.value != self._version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{self._dtype_name()} {tuple(self._shape)}], needed by "
                f"{node.name() if node is not None else 'a backward function'}, is at version "
                f"{self._counter.value}; expected version {self._version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with dualgrad.autograd.set_detect_anomaly(True)."
            )
        if self._hooks is not None:
            return self._reattach(self._call_unpack_hook(), node, output_nr)
        if self._tensor is not None:
            return self._tensor
        out = _wrap(self._data)
        out._counter = self._counter
        out._fw = self._fw
        if self._requires_grad:
            out._requires_grad = True
            out.grad_fn = node
            out._output_nr = output_nr
        return out

    def _call_unpack_hook(self) -> Tensor:
        tensor = self._hooks[1](self._packed)
        if not isinstance(tensor, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(tensor).__name__}"
            )
        if tensor.shape != self._shape or tensor.dtype != self._dtype:
            raise RuntimeError(
                f"unpack hook returned a tensor of shape {tensor.shape} and dtype {tensor.dtype}, but "
                f"a tensor of shape {self._shape} and dtype {self._dtype} was packed: "
                "unpack_hook(pack_hook(t)) must have the shape and dtype of t"
            )
        return tensor

    def _reattach(self, value: Tensor, node: Any, output_nr: int) -> Tensor:
        """The unpacked value, differentiable like the tensor that was packed (as in torch)."""
        out = _wrap(value._data)
        if not self._requires_grad:
            return out
        out._requires_grad = True
        origin = self._origin
        if origin is None:  # an output of ``node``
            out.grad_fn, out._output_nr = node, output_nr
        elif type(origin) is tuple:
            out.grad_fn, out._output_nr = origin
        else:
            leaf = origin()
            if leaf is not None:
                out.grad_fn = Node(_ALIAS, ((leaf, 0),))
        return out

    def _dtype_name(self) -> str:
        if self._tensor is not None:
            return str(self._tensor.dtype)
        return str(self._data.dtype) if self._data is not None else "tensor"

    def release(self) -> None:
        """Drop the saved value (after a backward without ``retain_graph``)."""
        self._freed = True
        self._tensor = self._data = self._fw = self._packed = self._origin = None

    @property
    def shape(self) -> tuple:
        """The shape of the saved tensor (known even after it was freed)."""
        return self._shape


def _active_hooks() -> tuple | None:
    hooks = STATE.saved_tensor_hooks
    return hooks[-1] if hooks else None


def _origin_of(tensor: Tensor) -> Any:
    """Where gradients of a packed input go: its node and output index, or its leaf (weakly)."""
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return weakref.ref(tensor)


class _Alias:
    """Node op that passes gradients through unchanged: links an unpacked leaf to the leaf."""

    grad_name = "AliasBackward0"

    @staticmethod
    def backward(node: Any, grads: list) -> list:
        return list(grads)


_ALIAS = _Alias()
