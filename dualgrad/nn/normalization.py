"""``LayerNorm``, ``BatchNorm1d`` and ``BatchNorm2d`` layers."""

from __future__ import annotations

from typing import Any

from ..factories import tensor
from ..reverse import no_grad
from ..tensor import Tensor
from . import init
from ._factory import new_empty
from ._normalization import batch_norm, layer_norm
from .module import Module
from .parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class LayerNorm(Module):
    """Normalise over the last dimensions ``normalized_shape`` (see ``nn.functional.layer_norm``), then scale
    and shift by learned ``weight`` (ones) and ``bias`` (zeros) when ``elementwise_affine``.

    >>> import dualgrad as dg
    >>> dg.nn.LayerNorm(4)
    LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
    """

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                                 else tuple(normalized_shape))
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(new_empty(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(new_empty(*self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(new_empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(new_empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", new_empty(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", new_empty(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype="int64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """Batch statistics in training (updating the running ones by ``momentum``, or by a cumulative average
        when ``momentum`` is None), running statistics in evaluation mode."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / int(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                          self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` over the batch (and length) for each of the ``C``
    channels (see ``nn.functional.batch_norm``).

    >>> import dualgrad as dg
    >>> bn = dg.nn.BatchNorm1d(3)
    >>> bn, bn(dg.randn(8, 3)).shape, bn.num_batches_tracked
    (BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True), (8, 3), tensor(1))
    """

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` over batch and space, for each of the ``C`` channels."""

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")
