"""Batching rules (vmap) that come from an op's family, and helpers for writing rules.

A batching rule has the signature ``batch(args, bdims, **params) -> (out,
out_bdim)``: ``args`` are the physical values (Tensors carrying the batch
dimension, or constants), ``bdims[i]`` is the batch axis of ``args[i]`` or
``NOT_BATCHED``. The rule calls dualgrad ops once for the whole batch and says
where the batch axis of its result is (a tuple of bdims for multi-output ops).

An op without its own ``batch`` gets its family's rule (registered here into
``dualgrad.vmap.batching.family_rules``):

* ``elementwise`` (broadcasting ops): inputs whose batch axes already line up
  (batched inputs of full rank with the batch axis at the same place, unbatched
  ones not reaching back to it) go as they are, with no permute or reshape;
  otherwise batch axes go first, and a batched input of lower rank than the
  result gets size-1 axes after its batch axis, so that NumPy broadcasting
  lines up the logical axes;
* ``reduction`` (ops with ``axis`` (None, an int or a tuple) and ``keepdims``
  params): the batch axis goes first and the reduced axes shift by one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.dtypes import FLOATING_DTYPES
from ..tensor import Tensor
from ..vmap import batching
from ..vmap.batching import rule_for
from .dispatch import apply
from .promotion import result_type

NOT_BATCHED = None

__all__ = ["NOT_BATCHED", "elementwise_batch", "reduction_batch", "rule_for", "to_front"]


def to_front(x: Any, bdim: int | None) -> Any:
    """``x`` with its batch axis moved to position 0 (unchanged if not batched or already there).

    Uses the Tensor method, so that the shape module may import this one.
    """
    if bdim is NOT_BATCHED or bdim == 0 or not isinstance(x, Tensor):
        return x
    return x.permute((bdim,) + tuple(i for i in range(x.ndim) if i != bdim))


_SCALARS = (int, float, bool, complex)


def _logical_ndim(x: Any, bdim: int | None) -> int:
    """The rank of ``x`` as the op sees it (without its batch axis)."""
    if isinstance(x, Tensor):
        return x.ndim - (bdim is not NOT_BATCHED)
    return 0 if type(x) in _SCALARS else np.ndim(x)


def _shared_bdim(args: list, bdims: list) -> int | None:
    """The batch axis with which a broadcasting op can run on ``args`` as they are, else None.

    That is when every batched input has its batch axis at the same place ``b``
    and the full rank, and no unbatched input reaches back to axis ``b`` when
    broadcast against them (its rank is at most the number of axes after ``b``).
    """
    common = rank = None
    widest = 0  # the largest rank of an unbatched input
    for a, b in zip(args, bdims, strict=True):
        if b is NOT_BATCHED:
            r = a.ndim if isinstance(a, Tensor) else 0 if type(a) in _SCALARS else np.ndim(a)
            if r > widest:
                widest = r
        elif common is None:
            common, rank = b, a.ndim - 1
        elif b != common or a.ndim - 1 != rank:
            return None
    return None if common is None or widest > rank - common else common


def _one_floating_dtype(operands: list) -> bool:
    """True if the Tensors among ``operands`` share one floating dtype and the rest are Python
    floats and ints: then the operands' ranks cannot change the result dtype (the common case)."""
    dtype = None
    for x in operands:
        if isinstance(x, Tensor):
            if dtype is None:
                dtype = x.dtype
            elif x.dtype is not dtype:
                return False
        elif type(x) is not float and type(x) is not int:
            return False
    return dtype in FLOATING_DTYPES


def _logical_promotion(op: Any, args: list, bdims: list) -> list:
    """``args`` with the Tensors cast to the dtype ``op`` gives the logical (per-example) operands.

    A batched operand that is 0-d per example is physically dimensioned, which type
    promotion ranks higher: ``x * w`` for a per-example float64 ``x`` and a float32
    ``w`` must give float32, as it does outside vmap (and in torch.func.vmap).
    """
    start = op.promotion
    if start is None or _one_floating_dtype(args[start:]):
        return args
    if all(b is NOT_BATCHED or a.ndim > 1 for a, b in zip(args, bdims, strict=True)):
        return args
    logical = [np.empty((1,) * min(_logical_ndim(a, b), 1), a.dtype) if isinstance(a, Tensor) else a
               for a, b in zip(args[start:], bdims[start:], strict=True)]
    dtype = result_type(*logical)
    return [a.to(dtype) if i >= start and isinstance(a, Tensor) and a.dtype != dtype else a
            for i, a in enumerate(args)]


def elementwise_batch(op: Any, args: list, bdims: list, **params: Any) -> tuple:
    """The family rule of broadcasting ops: one call on rank-aligned inputs.

    Inputs whose batch axes line up already (``_shared_bdim``, the common case)
    go as they are. Otherwise batch axes go first, and a batched input of lower
    rank than the result gets size-1 axes after its batch axis.
    """
    args = _logical_promotion(op, args, bdims)
    bdim = _shared_bdim(args, bdims)
    if bdim is not None:
        return apply(op, *args, **params), bdim
    return apply(op, *aligned_at_front(args, bdims), **params), 0


def aligned_at_front(args: list, bdims: list) -> list:
    """``args`` ready to broadcast with one leading batch axis: batch axes go first, and a batched
    input of lower rank than the widest gets size-1 axes after its batch axis."""
    rank = max(_logical_ndim(a, b) for a, b in zip(args, bdims, strict=True))
    aligned = list(args)
    for i, (x, b) in enumerate(zip(args, bdims, strict=True)):
        if b is not NOT_BATCHED:
            x = to_front(x, b)
            missing = rank - (x.ndim - 1)
            if missing:
                x = x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])
            aligned[i] = x
    return aligned


def reduction_batch(op: Any, args: list, bdims: list, *, axis: Any, **params: Any) -> tuple:
    """The family rule of one-input reductions: batch axis first, reduced axes shifted by one."""
    x = to_front(args[0], bdims[0])
    if axis is None:
        axis = tuple(range(1, x.ndim))
    elif isinstance(axis, tuple):
        axis = tuple(a + 1 if a >= 0 else a for a in axis)
    else:
        axis = axis + 1 if axis >= 0 else axis
    return apply(op, x, *args[1:], axis=axis, **params), 0


batching.family_rules["elementwise"] = elementwise_batch
batching.family_rules["reduction"] = reduction_batch
