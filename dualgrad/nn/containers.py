"""Containers of modules: ``Sequential`` (a pipeline), ``ModuleList`` and ``ModuleDict`` (registered
collections); ``ParameterList`` and ``ParameterDict`` (registered collections of parameters)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter, is_parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _index(index: Any, length: int) -> int:
    """``index`` as a non-negative position in a container of ``length`` modules (torch's IndexError)."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class Sequential(Module):
    """Modules applied one after the other: ``Sequential(a, b)(x) == b(a(x))``. Built from modules (named
    ``"0"``, ``"1"``, ...) or from an ordered dict of named modules.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> net = dg.nn.Sequential(dg.nn.Linear(2, 3), dg.nn.Tanh())
    >>> net
    Sequential(
      (0): Linear(in_features=2, out_features=3, bias=True)
      (1): Tanh()
    )
    >>> net(dg.ones(4, 2)).shape, len(net), net[-1]
    ((4, 3), 2, Tanh())
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(list(self._modules)[_index(index, len(self))], module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice) else [keys[_index(index, len(self))]]):
            del self._modules[key]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        modules = list(self._modules.values())
        modules.insert(index % (n + 1) if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def pop(self, index: int) -> Module:
        module = self[index]
        del self[index]
        return module

    def forward(self, input: Any) -> Any:  # noqa: A002 - torch's name
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules whose parameters the owner registers (no ``forward`` of its own).

    >>> import dualgrad as dg
    >>> layers = dg.nn.ModuleList([dg.nn.Linear(2, 2) for _ in range(3)])
    >>> layers
    ModuleList(
      (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
    )
    >>> len(list(layers.parameters()))
    6
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_index(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        modules = list(self._modules.values())
        del modules[index if isinstance(index, slice) else _index(index, len(self))]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self, *other])

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def pop(self, index: int | slice) -> Module:
        module = self[index]
        del self[index]
        return module

    def __repr__(self) -> str:
        """torch's repr: runs of equal consecutive modules print once, as ``(i-j): n x Module(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                label = f"({start})" if i - 1 == start else f"({start}-{i - 1}): {i - start} x"
                text = f"{label}: {reprs[start]}" if i - 1 == start else f"{label} {reprs[start]}"
                lines.append(_addindent(text, 2))
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules (insertion-ordered) whose parameters the owner registers.

    >>> import dualgrad as dg
    >>> heads = dg.nn.ModuleDict({"act": dg.nn.ReLU(), "out": dg.nn.Identity()})
    >>> list(heads), heads["act"]
    (['act', 'out'], ReLU())
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair) if hasattr(pair, '__len__') else '?'}; 2 is required")
            self[pair[0]] = pair[1]


def _as_parameter(value: Any) -> Any:
    """A tensor as a Parameter (torch's ParameterList / ParameterDict convert plain tensors)."""
    return Parameter(value) if isinstance(value, Tensor) and not is_parameter(value) else value


def _parameter_line(key: str, value: Any, type_name: bool) -> str:
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(n) for n in value.shape)
    kind = value.type() if type_name else str(value.dtype)
    return f"  ({key}): Parameter containing: [{kind} of size {size}]"


class ParameterList(Module):
    """A list of parameters that the owner registers (plain tensors become Parameters).

    >>> import dualgrad as dg
    >>> params = dg.nn.ParameterList([dg.zeros(2, 3), dg.zeros(3, dtype=dg.float32)])
    >>> params
    ParameterList(
        (0): Parameter containing: [float64 of size 2x3]
        (1): Parameter containing: [float32 of size 3]
    )
    >>> [name for name, _ in params.named_parameters()]
    ['0', '1']
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self)[index])
        return getattr(self, str(_index(index, len(self))))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, str(_index(index, len(self))), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        setattr(self, str(self._size - 1), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(str(i), p, type_name=False) for i, p in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters that the owner registers (plain tensors become Parameters).

    >>> import dualgrad as dg
    >>> params = dg.nn.ParameterDict({"scale": dg.ones(2)})
    >>> params["scale"].requires_grad, list(params.keys())
    (True, ['scale'])
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[k] for k in self._keys]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def update(self, parameters: Any) -> None:
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p, type_name=True) for k, p in self.items())
