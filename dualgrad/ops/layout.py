"""torch's questions about a tensor's memory (``is_cpu``, ``data_ptr()``, ``layout``, ``dim_order()``),
its dtype (``is_signed``) and its size (``is_same_size``).

dualgrad's tensors are NumPy arrays in host memory, laid out with strides: ``is_cpu`` is
always True and ``layout`` always ``dualgrad.strided``. They read the array and record nothing.

>>> import dualgrad as dg
>>> x = dg.zeros(2, 3)
>>> x.is_cpu, x.layout, x.T.dim_order(), x[1].data_ptr() - x.data_ptr()
(True, dualgrad.strided, (1, 0), 24)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .dispatch import tensor_arg
from .surface import exported, public


class _Layout:
    """A memory layout: dualgrad has one, ``strided`` (torch also has sparse ones)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dualgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # (pickles as the module-level instance)


strided = _Layout("strided")
_AMBIGUOUS = "The tensor does not have unique dim order, or cannot map to exact one of the given memory formats."


@public(None, top_level=False, inplace=False)
def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element (a view's is inside its base's memory).

    >>> import dualgrad as dg
    >>> x = dg.arange(4.)
    >>> x[1:].data_ptr() - x.data_ptr() == x.itemsize
    True
    """
    return self._data.__array_interface__["data"][0]


@public(None, top_level=False, inplace=False)
def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple:
    """The dimensions from the outermost in memory to the innermost: ``range(ndim)`` for a row-major
    tensor, else by decreasing stride (dimensions of stride 0, and ties, keep their place).

    When the strides do not fix the order (a dimension of size 1, of stride 0 beside
    others, or two of the same stride), one of the possible orders is returned, or with
    ``ambiguity_check=True`` torch's RuntimeError is raised. torch also takes a list of
    memory formats there; dualgrad has none (TypeError).

    >>> import dualgrad as dg
    >>> x = dg.zeros(2, 3, 4)
    >>> x.dim_order(), x.permute(2, 0, 1).dim_order(), x.transpose(0, 1).dim_order()
    ((0, 1, 2), (1, 2, 0), (1, 0, 2))
    """
    if not isinstance(ambiguity_check, bool):
        raise TypeError("The ambiguity_check argument must be a bool (dualgrad has no memory formats).")
    strides = self.stride()
    if ambiguity_check and _ambiguous(self.shape, strides):
        raise RuntimeError(_AMBIGUOUS)
    if self._data.flags.c_contiguous:
        return tuple(range(self.ndim))
    ordered = iter(sorted((d for d, s in enumerate(strides) if s), key=lambda d: -strides[d]))
    return tuple(next(ordered) if s else d for d, s in enumerate(strides))


def _ambiguous(shape: tuple, strides: tuple) -> bool:
    """True when more than one dim order fits: a dimension of size 1, two of the same stride, or (with
    another dimension to order it against) one of stride 0."""
    return 1 in shape or len(set(strides)) < len(strides) or (len(strides) > 1 and 0 in strides)


@public(None, inplace=False)
def is_signed(input: Any) -> bool:  # noqa: A002 - torch's name
    """True for signed dtypes (signed integers, floating, complex), False for unsigned and bool.

    >>> import dualgrad as dg
    >>> dg.tensor([1], dtype=dg.uint8).is_signed(), dg.tensor([1.]).is_signed()
    (False, True)
    """
    return tensor_arg(input, "is_signed").dtype.kind in "ifc"


@public(None, inplace=False)
def is_same_size(input: Any, other: Any) -> bool:  # noqa: A002 - torch's names
    """True if the two tensors have the same shape.

    >>> import dualgrad as dg
    >>> dg.zeros(2, 3).is_same_size(dg.ones(2, 3))
    True
    """
    return tensor_arg(input, "is_same_size").shape == tensor_arg(other, "is_same_size").shape


PROPERTIES: dict[str, Any] = {"is_cpu": lambda self: True, "layout": lambda self: strided}
__all__ = exported(__name__, ["strided"])
