"""Attach operators and math methods to ``Tensor`` from the op modules.

``Tensor`` itself holds no math. Each op module lists the methods and
properties it contributes in ``METHODS`` and ``PROPERTIES`` dicts; this module
installs them all, so adding a method means one line next to its op.
"""

from __future__ import annotations

from .._deference import FORWARD_OPERATORS, deferring
from ..tensor import Tensor
from . import (
    aliases,
    devices,
    einsum,
    elementwise,
    elementwise_extra,
    fft,
    indexing,
    inplace,
    linalg,
    linalg_decomp,
    linalg_derived,
    linalg_lu,
    linalg_more,
    memory,
    more,
    reductions,
    sampling,
    scatter_more,
    shape,
    shape_extra,
    sorting,
    special,
    stats,
    utilities,
)

MODULES = (elementwise, reductions, shape, indexing, linalg, einsum, inplace, elementwise_extra, sorting,
           linalg_decomp, linalg_derived, fft, shape_extra, utilities, sampling, linalg_more, linalg_lu, more,
           scatter_more, stats, special, memory, aliases, devices)


def install() -> None:
    """Set every module's ``METHODS`` and ``PROPERTIES`` on ``Tensor``; the forward binary operators
    defer to array types that take precedence under NumPy's rules (``dualgrad._deference``)."""
    for module in MODULES:
        for name, fn in getattr(module, "METHODS", {}).items():
            setattr(Tensor, name, deferring(fn) if name in FORWARD_OPERATORS else fn)
        for name, fn in getattr(module, "PROPERTIES", {}).items():
            setattr(Tensor, name, fn if isinstance(fn, property) else property(fn))
    Tensor.__hash__ = object.__hash__


install()
