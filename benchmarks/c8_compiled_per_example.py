"""C8: W6's per-example gradients (``vmap(grad(loss))``, batch 512) through ``dualgrad.compile``.

Goal (compile issue): at most 0.5x torch eager (``torch.func.vmap(torch.func.grad(...))``).
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .w6_per_example import _data, _loss, _torch


def _dualgrad(compiled: bool) -> Callable:
    import dualgrad as dg
    from dualgrad.func import grad, vmap

    w, x, y = (dg.tensor(a) for a in _data())
    per_example = vmap(grad(_loss(dg)), in_dims=(None, 0, 0))
    if compiled:
        per_example = dg.compile(per_example)
    return lambda: (per_example(w, x, y).numpy(),)


def workload() -> Workload:
    return Workload(
        name="C8 compiled W6 per-example grads",
        builders={"dualgrad": lambda: _dualgrad(True), "dualgrad-eager": lambda: _dualgrad(False), "torch": _torch},
        time_goals={"torch": 0.5},
    )
