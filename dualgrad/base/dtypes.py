"""The default floating dtype and torch's ``promote_types``: the dtype rules every layer above reads.

They sit at the bottom of the import graph so that both the factories (``tensor([1, 2.5])``) and the
op table's type promotion (``ops/promotion.py``) can use them without importing each other.

>>> import numpy as np
>>> _promote_types(np.dtype(np.int64), np.dtype(np.float32))
dtype('float32')
>>> _number_dtype(True), _number_dtype(2), _number_dtype(2.5)
(dtype('bool'), dtype('int64'), dtype('float64'))
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The floating dtype of factories and of tensors made from Python floats (``set_default_dtype``).
_default_float = [np.dtype(np.float64)]

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}  # by dtype kind; others (bfloat16) count as floating
_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def get_default_dtype() -> np.dtype:
    """The floating dtype factories and Python floats give: float64 unless ``set_default_dtype`` changed it.

    Type promotion gives it too: an integer tensor with a Python float, or divided by an integer.

    >>> import dualgrad as dg
    >>> dg.get_default_dtype()
    dtype('float64')
    """
    return _default_float[0]


def _complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts are ``dtype`` (complex64 for anything narrower than float64)."""
    return np.dtype(np.complex128 if dtype.itemsize >= 8 else np.complex64)


def _category(dtype: np.dtype) -> int:
    return _CATEGORY.get(dtype.kind, 2)


def _promote_types(x: np.dtype | None, y: np.dtype) -> np.dtype:
    """torch's ``promote_types``: NumPy's, except that an integer with a floating or complex dtype gives that dtype."""
    if x is None or x is y:
        return y
    low, high = sorted((_category(x), _category(y)))
    if low == 1 and high >= 2:
        return x if _category(x) >= 2 else y
    try:
        return np.promote_types(x, y)
    except TypeError:  # bfloat16 with float16: no common NumPy dtype; torch's is float32
        return np.dtype(np.float32)


def _number_dtype(x: Any) -> np.dtype:
    """The dtype a Python number (or NumPy scalar) stands for: bool, int64, or the default floating or complex dtype."""
    if isinstance(x, np.generic):
        kind = x.dtype.kind
    else:
        kind = "b" if isinstance(x, bool) else "i" if isinstance(x, int) else "f" if isinstance(x, float) else "c"
    if kind in "biu":
        return _BOOL if kind == "b" else _INT64
    default = get_default_dtype()
    return _complex_of(default) if kind == "c" else default
