"""Tensor's device methods and properties: ``device``, ``is_cuda``, ``is_cpu``, ``to``, ``cpu``, ``cuda``.

dualgrad's tensors always live in host memory (see ``dualgrad.base.devices``): ``to`` changes the dtype
(or copies), ``cpu`` is the tensor itself, and any other device raises the AssertionError of a torch
built without it.
"""

from __future__ import annotations

from typing import Any

from ..base.devices import CPU, _type_name, check_device, is_device, unavailable
from ..base.devices import device as device_class
from ..tensor import Tensor
from .elementwise.core import clone, to_dtype


def _device_of(self: Any) -> device_class:
    """The device of this tensor: always ``device(type='cpu')``."""
    return CPU


def _to(self: Any, *args: Any, device: Any = None, dtype: Any = None, non_blocking: bool = False,
        copy: bool = False, memory_format: Any = None) -> Any:
    """This tensor with another dtype (and on a device: only the CPU exists), torch's three forms:
    ``to(dtype, non_blocking=False, copy=False)``, ``to(device=None, dtype=None, non_blocking=False,
    copy=False)`` and ``to(other, non_blocking=False, copy=False)`` (``other``'s dtype). It is ``self``
    when nothing changes, unless ``copy=True``; the conversion is differentiable.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1.5])
    >>> x.to(dg.float32), x.to("cpu", dg.int64), x.to(dg.tensor([1])), x.to("cpu") is x
    (tensor([1.5000], dtype=float32), tensor([1]), tensor([1]), True)
    >>> x.to("cuda")
    Traceback (most recent call last):
      ...
    AssertionError: to(): dualgrad runs on the CPU only; 'cuda' is not available (Torch not compiled with CUDA enabled)
    """
    invalid = TypeError(f"to() received an invalid combination of arguments - got "
                        f"({', '.join(_type_name(a) for a in args)})")
    positional = list(args)
    if positional and not isinstance(positional[0], bool):
        first = positional.pop(0)
        if isinstance(first, Tensor):
            dtype = first.dtype
        elif is_device(first) or (isinstance(first, int) and not isinstance(first, bool)):
            device = first
            if positional and not isinstance(positional[0], bool):
                if is_device(positional[0]):
                    raise invalid
                dtype = positional.pop(0)
        else:
            dtype = first
    if not all(isinstance(a, bool) for a in positional) or len(positional) > 2:
        raise invalid
    if len(positional) == 2:
        copy = positional[1]
    check_device("to", device if not isinstance(device, int) or isinstance(device, bool) else f"cuda:{device}")
    result = self if dtype is None else to_dtype(self, dtype)
    return clone(result) if copy and result is self else result


def _cpu(self: Any, memory_format: Any = None) -> Any:
    """This tensor (dualgrad's tensors always live in host memory, as torch's CPU tensors)."""
    return self


def _cuda(self: Any, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Any:
    """torch's copy to a GPU: an AssertionError here, as in a torch built without CUDA (dualgrad runs on
    the CPU); see ``dg.cuda.is_available()``."""
    raise unavailable("cuda", device_class("cuda" if device is None else f"cuda:{device}"
                                           if isinstance(device, int) else device))


METHODS = {"to": _to, "cpu": _cpu, "cuda": _cuda}
PROPERTIES = {
    "device": property(_device_of, doc="The device of this tensor: always ``device(type='cpu')``."),
    "is_cuda": property(lambda self: False, doc="False: dualgrad runs on the CPU."),
    "is_cpu": property(lambda self: True, doc="True: dualgrad runs on the CPU."),
}
