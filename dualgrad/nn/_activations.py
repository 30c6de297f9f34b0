"""Activation functions (``nn.functional``'s forms), composed of dualgrad's elementwise ops.

Branches are written as ``where`` of two branches that are finite everywhere (the exponential branch of
``elu`` is evaluated at ``min(x, 0)``), so that the branch not taken never sends ``0 * inf = nan`` into a
gradient.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..ops.elementwise.core import relu as _relu
from ..ops.elementwise.core import sigmoid, tanh, where
from ..ops.elementwise.core import softplus as _softplus
from ..ops.elementwise.functions import erf
from ..ops.reductions import log_softmax as _log_softmax
from ..ops.reductions import softmax as _softmax
from ..tensor import Tensor

__all__ = ["elu", "gelu", "hardtanh", "leaky_relu", "log_softmax", "logsigmoid", "relu", "relu6", "selu",
           "sigmoid", "silu", "softmax", "softmin", "softplus", "tanh"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's names
    """``max(x, 0)`` (gradient 0 at 0, as torch).

    >>> import dualgrad as dg
    >>> dg.nn.functional.relu(dg.tensor([-1., 2.]))
    tensor([0., 2.])
    """
    return _relu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` clamped to ``[min_val, max_val]`` (gradient 1 strictly inside, 0 outside and at the ends)."""
    return where((input > min_val) & (input < max_val), input, input.clamp(min_val, max_val).detach())


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Phi(x)``, ``Phi`` the standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``; with
    ``approximate='tanh'``: ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.gelu(dg.tensor([1.]))
    tensor([0.8413])
    """
    if approximate == "none":
        return input * 0.5 * (1.0 + erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        return input * 0.5 * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * input ** 3)))
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)`` (also called swish)."""
    return input * sigmoid(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""
    return _softplus(input, beta, threshold)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``alpha (exp(x) - 1)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.elu(dg.tensor([-1., 2.]))
    tensor([-0.6321,  2.0000])
    """
    return where(input > 0, input, alpha * input.clamp(max=0).expm1())


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(input, alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    return where(input > 0, input, input * negative_slope)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow."""
    return -_softplus(-input, 1.0, 20.0)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """``exp(x) / sum(exp(x))`` along ``dim`` (without ``dim``: torch's deprecated implicit choice)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """``softmax(-x)`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return _softmax(-input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """``x - logsumexp(x)`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _log_softmax(input, dim, dtype=dtype)
