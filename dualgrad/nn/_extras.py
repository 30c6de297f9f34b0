"""More of ``nn.functional``: ``normalize``, ``cosine_similarity``, ``mish``, ``kl_div`` and adaptive average
pooling, composed of dualgrad's ops."""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..ops.elementwise.core import exp, tanh
from ..ops.elementwise.core import softplus as _softplus
from ..ops.elementwise.functions import xlogy
from ..ops.linalg.norms import vector_norm
from ..ops.shape.core import stack
from ..ops.shape.views import broadcast_tensors
from ..tensor import Tensor
from ._activations import written_into
from ._losses import REDUCTIONS

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "cosine_similarity", "kl_div", "mish", "normalize"]


def _clamped_below(t: Tensor, floor: float) -> Tensor:
    """``max(t, floor)`` in value with the gradient of ``t`` (torch clamps these norms without recording)."""
    return t + (t.clamp(min=floor) - t).detach()


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:  # noqa: A002
    """``x / max(||x||_p, eps)`` along ``dim``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.normalize(dg.tensor([[3., 4.]]))
    tensor([[0.6000, 0.8000]])
    """
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported by dualgrad")
    return input / vector_norm(input, p, dim=dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim`` (inputs broadcast).

    >>> import dualgrad as dg
    >>> dg.nn.functional.cosine_similarity(dg.tensor([[1., 0.]]), dg.tensor([[1., 1.]]))
    tensor([0.7071])
    """
    x1, x2 = broadcast_tensors(x1, x2)
    n1 = _clamped_below(vector_norm(x1, 2, dim=dim, keepdim=True), eps)
    n2 = _clamped_below(vector_norm(x2, 2, dim=dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * tanh(softplus(x))``."""
    if inplace:
        return written_into(input, mish(input.clone()))
    return input * tanh(_softplus(input, 1.0, 20.0))


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise ``target * (log(target) - input)`` (``input``: log-probabilities; with ``log_target``,
    ``exp(target) * (target - input)``); ``reduction='batchmean'`` divides the sum by the batch size.

    >>> import dualgrad as dg
    >>> p = dg.tensor([[0.5, 0.5]])
    >>> dg.nn.functional.kl_div(dg.log(dg.tensor([[0.25, 0.75]])), p, reduction="batchmean")
    tensor(0.1438)
    """
    if size_average is not None or reduce is not None:
        from ._losses import _reduction

        reduction = _reduction(size_average, reduce, reduction)
    elif reduction not in (*REDUCTIONS, "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    loss = exp(target) * (target - input) if log_target else xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _adaptive_avg(input: Tensor, output_size: Any, nd: int, name: str) -> Tensor:  # noqa: A002
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    sizes = (output_size,) * nd if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must be {nd}")
    out = input
    for j, target in enumerate(sizes):
        dim = input.ndim - nd + j
        n = input.shape[dim]
        target = n if target is None else target
        windows = [(i * n // target, math.ceil((i + 1) * n / target)) for i in range(target)]
        out = stack([out.narrow(dim, start, end - start).mean(dim) for start, end in windows], dim)
    return out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean over ``output_size`` windows that cover the last dimension (window ``i`` spans
    ``floor(i L / out)`` to ``ceil((i + 1) L / out)``)."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """``adaptive_avg_pool1d`` over each of the last two dimensions (``None`` keeps a size).

    >>> import dualgrad as dg
    >>> dg.nn.functional.adaptive_avg_pool2d(dg.arange(16.).reshape(1, 4, 4), 1)
    tensor([[[7.5000]]])
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")
