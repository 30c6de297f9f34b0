"""The op table (``registry.ALL_OPS``), the dispatcher and the public op functions."""

from . import batch_rules, methods  # noqa: F401 - methods imports every op module, which registers its ops
from .registry import ALL_OPS

__all__ = ["ALL_OPS"]
