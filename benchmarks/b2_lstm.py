"""B2: a two-layer LSTM's next-character loss over a 1024-character sequence, and its gradient.

Hidden and input size 16 (one-hot characters of a 16-letter alphabet); per step and
layer four gates from ``x @ W + h @ U + b``, then ``log_softmax`` of an output
projection scores the next character. About 40k recorded ops of small arrays stay
alive until the backward pass. The same code runs with ``import torch``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

LENGTH, HIDDEN, LAYERS = 1024, 16, 2


def _data() -> tuple:
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((HIDDEN, 4 * HIDDEN)) / 4, rng.standard_normal((HIDDEN, 4 * HIDDEN)) / 4,
                np.zeros(4 * HIDDEN)) for _ in range(LAYERS)]
    projection = rng.standard_normal((HIDDEN, HIDDEN)) / 4
    text = np.eye(HIDDEN)[rng.integers(0, HIDDEN, LENGTH)]
    return weights, projection, text


def _objective(lib):  # noqa: ANN001, ANN202 - the library (dualgrad or torch) is passed in
    def loss(params, text):  # noqa: ANN001, ANN202
        *layers, projection = params
        state = [(lib.zeros(HIDDEN, dtype=lib.float64), lib.zeros(HIDDEN, dtype=lib.float64)) for _ in range(LAYERS)]
        total = 0.0
        for t in range(LENGTH - 1):
            x = text[t]
            for k in range(LAYERS):
                w, u, b = layers[3 * k: 3 * k + 3]
                h, c = state[k]
                gates = x @ w + h @ u + b
                i, f = gates[:HIDDEN].sigmoid(), gates[HIDDEN:2 * HIDDEN].sigmoid()
                o = gates[2 * HIDDEN:3 * HIDDEN].sigmoid()
                c = f * c + i * gates[3 * HIDDEN:].tanh()
                h = o * c.tanh()
                state[k] = (h, c)
                x = h
            scores = x @ projection
            total = total - (scores * text[t + 1]).sum() + scores.logsumexp(0)
        return total

    return loss


def _builder(lib_name: str) -> Callable:
    def build() -> Callable:
        lib = __import__(lib_name)
        weights, projection, text = _data()
        params = [lib.tensor(w, requires_grad=True) for layer in weights for w in layer]
        params.append(lib.tensor(projection, requires_grad=True))
        text = lib.tensor(text)
        loss = _objective(lib)

        def run() -> tuple:
            return tuple(g.detach().numpy() for g in lib.autograd.grad(loss(params, text), params))

        return run

    return build


def workload() -> Workload:
    """B2 with its goal (eager-speed issue): no slower than PyTorch eager."""
    return Workload(name="B2 LSTM 2x16, 1024 characters", builders={"dualgrad": _builder("dualgrad"),
                    "torch": _builder("torch")}, time_goals={"torch": 1.0})
