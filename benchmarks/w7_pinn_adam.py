"""W7: training a physics-informed network for a 1-D ODE, 1000 Adam steps (the loop of torch's tutorials).

``u(t) = MLP(t)``, 1 -> 32 -> 32 -> 1 with tanh, float64, fits ``u' = -u`` on 64 points of [0, 2] with
``u(0) = 1``: each step computes ``u`` and ``du/dt`` (``autograd.grad`` with ``create_graph=True``), the
loss ``mean((u' + u)^2) + (u(0) - 1)^2``, its gradient wrt the six parameters (a double backward) and an
Adam step (lr 1e-2). The same code runs with ``lib = dualgrad`` and ``lib = torch`` (single-threaded,
as NumPy is on matrices this small); one call is the whole training from the same initial weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Workload

POINTS, WIDTH, STEPS = 64, 32, 1000


def _initial() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    sizes = [(1, WIDTH), (WIDTH, WIDTH), (WIDTH, 1)]
    weights = [rng.standard_normal(s) / np.sqrt(s[0]) for s in sizes]
    biases = [np.zeros(s[1]) for s in sizes]
    return [a for pair in zip(weights, biases, strict=True) for a in pair]


def _trainer(lib: Any) -> Callable[[], list]:
    t = lib.tensor(np.linspace(0.0, 2.0, POINTS).reshape(-1, 1), requires_grad=True)
    t0 = lib.zeros(1, 1, dtype=lib.float64)

    def net(params: list, x: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = params
        return lib.tanh(lib.tanh(x @ w1 + b1) @ w2 + b2) @ w3 + b3

    def train() -> list:
        params = [lib.tensor(a, requires_grad=True) for a in _initial()]
        opt = lib.optim.Adam(params, lr=1e-2)
        for _ in range(STEPS):
            opt.zero_grad()
            u = net(params, t)
            (du,) = lib.autograd.grad(u.sum(), t, create_graph=True)
            loss = ((du + u) ** 2).mean() + ((net(params, t0) - 1.0) ** 2).sum()
            loss.backward()
            opt.step()
        return [loss.detach().numpy()] + [p.detach().numpy() for p in params]

    return train


def _dualgrad() -> Callable:
    import dualgrad

    return _trainer(dualgrad)


def _torch() -> Callable:
    """torch with one thread for the call: its pool gains nothing on 32-wide layers, and on a loaded
    machine its spinning workers made one training take 50 s instead of 1 s."""
    import torch

    train = _trainer(torch)

    def run() -> list:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return train()
        finally:
            torch.set_num_threads(threads)

    return run


def workload() -> Workload:
    """W7 with its goal: at most 1.0x PyTorch eager."""
    return Workload(
        name="W7 PINN 1-32-32-1, 1000 Adam steps",
        builders={"dualgrad": _dualgrad, "torch": _torch},
        time_goals={"torch": 1.0},
    )
