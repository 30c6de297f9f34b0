"""Axis-argument normalization shared by reductions and shape ops."""

from __future__ import annotations

from typing import Any

from ..tensor import normalize_dim as normalize_axis  # the one range check, shared with Tensor.size


def normalize_axes(axis: Any, ndim: int, op: str = "op") -> tuple | None:
    """``None`` (all axes) or a sorted tuple of non-negative axes (``()`` for a 0-d tensor: 0 and -1 are
    accepted, as in torch, but name no axis of its array)."""
    if axis is None:
        return None
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (int(axis),)
    axes = tuple(sorted({normalize_axis(int(a), ndim, op) for a in axis}))
    return axes if ndim else ()


def pick_axis(dim: Any, axis: Any) -> Any:
    """Accept torch's ``dim=`` and NumPy's ``axis=`` spellings (not both)."""
    if dim is not None and axis is not None:
        raise TypeError("pass either 'dim' or 'axis', not both")
    return axis if dim is None else dim


def pick_keepdims(keepdim: Any, keepdims: Any) -> bool:
    """Accept torch's ``keepdim=`` and NumPy's ``keepdims=`` spellings."""
    return bool(keepdims) if keepdims is not None else bool(keepdim)
