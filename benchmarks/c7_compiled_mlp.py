"""C7: W2's gradient (MLP 256-512-512-10, batch 128) through ``dualgrad.compile(func.grad(loss))``.

Goal (compile issue): at most 0.5x torch eager (W2's ``torch.autograd.grad``).
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .w2_mlp import _data, _torch


def _dualgrad(compiled: bool) -> Callable:
    import dualgrad as dg

    x, target, weights = _data()
    x, target = dg.tensor(x), dg.tensor(target)
    params = [dg.tensor(w) for w in weights]

    def loss(w1: dg.Tensor, w2: dg.Tensor, w3: dg.Tensor) -> dg.Tensor:
        out = (x @ w1).tanh().matmul(w2).tanh() @ w3
        return ((out - target) ** 2).mean()

    gradient = dg.func.grad(loss, argnums=(0, 1, 2))
    if compiled:
        gradient = dg.compile(gradient)
    return lambda: tuple(g.numpy() for g in gradient(*params))


def workload() -> Workload:
    return Workload(
        name="C7 compiled W2 MLP gradient",
        builders={"dualgrad": lambda: _dualgrad(True), "dualgrad-eager": lambda: _dualgrad(False), "torch": _torch},
        time_goals={"torch": 0.5},
    )
