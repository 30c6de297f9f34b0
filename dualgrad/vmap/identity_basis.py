"""Identity bases of Jacobians, which matmul's batching rule recognises instead of multiplying by them.

``jacfwd`` and ``jacobian(..., vectorize=True)`` push the columns of an identity
through the function at once (a batch of basis tangents or cotangents). Its
block for one input is ``E`` of shape ``(n, *x.shape)``: ``E.reshape(n, size)``
holds the columns ``start:start + size`` of ``eye(n)``. A product ``A @ E_b``
for every batch member b is then ``A``'s columns, spread over the batch; the
batching rule of ``matmul`` builds that from ``A`` (``identity_block_start``
tells it whether an operand is such a block) instead of running a GEMM.

The mark lives in a registry keyed by the block's ndarray, weakly: an entry
dies with its array, so an address reused by a later array is not mistaken for
it. A physical operand is taken for a block only when it is exactly what
``identity_blocks`` made (the same ndarray object, checked with ``is``, with
the same shape, dtype and strides; a plain Tensor that does not require grad
and has no tangent and is not a view), and when its values still are the
identity's: they are checked on use (``size`` non-zeros, all of them ones at the
right places; O(n * size), against the O(n * size * m) product it replaces), so
a block changed in place (``x.mul_(2)`` on a dual input writes into its tangent)
is an ordinary operand again. Views, copies and other arrays are never marked.

>>> import dualgrad as dg
>>> e, f = identity_blocks([dg.zeros(2), dg.zeros(1)])
>>> e
tensor([[1., 0.],
        [0., 1.],
        [0., 0.]])
>>> identity_block_start(e), identity_block_start(f), identity_block_start(e.clone())
(0, 2, None)
"""

from __future__ import annotations

import math
import weakref
from typing import Any, NamedTuple

import numpy as np

from .. import fastpath
from ..tensor import Tensor, _wrap


class _Entry(NamedTuple):
    """What ``identity_blocks`` made: the array (weakly) and the layout it had."""

    ref: weakref.ref
    start: int
    shape: tuple
    dtype: np.dtype
    strides: tuple


# id(array) -> _Entry; the weak reference's callback removes the entry when the array dies
_REGISTRY: dict[int, _Entry] = {}


def _forget(key: int) -> Any:
    def callback(ref: weakref.ref) -> None:
        entry = _REGISTRY.get(key)
        if entry is not None and entry.ref is ref:
            del _REGISTRY[key]

    return callback


def _identity_block(n: int, start: int, shape: tuple, dtype: Any) -> Tensor:
    """Columns ``start:start + size`` of ``eye(n)`` as an ``(n, *shape)`` Tensor, registered as such."""
    data = np.eye(n, math.prod(shape), -start, dtype=dtype).reshape((n, *shape))
    key = id(data)
    _REGISTRY[key] = _Entry(weakref.ref(data, _forget(key)), start, data.shape, data.dtype, data.strides)
    return _wrap(data)


def identity_blocks(like: list) -> list[Tensor]:
    """The identity of size ``n = sum(x.numel())`` split by columns into ``(n, *x.shape)`` blocks.

    One block per tensor of ``like``, in its dtype: the basis of a Jacobian
    (tangents for forward mode, cotangents for reverse mode).
    """
    n = sum(x.numel() for x in like)
    blocks, start = [], 0
    for x in like:
        blocks.append(_identity_block(n, start, tuple(x.shape), x.dtype))
        start += x.numel()
    return blocks


def _untracked(t: Tensor) -> bool:
    """A plain Tensor outside every graph and without tangents (its own derivatives are not needed)."""
    fw = t._fw
    return (not t._requires_grad and t._view is None
            and (fw is None or all(tangent is None for tangent in fw.values())))


def _holds_identity(data: np.ndarray, start: int) -> bool:
    """True if ``data`` (C-contiguous) still holds the columns ``start:start + size`` of ``eye(n)``.

    The non-zeros are counted on the bits (unsigned words, one per real number:
    NumPy counts those several times faster than floats); a ``-0.0`` counts, so a
    block holding one is refused, which is safe.
    """
    columns = data.reshape(data.shape[0], math.prod(data.shape[1:]))
    word = data.itemsize // 2 if data.dtype.kind == "c" else data.itemsize
    return (np.count_nonzero(columns.view(f"u{word}")) == columns.shape[1]
            and bool((columns.diagonal(-start) == 1).all()))


def identity_block_start(t: Any) -> int | None:
    """``start`` if ``t`` is a block of ``identity_blocks``, unchanged and untracked; else None.

    The batch members of such a block are the unit tensors ``E_b`` with a one
    at flat position ``b - start`` (none for ``b`` outside ``start:start + size``).
    """
    if type(t) is not Tensor or not fastpath.ENABLED:  # (a fast path: matmul's rule skips the product)
        return None
    data = t._data
    entry = _REGISTRY.get(id(data))
    if (entry is None or entry.ref() is not data or data.shape != entry.shape or data.dtype != entry.dtype
            or data.strides != entry.strides or not _untracked(t)):
        return None
    return entry.start if _holds_identity(data, entry.start) else None

