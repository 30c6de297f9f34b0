"""Mirror of the ``torch.autograd`` namespace: port code by changing its imports.

>>> from dualgrad import autograd
>>> autograd.grad is __import__("dualgrad").grad
True
"""

import sys

from . import forward_ad, functional, graph
from .profiler import autograd_profiler as profiler
from .reverse import anomaly as anomaly_mode
from .reverse import (
    backward,
    enable_grad,
    grad,
    grad_mode,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .reverse.anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .reverse.grad_mode import is_multithreading_enabled, set_multithreading_enabled
from .tools.gradcheck import GradcheckError, gradcheck, gradgradcheck
from .transforms import function
from .transforms.function import Function, FunctionCtx, once_differentiable
from .variable import Variable

# ``from dualgrad.autograd.profiler import profile``, ``import dualgrad.autograd.forward_ad as fwAD``
# and ``...autograd.gradcheck import ...`` work as in torch; the attribute ``autograd.gradcheck``
# is the function, as in torch.
for _name in ("profiler", "functional", "graph", "forward_ad", "function", "grad_mode", "anomaly_mode"):
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
sys.modules[__name__ + ".gradcheck"] = sys.modules[gradcheck.__module__]

__all__ = [
    "Function", "FunctionCtx", "Variable", "backward", "enable_grad", "forward_ad", "functional", "grad", "graph",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "once_differentiable", "set_grad_enabled", "function",
    "GradcheckError", "detect_anomaly", "gradcheck", "gradgradcheck", "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled", "profiler", "set_detect_anomaly", "anomaly_mode", "grad_mode",
    "is_multithreading_enabled", "set_multithreading_enabled",
]
