"""Axis-argument normalization shared by reductions and shape ops."""

from __future__ import annotations

from typing import Any


def normalize_axis(axis: int, ndim: int, op: str = "op") -> int:
    """``axis`` as a non-negative int, or IndexError naming the op and the range."""
    if not -ndim <= axis < max(ndim, 1):
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
            f"{max(ndim, 1) - 1}], but got {axis})"
        )
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, op: str = "op") -> tuple | None:
    """``None`` (all axes) or a sorted tuple of non-negative axes."""
    if axis is None:
        return None
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (int(axis),)
    axes = tuple(sorted({normalize_axis(int(a), ndim, op) for a in axis}))
    return axes


def pick_axis(dim: Any, axis: Any) -> Any:
    """Accept torch's ``dim=`` and NumPy's ``axis=`` spellings (not both)."""
    if dim is not None and axis is not None:
        raise TypeError("pass either 'dim' or 'axis', not both")
    return axis if dim is None else dim


def pick_keepdims(keepdim: Any, keepdims: Any) -> bool:
    """Accept torch's ``keepdim=`` and NumPy's ``keepdims=`` spellings."""
    return bool(keepdims) if keepdims is not None else bool(keepdim)
