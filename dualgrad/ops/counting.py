"""Counting and bucketing (none differentiable): ``searchsorted``, ``bucketize``, ``unique``,
``unique_consecutive``, ``histc`` and ``bincount``.

``searchsorted`` and ``bucketize`` work inside ``vmap``; the others give results whose shape or range
depends on the values, so vmap refuses them.

>>> import dualgrad as dg
>>> dg.bucketize(dg.tensor([1, 5, 9]), dg.tensor([2, 4, 6, 8]))
tensor([0, 2, 4])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.dtypes import torch_dtype_name
from ..tensor import Tensor, _wrap
from ..vmap.batching import BatchedTensor
from ._axes import normalize_axis
from .dispatch import apply, tensor_arg
from .indexing import batch_at, batch_size
from .registry import nondifferentiable
from .surface import exported, public


def _searchsorted_impl(sequence: np.ndarray, values: np.ndarray, *, right: bool, dtype: np.dtype) -> np.ndarray:
    """Insertion points of ``values`` in the rows of ``sequence`` (1-d, or rows matching ``values``' rows)."""
    side = "right" if right else "left"
    if sequence.ndim == 1:
        return np.searchsorted(sequence, values, side=side).astype(dtype)
    rows = zip(sequence.reshape(-1, sequence.shape[-1]), values.reshape(-1, values.shape[-1]), strict=True)
    return np.stack([np.searchsorted(s, v, side=side) for s, v in rows]).reshape(values.shape).astype(dtype)


def _searchsorted_batch(args: list, bdims: list, **params: Any) -> tuple:
    """Every batch member at once: the batch axis first in both; a 1-d sequence takes each member's
    values as one row."""
    size = batch_size(args, bdims)
    sequence, values = (batch_at(a, b, 0, size) for a, b in zip(args, bdims, strict=True))
    if sequence.ndim == 2 and values.ndim != 2:
        return apply(SEARCHSORTED, sequence, values.reshape(size, -1), **params).reshape(values.shape), 0
    return apply(SEARCHSORTED, sequence, values, **params), 0


SEARCHSORTED = nondifferentiable("searchsorted", _searchsorted_impl, family="custom", batch=_searchsorted_batch)


@public(None, method=False)
def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,  # noqa: A002 - torch's names
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Tensor:
    """Indices where ``input`` would be inserted into ``sorted_sequence`` (sorted along its last
    dimension) to keep it sorted: before equal values, or after them with ``right=True`` /
    ``side='right'``. A sequence of several dimensions has one row per row of ``input``; ``sorter``
    gives the indices that sort an unsorted sequence. int64, or int32 with ``out_int32``.

    >>> import dualgrad as dg
    >>> s = dg.tensor([1, 3, 5, 7])
    >>> dg.searchsorted(s, dg.tensor([3, 6])), dg.searchsorted(s, dg.tensor([3, 6]), right=True)
    (tensor([1, 3]), tensor([2, 3]))
    """
    sequence = tensor_arg(sorted_sequence, "searchsorted")
    values = tensor_arg(input, "searchsorted")
    if side not in (None, "left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                           "while right was True")
    if sequence.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if sequence.ndim > 1 and sequence.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            "boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(sequence.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        sorter = tensor_arg(sorter, "searchsorted")
        if sorter.shape != sequence.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(sequence.shape)}and got sorter tensor {list(sorter.shape)}")
        sequence = sequence.take_along_dim(sorter, -1)
    dtype = np.dtype(np.int32 if out_int32 else np.int64)
    return apply(SEARCHSORTED, sequence.detach(), values.detach(), right=right or side == "right", dtype=dtype)


@public(None, method=False)
def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False,  # noqa: A002 - torch's name
              right: bool = False) -> Tensor:
    """The index of the bucket of each element of ``input`` among the sorted 1-d ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x < boundaries[i]``);
    ``searchsorted(boundaries, input, right=right)``.

    >>> import dualgrad as dg
    >>> dg.bucketize(dg.tensor([[3, 6], [9, 10]]), dg.tensor([1, 3, 5, 7, 9]), right=True)
    tensor([[2, 3],
            [5, 5]])
    """
    boundaries = tensor_arg(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _require(dtype: np.dtype, kinds: str, kernel: str) -> None:
    """torch's NotImplementedError for a kernel called on a dtype it has no implementation for."""
    if dtype.kind not in kinds:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_dtype_name(dtype)}\'')


def _unbatched(x: Any, fn: str) -> np.ndarray:
    """The data of ``x`` (a Tensor or number), refused inside vmap (for ops whose result shape varies)."""
    if type(x) is BatchedTensor:
        raise RuntimeError(f"vmap: {fn} is not supported inside vmap: the shape or the range of its result "
                           "depends on the values")
    return tensor_arg(x, fn)._data


@public(None, inplace=False)
def unique(input: Any, sorted: bool = True, return_inverse: bool = False,  # noqa: A002 - torch's names
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct elements of ``input`` (``dim=None``: flattened) or its distinct slices along ``dim``,
    sorted; with ``return_inverse`` also the index of each element (slice) in them, with
    ``return_counts`` how often each occurs. NaNs are all distinct, as torch's.

    >>> import dualgrad as dg
    >>> dg.unique(dg.tensor([3, 1, 2, 3, 1]), return_inverse=True, return_counts=True)
    (tensor([1, 2, 3]), tensor([2, 0, 1, 2, 0]), tensor([2, 1, 2]))
    """
    x = _unbatched(input, "unique")
    axis = None if dim is None else normalize_axis(dim, x.ndim, "unique")
    values, inverse, counts = np.unique(x if axis is not None else x.reshape(-1), return_inverse=True,
                                        return_counts=True, axis=axis, equal_nan=False)
    inverse = inverse.reshape(x.shape if axis is None else -1)
    return _results(values, inverse, counts, return_inverse, return_counts)


def _results(values: np.ndarray, inverse: np.ndarray, counts: np.ndarray, return_inverse: bool,
             return_counts: bool) -> Any:
    """``values``, or the tuple with the inverse and / or counts asked for (int64)."""
    extra = [a.astype(np.int64) for a, asked in ((inverse, return_inverse), (counts, return_counts)) if asked]
    return tuple(_wrap(a) for a in (values, *extra)) if extra else _wrap(values)


@public(None, inplace=False)
def unique_consecutive(input: Any, return_inverse: bool = False,  # noqa: A002 - torch's name
                       return_counts: bool = False, dim: int | None = None) -> Any:
    """``input`` (``dim=None``: flattened) with each run of equal consecutive elements (slices along
    ``dim``) kept once; ``return_inverse`` and ``return_counts`` as in ``unique``.

    >>> import dualgrad as dg
    >>> dg.unique_consecutive(dg.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 2]))
    """
    x = _unbatched(input, "unique_consecutive")
    axis = 0 if dim is None else normalize_axis(dim, x.ndim, "unique_consecutive")
    rows = np.moveaxis(x.reshape(-1) if dim is None else x, axis, 0)
    starts = np.ones(len(rows), dtype=bool)
    if len(rows) > 1:  # (NumPy cannot reshape an empty comparison to (0, -1))
        starts[1:] = (rows[1:] != rows[:-1]).reshape(len(rows) - 1, -1).any(axis=1)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), len(rows)))
    values = np.moveaxis(rows[starts], 0, axis)
    return _results(values, inverse.reshape(x.shape if dim is None else -1), counts, return_inverse, return_counts)


@public(None, inplace=False)
def histc(input: Any, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002 - torch's names
    """Counts of the elements of ``input`` (floating) in ``bins`` equal bins over ``[min, max]``, in
    its dtype; elements outside the range (and NaNs) are not counted. ``min == max`` (the default)
    takes the range of the data.

    >>> import dualgrad as dg
    >>> dg.histc(dg.tensor([1., 2., 1.]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    x = _unbatched(input, "histc")
    _require(x.dtype, "f", "histogram_cpu")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    low, high = min, max
    if low == high and x.size:
        finite = x[~np.isnan(x)]
        low, high = (finite.min(), finite.max()) if finite.size else (low, high)
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    if low == high:
        low, high = low - 1, high + 1
    counts, _ = np.histogram(x[~np.isnan(x)], bins=bins, range=(low, high))
    return _wrap(counts.astype(x.dtype))


@public(None, inplace=False)
def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """How often each value ``0, 1, ...`` occurs in ``input`` (1-d, non-negative integers), at least
    ``minlength`` counts; with ``weights`` (one per element), their sums instead (floating weights keep
    their dtype, others give float64).

    >>> import dualgrad as dg
    >>> dg.bincount(dg.tensor([0, 1, 1, 3])), dg.bincount(dg.tensor([0, 1, 1]), dg.tensor([.5, 1., 2.]))
    (tensor([1, 2, 0, 1]), tensor([0.5000, 3.0000]))
    """
    x = _unbatched(input, "bincount")
    _require(x.dtype, "iub", "bincount_cpu")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _wrap(np.bincount(x, minlength=minlength).astype(np.int64))
    w = _unbatched(weights, "bincount")
    if w.shape != x.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    return _wrap(np.bincount(x, weights=w, minlength=minlength).astype(dtype))


__all__ = exported(__name__)
