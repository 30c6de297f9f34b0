"""torch.special's functions: the gamma family, Bessel functions, the normal distribution, ``logit``, ...

Each is one ``elementwise`` entry (derived vjp, jvp and batching rule) whose derivative is written
with the family's own ops, so derivatives of any order exist: ``lgamma' = digamma``,
``digamma' = polygamma(1)``, ``polygamma(n)' = polygamma(n + 1)``, ``i0' = i1``,
``i1' = i0 - i1 / x``. The numerics are NumPy code in ``_special_math`` (no SciPy), computed in
float64 and returned in the input's floating dtype (integers give the default dtype), as torch's.
Complex inputs raise NotImplementedError, as torch's.

As in torch, ``zeta(x, q)`` is differentiable in ``q`` only and ``gammainc(a, x)``/``gammaincc`` in
``x`` only: the derivative in the first argument raises torch's NotImplementedError when a backward
pass needs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...factories import arange, get_default_dtype
from ...tensor import Tensor, int_arg
from ..dispatch import OTHER_FIRST, apply, tensor_arg
from ..registry import elementwise
from ..surface import declare, exported, public
from . import _special_math as sm
from .core import _where, exp, log, log1p, sign
from .functions import _ERFC, _erfinv_impl, numeric_arrays, xlogy

_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_SQRT_HALF = math.sqrt(0.5)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _float64_impl(name: str, fn: Callable) -> Callable:
    """``fn`` on float64 copies of real arrays, its result in their floating dtype (the default
    dtype for integers and bools); complex inputs raise NotImplementedError, as in torch."""

    def impl(*values: Any, **params: Any) -> np.ndarray:
        arrays = numeric_arrays(name, values)
        if any(a.dtype.kind == "c" for a in arrays):
            raise NotImplementedError(f"{name}: complex inputs are not supported (as in torch)")
        floating = [a.dtype for a in arrays if a.dtype.kind == "f"]
        dtype = np.result_type(*floating) if floating else get_default_dtype()
        return np.asarray(fn(*[a.astype(np.float64) for a in arrays], **params), dtype)

    return impl


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(_ERFC(x), np.float64)


def _exp_square(x: np.ndarray, sign: float) -> np.ndarray:
    """``exp(sign x^2)`` for ``|x| < 64`` without the rounding of ``x^2``: ``x = h + l`` with ``h`` to 26 bits,
    so ``h^2`` is exact and ``x^2 = h^2 + l (2h + l)``."""
    high = np.round(x * 2.0 ** 20) / 2.0 ** 20
    low = x - high
    return np.exp(sign * high * high) * np.exp(sign * low * (2.0 * high + low))


def _erfcx_impl(x: np.ndarray) -> np.ndarray:
    """``exp(x^2) erfc(x)``: directly below 26 (``x^2`` unrounded, ``_exp_square``); above, the
    asymptotic series ``1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k``."""
    with np.errstate(all="ignore"):
        large = x >= 26.0
        xs = np.where(large | (x < -27.0), 0.0, x)
        direct = np.where(x < -27.0, np.inf, _exp_square(xs, 1.0) * _erfc(xs))
        xl = np.where(large, x, 26.0)
        inv = 1.0 / (2.0 * xl * xl)
        term, total = np.ones_like(xl), np.ones_like(xl)
        for k in range(1, 12):
            term = -term * (2 * k - 1) * inv
            total += term
        asymptotic = total / (xl * math.sqrt(math.pi))
        return np.where(large, asymptotic, np.where(np.isnan(x), np.nan, direct))


def _ndtr_impl(x: np.ndarray) -> np.ndarray:
    """``erfc(-x / sqrt 2) / 2``; for ``x < -1``, ``erfcx(-x / sqrt 2) exp(-x^2 / 2) / 2`` (``x^2`` unrounded:
    the rounding of ``x / sqrt 2`` then costs only ``erfcx``'s slow relative change, not ``exp``'s)."""
    with np.errstate(all="ignore"):
        left = x < -1.0
        xl = np.where(left, np.maximum(x, -60.0), -1.0)
        tail = 0.5 * _erfcx_impl(-xl * _SQRT_HALF) * _exp_square(xl, -0.5)
        return np.where(left, tail, 0.5 * _erfc(-np.where(left, 0.0, x) * _SQRT_HALF))


def _log_ndtr_impl(x: np.ndarray) -> np.ndarray:
    """``log(ndtr(x))``: ``log1p(-ndtr(-x))`` for ``x > 0``, ``log(erfcx(-x / sqrt 2) / 2) - x^2 / 2`` below."""
    with np.errstate(all="ignore"):
        negative = x < 0
        xn = np.where(negative, x, 0.0)
        left = np.log(0.5 * _erfcx_impl(-xn * _SQRT_HALF)) - 0.5 * xn * xn
        right = np.log1p(-_ndtr_impl(-np.where(negative, 0.0, x)))
        return np.where(negative, left, right)


def _ndtri_impl(p: np.ndarray) -> np.ndarray:
    """The ``x`` with ``ndtr(x) = p``: ``sqrt(2) erfinv(2p - 1)`` for ``|p - 1/2| < 0.4`` (``2p - 1``
    is exact there, and relative precision holds near 1/2); in the tails a first guess
    (``-sqrt(2 log(1/q))`` corrected, ``q = min(p, 1 - p)``) refined by Halley steps on ``ndtr(x) - q``
    (``q`` kept small, so the residual keeps its relative precision); -inf at 0, inf at 1, NaN outside
    ``[0, 1]``."""
    with np.errstate(all="ignore"):
        q = np.minimum(p, 1.0 - p)
        inside = (q > 0) & (p >= 0) & (p <= 1)
        qi = np.where(inside, q, 0.25)
        t = np.sqrt(-2.0 * np.log(qi))
        x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
              / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))
        for _ in range(4):
            density = np.exp(-0.5 * x * x) / _SQRT_2PI
            u = (_ndtr_impl(x) - qi) / density
            x = x - u / (1.0 + 0.5 * x * u)
        x = np.where(p > 0.5, -x, x)
        x = np.where(np.abs(p - 0.5) < 0.4, math.sqrt(2.0) * _erfinv_impl(2.0 * p - 1.0), x)
        edge = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, np.nan))
        return np.where(inside, x, edge)


def _entr_impl(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(x > 0, -x * np.log(x), np.where(x == 0, 0.0, np.where(x < 0, -np.inf, x)))


def _xlog1py_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x * log1p(y)``, 0 where ``x`` is 0 (even for ``y <= -1``), NaN where ``y`` is NaN."""
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))


def _logit_impl(x: np.ndarray, eps: float | None = None) -> np.ndarray:
    if eps is not None:
        x = np.clip(x, eps, 1.0 - eps)
    with np.errstate(all="ignore"):
        return np.log(x / (1.0 - x))


def _logit_partial(out: Any, x: Any, eps: float | None = None) -> Any:
    """``1 / (x (1 - x))``; 0 outside ``[eps, 1 - eps]`` with ``eps``, NaN outside ``[0, 1]`` without."""
    lo, hi = (0.0, 1.0) if eps is None else (eps, 1.0 - eps)
    return _where((x < lo) | (x > hi), 0.0 if eps is not None else math.nan, 1 / (x * (1 - x)))


def _over_x(value: Any, x: Any, scale: Any = 1.0) -> Any:
    """``value / x`` for ``value = scale * i1(x)``: ``scale * (1/2 + x^2/16 + x^4/384)`` (the series of
    ``i1(x) / x``) for ``|x| < 1e-3``.

    The quotient's own derivative, ``(value' x - value) / x^2``, is there the difference of two
    numbers of size ``1/x``: rounding would make the second derivatives of ``i1`` and ``i1e`` wrong.
    """
    small = abs(x) < 1e-3
    x2 = x * x
    return _where(small, scale * (0.5 + x2 / 16 + x2 * x2 / 384), value / _where(small, 1.0, x))


def _i1_partial(out: Any, x: Any) -> Any:
    """``i0(x) - i1(x) / x``."""
    return i0(x) - _over_x(out, x)


def _i1e_partial(out: Any, x: Any) -> Any:
    """``i0e(x) - i1e(x) sign(x) - i1e(x) / x`` (``i1e(x) = exp(-|x|) i1(x)``)."""
    return i0e(x) - out * sign(x) - _over_x(out, x, exp(-abs(x)))


def _not_implemented(what: str) -> Callable:
    """The partial of an input torch does not differentiate: raises torch's error when a backward needs it."""

    def partial(out: Any, *inputs: Any) -> Any:
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")

    return partial


def _gamma_density(out: Any, a: Any, x: Any) -> Any:
    """``x^(a-1) e^-x / Gamma(a)``, the derivative of ``gammainc(a, x)`` in ``x``."""
    return exp(xlogy(a - 1, x) - x - lgamma(a))


LGAMMA = elementwise("lgamma", _float64_impl("lgamma", sm.lgamma), (lambda out, x: digamma(x),))
DIGAMMA = elementwise("digamma", _float64_impl("digamma", sm.digamma), (lambda out, x: polygamma(1, x),))
POLYGAMMA = elementwise("polygamma", _float64_impl("polygamma", lambda x, n: sm.polygamma(n, x)),
                        (lambda out, x, n: polygamma(n + 1, x),))
LOGIT = elementwise("logit", _float64_impl("logit", _logit_impl), (_logit_partial,))
XLOG1PY = elementwise("special_xlog1py", _float64_impl("xlog1py", _xlog1py_impl), (
    lambda out, x, y: _where((x == 0) & (y <= -1), 0.0, log1p(y)),
    lambda out, x, y: x / (1 + y),
), to_float=True, grad_name="SpecialXlog1PyBackward0")
XLOG1PY.pack_order = OTHER_FIRST  # (torch's: other before self)
ENTR = elementwise("special_entr", _float64_impl("entr", _entr_impl), (lambda out, x: -(log(x) + 1),),
                   grad_name="SpecialEntrBackward0")
NDTR = elementwise("special_ndtr", _float64_impl("ndtr", _ndtr_impl),
                   (lambda out, x: exp(-0.5 * x * x) / _SQRT_2PI,), grad_name="SpecialNdtrBackward0")
LOG_NDTR = elementwise("special_log_ndtr", _float64_impl("log_ndtr", _log_ndtr_impl),
                       (lambda out, x: _SQRT_2_OVER_PI / erfcx(-x * _SQRT_HALF),),
                       grad_name="SpecialLogNdtrBackward0")
NDTRI = elementwise("special_ndtri", _float64_impl("ndtri", _ndtri_impl),
                    (lambda out, x: _SQRT_2PI * exp(0.5 * out * out),), save_inputs=False, save_out=True,
                    grad_name="SpecialNdtriBackward0")
ERFCX = elementwise("special_erfcx", _float64_impl("erfcx", _erfcx_impl),
                    (lambda out, x: 2 * x * out - _TWO_OVER_SQRT_PI,), save_out=True,
                    grad_name="SpecialErfcxBackward0")
I0 = elementwise("i0", _float64_impl("i0", lambda x: sm.bessel_i(0, x, False)), (lambda out, x: i1(x),))
I0E = elementwise("special_i0e", _float64_impl("i0e", lambda x: sm.bessel_i(0, x, True)),
                  (lambda out, x: i1e(x) - sign(x) * out,), save_out=True, grad_name="SpecialI0EBackward0")
I1 = elementwise("special_i1", _float64_impl("i1", lambda x: sm.bessel_i(1, x, False)), (_i1_partial,),
                 save_out=True, grad_name="SpecialI1Backward0")
I1E = elementwise("special_i1e", _float64_impl("i1e", lambda x: sm.bessel_i(1, x, True)), (_i1e_partial,),
                  save_out=True, grad_name="SpecialI1EBackward0")
ZETA = elementwise("special_zeta", _float64_impl("zeta", sm.hurwitz_zeta), (
    _not_implemented("zeta"),
    lambda out, x, q: -x * zeta(x + 1, q),
), to_float=True, grad_name="SpecialZetaBackward0")
GAMMAINC = elementwise("special_gammainc", _float64_impl("gammainc", lambda a, x: sm.gammainc(a, x, False)),
                       (_not_implemented("igamma: input"), _gamma_density), to_float=True,
                       grad_name="IgammaBackward0")
GAMMAINCC = elementwise("special_gammaincc", _float64_impl("gammaincc", lambda a, x: sm.gammainc(a, x, True)),
                        (_not_implemented("igammac: input"), lambda out, a, x: -_gamma_density(out, a, x)),
                        to_float=True, grad_name="IgammacBackward0")


def _doc(summary: str, example: str, result: str) -> str:
    return f"{summary}\n\n>>> import dualgrad as dg\n>>> {example}\n{result}\n"


def _unary(op: Any, name: str, doc: str, **surface: Any) -> Callable:
    """The public function ``input -> apply(op, input)``, declared (``ops/surface.py``) with ``surface``."""
    def fn(input: Any) -> Tensor:  # noqa: A002 - torch's name
        return apply(op, input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return declare(fn, op, module=__name__, **surface)


# (torch.special only: no top-level name, no Tensor method)
_SPECIAL_ONLY = {"top_level": False, "method": False}


lgamma = _unary(LGAMMA, "lgamma", _doc(
    "``log |Gamma(x)|`` (inf at 0 and the negative integers); its derivative is ``digamma``.",
    "dg.lgamma(dg.tensor([0.5, 1., 4., -0.5]))", "tensor([0.5724, 0.0000, 1.7918, 1.2655])"),
    namespaces={"special": ("gammaln",)})
digamma = _unary(DIGAMMA, "digamma", _doc(
    "``Gamma'(x) / Gamma(x)``: -inf at +0, NaN at the negative integers; its derivative is ``polygamma(1, x)``.",
    "dg.digamma(dg.tensor([1., 0.5, -0.5]))", "tensor([-0.5772, -1.9635,  0.0365])"),
    namespaces={"special": ("digamma", "psi")})
i0 = _unary(I0, "i0", _doc("The modified Bessel function of the first kind of order 0; its derivative is ``i1``.",
                           "dg.i0(dg.tensor([0., 1., -3.]))", "tensor([1.0000, 1.2661, 4.8808])"),
    namespaces={"special": ("i0",)}, top_level_inplace=True)
i0e = _unary(I0E, "i0e", _doc("``exp(-|x|) i0(x)``, finite for large ``|x|``.",
                              "dg.special.i0e(dg.tensor([0., 1000.]))", "tensor([1.0000, 0.0126])"),
    namespaces={"special": ("i0e",)}, **_SPECIAL_ONLY)
i1 = _unary(I1, "i1", _doc("The modified Bessel function of the first kind of order 1 (odd).",
                           "dg.special.i1(dg.tensor([0., 1., -3.]))", "tensor([ 0.0000,  0.5652, -3.9534])"),
    namespaces={"special": ("i1",)}, **_SPECIAL_ONLY)
i1e = _unary(I1E, "i1e", _doc("``exp(-|x|) i1(x)``, finite for large ``|x|``.",
                              "dg.special.i1e(dg.tensor([1., -1000.]))", "tensor([ 0.2079, -0.0126])"),
    namespaces={"special": ("i1e",)}, **_SPECIAL_ONLY)
ndtr = _unary(NDTR, "ndtr", _doc("The standard normal distribution function ``(1 + erf(x / sqrt 2)) / 2``.",
                                 "dg.special.ndtr(dg.tensor([0., 1.96, -40.]))",
                                 "tensor([0.5000, 0.9750, 0.0000])"),
    namespaces={"special": ("ndtr",)}, **_SPECIAL_ONLY)
log_ndtr = _unary(LOG_NDTR, "log_ndtr", _doc(
    "``log(ndtr(x))``, accurate far into both tails.",
    "dg.special.log_ndtr(dg.tensor([0., -40., 10.]))", "tensor([-6.9315e-01, -8.0461e+02, -7.6199e-24])"),
    namespaces={"special": ("log_ndtr",)}, **_SPECIAL_ONLY)
ndtri = _unary(NDTRI, "ndtri", _doc(
    "The inverse of ``ndtr`` (the standard normal quantile): -inf at 0, inf at 1, NaN outside ``[0, 1]``.",
    "dg.special.ndtri(dg.tensor([0.5, 0.975, 1e-300]))", "tensor([  0.0000,   1.9600, -37.0471])"),
    namespaces={"special": ("ndtri",)}, **_SPECIAL_ONLY)
erfcx = _unary(ERFCX, "erfcx", _doc("The scaled complementary error function ``exp(x^2) erfc(x)``.",
                                    "dg.special.erfcx(dg.tensor([0., 1., 30.]))",
                                    "tensor([1.0000, 0.4276, 0.0188])"),
    namespaces={"special": ("erfcx",)}, **_SPECIAL_ONLY)
entr = _unary(ENTR, "entr", _doc("``-x log(x)`` for ``x > 0``, 0 at 0, -inf for ``x < 0``.",
                                 "dg.special.entr(dg.tensor([0., 0.5, -1.]))", "tensor([0.0000, 0.3466,   -inf])"),
    namespaces={"special": ("entr",)}, **_SPECIAL_ONLY)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``polygamma(n, self)`` (torch's ``x.polygamma(n)``)."""
    return polygamma(n, self)


@public(POLYGAMMA, namespaces={"special": ("polygamma",)}, method_function=_polygamma_method)
def polygamma(n: int, input: Any) -> Tensor:  # noqa: A002 - torch's names
    """The ``n``-th derivative of ``digamma`` (``n >= 0``); its derivative is ``polygamma(n + 1, x)``.

    >>> import dualgrad as dg
    >>> dg.polygamma(1, dg.tensor([1., 0.5])), dg.polygamma(2, dg.tensor([1.]))
    (tensor([1.6449, 4.9348]), tensor([-2.4041]))
    """
    n = int_arg(n, "polygamma", "n", 1)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return apply(POLYGAMMA, input, n=n)


@public(None, namespaces={"special": ("multigammaln",)})
def mvlgamma(input: Any, p: int) -> Tensor:  # noqa: A002 - torch's names
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2)``.

    >>> import dualgrad as dg
    >>> dg.mvlgamma(dg.tensor([3.5, 2.]), 3)
    tensor([3.8959, 1.5963])
    """
    p = int_arg(p, "mvlgamma", "p", 2)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = tensor_arg(input, "mvlgamma")
    shifts = arange(p, dtype=x.dtype if x.dtype.kind == "f" else get_default_dtype()) * -0.5
    return lgamma(x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


@public(LOGIT, namespaces={"special": ("logit",)})
def logit(input: Any, eps: float | None = None) -> Tensor:  # noqa: A002 - torch's names
    """``log(x / (1 - x))``, with ``x`` first clamped to ``[eps, 1 - eps]`` if ``eps`` is given (the
    gradient is then 0 outside that interval; without ``eps`` it is NaN outside ``[0, 1]``, as torch's).

    >>> import dualgrad as dg
    >>> dg.logit(dg.tensor([0.25, 0.5, 1.])), dg.logit(dg.tensor([0., 1.]), eps=0.25)
    (tensor([-1.0986,  0.0000,     inf]), tensor([-1.0986,  1.0986]))
    """
    if isinstance(eps, Tensor) and eps.ndim == 0:  # (a one-value tensor is a number, as for torch)
        eps = eps.item()
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating))):
        raise TypeError(f"logit(): argument 'eps' (position 2) must be float, not {type(eps).__name__}")
    return apply(LOGIT, input, eps=None if eps is None else float(eps))


@public(XLOG1PY, namespaces={"special": ("xlog1py",)}, **_SPECIAL_ONLY)
def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).

    >>> import dualgrad as dg
    >>> dg.special.xlog1py(dg.tensor([0., 2.]), dg.tensor([-1., 1.]))
    tensor([0.0000, 1.3863])
    """
    return apply(XLOG1PY, input, other)


@public(ZETA, namespaces={"special": ("zeta",)}, **_SPECIAL_ONLY)
def zeta(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The Hurwitz zeta function ``sum_k (other + k) ** -input``: inf at ``input == 1``, NaN for
    ``input < 1``. Differentiable in ``other`` only: the derivative in ``input`` raises
    NotImplementedError in the backward pass, as torch's.

    >>> import dualgrad as dg
    >>> dg.special.zeta(dg.tensor([2., 3.]), 1.)
    tensor([1.6449, 1.2021])
    """
    return apply(ZETA, input, other)


@public(GAMMAINC, namespaces={"special": ("gammainc",)}, **_SPECIAL_ONLY)
def gammainc(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The regularized lower incomplete gamma function ``P(a, x) = integral_0^x t^(a-1) e^-t dt / Gamma(a)``
    (``a = input``, ``x = other``); differentiable in ``x`` only, as torch's (the derivative in ``a``
    raises NotImplementedError in the backward pass).

    >>> import dualgrad as dg
    >>> dg.special.gammainc(dg.tensor([1., 2.5]), dg.tensor([1., 3.]))
    tensor([0.6321, 0.6938])
    """
    return apply(GAMMAINC, input, other)


@public(GAMMAINCC, namespaces={"special": ("gammaincc",)}, **_SPECIAL_ONLY)
def gammaincc(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, computed directly (accurate
    where it is small); differentiable in ``x`` only, as torch's.

    >>> import dualgrad as dg
    >>> dg.special.gammaincc(dg.tensor([1., 2.5]), dg.tensor([1., 30.]))
    tensor([3.6788e-01, 1.2155e-11])
    """
    return apply(GAMMAINCC, input, other)


__all__ = exported(__name__)
