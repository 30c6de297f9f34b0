"""``Variable``: the deprecated torch shim; it returns a plain Tensor."""

from __future__ import annotations

import warnings
from typing import Any

from .factories import as_tensor
from .tensor import Tensor


def Variable(tensor: Any, requires_grad: bool = False) -> Tensor:  # noqa: N802 - torch's name
    """Deprecated: returns ``tensor`` as a Tensor with ``requires_grad`` set.

    >>> import warnings, dualgrad as dg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     v = dg.Variable(dg.ones(2), requires_grad=True)
    >>> type(v).__name__, v.requires_grad
    ('Tensor', True)
    """
    warnings.warn(
        "Variable is deprecated: Tensors support autograd directly; use "
        "tensor.requires_grad_() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    t = as_tensor(tensor).detach()
    return t.requires_grad_(True) if requires_grad else t
