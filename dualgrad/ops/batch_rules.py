"""Helpers for writing vmap batching rules (``Op.batch``).

A batching rule has the signature ``batch(args, bdims, **params) -> (out,
out_bdim)``: ``args`` are the physical values (Tensors carrying the batch
dimension, or constants), ``bdims[i]`` is the batch axis of ``args[i]`` or
``NOT_BATCHED``. The rule calls dualgrad ops once for the whole batch and says
where the batch axis of its result is (a tuple of bdims for multi-output ops).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .dispatch import apply
from .shape import PERMUTE

NOT_BATCHED = None


def to_front(x: Any, bdim: int | None) -> Any:
    """``x`` with its batch axis moved to position 0 (unchanged if not batched or already there)."""
    if bdim is NOT_BATCHED or bdim == 0 or not isinstance(x, Tensor):
        return x
    axes = (bdim,) + tuple(i for i in range(x.ndim) if i != bdim)
    return apply(PERMUTE, x, axes=axes)
