"""Elementwise ops: one entry per op, derivatives given as holomorphic partials.

The ``elementwise`` family turns each partial ``d`` into the reverse rule
``g * conj(d)`` and the forward rule ``sum t * d``; broadcasting is undone by
``fit_gradient``. Non-holomorphic ops (``abs``, ``angle``, ``real``, ``imag``,
``conj``) give their rules explicitly.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._deference import deferring_op
from ...base.checks import is_number
from ...base.dtypes import REAL_FLOATING_DTYPES, is_differentiable_dtype, torch_dtype_name
from ...base.state import STATE
from ...factories import zeros_like
from ...fastpath import (
    broadcast_product,
    engine_only,
    is_scratch,
    multiply_into,
    quiet_operator,
    scale_into,
    select_or_zero,
    unseen,
    unseen_real_arrays,
)
from ...tensor import Tensor, _wrap, as_operand
from ..dispatch import OTHER_FIRST, _apply, _record, apply, tensor_arg
from ..registry import (
    Op,
    elementwise,
    is_tensor_operand,
    linear,
    name_by_operands,
    nondifferentiable,
    overload,
    vjp_from_partial,
)
from ..surface import binary, exported, public, unary, untracked


def _where(cond: Any, x: Any, y: Any) -> Tensor:
    return apply(WHERE, cond, x, y)


def _pow_base_partial(out: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dx = y * x**(y-1), taken as 0 where y == 0 (so 0**0 has slope 0)."""
    if not isinstance(y, Tensor):
        if y == 2:
            return 2 * x  # the common square, one pass instead of two
        return 0.0 * x if y == 0 else y * x ** (y - 1)
    return _where(y == 0, 0.0, y * x ** (y - 1))


def _doubled_times(g: Any, x: Any, owned: bool) -> Tensor | None:
    """``g * 2x`` (a square's vjp) without the temporary ``2x`` where possible; None otherwise.

    A ``g`` that is a broadcast of one value (``sum``'s gradient) gives ``(2g) * x``: the
    doubling costs one element. A ``g`` that the rule holds the only reference to
    (``owned``) is doubled and multiplied by ``x`` in its own memory, tangent included
    (forward over reverse). Either way ``x`` (and its tangent) is not copied.
    """
    if x.dtype.kind == "c":
        return None
    twice = broadcast_product(g, 2)
    if twice is not None:
        if unseen(twice) and unseen(x) and twice._data.dtype is x._data.dtype:  # (NumPy's product is mul's)
            return _wrap(np.multiply(twice._data, x._data))
        return twice * x
    if owned and scale_into(g, 2.0):
        return g if multiply_into(g, x) else g * x
    return None


def _pow_base_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
    """g * conj(d(x**y)/dx) (see ``_pow_base_partial``); 0 where y == 0 even for an inf or NaN g, as torch's."""
    if type(y) in (int, float) and y == 0:
        return zeros_like(g)
    if isinstance(y, Tensor):
        return _where(y == 0, 0.0, _pow_base_vjp_derived(g, out, x, y))
    if type(y) in (int, float) and y == 2:
        owned = engine_only(g)  # (before g is passed on)
        product = _doubled_times(g, x, owned)
        if product is not None:
            return product
    return _pow_base_vjp_derived(g, out, x, y)


def _square_vjp(g: Any, out: Any, x: Any) -> Any:
    """g * conj(2x)."""
    owned = engine_only(g)  # (before g is passed on)
    product = _doubled_times(g, x, owned)
    return _square_vjp_derived(g, out, x) if product is None else product


def _pow_impl(x: Any, y: Any) -> Any:
    """``x ** y``; a real floating array squared by ``np.square`` (the same values, twice as fast)."""
    if type(y) in (int, float) and y == 2 and type(x) is np.ndarray and x.dtype.kind == "f":
        return np.square(x)
    try:
        return np.power(x, y)
    except ValueError as err:  # NumPy's "Integers to negative integer powers are not allowed."
        if isinstance(y, np.ndarray):  # torch refuses a negative number as exponent, not a tensor holding one
            return _integer_power(x, y)
        raise RuntimeError(str(err)) from None


def _integer_power(x: Any, y: np.ndarray) -> np.ndarray:
    """Integers to integer powers, some negative, as torch's: ``1 ** -n`` is 1, ``(-1) ** -n`` is 1 or -1
    (``n`` even or odd), any other base to a negative power 0 (the truncated reciprocal)."""
    powers = np.power(x, np.maximum(y, 0))
    reciprocals = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
    return np.where(y < 0, reciprocals, powers).astype(powers.dtype, copy=False)


def _pow_exponent_partial(out: Any, x: Any, y: Any) -> Any:
    """d(x**y)/dy = x**y * log(x), taken as 0 where x == 0 and y >= 0 (torch's convention); -inf
    where x == 0 and y < 0 (inf times log 0, as torch's)."""
    masked = (x == 0) & (y.real >= 0)
    return _where(masked, 0.0, out * log(_where(masked, 1.0, x)))


def _radius_squared(y: Any, x: Any) -> Any:
    """x**2 + y**2, taken as 1 at the origin so that atan2's partials are 0 there (as torch)."""
    r2 = x * x + y * y
    return _where(r2 == 0, 1.0, r2)


def _softplus_impl(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    if beta == 1:  # (the default: x * 1.0 and y / 1.0 are x and y exactly, two passes saved)
        return np.where(x > threshold, x, np.logaddexp(0, x))
    bx = x * beta
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def _softplus_partial(out: Any, x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """sigmoid(beta x), 1 where beta x > threshold (beta 1, the default: no product to dispatch)."""
    bx = x if beta == 1 else x * beta
    return _where(bx > threshold, 1.0, sigmoid(bx))


def _clamp_impl(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _in_range(out: Any, x: Any, lo: Any, hi: Any) -> Any:
    """True where lo <= x <= hi (a bound of None is open; clamp needs one bound at least)."""
    if lo is None:
        return x <= hi
    return x >= lo if hi is None else (x >= lo) & (x <= hi)


def _selected(mask: Callable, tie: Callable | None = None) -> Callable:
    """The vjp ``where(mask, g, 0)`` (``g / 2`` where ``tie`` holds), for a derivative that is 1 or 0.

    Selecting the gradient, as torch does, rather than multiplying it by the 0/1 derivative
    gives 0 where the input has no effect even when the gradient there is inf or NaN
    (``sqrt(relu(x))`` at ``x < 0``).
    """

    def vjp(g: Tensor, out: Any, *inputs: Any, **params: Any) -> Tensor:
        kept = g if tie is None else _where(tie(out, *inputs), g * 0.5, g)
        return _where(mask(out, *inputs, **params), kept, 0.0)

    return vjp


def _selected_tangents(vjps: tuple) -> Callable:
    """The jvp of an op whose vjps select the gradient (``_selected``): the same selection of each tangent."""

    def jvp(tangents: tuple, out: Any, *inputs: Any, **params: Any) -> Tensor:
        terms = [rule(t, out, *inputs, **params) for rule, t in zip(vjps, tangents, strict=True) if t is not None]
        return functools.reduce(operator.add, terms)

    return jvp


def selecting(name: str, impl: Any, masks: tuple, ties: tuple | None = None, **kwargs: Any) -> Op:
    """An elementwise op whose derivative in input i is 1 where ``masks[i](out, *inputs)`` holds, else 0
    (1/2 where ``ties[i]`` holds), with rules that select gradients and tangents (``_selected``).

    The masks read what the rules read (they stand for the partials in ``elementwise``).
    """
    vjps = tuple(_selected(mask, tie) for mask, tie in zip(masks, ties or (None,) * len(masks), strict=True))
    return elementwise(name, impl, masks, vjp=vjps, jvp=_selected_tangents(vjps), **kwargs)


def _abs_vjp(g: Tensor, out: Tensor, x: Tensor) -> Tensor:
    """g * sgn(x), with sgn(z) = z/|z| (0 at 0) for complex z."""
    return g * sgn(x)


def _abs_jvp(tangents: tuple, out: Tensor, x: Tensor) -> Tensor:
    """Re(conj(sgn(x)) * t)."""
    (t,) = tangents
    if x.dtype.kind == "c":
        return (sgn(x).conj() * t).real
    return sgn(x) * t


def _sign_impl(x: np.ndarray) -> np.ndarray:
    """``np.sign``, except that NaN has sign 0 (as torch's ``sign``; ``abs``'s gradient there is 0), and
    bools are their own sign (NumPy has no bool ``sign``)."""
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind == "c":  # (NumPy's z / |z| would be a value whose gradient this op declares 0)
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                           "Please use torch.sgn instead.")
    signs = np.sign(x)
    if signs.dtype.kind == "f" and np.isnan(signs).any():
        return np.where(np.isnan(signs), signs.dtype.type(0), signs)
    return signs


def _sgn_impl(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return _sign_impl(x)
    magnitude = np.abs(x)
    return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude))


def _angle_impl(x: np.ndarray) -> np.ndarray:
    """``np.angle``, except that a real -0.0 has angle 0, not pi (as torch's: only x < 0 gives pi)."""
    return np.angle(x) if x.dtype.kind == "c" else np.angle(x + 0.0)  # (-0.0 + 0.0 is +0.0)


def _angle_vjp(g: Tensor, out: Tensor, x: Tensor) -> Tensor:
    """g * i z / |z|^2 for complex z; zero for real inputs."""
    if x.dtype.kind != "c":
        return g * 0.0
    sq = (x * x.conj()).real
    return g * (1j * x) / _where(sq == 0, 1.0, sq)


def _angle_jvp(tangents: tuple, out: Tensor, x: Tensor) -> Tensor:
    """Im(conj(z) t) / |z|^2."""
    (t,) = tangents
    if x.dtype.kind != "c":
        return t * 0.0
    sq = (x * x.conj()).real
    return (x.conj() * t).imag / _where(sq == 0, 1.0, sq)


def _sgn_vjp(g: Tensor, out: Tensor, x: Tensor) -> Tensor:
    """``(g - Re(g conj(sgn)) sgn) / |x|``, 0 where ``x`` is 0: zero for real ``x`` (as torch's)."""
    if x.dtype.kind != "c":
        return g * 0.0
    size = x.abs()
    return _where(size == 0, 0.0, (g - (g * out.conj()).real * out) / _where(size == 0, 1.0, size))


def _sgn_jvp(tangents: tuple, out: Tensor, x: Tensor) -> Tensor:
    """``(t - Re(t conj(sgn)) sgn) / |x|``: the tangent's part across the unit circle, scaled."""
    return _sgn_vjp(tangents[0], out, x)


def _zero_gradient(name: str, impl: Any, **kwargs: Any) -> Op:
    """An elementwise op whose derivative is 0 wherever it exists (rounding, sign), as torch's:
    its output requires grad and its gradient and tangent are zeros (also for an inf or NaN gradient)."""
    arity = 2 if name in ("floor_divide", "div_trunc") else 1
    return elementwise(name, impl, (_zero,) * arity, vjp=(zero_vjp,) * arity, jvp=_zero_jvp, save_inputs=False,
                       **kwargs)


def zero_vjp(g: Tensor, out: Any, *inputs: Any, **params: Any) -> Tensor:
    """Zeros like the gradient: the vjp of a derivative that is 0 (not ``g * 0``, NaN for an inf ``g``)."""
    return zeros_like(g)


def _zero_jvp(tangents: tuple, out: Any, *inputs: Any, **params: Any) -> Tensor:
    return zeros_like(next(t for t in tangents if t is not None))


def _round_name(node: Any) -> str:
    """torch's ``round(decimals=...)`` is another overload than ``round()``."""
    return "RoundBackward1" if node.params else "RoundBackward0"


def _clamp_name(node: Any) -> str:
    """torch's clamp with Tensor bounds is ClampBackward0, with numbers (or None) ClampBackward1."""
    return "ClampBackward0" if any(is_tensor_operand(b) for b in node.kept()[1:]) else "ClampBackward1"


def _zero(out: Any, *inputs: Any, **params: Any) -> float:
    return 0.0


def _integer_division(fn: Callable) -> Callable:
    """``fn(x, y)``, but an integer division by zero raises torch's error (NumPy gives 0 and warns)."""

    def impl(x: Any, y: Any) -> Any:
        # (a list or tuple operand as an array: np.result_type would read a tuple as a dtype)
        x, y = (np.asarray(v) if isinstance(v, (list, tuple)) else v for v in (x, y))
        if np.result_type(x, y).kind in "iu" and not np.all(y):
            raise RuntimeError("ZeroDivisionError")
        return fn(x, y)

    impl.__name__ = fn.__name__
    return impl


def _div_trunc_impl(x: Any, y: Any) -> Any:
    """``x / y`` rounded toward zero; integers stay integers (as torch's ``rounding_mode='trunc'``)."""
    if np.result_type(x, y).kind in "iub":
        quotient = np.floor_divide(x, y)
        return np.where((np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)),
                        quotient + 1, quotient)
    return np.trunc(np.true_divide(x, y))


def _round_impl(x: np.ndarray, decimals: int = 0) -> np.ndarray:
    return np.round(x, decimals)


def _real_impl(x: np.ndarray) -> np.ndarray:
    return np.real(x) if x.dtype.kind == "c" else x


def _imag_impl(x: np.ndarray) -> np.ndarray:
    return np.imag(x) if x.dtype.kind == "c" else np.zeros_like(x)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# 0 and 1 as 0-d arrays of each real floating dtype (read only: operands of ufuncs, which convert a Python
# number at each call: a microsecond of the seven calls of a small sigmoid)
ZERO_ONE = {np.dtype(code): (_read_only(np.zeros((), code)), _read_only(np.ones((), code))) for code in "efdg"}


def _one_of(dtype: np.dtype) -> Any:
    """1 as a 0-d array of the real floating ``dtype`` (``ZERO_ONE``), else the number 1."""
    constants = ZERO_ONE.get(dtype)
    return 1 if constants is None else constants[1]


def _sigmoid_impl(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), without overflow for large |x| (bools as 0 and 1, as in torch)."""
    if x.dtype.kind == "b":
        x = x.astype(np.float64)
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    constants = ZERO_ONE.get(x.dtype) if x.ndim else None
    if constants is not None:
        # exp(min(x, 0)) / (1 + exp(-|x|)): the same two quotients as the selection below, bit for bit
        # (a NaN too: fmin gives 1 / NaN, NaN's sign and payload from the denominator), in two new
        # arrays and seven ufunc calls where the selection makes seven arrays in nine calls (0 and 1
        # as arrays of x's dtype: a ufunc converts a Python number for each call)
        zero, one = constants
        denominator = np.abs(x)
        np.negative(denominator, out=denominator)
        np.exp(denominator, out=denominator)
        np.add(denominator, one, out=denominator)
        numerator = np.fmin(x, zero)
        np.exp(numerator, out=numerator)
        return np.divide(numerator, denominator, out=numerator)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _tanh_slope(y: np.ndarray) -> Any:
    """``1 - y*y``: a new array (or, for one value, NumPy's scalar)."""
    slope = np.multiply(y, y)
    if type(slope) is not np.ndarray:  # (one value: NumPy gives a scalar, which has no memory to reuse)
        return 1 - slope
    return np.subtract(_one_of(slope.dtype), slope, out=slope)


def _sigmoid_slope(y: np.ndarray) -> Any:
    """``y * (1 - y)``: a new array (or, for one value, NumPy's scalar)."""
    slope = np.subtract(_one_of(y.dtype), y) if type(y) is np.ndarray and y.ndim else np.subtract(1, y)
    if type(slope) is not np.ndarray:
        return slope * y
    return np.multiply(slope, y, out=slope)


def _tanh_backward_impl(g: Any, y: np.ndarray) -> np.ndarray:
    """``g * conj(1 - y*y)`` in one new array: NumPy's expression would make two or three."""
    return _conj_times_into(_tanh_slope(y), g)


def _sigmoid_backward_impl(g: Any, y: np.ndarray) -> np.ndarray:
    """``g * conj(y * (1 - y))`` in one new array."""
    return _conj_times_into(_sigmoid_slope(y), g)


def _conj_times_into(slope: Any, g: Any, out: np.ndarray | None = None) -> Any:
    """``conj(slope) * g``, into ``out`` (by default ``slope``, a new array) when the product has
    ``slope``'s shape and dtype."""
    if type(slope) is not np.ndarray:
        return g * np.conj(slope)
    if slope.dtype.kind == "c":
        np.conjugate(slope, out=slope)
    if type(g) is np.ndarray and g.shape == slope.shape and g.dtype == slope.dtype:
        return np.multiply(slope, g, out=slope if out is None else out)
    return np.multiply(slope, g)


def _output_slope_vjp(backward_op: Op, slope: Callable) -> Callable:
    """The vjp ``backward_op(g, out)`` of tanh or sigmoid (``slope(out)`` their derivative).

    When the backward engine holds the only reference to ``g`` and nothing can see the
    product (``is_scratch``, no observer), ``g * conj(slope(out))`` goes into ``g``'s own
    memory: the gradient that the previous node made, still in the caches, and no new
    array (W2's tanh layers).
    """

    def vjp(g: Any, out: Any, x: Any) -> Any:
        if engine_only(g) and not STATE.observed and is_scratch(g, out):
            product = slope(out._data)
            if type(product) is np.ndarray:  # (is_scratch: g has its shape and dtype)
                _conj_times_into(product, g._data, g._data)
                return g
        return apply(backward_op, g, out)

    return vjp


def _slope_product_rules(kernel: Callable, slope_of_conj: Callable) -> tuple:
    """``(vjp, jvp)`` of ``kernel(g, y) = g * conj(s(y))`` (``tanh_backward``, ``sigmoid_backward``):
    linear in ``g``, antiholomorphic in ``y``, whose derivative in ``conj(y)`` is
    ``slope_of_conj(g, y) = g * conj(s'(y))``."""

    def vjp_y(g2: Tensor, out: Any, g: Tensor, y: Tensor) -> Tensor:
        return conj(g2) * slope_of_conj(g, y)

    def jvp(tangents: tuple, out: Any, g: Tensor, y: Tensor) -> Tensor:
        t_g, t_y = tangents
        term = None if t_g is None else kernel(t_g, y)
        if t_y is not None:
            other = slope_of_conj(g, y) * conj(t_y)
            term = other if term is None else term + other
        return term

    return (lambda g2, out, g, y: kernel(g2, conj(y)), vjp_y), jvp


_TANH_BACKWARD_VJP, _TANH_BACKWARD_JVP = _slope_product_rules(lambda g, y: tanh_backward(g, y),
                                                               lambda g, y: -2 * (g * conj(y)))
_SIGMOID_BACKWARD_VJP, _SIGMOID_BACKWARD_JVP = _slope_product_rules(lambda g, y: sigmoid_backward(g, y),
                                                                     lambda g, y: g * (1 - 2 * conj(y)))


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

# -- arithmetic ------------------------------------------------------------------
# (torch wraps the number operand of + - * / as a tensor: an input of the node, shown by
# ``next_functions``; a number minus a Tensor is its ``rsub``, which keeps the number as an attribute)
ADD = elementwise("add", np.add, (1, 1), number_inputs=True)
SUB = elementwise("sub", np.subtract, (1, -1), grad_name_for=name_by_operands({(False, True): "RsubBackward1"}),
                  number_inputs=lambda node: is_tensor_operand(node.kept()[0]))
MUL = elementwise("mul", np.multiply, (lambda out, x, y: y, lambda out, x, y: x),
                  save_inputs=lambda needs: (needs[1], needs[0]), number_inputs=True)
mul = binary(MUL, "Elementwise product with broadcasting.", "[1., 2.]", "tensor([2., 4.])",
             aliases=("multiply",), numpy=np.multiply)
# ``x + alpha * y`` and ``x - alpha * y`` (alpha a number): one node, as torch's (alpha is its attribute)
ADD_SCALED = elementwise("add_scaled", lambda x, y, alpha: x + alpha * y, (1, lambda out, x, y, alpha: alpha),
                         save_inputs=False, number_inputs=True, grad_name="AddBackward0")
SUB_SCALED = elementwise("sub_scaled", lambda x, y, alpha: x - alpha * y, (1, lambda out, x, y, alpha: -alpha),
                         save_inputs=False, number_inputs=True, grad_name="SubBackward0")
# (torch's saves and formulas: x only for y's rule, y always, ``-(x / y) / y``; not the output, which
# code changes in place after a division, as in ``y = x / n; y += 1``)
def _div_partial_x(out: Any, x: Any, y: Any) -> Any:
    """``1 / y`` (``reciprocal(y) * 1``, as ``number / tensor`` computes it; the product by 1 is exact
    for real numbers): NumPy's quotient directly when no mode can see ``y`` (a backward without
    ``create_graph``), as dispatch would compute it."""
    if type(y) is Tensor and unseen(y) and y._data.dtype in REAL_FLOATING_DTYPES:
        return _wrap(np.asarray(np.true_divide(1, y._data)))
    return 1 / y


def _div_partial_y(out: Any, x: Any, y: Any) -> Any:
    """``-(x / y) / y``; when no mode can see ``x`` and ``y``, the same operations by NumPy directly:
    the operators' for two single values (``Op.scalar_impl``), else the ufuncs, in one new array."""
    arrays = unseen_real_arrays(x, y)
    if arrays is None:
        return -(x / y) / y
    a, b = arrays
    if not a.ndim and not b.ndim:
        quotient = a[()] / b[()]
        return _wrap(np.asarray(-quotient / b[()]))
    quotient = np.true_divide(a, b)  # (an array of the broadcast shape, which ``b`` broadcasts to)
    np.negative(quotient, out=quotient)
    return _wrap(np.true_divide(quotient, b, out=quotient))


DIV = elementwise("div", np.true_divide, (_div_partial_x, _div_partial_y),
                  save_inputs=lambda needs: (needs[1], True), to_float=True, number_inputs=True)
NEG = elementwise("neg", np.negative, (-1,))
neg = unary(NEG, "``-x``.", "[1., -2.]", "tensor([-1.,  2.])", aliases=("negative",), numpy=np.negative,
            top_level_inplace=True)
_pow_base_vjp_derived = vjp_from_partial(_pow_base_partial)
POW = elementwise("pow", _pow_impl, (_pow_base_partial, _pow_exponent_partial),
                  vjp=(_pow_base_vjp, vjp_from_partial(_pow_exponent_partial)), save_out=lambda needs: needs[1],
                  arg_names=("self", "exponent"),
                  grad_name_for=name_by_operands({(True, True): "PowBackward1", (False, True): "PowBackward2"}))
RECIPROCAL = elementwise("reciprocal", lambda x: np.true_divide(1, x),  # (integers give floats, as torch)
                         (lambda out, x: -(out * out),), save_inputs=False, save_out=True)
reciprocal = unary(RECIPROCAL, "``1 / x``.", "[2.]", "tensor([0.5000])", numpy=np.reciprocal, top_level_inplace=True)
_square_vjp_derived = vjp_from_partial(lambda out, x: 2 * x)
square = unary(elementwise("square", np.square, (lambda out, x: 2 * x,), vjp=(_square_vjp,),
                           grad_name="PowBackward0"),
               "``x * x``.", "[3.]", "tensor([9.])", numpy=np.square, top_level_inplace=True)
sqrt = unary(elementwise("sqrt", np.sqrt, (lambda out, x: 0.5 / out,), save_inputs=False, save_out=True),
             "Square root; its derivative at 0 is inf (as in torch).", "[4.]", "tensor([2.])", numpy=np.sqrt,
             top_level_inplace=True)
rsqrt = unary(elementwise("rsqrt", lambda x: 1 / np.sqrt(x), (lambda out, x: -0.5 * out ** 3,),
                          save_inputs=False, save_out=True),
              "``1 / sqrt(x)``.", "[4.]", "tensor([0.5000])", top_level_inplace=True)
abs = unary(Op("abs", np.abs, vjp=(_abs_vjp,), jvp=_abs_jvp, family="elementwise"),
            "Absolute value (modulus for complex); its derivative at 0 is 0.", "[-2.]", "tensor([2.])",
            aliases=("absolute",), numpy=(np.absolute, np.fabs), top_level_inplace=("abs",))
sgn = unary(Op("sgn", _sgn_impl, vjp=(_sgn_vjp,), jvp=_sgn_jvp, family="elementwise", save_out=True),
            "``x / |x|`` (0 at 0); the sign for real inputs, with gradient 0 there.", "[-2.]", "tensor([-1.])")
sign = unary(_zero_gradient("sign", _sign_impl),
             "Sign of each element (its gradient is 0).", "[-2., 0.]", "tensor([-1.,  0.])")
REMAINDER = elementwise("remainder", _integer_division(np.remainder), (1, lambda out, x, y: -floor_divide(x, y)),
                        save_inputs=lambda needs: (needs[1], needs[1]),
                        grad_name_for=name_by_operands({(True, True): "RemainderBackward1"}))
remainder = binary(REMAINDER, "Python's ``x % y`` (sign of the divisor).", "[3., -3.]", "tensor([1., 1.])",
                   numpy=np.remainder)
# (torch's div with a rounding mode; its floor_divide has no derivative)
FLOOR_DIVIDE = _zero_gradient("floor_divide", _integer_division(np.floor_divide), grad_name="DivBackward2")
floor_divide = binary(FLOOR_DIVIDE, "Python's ``x // y`` (its gradient is 0).", "[3., -3.]", "tensor([ 1., -2.])",
                      numpy=np.floor_divide)
DIV_TRUNC = _zero_gradient("div_trunc", _integer_division(_div_trunc_impl), grad_name="DivBackward2")
floor = unary(_zero_gradient("floor", np.floor),
              "Largest integer not above ``x`` (its gradient is 0).", "[-1.5, 1.5]", "tensor([-2.,  1.])",
              numpy=np.floor, top_level_inplace=True)
ceil = unary(_zero_gradient("ceil", np.ceil),
             "Smallest integer not below ``x`` (its gradient is 0).", "[-1.5, 1.5]", "tensor([-1.,  2.])",
             numpy=np.ceil, top_level_inplace=True)
trunc = unary(_zero_gradient("trunc", np.trunc),
              "``x`` rounded toward zero (its gradient is 0).", "[-1.5, 1.5]", "tensor([-1.,  1.])",
              aliases=("fix",), numpy=np.trunc, top_level_inplace=True)
ROUND = _zero_gradient("round", _round_impl, grad_name_for=_round_name)
FRAC = elementwise("frac", lambda x: np.subtract(x, np.trunc(x)), (1,))

# -- exponentials and logarithms ----------------------------------------------------
exp = unary(elementwise("exp", np.exp, (lambda out, x: out,), save_inputs=False, save_out=True),
            "Exponential.", "[0.]", "tensor([1.])", numpy=np.exp, top_level_inplace=True)
# (its derivative is exp(x), not out + 1: that sum cancels to a few digits where exp(x) is tiny)
expm1 = unary(elementwise("expm1", np.expm1, (lambda out, x: exp(x),)),
              "``exp(x) - 1``, accurate near 0.", "[0.]", "tensor([0.])", numpy=np.expm1,
              namespaces={"special": ("expm1",)}, top_level_inplace=True)
log = unary(elementwise("log", np.log, (lambda out, x: 1 / x,)),
            "Natural logarithm.", "[1.]", "tensor([0.])", numpy=np.log, top_level_inplace=True)
log1p = unary(elementwise("log1p", np.log1p, (lambda out, x: 1 / (x + 1),), grad_name="Log1PBackward0"),
              "``log(1 + x)``, accurate near 0.", "[0.]", "tensor([0.])", numpy=np.log1p,
              namespaces={"special": ("log1p",)}, top_level_inplace=True)
log2 = unary(elementwise("log2", np.log2, (lambda out, x: 1 / (x * _LN2),)),
             "Base-2 logarithm.", "[8.]", "tensor([3.])", numpy=np.log2, top_level_inplace=True)
log10 = unary(elementwise("log10", np.log10, (lambda out, x: 1 / (x * _LN10),)),
              "Base-10 logarithm.", "[100.]", "tensor([2.])", numpy=np.log10, top_level_inplace=True)
# (the partials are sigmoid(x - y) and sigmoid(y - x), not exp(x - out): finite when one input is
# infinite, and exactly 1/2 at x == y, as torch's)
LOGADDEXP = elementwise("logaddexp", np.logaddexp,
                        (lambda out, x, y: sigmoid(x - y), lambda out, x, y: sigmoid(y - x)), to_float=True)
logaddexp = binary(LOGADDEXP, "``log(exp(x) + exp(y))`` computed stably; its gradient "
                   "``sigmoid(x - y)`` stays finite when one input is infinite.", "[2.]", "tensor([2.6931])",
                   numpy=np.logaddexp, inplace=False)

# -- trigonometric and hyperbolic --------------------------------------------------------
def _sin_partial(out: Any, x: Any) -> Any:
    """``cos(x)``; NumPy's directly when no mode can see ``x`` (a backward without ``create_graph``)."""
    arrays = unseen_real_arrays(x)
    return cos(x) if arrays is None else _wrap(np.asarray(np.cos(arrays[0])))


def _cos_partial(out: Any, x: Any) -> Any:
    """``-sin(x)``; NumPy's directly when no mode can see ``x``."""
    arrays = unseen_real_arrays(x)
    if arrays is None:
        return -sin(x)
    sine = np.asarray(np.sin(arrays[0]))  # (a new array, also for one value)
    return _wrap(np.negative(sine, out=sine))


sin = unary(elementwise("sin", np.sin, (_sin_partial,)),
            "Sine.", "[0.]", "tensor([0.])", numpy=np.sin, top_level_inplace=True)
cos = unary(elementwise("cos", np.cos, (_cos_partial,)),
            "Cosine.", "[0.]", "tensor([1.])", numpy=np.cos, top_level_inplace=True)
tan = unary(elementwise("tan", np.tan, (lambda out, x: 1 + out * out,), save_inputs=False, save_out=True),
            "Tangent.", "[0.]", "tensor([0.])", numpy=np.tan, top_level_inplace=True)
asin = unary(elementwise("asin", np.arcsin, (lambda out, x: rsqrt(1 - x * x),)),
             "Inverse sine.", "[0.]", "tensor([0.])", aliases=("arcsin",), numpy=np.arcsin, top_level_inplace=True)
acos = unary(elementwise("acos", np.arccos, (lambda out, x: -rsqrt(1 - x * x),)),
             "Inverse cosine.", "[1.]", "tensor([0.])", aliases=("arccos",), numpy=np.arccos, top_level_inplace=True)
atan = unary(elementwise("atan", np.arctan, (lambda out, x: 1 / (1 + x * x),)),
             "Inverse tangent.", "[0.]", "tensor([0.])", aliases=("arctan",), numpy=np.arctan, top_level_inplace=True)
ATAN2 = elementwise("atan2", np.arctan2, (lambda out, y, x: x / _radius_squared(y, x),
                                          lambda out, y, x: -y / _radius_squared(y, x)), to_float=True)
atan2 = binary(ATAN2, "Angle of the point ``(y, x)``: ``atan2(y, x)``.", "[0., 2.]", "tensor([0.0000, 0.7854])",
               aliases=("arctan2",), numpy=np.arctan2)
sinh = unary(elementwise("sinh", np.sinh, (lambda out, x: cosh(x),)),
             "Hyperbolic sine.", "[0.]", "tensor([0.])", numpy=np.sinh, top_level_inplace=True)
cosh = unary(elementwise("cosh", np.cosh, (lambda out, x: sinh(x),)),
             "Hyperbolic cosine.", "[0.]", "tensor([1.])", numpy=np.cosh, top_level_inplace=True)
# (tanh's and sigmoid's rules run their ``*_backward`` ops, as torch's: one new array per product
# (none when the gradient is the engine's alone: _output_slope_vjp), and a graph of second order
# shows TanhBackwardBackward0; the tangent t * (1 - out**2) is tanh_backward(t, conj(out)), whose
# conj(1 - conj(out)**2) is 1 - out**2. The partials, for real dtypes, stand for what the rules
# read; the rules are the complex ones.)
TANH_BACKWARD = elementwise("tanh_backward", _tanh_backward_impl,
                            (lambda out, g, y: 1 - y * y, lambda out, g, y: -2 * (g * y)),
                            vjp=_TANH_BACKWARD_VJP, jvp=_TANH_BACKWARD_JVP,
                            arg_names=("grad_output", "output"))
tanh = unary(elementwise("tanh", np.tanh, (lambda out, x: 1 - out * out,), save_inputs=False, save_out=True,
                         vjp=(_output_slope_vjp(TANH_BACKWARD, _tanh_slope),),
                         jvp=lambda tangents, out, x: tanh_backward(tangents[0], conj(out))),
             "Hyperbolic tangent.", "[0.]", "tensor([0.])", numpy=np.tanh, top_level_inplace=True)
asinh = unary(elementwise("asinh", np.arcsinh, (lambda out, x: rsqrt(x * x + 1),)),
              "Inverse hyperbolic sine.", "[0.]", "tensor([0.])", aliases=("arcsinh",), numpy=np.arcsinh,
              top_level_inplace=True)
# (1/sqrt(x-1)/sqrt(x+1), not 1/sqrt(x*x-1): the same for real x, but for complex x with Re x < 0
# only the first follows the branch of arccosh)
acosh = unary(elementwise("acosh", np.arccosh, (lambda out, x: rsqrt(x - 1) * rsqrt(x + 1),)),
              "Inverse hyperbolic cosine.", "[1.]", "tensor([0.])", aliases=("arccosh",), numpy=np.arccosh,
              top_level_inplace=True)
atanh = unary(elementwise("atanh", np.arctanh, (lambda out, x: 1 / (1 - x * x),)),
              "Inverse hyperbolic tangent.", "[0.]", "tensor([0.])", aliases=("arctanh",), numpy=np.arctanh,
              top_level_inplace=True)
HYPOT = elementwise("hypot", np.hypot, (lambda out, x, y: x / out, lambda out, x, y: y / out),
                    save_inputs=lambda needs: needs, save_out=True, to_float=True)
hypot = binary(HYPOT, "``sqrt(x**2 + y**2)`` without overflow.", "[0., 2.]", "tensor([2.0000, 2.8284])", numpy=np.hypot)

# -- activations and selections -------------------------------------------------------------
SIGMOID_BACKWARD = elementwise("sigmoid_backward", _sigmoid_backward_impl,
                               (lambda out, g, y: y * (1 - y), lambda out, g, y: g * (1 - 2 * y)),
                               vjp=_SIGMOID_BACKWARD_VJP, jvp=_SIGMOID_BACKWARD_JVP,
                               arg_names=("grad_output", "output"))
sigmoid = unary(elementwise("sigmoid", _sigmoid_impl, (lambda out, x: out * (1 - out),),
                            save_inputs=False, save_out=True,
                            vjp=(_output_slope_vjp(SIGMOID_BACKWARD, _sigmoid_slope),),
                            jvp=lambda tangents, out, x: sigmoid_backward(tangents[0], conj(out))),
                "Logistic function ``1 / (1 + exp(-x))``, stable for large ``|x|``.", "[0.]", "tensor([0.5000])",
                namespaces={"special": ("expit",)}, top_level_inplace=True)
SOFTPLUS = elementwise("softplus", _softplus_impl, (_softplus_partial,))
relu = unary(selecting("relu", lambda x: np.maximum(x, 0), (lambda out, x: ~(out <= 0),),
                       save_inputs=False, save_out=True),
             "``max(x, 0)``; its derivative at 0 is 0 and at NaN 1 (torch's convention).", "[-1., 2.]",
             "tensor([0., 2.])", top_level_inplace=True)
# (a NaN in either input gives both inputs the whole gradient, as torch: "not smaller", not "larger";
# ties share it)
_TIES = (lambda out, x, y: x == y,) * 2
MAXIMUM = selecting("maximum", np.maximum, (lambda out, x, y: ~(x < y), lambda out, x, y: ~(y < x)), _TIES)
maximum = binary(MAXIMUM, "Elementwise maximum (NaN propagates); at ties each input gets half the gradient, "
                 "and where either is NaN both get all of it (as torch's).",
                 "[1., 3.]", "tensor([2., 3.])", numpy=(np.maximum, np.fmax), inplace=False)
MINIMUM = selecting("minimum", np.minimum, (lambda out, x, y: ~(x > y), lambda out, x, y: ~(y > x)), _TIES)
minimum = binary(MINIMUM, "Elementwise minimum (NaN propagates); at ties each input gets half the gradient, "
                 "and where either is NaN both get all of it (as torch's).",
                 "[1., 3.]", "tensor([1., 2.])", numpy=(np.minimum, np.fmin), inplace=False)
CLAMP = selecting("clamp", _clamp_impl, (
    _in_range,
    lambda out, x, lo, hi: x < lo,
    lambda out, x, lo, hi: x > hi,
), arg_names=("self", "min", "max"), grad_name_for=_clamp_name)
CLAMP.pack_order = (2, 1, 0)  # (torch's: max, min, self)
# torch's clamp_min and clamp_max: clamp's rules, nodes of their own names (...Backward1 for a Tensor bound)
CLAMP_MIN = overload(CLAMP, "clamp_min", "ClampMinBackward0",
                     name_by_operands({(True, True, False): "ClampMinBackward1"}))
CLAMP_MAX = overload(CLAMP, "clamp_max", "ClampMaxBackward0",
                     name_by_operands({(True, False, True): "ClampMaxBackward1"}))
# torch's nodes save ``other`` before ``self`` (the order saved-tensor hooks see them packed in)
for _op in (MUL, DIV, POW, ATAN2, HYPOT, LOGADDEXP, REMAINDER, MAXIMUM, MINIMUM):
    _op.pack_order = OTHER_FIRST


def _where_jvp(tangents: tuple, out: Any, c: Any, x: Any, y: Any) -> Tensor:
    _, tx, ty = tangents
    return _where(c, 0.0 if tx is None else tx, 0.0 if ty is None else ty)


# (the gradient is selected, not multiplied by the mask: a NaN gradient where the branch was not taken
# gives 0, as torch's)
def _where_impl(condition: Any, x: Any, y: Any) -> Any:
    """``np.where``; selecting an array or zero without branches where ``select_or_zero`` can (the
    vjps of ``relu``, ``clamp``, ``where``, ...: the same bits)."""
    selected = select_or_zero(condition, x, y)
    return np.where(condition, x, y) if selected is None else selected


WHERE = elementwise("where", _where_impl, (None, lambda out, c, x, y: c, lambda out, c, x, y: ~c), number_inputs=True,
                    vjp=(None, lambda g, out, c, x, y: _where(c, g, 0.0), lambda g, out, c, x, y: _where(c, 0.0, g)),
                    jvp=_where_jvp, arg_names=("condition", "self", "other"), promotion=1,
                    save_inputs=(True, False, False))  # (only the condition is read, and saved, as torch's)

# -- complex parts ---------------------------------------------------------------------------
def _imag_tangent(t: Tensor, out: Any) -> Tensor:
    """``imag(t)``; zero for a real tangent (NumPy's ``imag`` of a real array is a constant 0)."""
    return t.imag if t.dtype.kind == "c" else zeros_like(out)


REAL = Op("real", _real_impl, vjp=(lambda g, out, x: g,), jvp=lambda ts, out, x: ts[0].real,
          family="elementwise", save_inputs=False)
IMAG = Op("imag", _imag_impl, vjp=(lambda g, out, x: g * 1j,), jvp=lambda ts, out, x: _imag_tangent(ts[0], out),
          family="elementwise", save_inputs=False)
CONJ = Op("conj", np.conjugate, vjp=(lambda g, out, x: g.conj(),), jvp=lambda ts, out, x: ts[0].conj(),
          family="elementwise", save_inputs=False)
angle = unary(Op("angle", _angle_impl, vjp=(_angle_vjp,), jvp=_angle_jvp, family="elementwise"),
              "Argument of complex numbers (for reals: pi where x < 0, else 0, -0.0 included; zero gradient).",
              "[-1.]", "tensor([3.1416])", inplace=False)


def _cast_jvp(tangents: tuple, out: Any, x: Any, dtype: np.dtype) -> Tensor | None:
    """The tangent cast as the value; none for an integer or bool result (torch's: it cannot carry one)."""
    return apply(CAST, tangents[0], dtype=dtype) if is_differentiable_dtype(dtype) else None


CAST = linear("to", lambda x, dtype: x.astype(dtype, copy=False), (lambda g, out, x, dtype: g,),
              jvp=_cast_jvp, family="elementwise", grad_name="ToCopyBackward0")
CLONE = linear("clone", np.copy, (lambda g, out, x: g,), family="elementwise")

# -- non-differentiable ----------------------------------------------------------------------
def _integers_only(fn: Any, kernel: str) -> Any:
    """``fn`` (a shift or bitwise op) refusing floating and complex operands with torch's NotImplementedError."""

    def impl(x: Any, y: Any) -> np.ndarray:
        for a in (x, y):
            dtype = np.asarray(a).dtype
            if dtype.kind in "fc":
                raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{torch_dtype_name(dtype)}\'')
        return fn(x, y)

    return impl


def _real_only(fn: Any, name: str) -> Any:
    """``fn`` (a test of the sign or infinity) refusing complex inputs, as torch."""

    def impl(x: Any) -> np.ndarray:
        if np.iscomplexobj(x):
            raise RuntimeError(f"{name} does not support complex inputs.")
        return fn(x)

    return impl


COMPARISONS = {
    name: nondifferentiable(name, fn)
    for name, fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                     ("gt", np.greater), ("ge", np.greater_equal),
                     ("logical_and", np.logical_and), ("logical_or", np.logical_or),
                     ("logical_xor", np.logical_xor), ("logical_not", np.logical_not),
                     ("bitwise_and", _integers_only(np.bitwise_and, "bitwise_and")),
                     ("bitwise_or", _integers_only(np.bitwise_or, "bitwise_or")),
                     ("bitwise_xor", _integers_only(np.bitwise_xor, "bitwise_xor")), ("bitwise_not", np.invert),
                     ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                     ("signbit", _real_only(np.signbit, "signbit")),
                     ("isposinf", _real_only(np.isposinf, "isposinf")),
                     ("isneginf", _real_only(np.isneginf, "isneginf")),
                     ("isreal", lambda x: np.imag(x) == 0),
                     ("bitwise_left_shift", _integers_only(np.left_shift, "lshift")),
                     ("bitwise_right_shift", _integers_only(np.right_shift, "rshift"))]
}


# -- public functions ------------------------------------------------------------------------
@public(ADD, numpy=np.add)
def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002 - torch's names
    """``input + alpha * other`` with broadcasting.

    >>> import dualgrad as dg
    >>> dg.add(dg.tensor([1., 2.]), 1.0, alpha=2)
    tensor([3., 4.])
    """
    return apply(ADD, input, other) if alpha == 1 else apply(ADD_SCALED, input, other, alpha=alpha)


@public(SUB, aliases=("subtract",), numpy=np.subtract)
def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002 - torch's names
    """``input - alpha * other`` with broadcasting.

    >>> import dualgrad as dg
    >>> dg.sub(dg.tensor([1., 2.]), 1.0)
    tensor([0., 1.])
    """
    return apply(SUB, input, other) if alpha == 1 else apply(SUB_SCALED, input, other, alpha=alpha)


@public(DIV, aliases=("divide",), numpy=np.true_divide)
def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:  # noqa: A002 - torch's names
    """``input / other`` with broadcasting; ``rounding_mode`` ``'trunc'`` or ``'floor'`` rounds the
    quotient (integers then stay integers) and gives a zero gradient, as torch's.

    >>> import dualgrad as dg
    >>> x = dg.tensor([-7., 7.])
    >>> dg.div(x, 2.0), dg.div(x, 2.0, rounding_mode="trunc"), dg.div(x, 2.0, rounding_mode="floor")
    (tensor([-3.5000,  3.5000]), tensor([-3.,  3.]), tensor([-4.,  3.]))
    """
    if rounding_mode is None:
        return apply(DIV, input, other)
    if rounding_mode == "trunc":
        return apply(DIV_TRUNC, input, other)
    if rounding_mode == "floor":
        return apply(FLOOR_DIVIDE, input, other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


@public(DIV)
def true_divide(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """Alias of ``div`` without rounding.

    >>> import dualgrad as dg
    >>> dg.true_divide(dg.tensor([1.]), 4)
    tensor([0.2500])
    """
    return apply(DIV, input, other)


@public(POW, numpy=np.power)
def pow(input: Any = None, exponent: Any = None, *, self: Any = None) -> Tensor:  # noqa: A001, A002
    """``input ** exponent`` elementwise (either may be a number); torch's ``pow(self=2.0, exponent=t)``
    spelling of a number base is accepted. An integer tensor to a negative integer number raises
    RuntimeError ("Integers to negative integer powers are not allowed."), as torch's; integers to an
    integer tensor holding negative powers give torch's values (``1``, ``-1`` or ``1`` for a base of
    -1, else 0).

    >>> import dualgrad as dg
    >>> dg.pow(dg.tensor([1., 3.]), 2), dg.pow(2.0, dg.tensor([3.]))
    (tensor([1., 9.]), tensor([8.]))
    >>> dg.tensor([1, -1, 2]) ** dg.tensor([-2, -3, -1])
    tensor([ 1, -1,  0])

    An array or a list on either side is a constant tensor (torch's ``pow(Tensor, Tensor)``):

    >>> dg.tensor([2., 3.]) ** [3., 0.5], [2., 3.] ** dg.tensor([2.])
    (tensor([8.0000, 1.7321]), tensor([4., 9.]))
    """
    base = self if input is None else input
    if type(exponent) not in _PLAIN_OPERANDS:  # (one test for the common ``x ** 2`` and ``x ** y``)
        exponent = _power_operand(exponent)
    if type(base) not in _PLAIN_OPERANDS:
        base = _power_operand(base)
    return apply(POW, base, exponent)


_PLAIN_OPERANDS = (Tensor, int, float)


def _power_operand(x: Any) -> Any:
    """A number or Tensor as it is; an array or a list as a constant Tensor, so that ``pow``'s rules take
    the tensor-exponent path (their number path compares the exponent with 0 and 2). An array is
    copied, as torch's tensor constructors copy: the node saves it, and the caller may change the
    array in place before the backward pass (no version counter would notice)."""
    if isinstance(x, Tensor) or is_number(x):
        return x
    return as_operand(x.copy() if isinstance(x, np.ndarray) else x)


@public(CLAMP, aliases=("clip",))
def clamp(input: Any, min: Any = None, max: Any = None) -> Tensor:  # noqa: A001, A002 - torch's names
    """Limit ``input`` to ``[min, max]`` (numbers or tensors, either may be None); the gradient is 1
    inside (bounds included), 0 outside.

    >>> import dualgrad as dg
    >>> dg.clamp(dg.tensor([-2., 0.5, 3.]), 0.0, 1.0), dg.clamp(dg.tensor([-2., 3.]), max=1.0)
    (tensor([0.0000, 0.5000, 1.0000]), tensor([-2.,  1.]))
    """
    return checked_clamp(CLAMP, input, min, max)


def checked_clamp(op: Op, input: Any, min: Any, max: Any) -> Tensor:  # noqa: A002 - torch's names
    """``op`` (CLAMP, CLAMP_MIN or CLAMP_MAX) on ``input``, ``min`` and ``max``, one of which must be given."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return apply(op, input, min, max)



@public(WHERE, inplace=False, method_function=lambda self, condition, other: where(condition, self, other))
def where(condition: Any, input: Any = None, other: Any = None) -> Tensor | tuple:  # noqa: A002
    """Elements of ``input`` where ``condition`` holds, else of ``other``; ``where(condition)``
    alone is ``nonzero(condition, as_tuple=True)``, as torch's.

    The gradient of the branch not taken is exactly zero, so a NaN or inf in the
    unselected branch's *value* does not reach the gradient; a NaN in its
    *derivative* (e.g. ``where(x > 0, sqrt(x), 0)`` at ``x < 0``) is multiplied by
    zero and still poisons it, as in every autodiff library: guard the input
    instead (``sqrt(where(x > 0, x, 1))``).

    >>> import dualgrad as dg
    >>> dg.where(dg.tensor([True, False]), dg.tensor([1., 2.]), 0.0)
    tensor([1., 0.])
    >>> dg.where(dg.tensor([True, False, True]))
    (tensor([0, 2]),)
    """
    if input is None and other is None:
        return tensor_arg(condition, "where").nonzero(as_tuple=True)  # (a method: indexing imports this module)
    if input is None or other is None:
        raise TypeError("where() missing required argument: both 'input' and 'other' or neither")
    return apply(WHERE, condition, input, other)


@public(SOFTPLUS, inplace=False)
def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta * input)) / beta``, linear where ``beta * input > threshold``.

    >>> import dualgrad as dg
    >>> dg.softplus(dg.tensor([0.]))
    tensor([0.6931])
    """
    if not (is_number(beta) and is_number(threshold)):  # (a Tensor would be a constant there: torch's TypeError)
        name, value, position = ("beta", beta, 2) if not is_number(beta) else ("threshold", threshold, 3)
        raise TypeError(f"softplus(): argument '{name}' (position {position}) must be Number, not "
                        f"{type(value).__name__}")
    return apply(SOFTPLUS, input, beta=beta, threshold=threshold)


@public(CAST, method=False, inplace=False)
def to_dtype(x: Any, dtype: Any) -> Tensor:
    """``x`` cast to ``dtype`` (differentiable between floating/complex dtypes).

    >>> import dualgrad as dg
    >>> dg.to_dtype(dg.tensor([1.5]), "float32")
    tensor([1.5000], dtype=float32)
    """
    dtype = np.dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == dtype:
        return x
    return apply(CAST, x, dtype=dtype)




@public(ROUND, numpy=np.rint, namespaces={"special": ("round",)})
def round(input: Any, *, decimals: int = 0) -> Tensor:  # noqa: A001, A002 - torch's names
    """``input`` rounded half to even, to ``decimals`` decimal places (its gradient is 0).

    >>> import dualgrad as dg
    >>> dg.round(dg.tensor([0.5, 1.5, 1.2345])), dg.round(dg.tensor([1.2345]), decimals=2)
    (tensor([0., 2., 1.]), tensor([1.2300]))
    """
    return apply(ROUND, input) if decimals == 0 else apply(ROUND, input, decimals=decimals)


@public(FRAC, top_level_inplace=True)
def frac(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input - trunc(input)``: the fractional part, with the sign of ``input`` (gradient 1).

    >>> import dualgrad as dg
    >>> dg.frac(dg.tensor([-1.25, 2.5]))
    tensor([-0.2500,  0.5000])
    """
    return apply(FRAC, input)


def real_part(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The real part as NumPy's ``np.real`` gives it to ``__array_function__``: a new tensor
    (``dualgrad.real`` and ``Tensor.real`` are torch's views).

    >>> import dualgrad as dg
    >>> from dualgrad.ops.elementwise.core import real_part
    >>> real_part(dg.tensor([1. + 2.j]))
    tensor([1.])
    """
    return apply(REAL, input)


def imag_part(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The imaginary part as NumPy's ``np.imag``: a new tensor, zeros for a real one (torch's
    ``dualgrad.imag`` refuses real tensors).

    >>> import dualgrad as dg
    >>> from dualgrad.ops.elementwise.core import imag_part
    >>> imag_part(dg.tensor([1., 2.]))
    tensor([0., 0.])
    """
    return apply(IMAG, input)


def tanh_backward(grad_output: Any, output: Any) -> Tensor:
    """tanh's gradient from its output, ``grad_output * conj(1 - output**2)`` (torch's ``aten.tanh_backward``).

    >>> import dualgrad as dg
    >>> from dualgrad.ops.elementwise.core import tanh_backward
    >>> tanh_backward(dg.tensor([2.0]), dg.tensor([0.5]))
    tensor([1.5000])
    """
    return apply(TANH_BACKWARD, grad_output, output)


def sigmoid_backward(grad_output: Any, output: Any) -> Tensor:
    """sigmoid's gradient from its output, ``grad_output * conj(output * (1 - output))`` (torch's
    ``aten.sigmoid_backward``).

    >>> import dualgrad as dg
    >>> from dualgrad.ops.elementwise.core import sigmoid_backward
    >>> sigmoid_backward(dg.tensor([2.0]), dg.tensor([0.5]))
    tensor([0.5000])
    """
    return apply(SIGMOID_BACKWARD, grad_output, output)


@public(CONJ, method=("conj", "conjugate"), inplace=False, numpy=np.conjugate)
def conj(x: Any) -> Tensor:
    """Complex conjugate; a real tensor is returned as it is (as in torch), without a copy.

    >>> import dualgrad as dg
    >>> dg.conj(dg.tensor([1.+2.j]))
    tensor([1.-2.j])
    """
    if isinstance(x, Tensor) and x.dtype.kind != "c":
        return x
    return apply(CONJ, x)




@public(CLONE, method=("clone", "copy"), inplace=False, numpy=np.positive)
def clone(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """A copy that stays in the graph (of a Tensor, an array or numbers; ``None`` or a string is a TypeError,
    not an object tensor).

    >>> import dualgrad as dg
    >>> dg.clone(dg.tensor([1.]))
    tensor([1.])
    """
    return apply(CLONE, as_operand(input))


def _reflected(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


def _reflected_division(self: Tensor, other: Any) -> Tensor:
    """``number / self`` as torch computes it, ``reciprocal(self) * number`` (its graph: MulBackward0
    of ReciprocalBackward0); the quotient of two tensors or arrays is ``div``'s."""
    if is_number(other):
        return apply(MUL, apply(RECIPROCAL, self), other)
    return div(other, self)


def _cast_method(dtype: str) -> Any:
    """torch's ``t.double()``, ``t.long()``, ...: ``t.to(dtype)``."""
    dtype = np.dtype(dtype)

    def method(self: Tensor) -> Tensor:
        return to_dtype(self, dtype)

    method.__name__ = method.__qualname__ = _CAST_METHODS[dtype.name]
    method.__doc__ = f"``self.to({dtype.name})`` (``self`` itself if it is {dtype.name} already)."
    return method


_CAST_METHODS = {"float64": "double", "float32": "float", "float16": "half", "int64": "long", "int32": "int",
                 "int16": "short", "int8": "char", "uint8": "byte", "bool": "bool", "complex64": "cfloat",
                 "complex128": "cdouble"}


def astype(self: Tensor, dtype: Any, copy: bool = True) -> Tensor:
    """NumPy's ``a.astype(dtype)``: ``self`` cast to ``dtype``, a new tensor unless ``copy=False``.

    Differentiable like ``to``; with the same dtype and ``copy=True`` the result is a
    ``clone``, so writing into it leaves ``self`` unchanged (as in NumPy).

    >>> import dualgrad as dg
    >>> x = dg.tensor([1.5, 2.0])
    >>> y = x.astype("float64")
    >>> y += 1
    >>> x, x.astype("float32")
    (tensor([1.5000, 2.0000]), tensor([1.5000, 2.0000], dtype=float32))
    """
    result = to_dtype(self, dtype)
    return clone(result) if copy and result is self else result


def _compare(op_name: str) -> Any:
    op = COMPARISONS[op_name]
    return lambda self, other: apply(op, self, other)


def _equality(op_name: str) -> Any:
    """``==`` / ``!=``: NotImplemented for None and strings, so that Python compares identities, as torch."""
    op = COMPARISONS[op_name]

    def method(self: Tensor, other: Any) -> Any:
        if other is None or isinstance(other, str):
            return NotImplemented
        return apply(op, self, other)

    return method


def _contains(self: Tensor, element: Any) -> bool:
    """``element in t``: True if some element of ``t`` equals ``element`` (a number or a broadcastable Tensor)."""
    if not isinstance(element, (Tensor, int, float, complex)):
        raise RuntimeError(
            f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}."
        )
    return bool(apply(COMPARISONS["eq"], self, element)._data.any())


def _logic(name: str, summary: str, args: str, result: str, unary: bool = False, **surface: Any) -> Any:
    """The public function ``dualgrad.<name>`` of the comparison or logic op ``name`` (a tensor, not tracked)."""
    return untracked(COMPARISONS[name], f"{summary} (not tracked).", args, result, arity=1 if unary else 2, **surface)


_XY = "dg.tensor([1., 2., 3.]), 2."
_PQ = "dg.tensor([True, True, False]), dg.tensor([True, False, False])"
eq = _logic("eq", "``x == y`` elementwise, as a bool tensor", _XY, "tensor([False,  True, False])", numpy=np.equal)
ne = _logic("ne", "``x != y`` elementwise, as a bool tensor", _XY, "tensor([ True, False,  True])",
            aliases=("not_equal",), numpy=np.not_equal)
lt = _logic("lt", "``x < y`` elementwise, as a bool tensor", _XY, "tensor([ True, False, False])",
            aliases=("less",), numpy=np.less)
le = _logic("le", "``x <= y`` elementwise, as a bool tensor", _XY, "tensor([ True,  True, False])",
            aliases=("less_equal",), numpy=np.less_equal)
gt = _logic("gt", "``x > y`` elementwise, as a bool tensor", _XY, "tensor([False, False,  True])",
            aliases=("greater",), numpy=np.greater)
ge = _logic("ge", "``x >= y`` elementwise, as a bool tensor", _XY, "tensor([False,  True,  True])",
            aliases=("greater_equal",), numpy=np.greater_equal)
logical_and = _logic("logical_and", "Elementwise AND of the truth values (nonzero is true), as a bool tensor",
                     _PQ, "tensor([ True, False, False])", numpy=np.logical_and)
logical_or = _logic("logical_or", "Elementwise OR of the truth values, as a bool tensor", _PQ,
                    "tensor([ True,  True, False])", numpy=np.logical_or)
logical_xor = _logic("logical_xor", "Elementwise XOR of the truth values, as a bool tensor", _PQ,
                     "tensor([False,  True, False])", numpy=np.logical_xor)
logical_not = _logic("logical_not", "Elementwise NOT of the truth values, as a bool tensor", "dg.tensor([0., 2.])",
                     "tensor([ True, False])", unary=True, numpy=np.logical_not)
bitwise_and = _logic("bitwise_and", "``x & y`` for integer or bool tensors", "dg.tensor([5, 6]), 3",
                     "tensor([1, 2])", numpy=np.bitwise_and)
bitwise_or = _logic("bitwise_or", "``x | y`` for integer or bool tensors", "dg.tensor([5, 6]), 3", "tensor([7, 7])",
                    numpy=np.bitwise_or)
bitwise_xor = _logic("bitwise_xor", "``x ^ y`` for integer or bool tensors", "dg.tensor([5, 6]), 3",
                     "tensor([6, 5])", numpy=np.bitwise_xor)
bitwise_left_shift = _logic("bitwise_left_shift", "``x << y`` for integer tensors (0 for shifts past the width)",
                            "dg.tensor([1, -8]), 2", "tensor([  4, -32])")
bitwise_right_shift = _logic("bitwise_right_shift", "``x >> y`` for integer tensors (arithmetic: keeps the sign)",
                             "dg.tensor([1, -8]), 2", "tensor([ 0, -2])")
bitwise_not = _logic("bitwise_not", "``~x`` for integer or bool tensors", "dg.tensor([True, False])",
                     "tensor([False,  True])", unary=True, numpy=np.invert)


def _predicate(op_name: str) -> Any:
    op = COMPARISONS[op_name]
    return lambda self: apply(op, self)


def _value_test(name: str, summary: str, example: str, result: str, **surface: Any) -> Any:
    """The function ``dualgrad.<name>``: a bool tensor (not tracked) of a test of each value."""
    return untracked(COMPARISONS[name], f"{summary} (a bool tensor, not tracked).", f"dg.tensor({example})", result,
                     arity=1, **surface)


isnan = _value_test("isnan", "True where ``x`` is NaN", '[1., float("nan")]', "tensor([False,  True])",
                    numpy=np.isnan, inplace=False)
isinf = _value_test("isinf", "True where ``x`` is infinite", '[1., float("inf")]', "tensor([False,  True])",
                    numpy=np.isinf, inplace=False)
isfinite = _value_test("isfinite", "True where ``x`` is neither infinite nor NaN", '[1., float("inf")]',
                       "tensor([ True, False])", numpy=np.isfinite, inplace=False)
isposinf = _value_test("isposinf", "True where ``x`` is +inf", '[1., float("inf"), -float("inf")]',
                       "tensor([False,  True, False])", inplace=False)
isneginf = _value_test("isneginf", "True where ``x`` is -inf", '[1., float("inf"), -float("inf")]',
                       "tensor([False, False,  True])", inplace=False)
isreal = _value_test("isreal", "True where ``x`` has no imaginary part (everywhere for a real tensor)",
                     "[1.+0.j, 1.j]", "tensor([ True, False])", inplace=False)
signbit = _value_test("signbit", "True where the sign bit of ``x`` is set (``-0.0`` included)", "[-0., 1., -2.]",
                      "tensor([ True, False,  True])", numpy=np.signbit, inplace=False)


def _contiguous(self: Tensor) -> Tensor:
    """``self`` if its memory is row-major, else a row-major copy, as torch's (flattening copies
    a strided array in row-major order; ``clone`` keeps the strides, as torch's does). Under ``vmap`` the
    memory of one batch member cannot be read: the row-major copy is made, the values are the same."""
    if type(self) is not Tensor:  # a BatchedTensor
        return self.reshape(-1).reshape(self.shape)
    return self if self._data.flags.c_contiguous else self.reshape(-1).reshape(self.shape)


def _operator(op: Op, plain: Any) -> Any:
    """The Tensor operator of ``op`` (``plain(self, other)`` dispatches it): see ``fastpath.quiet_operator``."""
    return quiet_operator(op, plain, _apply, _record)


METHODS: dict[str, Any] = {
    "type_as": lambda self, other: to_dtype(self, tensor_arg(other, "type_as").dtype),
    "contiguous": _contiguous,
    # (``2 + x`` and ``2 * x`` are ``x + 2`` and ``x * 2``, as in torch: the node's inputs in that order;
    # the forward operators defer to array types that take precedence under NumPy's rules, see _deference;
    # dispatch's common path taken by the operators themselves: fastpath.quiet_operator)
    "__add__": _operator(ADD, deferring_op(apply, ADD)), "__radd__": _operator(ADD, add),
    "__sub__": _operator(SUB, deferring_op(apply, SUB)), "__rsub__": _reflected(sub),
    "__mul__": _operator(MUL, deferring_op(apply, MUL)), "__rmul__": _operator(MUL, mul),
    "__truediv__": _operator(DIV, deferring_op(apply, DIV)), "__rtruediv__": _reflected_division,
    "__floordiv__": floor_divide, "__rfloordiv__": _reflected(floor_divide),
    "__mod__": remainder, "__rmod__": _reflected(remainder),
    "__pow__": pow, "__rpow__": _reflected(pow),
    "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs,
    "__eq__": _equality("eq"), "__ne__": _equality("ne"), "__lt__": _compare("lt"),
    "__le__": _compare("le"), "__gt__": _compare("gt"), "__ge__": _compare("ge"),
    "__and__": _compare("bitwise_and"), "__or__": _compare("bitwise_or"),
    "__xor__": _compare("bitwise_xor"), "__invert__": _predicate("bitwise_not"),
    "__rand__": _reflected(_compare("bitwise_and")), "__ror__": _reflected(_compare("bitwise_or")),
    "__rxor__": _reflected(_compare("bitwise_xor")), "__contains__": _contains,
    "__lshift__": _compare("bitwise_left_shift"), "__rshift__": _compare("bitwise_right_shift"),
    "__rlshift__": _reflected(_compare("bitwise_left_shift")),
    "__rrshift__": _reflected(_compare("bitwise_right_shift")),
    "astype": astype,
    **{name: _cast_method(dtype) for dtype, name in _CAST_METHODS.items()},
}


__all__ = exported(__name__)
