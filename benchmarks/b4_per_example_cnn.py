"""B4: per-example gradients of a small CNN written with patches and ``einsum``: ``vmap(grad)`` against a loop.

64 single-channel 16x16 images; a 3x3 convolution to 8 channels as patches (the nine
shifted slices stacked, as ``unfold`` would) contracted by
``einsum("ock,nkhw->nohw")``, ReLU, global average pooling, a linear layer to 10
classes and cross-entropy (labels one-hot, as ``torch.func.vmap`` cannot index by a
batched label). The gradients' contractions (``"nohw,nkhw->ock"`` per example,
batched under ``vmap``) are the batched einsums of the eager-speed issue.
Goals: ``vmap(grad)`` at most 0.3x the time of a Python loop of ``grad`` calls
("dualgrad-loop"), and no slower than ``torch.func.vmap(torch.func.grad)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

BATCH, SIZE, CHANNELS, CLASSES = 64, 16, 8, 10


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((CHANNELS, 1, 9)) / 3, rng.standard_normal((CHANNELS, CLASSES)) / 3,
            rng.standard_normal((BATCH, 1, SIZE, SIZE)), np.eye(CLASSES)[rng.integers(0, CLASSES, BATCH)])


def _loss(lib):  # noqa: ANN001, ANN202 - the library (dualgrad or torch) is passed in
    def loss(kernel, dense, image, label):  # noqa: ANN001, ANN202
        inner = SIZE - 2
        patches = lib.stack([image[:, i:i + inner, j:j + inner] for i in range(3) for j in range(3)], 1)
        features = lib.einsum("ock,ckhw->ohw", kernel, patches).relu().mean((1, 2))
        scores = features @ dense
        return scores.logsumexp(0) - (scores * label).sum()

    return loss


def _tensors(lib):  # noqa: ANN001, ANN202
    kernel, dense, images, labels = _data()
    return lib.tensor(kernel), lib.tensor(dense), lib.tensor(images), lib.tensor(labels)


def _dualgrad() -> Callable:
    import dualgrad as dg

    kernel, dense, images, labels = _tensors(dg)
    per_example = dg.func.vmap(dg.func.grad(_loss(dg), argnums=(0, 1)), in_dims=(None, None, 0, 0))
    return lambda: tuple(g.numpy() for g in per_example(kernel, dense, images, labels))


def _dualgrad_loop() -> Callable:
    import dualgrad as dg

    kernel, dense, images, labels = _tensors(dg)
    gradient = dg.func.grad(_loss(dg), argnums=(0, 1))

    def run() -> tuple:
        grads = [gradient(kernel, dense, images[i], labels[i]) for i in range(BATCH)]
        return tuple(np.stack([g[k].numpy() for g in grads]) for k in range(2))

    return run


def _torch() -> Callable:
    import torch

    kernel, dense, images, labels = _tensors(torch)
    per_example = torch.func.vmap(torch.func.grad(_loss(torch), argnums=(0, 1)), in_dims=(None, None, 0, 0))
    return lambda: tuple(g.numpy() for g in per_example(kernel, dense, images, labels))


def workload() -> Workload:
    """B4 with its goals (eager-speed issue)."""
    return Workload(name="B4 per-example CNN grads, batch 64", builders={
        "dualgrad": _dualgrad, "dualgrad-loop": _dualgrad_loop, "torch": _torch},
        time_goals={"dualgrad-loop": 0.3, "torch": 1.0}, notes={"torch": " (torch.func)"})
