"""``RMSprop``: gradient steps scaled by a running root mean square of the gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, real_view, scalar_state

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop, torch's formulas (single-tensor path).

    With :math:`g` the gradient (negated if ``maximize``) plus :math:`\lambda\theta`:
    :math:`v \leftarrow \alpha v + (1-\alpha) g^2`; if ``centered``,
    :math:`\bar g \leftarrow \bar g + (1-\alpha)(g - \bar g)` and :math:`a = \sqrt{v - \bar g^2} + \epsilon`,
    else :math:`a = \sqrt{v} + \epsilon`; then with momentum :math:`\mu > 0`,
    :math:`b \leftarrow \mu b + g / a` and :math:`\theta \leftarrow \theta - \gamma b`, else
    :math:`\theta \leftarrow \theta - \gamma g / a`.
    State: ``step``, ``square_avg``, ``momentum_buffer`` (momentum > 0), ``grad_avg`` (centered).

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.RMSprop([w], lr=0.01)
    >>> (w ** 2).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.9000], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: np.ndarray, state: dict, group: dict) -> None:
        if not state:
            state["step"] = scalar_state()
            state["square_avg"] = _wrap(np.zeros_like(param._data))
            if group["momentum"] > 0:
                state["momentum_buffer"] = _wrap(np.zeros_like(param._data))
            if group["centered"]:
                state["grad_avg"] = _wrap(np.zeros_like(param._data))
        theta = real_view(param._data)
        g = real_view(grad)
        if group["maximize"]:
            g = -g
        state["step"]._data += 1
        alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * theta
        v = real_view(state["square_avg"]._data)
        v *= alpha
        v += (1 - alpha) * (g * g)
        if group["centered"]:
            g_avg = real_view(state["grad_avg"]._data)
            g_avg += (1 - alpha) * (g - g_avg)
            avg = np.sqrt(v - g_avg * g_avg)
        else:
            avg = np.sqrt(v)
        avg += eps
        if momentum > 0:
            buf = real_view(state["momentum_buffer"]._data)
            buf *= momentum
            buf += g / avg
            theta -= group["lr"] * buf
        else:
            theta -= group["lr"] * (g / avg)
