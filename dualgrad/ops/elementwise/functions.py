"""More elementwise ops, for NumPy's namespace: ``exp2``, ``cbrt``, ``copysign``, ``fmod``, ``erf``, ...

Each is one ``elementwise`` entry (derived vjp, jvp and batching rule), as in
``elementwise.py``.

NumPy has no error function (and SciPy is optional), so ``erf`` and ``erfc`` call
Python's ``math.erf``/``math.erfc`` (the C library's, correctly rounded or within
1 ulp) element by element: exact, and measured faster than a vectorized rational
approximation (W. J. Cody's) that was also more than 1 ulp off. ``erfinv`` refines a
closed-form first guess by Halley steps on them.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...base.dtypes import torch_dtype_name
from ...factories import tensor as _tensor
from ...factories import zeros_like
from ...tensor import Tensor, numeric_array
from ..dispatch import OTHER_FIRST, apply, tensor_arg
from ..registry import elementwise, name_by_operands, nondifferentiable, vjp_from_partial
from ..surface import binary, exported, public, unary
from .core import (
    CLAMP_MAX,
    CLAMP_MIN,
    _integer_division,
    _where,
    checked_clamp,
    clone,
    cos,
    exp,
    isfinite,
    log,
    selecting,
    sigmoid,
    sin,
    trunc,
    zero_vjp,
)
from .core import pow as power

_LN2 = math.log(2.0)
_DEG = math.pi / 180.0
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def numeric_arrays(name: str, values: tuple) -> list:
    """``values`` as arrays, or a TypeError naming the first that is not a number or an array of numbers
    (``None``, a string: NumPy would make an object or string array of it)."""
    arrays = [numeric_array(v) for v in values]
    for position, (value, array) in enumerate(zip(values, arrays), 1):
        if array is None:
            raise TypeError(f"{name}(): argument (position {position}) must be Tensor or a number, not "
                            f"{type(value).__name__}")
    return arrays


def _real_impl(name: str, fn: Callable) -> Callable:
    """``fn`` on a float64 copy of a real array, its result in the input's float dtype (float64 for integers)."""

    def impl(x: Any) -> np.ndarray:
        (x,) = numeric_arrays(name, (x,))
        if x.dtype.kind == "c":
            raise NotImplementedError(f"{name}: complex inputs are not supported (as in torch)")
        return np.asarray(fn(x.astype(np.float64)), x.dtype if x.dtype.kind == "f" else np.float64)

    return impl


_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_ERF_RESIDUAL = np.frompyfunc(lambda x, z: (1.0 - z) - math.erfc(x) if z > 0.5 else math.erf(x) - z, 2, 1)


def _erfinv_impl(y: np.ndarray) -> np.ndarray:
    """The ``x`` with ``erf(x) = y``: +-inf at +-1, NaN outside ``[-1, 1]``.

    First guess (relative error below 2e-3): ``x0 = sqrt(sqrt(t^2 - l / a) - t)`` with
    ``l = log(1 - y^2)``, ``t = 2 / (pi a) + l / 2``, ``a = 0.147``. Three Halley steps
    ``x -= u / (1 + x u)``, ``u = f / f'``, each tripling the correct digits, on the residual
    ``f = erf(x) - |y|``, taken as ``(1 - |y|) - erfc(x)`` for ``|y| > 1/2`` (``1 - |y|`` is exact there).
    """
    z = np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log = np.log1p(-z * z)
        t = 2.0 / (math.pi * 0.147) + 0.5 * log
        x = np.where(z < 1, np.sqrt(np.sqrt(t * t - log / 0.147) - t), 0.0)
        for _ in range(3):
            u = np.asarray(_ERF_RESIDUAL(x, z), np.float64) / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
            x = x - u / (1.0 + x * u)
    return np.copysign(np.where(z == 1, np.inf, np.where(z > 1, np.nan, x)), y)


def _unit_sign(x: Any) -> Any:
    """+1 or -1 with the sign bit of ``x`` (so -0.0 gives -1), as copysign reads it."""
    return apply(COPYSIGN, 1.0, x)


exp2 = unary(elementwise("exp2", np.exp2, (lambda out, x: out * _LN2,), save_inputs=False, save_out=True),
             "``2 ** x``.", "[3.]", "tensor([8.])", numpy=np.exp2, namespaces={"special": ("exp2",)},
             top_level_inplace=True)
# (sigmoid of the difference, as logaddexp's: finite when one input is infinite)
LOGADDEXP2 = elementwise("logaddexp2", np.logaddexp2,
                         (lambda out, x, y: sigmoid((x - y) * _LN2), lambda out, x, y: sigmoid((y - x) * _LN2)),
                         to_float=True)
logaddexp2 = binary(LOGADDEXP2, "``log2(2**x + 2**y)`` computed stably (its gradient "
                    "stays finite when one input is infinite).", "[2.]", "tensor([3.])",
                    numpy=np.logaddexp2, inplace=False)
cbrt = unary(elementwise("cbrt", np.cbrt, (lambda out, x: 1 / (3 * out * out),), save_inputs=False, save_out=True),
             "Real cube root (negative for negative ``x``); its derivative at 0 is inf.", "[-8.]",
             "tensor([-2.])", numpy=np.cbrt, inplace=False)
deg2rad = unary(elementwise("deg2rad", np.deg2rad, (lambda out, x: _DEG,), save_inputs=False,
                            grad_name="Deg2RadBackward0"),
                "Degrees to radians.", "[180.]", "tensor([3.1416])", numpy=(np.deg2rad, np.radians),
                top_level_inplace=True)
rad2deg = unary(elementwise("rad2deg", np.rad2deg, (lambda out, x: 1 / _DEG,), save_inputs=False,
                            grad_name="Rad2DegBackward0"),
                "Radians to degrees.", "[3.141592653589793]", "tensor([180.])", numpy=(np.rad2deg, np.degrees),
                top_level_inplace=True)
# (the sign of ``y`` read from the result, which has it: torch saves ``self`` and the result, not ``other``)
_COPYSIGN_PARTIALS = (lambda out, x, y: _unit_sign(x) * _unit_sign(out), lambda out, x, y: zeros_like(out))
COPYSIGN = elementwise("copysign", np.copysign, _COPYSIGN_PARTIALS,
                       vjp=(vjp_from_partial(_COPYSIGN_PARTIALS[0]), zero_vjp), to_float=True,
                       save_inputs=lambda needs: (needs[0], False), save_out=True,
                       grad_name_for=name_by_operands({(True, False): "CopysignBackward1"}))
copysign = binary(COPYSIGN, "``|x|`` with the sign of ``y``; the gradient for ``y`` is 0.", "[-3.]",
                  "tensor([3.])", numpy=np.copysign)
FMOD = elementwise("fmod", _integer_division(np.fmod), (1, lambda out, x, y: -trunc(x / y)),
                   save_inputs=lambda needs: (needs[1], needs[1]),
                   grad_name_for=name_by_operands({(True, True): "FmodBackward1"}))
fmod = binary(FMOD, "C's remainder ``x - trunc(x / y) * y`` (sign of the dividend).", "[-3.]",
              "tensor([-1.])", numpy=np.fmod)
heaviside = binary(elementwise("heaviside", np.heaviside, (lambda out, x, h0: out * 0.0,
                                                         lambda out, x, h0: (x == 0).to(out.dtype)), save_out=True),
                   "Step function: 0 for ``x < 0``, 1 for ``x > 0``, ``y`` where ``x == 0``.",
                   "[-1., 0., 2.]", "tensor([0., 2., 1.])", numpy=np.heaviside)

# (the gradient is selected where the input is finite, 0 where a value was replaced: torch's NanToNumBackward0)
NAN_TO_NUM = selecting("nan_to_num", lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf,
                                                                                 neginf=neginf),
                       (lambda out, x, **params: isfinite(x),))
FMAX = selecting("fmax", np.fmax, (
    lambda out, x, y: (x >= y) | y.isnan(),
    lambda out, x, y: ~((x >= y) | y.isnan()),
))
fmax = binary(FMAX, "Elementwise maximum ignoring NaN; at ties the gradient goes to ``input`` (as torch's).",
              "[1., float('nan')]", "tensor([2., 2.])", inplace=False)
FMIN = selecting("fmin", np.fmin, (
    lambda out, x, y: (x <= y) | y.isnan(),
    lambda out, x, y: ~((x <= y) | y.isnan()),
))
fmin = binary(FMIN, "Elementwise minimum ignoring NaN; at ties the gradient goes to ``input`` (as torch's).",
              "[1., float('nan')]", "tensor([1., 2.])", inplace=False)


def _xlogy_impl(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x`` is 0 (even for ``y`` 0 or inf), NaN where ``y`` is NaN."""
    dtype = np.result_type(x, y)  # (a Python number for ``y`` does not widen a float32 ``x``)
    with np.errstate(divide="ignore", invalid="ignore"):
        product = np.multiply(x, np.log(np.asarray(y, dtype)))
    return np.where((np.asarray(x) == 0) & ~np.isnan(y), 0.0, product).astype(product.dtype, copy=False)


# d sinc / dt = sum_k c_k t^(2k-1) with t = pi x, c_k = (-1)^k 2k / (2k+1)!: the series that sinc's
# derivative takes for |x| < 0.2, where the closed form loses digits (cos(t) and sin(t)/t cancel)
_SINC_SERIES = tuple((-1) ** k * 2 * k / math.factorial(2 * k + 1) for k in range(1, 9))


def _sinc_partial(out: Any, x: Any) -> Any:
    """``(cos(pi x) - sinc(x)) / x``; for ``|x| < 0.2`` its Taylor series (8 terms, exact to rounding),
    which does not cancel: the closed form would lose half the digits near 0."""
    small = abs(x) < 0.2
    t = _where(small, x, 0.0) * math.pi
    t2 = t * t
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):
        series = series * t2 + c
    safe = _where(small, 1.0, x)
    return _where(small, math.pi * t * series, (cos(math.pi * safe) - sinc(safe)) / safe)


XLOGY = elementwise("xlogy", _xlogy_impl, (
    lambda out, x, y: _where((x == 0) & (y <= 0), 0.0, log(y)),
    lambda out, x, y: x / y,
), grad_name_for=name_by_operands({(False, True): "XlogyBackward1", (True, False): "XlogyBackward2"}))
xlogy = binary(XLOGY, "``input * log(other)``, 0 where ``input`` is 0.", "[0., 3.]", "tensor([0.0000, 2.0794])",
               namespaces={"special": ("xlogy",)})
sinc = unary(elementwise("sinc", np.sinc, (_sinc_partial,)),
             "Normalized sinc ``sin(pi x) / (pi x)``, 1 at 0; its derivative is exact to "
             "rounding near 0 too (a Taylor series there).", "[0., 0.5]", "tensor([1.0000, 0.6366])",
             namespaces={"special": ("sinc",)}, top_level_inplace=True)
erf = unary(elementwise("erf", _real_impl("erf", _ERF), (lambda out, x: _TWO_OVER_SQRT_PI * exp(-x * x),)),
            "The error function ``2 / sqrt(pi) * integral of exp(-t^2) from 0 to x`` (to 1 ulp).",
            "[0., 0.5, -3.]", "tensor([ 0.0000,  0.5205, -1.0000])", namespaces={"special": ("erf",)},
            top_level_inplace=True)
erfc = unary(elementwise("erfc", _real_impl("erfc", _ERFC), (lambda out, x: -_TWO_OVER_SQRT_PI * exp(-x * x),)),
             "``1 - erf(x)``, computed directly: accurate far into the tail, where ``erf`` is 1.",
             "[0., 10.]", "tensor([1.0000e+00, 2.0885e-45])", namespaces={"special": ("erfc",)}, top_level_inplace=True)
erfinv = unary(elementwise("erfinv", _real_impl("erfinv", _erfinv_impl),
                           (lambda out, x: exp(out * out) / _TWO_OVER_SQRT_PI,), save_inputs=False, save_out=True),
               "The inverse of ``erf`` on ``[-1, 1]`` (+-inf at +-1, NaN outside).", "[0., 0.5, 1.]",
               "tensor([0.0000, 0.4769,    inf])", namespaces={"special": ("erfinv",)})


def _lerp_impl(x: np.ndarray, end: np.ndarray, weight: Any) -> np.ndarray:
    """torch's lerp: ``x + weight (end - x)`` for ``|weight| < 1/2``, else ``end - (end - x) (1 - weight)``
    (exact at both ends: ``end`` itself for weight 1)."""
    diff = np.subtract(end, x)
    return np.where(np.abs(weight) < 0.5, x + weight * diff, end - diff * (1 - weight))


LERP = elementwise("lerp", _lerp_impl, (lambda out, x, end, weight: 1 - weight, lambda out, x, end, weight: weight,
                                        lambda out, x, end, weight: end - x),
                   arg_names=("self", "end", "weight"), save_inputs=lambda needs: (needs[2], needs[2], True),
                   grad_name_for=name_by_operands({(True, True, True): "LerpBackward1"}))
ADDCMUL = elementwise("addcmul", lambda x, a, b, value=1: x + value * a * b,
                      (1, lambda out, x, a, b, value=1: value * b, lambda out, x, a, b, value=1: value * a),
                      arg_names=("self", "tensor1", "tensor2"), save_inputs=lambda needs: (False, needs[2], needs[1]))
ADDCDIV = elementwise("addcdiv", lambda x, a, b, value=1: x + value * a / b,
                      (1, lambda out, x, a, b, value=1: value / b, lambda out, x, a, b, value=1: -value * a / (b * b)),
                      arg_names=("self", "tensor1", "tensor2"), to_float=True,
                      save_inputs=lambda needs: (False, needs[2], True))  # (torch's: tensor2 always)
# torch's order of the saved tensors (what saved-tensor hooks see): ``other`` before ``self``; lerp's
# end, self, weight; addcmul's and addcdiv's tensor1, tensor2 (self is never saved)
for _op in (LOGADDEXP2, FMOD, FMAX, FMIN, XLOGY):
    _op.pack_order = OTHER_FIRST
LERP.pack_order = (1, 0, 2)
ADDCMUL.pack_order = ADDCDIV.pack_order = (1, 2, 0)


@public(LERP)
def lerp(input: Any, end: Any, weight: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input + weight * (end - input)`` (``weight`` a number or a tensor), computed as torch computes
    it: ``end - (end - input) * (1 - weight)`` for ``|weight| >= 1/2``, so that weight 1 gives ``end``.

    >>> import dualgrad as dg
    >>> dg.lerp(dg.tensor([0., 1.]), dg.tensor([10., 3.]), 0.5)
    tensor([5., 2.])
    """
    return apply(LERP, input, end, weight)


@public(ADDCMUL)
def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``.

    >>> import dualgrad as dg
    >>> dg.addcmul(dg.tensor([1.]), dg.tensor([2.]), dg.tensor([3.]), value=0.5)
    tensor([4.])
    """
    tensors = (tensor_arg(tensor1, "addcmul"), tensor_arg(tensor2, "addcmul"))
    return apply(ADDCMUL, input, *tensors) if value == 1 else apply(ADDCMUL, input, *tensors, value=value)


@public(ADDCDIV)
def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``.

    >>> import dualgrad as dg
    >>> dg.addcdiv(dg.tensor([1.]), dg.tensor([2.]), dg.tensor([4.]), value=2)
    tensor([2.])
    """
    tensors = (tensor_arg(tensor1, "addcdiv"), tensor_arg(tensor2, "addcdiv"))
    return apply(ADDCDIV, input, *tensors) if value == 1 else apply(ADDCDIV, input, *tensors, value=value)


@public(CLAMP_MIN)
def clamp_min(input: Any, min: Any) -> Tensor:  # noqa: A001, A002 - torch's names
    """``clamp(input, min=min)``.

    >>> import dualgrad as dg
    >>> dg.clamp_min(dg.tensor([1., -2.]), 0.)
    tensor([1., 0.])
    """
    return checked_clamp(CLAMP_MIN, input, min, None)


@public(CLAMP_MAX)
def clamp_max(input: Any, max: Any) -> Tensor:  # noqa: A001, A002 - torch's names
    """``clamp(input, max=max)``.

    >>> import dualgrad as dg
    >>> dg.clamp_max(dg.tensor([1., -2.]), 0.)
    tensor([ 0., -2.])
    """
    return checked_clamp(CLAMP_MAX, input, None, max)


@public(None, inplace=False)
def positive(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """``+input``: ``input`` itself; a bool tensor raises RuntimeError, as torch's.

    >>> import dualgrad as dg
    >>> dg.positive(dg.tensor([-1.]))
    tensor([-1.])
    """
    x = tensor_arg(input, "positive")
    if x.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


@public(NAN_TO_NUM)
def nan_to_num(input: Any, nan: float = 0.0, posinf: float | None = None,  # noqa: A002 - torch's names
               neginf: float | None = None) -> Tensor:
    """``input`` with NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
    largest and lowest finite values of the dtype); the gradient is 1 where ``input`` is finite and 0 where
    a value was replaced. Complex tensors have their real and imaginary parts replaced; integer tensors
    are copied unchanged.

    >>> import dualgrad as dg
    >>> x = dg.tensor([float("nan"), float("inf"), -float("inf"), 1.5], requires_grad=True)
    >>> y = dg.nan_to_num(x, posinf=9., neginf=-9.)
    >>> y.sum().backward()
    >>> y.detach(), x.grad
    (tensor([ 0.0000,  9.0000, -9.0000,  1.5000]), tensor([0., 0., 0., 1.]))
    """
    x = tensor_arg(input, "nan_to_num")
    if x.dtype.kind in "biu":
        return clone(x)
    if x.dtype.kind == "c":
        return complex(nan_to_num(x.real, nan, posinf, neginf), nan_to_num(x.imag, nan, posinf, neginf))
    return apply(NAN_TO_NUM, x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)


@public(None, method=False)
def complex(real: Any, imag: Any) -> Tensor:  # noqa: A001 - torch's name
    """The complex tensor ``real + i imag`` of two floating tensors of one dtype (float32 gives
    complex64); differentiable in both.

    >>> import dualgrad as dg
    >>> dg.complex(dg.tensor([1., 2.]), dg.tensor([3., -4.]))
    tensor([1.+3.j, 2.-4.j])
    """
    real, imag = tensor_arg(real, "complex"), tensor_arg(imag, "complex")
    for t in (real, imag):
        if t.dtype.kind != "f":
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                               f"{torch_dtype_name(real.dtype)} and {torch_dtype_name(imag.dtype)}")
    if real.dtype != imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {torch_dtype_name(real.dtype)} but got scalar type "
                           f"{torch_dtype_name(imag.dtype)} for second argument")
    return real + imag * 1j


@public(None, method=False)
def polar(abs: Any, angle: Any) -> Tensor:  # noqa: A002 - torch's names
    """The complex tensor of modulus ``abs`` and argument ``angle``: ``abs (cos(angle) + i sin(angle))``;
    differentiable in both.

    >>> import math, dualgrad as dg
    >>> dg.polar(dg.tensor([2.]), dg.tensor([math.pi / 2]))
    tensor([1.2246e-16+2.j])
    """
    abs, angle = tensor_arg(abs, "polar"), tensor_arg(angle, "polar")
    return complex(abs * cos(angle), abs * sin(angle))


# -- integers and the floating-point representation (moved from the statistics) ------------------
def _integers_only(name: str, fn: Any) -> Any:
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        dtype = np.result_type(x, y)
        if dtype.kind not in "iub":
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{torch_dtype_name(dtype)}\'')
        return fn(x, y)

    return impl


def _floats_only(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dtype = np.result_type(x, y)
    if dtype.kind != "f":
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{torch_dtype_name(dtype)}\'')
    return np.nextafter(x, y)


GCD = nondifferentiable("gcd", _integers_only("gcd", np.gcd))
LCM = nondifferentiable("lcm", _integers_only("lcm", np.lcm))
# (torch's rule: the step to the next float is a constant, so d/d input = 1 and d/d other = 0)
NEXTAFTER = elementwise("nextafter", _floats_only, (1, lambda out, x, y: zeros_like(out)),
                        vjp=(vjp_from_partial(1), zero_vjp), save_inputs=False, save_out=True)
FREXP_EXPONENT = nondifferentiable("frexp_exponent", lambda x: np.frexp(x)[1].astype(np.int32))


@public(GCD)
def gcd(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The greatest common divisor of integers, elementwise (non-negative; 0 for two zeros).

    >>> import dualgrad as dg
    >>> dg.gcd(dg.tensor([12, -18, 0]), dg.tensor([8, 12, 0]))
    tensor([4, 6, 0])
    """
    return apply(GCD, input, other)


@public(LCM)
def lcm(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The least common multiple of integers, elementwise (non-negative; 0 if either is 0).

    >>> import dualgrad as dg
    >>> dg.lcm(dg.tensor([4, -6, 0]), dg.tensor([6, 4, 5]))
    tensor([12, 12,  0])
    """
    return apply(LCM, input, other)


@public(NEXTAFTER)
def nextafter(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The next floating-point value after ``input`` towards ``other``, elementwise; its derivative is 1 in
    ``input`` and 0 in ``other`` (as torch's).

    >>> import dualgrad as dg
    >>> (dg.nextafter(dg.tensor([1.]), dg.tensor([2.])) - 1).item() == 2.0 ** -52
    True
    """
    return apply(NEXTAFTER, input, other)


@public(None, inplace=False)  # (float_power_: torch_names, in float64 only)
def float_power(input: Any, exponent: Any) -> Tensor:  # noqa: A002 - torch's names
    """``input ** exponent`` computed in double precision (float64, or complex128 if either is complex).

    >>> import dualgrad as dg
    >>> dg.float_power(dg.tensor([2, 3]), 2)
    tensor([4., 9.])
    """
    complex_ = any(isinstance(a, builtins.complex) or (isinstance(a, Tensor) and a.dtype.kind == "c")
                   for a in (input, exponent))  # (builtins': this module's ``complex`` is torch's)
    dtype = np.complex128 if complex_ else np.float64
    base = tensor_arg(input, "float_power") if isinstance(input, Tensor) else _tensor(input, dtype=dtype)
    if isinstance(exponent, Tensor):
        exponent = exponent.to(dtype)
    return power(base.to(dtype), exponent)


@public(None, numpy=np.ldexp)
def ldexp(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """``input * 2 ** other`` (a floating result).

    >>> import dualgrad as dg
    >>> dg.ldexp(dg.tensor([1., 3.]), dg.tensor([2, -1]))
    tensor([4.0000, 1.5000])
    """
    return tensor_arg(input, "ldexp") * power(2.0, other)


class Frexp(NamedTuple):
    mantissa: Tensor
    exponent: Tensor


@public(None, inplace=False)
def frexp(input: Any) -> Frexp:  # noqa: A002 - torch's name
    """The mantissa (in ``[0.5, 1)`` in absolute value, 0 for 0) and the int32 exponent with
    ``input == mantissa * 2 ** exponent``; the mantissa is differentiable (``2 ** -exponent``).

    >>> import dualgrad as dg
    >>> dg.frexp(dg.tensor([8., 0.3, -5.]))
    Frexp(mantissa=tensor([ 0.5000,  0.6000, -0.6250]), exponent=tensor([ 4, -1,  3], dtype=int32))
    """
    x = tensor_arg(input, "frexp")
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    exponent = apply(FREXP_EXPONENT, x)
    return Frexp(x * power(2.0, -exponent).to(x.dtype), exponent)



__all__ = exported(__name__)
