"""Sorting: ``argsort`` (not differentiable) and ``sort``, a gather along its result.

``sort`` is not an op of its own: its values are ``take_along_dim(x, argsort(x))``,
so the gradient of each sorted element goes back to the position it came from
(tied elements: to the one the stable sort put there). ``cummax`` and ``cummin``
gather in the same way along the indices of their running extremes.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..tensor import Tensor
from ._axes import normalize_axis
from .dispatch import apply, tensor_arg
from .indexing import take_along_dim
from .reductions import ValuesIndices
from .registry import nondifferentiable
from .shape.core import flip, reshape
from .surface import exported, public


def _argsort_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    return np.argsort(x, axis=axis, kind="stable")


# The "reduction" family's batching rule shifts the integer ``axis`` past the batch axis.
ARGSORT = nondifferentiable("argsort", _argsort_impl, family="reduction")


def _running_index(extreme: np.ufunc, x: np.ndarray, *, axis: int) -> np.ndarray:
    """The index of the running maximum (``extreme`` ``np.maximum``) or minimum along ``axis``, as torch's:
    of tied values the last, and from the first NaN on, the last NaN (NaN propagates).

    The candidates are the positions whose element equals the running extreme (or is NaN); the
    running extreme of position ``i`` is at the last candidate up to ``i``.
    """
    positions = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
    candidate = (x == extreme.accumulate(x, axis=axis)) | (x != x)
    return np.maximum.accumulate(np.where(candidate, positions, 0), axis=axis)


CUMMAX_INDICES = nondifferentiable("cummax_indices", partial(_running_index, np.maximum), family="reduction")
CUMMIN_INDICES = nondifferentiable("cummin_indices", partial(_running_index, np.minimum), family="reduction")


def _running_extreme(op: Any, input: Any, dim: int, name: str) -> ValuesIndices:  # noqa: A002
    """``(values, indices)`` of a running extreme: the values gathered at the indices (differentiable)."""
    x = tensor_arg(input, name)
    if x.dtype.kind == "c":
        raise NotImplementedError(f"{name}(): not implemented for complex tensors")
    axis = normalize_axis(dim, x.ndim, name)
    if x.ndim == 0:
        values, indices = _running_extreme(op, x.reshape(1), axis, name)
        return ValuesIndices(values.reshape(()), indices.reshape(()))
    indices = apply(op, x, axis=axis)
    return ValuesIndices(take_along_dim(x, indices, axis), indices)


@public(None, inplace=False)
def cummax(input: Any, dim: int) -> ValuesIndices:  # noqa: A002 - torch's name
    """``(values, indices)`` of the running maximum along ``dim``: ``values[i] = max(input[:i + 1])``.
    Of tied values the index is the last; NaN propagates. The gradient goes to the elements at ``indices``.

    >>> import dualgrad as dg
    >>> dg.cummax(dg.tensor([1., 3., 2., 3.]), 0)
    ValuesIndices(values=tensor([1., 3., 3., 3.]), indices=tensor([0, 1, 1, 3]))
    """
    return _running_extreme(CUMMAX_INDICES, input, dim, "cummax")


@public(None, inplace=False)
def cummin(input: Any, dim: int) -> ValuesIndices:  # noqa: A002 - torch's name
    """``(values, indices)`` of the running minimum along ``dim`` (ties and NaN as ``cummax``).

    >>> import dualgrad as dg
    >>> dg.cummin(dg.tensor([3., 1., 2., 1.]), 0)
    ValuesIndices(values=tensor([3., 1., 1., 1.]), indices=tensor([0, 1, 1, 3]))
    """
    return _running_extreme(CUMMIN_INDICES, input, dim, "cummin")


@public(None, inplace=False)
def argsort(x: Any, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices that sort ``x`` along ``dim`` (a stable sort: ties keep their order).

    >>> import dualgrad as dg
    >>> dg.argsort(dg.tensor([3., 1., 2.]))
    tensor([1, 2, 0])
    """
    x = tensor_arg(x, "argsort")
    axis = normalize_axis(dim, x.ndim, "argsort")
    if x.ndim == 0:
        return apply(ARGSORT, reshape(x, (1,)), axis=0).reshape(())
    if descending:
        n = x.shape[axis]
        return (n - 1) - flip(apply(ARGSORT, flip(x, axis), axis=axis), axis)
    return apply(ARGSORT, x, axis=axis)


@public(None, inplace=False)
def sort(x: Any, dim: int = -1, descending: bool = False, stable: bool = True) -> ValuesIndices:
    """``(values, indices)`` of ``x`` sorted along ``dim``; the values are differentiable.

    >>> import dualgrad as dg
    >>> x = dg.tensor([3., 1., 2.], requires_grad=True)
    >>> values, indices = dg.sort(x)
    >>> values.backward(dg.tensor([1., 2., 3.]))
    >>> values, x.grad
    (tensor([1., 2., 3.], grad_fn=<GatherBackward0>), tensor([3., 1., 2.]))
    """
    x = tensor_arg(x, "sort")
    indices = argsort(x, dim, descending, stable)
    if x.ndim == 0:
        return ValuesIndices(x, indices)
    return ValuesIndices(take_along_dim(x, indices, dim), indices)


@public(None, inplace=False)
def msort(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input`` sorted along its first dimension (the values of ``sort(input, dim=0)``).

    >>> import dualgrad as dg
    >>> dg.msort(dg.tensor([[3., 1.], [2., 4.]]))
    tensor([[2., 1.],
            [3., 4.]])
    """
    return sort(input, 0).values


@public(None, inplace=False)
def topk(input: Any, k: int, dim: int = -1, largest: bool = True,  # noqa: A002 - torch's names
         sorted: bool = True) -> ValuesIndices:  # noqa: A002
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements along ``dim``,
    in sorted order; the values are differentiable (``sorted=False`` is accepted, the order is then
    unspecified as in torch).

    >>> import dualgrad as dg
    >>> dg.topk(dg.tensor([1., 5., 3., 4.]), 2)
    ValuesIndices(values=tensor([5., 4.]), indices=tensor([1, 3]))
    """
    return _first_of_sorted(input, k, dim, largest, "topk")


@public(None, inplace=False)
def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:  # noqa: A002
    """``(values, indices)`` of the ``k``-th smallest element (from 1) along ``dim``; differentiable.

    >>> import dualgrad as dg
    >>> dg.kthvalue(dg.tensor([1., 5., 3., 4.]), 2)
    ValuesIndices(values=tensor(3.), indices=tensor(2))
    """
    x = tensor_arg(input, "kthvalue")
    axis = normalize_axis(dim, x.ndim, "kthvalue")
    size = x.shape[axis] if x.ndim else 1
    if not size:
        raise IndexError(f"kthvalue(): Expected reduction dim {axis} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    values, indices = _first_of_sorted(x, k, dim, False, "kthvalue")
    if x.ndim:
        values, indices = values.narrow(axis, k - 1, 1), indices.narrow(axis, k - 1, 1)
        if not keepdim:
            values, indices = values.squeeze(axis), indices.squeeze(axis)
    return ValuesIndices(values, indices)


def _first_of_sorted(input: Any, k: int, dim: int, largest: bool, fn: str) -> ValuesIndices:
    """The first ``k`` of ``sort(input, dim, descending=largest)``."""
    x = tensor_arg(input, fn)
    axis = normalize_axis(dim, x.ndim, fn)
    size = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    indices = argsort(x, dim, descending=largest)
    if x.ndim:
        indices = indices.narrow(axis, 0, k)
        return ValuesIndices(take_along_dim(x, indices, dim), indices)
    return ValuesIndices(x if k else x.reshape(0), indices if k else indices.reshape(0))


__all__ = exported(__name__)
