"""torch's top-level questions about tensors: ``is_tensor``, ``numel``, ``isclose``, ``allclose``, ...

They read the data and record nothing (no gradient, not ops): each checks its
argument is a Tensor, as torch does, and asks the Tensor method of the same name.
``result_type``, ``promote_types`` and ``can_cast`` answer torch's questions about
type promotion.

>>> import dualgrad as dg
>>> a = dg.tensor([1.0, 2.0])
>>> dg.is_tensor(a), dg.numel(a), dg.allclose(a, a + 1e-9), dg.equal(a, a)
(True, 2, True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops.promotion import _NUMBERS, _category, _promote_types
from .ops.promotion import result_type as _result_type
from .tensor import Tensor, check_tensor


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is a dualgrad Tensor.

    >>> import dualgrad as dg
    >>> dg.is_tensor(dg.zeros(1)), dg.is_tensor([0.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:  # noqa: A002 - torch's argument name
    """The number of elements of ``input``.

    >>> import dualgrad as dg
    >>> dg.numel(dg.zeros(2, 3))
    6
    """
    check_tensor("numel", "input", input)
    return input.numel()


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    """True if ``input``'s dtype is a floating one (not complex).

    >>> import dualgrad as dg
    >>> dg.is_floating_point(dg.tensor([1.0])), dg.is_floating_point(dg.tensor([1]))
    (True, False)
    """
    check_tensor("is_floating_point", "input", input)
    return input.is_floating_point()


def is_inference(input: Tensor) -> bool:  # noqa: A002
    """True if ``input`` is an inference tensor (see ``Tensor.is_inference``).

    >>> import dualgrad as dg
    >>> with dg.inference_mode():
    ...     y = dg.ones(2)
    >>> dg.is_inference(y), dg.is_inference(dg.ones(2))
    (True, False)
    """
    check_tensor("is_inference", "input", input)
    return input.is_inference()


def is_complex(input: Tensor) -> bool:  # noqa: A002
    """True if ``input``'s dtype is complex.

    >>> import dualgrad as dg
    >>> dg.is_complex(dg.tensor([1j]))
    True
    """
    check_tensor("is_complex", "input", input)
    return input.is_complex()


def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    """The truth of a one-element tensor; RuntimeError for any other number of elements.

    >>> import dualgrad as dg
    >>> dg.is_nonzero(dg.tensor([0.0]))
    False
    """
    check_tensor("is_nonzero", "input", input)
    return input.is_nonzero()


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` as a bool tensor.

    Both must be Tensors of one dtype, of shapes that broadcast.

    >>> import dualgrad as dg
    >>> dg.isclose(dg.tensor([1.0, float("nan")]), dg.tensor([1.0, float("nan")]), equal_nan=True)
    tensor([True, True])
    """
    check_tensor("isclose", "input", input)
    return input.isclose(other, rtol, atol, equal_nan)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """True if ``isclose(input, other, ...)`` holds for every element.

    >>> import dualgrad as dg
    >>> dg.allclose(dg.tensor([1e10]), dg.tensor([1.00001e10]))
    True
    """
    check_tensor("allclose", "input", input)
    return input.allclose(other, rtol, atol, equal_nan)


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """True if both tensors have the same shape and values (dtypes may differ).

    >>> import dualgrad as dg
    >>> dg.equal(dg.tensor([1, 2]), dg.tensor([1.0, 2.0]))
    True
    """
    check_tensor("equal", "input", input)
    return input.equal(other)


# -- type promotion ---------------------------------------------------------------------------------
def result_type(tensor: Any, other: Any) -> np.dtype:
    """The dtype torch gives an arithmetic op on ``tensor`` and ``other`` (Tensors or Python numbers).

    torch's rules (see ``dualgrad.ops.promotion``): categories rank bool < integer <
    floating < complex; a tensor with dimensions outranks a 0-d tensor, which outranks
    a number, unless the lower one is of a higher category; a Python float stands for the
    default dtype (``get_default_dtype``). TypeError for anything else.

    >>> import dualgrad as dg
    >>> dg.result_type(dg.tensor([1, 2], dtype=dg.int32), dg.tensor(5)), dg.result_type(dg.tensor([1, 2]), 1.0)
    (dtype('int32'), dtype('float64'))
    """
    operands = (tensor, other)
    if not all(isinstance(x, (Tensor, *_NUMBERS)) for x in operands):
        names = ", ".join(type(x).__name__ for x in operands)
        raise TypeError(f"result_type(): expected Tensors or numbers, but got ({names})")
    return _result_type(*(x._data if isinstance(x, Tensor) else x for x in operands))


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype to which both dtypes can be cast without losing their category, as torch's
    (an integer with a floating dtype gives that floating dtype, unwidened; NumPy widens).

    >>> import dualgrad as dg
    >>> dg.promote_types(dg.int32, dg.float32), dg.promote_types(dg.uint8, dg.int8)
    (dtype('float32'), dtype('int16'))
    """
    return _promote_types(_dtype_argument("promote_types", "type1", 1, type1),
                          _dtype_argument("promote_types", "type2", 2, type2))


def can_cast(from_: Any, to: Any) -> bool:
    """True if torch's type promotion may cast ``from_`` to ``to``: it does not lower the category
    (bool < integer < floating < complex); the size does not matter.

    >>> import dualgrad as dg
    >>> dg.can_cast(dg.float64, dg.float32), dg.can_cast(dg.float32, dg.int32), dg.can_cast(dg.int64, dg.uint8)
    (True, False, True)
    """
    return _category(_dtype_argument("can_cast", "from_", 1, from_)) <= _category(
        _dtype_argument("can_cast", "to", 2, to))


def _dtype_argument(fn: str, name: str, position: int, value: Any) -> np.dtype:
    """``value`` as a dtype (anything ``numpy.dtype`` takes but None), or torch's TypeError naming the argument."""
    try:
        if value is None:
            raise TypeError
        return np.dtype(value)
    except TypeError:
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be dtype, "
                        f"not {type(value).__name__}") from None
