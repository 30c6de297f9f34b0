"""``Variable``: the deprecated torch shim; calling it returns a plain Tensor."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .tensor import Tensor, _wrap


class _VariableMeta(type):
    """Makes ``Variable(...)`` return a Tensor and every Tensor an instance of ``Variable``."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Any = None, requires_grad: bool = False, volatile: bool | None = None) -> Tensor:
        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with dualgrad.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = np.empty(0)
        elif isinstance(data, Tensor):
            return data.detach().requires_grad_(bool(requires_grad))
        elif not isinstance(data, np.ndarray):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return _wrap(data).requires_grad_(bool(requires_grad))


class Variable(metaclass=_VariableMeta):
    """Deprecated (as in torch, which no longer warns about it): ``Variable(tensor, requires_grad=False)``.

    Calling it returns ``tensor.detach()`` (a new leaf sharing the data) with
    ``requires_grad`` set; an ndarray is wrapped without a copy, no argument gives
    an empty tensor, and any other data is refused. ``volatile`` is accepted and
    ignored with a warning (use ``no_grad``). Every Tensor is an instance of
    ``Variable``, so old ``isinstance(x, Variable)`` checks keep working.

    >>> import dualgrad as dg
    >>> x = dg.ones(2)
    >>> v = dg.Variable(x, requires_grad=True)
    >>> type(v).__name__, v.requires_grad, v.is_leaf, isinstance(x, dg.Variable)
    ('Tensor', True, True, True)
    >>> dg.Variable([1., 2.])
    Traceback (most recent call last):
      ...
    TypeError: Variable data has to be a tensor, but got list
    """
