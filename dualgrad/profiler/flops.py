"""FLOP estimates from input shapes, for ops where counting pays (matrix products).

A multiply-add counts as two FLOPs, as in torch's profiler.
"""

from __future__ import annotations

import math
from typing import Any


def _matmul(shapes: list, params: dict) -> int:
    a, b = shapes[0], shapes[1]
    if not a or not b:
        return 0
    a = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    batch = math.prod(max(x, y) for x, y in zip(_pad(a[:-2], b[:-2]), _pad(b[:-2], a[:-2]), strict=True))
    return 2 * batch * a[-2] * a[-1] * b[-1]


def _pad(shape: tuple, other: tuple) -> tuple:
    return (1,) * (len(other) - len(shape)) + shape


def _einsum(shapes: list, params: dict) -> int:
    """2 x the product of the sizes of every index letter (one multiply-add per term)."""
    equation = params.get("equation") or params.get("subscripts")
    if not isinstance(equation, str):
        return 0
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes: dict = {}
    for letters, shape in zip(inputs, shapes, strict=False):
        letters = letters.replace("...", "")
        for letter, n in zip(letters[::-1], tuple(shape)[::-1], strict=False):
            sizes[letter] = max(sizes.get(letter, 1), n)
    return 2 * math.prod(sizes.values()) if len(inputs) > 1 else 0


ESTIMATORS = {"matmul": _matmul, "mm": _matmul, "bmm": _matmul, "einsum": _einsum}


def estimate_flops(name: str, shapes: list, params: dict) -> int:
    """FLOPs of one call of op ``name`` on inputs of ``shapes`` (0 when not estimated)."""
    estimator: Any = ESTIMATORS.get(name)
    return estimator(shapes, params) if estimator is not None else 0
