"""``Identity``, ``Linear`` and ``Bilinear`` layers."""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import init
from ._convolution import bilinear, linear
from ._factory import new_empty
from .module import Module
from .parameter import Parameter

__all__ = ["Bilinear", "Identity", "Linear"]


class Identity(Module):
    """Returns its input (any constructor arguments are ignored, as in torch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``W`` of shape ``(out_features, in_features)``. Initialised as torch:
    ``W ~ kaiming_uniform_(a=sqrt(5))``, i.e. ``U(-1/sqrt(in), 1/sqrt(in))``, and ``b ~ U(-1/sqrt(in),
    1/sqrt(in))``.

    >>> import dualgrad as dg
    >>> layer = dg.nn.Linear(3, 2)
    >>> layer, layer.weight.shape, layer(dg.ones(5, 3)).shape
    (Linear(in_features=3, out_features=2, bias=True), (2, 3), (5, 2))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(new_empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(new_empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y_k = x1^T W_k x2 + b_k``, ``W`` of shape ``(out, in1, in2)``, initialised ``U(-1/sqrt(in1),
    1/sqrt(in1))`` (weight and bias)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(new_empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(new_empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
