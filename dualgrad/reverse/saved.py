"""Saved tensors: what a graph node keeps for its backward rule.

A node never holds its own output Tensor (that would be a reference cycle
node -> output -> node); it keeps the output's raw data, version counter and
tangents, and rebuilds a Tensor pointing back at the node when unpacked.
Every unpack checks the version counter, so an in-place change after the save
raises instead of silently giving a wrong gradient.
"""

from __future__ import annotations

from typing import Any

from .._state import STATE
from ..tensor import Tensor, _wrap

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
                 "_requires_grad", "_hooks", "_packed", "_shape", "_freed")

    def __init__(self, tensor: Tensor, is_output: bool = False):
        self._is_output = is_output
        self._counter = counter = tensor._version_counter()
        self._version = counter.value
        self._shape = tensor._data.shape
        self._freed = False
        self._hooks = hooks = _active_hooks()
        if hooks is not None:
            self._packed = hooks[0](tensor)
            self._tensor = self._data = self._fw = None
            self._requires_grad = False
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
        if self._counter.value != self._version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{self._dtype_name()} {tuple(self._shape)}], needed by "
                f"{node.name() if node is not None else 'a backward function'}, is at version "
                f"{self._counter.value}; expected version {self._version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with dualgrad.autograd.set_detect_anomaly(True)."
            )
        if self._hooks is not None:
            tensor = self._hooks[1](self._packed)
            if not isinstance(tensor, Tensor) or tensor.shape != self._shape:
                got = tensor.shape if isinstance(tensor, Tensor) else type(tensor).__name__
                raise RuntimeError(
                    f"unpack hook returned {got} but a tensor of shape {tuple(self._shape)} "
                    "was packed; unpack_hook(pack_hook(t)) must have t's shape"
                )
            return tensor
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

    def _dtype_name(self) -> str:
        if self._tensor is not None:
            return str(self._tensor.dtype)
        return str(self._data.dtype) if self._data is not None else "tensor"

    def raw(self) -> "SavedTensor":
        return self

    def release(self) -> None:
        """Drop the saved value (after a backward without ``retain_graph``)."""
        self._freed = True
        self._tensor = self._data = self._fw = self._packed = None


def _active_hooks() -> tuple | None:
    hooks = STATE.saved_tensor_hooks
    if not hooks:
        return None
    if STATE.saved_hooks_disabled is not None:
        raise RuntimeError(STATE.saved_hooks_disabled)
    return hooks[-1]
