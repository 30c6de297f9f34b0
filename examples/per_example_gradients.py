"""Per-example gradients with ``vmap(grad(...))``, used for differentially private SGD.

A small two-layer network classifies points of two interleaved spirals. Plain
``backward`` gives the gradient of the *mean* loss; differentially private SGD
(DP-SGD) needs the gradient of *each example's* loss, to clip it to a fixed
norm before averaging and adding noise. ``vmap(grad(loss), in_dims=(None, 0, 0))``
computes all of them in one batched backward pass, without a Python loop over
the batch. The result is checked against a loop of ordinary ``dualgrad.grad``
calls, and its mean against the gradient of the mean loss.

Run: ``python examples/per_example_gradients.py [--plot FILE.png]``; set
``DUALGRAD_EXAMPLES_SMALL=1`` for a quick run (fewer training steps).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import dualgrad as dg
from dualgrad.func import grad, vmap

HIDDEN, BATCH, CLIP, NOISE, LR = 32, 64, 1.0, 0.5, 0.5


def spirals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of two interleaved spirals and their labels 0/1."""
    labels = rng.integers(0, 2, n)
    r = rng.uniform(0.1, 1.0, n)
    angle = 3 * np.pi * r + np.pi * labels
    points = np.stack([r * np.cos(angle), r * np.sin(angle)], axis=1) + 0.03 * rng.normal(size=(n, 2))
    return points, labels.astype(np.float64)


def init(rng: np.random.Generator) -> dict[str, dg.Tensor]:
    """Random weights of a 2 -> HIDDEN -> 1 network."""
    return {"w1": dg.tensor(rng.normal(size=(2, HIDDEN)) * 1.5), "b1": dg.zeros(HIDDEN),
            "w2": dg.tensor(rng.normal(size=(HIDDEN,)) / np.sqrt(HIDDEN)), "b2": dg.zeros(())}


def loss(params: dict[str, dg.Tensor], x: dg.Tensor, y: dg.Tensor) -> dg.Tensor:
    """Logistic loss of the network on one example ``x`` (shape ``(2,)``) with label ``y``."""
    hidden = dg.tanh(x @ params["w1"] + params["b1"])
    logit = hidden @ params["w2"] + params["b2"]
    return dg.softplus(logit) - y * logit


per_example_grads = vmap(grad(loss), in_dims=(None, 0, 0))


def dp_sgd_step(params: dict, x: dg.Tensor, y: dg.Tensor, rng: np.random.Generator) -> dict:
    """One DP-SGD step: clip each example's gradient to norm ``CLIP``, average, add noise."""
    grads = per_example_grads(params, x, y)  # each of shape (BATCH, *param.shape)
    norms = dg.sqrt(sum((g.reshape(BATCH, -1) ** 2).sum(1) for g in grads.values()))
    scale = 1 / dg.clamp(norms / CLIP, min=1.0)
    new = {}
    for name, g in grads.items():
        clipped = (g * scale.reshape((BATCH,) + (1,) * (g.ndim - 1))).mean(0)
        noise = dg.tensor(rng.normal(size=clipped.shape) * NOISE * CLIP / BATCH)
        new[name] = params[name] - LR * (clipped + noise)
    return new


def accuracy(params: dict, x: dg.Tensor, y: np.ndarray) -> float:
    """Fraction of points on the right side of the decision boundary."""
    logits = dg.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return float(np.mean((logits.numpy() > 0) == (y > 0.5)))


def check(params: dict, x: dg.Tensor, y: dg.Tensor) -> None:
    """Compare ``vmap(grad)`` with a Python loop and with the gradient of the mean loss."""
    batched = per_example_grads(params, x, y)
    worst = 0.0
    for i in range(x.shape[0]):
        leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
        single = dg.grad(loss(leaves, x[i], y[i]), list(leaves.values()))
        gaps = [np.abs(batched[k][i].numpy() - g.numpy()).max() for k, g in zip(leaves, single, strict=True)]
        worst = max(worst, *gaps)
    print(f"max |vmap(grad) - loop of grad| over {x.shape[0]} examples: {worst:.1e}")
    leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
    mean_loss = vmap(loss, in_dims=(None, 0, 0))(leaves, x, y).mean()
    full = dg.grad(mean_loss, list(leaves.values()))
    gap = max(np.abs(batched[k].numpy().mean(0) - g.numpy()).max() for k, g in zip(leaves, full, strict=True))
    print(f"max |mean of per-example gradients - gradient of the mean loss|: {gap:.1e}")


def plot(params: dict, points: np.ndarray, labels: np.ndarray, path: str) -> None:
    """The decision regions of the trained network over the data, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plot skipped")
        return
    grid = np.linspace(-1.2, 1.2, 200)
    gx, gy = np.meshgrid(grid, grid)
    flat = dg.tensor(np.stack([gx.ravel(), gy.ravel()], axis=1))
    logits = (dg.tanh(flat @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]).numpy()
    fig, ax = plt.subplots(figsize=(4.2, 4))
    ax.contourf(gx, gy, logits.reshape(gx.shape) > 0, alpha=0.3, cmap="coolwarm")
    ax.scatter(points[:, 0], points[:, 1], c=labels, s=4, cmap="coolwarm")
    ax.set_title("DP-SGD decision regions")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"plot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="FILE.png", help="write a plot of the decision regions")
    args = parser.parse_args()
    steps = 30 if os.environ.get("DUALGRAD_EXAMPLES_SMALL") else 1500
    rng = np.random.default_rng(0)
    points, labels = spirals(2000, rng)
    params = init(rng)
    x_all, y_all = dg.tensor(points), dg.tensor(labels)

    check(params, x_all[:16], y_all[:16])
    print(f"accuracy before training: {accuracy(params, x_all, labels):.3f}")
    for _ in range(steps):
        batch = rng.choice(len(points), BATCH, replace=False)
        params = dp_sgd_step(params, x_all[batch], y_all[batch], rng)
    print(f"accuracy after {steps} DP-SGD steps (clip {CLIP}, noise multiplier {NOISE}): "
          f"{accuracy(params, x_all, labels):.3f}")
    if args.plot:
        plot(params, points, labels, args.plot)


if __name__ == "__main__":
    main()
