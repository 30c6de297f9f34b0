"""Sample inputs for every op in the table, as Hypothesis strategies.

``SAMPLES[op_name]`` is a strategy drawing a ``Sample``: a callable taking
Tensors (it calls the op through its public function) and the float64 arrays
to call it with, all inside the op's domain and away from kinks, so that
central differences are accurate. The table tests in ``test_op_table*.py``
walk ``dualgrad.ops.ALL_OPS`` and fail for an op without samples.

Adding an op: add its entry here with ``@sample("op_name")``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad.ops import ALL_OPS
from dualgrad.ops.dispatch import apply
from dualgrad.ops.elementwise.core import imag_part, real_part, sigmoid_backward, tanh_backward

SAMPLES: dict[str, st.SearchStrategy] = {}
# Ops that exist only as internal helpers of other ops' rules and are covered
# through them (e.g. the transpose of getitem); name -> the op whose tests cover it.
COVERED_BY: dict[str, str] = {}


@dataclass(frozen=True)
class Sample:
    call: Callable[..., Any]
    arrays: tuple

    def __repr__(self) -> str:
        shapes = [np.shape(a) for a in self.arrays]
        return f"Sample({getattr(self.call, '__name__', self.call)}, shapes={shapes})"


def sample(name: str) -> Callable:
    """Register a ``@st.composite`` drawing function as the samples of op ``name``."""

    def register(fn: Callable) -> Callable:
        SAMPLES[name] = st.composite(fn)()
        return fn

    return register


# -- strategies for arrays -------------------------------------------------------------
def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def array(draw: Any, shape: tuple, lo: float = -2.0, hi: float = 2.0, away_from: float | None = None,
          gap: float = 0.1) -> np.ndarray:
    """A float64 array in [lo, hi]; with ``away_from``, at least ``gap`` from that point."""
    values = draw(hnp.arrays(np.float64, shape, elements=st.floats(lo, hi, allow_subnormal=False)))
    if away_from is not None:
        close = np.abs(values - away_from) < gap
        values = np.where(close, away_from + np.where(values >= away_from, gap, -gap), values)
    return values


def distinct(draw: Any, shape: tuple, lo: float = -2.0, hi: float = 2.0, gap: float = 0.05) -> np.ndarray:
    """An array whose values are pairwise at least ``gap`` apart (no ties for max/sort)."""
    n = int(np.prod(shape, dtype=np.int64))
    perm = draw(st.permutations(range(n))) if n else []
    values = lo + (np.asarray(perm, dtype=np.float64) + 0.5) * min(gap * 4, (hi - lo) / max(n, 1))
    return values.reshape(shape)


def broadcastable(draw: Any, n: int = 2) -> list[tuple]:
    """``n`` mutually broadcastable shapes."""
    result = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, max_side=3))
    return list(result.input_shapes)


# -- elementwise ops ---------------------------------------------------------------------------
def _unary(name: str, fn: Callable, lo: float = -2.0, hi: float = 2.0, away_from: float | None = None) -> None:
    def draw_sample(draw: Any) -> Sample:
        return Sample(fn, (array(draw, draw(shapes()), lo, hi, away_from),))

    SAMPLES[name] = st.composite(draw_sample)()


def _binary(name: str, fn: Callable, lo: float = -2.0, hi: float = 2.0, lo2: float | None = None,
            hi2: float | None = None) -> None:
    def draw_sample(draw: Any) -> Sample:
        s1, s2 = broadcastable(draw)
        x = array(draw, s1, lo, hi)
        y = array(draw, s2, lo if lo2 is None else lo2, hi if hi2 is None else hi2)
        return Sample(fn, (x, y))

    SAMPLES[name] = st.composite(draw_sample)()


_binary("add", dg.add)
_binary("sub", dg.sub)
_binary("mul", dg.mul)
_binary("div", dg.div, lo2=0.5, hi2=2.0)
_binary("pow", dg.pow, lo=0.5, hi=2.0)
_binary("atan2", dg.atan2, lo=0.2, hi=2.0)
_binary("hypot", dg.hypot, lo=0.2, hi=2.0)
_binary("logaddexp", dg.logaddexp)
_binary("remainder", dg.remainder, lo=0.1, hi=0.9, lo2=1.0, hi2=1.5)
_binary("add_scaled", lambda x, y: dg.add(x, y, alpha=-1.5))
_binary("sub_scaled", lambda x, y: dg.sub(x, y, alpha=2.5))
# (the ops of tanh's and sigmoid's rules: a gradient and an output of the function)
_binary("tanh_backward", tanh_backward, lo2=-1.0, hi2=1.0)
_binary("sigmoid_backward", sigmoid_backward, lo2=0.0, hi2=1.0)


def _ternary(name: str, fn: Callable, lo3: float = -2.0, hi3: float = 2.0) -> None:
    """Samples of a three-operand elementwise op (mutually broadcastable, the last in [lo3, hi3])."""
    def draw_sample(draw: Any) -> Sample:
        s1, s2, s3 = broadcastable(draw, 3)
        return Sample(fn, (array(draw, s1), array(draw, s2), array(draw, s3, lo3, hi3)))

    SAMPLES[name] = st.composite(draw_sample)()


_ternary("lerp", dg.lerp, -1.0, 2.0)  # (weights on both sides of 1/2, where the formula changes)
_ternary("addcmul", lambda x, a, b: dg.addcmul(x, a, b, value=-0.5))
_ternary("addcdiv", lambda x, a, b: dg.addcdiv(x, a, b, value=1.5), 0.5, 2.0)
_unary("neg", dg.neg)
_unary("reciprocal", dg.reciprocal, 0.3, 2.0)
_unary("square", dg.square)
_unary("sqrt", dg.sqrt, 0.2, 3.0)
_unary("rsqrt", dg.rsqrt, 0.2, 3.0)
_unary("abs", dg.abs, away_from=0.0)
_unary("exp", dg.exp)
_unary("expm1", dg.expm1)
_unary("log", dg.log, 0.2, 3.0)
_unary("log1p", dg.log1p, -0.5, 2.0)
_unary("log2", dg.log2, 0.2, 3.0)
_unary("log10", dg.log10, 0.2, 3.0)
_unary("sin", dg.sin)
_unary("cos", dg.cos)
_unary("tan", dg.tan, -1.2, 1.2)
_unary("asin", dg.asin, -0.8, 0.8)
_unary("acos", dg.acos, -0.8, 0.8)
_unary("atan", dg.atan)
_unary("sinh", dg.sinh)
_unary("cosh", dg.cosh)
_unary("tanh", dg.tanh)
_unary("frac", dg.frac, 0.1, 0.9)  # (between integers: frac jumps at them)
_unary("nan_to_num", lambda x: dg.nan_to_num(x, posinf=5.0))  # (finite samples: a replaced value has gradient 0)
_unary("asinh", dg.asinh)
_unary("acosh", dg.acosh, 1.2, 3.0)
_unary("atanh", dg.atanh, -0.8, 0.8)
_unary("sigmoid", dg.sigmoid)
_unary("softplus", dg.softplus)
_unary("relu", dg.relu, away_from=0.0)
# (the ops of NumPy's np.real / np.imag on tensors; dg.real and dg.imag are views through
# view_as_real and select, whose samples are theirs)
_unary("real", lambda x: real_part(x * (1 + 2j)))
_unary("imag", lambda x: imag_part(x.to("complex128") * (1 + 2j)))
# (conj returns a real input itself, so the op runs on a complex intermediate; the product
# with a complex factor makes the sign of the imaginary part visible in the real output)
_unary("conj", lambda x: (dg.conj(x * (1 + 2j)) * (x + 1j)).real)
_unary("angle", lambda x: dg.angle(x * (1 + 1j) + 0.5))
_unary("clone", dg.clone)
_unary("to", lambda x: dg.to_dtype(x, "complex128").real * 2)


@sample("clamp")
def _clamp(draw: Any) -> Sample:
    x = array(draw, draw(shapes()), away_from=0.5, gap=0.1)
    x = np.where(np.abs(x + 0.5) < 0.1, x + 0.2, x)
    return Sample(lambda t: dg.clamp(t, -0.5, 0.5), (x,))


@sample("where")
def _where(draw: Any) -> Sample:
    s1, s2 = broadcastable(draw)
    cond = draw(hnp.arrays(np.bool_, np.broadcast_shapes(s1, s2)))
    return Sample(lambda x, y: dg.where(dg.tensor(cond), x, y), (array(draw, s1), array(draw, s2)))


@sample("maximum")
def _maximum(draw: Any) -> Sample:
    s = draw(shapes())
    x = distinct(draw, s)
    return Sample(lambda a, b: dg.maximum(a, b), (x, x[::-1].copy() if x.ndim else x + 1))


@sample("minimum")
def _minimum(draw: Any) -> Sample:
    s = draw(shapes())
    x = distinct(draw, s)
    return Sample(lambda a, b: dg.minimum(a, b), (x, x[::-1].copy() if x.ndim else x + 1))


# -- reductions, shape, indexing, linalg -------------------------------------------------
@sample("sum")
def _sum(draw: Any) -> Sample:
    x = array(draw, draw(shapes()))
    axis = draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    keep = draw(st.booleans())
    return Sample(lambda t: dg.sum(t, dim=axis, keepdim=keep), (x,))


@sample("mean")
def _mean(draw: Any) -> Sample:
    x = array(draw, draw(shapes()))
    axis = draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    return Sample(lambda t: dg.mean(t, axis=axis, keepdims=True), (x,))


@sample("reshape")
def _reshape(draw: Any) -> Sample:
    x = array(draw, draw(shapes()))
    return Sample(lambda t: dg.reshape(t, (-1,)), (x,))


@sample("expand")
def _expand(draw: Any) -> Sample:
    x = array(draw, draw(shapes(max_dims=2)))
    return Sample(lambda t: dg.expand(t, (2,) + tuple(t.shape)), (x,))


@sample("permute")
def _permute(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    axes = tuple(draw(st.permutations(range(x.ndim))))
    return Sample(lambda t: dg.permute(t, axes), (x,))


@sample("getitem")
def _getitem(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    index = draw(st.sampled_from([
        (slice(None, None, -1),), (0,), (Ellipsis, None),
        (np.array([0, 0, -1]),), (x > 0,),
    ]))
    return Sample(lambda t: t[index], (x,))


COVERED_BY["index_add_into_zeros"] = "getitem"


@sample("matmul")
def _matmul(draw: Any) -> Sample:
    n, k, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    left = draw(st.sampled_from([(k,), batch + (n, k)]))
    right = draw(st.sampled_from([(k,), (k, m), batch + (k, m)]))
    return Sample(dg.matmul, (array(draw, left), array(draw, right)))


@sample("vector_products")
def _vector_products(draw: Any) -> Sample:
    """Vectors along the last axis, leading axes broadcast (one side may have none)."""
    k = draw(st.integers(1, 3))
    left = draw(st.sampled_from([(k,), (2, k), (3, 2, k)]))
    right = draw(st.sampled_from([(k,), (2, k), (1, k)]))
    return Sample(lambda x, y: apply(ALL_OPS["vector_products"], x, y), (array(draw, left), array(draw, right)))


# -- indexing and linear algebra: gather, einsum ----------------------------------------
@sample("gather")
def _gather(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    dim = draw(st.integers(0, x.ndim - 1))
    index_shape = tuple(draw(st.integers(1, n)) if d != dim else draw(st.integers(1, 4))
                        for d, n in enumerate(x.shape))
    index = draw(hnp.arrays(np.int64, index_shape, elements=st.integers(-x.shape[dim], x.shape[dim] - 1)))
    return Sample(lambda t: dg.gather(t, dim, dg.tensor(index)), (x,))


COVERED_BY["scatter_add_into_zeros"] = "gather"

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("i,i", [(3,), (3,)]), ("...ij,jk", [(2, 1, 2, 3), (3, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("iij->ji", [(2, 2, 3)]), ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("i,j->ij", [(2,), (3,)]), ("ij,j->i", [(2, 3), (1,)]),
]


@sample("einsum")
def _einsum(draw: Any) -> Sample:
    equation, operand_shapes = draw(st.sampled_from(EINSUM_CASES))
    return Sample(lambda *ts: dg.einsum(equation, *ts), tuple(array(draw, s) for s in operand_shapes))


# -- reductions and shape ops (prod ... narrow) --------------------------------------------
def _axis(draw: Any, ndim: int, allow_none: bool = True) -> Any:
    """A dim of an ``ndim``-d array (negative ones included), or None."""
    choices = ([None] if allow_none else []) + list(range(-ndim, ndim))
    return draw(st.sampled_from(choices)) if choices else None


def _reduction_sample(name: str, fn: Callable, lo: float = -2.0, hi: float = 2.0, min_side: int = 1,
                      min_dims: int = 0, values: Callable | None = None) -> None:
    def draw_sample(draw: Any) -> Sample:
        shape = draw(shapes(min_dims=min_dims, min_side=min_side))
        x = values(draw, shape) if values else array(draw, shape, lo, hi)
        axis, keep = _axis(draw, x.ndim), draw(st.booleans())
        return Sample(lambda t: fn(t, axis, keep), (x,))

    SAMPLES[name] = st.composite(draw_sample)()


# Values in [-1, 1] keep products O(1), so central differences stay accurate.
_reduction_sample("prod", lambda t, d, k: dg.prod(t, dim=d, keepdim=k), lo=-1.0, hi=1.0)
_reduction_sample("amax", lambda t, d, k: dg.amax(t, dim=d, keepdim=k), values=distinct)
_reduction_sample("amin", lambda t, d, k: dg.amin(t, axis=d, keepdims=k), values=distinct)
_reduction_sample("var", lambda t, d, k: dg.var(t, d, keepdim=k, correction=0.5), min_side=2, min_dims=1)
_reduction_sample("std", lambda t, d, k: dg.std(t, d, keepdim=k), min_side=2, min_dims=1, values=distinct)
_reduction_sample("logsumexp", lambda t, d, k: dg.logsumexp(t, d, keepdim=k))


@sample("norm")
def _norm(draw: Any) -> Sample:
    shape = draw(shapes())
    signs = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([-1.0, 1.0])))
    x = distinct(draw, shape, lo=0.2, hi=2.0) * signs  # distinct magnitudes: no ties for p = +-inf
    p = draw(st.sampled_from([1, 2, 3, 0.5, float("inf"), float("-inf"), "fro"]))
    axis, keep = _axis(draw, x.ndim), draw(st.booleans())
    return Sample(lambda t: dg.norm(t, p, axis, keep), (x,))


def _along_axis_sample(name: str, fn: Callable, away_from: float | None = None) -> None:
    def draw_sample(draw: Any) -> Sample:
        x = array(draw, draw(shapes(min_dims=1)), away_from=away_from)
        axis = _axis(draw, x.ndim, allow_none=False)
        return Sample(lambda t: fn(t, axis), (x,))

    SAMPLES[name] = st.composite(draw_sample)()


_along_axis_sample("cumsum", dg.cumsum)
_along_axis_sample("cumprod", dg.cumprod, away_from=0.0)  # second order is exact away from zeros
_along_axis_sample("softmax", dg.softmax)
_along_axis_sample("log_softmax", dg.log_softmax)
_along_axis_sample("logcumsumexp", dg.logcumsumexp)

@sample("max")
def _max(draw: Any) -> Sample:
    x = distinct(draw, draw(shapes(min_dims=1)))
    axis, keep = _axis(draw, x.ndim, allow_none=False), draw(st.booleans())
    return Sample(lambda t: dg.max(t, axis, keep), (x,))


@sample("min")
def _min(draw: Any) -> Sample:
    x = distinct(draw, draw(shapes(min_dims=1)))
    axis = _axis(draw, x.ndim, allow_none=False)
    return Sample(lambda t: t.min(dim=axis).values, (x,))


@sample("median")
def _median(draw: Any) -> Sample:
    return Sample(dg.median, (distinct(draw, draw(shapes())),))


@sample("median_dim")
def _median_dim(draw: Any) -> Sample:
    x = distinct(draw, draw(shapes(min_dims=1)))
    axis, keep = _axis(draw, x.ndim, allow_none=False), draw(st.booleans())
    return Sample(lambda t: dg.median(t, axis, keep).values, (x,))


@sample("squeeze")
def _squeeze(draw: Any) -> Sample:
    shape = draw(shapes(max_dims=2))
    ones = draw(st.integers(1, 2))
    x = array(draw, (1,) * ones + shape)
    dim = draw(st.sampled_from([None, 0, (0, -1)] if x.ndim > 1 else [None, 0]))  # ((0, -1) of 1-d: a dim twice)
    return Sample(lambda t: dg.squeeze(t, dim), (x,))


@sample("unsqueeze")
def _unsqueeze(draw: Any) -> Sample:
    x = array(draw, draw(shapes()))
    dim = draw(st.integers(-x.ndim - 1, x.ndim))
    return Sample(lambda t: dg.unsqueeze(t, dim), (x,))


@sample("cat")
def _cat(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1))
    axis = _axis(draw, len(shape), allow_none=False)
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    xs = tuple(array(draw, shape[:axis % len(shape)] + (n,) + shape[axis % len(shape) + 1:]) for n in sizes)
    return Sample(lambda *ts: dg.cat(ts, axis), xs)


@sample("stack")
def _stack(draw: Any) -> Sample:
    shape = draw(shapes())
    xs = tuple(array(draw, shape) for _ in range(draw(st.integers(1, 3))))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return Sample(lambda *ts: dg.stack(ts, axis), xs)


@sample("split")
def _split(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    axis = _axis(draw, x.ndim, allow_none=False)
    n = x.shape[axis]
    sizes = draw(st.sampled_from([1, 2, n, [n], [0, n]] + ([[1, n - 1]] if n > 1 else [])))
    return Sample(lambda t: dg.split(t, sizes, axis), (x,))


@sample("unbind")
def _unbind(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    axis = _axis(draw, x.ndim, allow_none=False)
    return Sample(lambda t: t.chunk(2, axis) + dg.unbind(t, axis), (x,))


@sample("flip")
def _flip(draw: Any) -> Sample:
    x = array(draw, draw(shapes()))
    dims = draw(st.sampled_from([None, tuple(range(x.ndim))[:1], tuple(range(-x.ndim, 0))]))
    return Sample(lambda t: dg.flip(t, dims), (x,))


@sample("roll")
def _roll(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    shift = draw(st.integers(-5, 5))
    dims = draw(st.sampled_from([None, 0, -1]))
    return Sample(lambda t: dg.roll(t, shift, dims), (x,))


@sample("repeat")
def _repeat(draw: Any) -> Sample:
    x = array(draw, draw(shapes(max_dims=2)))
    reps = tuple(draw(st.lists(st.integers(1, 3), min_size=x.ndim, max_size=x.ndim + 1)))
    if draw(st.booleans()):
        return Sample(lambda t: t.repeat(*reps), (x,))
    return Sample(lambda t: dg.tile(t, reps[1:]), (x,))


@sample("repeat_interleave")
def _repeat_interleave(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    axis = _axis(draw, x.ndim)
    n = x.size if axis is None else x.shape[axis]
    repeats = draw(st.sampled_from([2, list(range(n))]))
    return Sample(lambda t: dg.repeat_interleave(t, repeats, axis), (x,))


@sample("diagonal")
def _diagonal(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=2)))
    d1, d2 = draw(st.permutations(range(x.ndim)))[:2]
    offset = draw(st.integers(-2, 2))
    return Sample(lambda t: dg.diagonal(t, offset, d1, d2), (x,))


@sample("diag_embed")
def _diag_embed(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1, max_dims=2)))
    offset = draw(st.integers(-2, 2))
    if x.ndim == 1 and draw(st.booleans()):
        return Sample(lambda t: dg.diag(t, offset), (x,))
    d1, d2 = draw(st.permutations(range(x.ndim + 1)))[:2]
    return Sample(lambda t: dg.diag_embed(t, offset, d1, d2), (x,))


@sample("triu")
def _triu(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=2)))
    k = draw(st.integers(-2, 2))
    return Sample(lambda t: dg.triu(t, k), (x,))


@sample("tril")
def _tril(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=2)))
    k = draw(st.integers(-2, 2))
    return Sample(lambda t: t.tril(k), (x,))


@sample("pad")
def _pad(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    amounts = []
    for n in x.shape[::-1][:draw(st.integers(1, x.ndim))]:
        lo = draw(st.integers(-(n // 2), 2))
        amounts += [lo, draw(st.integers(-(n - max(-lo, 0)) // 2, 2))]
    value = draw(st.sampled_from([None, 1.5]))
    return Sample(lambda t: dg.pad(t, amounts, value=value), (x,))


@sample("narrow")
def _narrow(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1)))
    axis = _axis(draw, x.ndim, allow_none=False)
    n = x.shape[axis]
    start = draw(st.integers(-n, n))
    length = draw(st.integers(0, n - (start % n if start < 0 else start)))
    return Sample(lambda t: dg.narrow(t, axis, start, length), (x,))


# -- in-place updates (dualgrad.ops.inplace): sampled through the in-place methods ----------
@sample("copy")
def _copy(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1, max_dims=2)))
    src = array(draw, x.shape[-1:])

    def call(t: dg.Tensor, s: dg.Tensor) -> dg.Tensor:
        # the target depends on both inputs, so that it is batched under vmap when either is
        return (t * s).copy_(s * s) * t

    return Sample(call, (x, src))


@sample("copy_slices")
def _copy_slices(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1, max_dims=2, min_side=2)))
    index = draw(st.sampled_from([(0,), (slice(1, None),), (Ellipsis, slice(None, None, -2))]))
    value = array(draw, x[index].shape)

    def call(t: dg.Tensor, v: dg.Tensor) -> dg.Tensor:
        base = t * t + v.sum()  # batched under vmap when either input is
        base[index] = v * t[index]
        return base

    return Sample(call, (x, value))


@sample("index_put")
def _index_put(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1, max_dims=2, min_side=2)))
    index = draw(st.sampled_from([(np.array([1, 0]),), (x > 0,)]))
    value = array(draw, x[index].shape)

    def call(t: dg.Tensor, v: dg.Tensor) -> dg.Tensor:
        base = t * t + v.sum()  # batched under vmap when either input is
        base[index] = v * t[index]
        return base

    return Sample(call, (x, value))


# Indexing with an index batched by vmap (the index Tensors are inputs of these ops): the
# sample maps over a batch of index rows inside the call, so the op runs under vmap.
BATCHED_INDEX_CASES = [
    lambda x, i: x[i], lambda x, i: x[:, i], lambda x, i: x[..., i, None], lambda x, i: x[i, i],
]


@sample("index_tensor")
def _index_tensor(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=2, max_dims=3, min_side=2)))
    n = min(x.shape)
    rows = draw(hnp.arrays(np.int64, (2, draw(st.integers(1, 3))), elements=st.integers(-n, n - 1)))
    case = draw(st.sampled_from(BATCHED_INDEX_CASES))
    return Sample(lambda t: dg.vmap(lambda i: case(t, i))(dg.tensor(rows)), (x,))


@sample("index_put_tensor")
def _index_put_tensor(draw: Any) -> Sample:
    x = array(draw, draw(shapes(min_dims=1, max_dims=2, min_side=2)))
    rows = np.stack([draw(st.permutations(range(x.shape[0])))[:2] for _ in range(2)])
    value = array(draw, (2,) + x.shape[1:])

    def put(t: dg.Tensor, v: dg.Tensor, i: dg.Tensor, scale: dg.Tensor) -> dg.Tensor:
        base = (t * t + v.sum()) * scale  # batched wherever t, v or the index rows are
        base[i] = v * t[i]
        return base

    return Sample(lambda t, v: dg.vmap(put, in_dims=(None, None, 0, 0))(t, v, dg.tensor(rows), dg.tensor([1.0, 2.0])),
                  (x, value))


# -- NumPy namespace extras (elementwise_extra.py, sorting.py) --------------------------------------
_unary("exp2", dg.exp2)
_unary("deg2rad", dg.deg2rad)
_unary("rad2deg", dg.rad2deg)
_binary("logaddexp2", dg.logaddexp2)


@sample("fmax")
def _fmax(draw: Any) -> Sample:
    s = draw(shapes())
    return Sample(dg.fmax, (distinct(draw, s), distinct(draw, s) + 0.01))  # (no ties)


@sample("fmin")
def _fmin(draw: Any) -> Sample:
    s = draw(shapes())
    return Sample(dg.fmin, (distinct(draw, s), distinct(draw, s) + 0.01))


_binary("xlogy", dg.xlogy, lo=0.2, hi=2.0)
_unary("sinc", dg.sinc, away_from=0.0)  # (at 0 the rule is exact to first order only, as torch's)
_unary("erf", dg.erf)
_unary("erfc", dg.erfc)
_unary("erfinv", dg.erfinv, -0.9, 0.9)
# zero-gradient ops, sampled away from their jumps
_unary("sign", dg.sign, away_from=0.0)
_unary("sgn", lambda x: (dg.sgn(x * (1 + 1j) + 0.5) * (1 - 2j)).real)
_unary("floor", dg.floor, 0.1, 0.9)
_unary("ceil", dg.ceil, 0.1, 0.9)
_unary("trunc", dg.trunc, 0.1, 0.9)
_unary("round", lambda x: dg.round(x, decimals=1), 0.11, 0.14)
_binary("floor_divide", dg.floor_divide, lo=0.1, hi=0.9, lo2=1.0, hi2=1.5)
_binary("div_trunc", lambda x, y: dg.div(x, y, rounding_mode="trunc"), lo=0.1, hi=0.9, lo2=1.0, hi2=1.5)
_binary("fmod", dg.fmod, lo=0.1, hi=0.9, lo2=1.0, hi2=1.5)
_binary("nextafter", dg.nextafter, lo=0.1, hi=0.9, lo2=1.0, hi2=1.5)
COVERED_BY["nonzero"] = "getitem"  # not differentiable; its vmap refusal is tested in test_indexing.py
COVERED_BY["argsort"] = "gather"  # not differentiable; its vmap rule is tested in test_numpy_dispatch.py
COVERED_BY["cummax_indices"] = "gather"  # not differentiable; vmap of cummax is tested in test_torch_op_parity.py
COVERED_BY["cummin_indices"] = "gather"


@sample("cbrt")
def _cbrt(draw: Any) -> Sample:
    return Sample(dg.cbrt, (array(draw, draw(shapes()), away_from=0.0, gap=0.3),))


@sample("copysign")
def _copysign(draw: Any) -> Sample:
    s1, s2 = broadcastable(draw)
    return Sample(dg.copysign, (array(draw, s1, away_from=0.0), array(draw, s2, away_from=0.0)))


@sample("heaviside")
def _heaviside(draw: Any) -> Sample:
    s1, s2 = broadcastable(draw)
    return Sample(lambda x, h: dg.heaviside(x, h) * x, (array(draw, s1, away_from=0.0), array(draw, s2)))


# -- np.linalg decompositions and np.fft (dualgrad.ops.linalg.decompositions, dualgrad.ops.fft) -----------
def _stack_shape(draw: Any, max_dims: int = 1) -> tuple:
    return draw(shapes(min_dims=0, max_dims=max_dims, max_side=2))


def _well_conditioned(draw: Any, shape: tuple) -> np.ndarray:
    """``2 I + E`` with ``|E| <= 0.4 / n`` elementwise: eigenvalues stay near 2, far from 0."""
    n = shape[-1]
    return 2.0 * np.eye(n) + array(draw, shape, -0.4 / n, 0.4 / n)


def _orthogonal(draw: Any, shape: tuple) -> np.ndarray:
    """Stacks of orthogonal matrices (Q of the QR of well-conditioned ones)."""
    return np.linalg.qr(_well_conditioned(draw, shape) + array(draw, shape, -1.0, 1.0))[0]


def _spread(draw: Any, lead: tuple, k: int, low: float = 0.5, gap: float = 0.4) -> np.ndarray:
    """Values per stack member at least ``gap`` apart and at least ``low`` (no degeneracy)."""
    steps = array(draw, lead + (k,), gap, gap + 0.5)
    return low + np.cumsum(steps, axis=-1)


@sample("linalg_inv")
def _linalg_inv(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    return Sample(dg.linalg.inv, (_well_conditioned(draw, _stack_shape(draw) + (n, n)),))


@sample("linalg_solve")
def _linalg_solve(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    a = _well_conditioned(draw, lead + (n, n))
    vector = draw(st.booleans())
    b_shape = (n,) if vector else draw(st.sampled_from([lead, lead[1:], (1,) * len(lead)])) + (
        n, draw(st.integers(1, 3)))
    return Sample(dg.linalg.solve, (a, array(draw, b_shape)))


@sample("linalg_det")
def _linalg_det(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    return Sample(dg.linalg.det, (_well_conditioned(draw, _stack_shape(draw) + (n, n)),))


@sample("linalg_slogdet")
def _linalg_slogdet(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    a = _well_conditioned(draw, _stack_shape(draw) + (n, n)) * draw(st.sampled_from([1.0, -1.0]))
    return Sample(lambda t: tuple(dg.linalg.slogdet(t)), (a,))


@sample("linalg_cholesky")
def _linalg_cholesky(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    x = array(draw, _stack_shape(draw) + (n, n), -1.0, 1.0)
    return Sample(lambda t: dg.linalg.cholesky(t @ t.mH + n * np.eye(n)), (x,))


@sample("linalg_eigh")
def _linalg_eigh(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    q = _orthogonal(draw, lead + (n, n))
    a = q @ (_spread(draw, lead, n, low=-1.0)[..., None] * q.swapaxes(-1, -2))
    # LAPACK may flip an eigenvector's sign (phase) between nearby inputs: sample sign-invariant functions
    # (``mH`` and ``conj``: Hermitian inputs and phase-invariant functions for complex ones too).
    def call(t: dg.Tensor) -> tuple:
        values, vectors = dg.linalg.eigh((t + t.mH) * 0.5)
        return values, vectors * vectors.conj(), (vectors * np.arange(1.0, n + 1)) @ vectors.mH

    return Sample(call, (a,))


@sample("linalg_svd")
def _linalg_svd(draw: Any) -> Sample:
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    k = min(m, n)
    u = _orthogonal(draw, lead + (m, m))[..., :k]
    v = _orthogonal(draw, lead + (n, n))[..., :k]
    a = (u * _spread(draw, lead, k)[..., ::-1][..., None, :]) @ v.swapaxes(-1, -2)
    full_matrices = draw(st.booleans())

    # Singular vectors may flip sign (in pairs) between nearby inputs, and the completing
    # columns of full matrices are not unique: sample the functions of t that are unique.
    def call(t: dg.Tensor) -> tuple:
        big_u, s, big_vh = dg.linalg.svd(t, full_matrices=full_matrices)
        u, vh = big_u[..., :k], big_vh[..., :k, :]
        u2, vh2 = big_u[..., k:], big_vh[..., k:, :]
        return s, u * u.conj(), vh * vh.conj(), (u * np.arange(1.0, k + 1)) @ vh, u2 @ u2.mH, vh2.mH @ vh2

    return Sample(call, (a,))


@sample("linalg_qr")
def _linalg_qr(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    m = draw(st.integers(n, 5))
    lead = _stack_shape(draw)
    a = np.concatenate([_well_conditioned(draw, lead + (n, n)), array(draw, lead + (m - n, n), -0.5, 0.5)],
                       axis=-2)
    mode = draw(st.sampled_from(["reduced", "complete"])) if m == n else "reduced"
    # LAPACK may flip the signs of Q's columns and R's rows between nearby inputs (e.g. next to
    # triangular ones): sample the sign-invariant functions of the factors.
    def call(t: dg.Tensor) -> tuple:
        q, r = dg.linalg.qr(t, mode=mode)
        return q * q, r * r, (q * np.arange(1.0, n + 1)) @ r

    return Sample(call, (a,))


def _fft_params(draw: Any, shape: tuple) -> tuple:
    """``(s, axes, norm)``: a non-empty subset of axes, sizes that pad or crop, any norm."""
    axes = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    s = [draw(st.sampled_from([shape[a], shape[a] + 1, max(shape[a] - 1, 1), 2 * shape[a]])) for a in axes]
    return tuple(s), tuple(axes), draw(st.sampled_from(["backward", "ortho", "forward"]))


def _parts(z: dg.Tensor) -> tuple:
    return z.real, z.imag


def _complex_fft_sample(transform: Callable) -> Callable:
    def draw_sample(draw: Any) -> Sample:
        shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
        s, axes, norm = _fft_params(draw, shape)
        return Sample(lambda x, y: _parts(transform(x + y * 1j, s=s, axes=axes, norm=norm)),
                      (array(draw, shape), array(draw, shape)))

    return draw_sample


sample("fftn")(_complex_fft_sample(dg.fft.fftn))
sample("ifftn")(_complex_fft_sample(dg.fft.ifftn))


@sample("rfftn")
def _rfftn(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    s, axes, norm = _fft_params(draw, shape)
    return Sample(lambda x: _parts(dg.fft.rfftn(x, s=s, axes=axes, norm=norm)), (array(draw, shape),))


@sample("irfftn")
def _irfftn(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    s, axes, norm = _fft_params(draw, shape)
    return Sample(lambda x, y: dg.fft.irfftn(x + y * 1j, s=s, axes=axes, norm=norm),
                  (array(draw, shape), array(draw, shape)))


# -- random sampling: the sampled values with a zero gradient for the parameters ------------------
@sample("bernoulli")
def _bernoulli(draw: Any) -> Sample:
    shape = draw(shapes())
    draws = dg.tensor((array(draw, shape, 0.0, 1.0) > 0.5).astype(np.float64))
    return Sample(lambda p: apply(ALL_OPS["bernoulli"], p, draws), (array(draw, shape, 0.0, 1.0),))


@sample("normal")
def _normal(draw: Any) -> Sample:
    s1, s2 = broadcastable(draw)
    draws = dg.tensor(array(draw, np.broadcast_shapes(s1, s2)))
    return Sample(lambda mean, std: apply(ALL_OPS["normal"], mean, std, draws),
                  (array(draw, s1), array(draw, s2, 0.5, 2.0)))


COVERED_BY["poisson"] = "bernoulli"  # draws in its impl: its zero gradient and vmap are tested in test_random.py

# Overloads (``registry.overload``): the impl and rules of the op named, recorded under torch's name
# of another overload; the public functions exercise them with that op's samples.
COVERED_BY.update({
    "reshape_alias": "reshape", "reshape_copy": "reshape", "transpose": "permute", "t": "permute",
    "squeeze_dim": "squeeze", "squeeze_dims": "squeeze", "split_even": "split", "max_all": "amax",
    "min_all": "amin", "clamp_min": "clamp", "clamp_max": "clamp", "bmm": "matmul", "masked_fill": "where",
    # (the in-place shape changes, tested in test_inplace_parity.py)
    "t_": "permute", "transpose_": "permute", "squeeze_": "squeeze", "squeeze_dim_": "squeeze",
    "squeeze_dims_": "squeeze", "unsqueeze_": "unsqueeze",
    # (the in-place fills, tested in test_inplace.py and test_fuzz_engine.py)
    "fill_number": "copy", "fill_tensor": "copy", "zero": "copy", "uniform_fill": "copy", "normal_fill": "copy",
})

import op_samples_aliases  # noqa: E402, F401 - the samples of dualgrad/ops/torch_names.py
import op_samples_linalg_more  # noqa: E402, F401 - registers the samples of dualgrad.ops.linalg.matrix_functions
import op_samples_more  # noqa: E402, F401 - registers the samples of dualgrad/ops/shape/views.py
import op_samples_special  # noqa: E402, F401 - the samples of dualgrad.special (registers into SAMPLES)
