"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad``, ``step`` and state dicts, as torch's.

Updates run on the parameters' arrays in place, outside any graph (as torch's updates under ``no_grad``),
and bump each parameter's version counter, so that a graph that saved a parameter before the step
refuses a later backward through it, as torch's does.
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from ..factories import get_default_dtype
from ..reverse import enable_grad, no_grad
from ..tensor import Tensor, _wrap

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """The default of a hyperparameter that every parameter group must give (SGD's ``lr`` in old torch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(value: Any) -> str:
    """torch's ``typename``: ``torch.DoubleTensor`` for a Tensor, the qualified class name otherwise."""
    if isinstance(value, Tensor):
        return value.type()
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module in ("builtins", "__builtin__") else f"{module}.{name}"


def scalar_state(value: float = 0.0) -> Tensor:
    """A 0-d tensor of the default dtype: the ``step`` counter kept in each parameter's state, as torch's."""
    return _wrap(np.array(value, dtype=get_default_dtype()))


def real_view(array: np.ndarray) -> np.ndarray:
    """A complex array seen as real pairs (torch's ``view_as_real``), so that updates treat real and
    imaginary parts as independent parameters; a real array as it is."""
    return array.view(array.real.dtype) if array.dtype.kind == "c" else array


class Optimizer:
    """Base class of the optimizers: holds ``param_groups`` (a list of dicts with ``'params'`` and the
    hyperparameters), ``defaults`` and ``state`` (a dict from parameter to its buffers).

    ``params`` is an iterable of Tensors or of dicts (parameter groups); a group's missing
    hyperparameters take the ``defaults``.

    >>> import dualgrad as dg
    >>> w = dg.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=0.1)
    >>> (w ** 2).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8000, 1.6000], requires_grad=True)
    """

    def __init__(self, params: Any, defaults: dict[str, Any]):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # -- parameter groups --------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own hyperparameters) to ``param_groups``, with torch's checks.

        >>> import dualgrad as dg
        >>> opt = dg.optim.SGD([dg.zeros(2, requires_grad=True)], lr=0.1)
        >>> opt.add_param_group({"params": [dg.zeros(1, requires_grad=True)], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}")
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if isinstance(param_group.get("lr"), Tensor):
            raise TypeError(f"{type(self).__name__}(): a Tensor lr is not supported by dualgrad (lr); pass a float")
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if not existing.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and steps -----------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the ``.grad`` of every parameter: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    grad = p.grad
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a ``.grad`` by one step; returns ``closure()``'s loss if given
        (the closure runs with grad mode on, the update under ``no_grad``)."""
        self._opt_called = True  # for the schedulers' check of the call order, as torch's
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict) -> None:
        """Update every parameter of ``group`` that has a gradient, one ``_update`` each (an optimizer may
        instead update the whole group at once)."""
        keeps_state = self._keeps_state(group)
        for p in group["params"]:
            if p._grad is not None:
                self._update(p, p._grad._data, self.state[p] if keeps_state else {}, group)
                p._bump_version()

    def _keeps_state(self, group: dict) -> bool:
        """Whether steps with this group's hyperparameters keep per-parameter state (SGD without momentum
        does not: its ``state`` stays empty, as torch's)."""
        return True

    def _update(self, param: Tensor, grad: np.ndarray, state: dict, group: dict) -> None:
        """Update ``param``'s array in place from ``grad`` (an array), its ``state`` and its ``group``."""
        raise NotImplementedError

    # -- state dicts -------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: buffers}, 'param_groups': [group with 'params' as indices]}``, torch's layout:
        parameters are numbered in group order; the buffers are the optimizer's own (not copies).

        >>> import dualgrad as dg
        >>> w = dg.tensor([1.0], requires_grad=True)
        >>> opt = dg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = dg.tensor([1.0])
        >>> opt.step()
        >>> opt.state_dict()["state"]
        {0: {'momentum_buffer': tensor([1.])}}
        """
        mapping: dict[int, int] = {}
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                mapping.setdefault(id(p), len(mapping))
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state and hyperparameters of ``state_dict`` (from ``state_dict()``, of an optimizer over
        parameters of the same shapes in the same order); buffers are copied, floating ones cast to their
        parameter's dtype (``step`` counters keep theirs). torch shares the buffers of ``state_dict`` when
        their dtype is already the parameter's, so that two optimizers would update the same buffers;
        dualgrad always copies."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, value)
            else:
                state[key] = copy.deepcopy(value)
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        return "\n".join(lines) + "\n)"


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    """A deep copy of ``value`` with its floating tensors cast to ``param``'s dtype (``step`` kept)."""
    if isinstance(value, Tensor):
        value = value.detach().clone()
        if key != "step" and param.is_floating_point() and value.is_floating_point():
            value = value.to(param.dtype)
        return value
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return copy.deepcopy(value)

