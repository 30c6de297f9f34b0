"""C10: B1 (bundle adjustment J^T r, 400 observations, ~16k small ops) through ``dualgrad.compile``.

The compiled function is ``func.grad`` of B1's objective with respect to cameras and points.
Goal (compile issue): each eager-speed workload compiled, at most 0.5x PyTorch eager.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .b1_bundle_adjustment import _builder, _data, _objective


def _compiled() -> Callable:
    import dualgrad as dg

    cams, points, pairs, observed = _data()
    cams, points, observed = dg.tensor(cams), dg.tensor(points), dg.tensor(observed)
    pairs = pairs.tolist()
    objective = _objective(dg)
    gradient = dg.compile(dg.func.grad(lambda c, p: objective(c, p, pairs, observed), argnums=(0, 1)))
    return lambda: tuple(g.numpy() for g in gradient(cams, points))


def workload() -> Workload:
    return Workload(name="C10 compiled B1 bundle adjustment", builders={
        "dualgrad": _compiled, "dualgrad-eager": _builder("dualgrad"), "torch": _builder("torch")},
        time_goals={"torch": 0.5})
