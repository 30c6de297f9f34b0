"""W2: gradient of the MSE loss of a 3-layer tanh MLP wrt its three weight matrices.

Batch 128, layers 256 -> 512 -> 512 -> 10, float64, no biases:
``loss = mean((tanh(tanh(x @ W1) @ W2) @ W3 - target) ** 2)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

BATCH, SIZES = 128, (256, 512, 512, 10)


def _data() -> tuple:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0]))
    target = rng.standard_normal((BATCH, SIZES[-1]))
    weights = [rng.standard_normal((m, n)) / np.sqrt(m) for m, n in zip(SIZES[:-1], SIZES[1:], strict=True)]
    return x, target, weights


def _dualgrad() -> Callable:
    import dualgrad as dg

    x, target, weights = _data()
    x, target = dg.tensor(x), dg.tensor(target)
    params = [dg.tensor(w, requires_grad=True) for w in weights]

    def run() -> tuple:
        w1, w2, w3 = params
        out = (x @ w1).tanh().matmul(w2).tanh() @ w3
        return dg.grad(((out - target) ** 2).mean(), params)

    return run


def _numpy() -> Callable:
    """Hand-written backprop, as one would write it for this network."""
    x, target, (w1, w2, w3) = _data()

    def run() -> tuple:
        h1 = np.tanh(x @ w1)
        h2 = np.tanh(h1 @ w2)
        out = h2 @ w3
        g_out = (out - target) * (2.0 / out.size)
        g_w3 = h2.T @ g_out
        g_a2 = (g_out @ w3.T) * (1 - h2 * h2)
        g_w2 = h1.T @ g_a2
        g_a1 = (g_a2 @ w2.T) * (1 - h1 * h1)
        g_w1 = x.T @ g_a1
        return g_w1, g_w2, g_w3

    return run


def _torch() -> Callable:
    import torch

    x, target, weights = _data()
    x, target = torch.from_numpy(x), torch.from_numpy(target)
    params = [torch.tensor(w, requires_grad=True) for w in weights]

    def run() -> tuple:
        w1, w2, w3 = params
        out = torch.tanh(torch.tanh(x @ w1) @ w2) @ w3
        grads = torch.autograd.grad(((out - target) ** 2).mean(), params)
        return tuple(g.numpy() for g in grads)

    return run


def _hips_autograd() -> Callable:
    import autograd
    import autograd.numpy as anp

    x, target, weights = _data()

    def loss(params: list) -> float:
        w1, w2, w3 = params
        out = anp.tanh(anp.tanh(x @ w1) @ w2) @ w3
        return anp.mean((out - target) ** 2)

    gradient = autograd.grad(loss)
    return lambda: tuple(gradient(weights))


def _jax() -> Callable:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    x, target, weights = _data()

    def loss(params: list) -> float:
        w1, w2, w3 = params
        out = jnp.tanh(jnp.tanh(x @ w1) @ w2) @ w3
        return jnp.mean((out - target) ** 2)

    gradient = jax.jit(jax.grad(loss))
    params = [jnp.asarray(w) for w in weights]
    return lambda: tuple(np.asarray(g) for g in gradient(params))


def workload() -> Workload:
    """W2 with its goals: at most 1.0x hand-written NumPy time (issue 26) and 1.5x its peak memory."""
    return Workload(
        name="W2 MLP 256-512-512-10, batch 128",
        builders={"dualgrad": _dualgrad, "numpy": _numpy, "torch": _torch,
                  "autograd": _hips_autograd, "jax": _jax},
        time_goals={"numpy": 1.0},
        memory_goals={"numpy": 1.5},
        notes={"jax": " (jit-compiled)"},
    )
