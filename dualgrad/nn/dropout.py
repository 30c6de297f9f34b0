"""The ``Dropout`` layer."""

from __future__ import annotations

from ..tensor import Tensor
from ._normalization import dropout
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (dualgrad's generator); in evaluation mode, the identity. ``inplace`` writes the result into the input,
    as torch's.

    >>> import dualgrad as dg
    >>> drop = dg.nn.Dropout(0.2).eval()
    >>> drop, drop(dg.ones(2))
    (Dropout(p=0.2, inplace=False), tensor([1., 1.]))
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
