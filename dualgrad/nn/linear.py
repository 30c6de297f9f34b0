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


def add_weight_and_bias(module: Module, weight_shape: tuple, bias: bool, device: Any, dtype: Any) -> None:
    """Give ``module`` an uninitialised ``weight`` of ``weight_shape`` and a ``bias`` of its first
    dimension (or a ``bias`` of None)."""
    module.weight = Parameter(new_empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(new_empty(weight_shape[0], device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def reset_weight_and_bias(weight: Tensor, bias: Tensor | None, *, zero_bias_without_fan_in: bool) -> None:
    """torch's default initialisation of Linear and ConvNd: ``kaiming_uniform_(weight, a=sqrt(5))``
    and ``bias`` from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``. For ``fan_in`` 0, torch's Linear
    zeroes the bias and its ConvNd leave it as it is."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    fan_in = math.prod(weight.shape[1:])
    if bias is not None and (fan_in > 0 or zero_bias_without_fan_in):
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(bias, -bound, bound)


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
        add_weight_and_bias(self, (out_features, in_features), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self.weight, self.bias, zero_bias_without_fan_in=True)

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
        add_weight_and_bias(self, (out_features, in1_features, in2_features), bias, device, dtype)
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
