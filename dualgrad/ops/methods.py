"""Attach operators and math methods to ``Tensor`` from the op table's functions.

``Tensor`` itself holds no math; this module is the only place that gives it
``+``, ``@``, ``.sin()``, ``.sum()`` and the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from . import elementwise as ew
from . import indexing, linalg, reductions, shape
from .dispatch import apply


def _reflected(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


def _to(self: Tensor, *args: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
    """``t.to(dtype)`` (device arguments like ``'cpu'`` are accepted and ignored)."""
    for a in args:
        if isinstance(a, str) and a.startswith(("cpu", "cuda")):
            continue
        if isinstance(a, Tensor):
            dtype = a.dtype
        else:
            dtype = a
    return self if dtype is None else ew.to_dtype(self, dtype)


def _compare(op_name: str) -> Any:
    op = ew.COMPARISONS[op_name]
    return lambda self, other: apply(op, self, other)


def _unary_op(op_name: str) -> Any:
    op = ew.COMPARISONS[op_name]
    return lambda self: apply(op, self)


METHODS: dict[str, Any] = {
    # arithmetic operators
    "__add__": ew.add, "__radd__": _reflected(ew.add),
    "__sub__": ew.sub, "__rsub__": _reflected(ew.sub),
    "__mul__": ew.mul, "__rmul__": _reflected(ew.mul),
    "__truediv__": ew.div, "__rtruediv__": _reflected(ew.div),
    "__floordiv__": ew.floor_divide, "__rfloordiv__": _reflected(ew.floor_divide),
    "__mod__": ew.remainder, "__rmod__": _reflected(ew.remainder),
    "__pow__": ew.pow, "__rpow__": _reflected(ew.pow),
    "__matmul__": linalg.matmul, "__rmatmul__": _reflected(linalg.matmul),
    "__neg__": ew.neg, "__pos__": lambda self: self, "__abs__": ew.abs,
    # comparisons and logic (never tracked)
    "__eq__": _compare("eq"), "__ne__": _compare("ne"), "__lt__": _compare("lt"),
    "__le__": _compare("le"), "__gt__": _compare("gt"), "__ge__": _compare("ge"),
    "__and__": _compare("bitwise_and"), "__or__": _compare("bitwise_or"),
    "__xor__": _compare("bitwise_xor"), "__invert__": _unary_op("bitwise_not"),
    "__rand__": _reflected(_compare("bitwise_and")), "__ror__": _reflected(_compare("bitwise_or")),
    "__getitem__": indexing.getitem,
    # named math methods
    "add": ew.add, "sub": ew.sub, "mul": ew.mul, "div": ew.div, "pow": ew.pow,
    "neg": ew.neg, "reciprocal": ew.reciprocal, "square": ew.square, "sqrt": ew.sqrt,
    "rsqrt": ew.rsqrt, "abs": ew.abs, "sign": ew.sign, "sgn": ew.sgn, "exp": ew.exp,
    "expm1": ew.expm1, "log": ew.log, "log1p": ew.log1p, "log2": ew.log2, "log10": ew.log10,
    "sin": ew.sin, "cos": ew.cos, "tan": ew.tan, "asin": ew.asin, "acos": ew.acos,
    "atan": ew.atan, "atan2": ew.atan2, "sinh": ew.sinh, "cosh": ew.cosh, "tanh": ew.tanh,
    "asinh": ew.asinh, "acosh": ew.acosh, "atanh": ew.atanh, "sigmoid": ew.sigmoid,
    "relu": ew.relu, "maximum": ew.maximum, "minimum": ew.minimum, "clamp": ew.clamp,
    "clip": ew.clamp, "hypot": ew.hypot, "logaddexp": ew.logaddexp, "conj": ew.conj,
    "angle": ew.angle, "clone": ew.clone, "remainder": ew.remainder,
    "floor_divide": ew.floor_divide,
    "floor": _unary_op("floor"), "ceil": _unary_op("ceil"), "round": _unary_op("round"),
    "trunc": _unary_op("trunc"), "isnan": _unary_op("isnan"), "isinf": _unary_op("isinf"),
    "isfinite": _unary_op("isfinite"),
    "eq": _compare("eq"), "ne": _compare("ne"), "lt": _compare("lt"), "le": _compare("le"),
    "gt": _compare("gt"), "ge": _compare("ge"),
    # dtype conversions
    "to": _to, "astype": ew.to_dtype,
    "float": lambda self: ew.to_dtype(self, np.float32),
    "double": lambda self: ew.to_dtype(self, np.float64),
    "half": lambda self: ew.to_dtype(self, np.float16),
    # reductions
    "sum": reductions.sum, "mean": reductions.mean,
    # shape
    "reshape": shape.reshape, "view": shape.reshape, "expand": shape.expand,
    "broadcast_to": shape.broadcast_to, "permute": shape.permute,
    "transpose": shape.transpose, "swapaxes": shape.swapaxes,
    "unsqueeze": shape.unsqueeze, "squeeze": shape.squeeze,
    # linear algebra
    "matmul": linalg.matmul,
}

PROPERTIES: dict[str, Any] = {
    "T": lambda self: shape.permute(self, tuple(range(self.ndim - 1, -1, -1))),
    "mT": lambda self: shape.transpose(self, -2, -1),
    "mH": lambda self: shape.transpose(self, -2, -1).conj(),
    "H": lambda self: shape.transpose(self, 0, 1).conj(),
    "real": ew.real,
    "imag": ew.imag,
}


def install() -> None:
    """Set every entry of ``METHODS`` and ``PROPERTIES`` on ``Tensor``."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn))
    Tensor.__hash__ = object.__hash__


install()
