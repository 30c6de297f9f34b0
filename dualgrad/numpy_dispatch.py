"""NumPy interoperability: NEP 13 (``__array_ufunc__``) and NEP 18 (``__array_function__``).

NumPy calls on Tensors route to dualgrad's op table, so unmodified NumPy code is
differentiable: ``np.sin(t)``, ``np.sum(t, axis=0)``, ``np.linalg.solve(A, b)``
return Tensors tracked by reverse mode, forward mode and vmap.

The tables below map a NumPy ufunc or function to the *name* of a dualgrad
function (resolved when called) or to an adaptor with NumPy's signature. When a
NumPy function has no entry:

* if any argument is tracked (requires grad, carries a tangent, or is batched),
  ``TypeError("dualgrad has no derivative rule for numpy.<name>")`` is raised —
  never a silently detached result;
* otherwise NumPy runs on the raw arrays and array results come back as Tensors.

``np.asarray(t)`` returns the data without any graph (like torch's ``.numpy()``).

>>> import numpy as np, dualgrad as dg
>>> x = dg.tensor([0.0, 1.0], requires_grad=True)
>>> y = np.sum(np.sin(x) * 2.0)
>>> type(y).__name__, y.grad_fn.name()
('Tensor', 'SumBackward0')
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .tensor import Tensor, _wrap

# ufunc -> name of the dualgrad function computing it (``ufunc(*inputs)``).
UFUNCS: dict[np.ufunc, str] = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
    np.power: "pow", np.float_power: "pow", np.negative: "neg", np.positive: "clone",
    np.reciprocal: "reciprocal", np.square: "square", np.sqrt: "sqrt", np.absolute: "abs",
    np.fabs: "abs", np.exp: "exp", np.expm1: "expm1", np.log: "log", np.log1p: "log1p",
    np.log2: "log2", np.log10: "log10", np.sin: "sin", np.cos: "cos", np.tan: "tan",
    np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan", np.arctan2: "atan2",
    np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh", np.arcsinh: "asinh",
    np.arccosh: "acosh", np.arctanh: "atanh", np.hypot: "hypot", np.logaddexp: "logaddexp",
    np.maximum: "maximum", np.minimum: "minimum", np.fmax: "maximum", np.fmin: "minimum",
    np.conjugate: "conj", np.remainder: "remainder", np.matmul: "matmul",
    np.exp2: "exp2", np.logaddexp2: "logaddexp2", np.cbrt: "cbrt", np.deg2rad: "deg2rad",
    np.rad2deg: "rad2deg", np.copysign: "copysign", np.heaviside: "heaviside",
}
# ufunc.reduce / ufunc.accumulate -> dualgrad function name (taking axis=, keepdims=).
REDUCTIONS: dict[np.ufunc, str] = {
    np.add: "sum", np.multiply: "prod", np.maximum: "amax", np.minimum: "amin",
    np.logical_and: "all", np.logical_or: "any",
}
ACCUMULATIONS: dict[np.ufunc, str] = {np.add: "cumsum", np.multiply: "cumprod"}

# NumPy functions -> dualgrad function name or adaptor with NumPy's signature.
FUNCTIONS: dict[Callable, Any] = {}


def implements(*numpy_functions: Callable) -> Callable:
    """Register an adaptor (with NumPy's signature) for ``numpy_functions``."""

    def register(adaptor: Callable) -> Callable:
        for fn in numpy_functions:
            FUNCTIONS[fn] = adaptor
        return adaptor

    return register


def is_tracked(value: Any) -> bool:
    """True for a Tensor that autograd sees: requires grad, has tangents, or is batched."""
    if isinstance(value, Tensor):
        return value._requires_grad or bool(value._fw) or type(value) is not Tensor
    if isinstance(value, (list, tuple)):
        return any(is_tracked(v) for v in value)
    return False


def _resolve(name: str) -> Callable | None:
    import dualgrad

    return getattr(dualgrad, name, None)


def _raw(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_raw(v) for v in value)
    return value


def _wrap_result(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _wrap(value)
    if isinstance(value, tuple):
        return tuple(_wrap_result(v) for v in value)
    if isinstance(value, list):
        return [_wrap_result(v) for v in value]
    return value


def _no_rule(name: str) -> TypeError:
    return TypeError(
        f"dualgrad has no derivative rule for numpy.{name}; it was called with a tracked Tensor "
        "(requires_grad, a forward-mode tangent or a vmap batch). Use a dualgrad function, or "
        "detach the input if no derivative is wanted."
    )


def _run_untracked(fn: Callable, args: tuple, kwargs: dict) -> Any:
    return _wrap_result(fn(*_raw(args), **{k: _raw(v) for k, v in kwargs.items()}))


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: route a ufunc call to the op table."""
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    dtype = kwargs.pop("dtype", None)
    tracked = any(is_tracked(x) for x in inputs) or is_tracked(out)
    if method == "__call__":
        name = UFUNCS.get(ufunc)
    elif method == "reduce":
        name = REDUCTIONS.get(ufunc)
    elif method == "accumulate":
        name = ACCUMULATIONS.get(ufunc)
    else:
        name = None
    fn = _resolve(name) if name else None
    if fn is None or kwargs:
        if tracked and ufunc.types and not _all_outputs_bool(ufunc):
            raise _no_rule(f"{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"))
        plain = {**kwargs, **({"dtype": dtype} if dtype is not None else {})}
        if where is not True:
            plain["where"] = _raw(where)
        result = getattr(ufunc, method)(*_raw(inputs), **plain, **({"out": _raw(out)} if out else {}))
        return out[0] if out and len(out) == 1 else _wrap_result(result)
    if dtype is not None:
        inputs = tuple(x.to(dtype) if isinstance(x, Tensor) else np.asarray(x, dtype=dtype) for x in inputs)
    if method == "__call__":
        result = fn(*inputs)
    else:
        axis = kwargs.pop("axis", 0)
        extra = {"keepdims": kwargs.pop("keepdims")} if method == "reduce" and "keepdims" in kwargs else {}
        result = fn(inputs[0], axis=axis, **extra) if method == "reduce" else fn(inputs[0], axis)
    if where is not True:
        fallback = out[0] if out else 0.0
        result = _resolve("where")(where, result, fallback)
    if out:
        return _write_out(out, result)
    return result


def _all_outputs_bool(ufunc: np.ufunc) -> bool:
    """Comparisons, predicates and rounding: results that carry no derivative."""
    return ufunc in NONDIFFERENTIABLE_UFUNCS


NONDIFFERENTIABLE_UFUNCS = {
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isnan, np.isinf,
    np.isfinite, np.signbit, np.floor, np.ceil, np.trunc, np.rint, np.sign, np.floor_divide,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.isnat, np.spacing,
}


def _write_out(out: tuple, result: Any) -> Any:
    """Write ``result`` into ``out[0]`` (a Tensor in place, or an ndarray)."""
    (target,) = out
    if isinstance(target, Tensor):
        copy_ = getattr(target, "copy_", None)
        if copy_ is None:
            raise TypeError("out= with a Tensor needs in-place support (Tensor.copy_)")
        return copy_(result)
    if is_tracked(result):
        raise _no_rule("out= into an ndarray")
    np.copyto(target, _raw(result))
    return target


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: route a NumPy function call to the op table."""
    target = FUNCTIONS.get(func)
    if isinstance(target, str):
        target = _resolve(target)
    if target is None:
        if is_tracked(args) or is_tracked(tuple(kwargs.values())):
            module = func.__module__.replace("numpy.", "").replace("numpy", "")
            name = f"{module}.{func.__name__}" if module else func.__name__
            raise _no_rule(name)
        return _run_untracked(func, args, kwargs)
    return target(*args, **kwargs)


def install() -> None:
    """Give ``Tensor`` its NumPy protocol methods."""

    def __array_ufunc__(self: Tensor, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self: Tensor, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        return array_function(func, types, args, kwargs)

    Tensor.__array_ufunc__ = __array_ufunc__
    Tensor.__array_function__ = __array_function__
