"""``Conv1d`` and ``Conv2d`` layers (``nn.functional.conv1d`` / ``conv2d`` with learned kernels)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._convolution import _conv, pad
from ._messages import int_tuple as _tuple
from .linear import add_weight_and_bias, reset_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nd = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, nd), _tuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd)
        self.dilation, self.groups, self.padding_mode = _tuple(dilation, nd), groups, padding_mode
        self.output_padding, self.transposed = (0,) * nd, False
        add_weight_and_bias(self, (out_channels, in_channels // groups, *self.kernel_size), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self.weight, self.bias, zero_bias_without_fan_in=False)

    def _padding_amounts(self) -> list[int]:
        """``F.pad``'s amounts for a padding mode other than zeros (last dimension first)."""
        if self.padding == "valid":
            return [0] * (2 * self._nd)
        if self.padding == "same":
            pairs = [((d * (k - 1)) // 2, d * (k - 1) - (d * (k - 1)) // 2)
                     for d, k in zip(self.dilation, self.kernel_size, strict=True)]
        else:
            pairs = [(p, p) for p in self.padding]
        return [a for pair in reversed(pairs) for a in pair]

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        name = f"conv{self._nd}d"
        if self.padding_mode != "zeros":
            return _conv(name, self._nd, pad(input, self._padding_amounts(), mode=self.padding_mode),
                         self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return _conv(name, self._nd, input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                     self.groups)

    def extra_repr(self) -> str:
        nd = self._nd
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * nd:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` or ``(C_in, L)`` (see ``nn.functional.conv1d``); weight
    ``(C_out, C_in / groups, k)`` and bias initialised as ``Linear``'s, with ``fan_in = C_in / groups * k``.

    >>> import dualgrad as dg
    >>> dg.nn.Conv1d(2, 4, 3, padding="same", dilation=2, groups=2)
    Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same, dilation=(2,), groups=2)
    """

    _nd = 1


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)`` (see ``nn.functional.conv2d``).

    >>> import dualgrad as dg
    >>> conv = dg.nn.Conv2d(1, 2, 3, stride=2, padding=1, bias=False)
    >>> conv, conv(dg.ones(5, 1, 8, 8)).shape
    (Conv2d(1, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False), (5, 2, 4, 4))
    """

    _nd = 2
