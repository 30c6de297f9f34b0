"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import fastpath
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

    def _step_group(self, group: dict) -> None:
        """One step of every parameter of ``group`` that has a gradient: over all of them at once in flat
        buffers when they allow it (``_FlatMoments``), else parameter by parameter; both evaluate the same
        formula in the same order, element by element, so they give the same numbers."""
        params = [p for p in group["params"] if p._grad is not None]
        if not params:
            return
        flat = self._flat_moments(group, params)
        if flat is not None:
            flat.steps += 1
            g = np.concatenate([real_view(p._grad._data) for p in params], axis=None)
            thetas = [real_view(p._data) for p in params]
            theta_flat = np.concatenate(thetas, axis=None) if group["weight_decay"] and not group[
                "decoupled_weight_decay"] else None
            update = _adam_update(g, flat.m, flat.v, flat.v_max, flat.bias_corrections(group), group,
                                  thetas, theta_flat)
            for theta, part in zip(thetas, flat.slices):
                theta += update[part].reshape(theta.shape)
            for p in params:
                p._bump_version()
            return
        for p in params:
            state = self.state[p]
            if not state:
                _init_state(state, p._data, group["amsgrad"])
            theta = real_view(p._data)
            state["step"]._data += 1
            v_max = state["max_exp_avg_sq"]._data if group["amsgrad"] else None
            update = _adam_update(real_view(p._grad._data), real_view(state["exp_avg"]._data),
                                  real_view(state["exp_avg_sq"]._data), None if v_max is None else real_view(v_max),
                                  _bias_corrections(float(state["step"]._data), group), group, [theta], theta)
            theta += update
            p._bump_version()

    def _flat_moments(self, group: dict, params: list[Tensor]) -> _FlatMoments | None:
        """The flat moment buffers of ``params`` (the group's parameters that have a gradient) if they have one
        real dtype and the state still holds the buffers' views (rebuilt from the state otherwise, e.g. when
        another set of parameters has gradients); None when the step must go parameter by parameter."""
        if not fastpath.ENABLED:
            return None
        cache = self.__dict__.setdefault("_flat_cache", {})
        flat = cache.get(id(group))
        if flat is None or flat.group is not group or not flat.serves(self.state, params, group["amsgrad"]):
            flat = _FlatMoments.build(self.state, params, group["amsgrad"])
            if flat is None:
                cache.pop(id(group), None)
                return None
            flat.group = group
            live = {id(g) for g in self.param_groups}  # (a load_state_dict replaces the groups: forget theirs)
            for key in [key for key in cache if key not in live]:
                del cache[key]
            cache[id(group)] = flat
        return flat


def _init_state(state: dict, data: np.ndarray, amsgrad: bool) -> None:
    """torch's initial Adam state: step 0 and zero moments of the parameter's shape and dtype."""
    state["step"] = scalar_state()
    state["exp_avg"] = _wrap(np.zeros_like(data))
    state["exp_avg_sq"] = _wrap(np.zeros_like(data))
    if amsgrad:
        state["max_exp_avg_sq"] = _wrap(np.zeros_like(data))


def _bias_corrections(step: float, group: dict) -> tuple[float, float]:
    """torch's step size ``-lr / (1 - beta1^t)`` and ``sqrt(1 - beta2^t)`` at step ``t``, in Python floats
    as torch's."""
    beta1, beta2 = group["betas"]
    return -group["lr"] / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5


def _adam_update(g: np.ndarray, m: np.ndarray, v: np.ndarray, v_max: np.ndarray | None, corrections: tuple,
                 group: dict, thetas: list[np.ndarray], theta: np.ndarray | None) -> np.ndarray:
    """Update the moments ``m``, ``v`` (and ``v_max``) in place from the gradient ``g``, and return the
    increment of the parameter, torch's single-tensor formula in its order of operations; ``corrections``
    are ``(-lr / (1 - beta1^t), sqrt(1 - beta2^t))``, numbers or arrays in ``g``'s layout.

    ``thetas`` are the parameter arrays (scaled in place by decoupled weight decay), ``theta`` their values
    in ``g``'s layout (needed by L2 weight decay only). torch fuses ``lerp_`` and ``addcmul_`` into
    fused multiply-adds, which NumPy cannot, so the moments may differ from torch's in the last bit."""
    lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    if group["maximize"]:
        g = -g
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            for array in thetas:
                array *= 1 - lr * weight_decay
        else:
            g = g + weight_decay * theta
    d = g - m  # torch's lerp_ with weight 1 - beta1 < 0.5: m + (1 - beta1) (g - m)
    d *= 1 - beta1
    m += d
    v *= beta2
    sq = (1 - beta2) * g  # torch's addcmul_: v + ((1 - beta2) g) g
    sq *= g
    v += sq
    if v_max is not None:
        np.maximum(v_max, v, out=v_max)
        v = v_max
    step_size, bias_correction2_sqrt = corrections
    denom = np.sqrt(v)
    denom /= bias_correction2_sqrt
    denom += eps
    update = step_size * m  # torch's addcdiv_: theta + (-step_size m) / denom
    update /= denom
    return update


class _FlatMoments:
    """Adam's moments of a whole parameter group in one flat buffer each (in parameter order, complex
    parameters as real pairs), with the per-parameter state entries being views of them: the state keeps
    torch's layout while a step costs a fixed number of NumPy calls instead of a dozen per parameter."""

    def __init__(self, params: list[Tensor], views: list[tuple], steps: np.ndarray, m: np.ndarray,
                 v: np.ndarray, v_max: np.ndarray | None, offsets: list[int]):
        self.params, self.views, self.steps = params, views, steps
        self.entries = [entries for entries, key, _ in views if key == "step"]
        self.m, self.v, self.v_max = m, v, v_max
        self.slices = [slice(a, b) for a, b in zip([0, *offsets], [*offsets, m.size])]
        self.sizes = [part.stop - part.start for part in self.slices]
        self.group: dict | None = None

    @classmethod
    def build(cls, state: dict, params: list[Tensor], amsgrad: bool) -> _FlatMoments | None:
        """Move the state of ``params`` (initialised if empty) into flat buffers; None if their real dtypes
        differ or a state entry is missing or of another dtype (then the step goes parameter by parameter)."""
        dtypes = {real_view(p._data).dtype for p in params}
        if len(dtypes) != 1:
            return None
        dtype = dtypes.pop()
        keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
        for p in params:
            if not state[p]:
                _init_state(state[p], p._data, amsgrad)
            entries = state[p]
            if not all(k in entries and isinstance(entries[k], Tensor) and entries[k]._data.dtype == p._data.dtype
                       and entries[k]._data.shape == p._data.shape for k in keys):
                return None
            step = entries.get("step")
            if not isinstance(step, Tensor) or step._data.shape != () or step._data.dtype != state[params[0]][
                    "step"]._data.dtype:
                return None
        sizes = [real_view(p._data).size for p in params]
        offsets = np.cumsum(sizes)[:-1].tolist()
        buffers = [np.concatenate([real_view(state[p][k]._data) for p in params], axis=None).astype(dtype, copy=False)
                   for k in keys]
        steps = np.array([state[p]["step"]._data for p in params], dtype=state[params[0]]["step"]._data.dtype)
        parts = [np.split(buffer, offsets) for buffer in buffers]
        views = []
        for i, p in enumerate(params):
            entries = state[p]
            entries["step"] = _wrap(steps[i:i + 1].reshape(()))
            for k, split in zip(keys, parts):
                entries[k] = _wrap(split[i].view(p._data.dtype).reshape(p._data.shape))
            views.extend((entries, k, entries[k]._data) for k in ("step", *keys))
        return cls(params, views, steps, buffers[0], buffers[1], buffers[2] if amsgrad else None, offsets)

    def serves(self, state: dict, params: list[Tensor], amsgrad: bool) -> bool:
        """Whether these buffers still are the state of exactly ``params`` (none replaced, e.g. by
        ``load_state_dict`` or by hand)."""
        if (self.v_max is not None) != amsgrad or len(params) != len(self.params):
            return False
        if not all(map(operator.is_, params, self.params)) or not all(
                map(operator.is_, map(state.get, params), self.entries)):
            return False
        for entries, key, array in self.views:
            t = entries.get(key)
            if t is None or t._data is not array:
                return False
        return True

    def bias_corrections(self, group: dict) -> tuple:
        """The step size and bias correction of the current step counts (``_bias_corrections``): two numbers
        when the counts are equal (the usual case), else per parameter, computed as torch's in Python floats,
        rounded to the moments' dtype (as NumPy rounds a Python float meeting an array) and repeated over
        each parameter's elements."""
        steps = self.steps.tolist()
        if steps.count(steps[0]) == len(steps):
            return _bias_corrections(steps[0], group)
        per_parameter = [_bias_corrections(step, group) for step in steps]
        return tuple(np.repeat(np.array(c, dtype=self.m.dtype), self.sizes) for c in zip(*per_parameter))


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
