"""B3: Gaussian mixture log-likelihood (ADBench's GMM objective) and its gradient, d = 32, k = 25, n = 1000.

Each component has a mean, a log-weight and a lower-triangular inverse Cholesky factor
``Q = diag(exp(q)) + L``; the per-point, per-component quadratic form is the batched
contraction ``einsum("kij,nkj->nki", Q, x - means)`` and the mixture is a ``logsumexp``.
The same code runs with ``import torch``; the NumPy column is the hand-written gradient.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

D, K, N = 32, 25, 1000


def _data() -> tuple:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(K), rng.standard_normal((K, D)), rng.standard_normal((K, D)) / 10,
            np.tril(rng.standard_normal((K, D, D)) / 10, -1), rng.standard_normal((N, D)))


def _objective(lib):  # noqa: ANN001, ANN202 - the library (dualgrad or torch) is passed in
    def log_likelihood(alphas, means, q, lower, x):  # noqa: ANN001, ANN202
        factor = lib.diag_embed(q.exp()) + lower
        centered = x[:, None, :] - means[None]
        quadratic = lib.einsum("kij,nkj->nki", factor, centered)
        scores = alphas + q.sum(1) - 0.5 * (quadratic * quadratic).sum(2)
        return scores.logsumexp(1).sum() - N * alphas.logsumexp(0)

    return log_likelihood


def _builder(lib_name: str) -> Callable:
    def build() -> Callable:
        lib = __import__(lib_name)
        alphas, means, q, lower, x = _data()
        params = [lib.tensor(a, requires_grad=True) for a in (alphas, means, q, lower)]
        x = lib.tensor(x)
        objective = _objective(lib)

        def run() -> tuple:
            grads = lib.autograd.grad(objective(*params, x), params)
            return tuple(g.detach().numpy() for g in grads)

        return run

    return build


def _numpy() -> Callable:
    """Hand-written reverse pass of the same objective."""
    alphas, means, q, lower, x = _data()

    def run() -> tuple:
        factor = lower + np.eye(D) * np.exp(q)[:, None, :]
        centered = x[:, None, :] - means[None]
        quadratic = np.matmul(factor[None], centered[..., None])[..., 0]
        scores = alphas + q.sum(1) - 0.5 * (quadratic * quadratic).sum(2)
        weights = np.exp(scores - scores.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        prior = np.exp(alphas - alphas.max())
        g_alphas = weights.sum(0) - N * prior / prior.sum()
        g_quadratic = -weights[..., None] * quadratic
        g_factor = np.einsum("nki,nkj->kij", g_quadratic, centered, optimize=True)
        g_centered = np.matmul(np.swapaxes(factor, 1, 2)[None], g_quadratic[..., None])[..., 0]
        g_q = weights.sum(0)[:, None] + np.diagonal(g_factor, axis1=1, axis2=2) * np.exp(q)
        return g_alphas, -g_centered.sum(0), g_q, g_factor

    return run


def workload() -> Workload:
    """B3 with its goal (eager-speed issue): no slower than PyTorch eager."""
    return Workload(name="B3 GMM d=32 k=25 n=1000", builders={"dualgrad": _builder("dualgrad"),
                    "numpy": _numpy, "torch": _builder("torch")}, time_goals={"torch": 1.0})
