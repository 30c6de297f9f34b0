"""``nn.Module``: the base class of layers, with torch's registration, traversal, state and hook API.

A Module keeps its parameters, buffers and child modules in three insertion-ordered dicts
(``_parameters``, ``_buffers``, ``_modules``); ``__setattr__`` sorts an assigned value into the right one and
``__getattr__`` finds it there. ``functional_call`` swaps entries of these dicts for the duration of a call,
which is how one module runs under ``grad``, ``vmap`` and the other transforms with other tensors.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ..base.hooks import RemovableHandle, add_hook
from ..ops.torch_names import typename
from ..reverse import no_grad
from ..tensor import Tensor
from ._messages import torch_size
from .parameter import Parameter, is_parameter

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _check_name(kind: str, name: Any, module: Module) -> None:
    """torch's checks of a name given to ``register_buffer`` / ``register_parameter`` / ``add_module``."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}' if kind == "module"
                       else f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    store = {"buffer": "_buffers", "parameter": "_parameters", "module": "_modules"}[kind]
    if hasattr(module, name) and name not in module.__dict__[store]:
        raise KeyError(f"attribute '{name}' already exists")


class Module:
    """Base class of all layers: subclass it, create sub-layers and parameters in ``__init__`` and write
    ``forward``; calling the module runs its forward pre-hooks, ``forward`` and its forward hooks.

    >>> import dualgrad as dg
    >>> class Affine(dg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = dg.nn.Parameter(dg.tensor([2.]))
    ...         self.inner = dg.nn.Identity()
    ...     def forward(self, x):
    ...         return self.inner(x) * self.scale
    >>> m = Affine()
    >>> m(dg.tensor([1., 3.]))
    tensor([2., 6.], grad_fn=<MulBackward0>)
    >>> [name for name, _ in m.named_parameters()], m
    (['scale'], Affine(
      (inner): Identity()
    ))
    """

    training: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were "
                            "given")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", set())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", set())
        set_(self, "_forward_hooks_always_called", set())

    forward: Callable[..., Any]

    def _missing_forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _missing_forward

    # -- registration -------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (e.g. BatchNorm's running mean); ``persistent``
        buffers go into ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Add a parameter (a ``Parameter`` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self)
        if param is not None and not is_parameter(param):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                "the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (an attribute of that name then returns it)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        _check_name("module", name, self)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""``: this module)."""
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    # -- attributes -----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        store = self.__dict__
        for kind in ("_parameters", "_buffers", "_modules"):
            if kind in store and name in store[kind]:
                return store[kind][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        store = self.__dict__
        params = store.get("_parameters")
        if is_parameter(value):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in store:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            store["_modules"][name] = value
        elif "_modules" in store and name in store["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            store["_modules"][name] = value
        elif "_buffers" in store and name in store["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            store["_buffers"][name] = value
        elif isinstance(value, Tensor) and value._extra and "buffer" in value._extra:  # an nn.Buffer
            self._forget(name)
            self.register_buffer(name, value, persistent=value._extra["buffer"])
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Remove ``name`` from every store (before it is registered again in one)."""
        self.__dict__.pop(name, None)
        for kind in ("_parameters", "_buffers", "_modules"):
            self.__dict__[kind].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        for kind in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(kind, {}):
                del self.__dict__[kind][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __setstate__(self, state: dict) -> None:
        """Unpickling: tensors pickle without their parameter mark, so the registered ones get it back."""
        self.__dict__.update(state)
        for param in self._parameters.values():
            if param is not None:
                param._get_extra()["parameter"] = True

    def __dir__(self) -> list:
        return sorted({*super().__dir__(), *self._parameters, *self._buffers, *self._modules})

    # -- traversal -----------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module and every submodule, depth first, each once."""
        return iter(self._walk(set() if memo is None else memo, prefix, remove_duplicate))

    def _walk(self, memo: set, prefix: str, remove_duplicate: bool) -> list[tuple[str, Module]]:
        """``named_modules``' pairs in its order (pre-order), with an explicit stack: the traversal runs twice
        per training step (``zero_grad`` and the update), where nested generators cost more than the layers."""
        found, stack = [], [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if module in memo:
                    continue
                memo.add(module)
            found.append((name, module))
            dot = name + "." if name else ""
            stack.extend(reversed([(dot + key, child) for key, child in module._modules.items() if child is not None]))
        return found

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        modules = self._walk(set(), prefix, remove_duplicate) if recurse else [(prefix, self)]
        seen: set = set()
        for module_prefix, module in modules:
            dot = module_prefix + "." if module_prefix else ""
            for name, value in module.__dict__[store].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield dot + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, parameter)`` pairs; a parameter shared by two modules comes once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and on this module; return this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False``: evaluation mode) here and in every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the ``.grad`` of every parameter: to None (default), or to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = param.grad.detach().zero_()

    # -- dtype ---------------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        for module in self.modules():
            with no_grad():
                for param in module._parameters.values():
                    if param is None:
                        continue
                    param.data = fn(param)
                    if param.grad is not None:
                        param.grad = fn(param.grad)
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = fn(buffer)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Convert floating-point parameters and buffers to a dtype (``to(dg.float32)``, ``to(dtype=...)``);
        device arguments are passed on to ``Tensor.to``. Integer buffers keep their dtype, as in torch.
        dualgrad has no ``'meta'`` device (tensors with shapes but no data): ``to('meta')``, which torch.func's
        ensembling tutorial applies to the model it calls with stacked parameters, leaves the tensors as they
        are."""
        dtype = kwargs.pop("dtype", None)
        rest = []
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
                continue
            as_dtype = _as_dtype(arg)
            if as_dtype is not None:
                dtype = as_dtype
            elif str(arg) != "meta":  # (no shape-only device: torch.func's tutorials' ``to('meta')`` keeps data)
                rest.append(arg)
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.kind not in "fc":
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and t.dtype.kind in "fc":
                return t.to(*rest, dtype=dtype, **kwargs)
            return t.to(*rest, **kwargs) if rest or kwargs else t

        return self._apply(convert)

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    def half(self) -> Module:
        return self.to(np.float16)

    def cpu(self) -> Module:
        return self

    def cuda(self, device: Any = None) -> Module:
        """``to("cuda")``: each tensor's ``Tensor.to`` decides (dualgrad runs on the CPU)."""
        return self.to("cuda" if device is None else device)

    def type(self, dst_type: Any) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    # -- state -----------------------------------------------------------------------------------
    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """An ordered dict from dotted names to parameters and persistent buffers (detached unless
        ``keep_vars``); a tensor shared by two modules appears under both names."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy ``state_dict``'s tensors into the parameters and buffers of the same names (or, with
        ``assign``, make them the parameters). With ``strict``, missing and unexpected keys raise torch's
        ``RuntimeError``; shape mismatches always do. Nothing is copied when an error is raised."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        copies: list = []
        for prefix, module in self.named_modules(remove_duplicate=False):
            prefix = prefix + "." if prefix else ""
            local = {**{n: p for n, p in module._parameters.items() if p is not None},
                     **{n: b for n, b in module._buffers.items()
                        if b is not None and n not in module._non_persistent_buffers_set}}
            for name, current in local.items():
                key = prefix + name
                if key not in state_dict:
                    missing.append(key)
                    continue
                value = state_dict[key]
                if not isinstance(value, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                elif value.shape != current.shape:
                    errors.append(f"size mismatch for {key}: copying a param with shape {torch_size(value.shape)} "
                                  f"from checkpoint, the shape in current model is {torch_size(current.shape)}.")
                else:
                    copies.append((module, name, current, value))
            for key in state_dict:
                if isinstance(key, str) and key.startswith(prefix):
                    head = key[len(prefix):].split(".", 1)[0]
                    if head not in module._modules and head not in local:
                        unexpected.append(key)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))
        with no_grad():
            for module, name, current, value in copies:
                if not assign:
                    current.copy_(value)
                elif name in module._parameters:
                    module._parameters[name] = Parameter(value, requires_grad=current.requires_grad)
                else:
                    module._buffers[name] = value
        return _IncompatibleKeys(missing, unexpected)

    # -- calling -------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) runs before
        ``forward``; a result other than None replaces the arguments (and keyword arguments)."""
        handle = add_hook(self._forward_pre_hooks, hook)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs after ``forward``;
        a result other than None replaces the output. ``always_call``: also when ``forward`` raised."""
        handle = add_hook(self._forward_hooks, hook)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        try:
            output = self.forward(*args, **kwargs)
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    with contextlib.suppress(Exception):  # (torch reports the forward's error, not the hook's)
                        self._run_forward_hook(hook_id, hook, args, kwargs, None)
            raise
        for hook_id, hook in list(self._forward_hooks.items()):
            result = self._run_forward_hook(hook_id, hook, args, kwargs, output)
            if result is not None:
                output = result
        return output

    def _run_forward_hook(self, hook_id: int, hook: Callable, args: tuple, kwargs: dict, output: Any) -> Any:
        if hook_id in self._forward_hooks_with_kwargs:
            return hook(self, args, kwargs, output)
        return hook(self, args, output)

    # -- printing ------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr (override to describe the layer)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def _as_dtype(arg: Any) -> np.dtype | None:
    """``arg`` as a NumPy dtype, or None when it names none (a device)."""
    if isinstance(arg, np.dtype) or (isinstance(arg, type) and issubclass(arg, np.generic)):
        return np.dtype(arg)
    if isinstance(arg, str):
        try:
            return np.dtype(arg)
        except TypeError:
            return None
    return None
