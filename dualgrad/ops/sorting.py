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


METHODS: dict[str, Any] = {"argsort": argsort, "sort": sort}
__all__ = ["argsort", "sort"]
