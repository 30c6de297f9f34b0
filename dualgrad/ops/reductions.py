"""Reductions over axes: sum, mean, and the other reductions of the op table."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ._axes import normalize_axes, pick_axis, pick_keepdims
from .dispatch import apply
from .registry import linear


def expand_reduced(g: Tensor, shape: tuple, axis: tuple | None, keepdims: bool) -> Tensor:
    """Broadcast a reduced gradient ``g`` back to the input ``shape``."""
    if not keepdims and shape:
        axes = range(len(shape)) if axis is None else axis
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        g = g.reshape(tuple(kept))
    return g.expand(shape) if g.shape != shape else g


def _count(shape: tuple, axis: tuple | None) -> int:
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


SUM = linear("sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
             (lambda g, out, x, axis, keepdims: expand_reduced(g, x.shape, axis, keepdims),),
             family="reduction")
MEAN = linear("mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
              (lambda g, out, x, axis, keepdims:
               expand_reduced(g, x.shape, axis, keepdims) / max(_count(x.shape, axis), 1),),
              family="reduction")


def _reduce_args(x: Any, dim: Any, axis: Any, keepdim: Any, keepdims: Any, name: str) -> dict:
    ndim = np.ndim(x._data if isinstance(x, Tensor) else x)
    return {"axis": normalize_axes(pick_axis(dim, axis), ndim, name),
            "keepdims": pick_keepdims(keepdim, keepdims)}


def sum(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,  # noqa: A001
        keepdims: bool | None = None, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (all axes when None); ``axis``/``keepdims`` are NumPy's spellings.

    >>> import dualgrad as dg
    >>> dg.sum(dg.tensor([[1., 2.], [3., 4.]]), dim=0)
    tensor([4., 6.])
    """
    if dtype is not None:
        x = x.to(dtype)
    return apply(SUM, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "sum"))


def mean(x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
         keepdims: bool | None = None, dtype: Any = None) -> Tensor:
    """Arithmetic mean over ``dim`` (all axes when None).

    >>> import dualgrad as dg
    >>> dg.mean(dg.tensor([[1., 2.], [3., 4.]]), dim=1)
    tensor([1.5000, 3.5000])
    """
    if dtype is not None:
        x = x.to(dtype)
    return apply(MEAN, x, **_reduce_args(x, dim, axis, keepdim, keepdims, "mean"))


METHODS: dict[str, Any] = {"sum": sum, "mean": mean}
__all__ = ["mean", "sum"]
