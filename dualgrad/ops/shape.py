"""Shape ops: reshape, expand, permute and friends. All are linear."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from ._axes import normalize_axis
from .dispatch import apply
from .registry import linear, sum_to_shape


def _shape_arg(shape: tuple) -> tuple:
    """Accept ``f(2, 3)`` and ``f((2, 3))``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _inverse_permutation(axes: tuple) -> tuple:
    return tuple(int(i) for i in np.argsort(axes))


RESHAPE = linear("reshape", lambda x, shape: np.reshape(x, shape),
                 (lambda g, out, x, shape: g.reshape(x.shape),), family="shape", view=True,
                 grad_name="ViewBackward0")
EXPAND = linear("expand", lambda x, shape: np.broadcast_to(x, shape),
                (lambda g, out, x, shape: sum_to_shape(g, x.shape),), family="shape", view=True)
PERMUTE = linear("permute", lambda x, axes: np.transpose(x, axes),
                 (lambda g, out, x, axes: g.permute(_inverse_permutation(axes)),),
                 family="shape", view=True)


def reshape(x: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (one dimension may be -1).

    >>> import dualgrad as dg
    >>> dg.reshape(dg.arange(6.), (2, 3))
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    """
    shape = _shape_arg(shape)
    data_shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    try:
        target = np.empty(data_shape, dtype=np.bool_).reshape(shape).shape
    except ValueError as err:
        raise RuntimeError(f"reshape: shape {shape} is invalid for input of shape {data_shape}: {err}") from None
    return apply(RESHAPE, x, shape=target)


def expand(x: Tensor, *shape: Any) -> Tensor:
    """Broadcast ``x`` to ``shape`` without copying (-1 keeps a dimension).

    >>> import dualgrad as dg
    >>> dg.expand(dg.tensor([1., 2.]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """
    shape = _shape_arg(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({x.ndim})"
        )
    shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    try:
        np.broadcast_shapes(x.shape, shape)
    except ValueError:
        raise RuntimeError(f"expand: shape {x.shape} cannot be expanded to {shape}") from None
    if shape == x.shape:
        return x
    return apply(EXPAND, x, shape=shape)


def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    """NumPy's name for ``expand``."""
    return expand(x, tuple(shape) if not isinstance(shape, int) else (shape,))


def permute(x: Tensor, *axes: Any) -> Tensor:
    """Reorder the dimensions.

    >>> import dualgrad as dg
    >>> dg.permute(dg.zeros(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    axes = _shape_arg(axes)
    if sorted(normalize_axis(a, x.ndim, "permute") for a in axes) != list(range(x.ndim)):
        raise RuntimeError(f"permute: {axes} is not a permutation of the {x.ndim} dimensions")
    axes = tuple(normalize_axis(a, x.ndim, "permute") for a in axes)
    return apply(PERMUTE, x, axes=axes)


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dimensions (the last two by default).

    >>> import dualgrad as dg
    >>> dg.transpose(dg.zeros(2, 3), 0, 1).shape
    (3, 2)
    """
    axes = list(range(x.ndim))
    a, b = normalize_axis(dim0, x.ndim, "transpose"), normalize_axis(dim1, x.ndim, "transpose")
    axes[a], axes[b] = axes[b], axes[a]
    return apply(PERMUTE, x, axes=tuple(axes))


swapaxes = transpose


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim``.

    >>> import dualgrad as dg
    >>> dg.unsqueeze(dg.zeros(3), 0).shape
    (1, 3)
    """
    dim = normalize_axis(dim, x.ndim + 1, "unsqueeze")
    return apply(RESHAPE, x, shape=x.shape[:dim] + (1,) + x.shape[dim:])


def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """Remove dimensions of size 1 (only ``dim``, which may be a tuple, when given).

    >>> import dualgrad as dg
    >>> dg.squeeze(dg.zeros(1, 3, 1)).shape
    (3,)
    """
    if dim is None:
        dims = {i for i, n in enumerate(x.shape) if n == 1}
    else:
        dims = {normalize_axis(d, x.ndim, "squeeze") for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        dims = {d for d in dims if x.shape[d] == 1}
    if not dims:
        return x
    return apply(RESHAPE, x, shape=tuple(n for i, n in enumerate(x.shape) if i not in dims))


METHODS: dict[str, Any] = {
    "reshape": reshape, "view": reshape, "expand": expand, "broadcast_to": broadcast_to,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "unsqueeze": unsqueeze,
    "squeeze": squeeze,
}
PROPERTIES: dict[str, Any] = {
    "T": lambda self: permute(self, tuple(range(self.ndim - 1, -1, -1))),
    "mT": lambda self: transpose(self, -2, -1),
    "mH": lambda self: transpose(self, -2, -1).conj(),
    "H": lambda self: transpose(self, 0, 1).conj(),
}
__all__ = ["broadcast_to", "expand", "permute", "reshape", "squeeze", "swapaxes", "transpose", "unsqueeze"]
