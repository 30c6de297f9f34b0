"""``functional_call`` and ``stack_module_state`` (``torch.func``'s): a Module as a function of its
parameters and buffers, so that ``grad``, ``vmap``, ``jacrev`` and ``hessian`` apply to it.

``functional_call`` puts the given tensors into the module's parameter and buffer dicts for the duration of
the call (directly, not through ``__setattr__``: they may be plain or batched tensors, not Parameters) and
restores the originals afterwards, also when the call raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..ops.shape.core import stack
from ..tensor import Tensor
from .module import Module

__all__ = ["functional_call", "stack_module_state"]


def _merge(parameter_and_buffer_dicts: Any) -> dict:
    if isinstance(parameter_and_buffer_dicts, Mapping):
        return dict(parameter_and_buffer_dicts)
    if isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        merged: dict = {}
        for d in parameter_and_buffer_dicts:
            repeated = [k for k in d if k in merged]
            if repeated:
                raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                                 "ambiguous")
            merged.update(d)
        return merged
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                     f"{type(parameter_and_buffer_dicts)}")


def _tied_names(module: Module) -> dict[str, list[str]]:
    """For each tensor registered under several names: its first name -> all its names."""
    names: dict[int, list[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        names.setdefault(id(t), []).append(name)
    return {group[0]: group for group in names.values() if len(group) > 1}


def _expand_tied(module: Module, values: dict) -> dict:
    """Give every name of a tied tensor the value given for one of its names (torch's ``tie_weights``)."""
    values = dict(values)
    for group in _tied_names(module).values():
        given = [n for n in group if n in values]
        if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                             "Consider using tie_weights=False")
        if given:
            for n in group:
                values[n] = values[given[0]]
    return values


def _check_strict(module: Module, values: dict, tie_weights: bool) -> None:
    all_names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    all_names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    required = set(all_names)
    if tie_weights:
        for group in _tied_names(module).values():
            if any(n in values for n in group):
                required -= set(group)
    missing = sorted(required - set(values))
    unexpected = sorted(set(values) - all_names)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(errors))


@contextmanager
def _swapped(module: Module, values: dict) -> Any:
    """Install ``values`` (dotted name -> tensor) into ``module``; restore the originals on exit."""
    undo: list = []
    try:
        for name, value in values.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name)
            for store in (owner._parameters, owner._buffers):
                if attr in store:
                    undo.append((store, attr, store[attr]))
                    store[attr] = value
                    break
            else:
                had = attr in owner.__dict__
                undo.append((owner.__dict__, attr, owner.__dict__[attr] if had else _ABSENT))
                owner.__dict__[attr] = value
        yield
    finally:
        for store, attr, old in reversed(undo):
            if old is _ABSENT:
                store.pop(attr, None)
            else:
                store[attr] = old


_ABSENT = object()


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: dict | None = None,
                    *, tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with the parameters and buffers named in ``parameter_and_buffer_dicts``
    (a dict of dotted names to tensors, or a sequence of such dicts) in place of its own. Names not given keep
    the module's tensors (``strict=True``: every one must be given); with ``tie_weights``, a value for one
    name of a tensor registered under several names is used for all of them.

    >>> import dualgrad as dg
    >>> from dualgrad.func import functional_call, grad
    >>> model = dg.nn.Linear(2, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> x = dg.tensor([[1., 2.]])
    >>> loss = lambda p: functional_call(model, p, (x,)).sum()
    >>> grad(loss)(params)["weight"]
    tensor([[1., 2.]])
    """
    values = _merge(parameter_and_buffer_dicts)
    if strict:
        _check_strict(module, values, tie_weights)
    if tie_weights:
        values = _expand_tied(module, values)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values):
        return module(*args, **kwargs)


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: each parameter and buffer of ``models`` (modules of one class, in one mode)
    stacked along a new leading dimension; the stacked parameters are new leaves that require grad when the
    originals do. With ``functional_call`` and ``vmap`` they evaluate an ensemble in one call.

    >>> import dualgrad as dg
    >>> from dualgrad.func import stack_module_state
    >>> params, buffers = stack_module_state([dg.nn.Linear(3, 2) for _ in range(4)])
    >>> {k: v.shape for k, v in params.items()}
    {'weight': (4, 2, 3), 'bias': (4, 2)}
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(pairs_of: Any, leaves: bool) -> dict:
        out = {}
        for name, _ in pairs_of(models[0]):
            tensors = [dict(pairs_of(m))[name] for m in models]
            requires_grad = {t.requires_grad for t in tensors}
            if leaves and len(requires_grad) > 1:
                raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
            t = stack(tensors).detach()
            out[name] = t.requires_grad_(requires_grad.pop()) if leaves else t
        return out

    return (stacked(lambda m: m.named_parameters(), True), stacked(lambda m: m.named_buffers(), False))
