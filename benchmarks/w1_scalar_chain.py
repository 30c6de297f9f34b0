"""W1: gradient of a chain of 300 scalar steps ``y = sin(y) * 1.01 + 0.1`` (per-op overhead)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Workload

STEPS = 300
Y0 = 0.3


def _chain(y: Any, sin: Callable) -> Any:
    for _ in range(STEPS):
        y = sin(y) * 1.01 + 0.1
    return y


def _dualgrad() -> Callable:
    import dualgrad as dg

    def run() -> tuple:
        y0 = dg.tensor(Y0, requires_grad=True)
        return dg.grad(_chain(y0, dg.sin), y0)

    return run


def _numpy() -> Callable:
    """Hand-written reverse mode: store cos(y) on the way forward, multiply on the way back."""

    def run() -> tuple:
        y = np.float64(Y0)
        slopes = np.empty(STEPS)
        for i in range(STEPS):
            slopes[i] = np.cos(y) * 1.01
            y = np.sin(y) * 1.01 + 0.1
        g = np.float64(1.0)
        for slope in slopes[::-1]:
            g = g * slope
        return (g,)

    return run


def _torch() -> Callable:
    import torch

    def run() -> tuple:
        y0 = torch.tensor(Y0, dtype=torch.float64, requires_grad=True)
        return tuple(g.numpy() for g in torch.autograd.grad(_chain(y0, torch.sin), y0))

    return run


def _hips_autograd() -> Callable:
    import autograd
    import autograd.numpy as anp

    gradient = autograd.grad(lambda y: _chain(y, anp.sin))
    return lambda: (gradient(Y0),)


def _jax() -> Callable:
    import jax

    jax.config.update("jax_enable_x64", True)
    gradient = jax.jit(jax.grad(lambda y: _chain(y, jax.numpy.sin)))
    return lambda: (np.asarray(gradient(Y0)),)


def workload() -> Workload:
    """W1 with its goals: at most 0.7x torch eager (issue 26), at most 0.8x HIPS autograd."""
    return Workload(
        name=f"W1 scalar chain ({STEPS} steps)",
        builders={"dualgrad": _dualgrad, "numpy": _numpy, "torch": _torch,
                  "autograd": _hips_autograd, "jax": _jax},
        time_goals={"torch": 0.7, "autograd": 0.8},
        notes={"jax": " (jit-compiled)"},
    )
