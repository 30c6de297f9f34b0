"""NumPy interoperability: NEP 13 (``__array_ufunc__``) and NEP 18 (``__array_function__``).

NumPy calls on Tensors route to dualgrad's op table, so unmodified NumPy code is
differentiable: ``np.sin(t)``, ``np.sum(t, axis=0)``, ``np.linalg.solve(A, b)``
return Tensors tracked by reverse mode, forward mode and vmap. Tensors, ndarrays
and Python scalars mix freely (NumPy's type promotion; a Python float does not
upcast a float32 Tensor).

The tables below map a NumPy ufunc or function to the *name* of a dualgrad
function (resolved when first called, so ``np.linalg.*`` and ``np.fft.*`` reach
``dualgrad.linalg`` / ``dualgrad.fft`` once those exist) or to an adaptor with
NumPy's signature (``dualgrad/numpy_dispatch/functions.py``). What comes back:

* differentiable functions: Tensors in the graph, as the dualgrad function gives;
* rounding (``floor``, ``ceil``, ``trunc``, ``rint``, ``sign``, ``floor_divide``): tracked Tensors
  with a zero gradient (as torch's);
* non-differentiable functions (comparisons, ``isnan``, ``argmax``,
  ``argsort``, ``nonzero``, ``unique``, ``searchsorted``, ...): bool/int array
  results are Tensors that do not require grad (as in torch), Python values stay
  Python values (``np.allclose`` gives a ``bool``, ``np.shape`` a tuple), so
  ``if np.allclose(a, b):`` keeps working;
* a NumPy function or ufunc method with no entry: if any argument is tracked
  (requires grad, carries a forward-mode tangent, or is batched by vmap),
  ``TypeError("dualgrad has no derivative rule for numpy.<name>")`` — never a
  silently detached result; otherwise NumPy runs on the data and array results
  come back as Tensors.

Ufunc keywords: ``out=`` (a Tensor is written in place with ``copy_``, so the
write is differentiable; an ndarray only receives untracked results), ``where=``
(elements where it is False keep ``out``'s value, or are 0 without ``out`` —
NumPy leaves them uninitialized), ``dtype=`` (inputs are cast first); the
methods ``reduce`` (``axis``, ``keepdims``, ``initial``, ``where``) and
``accumulate`` (``axis``) for ``add``, ``multiply``, ``maximum``, ``minimum``.

Lists and tuples holding tracked Tensors, passed to a NumPy function or ufunc that dispatches here,
become Tensors built with dualgrad ops (``tracked_array_like``), so ``np.add([x, 2 * x], y)`` and
``np.dot([x, y], w)`` stay tracked. Where NumPy converts without dispatching (``np.asarray(t)``,
``np.array([x, y])``, a list reaching a function with no Tensor argument), a tracked Tensor raises
RuntimeError (``Tensor.__array__``) instead of becoming a constant. A Tensor gives way to array
types that take precedence under NumPy's rules (``dualgrad._deference``).

dtypes: float16, float32, float64, complex64, complex128 and bfloat16 (with the
optional ``ml_dtypes`` package, extra ``dualgrad[bf16]``) are differentiable;
gradients and tangents have their input's dtype, mixed dtypes follow NumPy's
promotion, and a Python scalar does not upcast (except for bfloat16, which NumPy
with ml_dtypes promotes to float32 when combined with a Python float). float16 and
bfloat16 results carry the rounding of their dtype: a gradient is accurate to a
few units of the dtype's epsilon relative to its scale (measured in
``tests/tensor/test_dtypes.py``: about 1e-3 for float16, 1e-2 for bfloat16); compute in
float32 or float64 where more is needed. Complex gradients follow the conjugate
Wirtinger convention (``z.grad == dL/da + 1j * dL/db`` for a real loss).

>>> import numpy as np, dualgrad as dg
>>> x = dg.tensor([0.0, 1.0], requires_grad=True)
>>> y = np.sum(np.sin(x) * 2.0)
>>> type(y).__name__, y.grad_fn.name()
('Tensor', 'SumBackward0')
>>> bool(np.allclose(x, [0.0, 1.0])), np.isnan(x)
(True, tensor([False, False]))
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .._deference import overrides_ufuncs
from ..ops import surface
from ..ops.dispatch import apply
from ..ops.registry import ALL_OPS
from ..tensor import Tensor, _wrap, wrap_operand


def _numpy_sign(x: Any) -> Tensor:
    """``np.sign``: ``z / |z|`` for a complex ``z`` (NumPy 2's, torch's ``sgn``, differentiable), else ``sign``."""
    if isinstance(x, Tensor) and x.dtype.kind == "c":
        return _resolve("sgn")(x)
    return apply(ALL_OPS["sign"], x)


def _float_power(x: Any, y: Any) -> Tensor:
    """``np.float_power``: ``pow`` computed in at least float64 (complex128 for complex)."""
    return _resolve("pow")(_at_least_double(x), _at_least_double(y))


def _at_least_double(x: Any) -> Any:
    dtype = x.dtype if isinstance(x, Tensor) else np.result_type(x)
    wide = np.complex128 if dtype.kind == "c" else np.float64
    return _resolve("to_dtype")(x, wide) if isinstance(x, Tensor) else np.asarray(x, wide)


def _divmod(x: Any, y: Any) -> tuple:
    return _resolve("floor_divide")(x, y), _resolve("remainder")(x, y)


def _vecdot(x: Any, y: Any, axis: int = -1) -> Tensor:
    """``sum(conj(x) * y)`` over ``axis`` (the array API's ``vecdot``)."""
    return _resolve("sum")(_resolve("conj")(x) * y, axis=axis)


def _matvec(a: Any, v: Any) -> Tensor:
    matmul, unsqueeze = _resolve("matmul"), _resolve("unsqueeze")
    return matmul(a, unsqueeze(_tensor(v), -1))[..., 0]


def _vecmat(v: Any, a: Any) -> Tensor:
    matmul, unsqueeze = _resolve("matmul"), _resolve("unsqueeze")
    return matmul(unsqueeze(_resolve("conj")(_tensor(v)), -2), a)[..., 0, :]


def _matmul(x: Any, y: Any) -> Tensor:
    return _resolve("matmul")(_tensor(x), _tensor(y))


def _frexp(x: Any) -> tuple:
    return tuple(_resolve("frexp")(x))


def _modf(x: Any) -> tuple:
    """(fractional part, integral part), both with ``x``'s sign; the fractional part has slope 1."""
    whole = _resolve("trunc")(x)
    return x - whole, whole


def _cumulative_extreme(name: str) -> Callable:
    """``np.maximum.accumulate`` / ``np.minimum.accumulate``: the values of ``dualgrad.cummax`` / ``cummin``."""
    return lambda x, axis: _resolve(name)(x, axis).values


def _tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return wrap_operand(x) if isinstance(x, np.ndarray) else _wrap(np.asarray(x))


# ufunc -> the dualgrad function computing it (``ufunc(*inputs)``): the adaptors below (a name of a
# dualgrad function, or a function), and the routes the ops declare with their public surface
# (``numpy=`` in ``ops/surface.py``), added by ``route_declared``
UFUNCS: dict[np.ufunc, str | Callable] = {
    np.float_power: _float_power, np.matmul: _matmul, np.divmod: _divmod, np.vecdot: _vecdot,
    np.matvec: _matvec, np.vecmat: _vecmat, np.frexp: _frexp, np.modf: _modf,
    np.sign: _numpy_sign,
}
# Keywords a ufunc's dualgrad function takes (generalized ufuncs with an axis).
UFUNC_KEYWORDS: dict[np.ufunc, set] = {np.vecdot: {"axis"}}
# ufuncs with no derivative anywhere that run on the data even for tracked inputs.
RAW_UFUNCS = {np.nextafter, np.spacing, np.isnat, np.left_shift, np.right_shift, np.gcd, np.lcm,
              np.bitwise_count}
# ufunc.reduce / ufunc.accumulate -> dualgrad function name (taking axis=, keepdims=).
REDUCTIONS: dict[np.ufunc, str] = {
    np.add: "sum", np.multiply: "prod", np.maximum: "amax", np.minimum: "amin",
    np.fmax: "amax", np.fmin: "amin", np.logical_and: "all", np.logical_or: "any", np.logaddexp: "logsumexp",
}
ACCUMULATIONS: dict[np.ufunc, str | Callable] = {
    np.add: "cumsum", np.multiply: "cumprod", np.maximum: _cumulative_extreme("cummax"),
    np.minimum: _cumulative_extreme("cummin"), np.logaddexp: "logcumsumexp",
}
# How ``initial=`` of a reduction combines with the reduced value.
_COMBINE = {np.add: "add", np.multiply: "mul", np.maximum: "maximum", np.minimum: "minimum",
            np.fmax: "maximum", np.fmin: "minimum"}
# Ufunc keywords whose default value changes nothing here.
_NEUTRAL_KEYWORDS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None}

# NumPy functions -> adaptor with NumPy's signature (filled by ``dualgrad.numpy_dispatch.functions``).
FUNCTIONS: dict[Callable, Callable] = {}
# NumPy functions without derivative that run on the data even for tracked inputs.
RAW_FUNCTIONS: set = set()

# Inputs of the ufuncs' short path: no list to convert, no other array type to defer to.
_PLAIN_INPUTS = frozenset({Tensor, np.ndarray, float, int, bool, complex, np.float64, np.float32, np.int64})

_RESOLVED: dict[str, Callable] = {}
_UFUNC_FNS: dict[np.ufunc, Callable] = {}


def route_declared() -> None:
    """Route the NumPy ufuncs and functions that the ops declare (``numpy=`` in ``ops/surface.py``) to
    their dualgrad functions. Run when this module is imported; again after an op is declared later."""
    for numpy_fn, fn in surface.ufuncs().items():
        if isinstance(numpy_fn, np.ufunc):
            UFUNCS[numpy_fn] = fn
            _UFUNC_FNS.pop(numpy_fn, None)
        else:
            FUNCTIONS[numpy_fn] = fn


route_declared()


def implements(*numpy_functions: Callable) -> Callable:
    """Register an adaptor (with NumPy's signature) for ``numpy_functions``."""

    def register(adaptor: Callable) -> Callable:
        for fn in numpy_functions:
            FUNCTIONS[fn] = adaptor
        return adaptor

    return register


def holds_tensor(value: list | tuple) -> bool:
    """True if the list or tuple ``value`` holds a Tensor at some depth."""
    return any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and holds_tensor(v)) for v in value)


def tracked_array_like(value: Any, argument: str = "a list") -> Any:
    """``value`` itself, unless it is a list or tuple holding a tracked Tensor: then the array NumPy
    would make of it, as a Tensor built with dualgrad ops (``stack``, ``to_dtype``), so it stays tracked.

    Its shape and dtype are NumPy's for the same list holding arrays (``[x, 2.0]`` with a float32
    ``x`` is float64, as ``np.asarray`` makes it); lists that NumPy cannot make an array of raise
    NumPy's error, prefixed with ``argument`` (where the list was: ``"numpy.add, input 1"``).

    >>> import dualgrad as dg
    >>> from dualgrad.numpy_dispatch import tracked_array_like
    >>> x = dg.tensor(1.5, requires_grad=True)
    >>> tracked_array_like([[x, 2.0], [3.0, 2 * x]])
    tensor([[1.5000, 2.0000],
            [3.0000, 3.0000]], grad_fn=<StackBackward0>)
    """
    if not isinstance(value, (list, tuple)) or not is_tracked(value):
        return value
    try:
        dtype = np.asarray(_layout(value)).dtype
    except ValueError as error:
        raise ValueError(f"{argument}: {error}") from None
    if dtype.kind not in "biufc":
        raise TypeError(f"{argument}: a list holding tracked Tensors makes an array of dtype {dtype}, which has "
                        "no derivative")
    return _stacked(value, dtype)


def _layout(value: Any) -> Any:
    """``value`` with each Tensor replaced by a read-only array of its shape and dtype (no copy of its data)."""
    if isinstance(value, Tensor):
        return np.broadcast_to(np.zeros((), value.dtype), value.shape)
    if isinstance(value, (list, tuple)):
        return [_layout(v) for v in value]
    return value


def _stacked(value: Any, dtype: np.dtype) -> Tensor:
    """The Tensor of ``value`` (a Tensor, a list holding Tensors or constants) in ``dtype``, in the graph."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else _resolve("to_dtype")(value, dtype)
    if isinstance(value, (list, tuple)) and holds_tensor(value):
        return _resolve("stack")([_stacked(v, dtype) for v in value])
    return _wrap(np.asarray(value, dtype))


def is_tracked(value: Any) -> bool:
    """True for a Tensor that autograd sees: requires grad, has tangents, or is batched."""
    if isinstance(value, Tensor):
        return value._requires_grad or bool(value._fw) or type(value) is not Tensor
    if isinstance(value, (list, tuple)):
        return any(is_tracked(v) for v in value)
    if isinstance(value, dict):
        return any(is_tracked(v) for v in value.values())
    return False


def _resolve(name: str) -> Callable | None:
    """``dualgrad.<name>`` (dotted names reach submodules such as ``linalg``), or None."""
    fn = _RESOLVED.get(name)
    if fn is not None:
        return fn
    import dualgrad

    head, *rest = name.split(".")
    fn = getattr(dualgrad, head, None)
    if fn is None and rest:
        try:
            fn = importlib.import_module(f"dualgrad.{head}")
        except ModuleNotFoundError:
            return None
    for part in rest:
        fn = getattr(fn, part, None)
    if fn is not None:
        _RESOLVED[name] = fn
    return fn


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
        return type(value)(*(_wrap_result(v) for v in value)) if hasattr(value, "_fields") \
            else tuple(_wrap_result(v) for v in value)
    if isinstance(value, list):
        return [_wrap_result(v) for v in value]
    return value


def no_rule(name: str, argument: str = "") -> TypeError:
    """The error for a tracked Tensor reaching NumPy function ``numpy.<name>`` without a rule
    (``argument``, if given, names where the Tensor is)."""
    where = f" in {argument}" if argument else ""
    return TypeError(
        f"dualgrad has no derivative rule for numpy.{name}; it was called with a tracked Tensor{where} "
        "(requires_grad, a forward-mode tangent or a vmap batch). Use a dualgrad function, or "
        "detach the input if no derivative is wanted."
    )


def tracked_argument(func: Callable, args: tuple, kwargs: dict) -> str:
    """The name of the first argument of ``func`` holding a tracked Tensor (``"argument 'a' (position 1)"``)."""
    for position, value in enumerate(args):
        if is_tracked(value):
            return argument_name(func, position)
    return next((f"argument '{key}'" for key, value in kwargs.items() if is_tracked(value)), "")


def argument_name(func: Callable, position: int) -> str:
    """``"argument 'a' (position 1)"``: positional argument ``position`` (from 0) of ``func``."""
    names = _POSITIONAL_NAMES.get(func)
    if names is None:
        try:
            parameters = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            parameters = ()
        names = _POSITIONAL_NAMES[func] = [p.name for p in parameters if p.kind in _POSITIONAL]
    name = f"'{names[position]}' " if position < len(names) else ""
    return f"argument {name}(position {position + 1})"


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_POSITIONAL_NAMES: dict[Callable, list] = {}


def run_untracked(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """NumPy's ``fn`` on the data of its arguments; array results come back as Tensors."""
    return _wrap_result(fn(*_raw(args), **{k: _raw(v) for k, v in kwargs.items()}))


def numpy_name(func: Callable) -> str:
    """``sum``, ``linalg.solve``, ``fft.rfft``: a NumPy function's name below ``numpy.``."""
    module = (getattr(func, "__module__", None) or "numpy").removeprefix("numpy").lstrip(".")
    return f"{module}.{func.__name__}" if module else func.__name__


# -- ufuncs ---------------------------------------------------------------------------------------------
def _ufunc_fn(ufunc: np.ufunc) -> Callable | None:
    fn = _UFUNC_FNS.get(ufunc)
    if fn is None:
        entry = UFUNCS.get(ufunc)
        fn = _resolve(entry) if isinstance(entry, str) else entry
        if fn is not None:
            _UFUNC_FNS[ufunc] = fn
    return fn


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: route a ufunc call to the op table.

    NotImplemented (NumPy then asks the other type) if an input or ``out`` is of a type that
    overrides ``__array_ufunc__`` and is not a Tensor (NEP 13). Inputs that are lists or tuples
    holding tracked Tensors become tracked Tensors (``tracked_array_like``).
    """
    if any(overrides_ufuncs(x) for x in (*inputs, *(kwargs.get("out") or ()))):
        return NotImplemented
    inputs = tuple(_array_input(x, ufunc, i) for i, x in enumerate(inputs, 1))
    if method == "__call__" and not kwargs:
        fn = _UFUNC_FNS.get(ufunc) or _ufunc_fn(ufunc)
        if fn is not None:
            return fn(*inputs)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    dtype = kwargs.pop("dtype", None)
    for key, neutral in _NEUTRAL_KEYWORDS.items():
        if key in kwargs and kwargs[key] == neutral:
            del kwargs[key]
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    run = _METHODS.get(method)
    result = None if run is None else run(ufunc, inputs, kwargs, where, dtype)
    if result is NotImplemented or run is None:
        return _ufunc_fallback(ufunc, method, name, inputs, kwargs, out, where, dtype)
    if method == "__call__" and where is not True:
        kept = 0.0 if out is None or out[0] is None else out[0]
        result = _resolve("where")(where, result, kept.clone() if isinstance(kept, Tensor) else kept)
    if out is not None:
        return write_out(name, out, result)
    return result


def _array_input(x: Any, ufunc: np.ufunc, position: int) -> Any:
    """A ufunc's input: a list or tuple holding Tensors as a Tensor (tracked if they are), else ``x``."""
    if not isinstance(x, (list, tuple)) or not holds_tensor(x):
        return x
    return tracked_array_like(x, f"numpy.{ufunc.__name__}, input {position}") if is_tracked(x) \
        else _wrap(np.asarray(x))


def _cast(inputs: tuple, dtype: Any) -> tuple:
    if dtype is None:
        return inputs
    to_dtype = _resolve("to_dtype")
    return tuple(to_dtype(x, dtype) if isinstance(x, Tensor) else np.asarray(x, dtype=dtype) for x in inputs)


def _call(ufunc: np.ufunc, inputs: tuple, kwargs: dict, where: Any, dtype: Any) -> Any:
    fn = _ufunc_fn(ufunc)
    if fn is None or not set(kwargs) <= UFUNC_KEYWORDS.get(ufunc, set()):
        return NotImplemented
    return fn(*_cast(inputs, dtype), **kwargs)


def _reduce(ufunc: np.ufunc, inputs: tuple, kwargs: dict, where: Any, dtype: Any) -> Any:
    name = REDUCTIONS.get(ufunc)
    axis = kwargs.pop("axis", 0)
    keepdims = kwargs.pop("keepdims", False)
    initial = kwargs.pop("initial", np._NoValue)
    if name is None or kwargs or len(inputs) != 1:
        return NotImplemented
    (x,) = _cast(inputs, dtype)
    if where is not True:
        fill = ufunc.identity if initial is np._NoValue else initial
        if fill is None:
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, "
                             "so to use a where mask one has to specify 'initial'")
        x = _resolve("where")(where, x, fill)
    result = _resolve(name)(x, axis=axis, keepdims=keepdims)
    if initial is not np._NoValue:
        combine = _COMBINE.get(ufunc)
        if combine is None:
            return NotImplemented
        result = _resolve(combine)(result, initial)
    return result


def _accumulate(ufunc: np.ufunc, inputs: tuple, kwargs: dict, where: Any, dtype: Any) -> Any:
    name = ACCUMULATIONS.get(ufunc)
    axis = kwargs.pop("axis", 0)
    if name is None or kwargs or where is not True:
        return NotImplemented
    (x,) = _cast(inputs, dtype)
    return (_resolve(name) if isinstance(name, str) else name)(x, axis=axis)


def _outer(ufunc: np.ufunc, inputs: tuple, kwargs: dict, where: Any, dtype: Any) -> Any:
    """``ufunc.outer(a, b)``: the ufunc of ``a`` given ``b.ndim`` trailing axes of length 1, and ``b``."""
    if len(inputs) != 2 or ufunc.nin != 2 or where is not True:
        return NotImplemented
    a, b = (_tensor(x) for x in inputs)
    a = _resolve("reshape")(a, a.shape + (1,) * b.ndim)
    return _call(ufunc, (a, b), kwargs, where, dtype)


_METHODS = {"__call__": _call, "reduce": _reduce, "accumulate": _accumulate, "outer": _outer}


def _ufunc_fallback(ufunc: np.ufunc, method: str, name: str, inputs: tuple, kwargs: dict, out: Any,
                    where: Any, dtype: Any) -> Any:
    """NumPy itself on the data, when nothing is tracked (or the ufunc has no derivative)."""
    if ufunc not in RAW_UFUNCS and (is_tracked(inputs) or is_tracked(where)):
        position = next((i for i, x in enumerate(inputs, 1) if is_tracked(x)), None)
        raise no_rule(name, "argument 'where'" if position is None else f"input {position}")
    extra = dict(kwargs)
    if where is not True:
        extra["where"] = _raw(where)
    if dtype is not None:
        extra["dtype"] = dtype
    if out is None:
        return _wrap_result(getattr(ufunc, method)(*_raw(inputs), **extra))
    scratch = tuple(o._data.copy() if isinstance(o, Tensor) else o for o in out)
    result = getattr(ufunc, method)(*_raw(inputs), out=scratch, **extra)
    results = result if isinstance(result, tuple) else (result,)
    return write_out(name, out, tuple(_wrap(r) if isinstance(r, np.ndarray) else r for r in results))


def write_out(name: str, out: Any, result: Any) -> Any:
    """Write ``result`` into NumPy's ``out`` (a Tensor in place with ``copy_``, or an ndarray).

    Returns ``out`` (its only entry for a single output), as NumPy does.
    """
    targets = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    written = []
    for target, value in zip(targets, results, strict=True):
        if target is None:
            written.append(value)
        elif isinstance(target, Tensor):
            written.append(target.copy_(value))
        else:
            if is_tracked(value):
                raise TypeError(
                    f"numpy.{name}: out= is an ndarray but the result is tracked by autograd; writing it "
                    "there would detach it. Pass a Tensor as out=, or detach the inputs."
                )
            np.copyto(target, _raw(value))
            written.append(target)
    return written[0] if len(written) == 1 else tuple(written)


# -- functions ------------------------------------------------------------------------------------------
def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: route a NumPy function call to the op table.

    NotImplemented if ``types`` holds a type that is neither ``ndarray`` nor a Tensor (NEP 18).
    Array-like arguments that are lists or tuples holding tracked Tensors become tracked Tensors
    (for a parameter taking a sequence of arrays, such as ``np.concatenate``'s, each of its
    entries does); with no rule for ``func``, a tracked argument is the "no derivative rule"
    TypeError naming it.
    """
    if not _OWN_TYPES.issuperset(types) and any(cls is not np.ndarray and not issubclass(cls, Tensor)
                                                 for cls in types):
        return NotImplemented
    target = FUNCTIONS.get(func)
    if target is not None:
        sequences = not _SEQUENCES.isdisjoint(map(type, args)) or (
            kwargs and not _SEQUENCES.isdisjoint(map(type, kwargs.values())))
        if sequences and func not in STRUCTURED_FUNCTIONS:
            args, kwargs = _tracked_arguments(func, args, kwargs)
        return target(*args, **kwargs)
    if func not in RAW_FUNCTIONS and (is_tracked(args) or is_tracked(kwargs)):
        raise no_rule(numpy_name(func), tracked_argument(func, args, kwargs))
    return run_untracked(func, args, kwargs)


# NumPy functions whose parameter (by name, and position) takes a sequence of arrays: its entries are array-likes.
SEQUENCE_PARAMETERS: dict[Callable, tuple] = {
    np.concatenate: (("arrays", 0),), np.concat: (("arrays", 0),), np.stack: (("arrays", 0),),
    np.vstack: (("tup", 0),), np.hstack: (("tup", 0),), np.dstack: (("tup", 0),), np.column_stack: (("tup", 0),),
    np.linalg.multi_dot: (("arrays", 0),), np.choose: (("choices", 1),),
    np.select: (("condlist", 0), ("choicelist", 1)), np.piecewise: (("condlist", 1), ("funclist", 2)),
}
# NumPy functions whose nested lists are structure, not arrays (np.block's blocks).
STRUCTURED_FUNCTIONS = {np.block}
_SEQUENCES = frozenset({list, tuple})
_OWN_TYPES = frozenset({Tensor, np.ndarray})


def _tracked_arguments(func: Callable, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` with their lists and tuples holding tracked Tensors made tracked Tensors."""
    sequences = SEQUENCE_PARAMETERS.get(func, ())
    positions = {position for _, position in sequences}
    names = {name for name, _ in sequences}
    name = numpy_name(func)
    args = tuple(_entries_tracked(a, f"numpy.{name}, {argument_name(func, i)}") if i in positions
                 else tracked_array_like(a, f"numpy.{name}, {argument_name(func, i)}") if type(a) in _SEQUENCES
                 else a for i, a in enumerate(args))
    kwargs = {k: _entries_tracked(v, f"numpy.{name}, argument '{k}'") if k in names
              else tracked_array_like(v, f"numpy.{name}, argument '{k}'") for k, v in kwargs.items()}
    return args, kwargs


def _entries_tracked(sequence: Any, argument: str) -> Any:
    if not isinstance(sequence, (list, tuple)):
        return sequence
    return type(sequence)(tracked_array_like(entry, f"{argument}, entry {i}") for i, entry in enumerate(sequence))


_TORCH_KEYWORDS = {"axis": "dim", "axes": "dim", "keepdims": "keepdim"}
_PARAMETERS: dict[Callable, set] = {}


def _accepted(fn: Callable) -> set:
    params = _PARAMETERS.get(fn)
    if params is None:
        try:
            params = set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            params = set()
        _PARAMETERS[fn] = params
    return params


def routed(name: str, numpy_fn: Callable) -> Callable:
    """An adaptor calling ``dualgrad.<name>`` (resolved per call until it exists).

    NumPy's keyword names are kept when the dualgrad function takes them, else
    renamed to torch's (``axis``/``axes`` -> ``dim``, ``keepdims`` -> ``keepdim``).
    While ``dualgrad.<name>`` does not exist, untracked calls run NumPy and tracked
    ones raise the "no derivative rule" TypeError.
    """

    def adaptor(*args: Any, **kwargs: Any) -> Any:
        fn = _resolve(name)
        if fn is None:
            if is_tracked(args) or is_tracked(kwargs):
                raise no_rule(numpy_name(numpy_fn))
            return run_untracked(numpy_fn, args, kwargs)
        accepted = _accepted(fn)
        renamed = {(k if k in accepted or _TORCH_KEYWORDS.get(k) not in accepted else _TORCH_KEYWORDS[k]): v
                   for k, v in kwargs.items()}
        return fn(*args, **renamed)

    adaptor.__name__ = adaptor.__qualname__ = numpy_fn.__name__
    return adaptor


def install() -> None:
    """Give ``Tensor`` its NumPy protocol methods (done when this module is imported; the adaptors of
    ``dualgrad/_numpy_*.py`` fill the function table when they are imported).

    >>> import numpy as np, dualgrad as dg
    >>> np.ones(2) @ dg.tensor([1.0, 2.0], requires_grad=True)
    tensor(3., grad_fn=<DotBackward0>)
    """
    def __array_ufunc__(self: Tensor, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs and _PLAIN_INPUTS.issuperset(map(type, inputs)):
            fn = _UFUNC_FNS.get(ufunc)  # the common case, kept short
            if fn is not None:
                return fn(*inputs)
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self: Tensor, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        return array_function(func, types, args, kwargs)

    Tensor.__array_ufunc__ = __array_ufunc__
    Tensor.__array_function__ = __array_function__


install()  # (the adaptors of dualgrad/_numpy_*.py register into FUNCTIONS when they are imported)
