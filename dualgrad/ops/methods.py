"""Attach operators and math methods to ``Tensor`` from the op modules.

``Tensor`` itself holds no math. Each op module lists the methods and
properties it contributes in ``METHODS`` and ``PROPERTIES`` dicts, and the ops declared with their
public surface (``ops/surface.py``) name their methods and in-place methods there; this module
installs them all.
"""

from __future__ import annotations

from .._deference import FORWARD_OPERATORS, deferring
from ..tensor import Tensor
from . import (
    counting,
    devices,
    einsum,
    fft,
    indexing,
    inplace,
    integration,
    layout,
    random,
    reductions,
    scatter,
    sorting,
    statistics,
    surface,
    torch_names,
)
from .elementwise import core as elementwise
from .elementwise import functions as elementwise_functions
from .elementwise import special
from .linalg import decompositions, lu, matrix_functions, norms, products
from .shape import compositions, views
from .shape import core as shape

MODULES = (elementwise, reductions, shape, indexing, products, einsum, inplace, elementwise_functions, sorting,
           decompositions, norms, fft, compositions, counting, random, matrix_functions, lu, views,
           scatter, statistics, special, layout, torch_names, devices, integration)


def install() -> None:
    """Set every module's ``METHODS`` and ``PROPERTIES`` on ``Tensor``; the forward binary operators
    defer to array types that take precedence under NumPy's rules (``dualgrad._deference``)."""
    for module in MODULES:
        for name, fn in getattr(module, "METHODS", {}).items():
            setattr(Tensor, name, deferring(fn) if name in FORWARD_OPERATORS else fn)
        for name, fn in getattr(module, "PROPERTIES", {}).items():
            setattr(Tensor, name, fn if isinstance(fn, property) else property(fn))
    for name, fn in {**surface.methods(), **inplace.declared_methods()}.items():  # (declared with their ops)
        setattr(Tensor, name, deferring(fn) if name in FORWARD_OPERATORS else fn)
    Tensor.__hash__ = object.__hash__


install()
