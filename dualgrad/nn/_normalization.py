"""``layer_norm``, ``batch_norm``, ``dropout``, ``embedding`` and ``one_hot`` (``nn.functional``'s forms)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..factories import arange
from ..ops.elementwise.core import rsqrt, where
from ..ops.random import bernoulli
from ..ops.reductions import mean, var
from ..reverse import no_grad
from ..tensor import Tensor
from ..vmap.batching import physical_value
from ._activations import written_into
from ._messages import dims as _dims
from ._messages import torch_size

__all__ = ["batch_norm", "dropout", "embedding", "layer_norm", "one_hot"]


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002 - torch's names
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``len(normalized_shape)`` dimensions
    (``var`` the biased variance).

    >>> import dualgrad as dg
    >>> dg.nn.functional.layer_norm(dg.tensor([[1., 3.]]), (2,))
    tensor([[-1.0000,  1.0000]])
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if input.ndim < n or tuple(input.shape[input.ndim - n:]) != shape:
        raise RuntimeError(f"Given normalized_shape={_dims(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{_dims(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{_dims(t.shape)} and normalized_shape = {_dims(shape)}")
    dims = tuple(range(-n, 0))
    centred = input - mean(input, dim=dims, keepdim=True)
    out = centred * rsqrt(var(input, dim=dims, correction=0, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dimension 1) over the batch and spatial dimensions: in training with the
    batch's mean and biased variance (updating ``running_mean``/``running_var`` in place by
    ``(1 - momentum) * running + momentum * batch``, the variance unbiased there), else with the running
    statistics; then ``* weight + bias``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.batch_norm(dg.tensor([[1.], [3.]]), None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    """
    channels = input.shape[1] if input.ndim > 1 else 0
    dims = (0, *range(2, input.ndim))
    shape = (1, channels, *(1,) * (input.ndim - 2))
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if training:
        count = input.numel() // max(channels, 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{torch_size(input.shape)}")
        batch_mean = mean(input, dim=dims, keepdim=True)
        batch_var = var(input, dim=dims, correction=0, keepdim=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(momentum * batch_mean.detach().reshape(channels))
                unbiased = batch_var.detach().reshape(channels) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(momentum * unbiased)
    else:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        batch_mean, batch_var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - batch_mean) * rsqrt(batch_var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """In training, zero each element with probability ``p`` (drawn from dualgrad's generator, see
    ``dualgrad.manual_seed``) and scale the others by ``1 / (1 - p)``; else ``input`` unchanged.

    >>> import dualgrad as dg
    >>> dg.nn.functional.dropout(dg.ones(3), 0.5, training=False)
    tensor([1., 1., 1.])
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:  # (torch's: the result written into ``input``)
        return written_into(input, dropout(input.clone(), p, training))
    if p == 1.0:
        return input * 0.0
    keep = bernoulli(input.detach() * 0.0 + (1.0 - p))
    return input * keep * (1.0 / (1.0 - p))


def _integer_values(x: Tensor) -> np.ndarray:
    """The values of an index tensor, for bounds checks (inside ``vmap``: those of the whole batch)."""
    return physical_value(x)._data


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows ``weight[input]``; the row ``padding_idx`` gets no gradient.

    >>> import dualgrad as dg
    >>> dg.nn.functional.embedding(dg.tensor([2, 0]), dg.tensor([[0., 1.], [2., 3.], [4., 5.]]))
    tensor([[4., 5.],
            [0., 1.]])
    """
    if input.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    for name, value in (("max_norm", max_norm), ("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
        if value:
            raise NotImplementedError(f"embedding: {name}={value!r} is not supported by dualgrad")
    values = _integer_values(input)
    if values.size and (values.min() < 0 or values.max() >= weight.shape[0]):
        raise IndexError("index out of range in self")
    rows = weight[input]
    if padding_idx is None:
        return rows
    padding_idx = padding_idx % weight.shape[0]
    return where((input == padding_idx).unsqueeze(-1), rows.detach(), rows)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``out[..., c] = 1`` where ``tensor == c`` (int64); ``num_classes=-1``: one more than the largest value.

    >>> import dualgrad as dg
    >>> dg.nn.functional.one_hot(dg.tensor([0, 2]))
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    if tensor.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = _integer_values(tensor)
    if values.size and values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(values.max()) + 1 if values.size else 0
    elif values.size and values.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes)).long()
