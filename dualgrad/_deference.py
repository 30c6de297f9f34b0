"""When a Tensor gives way to another array type, as NumPy's ``ndarray`` does (NEP 13 and NEP 18).

Labelled or distributed arrays (xarray's ``DataArray``, pandas objects, Dask arrays)
wrap arrays and take precedence over them: ``x * da`` must be ``da.__rmul__(x)`` (a
``DataArray`` holding a Tensor), not a Tensor computed from the wrapper's values. NumPy's
rules for ``ndarray``, which a Tensor follows:

* binary operators (``x + other``, ``x < other``, ...) return ``NotImplemented``, so that
  Python asks ``other``'s reflected operator, when ``other``'s type sets
  ``__array_ufunc__ = None`` or overrides ``__array_ufunc__``; a type without
  ``__array_ufunc__`` takes precedence when its ``__array_priority__`` is higher than a
  Tensor's (1000). (``ndarray`` itself calls the ufunc, whose override then runs; for a
  type with reflected operators the result is the same.)
* ``Tensor.__array_ufunc__`` returns ``NotImplemented`` when an input or ``out`` is of a type
  that overrides ``__array_ufunc__`` and is not a Tensor, so that NumPy calls that type's.
* ``Tensor.__array_function__`` returns ``NotImplemented`` when ``types`` holds a type that
  is neither ``ndarray`` nor a Tensor.

Reflected and in-place operators never defer (``ndarray``'s do not either: the other
operand has had its turn). Tensors, ndarrays, NumPy scalars, Python numbers and
sequences are never deferred to, and are tested first, so that the common operators pay
one set lookup.

>>> import numpy as np, dualgrad as dg
>>> class Labelled:
...     __array_ufunc__ = None
...     def __radd__(self, other):
...         return "Labelled.__radd__"
>>> dg.tensor([1.0]) + Labelled()
'Labelled.__radd__'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .tensor import Tensor

# Types handled without a look at their attributes (the common operands first).
_OWN_OPERANDS = frozenset({Tensor, float, int, bool, complex, np.ndarray, np.float64, np.float32, np.int64,
                           np.bool_, np.complex128, list, tuple, type(None), str})
_NDARRAY_UFUNC = np.ndarray.__array_ufunc__
_ABSENT = object()


def overrides_ufuncs(value: Any) -> bool:
    """True if ``value``'s type overrides ``__array_ufunc__`` and is not a Tensor (NumPy must ask it).

    >>> import numpy as np, dualgrad as dg
    >>> from dualgrad._deference import overrides_ufuncs
    >>> overrides_ufuncs(np.ones(2)), overrides_ufuncs(dg.ones(2))
    (False, False)
    """
    cls = type(value)
    if cls in _OWN_OPERANDS or isinstance(value, (Tensor, np.generic)):
        return False
    override = getattr(cls, "__array_ufunc__", _ABSENT)
    return override is not _ABSENT and override is not None and override is not _NDARRAY_UFUNC


def defers_to(other: Any) -> bool:
    """True if a Tensor's forward binary operator gives way to ``other`` under NumPy's rules.

    ``other``'s type sets ``__array_ufunc__ = None``, overrides it, or (without it) has an
    ``__array_priority__`` above a Tensor's.

    >>> import numpy as np
    >>> from dualgrad._deference import defers_to
    >>> class Legacy:
    ...     __array_priority__ = 2000.0
    >>> defers_to(np.ones(2)), defers_to(2.0), defers_to(Legacy())
    (False, False, True)
    """
    cls = type(other)
    if cls in _OWN_OPERANDS or isinstance(other, (Tensor, np.generic)):
        return False
    override = getattr(cls, "__array_ufunc__", _ABSENT)
    if override is _ABSENT:
        priority = getattr(other, "__array_priority__", 0.0)
        return isinstance(priority, (int, float)) and priority > Tensor.__array_priority__
    return override is not _NDARRAY_UFUNC


def deferring(method: Callable) -> Callable:
    """The forward binary operator ``method`` returning NotImplemented for an operand it defers to
    (``method`` itself if it checks already: its ``defers`` attribute is True)."""
    if getattr(method, "defers", False):
        return method

    def operator(self: Tensor, other: Any) -> Any:
        if type(other) in _OWN_OPERANDS or not defers_to(other):
            return method(self, other)
        return NotImplemented

    operator.__name__ = operator.__qualname__ = getattr(method, "__name__", "operator")
    operator.__doc__ = method.__doc__
    operator.defers = True
    return operator


def deferring_op(apply: Callable, op: Any) -> Callable:
    """A forward binary operator that is one table op, ``apply(op, self, other)`` (the hot operators:
    no call in between), returning NotImplemented for an operand it defers to."""

    def operator(self: Tensor, other: Any) -> Any:
        if type(other) in _OWN_OPERANDS or not defers_to(other):
            return apply(op, self, other)
        return NotImplemented

    operator.__name__ = operator.__qualname__ = op.name
    operator.defers = True
    return operator


# The forward binary operators of Tensor (their reflected and in-place forms never defer).
FORWARD_OPERATORS = ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
                     "__matmul__", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
                     "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
