"""C13: B4 (per-example gradients of a small CNN, batch 64: ``vmap(grad(loss))``) through ``dualgrad.compile``.

Goal (compile issue): each eager-speed workload compiled, at most 0.5x PyTorch eager (torch.func).
"""

from __future__ import annotations

from collections.abc import Callable

from ._harness import Workload
from .b4_per_example_cnn import _dualgrad, _loss, _tensors, _torch


def _compiled() -> Callable:
    import dualgrad as dg

    kernel, dense, images, labels = _tensors(dg)
    per_example = dg.compile(dg.func.vmap(dg.func.grad(_loss(dg), argnums=(0, 1)), in_dims=(None, None, 0, 0)))
    return lambda: tuple(g.numpy() for g in per_example(kernel, dense, images, labels))


def workload() -> Workload:
    return Workload(name="C13 compiled B4 per-example CNN", builders={
        "dualgrad": _compiled, "dualgrad-eager": _dualgrad, "torch": _torch},
        time_goals={"torch": 0.5}, notes={"torch": " (torch.func)"})
