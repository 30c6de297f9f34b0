"""``torch.cuda``'s questions answered for a machine without GPUs: dualgrad runs on the CPU.

Code that checks for a GPU and falls back runs unchanged:

>>> import dualgrad as dg
>>> device = "cuda" if dg.cuda.is_available() else "cpu"
>>> dg.zeros(2, device=device).device
device(type='cpu')
"""

from __future__ import annotations

from .base.devices import device as _device
from .base.devices import unavailable

__all__ = ["current_device", "device_count", "empty_cache", "is_available", "is_initialized", "manual_seed",
           "manual_seed_all", "synchronize"]


def is_available() -> bool:
    """False: dualgrad computes on the CPU."""
    return False


def device_count() -> int:
    """0: no GPU is used."""
    return 0


def is_initialized() -> bool:
    """False, as in a torch without CUDA."""
    return False


def manual_seed(seed: int) -> None:
    """Ignored, as torch ignores it without CUDA (seed the CPU generator with ``dg.manual_seed``)."""


def manual_seed_all(seed: int) -> None:
    """Ignored, as torch ignores it without CUDA."""


def empty_cache() -> None:
    """Nothing to free, as in a torch without CUDA."""


def current_device() -> int:
    """The AssertionError of a torch without CUDA."""
    raise unavailable("cuda.current_device", _device("cuda"))


def synchronize(device: object = None) -> None:
    """The AssertionError of a torch without CUDA."""
    raise unavailable("cuda.synchronize", _device("cuda"))
