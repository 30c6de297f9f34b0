"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, real_view, scalar_state

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam, torch's formulas (single-tensor path).

    With :math:`g` the gradient (negated if ``maximize``) and :math:`t` the step count: weight decay
    :math:`\lambda` adds :math:`\lambda\theta` to :math:`g` (or, ``decoupled_weight_decay=True`` as AdamW,
    scales :math:`\theta` by :math:`1 - \gamma\lambda`); then
    :math:`m \leftarrow m + (1-\beta_1)(g - m)`, :math:`v \leftarrow \beta_2 v + (1-\beta_2) g^2`,
    :math:`\hat v = \max(\hat v, v)` if ``amsgrad`` (else :math:`v`), and
    :math:`\theta \leftarrow \theta - \frac{\gamma}{1-\beta_1^t}\,
    \frac{m}{\sqrt{\hat v}/\sqrt{1-\beta_2^t} + \epsilon}`.
    State: ``step``, ``exp_avg`` (:math:`m`), ``exp_avg_sq`` (:math:`v`), ``max_exp_avg_sq``.

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = dg.optim.Adam([w], lr=0.1)
    >>> (w ** 2).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None, decoupled_weight_decay: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: np.ndarray, state: dict, group: dict) -> None:
        if not state:
            state["step"] = scalar_state()
            state["exp_avg"] = _wrap(np.zeros_like(param._data))
            state["exp_avg_sq"] = _wrap(np.zeros_like(param._data))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _wrap(np.zeros_like(param._data))
        theta = real_view(param._data)
        g = real_view(grad)
        if group["maximize"]:
            g = -g
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        state["step"]._data += 1
        step = float(state["step"]._data)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                theta *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * theta
        m = real_view(state["exp_avg"]._data)
        v = real_view(state["exp_avg_sq"]._data)
        m += (1 - beta1) * (g - m)  # torch's lerp_ (weight 1 - beta1 < 0.5)
        v *= beta2
        v += (1 - beta2) * (g * g)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            v_max = real_view(state["max_exp_avg_sq"]._data)
            np.maximum(v_max, v, out=v_max)
            v = v_max
        denom = np.sqrt(v) / bias_correction2_sqrt
        denom += eps
        theta -= (lr / (1 - beta1 ** step)) * (m / denom)


class AdamW(Adam):
    r"""Adam with decoupled weight decay (default 0.01): each step first scales :math:`\theta` by
    :math:`1 - \gamma\lambda`, then takes Adam's step (see ``Adam``).

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w ** 2).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8500], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
