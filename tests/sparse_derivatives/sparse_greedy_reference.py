"""The reference the vectorised colorings are tested against: first-fit greedy coloring visiting the vertices
one at a time (a plain Python loop)."""

from __future__ import annotations

import numpy as np


def sequential_greedy(G, order: np.ndarray) -> np.ndarray:
    """Each vertex of ``order`` in turn takes the smallest color none of its colored neighbours in ``G``
    (symmetric CSR) has."""
    indptr, indices = G.indptr.tolist(), G.indices.tolist()
    colors = [-1] * G.shape[0]
    for v in order.tolist():
        used = {colors[u] for u in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in used:
            c += 1
        colors[v] = c
    return np.asarray(colors, np.int64)
