"""Loss functions (``nn.functional``'s forms) with torch's ``reduction``, ``weight`` and ``ignore_index``
semantics: a weighted ``'mean'`` divides by the total weight of the targets counted, not by their number."""

from __future__ import annotations

import warnings
from typing import Any

from ..base.dtypes import torch_dtype_name
from ..ops.elementwise.core import abs as _abs
from ..ops.elementwise.core import log, logaddexp, where
from ..ops.indexing import gather
from ..ops.reductions import log_softmax
from ..tensor import Tensor
from ..vmap.batching import physical_value
from ._messages import torch_size

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "l1_loss",
           "mse_loss", "nll_loss", "smooth_l1_loss"]

REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """The ``reduction`` named by torch's deprecated ``size_average`` / ``reduce`` pair, or ``reduction``."""
    if size_average is None and reduce is None:
        if reduction not in REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean' instead.",
                  UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _warn_size(input: Tensor, target: Tensor) -> None:  # noqa: A002 - torch's names
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({torch_size(target.shape)}) that is different to the input size "
                      f"({torch_size(input.shape)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``(input - target)^2``, reduced.

    >>> import dualgrad as dg
    >>> dg.nn.functional.mse_loss(dg.tensor([1., 2.]), dg.tensor([0., 0.]))
    tensor(2.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    loss = (input - target) ** 2
    return _reduce(loss if weight is None else loss * weight, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """``|input - target|``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    loss = _abs(input - target)
    return _reduce(loss if weight is None else loss * weight, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
               weight: Tensor | None = None) -> Tensor:
    """``d^2 / 2`` where ``|d| < delta``, else ``delta (|d| - delta / 2)``, ``d = input - target``."""
    reduction = _reduction(None, None, reduction)
    _warn_size(input, target)
    d = _abs(input - target)
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``d^2 / (2 beta)`` where ``|d| < beta``, else ``|d| - beta / 2`` (``beta = 0``: the L1 loss)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_size(input, target)
    d = _abs(input - target)
    loss = d if beta == 0 else where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def _class_values(target: Tensor) -> Any:
    """The values of a class-index target, for bounds checks (inside ``vmap``: those of the whole batch)."""
    return physical_value(target)._data


def _check_class_target(input: Tensor, target: Tensor) -> None:  # noqa: A002
    """torch's checks of the shapes of class logits or log-probabilities and their class-index target."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if (input.ndim == 1 and target.ndim > 1) or (input.ndim == 2 and target.ndim != 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim >= 2 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.ndim > 2 and tuple(target.shape) != (input.shape[0], *input.shape[2:]):
        raise RuntimeError(f"Expected target size [{', '.join(map(str, (input.shape[0], *input.shape[2:])))}], "
                           f"got [{', '.join(map(str, target.shape))}]")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-weight[t] * input[t]`` for each class index ``t`` of ``target`` (``input``: log-probabilities,
    classes along dimension 1, or 0 for a 1-D input); entries with ``t == ignore_index`` count nothing.
    ``'mean'`` divides by the sum of the weights of the entries counted.

    >>> import dualgrad as dg
    >>> dg.nn.functional.nll_loss(dg.tensor([[-1., -2.], [-3., -4.]]), dg.tensor([0, 1]))
    tensor(2.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_class_target(input, target)
    if target.dtype.kind not in "iu":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {torch_dtype_name(target.dtype)}")
    if input.ndim == 1:  # (one sample: a batch of one)
        out = nll_loss(input.unsqueeze(0), target.reshape(1), weight, ignore_index=ignore_index, reduction=reduction)
        return out.reshape(target.shape) if reduction == "none" else out
    class_dim, n_classes = 1, input.shape[1]
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: [{', '.join(map(str, weight.shape))}]")
    values = _class_values(target)
    bad = values[(values != ignore_index) & ((values < 0) | (values >= n_classes))]
    if bad.size:
        raise IndexError(f"Target {bad.flat[0]} is out of bounds.")
    keep = target != ignore_index
    safe = where(keep, target, 0)
    picked = gather(input, class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    w = keep.to(input.dtype) if weight is None else where(keep, weight[safe], 0.0)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; for class probabilities (a floating
    ``target`` of ``input``'s shape) ``-sum_c weight_c target_c log_softmax(input)_c``, with ``'mean'`` over
    the batch. ``label_smoothing`` mixes the target with the uniform distribution over classes.

    >>> import dualgrad as dg
    >>> dg.nn.functional.cross_entropy(dg.tensor([[2., 0.], [0., 2.]]), dg.tensor([0, 1]))
    tensor(0.1269)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    weight_shape = [1] * input.ndim
    weight_shape[class_dim] = n_classes
    if target.shape == input.shape:
        if target.dtype.kind != "f":
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{torch_dtype_name(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(weight_shape)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // n_classes if input.ndim > 1 else 1)
        return _reduce(loss, reduction)
    _check_class_target(input, target)
    if target.dtype.kind not in "iu":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {torch_dtype_name(target.dtype)}")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    keep = target != ignore_index
    smooth = -(logp if weight is None else logp * weight.reshape(weight_shape)).sum(class_dim)
    smooth = where(keep, smooth, 0.0)
    if reduction == "mean":
        total = keep.sum() if weight is None else where(keep, weight[where(keep, target, 0)], 0.0).sum()
        smooth = smooth.sum() / total
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-weight (t log x + (1 - t) log(1 - x))``, each log clamped below at -100 as in torch.

    >>> import dualgrad as dg
    >>> dg.nn.functional.binary_cross_entropy(dg.tensor([0.5, 0.9]), dg.tensor([1., 1.]))
    tensor(0.3993)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({torch_size(target.shape)}) that is different to the input size "
                         f"({torch_size(input.shape)}) is deprecated. Please ensure they have the same size.")
    values = physical_value(input)._data
    if values.size and not ((values >= 0) & (values <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * log(input).clamp(min=-100) + (1 - target) * log(1 - input).clamp(min=-100))
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(x), t)`` computed stably: ``(1 - t) x + (1 + (p - 1) t) log(1 + e^-x)``
    with ``p = pos_weight`` (1 without), each term weighted by ``weight``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.binary_cross_entropy_with_logits(dg.tensor([0., 2.]), dg.tensor([1., 0.]))
    tensor(1.4100)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({torch_size(target.shape)}) must be the same as input size "
                         f"({torch_size(input.shape)})")
    softplus_neg = logaddexp(input * 0.0, -input)  # log(1 + exp(-x))
    scale = 1.0 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * input + scale * softplus_neg
    return _reduce(loss if weight is None else loss * weight, reduction)
