"""Argument checks shared by the factories, the Tensor methods and the ops: numbers, sizes and dims.

Each raises torch's error, with torch's wording, for a bad argument, before anything is computed.

>>> from dualgrad.base.checks import as_size
>>> as_size((2, 3)), as_size(([2, 3],)), as_size((), 4)
((2, 3), (2, 3), (4,))
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .dtypes import _C_TYPE_NAMES


def is_number(value: Any) -> bool:
    """True for what torch takes as a Number: a Python or NumPy bool, integer, float or complex."""
    return isinstance(value, (int, float, complex, np.number, np.bool_))


def check_number_fits(value: Any, dtype: np.dtype) -> None:
    """torch's RuntimeError for a number that a tensor of ``dtype`` cannot hold: a complex one with an
    imaginary part for a real dtype, an integer out of an integer dtype's range (``fill_``, ``x[i] = v``,
    ``full``, ``masked_fill``, ``float(t)``).

    >>> import numpy as np
    >>> from dualgrad.base.checks import check_number_fits
    >>> check_number_fits(1 + 0j, np.dtype("float64"))
    >>> check_number_fits(1j, np.dtype("float32"))
    Traceback (most recent call last):
      ...
    RuntimeError: value cannot be converted to type float without overflow
    """
    kind = dtype.kind
    if kind in "iuf" and isinstance(value, (complex, np.complexfloating)) and value.imag != 0:
        fits = False
    elif kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        limits = np.iinfo(dtype)  # (torch lets an unsigned dtype take a negative number down to -max)
        fits = (-limits.max if kind == "u" else limits.min) <= value <= limits.max
    else:
        return
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES.get(dtype.name, dtype.name)} "
                           "without overflow")


def as_size(size: tuple, keyword: Any = None, fn: str = "size") -> tuple:
    """A size given as ints or as one tuple or list (``zeros(2, 3)``, ``zeros((2, 3))``) or as the ``size=``
    keyword, as a tuple of ints (torch's error for a negative one; none at all is ``()``, a 0-d shape)."""
    if keyword is not None:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        size = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"size must be a tuple of ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return size


def normalize_dim(dim: int, ndim: int, op: str | None = None, *, scalar: bool = True) -> int:
    """``dim`` counted from the front, or torch's IndexError (prefixed by ``op``) when it is out of range.

    As in torch's ops, a 0-d tensor takes ``dim`` 0 and -1 (both give 0), as if it had one dimension;
    with ``scalar=False`` (torch's ``size``, ``stride`` and ``roll``) it takes none.

    >>> from dualgrad.base.checks import normalize_dim
    >>> normalize_dim(-1, 3), normalize_dim(-1, 0), normalize_dim(0, 0)
    (2, 0, 0)
    >>> normalize_dim(1, 0, "sum")
    Traceback (most recent call last):
      ...
    IndexError: sum: Dimension out of range (expected to be in range of [-1, 0], but got 1)
    """
    if not ndim and not scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    limit = max(ndim, 1)
    if not -limit <= dim < limit:
        prefix = f"{op}: " if op else ""
        raise IndexError(f"{prefix}Dimension out of range (expected to be in range of [{-limit}, "
                         f"{limit - 1}], but got {dim})")
    return dim % limit
