"""Devices: ``dg.device``, ``Tensor.device``/``.to``/``.cpu``/``.cuda`` and the device check of factories.

dualgrad computes with NumPy in host memory, so ``cpu`` is its only device. ``dg.device`` parses and
prints every device string torch does (``"cuda:1"`` is a valid name), but asking for a tensor on any
device other than the CPU raises the AssertionError a torch built without CUDA raises, saying that
dualgrad runs on the CPU. Code that checks for a GPU (``dg.cuda.is_available()``) and falls back to the
CPU therefore runs unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_device", "device", "install", "unavailable"]

DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:  # noqa: N801 - torch's name
    """A device name, as ``torch.device``: a ``type`` (``'cpu'``, ``'cuda'``, ...) and an optional ``index``.

    Given as ``device("cpu")``, ``device("cuda:1")``, ``device("cuda", 1)`` or another device. Two devices
    are equal when type and index are (``cpu`` and ``cpu:0`` are not, as in torch).

    >>> import dualgrad as dg
    >>> dg.device("cpu"), dg.device("cpu:0"), str(dg.device("cuda", 1))
    (device(type='cpu'), device(type='cpu', index=0), 'cuda:1')
    >>> dg.tensor([1.0]).device == dg.device("cpu")
    True
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type: Any, index: int | None = None):  # noqa: A002 - torch's name
        if isinstance(type, device):
            if index is not None:
                raise RuntimeError("device(): a device and an index cannot be given together")
            self._type, self._index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({_type_name(type)}), but expected one of:\n * (torch.device device)\n"
                            " * (str type, int index = -1)")
        name, _, number = type.partition(":")
        if name not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                               f"{type}")
        if number:
            if not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            index = int(number)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self._type, self._index = name, index

    @property
    def type(self) -> str:
        return self._type

    @property
    def index(self) -> int | None:
        return self._index

    def __repr__(self) -> str:
        index = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self._type}'{index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and (self._type, self._index) == (other._type, other._index)

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self) -> tuple:
        return (device, (str(self),))

    def __enter__(self) -> device:
        check_device("device", self)
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _type_name(value: Any) -> str:
    return type(value).__name__


CPU = device("cpu")


def is_device(value: Any) -> bool:
    """True for a ``device`` or a string naming one (``'cpu'``, ``'cuda:0'``)."""
    return isinstance(value, device) or (isinstance(value, str) and value.partition(":")[0] in DEVICE_TYPES)


def check_device(fn: str, value: Any) -> None:
    """Nothing for ``None`` and the CPU (any index, as torch's CPU); for any other device the AssertionError of
    a torch built without it, saying that dualgrad runs on the CPU.

    >>> from dualgrad._devices import check_device
    >>> check_device("zeros", "cpu")
    >>> check_device("eye", "cuda")
    Traceback (most recent call last):
      ...
    AssertionError: eye(): dualgrad runs on the CPU only; 'cuda' is not available (Torch not compiled with CUDA enabled)
    """
    if value is None:
        return
    parsed = value if isinstance(value, device) else device(value)
    if parsed.type != "cpu":
        raise unavailable(fn, parsed)


def unavailable(fn: str, where: device) -> AssertionError:
    """The error for a tensor asked on ``where``, not the CPU."""
    kind = where.type.upper()
    return AssertionError(f"{fn}(): dualgrad runs on the CPU only; '{where}' is not available (Torch not compiled "
                          f"with {kind} enabled)")


# -- Tensor methods --------------------------------------------------------------------------------

def _device_of(self: Any) -> device:
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
    from .ops.elementwise import clone, to_dtype
    from .tensor import Tensor

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
    raise unavailable("cuda", globals()["device"]("cuda" if device is None else f"cuda:{device}"
                                                  if isinstance(device, int) else device))


def install(tensor_class: type) -> None:
    """Put ``device``, ``to``, ``cpu``, ``cuda``, ``is_cuda`` and ``is_cpu`` on the Tensor class."""
    tensor_class.device = property(_device_of, doc="The device of this tensor: always ``device(type='cpu')``.")
    tensor_class.is_cuda = property(lambda self: False, doc="False: dualgrad runs on the CPU.")
    tensor_class.is_cpu = property(lambda self: True, doc="True: dualgrad runs on the CPU.")
    tensor_class.to = _to
    tensor_class.cpu = _cpu
    tensor_class.cuda = _cuda
