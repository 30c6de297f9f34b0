"""WL1: gradient of ``sum(solve(A, b)) + sum(slogdet(A).logabsdet)`` for a batch of 64 32x32 matrices.

Written with plain ``np.linalg`` calls on dualgrad Tensors (routed by NumPy
dispatch). Goal: at most 1.5x the hand-written NumPy gradient
``(-A^{-T} 1 x^T + A^{-T}, A^{-T} 1)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

BATCH, N = 64, 32


def _data() -> tuple:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((BATCH, N, N)) / np.sqrt(N) + 2.0 * np.eye(N)
    return a, rng.standard_normal((BATCH, N, 1))  # NumPy 2: a stack of one-column matrices


def _dualgrad() -> Callable:
    import dualgrad as dg

    a, b = (dg.tensor(x, requires_grad=True) for x in _data())

    def run() -> tuple:
        loss = np.linalg.solve(a, b).sum() + np.linalg.slogdet(a).logabsdet.sum()
        return tuple(g.numpy() for g in dg.grad(loss, (a, b)))

    return run


def _numpy() -> Callable:
    a, b = _data()

    def run() -> tuple:
        x = np.linalg.solve(a, b)
        np.linalg.slogdet(a)
        a_t = np.swapaxes(a, -1, -2)
        g_b = np.linalg.solve(a_t, np.ones_like(b))
        g_a = np.swapaxes(np.linalg.inv(a), -1, -2) - g_b @ np.swapaxes(x, -1, -2)
        return g_a, g_b

    return run


def _torch() -> Callable:
    import torch

    a, b = (torch.tensor(x, requires_grad=True) for x in _data())

    def run() -> tuple:
        loss = torch.linalg.solve(a, b).sum() + torch.linalg.slogdet(a).logabsdet.sum()
        return tuple(g.numpy() for g in torch.autograd.grad(loss, (a, b)))

    return run


def _hips_autograd() -> Callable:
    import autograd
    import autograd.numpy as anp

    def loss(a, b):  # noqa: ANN001, ANN202
        return anp.sum(anp.linalg.solve(a, b)) + anp.sum(anp.linalg.slogdet(a)[1])

    gradient = autograd.grad(loss, (0, 1))
    a, b = _data()
    return lambda: tuple(gradient(a, b))


def _jax() -> Callable:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def loss(a, b):  # noqa: ANN001, ANN202
        return jnp.linalg.solve(a, b).sum() + jnp.linalg.slogdet(a)[1].sum()

    gradient = jax.jit(jax.grad(loss, (0, 1)))
    a, b = (jnp.asarray(x) for x in _data())
    return lambda: tuple(np.asarray(g) for g in gradient(a, b))


def workload() -> Workload:
    """WL1 with its goal: at most 1.5x hand-written NumPy."""
    return Workload(
        name="WL1 solve+slogdet grad, 64x32x32",
        builders={"dualgrad": _dualgrad, "numpy": _numpy, "torch": _torch, "autograd": _hips_autograd,
                  "jax": _jax},
        time_goals={"numpy": 1.5},
        notes={"jax": " (jit-compiled)"},
    )
