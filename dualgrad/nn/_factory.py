"""The ``device`` / ``dtype`` keywords of layer constructors, as torch's ``factory_kwargs``."""

from __future__ import annotations

from typing import Any

from ..factories import empty, get_default_dtype
from ..tensor import Tensor


def new_empty(*shape: int, device: Any = None, dtype: Any = None) -> Tensor:
    """An uninitialised tensor of ``shape`` in ``dtype`` (default: dualgrad's default dtype); ``device`` is
    checked by the factory, as for ``dualgrad.empty``."""
    return empty(*shape, dtype=get_default_dtype() if dtype is None else dtype, device=device)
