"""WF2: a jvp of the Rosenbrock function on 10^6 elements, against its plain forward pass.

``f(x) = sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)``. Goal (forward-mode
issue): the jvp costs at most 3x the plain forward pass ("dualgrad-plain"). Every
implementation returns ``(f(x), J v)``; the plain pass returns the hand-written
``J v`` computed once, outside the timed call, so the check validates the jvp.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Workload

N = 10**6


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return rng.uniform(-1.0, 1.0, N), rng.standard_normal(N)


def rosenbrock(x: Any) -> Any:
    head, tail = x[:-1], x[1:]
    return (100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2).sum()


def _jvp_numpy(x: np.ndarray, v: np.ndarray) -> tuple:
    """Hand-written jvp: the chain rule term by term."""
    head, tail = x[:-1], x[1:]
    r = tail - head**2
    dr = v[1:] - 2.0 * head * v[:-1]
    value = np.sum(100.0 * r**2 + (1.0 - head) ** 2)
    return value, np.sum(200.0 * r * dr - 2.0 * (1.0 - head) * v[:-1])


def _dualgrad_jvp() -> Callable:
    import dualgrad as dg
    from dualgrad import forward_ad as fwAD

    x, v = (dg.tensor(a) for a in _data())

    def run() -> tuple:
        with fwAD.dual_level():
            primal, tangent = fwAD.unpack_dual(rosenbrock(fwAD.make_dual(x, v)))
            return primal, tangent

    return run


def _dualgrad_plain() -> Callable:
    import dualgrad as dg

    x, v = _data()
    reference = _jvp_numpy(x, v)[1]
    x = dg.tensor(x)
    return lambda: (rosenbrock(x), reference)


def _numpy() -> Callable:
    x, v = _data()
    return lambda: _jvp_numpy(x, v)


def _torch() -> Callable:
    import torch
    import torch.autograd.forward_ad as fwAD

    x, v = (torch.from_numpy(a) for a in _data())

    def run() -> tuple:
        with fwAD.dual_level():
            primal, tangent = fwAD.unpack_dual(rosenbrock(fwAD.make_dual(x, v)))
            return primal.numpy(), tangent.numpy()

    return run


def _jax() -> Callable:
    import jax

    jax.config.update("jax_enable_x64", True)
    x, v = _data()
    jvp = jax.jit(lambda x, v: jax.jvp(rosenbrock, (x,), (v,)))
    return lambda: tuple(np.asarray(r) for r in jvp(x, v))


def workload() -> Workload:
    """WF2 with its goal: the jvp at most 3x the plain forward pass."""
    return Workload(
        name="WF2 Rosenbrock jvp (1e6)",
        builders={"dualgrad": _dualgrad_jvp, "dualgrad-plain": _dualgrad_plain, "numpy": _numpy,
                  "torch": _torch, "jax": _jax},
        time_goals={"dualgrad-plain": 3.0},
        notes={"jax": " (jit-compiled)", "numpy": " (hand-written jvp)"},
    )
