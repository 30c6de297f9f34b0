"""More elementwise ops, for NumPy's namespace: ``exp2``, ``cbrt``, ``copysign``, ``fmod``, ...

Each is one ``elementwise`` entry (derived vjp, jvp and batching rule), as in
``elementwise.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor
from .dispatch import apply
from .elementwise import _binary, _unary, _where, cos, log, trunc
from .registry import elementwise

_LN2 = math.log(2.0)
_DEG = math.pi / 180.0


def _unit_sign(x: Any) -> Any:
    """+1 or -1 with the sign bit of ``x`` (so -0.0 gives -1), as copysign reads it."""
    return apply(COPYSIGN, 1.0, x)


EXP2 = elementwise("exp2", np.exp2, (lambda out, x: out * _LN2,), save_inputs=False, save_out=True)
LOGADDEXP2 = elementwise("logaddexp2", np.logaddexp2,
                         (lambda out, x, y: exp2(x - out), lambda out, x, y: exp2(y - out)), save_out=True)
CBRT = elementwise("cbrt", np.cbrt, (lambda out, x: 1 / (3 * out * out),), save_inputs=False, save_out=True)
DEG2RAD = elementwise("deg2rad", np.deg2rad, (lambda out, x: _DEG,), save_inputs=False)
RAD2DEG = elementwise("rad2deg", np.rad2deg, (lambda out, x: 1 / _DEG,), save_inputs=False)
COPYSIGN = elementwise("copysign", np.copysign, (
    lambda out, x, y: _unit_sign(x) * _unit_sign(y),
    lambda out, x, y: y * 0.0,
))
FMOD = elementwise("fmod", np.fmod, (1, lambda out, x, y: -trunc(x / y)))
HEAVISIDE = elementwise("heaviside", np.heaviside, (
    lambda out, x, h0: out * 0.0,
    lambda out, x, h0: (x == 0).to(out.dtype),
), save_out=True)

FMAX = elementwise("fmax", np.fmax, (
    lambda out, x, y: ((x >= y) | y.isnan()).to(out.dtype),
    lambda out, x, y: (~((x >= y) | y.isnan())).to(out.dtype),
), save_out=True)
FMIN = elementwise("fmin", np.fmin, (
    lambda out, x, y: ((x <= y) | y.isnan()).to(out.dtype),
    lambda out, x, y: (~((x <= y) | y.isnan())).to(out.dtype),
), save_out=True)


def _xlogy_impl(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x`` is 0 (even for ``y`` 0 or inf), NaN where ``y`` is NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        product = np.multiply(x, np.log(y))
    return np.where((np.asarray(x) == 0) & ~np.isnan(y), 0.0, product).astype(product.dtype, copy=False)


def _sinc_partial(out: Any, x: Any) -> Any:
    """``(cos(pi x) - sinc(x)) / x``, 0 at 0."""
    zero = x == 0
    safe = _where(zero, 1.0, x)
    return _where(zero, 0.0, (cos(math.pi * safe) - sinc(safe)) / safe)


XLOGY = elementwise("xlogy", _xlogy_impl, (
    lambda out, x, y: _where((x == 0) & (y <= 0), 0.0, log(y)),
    lambda out, x, y: x / y,
))
SINC = elementwise("sinc", np.sinc, (_sinc_partial,))

exp2 = _unary(EXP2, "``2 ** x``.", "[3.]", "tensor([8.])")
cbrt = _unary(CBRT, "Real cube root (negative for negative ``x``); its derivative at 0 is inf.", "[-8.]",
              "tensor([-2.])")
deg2rad = _unary(DEG2RAD, "Degrees to radians.", "[180.]", "tensor([3.1416])")
rad2deg = _unary(RAD2DEG, "Radians to degrees.", "[3.141592653589793]", "tensor([180.])")
logaddexp2 = _binary(LOGADDEXP2, "``log2(2**x + 2**y)`` computed stably.", "[2.]", "tensor([3.])")
copysign = _binary(COPYSIGN, "``|x|`` with the sign of ``y``; the gradient for ``y`` is 0.", "[-3.]",
                   "tensor([3.])")
fmod = _binary(FMOD, "C's remainder ``x - trunc(x / y) * y`` (sign of the dividend).", "[-3.]",
               "tensor([-1.])")
heaviside = _binary(HEAVISIDE, "Step function: 0 for ``x < 0``, 1 for ``x > 0``, ``y`` where ``x == 0``.",
                    "[-1., 0., 2.]", "tensor([0., 2., 1.])")

fmax = _binary(FMAX, "Elementwise maximum ignoring NaN; at ties the gradient goes to ``input`` (as torch's).",
               "[1., float('nan')]", "tensor([2., 2.])")
fmin = _binary(FMIN, "Elementwise minimum ignoring NaN; at ties the gradient goes to ``input`` (as torch's).",
               "[1., float('nan')]", "tensor([1., 2.])")
xlogy = _binary(XLOGY, "``input * log(other)``, 0 where ``input`` is 0.", "[0., 3.]", "tensor([0.0000, 2.0794])")
sinc = _unary(SINC, "Normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.", "[0., 0.5]", "tensor([1.0000, 0.6366])")


def lerp(input: Any, end: Any, weight: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input + weight * (end - input)`` (``weight`` a number or a tensor).

    >>> import dualgrad as dg
    >>> dg.lerp(dg.tensor([0., 1.]), dg.tensor([10., 3.]), 0.5)
    tensor([5., 2.])
    """
    return input + weight * (end - input)


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``.

    >>> import dualgrad as dg
    >>> dg.addcmul(dg.tensor([1.]), dg.tensor([2.]), dg.tensor([3.]), value=0.5)
    tensor([4.])
    """
    return input + value * tensor1 * tensor2


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``.

    >>> import dualgrad as dg
    >>> dg.addcdiv(dg.tensor([1.]), dg.tensor([2.]), dg.tensor([4.]), value=2)
    tensor([2.])
    """
    return input + value * tensor1 / tensor2


METHODS: dict[str, Any] = {
    "fmax": fmax, "fmin": fmin, "xlogy": xlogy, "sinc": sinc, "lerp": lerp, "addcmul": addcmul,
    "addcdiv": addcdiv,
    "exp2": exp2, "cbrt": cbrt, "deg2rad": deg2rad, "rad2deg": rad2deg, "logaddexp2": logaddexp2,
    "copysign": copysign, "fmod": fmod, "heaviside": heaviside,
}
__all__ = ["addcdiv", "addcmul", "cbrt", "copysign", "deg2rad", "exp2", "fmax", "fmin", "fmod", "heaviside", "lerp",
           "logaddexp2", "rad2deg", "sinc", "xlogy"]
