"""Mirror of the ``torch.autograd`` namespace: port code by changing its imports.

>>> from dualgrad import autograd
>>> autograd.grad is __import__("dualgrad").grad
True
"""

from .reverse import (
    backward, enable_grad, grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
    no_grad, set_grad_enabled,
)
from .reverse import node as graph  # replaced by dualgrad.graph when it exists
from .variable import Variable
from . import forward_ad, functional

__all__ = [
    "Variable", "backward", "enable_grad", "forward_ad", "functional", "grad", "graph",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "set_grad_enabled",
]
