"""W6: per-example gradients of logistic regression, batch 512, 100 features.

``vmap(grad(loss), in_dims=(None, 0, 0))(w, X, y)`` with
``loss = softplus(x @ w) - y * (x @ w)``. Goals (functional issue): no slower
than ``torch.func.vmap(torch.func.grad(...))`` and at least 50x faster than a
Python loop of ``grad`` calls ("dualgrad-loop").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

BATCH, FEATURES = 512, 100


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(FEATURES) / 10, rng.standard_normal((BATCH, FEATURES)),
            rng.integers(0, 2, BATCH).astype(np.float64))


def _loss(dg):  # noqa: ANN001, ANN202 - the module is passed in so builders import lazily
    def loss(w, x, y):  # noqa: ANN001, ANN202
        z = x @ w
        return dg.softplus(z) - y * z

    return loss


def _dualgrad() -> Callable:
    import dualgrad as dg
    from dualgrad.func import grad, vmap

    w, x, y = (dg.tensor(a) for a in _data())
    per_example = vmap(grad(_loss(dg)), in_dims=(None, 0, 0))
    return lambda: (per_example(w, x, y).numpy(),)


def _dualgrad_loop() -> Callable:
    import dualgrad as dg
    from dualgrad.func import grad

    w, x, y = (dg.tensor(a) for a in _data())
    gradient = grad(_loss(dg))
    return lambda: (np.stack([gradient(w, x[i], y[i]).numpy() for i in range(BATCH)]),)


def _numpy() -> Callable:
    w, x, y = _data()

    def run() -> tuple:
        z = x @ w
        return (((1 / (1 + np.exp(-z))) - y)[:, None] * x,)

    return run


def _torch() -> Callable:
    import torch

    w, x, y = (torch.from_numpy(a) for a in _data())

    def loss(w, x, y):  # noqa: ANN001, ANN202
        z = x @ w
        return torch.nn.functional.softplus(z) - y * z

    per_example = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: (per_example(w, x, y).numpy(),)


def workload() -> Workload:
    return Workload(
        name="W6 per-example grads 512x100",
        builders={"dualgrad": _dualgrad, "dualgrad-loop": _dualgrad_loop, "numpy": _numpy,
                  "torch": _torch},
        time_goals={"torch": 1.0, "dualgrad-loop": 0.02},
        notes={"numpy": " (hand-written, for scale)"},
    )
