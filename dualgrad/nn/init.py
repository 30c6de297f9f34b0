"""``dualgrad.nn.init``: in-place initialisations of parameters with torch's formulas, drawing from
dualgrad's generator (``dualgrad.manual_seed``). Each runs without recording and returns its tensor.

>>> import dualgrad as dg
>>> w = dg.empty(3, 2)
>>> dg.nn.init.constant_(w, 0.5)[0]
tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..factories import randn
from ..ops.linalg.decompositions import qr
from ..reverse import no_grad
from ..tensor import Tensor

__all__ = ["calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
           "orthogonal_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity: 1 (linear, convolutions, sigmoid), 5/3 (tanh), sqrt(2)
    (relu), sqrt(2 / (1 + slope^2)) (leaky_relu, ``param`` the slope, 0.01 by default), 3/4 (selu).

    >>> import dualgrad as dg
    >>> dg.nn.init.calculate_gain("tanh")
    1.6666666666666667
    """
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, numbers.Number):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)``: input and output feature maps times the receptive field size."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _generator(generator: object) -> dict:
    """The ``generator`` keyword to pass on (none for the default generator)."""
    return {} if generator is None else {"generator": generator}


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: object = None) -> Tensor:
    """Fill with draws from ``U(a, b)``."""
    with no_grad():
        return tensor.uniform_(a, b, **_generator(generator))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: object = None) -> Tensor:
    r"""Fill with draws from ``N(mean, std^2)`` truncated to ``[a, b]``, torch's inverse-CDF method: ``u``
    uniform on :math:`[2\Phi(\alpha) - 1, 2\Phi(\beta) - 1]` (:math:`\alpha, \beta` the bounds in standard
    units, :math:`\Phi` the normal CDF), then ``mean + std sqrt(2) erfinv(u)``, clamped to ``[a, b]``.
    Warns, as torch, when ``mean`` is more than 2 ``std`` outside ``[a, b]``.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> w = dg.nn.init.trunc_normal_(dg.empty(1000), std=0.02, a=-0.04, b=0.04)
    >>> bool(w.abs().max() <= 0.04), round(float(w.std()), 3)
    (True, 0.017)
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)

    def normal_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = normal_cdf((a - mean) / std), normal_cdf((b - mean) / std)
    with no_grad():
        tensor.uniform_(2 * low - 1, 2 * high - 1, **_generator(generator))
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: object = None) -> Tensor:
    """Fill with draws from ``N(mean, std^2)``."""
    with no_grad():
        return tensor.normal_(mean, std, **_generator(generator))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal of a rectangular one)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.zero_()
        tensor.diagonal().fill_(1.0)
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    """``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio, 2010)."""
    fan_in, fan_out = _fans(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    """``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: object = None) -> Tensor:
    """``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``, ``gain = calculate_gain(nonlinearity, a)`` (He et al.,
    2015); ``mode`` picks ``fan_in`` or ``fan_out``.

    >>> import dualgrad as dg
    >>> w = dg.nn.init.kaiming_uniform_(dg.empty(400, 300), nonlinearity="relu")
    >>> bool(w.abs().max() <= (6 / 300) ** 0.5)
    True
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: object = None) -> Tensor:
    """``N(0, std^2)`` with ``std = gain / sqrt(fan)``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    """A (semi-)orthogonal matrix times ``gain``, from the QR decomposition of a Gaussian matrix (dimensions
    after the first are flattened), the signs fixed so that it is uniformly distributed (Saxe et al.)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = randn(rows, cols, dtype=tensor.dtype, **_generator(generator))
        if rows < cols:
            flat = flat.mT
        q, r = qr(flat)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.mT
        tensor.copy_(q.reshape(tensor.shape) * gain)
    return tensor
