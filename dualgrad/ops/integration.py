"""Numerical integration of samples: ``trapezoid`` (``trapz``) and ``cumulative_trapezoid``.

Compositions of ``narrow``, ``diff``, arithmetic, ``sum`` and ``cumsum``, so gradients (in the samples
and the sample points), tangents and vmap come from those ops.
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._axes import normalize_axis
from .dispatch import tensor_arg
from .reductions import cumsum
from .shape.compositions import diff
from .shape.core import narrow, reshape
from .surface import exported, public


def _spacing(y: Tensor, x: Any, dx: Any, dim: int, fn: str) -> Any:
    """The widths of the trapezoids along ``dim``: ``dx`` or the differences of the sample points ``x``."""
    if x is None:
        return 1 if dx is None else dx
    x = tensor_arg(x, fn)
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
        return reshape(diff(x), (-1,) + (1,) * (y.ndim - 1 - dim))
    return diff(x, dim=dim)


@public(None, method=False)
def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: samples ``y`` at points ``x`` (a 1-d tensor along ``dim``, or
    broadcastable to ``y``) or spaced ``dx`` (default 1); differentiable in ``y`` and ``x``.

    >>> import dualgrad as dg
    >>> y = dg.tensor([1., 4., 9., 16.])
    >>> dg.trapezoid(y), dg.trapezoid(y, dx=2), dg.trapezoid(y, dg.tensor([0., 1., 3., 4.]))
    (tensor(21.5000), tensor(43.), tensor(28.))
    """
    return _trapezoids(y, x, dx, dim, "trapezoid").sum(dim)


@public(None, method=False)
def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim`` (one value fewer than ``y``; see ``trapezoid``).

    >>> import dualgrad as dg
    >>> dg.cumulative_trapezoid(dg.tensor([1., 4., 9., 16.]))
    tensor([ 2.5000,  9.0000, 21.5000])
    """
    fn = "cumulative_trapezoid"
    y = tensor_arg(y, fn)
    return cumsum(_trapezoids(y, x, dx, dim, fn), normalize_axis(dim, y.ndim, fn))


def _trapezoids(y: Any, x: Any, dx: Any, dim: int, fn: str) -> Tensor:
    """The area of each trapezoid along ``dim``."""
    y = tensor_arg(y, fn)
    dim = normalize_axis(dim, y.ndim, fn)
    n = max(y.shape[dim] - 1, 0)
    return _spacing(y, x, dx, dim, fn) * (narrow(y, dim, 0, n) + narrow(y, dim, min(1, y.shape[dim]), n)) / 2


@public(None, method=False)
def trapz(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Alias of ``trapezoid``.

    >>> import dualgrad as dg
    >>> dg.trapz(dg.tensor([1., 4., 9., 16.]), dx=2)
    tensor(43.)
    """
    return trapezoid(y, x, dx=dx, dim=dim)


__all__ = exported(__name__)
