"""``Flatten`` and ``Unflatten`` layers."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Merge dimensions ``start_dim..end_dim`` into one (by default all but the batch dimension).

    >>> import dualgrad as dg
    >>> dg.nn.Flatten()(dg.ones(2, 3, 4)).shape
    (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size``.

    >>> import dualgrad as dg
    >>> dg.nn.Unflatten(1, (2, 2))(dg.ones(3, 4)).shape
    (3, 2, 2)
    """

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
