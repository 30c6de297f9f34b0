"""``max_pool1d/2d`` and ``avg_pool1d/2d`` (``nn.functional``'s forms): windows taken with
``Tensor.unfold``, reduced with ``max`` (the gradient goes to the maximum of each window, as in torch) or
summed and divided by torch's divisor."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..factories import tensor
from ..ops.shape.core import pad as _constant_pad
from ..tensor import Tensor
from ._messages import int_tuple as _tuple

__all__ = ["avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d"]


def _out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size (a last window starting in the right padding is dropped)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _windows(name: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
             dilation: Any, ceil_mode: bool, fill: float) -> tuple[Tensor, tuple, tuple, tuple, tuple, bool]:
    """The pooling windows ``(N, C, out..., k...)`` of ``input`` padded with ``fill``, and the geometry."""
    if input.ndim not in (nd + 1, nd + 2) or input.numel() == 0:
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    kernel = _tuple(kernel_size, nd)
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, nd)
    padding, dilation = _tuple(padding, nd), _tuple(dilation, nd)
    for p, k, d in zip(padding, kernel, dilation, strict=True):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    sizes = x.shape[2:]
    outs = tuple(_out_size(n, k, s, p, d, ceil_mode)
                 for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation, strict=True))
    if any(o <= 0 for o in outs):
        shown = "x".join(map(str, (x.shape[1], *sizes)))
        raise RuntimeError(f"Given input size: ({shown}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[1], *outs)))}). Output size is too small")
    widths = []
    for n, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, outs, strict=True):
        widths.append((p, max((o - 1) * s + d * (k - 1) + 1 - n - p, 0)))  # (ceil_mode: room for the last window)
    if any(lo or hi for lo, hi in widths):
        x = _constant_pad(x, [a for lo_hi in reversed(widths) for a in lo_hi], value=fill)
    for i in range(nd):
        x = x.unfold(2 + i, dilation[i] * (kernel[i] - 1) + 1, stride[i])
        x = x.narrow(2 + i, 0, outs[i])
    if any(d > 1 for d in dilation):
        x = x[(Ellipsis, *(slice(None, None, d) for d in dilation))]
    return x, kernel, stride, padding, outs, batched


def _max_pool(name: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    x, kernel, stride, padding, outs, batched = _windows(name, nd, input, kernel_size, stride, padding,
                                                         dilation, ceil_mode, -math.inf)
    flat = x.reshape(*x.shape[:2 + nd], math.prod(kernel))
    values, where = flat.max(dim=-1)
    if not batched:
        values, where = values.squeeze(0), where.squeeze(0)
    if not return_indices:
        return values
    return values, _flat_indices(where, input.shape[-nd:], kernel, stride, padding, _tuple(dilation, nd), outs)


def _flat_indices(where: Tensor, sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                  outs: tuple) -> Tensor:
    """torch's ``return_indices``: positions of the maxima in the flattened spatial input."""
    flat = tensor(0, dtype="int64")
    window = where
    strides_in_kernel = [math.prod(kernel[i + 1:]) for i in range(len(kernel))]
    for i in range(len(kernel)):
        offset = (window // strides_in_kernel[i]) % kernel[i]
        shape = [1] * len(kernel)
        shape[i] = outs[i]
        start = tensor(np.arange(outs[i]) * stride[i] - padding[i], dtype="int64").reshape(shape)
        flat = flat * sizes[i] + start + offset * dilation[i]
    return flat


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum of each window of ``kernel_size`` elements, taken every ``stride`` (default: the kernel
    size) along the last dimension of ``(N, C, L)`` or ``(C, L)`` padded by ``padding`` with ``-inf``."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool1d`` over the last two dimensions of ``(N, C, H, W)`` or ``(C, H, W)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.max_pool2d(dg.arange(16.).reshape(1, 4, 4), 2)
    tensor([[[ 5.,  7.],
             [13., 15.]]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _divisor(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, outs: tuple,
             count_include_pad: bool) -> np.ndarray:
    """torch's divisor of each window: its cells inside the padded input (``count_include_pad``) or inside
    the input."""
    counts = []
    for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs, strict=True):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        counts.append(end - start)
    return counts[0] if len(counts) == 1 else np.multiply.outer(counts[0], counts[1])


def _avg_pool(name: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    x, kernel, stride, padding, outs, batched = _windows(name, nd, input, kernel_size, stride, padding, 1,
                                                         ceil_mode, 0.0)
    sums = x.sum(dim=tuple(range(-nd, 0)))
    if divisor_override:
        out = sums / divisor_override
    else:
        divisor = _divisor(input.shape[-nd:], kernel, stride, padding, outs, count_include_pad)
        out = sums / tensor(divisor.astype(input.dtype if input.dtype.kind == "f" else np.float64))
    return out if batched else out.squeeze(0)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """The mean of each window (``max_pool1d``'s windows, padded with zeros); ``count_include_pad=False``
    leaves the padding out of the divisor."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """``avg_pool1d`` over the last two dimensions; ``divisor_override`` replaces every divisor.

    >>> import dualgrad as dg
    >>> dg.nn.functional.avg_pool2d(dg.arange(16.).reshape(1, 4, 4), 2)
    tensor([[[ 2.5000,  4.5000],
             [10.5000, 12.5000]]])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)
