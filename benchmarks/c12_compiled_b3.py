"""C12: B3 (Gaussian mixture log-likelihood, d=32, k=25, n=1000, its gradient) through ``dualgrad.compile``.

Goal (compile issue): each eager-speed workload compiled, at most 0.5x PyTorch eager.
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .b3_gmm import _builder, _data, _objective


def _compiled() -> Callable:
    import dualgrad as dg

    alphas, means, q, lower, x = _data()
    params = [dg.tensor(a) for a in (alphas, means, q, lower)]
    x = dg.tensor(x)
    objective = _objective(dg)
    gradient = dg.compile(dg.func.grad(lambda a, m, q, lower: objective(a, m, q, lower, x), argnums=(0, 1, 2, 3)))
    return lambda: tuple(g.numpy() for g in gradient(*params))


def workload() -> Workload:
    return Workload(name="C12 compiled B3 GMM", builders={
        "dualgrad": _compiled, "dualgrad-eager": _builder("dualgrad"), "torch": _builder("torch")},
        time_goals={"torch": 0.5})
