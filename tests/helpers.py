"""Numerical helpers shared by the tests: central differences and comparisons."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import dualgrad as dg


def as_outputs(result: Any) -> tuple:
    """A function's result as a tuple of Tensors (dropping non-float ones)."""
    outs = result if isinstance(result, tuple) else (result,)
    return tuple(o for o in outs if isinstance(o, dg.Tensor) and o.dtype.kind in "fc")


def evaluate(call: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Plain float64 outputs of ``call`` on ``arrays`` (no grad)."""
    with dg.no_grad():
        return [o.numpy() for o in as_outputs(call(*[dg.tensor(a) for a in arrays]))]


def directional_fd(call: Callable, arrays: Sequence[np.ndarray], direction: Sequence[np.ndarray],
                   eps: float = 1e-6) -> list[np.ndarray]:
    """Central difference of each output along ``direction``: (f(x+e v) - f(x-e v)) / 2e."""
    plus = evaluate(call, [a + eps * v for a, v in zip(arrays, direction)])
    minus = evaluate(call, [a - eps * v for a, v in zip(arrays, direction)])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def random_like(rng: np.random.Generator, arrays: Sequence[Any]) -> list[np.ndarray]:
    """Standard normal arrays shaped like ``arrays`` (ndarrays or Tensors)."""
    return [rng.standard_normal(a.shape if isinstance(a, dg.Tensor) else np.shape(a)) for a in arrays]


def leaves(arrays: Sequence[np.ndarray]) -> list[dg.Tensor]:
    return [dg.tensor(a, requires_grad=True) for a in arrays]


def vdot(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    """Sum of elementwise products over matching lists of arrays/Tensors."""
    total = 0.0
    for x, y in zip(xs, ys):
        x = x.detach().numpy() if isinstance(x, dg.Tensor) else x
        y = y.detach().numpy() if isinstance(y, dg.Tensor) else y
        total += float(np.sum(np.asarray(x) * np.asarray(y)))
    return total


def assert_close(actual: float, expected: float, rtol: float = 1e-5, atol: float = 1e-6,
                 what: str = "") -> None:
    assert abs(actual - expected) <= atol + rtol * abs(expected), (
        f"{what}: got {actual!r}, expected {expected!r}"
    )


def rosenbrock(x: Any) -> Any:
    """The Rosenbrock function of a Tensor (W4/W5's benchmark function)."""
    head, tail = x[:-1], x[1:]
    return (100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2).sum()


def rosenbrock_hvp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The hand-written product of Rosenbrock's (tridiagonal) Hessian with ``v``."""
    head, tail = x[:-1], x[1:]
    hv = np.zeros_like(x)
    hv[:-1] += (1200.0 * head**2 - 400.0 * tail + 2.0) * v[:-1] - 400.0 * head * v[1:]
    hv[1:] += 200.0 * v[1:] - 400.0 * head * v[:-1]
    return hv


@contextmanager
def gc_disabled() -> Iterator[None]:
    """The cyclic collector off (after one collection) for the block: memory must then come back
    by reference counting alone, and object counts are not disturbed by collections."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def dispatch_calls(fn: Callable[[], Any]) -> int:
    """How many times ``fn()`` entered ``dispatch._apply`` (seen by a profile function: the operators and
    rules hold dispatch's functions themselves, so patching the module would not see them)."""
    from dualgrad.ops import dispatch

    code, calls = dispatch._apply.__code__, []
    sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code is code else None)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return len(calls)
