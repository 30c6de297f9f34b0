"""Linear algebra: matmul and the products built on it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .dispatch import apply
from .registry import Op


def _matmul_vjp_x(g: Tensor, out: Any, x: Tensor, y: Tensor) -> Tensor:
    """dL/dx = g @ y^H, with NumPy's 1-D promotion rules undone."""
    yc = y.conj()
    if y.ndim == 1:
        return g * yc if x.ndim == 1 else g.unsqueeze(-1) * yc
    if x.ndim == 1:
        return (yc @ g.unsqueeze(-1)).squeeze(-1)
    return g @ yc.mT


def _matmul_vjp_y(g: Tensor, out: Any, x: Tensor, y: Tensor) -> Tensor:
    """dL/dy = x^H @ g, with NumPy's 1-D promotion rules undone."""
    xc = x.conj()
    if x.ndim == 1:
        return g * xc if y.ndim == 1 else xc.unsqueeze(-1) * g.unsqueeze(-2)
    if y.ndim == 1:
        return (xc.mT @ g.unsqueeze(-1)).squeeze(-1)
    return xc.mT @ g


def _matmul_jvp(tangents: tuple, out: Any, x: Tensor, y: Tensor) -> Tensor:
    """Product rule: t_x @ y + x @ t_y."""
    tx, ty = tangents
    total = None if tx is None else matmul(tx, y)
    if ty is not None:
        term = matmul(x, ty)
        total = term if total is None else total + term
    return total


def _matmul_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {np.shape(x)} and {np.shape(y)}"
        )
    try:
        return np.matmul(x, y)
    except ValueError:
        raise RuntimeError(
            f"matmul: shapes {np.shape(x)} and {np.shape(y)} cannot be multiplied"
        ) from None


MATMUL = Op("matmul", _matmul_impl, vjp=(_matmul_vjp_x, _matmul_vjp_y), jvp=_matmul_jvp,
            family="linalg", grad_name="MmBackward0")


def matmul(x: Any, y: Any) -> Tensor:
    """Matrix product with NumPy's rules (1-D promotion and batch broadcasting); also ``x @ y``.

    >>> import dualgrad as dg
    >>> dg.matmul(dg.ones(2, 3), dg.ones(3))
    tensor([3., 3.])
    """
    return apply(MATMUL, x, y)


METHODS: dict[str, Any] = {
    "__matmul__": matmul, "__rmatmul__": lambda self, other: matmul(other, self), "matmul": matmul,
}
__all__ = ["matmul"]
