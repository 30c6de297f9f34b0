"""Reverse mode: graph nodes, saved tensors, the backward engine, grad modes, hooks."""

from .api import backward, grad
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .node import AccumulateGrad, Node

__all__ = [
    "AccumulateGrad", "Node", "backward", "enable_grad", "grad", "inference_mode",
    "is_grad_enabled", "is_inference_mode_enabled", "no_grad", "set_grad_enabled",
]
