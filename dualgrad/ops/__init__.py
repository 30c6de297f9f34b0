"""The op table (``registry.ALL_OPS``), the dispatcher and the public op functions."""

from . import batch_rules, elementwise, indexing, linalg, methods, reductions, shape  # noqa: F401 - registers ops
from .registry import ALL_OPS

__all__ = ["ALL_OPS"]
