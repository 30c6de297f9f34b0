"""Axis-argument normalization shared by reductions and shape ops."""

from __future__ import annotations

import operator
from typing import Any

from ..base.checks import normalize_dim as normalize_axis


def normalize_axes(axis: Any, ndim: int, op: str = "op") -> tuple | None:
    """``None`` (all axes) or a sorted tuple of non-negative axes (``()`` for a 0-d tensor: 0 and -1 are
    accepted, as in torch, but name no axis of its array)."""
    if axis is None:
        return None
    if type(axis) is int and -ndim <= axis < ndim:  # (one valid axis, ``x.logsumexp(0)``: what the rest gives)
        return (axis + ndim if axis < 0 else axis,)
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (axis,)
    elif isinstance(axis, (str, bytes, dict, set, frozenset)) or not hasattr(axis, "__iter__"):
        raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, not {type(axis).__name__}")
    axes = [normalize_axis(tuple_int(a, i, op, "dim"), ndim, op) for i, a in enumerate(axis)]
    _check_distinct(axes)
    return tuple(sorted(axes)) if ndim else ()


def tuple_int(value: Any, position: int, op: str, arg: str) -> int:
    """Element ``position`` of ``op``'s tuple argument ``arg`` as an int (an integer or a one-element
    integer Tensor), else torch's TypeError."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, but found element of type "
                        f"{type(value).__name__} at pos {position}") from None


def _check_distinct(axes: list) -> None:
    """torch's RuntimeError when a dimension is named twice (after wrapping negative ones)."""
    seen = set()
    for axis in axes:
        if axis in seen:
            raise RuntimeError(f"dim {axis} appears multiple times in the list of dims")
        seen.add(axis)


def pick_axis(dim: Any, axis: Any) -> Any:
    """Accept torch's ``dim=`` and NumPy's ``axis=`` spellings (not both)."""
    if dim is not None and axis is not None:
        raise TypeError("pass either 'dim' or 'axis', not both")
    return axis if dim is None else dim


def pick_keepdims(keepdim: Any, keepdims: Any) -> bool:
    """Accept torch's ``keepdim=`` and NumPy's ``keepdims=`` spellings."""
    return bool(keepdims) if keepdims is not None else bool(keepdim)
