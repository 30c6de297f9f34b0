"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, real_view

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent, torch's formulas (single-tensor path).

    With :math:`g` the gradient (negated if ``maximize``), :math:`\lambda` the weight decay,
    :math:`\mu` the momentum and :math:`\tau` the dampening, each step does
    :math:`g \leftarrow g + \lambda\theta`; then, if :math:`\mu \ne 0`, :math:`b \leftarrow g` on the first
    step and :math:`b \leftarrow \mu b + (1 - \tau) g` after, and :math:`g \leftarrow g + \mu b` (Nesterov) or
    :math:`g \leftarrow b`; finally :math:`\theta \leftarrow \theta - \gamma g`. The buffer :math:`b` is the
    state ``'momentum_buffer'``.

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad()
    ...     (w ** 2).sum().backward()
    ...     opt.step()
    >>> w
    tensor([0.4600], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _keeps_state(self, group: dict) -> bool:
        return group["momentum"] != 0

    def _update(self, param: Tensor, grad: np.ndarray, state: dict, group: dict) -> None:
        theta = real_view(param._data)
        g = real_view(grad)
        if group["maximize"]:
            g = -g
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * theta
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = _wrap(g.copy().view(param._data.dtype))
                b = real_view(buf._data)
            else:
                b = real_view(buf._data)
                b *= momentum
                b += (1 - group["dampening"]) * g
            g = g + momentum * b if group["nesterov"] else b
        theta -= group["lr"] * g
