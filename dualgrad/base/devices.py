"""Devices: ``dg.device`` and the device check of factories (the Tensor methods are in ``ops/devices.py``).

dualgrad computes with NumPy in host memory, so ``cpu`` is its only device. ``dg.device`` parses and
prints every device string torch does (``"cuda:1"`` is a valid name), but asking for a tensor on any
device other than the CPU raises the AssertionError a torch built without CUDA raises, saying that
dualgrad runs on the CPU. Code that checks for a GPU (``dg.cuda.is_available()``) and falls back to the
CPU therefore runs unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_device", "device", "unavailable"]

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

    >>> from dualgrad.base.devices import check_device
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
