"""``linear``, ``bilinear``, ``conv1d``/``conv2d`` and ``pad`` (``nn.functional``'s forms).

A convolution is windows and a contraction: ``Tensor.unfold`` takes the windows of each spatial
dimension (a view), a strided slice keeps every ``dilation``-th element of a dilated window, and one
``einsum`` contracts windows with the kernel, group by group. Every step is an op with reverse, forward
and batching rules, so convolutions differentiate to any order and run under ``vmap``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..factories import tensor
from ..ops.einsum import einsum
from ..ops.indexing import index_select
from ..ops.linalg.products import matmul
from ..ops.shape.core import pad as _constant_pad
from ..tensor import Tensor
from ._messages import dims as _dims

__all__ = ["bilinear", "conv1d", "conv2d", "linear", "pad"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002 - torch's names
    """``input @ weight.T + bias``: ``weight`` has shape ``(out_features, in_features)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.linear(dg.ones(1, 2), dg.tensor([[1., 2.], [3., 4.]]), dg.tensor([0., 1.]))
    tensor([[3., 8.]])
    """
    in_features = weight.shape[-1] if weight.ndim else 1
    if input.ndim == 0 or input.shape[-1] != in_features:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        cols = input.shape[-1] if input.ndim else 1
        out_features = weight.shape[0] if weight.ndim == 2 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{in_features}x{out_features})")
    out = matmul(input, weight.mT if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k``: ``weight`` has shape ``(out, in1, in2)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.bilinear(dg.ones(1, 2), dg.ones(1, 1), dg.ones(3, 2, 1))
    tensor([[2., 2., 2.]])
    """
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if input1.shape[:-1] != input2.shape[:-1]:
        for d, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1], strict=False)):
            if a != b:
                raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {a} and {b}")
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    out = einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


# -- padding -------------------------------------------------------------------------------------------
def _source_index(n: int, lo: int, hi: int, mode: str) -> list[int]:
    """For each position of a dimension of size ``n`` padded by ``(lo, hi)``: the input position it copies."""
    positions = range(-lo, n + hi)
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in positions]
    if mode == "circular":
        return [i % n for i in positions]
    return [_reflected(i, n) for i in positions]


def _reflected(i: int, n: int) -> int:
    """Position ``i`` mirrored into ``[0, n)`` about the first and the last element (not repeating them)."""
    period = 2 * (n - 1)
    if period == 0:
        return 0
    r = abs(i) % period
    return r if r < n else period - r


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad the last ``len(pad) // 2`` dimensions: ``pad = (left_last, right_last, left_prev, ...)``.
    ``mode``: ``'constant'`` (with ``value``, 0 by default; negative amounts crop), ``'reflect'``,
    ``'replicate'`` or ``'circular'``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.pad(dg.tensor([[1., 2., 3.]]), (2, 1), mode="reflect")
    tensor([[3., 2., 1., 2., 3., 2.]])
    """
    if mode == "constant":
        return _constant_pad(input, pad, value=value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise NotImplementedError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    amounts = [int(p) for p in pad]
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        return _constant_pad(input, pad)  # (raises torch's error for a bad length)
    out = input
    for j in range(len(amounts) // 2):
        dim, (lo, hi) = input.ndim - 1 - j, amounts[2 * j: 2 * j + 2]
        n = input.shape[dim]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {dim} of input {_dims(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        out = index_select(out, dim, tensor(_source_index(n, lo, hi, mode), dtype="int64"))
    return out


# -- convolution ------------------------------------------------------------------------------------------
def _tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return value


def _conv(name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,  # noqa: A002
          padding: Any, dilation: Any, groups: int) -> Tensor:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
                               f"input of size: {_dims(input.shape)}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                           f"{_dims(weight.shape)}, but got {input.ndim}-dimensional input of size "
                           f"{_dims(input.shape)} instead")
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    kernel = weight.shape[2:]
    effective = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel, strict=True))
    out_channels, channels = weight.shape[0], x.shape[1]
    if channels != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {_dims(weight.shape)}, expected input"
                           f"{_dims(x.shape)} to have {weight.shape[1] * groups} channels, but got {channels} "
                           "channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"Given weight of size {_dims(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {_dims(bias.shape)} instead")
    if isinstance(padding, str):
        if padding == "valid":
            amounts = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            amounts = [((e - 1) // 2, e - 1 - (e - 1) // 2) for e in effective]
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        amounts = [(p, p) for p in _tuple(padding, nd, "padding")]
    if any(lo or hi for lo, hi in amounts):
        x = _constant_pad(x, [a for lo_hi in reversed(amounts) for a in lo_hi])
    sizes = x.shape[2:]
    if any(e > n for e, n in zip(effective, sizes, strict=True)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, sizes))}). Kernel size: "
                           f"({' x '.join(map(str, effective))}). Kernel size can't be greater than actual input size")
    for i in range(nd):
        x = x.unfold(2 + i, effective[i], stride[i])  # (N, C, out..., window...)
    if any(d > 1 for d in dilation):
        x = x[(Ellipsis, *(slice(None, None, d) for d in dilation))]
    n, out_sizes = x.shape[0], x.shape[2:2 + nd]
    x = x.reshape(n, groups, channels // groups, *out_sizes, *kernel)
    w = weight.reshape(groups, out_channels // groups, weight.shape[1], *kernel)
    spatial, window = "xyz"[:nd], "ijk"[:nd]
    out = einsum(f"ngc{spatial}{window},goc{window}->ngo{spatial}", x, w).reshape(n, out_channels, *out_sizes)
    if bias is not None:
        out = out + bias.reshape(out_channels, *(1,) * nd)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D cross-correlation: ``out[n, o, x] = b[o] + sum_{c, i} w[o, c, i] in[n, g(o) c, s x + d i]`` over the
    channels of ``o``'s group. ``input``: ``(N, C, L)`` or ``(C, L)``; ``weight``: ``(O, C / groups, k)``;
    ``padding``: an int, a 1-tuple, ``'valid'`` or ``'same'``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.conv1d(dg.tensor([[[1., 2., 3., 4.]]]), dg.tensor([[[1., -1.]]]))
    tensor([[[-1., -1., -1.]]])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D cross-correlation (``conv1d`` over two spatial dimensions). ``input``: ``(N, C, H, W)`` or
    ``(C, H, W)``; ``weight``: ``(O, C / groups, kH, kW)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.conv2d(dg.ones(1, 1, 3, 3), dg.ones(1, 1, 2, 2), padding=1).shape
    (1, 1, 4, 4)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
