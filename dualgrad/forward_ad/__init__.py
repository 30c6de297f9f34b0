"""Forward-mode AD (``torch.autograd.forward_ad``): dual tensors and nested dual levels.

>>> import dualgrad as dg
>>> from dualgrad import forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(dg.tensor(2.0), dg.tensor(1.0))
...     fwAD.unpack_dual(x ** 3).tangent
tensor(12.)
"""

from .api import (
    UnpackedDualTensor,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)

__all__ = [
    "UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
    "make_dual", "unpack_dual",
]
