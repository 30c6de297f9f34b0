"""Decompression of acyclic colorings by substitution (the vectorised plan of ``color_acyclic``): every
off-diagonal entry of random symmetric matrices with generated patterns is recovered from the compressed
product ``H S^T``; a coloring with a two-colored cycle is refused."""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
from scipy.sparse.linalg import spsolve_triangular  # noqa: E402

from dualgrad.sparse.coloring import _substitution_plan, color_acyclic  # noqa: E402


def symmetric_pattern(n, density, seed):
    A = sp.random_array((n, n), density=density, rng=np.random.default_rng(seed), format="csr") != 0
    return sp.csr_array((A + A.T + sp.eye_array(n)) != 0)


def grid_pattern(k):
    ring = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(ring, sp.eye_array(k)) + sp.kron(sp.eye_array(k), ring) != 0)


PATTERNS = [(f"random{seed}", symmetric_pattern(60, density, seed))
            for seed, density in enumerate([0.02, 0.05, 0.1, 0.2])]
PATTERNS += [("grid", grid_pattern(9)), ("tridiagonal", sp.csr_array(sp.diags_array(
    [1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(200, 200)) != 0)), ("diagonal", sp.csr_array(sp.eye_array(7) != 0))]


@pytest.mark.parametrize("name, P", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_substitution_recovers_every_entry(name, P):
    n = P.shape[0]
    rng = np.random.default_rng(7)
    coo = P.tocoo()
    values = rng.standard_normal(coo.nnz)
    H = sp.csr_array((values, (coo.row, coo.col)), shape=P.shape)
    H = sp.csr_array(H + H.T)  # (a symmetric matrix with pattern P)
    coloring = color_acyclic(P)
    seeds = np.zeros((coloring.ncolors, n))
    seeds[coloring.colors, np.arange(n)] = 1.0
    compressed = (H @ seeds.T).T.ravel()  # (colors, n), raveled
    assert len(coloring.edges) == sp.triu(P, k=1).nnz
    if len(coloring.edges):
        recovered = spsolve_triangular(coloring.lower, compressed[coloring.rhs], lower=True, unit_diagonal=True)
        np.testing.assert_allclose(recovered, H.toarray()[coloring.edges[:, 0], coloring.edges[:, 1]],
                                   rtol=1e-9, atol=1e-9)
        assert (coloring.edges[:, 0] < coloring.edges[:, 1]).all()
        assert sp.tril(coloring.lower, k=-1).nnz == coloring.lower.nnz - len(coloring.edges)  # (unit lower)


def test_a_two_colored_cycle_is_refused():
    ends = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])  # a 4-cycle colored 0, 1, 0, 1
    with pytest.raises(RuntimeError, match="two-colored cycle"):
        _substitution_plan(np.array([0, 1, 0, 1]), ends, 4)
