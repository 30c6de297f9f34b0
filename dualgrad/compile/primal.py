"""The primal computation of one op call, as a function of raw values only.

Dispatch (``ops/dispatch.py::_apply``) picks, for each call, how to run an op's NumPy
implementation: type promotion or not, NumPy's scalar arithmetic for 0-d floats,
``out=...`` for ufuncs, the default float result of an integer elementwise op. Every
choice depends on argument *types, dtypes and ranks* only, which a trace fixes (its
guards check the input dtypes and shapes). ``primal_callable`` makes the same choices
once, at trace time, and returns a function of the raw arguments that repeats them.

The tracer checks each such function against dispatch's own result (bit for bit) when
it records a step, so a change in dispatch that this module does not follow makes the
trace unsupported (eager) instead of wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.dtypes import FLOATING_DTYPES, REAL_FLOATING_DTYPES
from ..ops.promotion import default_float_result, promote
from ..tensor import Tensor

_ndarray = np.ndarray


def _needs_promotion(a: Any, b: Any) -> bool:
    """Whether dispatch calls ``promote`` for the two arguments ``a``, ``b`` (Tensors or constants)."""
    if isinstance(a, Tensor):
        a = a._data
        if type(b) is float:
            return a.dtype not in FLOATING_DTYPES
        if isinstance(b, Tensor):
            b = b._data
            return b.dtype is not a.dtype or a.dtype not in FLOATING_DTYPES
        return type(b) is not int or a.dtype not in FLOATING_DTYPES
    b = b._data if isinstance(b, Tensor) else b
    return (type(b) is not _ndarray or b.dtype not in FLOATING_DTYPES
            or type(a) is not float and type(a) is not int)


def _as_array(data: Any) -> np.ndarray:
    return data if type(data) is _ndarray else np.asarray(data)


def primal_callable(op: Any, args: tuple, params: dict) -> tuple[Callable, str, str, dict]:
    """``(f, how, expr, objects)``: ``f(*raw_args)`` computes the op's output array(s) as dispatch
    does for these argument kinds; ``how`` names the path taken; ``expr`` is the same call as
    Python source (``{0}``, ``{1}``... the arguments, other names from ``objects``), which the
    replay inlines."""
    impl = op.impl
    raw = [a._data if isinstance(a, Tensor) else a for a in args]
    n = len(args)
    objects: dict = {"impl": impl}
    if params:
        objects["params"] = params
    if n == 1:
        floated = (type(raw[0]) is _ndarray and raw[0].dtype not in FLOATING_DTYPES
                   and op.family == "elementwise" and not params)
        if op.ufunc_out and not params:
            def call(a: Any) -> Any:
                return impl(a, out=...)
            how, expr = "out=...", "{impl}({0}, out=...)"
        else:
            def call(a: Any) -> Any:
                return impl(a, **params)
            how, expr = "impl", "{impl}({0}" + (", **{params})" if params else ")")
        if floated:
            plain = call

            def call(a: Any) -> Any:  # noqa: F811 - the same call, then dispatch's default float result
                return default_float_result(plain(a))
            how += ", float result"
            expr = "{floated}(" + expr + ")"
            objects["floated"] = default_float_result
        return call, how, expr, objects
    if n == 2:
        promoted = _needs_promotion(args[0], args[1])
        a, b = promote(op, (raw[0], raw[1])) if promoted else (raw[0], raw[1])
        scalar = (op.scalar_impl is not None and type(a) is _ndarray and not a.ndim
                  and a.dtype in REAL_FLOATING_DTYPES and not params
                  and (type(b) is float or type(b) is int
                       or type(b) is _ndarray and not b.ndim and b.dtype is a.dtype))
        if scalar:
            scalar_impl = op.scalar_impl
            objects["scalar"] = scalar_impl
            if type(b) is _ndarray:
                def inner(a: Any, b: Any) -> Any:
                    return scalar_impl(a[()], b[()])
                expr = "{scalar}({0}[()], {1}[()])"
            else:
                def inner(a: Any, b: Any) -> Any:
                    return scalar_impl(a[()], b)
                expr = "{scalar}({0}[()], {1})"
            how = "scalar"
        elif op.ufunc_out and not params:
            def inner(a: Any, b: Any) -> Any:
                return impl(a, b, out=...)
            how, expr = "out=...", "{impl}({0}, {1}, out=...)"
        else:
            def inner(a: Any, b: Any) -> Any:
                return impl(a, b, **params)
            how, expr = "impl", "{impl}({0}, {1}" + (", **{params})" if params else ")")
        if not promoted:
            return inner, how, expr, objects

        def call(a: Any, b: Any) -> Any:
            return inner(*promote(op, (a, b)))
        return call, how + ", promoted", "{call}({0}, {1})", {"call": call}
    if op.promotion is None:
        def call(*arrays: Any) -> Any:
            return impl(*arrays, **params)
        return call, "impl", "{impl}(" + ", ".join(f"{{{i}}}" for i in range(n)) + (
            ", **{params})" if params else ")"), objects

    def call(*arrays: Any) -> Any:
        return impl(*promote(op, list(arrays)), **params)
    return call, "impl, promoted", "{call}(" + ", ".join(f"{{{i}}}" for i in range(n)) + ")", {"call": call}


def as_outputs(op: Any, data: Any) -> tuple:
    """Dispatch's arrays of a raw result: a tuple of one array, or of each output's array."""
    if op.multi_output:
        return tuple(_as_array(d) for d in data)
    return (_as_array(data),)
