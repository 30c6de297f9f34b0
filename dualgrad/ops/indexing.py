"""Indexing: ``x[index]`` and its transpose, a scatter-add into zeros."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .dispatch import apply
from .registry import linear


def _is_basic(index: tuple) -> bool:
    """True when ``index`` has only ints, slices, None and Ellipsis (a view, no repeats)."""
    return all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis for i in index)


def _scatter_add_impl(g: np.ndarray, shape: tuple, index: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    if _is_basic(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


GETITEM = linear("getitem", lambda x, index: x[index],
                 (lambda g, out, x, index: apply(INDEX_ADD_INTO_ZEROS, g, shape=x.shape, index=index),),
                 family="indexing", grad_name="IndexBackward0")
INDEX_ADD_INTO_ZEROS = linear("index_add_into_zeros", _scatter_add_impl,
                              (lambda g, out, x, shape, index: apply(GETITEM, g, index=index),),
                              family="indexing")


def normalize_index(index: Any) -> tuple:
    """A tuple index with Tensors replaced by their arrays (bool masks stay masks)."""
    if not isinstance(index, tuple):
        index = (index,)
    return tuple(
        i._data if isinstance(i, Tensor) else (np.asarray(i) if isinstance(i, list) else i)
        for i in index
    )


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` for ints, slices, Ellipsis, None, bool masks and integer arrays.

    >>> import dualgrad as dg
    >>> dg.getitem(dg.arange(5.), slice(1, None, 2))
    tensor([1., 3.])
    """
    index = normalize_index(index)
    try:
        return apply(GETITEM, x, index=index)
    except IndexError as err:
        raise IndexError(f"getitem: invalid index for a tensor of shape {x.shape}: {err}") from None


METHODS: dict[str, Any] = {"__getitem__": getitem}
__all__ = ["getitem"]
