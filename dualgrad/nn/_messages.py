"""Shapes and sizes written as torch writes them in its messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def dims(shape: Sequence[int]) -> str:
    """``[2, 3]``: a shape as torch's C++ errors print it."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


def torch_size(shape: Sequence[int]) -> str:
    """``torch.Size([2, 3])``: a shape as torch's Python errors print it."""
    return f"torch.Size({dims(shape)})"


def int_tuple(value: Any, n: int) -> tuple[int, ...]:
    """A layer's size argument (an int, or a sequence of ints with one entry for every dimension, or one)."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    return value * n if len(value) == 1 else value
