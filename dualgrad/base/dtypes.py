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


# The dtypes whose tensors print without ``dtype=`` (torch's defaults)
DEFAULT_DTYPES = {np.dtype("float64"), np.dtype("int64"), np.dtype("bool"), np.dtype("complex128")}

# The float and complex dtypes in native byte order: a set lookup (a dtype caches its hash) costs
# less than reading ``dtype.kind``, so the recording of every op tests this set first.
FLOATING_DTYPES = frozenset(np.dtype(code) for code in "efdgFDG")
REAL_FLOATING_DTYPES = frozenset(np.dtype(code) for code in "efdg")


def is_differentiable_dtype(dtype: np.dtype) -> bool:
    """True for the dtypes that can require gradients (floating and complex, any byte order)."""
    return dtype in FLOATING_DTYPES or dtype.kind in "fc" or dtype.name == "bfloat16"


# torch's names of dtypes in its legacy type names (``t.type()``: ``torch.<name>Tensor``) and kernel errors
_TYPE_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble"}

# the dtypes of torch's legacy type names (``t.type("torch.IntTensor")``)
_TYPE_NAME_DTYPES = {f"torch.{name}Tensor": np.dtype(dtype) for dtype, name in _TYPE_NAMES.items()}


def torch_dtype_name(dtype: np.dtype) -> str:
    """torch's name of ``dtype`` (``Double``, ``Long``, ...), NumPy's for a dtype torch names otherwise."""
    return _TYPE_NAMES.get(dtype.name, dtype.name)


# the C++ types torch names when a number does not fit a dtype
_C_TYPE_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "int64_t", "int32": "int",
                 "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t"}
