"""Forward-mode engine: push tangents through one op call (filled in by the forward-mode issue)."""

from __future__ import annotations

from typing import Any


def propagate_tangents(op: Any, args: tuple, params: dict, out: Any) -> None:
    """Attach to ``out`` the tangents of every active dual level at which an input has one."""
    raise NotImplementedError("forward-mode AD is not implemented yet")
