"""The numerics of ``dualgrad.special``: gamma-family and Bessel functions on float64 arrays, in NumPy.

Pure NumPy, vectorized (loops run over series terms, never over elements), no SciPy. Each
function takes and returns float64 arrays; the op module casts. Accuracy against torch and
mpmath (float64): about 1e-15 relative, except near the zeros of ``lgamma`` and ``digamma``
for ``x < 0``, where the error is absolute (about 1e-15), as the reflection formulas subtract.

* ``lgamma``: ``x >= 10``: Stirling's series (8 terms); ``0 < x < 10``: shifted by the
  recurrence ``lgamma(x + 1) = lgamma(x) + log(x)`` into ``[1.5, 2.5)``, where the Taylor
  series of ``lgamma(2 + z)`` (coefficients ``(-1)^k (zeta(k) - 1) / k``) converges like
  ``4^-k``, exact to relative precision near the zeros 1 and 2; ``x < 0``: the reflection
  ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)`` with ``sin(pi x)`` reduced exactly.
* ``digamma``: ``x >= 10``: the asymptotic series; near its positive zero ``x0 = 1.4616...``
  the Taylor series ``sum_k (-1)^(k+1) zeta(k+1, x0) (x - x0)^k`` (``x0`` in two doubles);
  otherwise the recurrence up to 10; ``x < 0``: ``psi(x) = psi(1 - x) - pi cot(pi x)``.
* ``hurwitz_zeta(s, q)``: direct sum until ``q + N >= 10 + s``, then the Euler-Maclaurin tail
  with 9 Bernoulli terms; ``polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)``.
* ``i0``/``i1`` (and the scaled ``i0e``/``i1e``): the power series (positive terms) below
  ``|x| = 20``, the asymptotic expansion ``e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k`` above.
* ``gammainc``: the series of ``P(a, x)`` for ``x < a + 1``, the continued fraction of ``Q(a, x)``
  (modified Lentz) elsewhere; the factor ``x^a e^-x / Gamma(a)`` is ``exp(a log x - x - lgamma(a))``,
  which loses about ``log10(a)`` digits (1e-13 relative at ``a = 1000``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330)]  # B_2, B_4, ..., B_20
_STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI[:8], 1)]
_DIGAMMA_ASYMPTOTIC = [float(b / (2 * k)) for k, b in enumerate(_BERNOULLI[:8], 1)]
_EM = [float(b / math.factorial(2 * k)) for k, b in enumerate(_BERNOULLI[:9], 1)]
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_EULER = 0.57721566490153286061
# digamma's positive zero, as a sum of two doubles
_X0 = Fraction("1.46163214496836234126265954232572132846819620400644635129598840859878644")
_X0_HI = float(_X0)
_X0_LO = float(_X0 - Fraction(_X0_HI))


def _horner(coefficients: list, z: np.ndarray) -> np.ndarray:
    """``sum_k coefficients[k] z^k``."""
    result = np.zeros_like(z)
    for c in reversed(coefficients):
        result = result * z + c
    return result


def sincospi(x: np.ndarray) -> tuple:
    """``(sin(pi x), cos(pi x))`` with the argument reduced exactly to ``[-1/2, 1/2]`` (so exact zeros of
    the sine at the integers): ``sin(pi r) = sin(pi (+-1 - r))`` and ``cos(pi r) = -cos(pi (+-1 - r))``."""
    r = x - 2.0 * np.round(0.5 * x)  # exact, in [-1, 1]
    s = np.where(r > 0.5, 1.0 - r, np.where(r < -0.5, -1.0 - r, r))
    return np.sin(np.pi * s), np.where(np.abs(r) > 0.5, -1.0, 1.0) * np.cos(np.pi * s)


def hurwitz_zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``zeta(s, q) = sum_k (q + k)^-s`` (torch's conventions: inf at ``s == 1`` and at integers
    ``q <= 0``, NaN for ``s < 1`` or for ``q < 0`` with a non-integer ``s``)."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    with np.errstate(all="ignore"):
        bad = (s < 1) | ((q < 0) & (s != np.floor(s))) | np.isnan(s) | np.isnan(q) | (q == -np.inf)
        pole = ((s == 1) | ((q <= 0) & (q == np.floor(q)))) & ~bad
        ok = ~(bad | pole | np.isinf(q))
        result = np.where(bad, np.nan, np.where(pole, np.inf, 0.0))
        s_ok, q_ok = s[ok], q[ok]
        target = 10.0 + np.minimum(s_ok, 50.0)
        steps = np.maximum(np.ceil(target - q_ok), 0.0)
        total = np.zeros_like(q_ok)
        for k in range(int(steps.max(initial=0.0))):
            total += np.where(k < steps, np.power(q_ok + k, -s_ok), 0.0)
        a = q_ok + steps
        tail = np.power(a, 1.0 - s_ok) / (s_ok - 1.0) + 0.5 * np.power(a, -s_ok)
        rising = s_ok.copy()  # s (s + 1) ... (s + 2j - 2)
        power = np.power(a, -s_ok - 1.0)  # a^(-s - 2j + 1)
        for j, c in enumerate(_EM):
            tail += c * rising * power
            rising = rising * (s_ok + 2 * j + 1) * (s_ok + 2 * j + 2)
            power = power / (a * a)
        result[ok] = total + tail
    return result


_ZETA_MINUS_ONE = hurwitz_zeta(np.arange(2.0, 32.0), np.full(30, 2.0))  # zeta(k) - 1, k = 2..31
_LGAMMA2 = [0.0, 1.0 - _EULER] + [(-1) ** k * z / k for k, z in enumerate(_ZETA_MINUS_ONE, 2)]
# digamma(x0 + h) = sum_k (-1)^(k+1) zeta(k+1, x0) h^k: the coefficients of h^(k-1), k = 1..40
_DIGAMMA_X0 = list(hurwitz_zeta(np.arange(2.0, 42.0), np.full(40, _X0_HI)) * (-1.0) ** np.arange(2, 42))


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """``lgamma`` for finite ``x > 0``."""
    big = x >= 10.0
    xb = np.where(big, x, 10.0)
    stirling = (xb - 0.5) * np.log(xb) - xb + _HALF_LOG_2PI + _horner(_STIRLING, 1.0 / (xb * xb)) / xb
    xs = np.where(big, 2.0, x)
    down = np.maximum(np.floor(xs - 1.5), 0.0)  # lgamma(x) = log((x-1)...(x-m)) + lgamma(x - m)
    up = np.where(xs < 0.5, 2.0, np.where(xs < 1.5, 1.0, 0.0))  # lgamma(x) = lgamma(x + m) - log(x...(x+m-1))
    product = np.ones_like(xs)
    for j in range(1, 9):
        product *= np.where(j <= down, xs - j, 1.0)
    shifted = np.where(up == 2.0, np.log(xs) + np.log1p(xs), np.where(up == 1.0, np.log(xs), 0.0))
    small = _horner(_LGAMMA2, xs + (up - down - 2.0)) + np.log(product) - shifted
    return np.where(big, stirling, small)


def lgamma(x: np.ndarray) -> np.ndarray:
    """``log |Gamma(x)|``: inf at the poles (0 and the negative integers) and at +-inf."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        positive = finite & (x > 0)
        result = np.where(np.isnan(x), np.nan, np.inf)
        result[positive] = _lgamma_positive(x[positive])
        negative = finite & (x <= 0) & (x != np.floor(x))
        xn = x[negative]
        sine, _ = sincospi(xn)
        result[negative] = math.log(math.pi) - np.log(np.abs(sine)) - _lgamma_positive(1.0 - xn)
    return result


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """``digamma`` for finite ``x > 0``."""
    big = x >= 10.0
    steps = np.where(big, 0.0, np.ceil(10.0 - x))
    shifted = np.zeros_like(x)
    for j in range(10):
        shifted += np.where(j < steps, 1.0 / (x + j), 0.0)
    y = x + steps
    inv2 = 1.0 / (y * y)
    asymptotic = np.log(y) - 0.5 / y - inv2 * _horner(_DIGAMMA_ASYMPTOTIC, inv2)
    h = (x - _X0_HI) - _X0_LO
    near_zero = np.abs(x - _X0_HI) < 0.55
    return np.where(near_zero, h * _horner(_DIGAMMA_X0, h), asymptotic - shifted)


def digamma(x: np.ndarray) -> np.ndarray:
    """``Gamma'(x) / Gamma(x)``, with torch's values: -inf at +0, inf at -0, NaN at the negative
    integers and at -inf, inf at inf."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        positive = finite & (x > 0)
        result = np.where(np.isnan(x) | (x == -np.inf) | (finite & (x < 0) & (x == np.floor(x))), np.nan, np.inf)
        result = np.where(x == 0, -np.copysign(np.inf, x), result)
        result[positive] = _digamma_positive(x[positive])
        negative = finite & (x < 0) & (x != np.floor(x))
        xn = x[negative]
        sine, cosine = sincospi(xn)
        result[negative] = _digamma_positive(1.0 - xn) - np.pi * cosine / sine
    return result


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    """The ``n``-th derivative of ``digamma``: ``(-1)^(n+1) n! zeta(n + 1, x)`` for ``n >= 1``
    (signed inf at the poles, 0 at inf, NaN at -inf)."""
    if n == 0:
        return digamma(x)
    x = np.asarray(x, np.float64)
    zeta = hurwitz_zeta(np.float64(n + 1), x)
    return (-1.0) ** (n + 1) * math.factorial(n) * np.where(x == np.inf, 0.0, zeta)


def _bessel_asymptotic_terms(nu: int, ax: np.ndarray) -> np.ndarray:
    """``sum_k (-1)^k a_k(nu) / x^k`` of ``I_nu(x) ~ e^x / sqrt(2 pi x) * sum``, for ``x >= 20``."""
    term = np.ones_like(ax)
    total = np.ones_like(ax)
    for k in range(1, 30):
        term = term * -(4 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k * ax)
        total += term
    return total


def bessel_i(nu: int, x: np.ndarray, scaled: bool) -> np.ndarray:
    """``I_nu(x)`` for ``nu`` 0 or 1, times ``exp(-|x|)`` if ``scaled``."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        large = ax >= 20.0
        al = np.where(large, ax, 20.0)
        asymptotic = _bessel_asymptotic_terms(nu, al) / math.sqrt(2 * math.pi) / np.sqrt(al)
        asymptotic = asymptotic if scaled else asymptotic * np.exp(al)
        a = np.where(large, 0.0, ax)
        quarter = 0.25 * a * a
        term = np.ones_like(a) if nu == 0 else 0.5 * a
        total = term.copy()
        for k in range(1, 60):
            term = term * quarter / (k * (k + nu))
            total += term
        series = total * np.exp(-a) if scaled else total
        result = np.where(large, asymptotic, series)
        result = np.where(np.isnan(x), np.nan, np.where(np.isinf(x), 0.0 if scaled else np.inf, result))
    return result if nu == 0 else np.copysign(result, x) * (x != 0)


def _gamma_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``P(a, x)`` by its series ``x^a e^-x / Gamma(a) sum_n x^n / (a (a+1) ... (a+n))`` (for ``x < a + 1``)."""
    term = 1.0 / a
    total = term.copy()
    for n in range(1, 5000):
        term = term * x / (a + n)
        total += term
        if not np.any(term > total * 1e-17):
            break
    return np.exp(a * np.log(x) - x - lgamma(a)) * total


def _gamma_continued_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``Q(a, x)`` by its continued fraction (modified Lentz), for ``x >= a + 1``."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, 5000):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if not np.any(np.abs(delta - 1.0) > 1e-15):
            break
    return np.exp(a * np.log(x) - x - lgamma(a)) * h


def gammainc(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """The regularized incomplete gamma function ``P(a, x)`` (``Q(a, x) = 1 - P`` if ``upper``): the
    series where ``x < a + 1``, the continued fraction elsewhere, each giving the smaller of ``P`` and
    ``Q`` directly. torch's values at the edges: NaN for ``a < 0``, ``x < 0`` or ``a = x = 0``."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        bad = (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | np.isnan(a) | np.isnan(x)
        p_one = ~bad & ((a == 0) | (x == np.inf))  # P = 1 (as a -> 0 for x > 0, or x -> inf)
        p_zero = ~bad & ~p_one & ((x == 0) | (a == np.inf))
        regular = ~(bad | p_one | p_zero)
        series = regular & (x < a + 1.0)
        fraction = regular & ~series
        p = np.where(bad, np.nan, np.where(p_one, 1.0, 0.0))
        q = np.where(bad, np.nan, np.where(p_one, 0.0, 1.0))
        p[series] = _gamma_series(a[series], x[series])
        q[series] = 1.0 - p[series]
        q[fraction] = _gamma_continued_fraction(a[fraction], x[fraction])
        p[fraction] = 1.0 - q[fraction]
    return q if upper else p
