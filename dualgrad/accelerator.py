"""``torch.accelerator`` on a machine without accelerators: dualgrad computes on the CPU.

>>> import dualgrad as dg
>>> dg.accelerator.current_accelerator() is None, dg.accelerator.is_available()
(True, False)
"""

from __future__ import annotations

from typing import Any

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    """False: there is no accelerator."""
    return False


def current_accelerator(check_available: bool = False) -> Any:
    """None: there is no accelerator."""
    return None


def device_count() -> int:
    """0: there is no accelerator."""
    return 0
