"""Activation functions (``nn.functional``'s forms), composed of dualgrad's elementwise ops.

Branches are written as ``where`` of two branches that are finite everywhere (the exponential branch of
``elu`` is evaluated at ``min(x, 0)``), so that the branch not taken never sends ``0 * inf = nan`` into a
gradient.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..ops.elementwise.core import relu as _relu
from ..ops.elementwise.core import sigmoid, tanh, where
from ..ops.elementwise.core import softplus as _softplus
from ..ops.elementwise.functions import erf
from ..ops.reductions import log_softmax as _log_softmax
from ..ops.reductions import softmax as _softmax
from ..tensor import Tensor

__all__ = ["celu", "elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "log_softmax", "logsigmoid",
           "prelu", "relu", "relu6", "selu", "sigmoid", "silu", "softmax", "softmin", "softplus", "softsign",
           "tanh", "tanhshrink", "threshold"]


def written_into(input: Tensor, result: Tensor) -> Tensor:  # noqa: A002
    """torch's ``inplace=True``: ``result`` (computed from ``input.clone()``, so that its graph keeps no
    reference to the values overwritten) written into ``input``, which is returned. Like torch's, it
    raises for a leaf that requires grad (outside ``no_grad``) and bumps ``input``'s version."""
    return input.copy_(result)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's names
    """``max(x, 0)`` (gradient 0 at 0, as torch).

    >>> import dualgrad as dg
    >>> dg.nn.functional.relu(dg.tensor([-1., 2.]))
    tensor([0., 2.])
    """
    if inplace:
        return written_into(input, relu(input.clone()))
    return _relu(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > threshold``, else ``value`` (gradient 1 above the threshold, 0 at and below it,
    as torch's).

    >>> import dualgrad as dg
    >>> dg.nn.functional.threshold(dg.tensor([-1., 0.5, 2.]), 0.5, 20.)
    tensor([20., 20.,  2.])
    """
    source = input.clone() if inplace else input  # (``threshold`` is also the argument's name)
    result = where(source > threshold, source, _constant_like(source, value))
    return written_into(input, result) if inplace else result


def _constant_like(input: Tensor, value: float) -> Tensor:  # noqa: A002
    """``value`` as a 0-d tensor of ``input``'s dtype (so that ``where`` keeps that dtype, as torch's)."""
    return Tensor(np.asarray(value, dtype=input.dtype))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(x, 0), 6)``."""
    if inplace:
        return written_into(input, relu6(input.clone()))
    return hardtanh(input, 0.0, 6.0)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` clamped to ``[min_val, max_val]`` (gradient 1 strictly inside, 0 outside and at the ends)."""
    if inplace:
        return written_into(input, hardtanh(input.clone(), min_val, max_val))
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
    if inplace:
        return written_into(input, silu(input.clone()))
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
    if inplace:
        return written_into(input, elu(input.clone(), alpha))
    return where(input > 0, input, alpha * input.clamp(max=0).expm1())


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``alpha (exp(x / alpha) - 1)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.celu(dg.tensor([-1., 2.]), alpha=2.)
    tensor([-0.7869,  2.0000])
    """
    if inplace:
        return written_into(input, celu(input.clone(), alpha))
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return where(input > 0, input, alpha * (input.clamp(max=0) / alpha).expm1())


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    if inplace:
        return written_into(input, selu(input.clone()))
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(input, alpha)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    if inplace:
        return written_into(input, leaky_relu(input.clone(), negative_slope))
    return where(input > 0, input, input * negative_slope)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``weight * x``, ``weight`` (one value, or one per channel: dimension 1 of
    ``x``) a learnt slope.

    >>> import dualgrad as dg
    >>> dg.nn.functional.prelu(dg.tensor([[-1., 2.], [-2., -3.]]), dg.tensor([0.5, 0.1]))
    tensor([[-0.5000,  2.0000],
            [-1.0000, -0.3000]])
    """
    count = weight.numel()
    if count != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if count != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{count} and channel size = {channels}.")
    weight = weight.reshape((count,) + (1,) * (input.ndim - 2) if count != 1 else ())
    return where(input > 0, input, weight * input)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """``x / (1 + |x|)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.softsign(dg.tensor([-1., 3.]))
    tensor([-0.5000,  0.7500])
    """
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """``x - tanh(x)``.

    >>> import dualgrad as dg
    >>> dg.nn.functional.tanhshrink(dg.tensor([1.]))
    tensor([0.2384])
    """
    return input - tanh(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(x + 3, 0), 6) / 6`` (gradient 1/6 strictly between -3 and 3, else 0, as torch's).

    >>> import dualgrad as dg
    >>> dg.nn.functional.hardsigmoid(dg.tensor([-4., 0., 1.5]))
    tensor([0.0000, 0.5000, 0.7500])
    """
    if inplace:
        return written_into(input, hardsigmoid(input.clone()))
    return hardtanh(input + 3, 0.0, 6.0) / 6


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x min(max(x + 3, 0), 6) / 6``: 0 up to -3, ``x (x + 3) / 6`` between, ``x`` from 3 on; the
    gradient is ``x / 3 + 1/2`` strictly between -3 and 3, 0 up to -3 and 1 from 3 on, as torch's.

    >>> import dualgrad as dg
    >>> dg.nn.functional.hardswish(dg.tensor([-4., 1., 4.]))
    tensor([-0.0000,  0.6667,  4.0000])
    """
    if inplace:
        return written_into(input, hardswish(input.clone()))
    middle = where(input < 3, input * (input + 3) / 6, input)
    return where(input > -3, middle, input * 0)


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
