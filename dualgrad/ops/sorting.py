"""Sorting: ``argsort`` (not differentiable) and ``sort``, a gather along its result.

``sort`` is not an op of its own: its values are ``take_along_dim(x, argsort(x))``,
so the gradient of each sorted element goes back to the position it came from
(tied elements: to the one the stable sort put there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ._axes import normalize_axis
from .dispatch import apply, tensor_arg
from .indexing import take_along_dim
from .reductions import ValuesIndices
from .registry import nondifferentiable
from .shape import flip, reshape


def _argsort_impl(x: np.ndarray, *, axis: int) -> np.ndarray:
    return np.argsort(x, axis=axis, kind="stable")


# The "reduction" family's batching rule shifts the integer ``axis`` past the batch axis.
ARGSORT = nondifferentiable("argsort", _argsort_impl, family="reduction")


def argsort(x: Any, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices that sort ``x`` along ``dim`` (a stable sort: ties keep their order).

    >>> import dualgrad as dg
    >>> dg.argsort(dg.tensor([3., 1., 2.]))
    tensor([1, 2, 0])
    """
    x = tensor_arg(x, "argsort")
    if x.ndim == 0:
        return apply(ARGSORT, reshape(x, (1,)), axis=0).reshape(())
    axis = normalize_axis(dim, x.ndim, "argsort")
    if descending:
        n = x.shape[axis]
        return (n - 1) - flip(apply(ARGSORT, flip(x, axis), axis=axis), axis)
    return apply(ARGSORT, x, axis=axis)


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


def msort(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input`` sorted along its first dimension (the values of ``sort(input, dim=0)``).

    >>> import dualgrad as dg
    >>> dg.msort(dg.tensor([[3., 1.], [2., 4.]]))
    tensor([[2., 1.],
            [3., 4.]])
    """
    return sort(input, 0).values


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


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:  # noqa: A002
    """``(values, indices)`` of the ``k``-th smallest element (from 1) along ``dim``; differentiable.

    >>> import dualgrad as dg
    >>> dg.kthvalue(dg.tensor([1., 5., 3., 4.]), 2)
    ValuesIndices(values=tensor(3.), indices=tensor(2))
    """
    x = tensor_arg(input, "kthvalue")
    axis = normalize_axis(dim, max(x.ndim, 1))
    size = x.shape[axis] if x.ndim else 1
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
    size = x.shape[normalize_axis(dim, x.ndim, fn)] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    indices = argsort(x, dim, descending=largest)
    if x.ndim:
        indices = indices.narrow(normalize_axis(dim, x.ndim, fn), 0, k)
        return ValuesIndices(take_along_dim(x, indices, dim), indices)
    return ValuesIndices(x if k else x.reshape(0), indices if k else indices.reshape(0))


METHODS: dict[str, Any] = {"argsort": argsort, "sort": sort, "msort": msort, "topk": topk, "kthvalue": kthvalue}
__all__ = ["argsort", "kthvalue", "msort", "sort", "topk"]
