"""Pooling layers: ``MaxPool1d``/``MaxPool2d``, ``AvgPool1d``/``AvgPool2d`` and ``AdaptiveAvgPool1d``/``2d``."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._extras import adaptive_avg_pool1d, adaptive_avg_pool2d
from ._pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """The maximum over windows of the last dimension (see ``nn.functional.max_pool1d``)."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002 - torch's name
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """The maximum over windows of the last two dimensions (see ``nn.functional.max_pool2d``).

    >>> import dualgrad as dg
    >>> dg.nn.MaxPool2d(2)
    MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    """

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class AvgPool1d(Module):
    """The mean over windows of the last dimension (see ``nn.functional.avg_pool1d``)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        one = (lambda v: (v,) if isinstance(v, int) else tuple(v))
        self.kernel_size = one(kernel_size)
        self.stride = one(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = one(padding), ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean over windows of the last two dimensions (see ``nn.functional.avg_pool2d``).

    >>> import dualgrad as dg
    >>> dg.nn.AvgPool2d(3, stride=1)
    AvgPool2d(kernel_size=3, stride=1, padding=0)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """The mean over ``output_size`` windows covering the last dimension (``nn.functional.adaptive_avg_pool1d``)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """The mean over windows covering the last two dimensions, ``output_size`` of them
    (``nn.functional.adaptive_avg_pool2d``).

    >>> import dualgrad as dg
    >>> dg.nn.AdaptiveAvgPool2d((1, 1))
    AdaptiveAvgPool2d(output_size=(1, 1))
    """

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return adaptive_avg_pool2d(input, self.output_size)
