"""C11: B2 (LSTM 2x16 over 1024 characters, gradient of the loss) through ``dualgrad.compile``.

Goal (compile issue): each eager-speed workload compiled, at most 0.5x PyTorch eager.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .b2_lstm import _builder, _data, _objective


def _compiled() -> Callable:
    import dualgrad as dg

    weights, projection, text = _data()
    params = [dg.tensor(w) for layer in weights for w in layer] + [dg.tensor(projection)]
    text = dg.tensor(text)
    loss = _objective(dg)
    gradient = dg.compile(dg.func.grad(lambda ps: loss(ps, text)))
    return lambda: tuple(g.numpy() for g in gradient(params))


def workload() -> Workload:
    return Workload(name="C11 compiled B2 LSTM", builders={
        "dualgrad": _compiled, "dualgrad-eager": _builder("dualgrad"), "torch": _builder("torch")},
        time_goals={"torch": 0.5})
