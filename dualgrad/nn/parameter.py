"""``nn.Parameter`` and ``nn.Buffer``: tensors a Module registers as its state.

A parameter is a plain leaf ``Tensor`` carrying a ``parameter`` mark (in its metadata), not an instance of a
Tensor subclass: the engines tell leaves from graph nodes by ``type(t) is Tensor``, and a subclass would
leave that fast test. ``isinstance(p, Parameter)`` reads the mark (through the metaclass), the repr starts
with torch's ``Parameter containing:`` and ``copy.deepcopy`` keeps the mark.
"""

from __future__ import annotations

from typing import Any

from ..factories import tensor as _tensor
from ..tensor import Tensor, new_leaf


def is_parameter(x: Any) -> bool:
    """Whether ``x`` is a tensor marked as a Module parameter."""
    return isinstance(x, Tensor) and bool(x._extra) and bool(x._extra.get("parameter"))


class _ParameterMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """A tensor that a Module registers as a parameter when assigned as its attribute.

    ``Parameter(data, requires_grad=True)`` is a leaf sharing ``data``'s memory.

    >>> import dualgrad as dg
    >>> p = dg.nn.Parameter(dg.tensor([1., 2.]))
    >>> p
    Parameter containing:
    tensor([1., 2.], requires_grad=True)
    >>> isinstance(p, dg.nn.Parameter), isinstance(p, dg.Tensor)
    (True, True)
    """

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = _tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        param = new_leaf(data.detach()._data, requires_grad)
        param._get_extra()["parameter"] = True
        return param


class _BufferMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and bool(obj._extra) and "buffer" in obj._extra


class Buffer(metaclass=_BufferMeta):
    """A tensor that a Module registers as a buffer when assigned as its attribute (``persistent``: whether
    it goes into ``state_dict``).

    >>> import dualgrad as dg
    >>> m = dg.nn.Module()
    >>> m.steps = dg.nn.Buffer(dg.zeros(1))
    >>> list(m.state_dict())
    ['steps']
    """

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = _tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): argument 'data' must be Tensor, not {type(data).__name__}")
        buffer = data.detach()
        buffer._get_extra()["buffer"] = persistent
        return buffer
