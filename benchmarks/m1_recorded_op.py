"""M1: the cost of one recorded elementwise op on a small tensor (the per-op overhead of the tape).

A chain of 100 products ``y = y * w`` of 16-element float64 tensors, ``y`` requiring grad,
so every op records a node; no backward pass. Goal (eager-speed issue): no more than
PyTorch eager's cost per recorded op.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

SIZE, OPS = 16, 100


def _builder(lib_name: str) -> Callable:
    def build() -> Callable:
        lib = __import__(lib_name)
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.uniform(0.9, 1.1, SIZE), requires_grad=True)
        w = lib.tensor(rng.uniform(0.9, 1.1, SIZE))

        def run() -> tuple:
            y = x
            for _ in range(OPS):
                y = y * w
            return (y.detach().numpy(),)

        return run

    return build


def workload() -> Workload:
    """M1 with its goal."""
    return Workload(name="M1 recorded op x100, 16 elements", builders={"dualgrad": _builder("dualgrad"),
                    "torch": _builder("torch")}, time_goals={"torch": 1.0})
