"""More elementwise ops, for NumPy's namespace: ``exp2``, ``cbrt``, ``copysign``, ``fmod``, ...

Each is one ``elementwise`` entry (derived vjp, jvp and batching rule), as in
``elementwise.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dispatch import apply
from .elementwise import COMPARISONS, _binary, _unary
from .registry import elementwise

_LN2 = math.log(2.0)
_DEG = math.pi / 180.0


def _unit_sign(x: Any) -> Any:
    """+1 or -1 with the sign bit of ``x`` (so -0.0 gives -1), as copysign reads it."""
    return apply(COPYSIGN, 1.0, x)


EXP2 = elementwise("exp2", np.exp2, (lambda out, x: out * _LN2,), save_inputs=False, save_out=True)
LOGADDEXP2 = elementwise("logaddexp2", np.logaddexp2,
                         (lambda out, x, y: exp2(x - out), lambda out, x, y: exp2(y - out)), save_out=True,
                         to_float=True)
CBRT = elementwise("cbrt", np.cbrt, (lambda out, x: 1 / (3 * out * out),), save_inputs=False, save_out=True)
DEG2RAD = elementwise("deg2rad", np.deg2rad, (lambda out, x: _DEG,), save_inputs=False)
RAD2DEG = elementwise("rad2deg", np.rad2deg, (lambda out, x: 1 / _DEG,), save_inputs=False)
COPYSIGN = elementwise("copysign", np.copysign, (
    lambda out, x, y: _unit_sign(x) * _unit_sign(y),
    lambda out, x, y: y * 0.0,
), to_float=True)
FMOD = elementwise("fmod", np.fmod, (1, lambda out, x, y: -apply(COMPARISONS["trunc"], x / y)))
HEAVISIDE = elementwise("heaviside", np.heaviside, (
    lambda out, x, h0: out * 0.0,
    lambda out, x, h0: (x == 0).to(out.dtype),
), save_out=True)

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


METHODS: dict[str, Any] = {
    "exp2": exp2, "cbrt": cbrt, "deg2rad": deg2rad, "rad2deg": rad2deg, "logaddexp2": logaddexp2,
    "copysign": copysign, "fmod": fmod, "heaviside": heaviside,
}
__all__ = ["cbrt", "copysign", "deg2rad", "exp2", "fmod", "heaviside", "logaddexp2", "rad2deg"]
