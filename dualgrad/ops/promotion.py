"""torch's type promotion for the ops that combine operands (dispatch calls ``promote``).

The result dtype is torch's ``result_type``, not NumPy's:

* categories rank bool < integer < floating < complex;
* within a category, tensors with dimensions outrank 0-d tensors, which outrank
  Python numbers (and NumPy scalars, which count as Python numbers);
* an operand of lower rank but higher category gives that category: its default
  (``get_default_dtype()``, or its complex counterpart, for a Python float or
  complex) or its own dtype, and a floating dtype of higher rank meeting a complex
  operand gives the complex dtype of the same precision;
* an integer meeting a floating (or complex) dtype gives that dtype, unwidened
  (NumPy: int32 with float32 gives float64).

Ops that compute in floating point (true division, ``atan2``, ...) give the default
dtype for integer operands; so do those of one operand (``sin``, ``sqrt``: dispatch
calls ``default_float_result`` for an integer or bool input). The operands are cast
to the result dtype before NumPy runs, so values are computed in it, as torch does.
NumPy has no complex32: float16 with a complex operand gives complex64.

>>> import numpy as np
>>> result_type(np.ones(2, np.float32), np.float64(1.0), 2)
dtype('float32')
>>> result_type(np.ones(2, np.int32), np.ones((), np.int64))
dtype('int32')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.dtypes import _category, _complex_of, _number_dtype, _promote_types, get_default_dtype

_NUMBERS = (bool, int, float, complex, np.generic)
_NOT_OPERANDS = (str, bytes, dict, set, frozenset)  # (NumPy would make arrays of them)


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """The result of operands of two ranks (each promoted among its own): the higher rank's dtype
    unless the lower rank is of a higher category."""
    if lower is None:
        return higher
    if higher is None:
        return lower
    high, low = _category(higher), _category(lower)
    if high >= low:
        return higher
    return _complex_of(higher) if high == 2 else lower  # (a complex lower rank keeps a floating precision)


def result_type(*operands: Any) -> np.dtype | None:
    """The dtype torch gives an op on ``operands`` (arrays and numbers; sequences and ``None``, an
    absent bound of ``clamp``, are ignored; strings, dicts and sets are a TypeError).

    None when no operand is an array or a number.
    """
    dims = zeros = numbers = None
    for x in operands:
        if isinstance(x, np.ndarray):
            if x.ndim:
                dims = _promote_types(dims, x.dtype)
            else:
                zeros = _promote_types(zeros, x.dtype)
        elif isinstance(x, _NUMBERS):
            numbers = _promote_types(numbers, _number_dtype(x))
        elif isinstance(x, _NOT_OPERANDS):
            raise TypeError(f"expected a Tensor or a number as an operand, not {type(x).__name__}")
    return _combine(dims, _combine(zeros, numbers))


def promote(op: Any, operands: tuple | list) -> tuple | list:
    """``operands`` (raw arrays and constants) cast to the dtype torch computes ``op`` in.

    ``op.promotion`` is None for an op that does not promote, else the position of the
    first operand that takes part (``where``'s condition does not); ``op.to_float`` is
    True for an op that computes integers in the default floating dtype (true division).
    Python numbers stay as they are beside an array: NumPy gives them the array's dtype.
    """
    start = op.promotion
    if start is None:
        return operands
    promoted = operands[start:]
    try:
        dtype = result_type(*promoted)
    except TypeError as error:
        raise TypeError(f"{op.name}(): {error}") from None
    if dtype is None:
        return operands
    if op.to_float and _category(dtype) < 2:
        dtype = get_default_dtype()
    # (not for bfloat16: NumPy computes bfloat16 with a Python float in float32)
    weak = dtype.kind in "biufc" and any(isinstance(x, np.ndarray) for x in promoted)
    return (*operands[:start], *[_cast(x, dtype, weak) for x in promoted])


def default_float_result(data: Any) -> Any:
    """The floating result of a one-operand elementwise op on integers or bools in the default
    dtype, as torch gives it (NumPy computes it in float64); any other result as it is."""
    default = get_default_dtype()
    if type(data) is not np.ndarray or data.dtype.kind != "f" or data.dtype == default:
        return data
    return data.astype(default)


def _cast(x: Any, dtype: np.dtype, weak: bool) -> Any:
    """``x`` as an operand of ``dtype``; a Python number stays as it is if ``weak``."""
    if isinstance(x, np.ndarray):
        return x if x.dtype == dtype else x.astype(dtype)
    if isinstance(x, np.generic) or (not weak and isinstance(x, _NUMBERS)):
        return np.asarray(x, dtype)
    return x
