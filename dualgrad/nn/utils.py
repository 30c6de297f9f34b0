"""``dualgrad.nn.utils``: gradient clipping and flattening parameters into one vector.

>>> import dualgrad as dg
>>> w = dg.nn.Parameter(dg.zeros(2))
>>> w.grad = dg.tensor([3., 4.])
>>> dg.nn.utils.clip_grad_norm_([w], max_norm=1.0), w.grad
(tensor(5.), tensor([0.6000, 0.8000]))
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..factories import tensor
from ..ops.shape.core import cat, stack
from ..ops.torch_names import typename
from ..reverse import no_grad
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients in place so that their joint ``norm_type``-norm is at most ``max_norm``
    (by ``min(1, max_norm / (norm + 1e-6))``); return the norm before clipping."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        norms = stack([g.detach().abs().max() if math.isinf(norm_type) else g.detach().norm(norm_type)
                       for g in grads])
        total = norms.max() if math.isinf(norm_type) else norms.norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
                "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`")
        coefficient = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coefficient.to(g.dtype))
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``."""
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-float(clip_value), float(clip_value))


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable).

    >>> import dualgrad as dg
    >>> dg.nn.utils.parameters_to_vector([dg.ones(2, 1), dg.zeros(1)])
    tensor([1., 1., 0.])
    """
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make the parameters' data consecutive slices of ``vec`` (sharing its memory, as torch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    start = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[start:start + n].view_as(param).data
        start += n
