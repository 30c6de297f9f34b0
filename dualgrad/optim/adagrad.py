"""``Adagrad``: gradient steps scaled by the root of the summed squared gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap
from .optimizer import Optimizer, real_view, scalar_state

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, torch's formulas (single-tensor path).

    With :math:`g` the gradient (negated if ``maximize``) plus :math:`\lambda\theta` and :math:`t` the step
    count: :math:`\tilde\gamma = \gamma / (1 + (t-1)\eta)` (``lr_decay`` :math:`\eta`),
    :math:`s \leftarrow s + g^2`, :math:`\theta \leftarrow \theta - \tilde\gamma\, g / (\sqrt{s} + \epsilon)`.
    The state (``step``, ``sum`` starting at ``initial_accumulator_value``) is created with the optimizer,
    as torch's.

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.Adagrad([w], lr=0.1)
    >>> (w ** 2).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.9000], requires_grad=True)
    """

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = scalar_state()
                start = initial_accumulator_value
                self.state[p]["sum"] = _wrap(np.full_like(p._data, complex(start, start) if p.is_complex() else start))

    def _update(self, param: Tensor, grad: np.ndarray, state: dict, group: dict) -> None:
        theta = real_view(param._data)
        g = real_view(grad)
        state["step"]._data += 1
        step = float(state["step"]._data)
        if group["maximize"]:
            g = -g
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * theta
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        s = real_view(state["sum"]._data)
        s += g * g
        std = np.sqrt(s)
        std += group["eps"]
        theta -= clr * (g / std)
