"""dualgrad.sparse's colorings: validity (structural orthogonality) on generated patterns, and color counts
equal to known optima on standard patterns."""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
import scipy.sparse.csgraph  # noqa: E402, F401
from sparse_greedy_reference import sequential_greedy  # noqa: E402

from dualgrad.sparse.coloring import (  # noqa: E402
    choose,
    color_acyclic,
    color_columns,
    color_rows,
    color_symmetric,
    column_graph,
    iterated_greedy,
    jones_plassmann,
)


def banded_pattern(n, offsets):
    return sp.csr_array(sum(sp.eye_array(n, n, k=k) for k in offsets) != 0)


def arrowhead_pattern(n):
    P = sp.lil_array((n, n), dtype=bool)
    P[0, :] = True
    P[:, 0] = True
    P.setdiag(True)
    return sp.csr_array(P)


def random_pattern(m, n, density, seed):
    return sp.random_array((m, n), density=density, rng=np.random.default_rng(seed), format="csr") != 0


def stencil_pattern(N):
    lap = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(N, N))
    return sp.csr_array((sp.kron(lap, sp.eye_array(N)) + sp.kron(sp.eye_array(N), lap)) != 0)


def assert_column_coloring(P, colors):
    P = sp.csr_array(P)
    rows = np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))
    c = colors[P.indices]
    assert (c >= 0).all()
    assert len(np.unique(rows * (colors.max() + 1) + c)) == P.nnz


PATTERNS = [
    ("tridiagonal", banded_pattern(50, (-1, 0, 1))),
    ("banded_7", banded_pattern(40, range(-3, 4))),
    ("arrowhead", arrowhead_pattern(20)),
    ("random", random_pattern(30, 25, 0.1, 0)),
    ("random_wide", random_pattern(10, 60, 0.05, 1)),
    ("stencil", stencil_pattern(8)),
    ("empty_columns", sp.csr_array(np.array([[1, 0, 0, 1], [0, 0, 0, 1]], bool))),
]


@pytest.mark.parametrize("name, P", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_colorings_are_structurally_orthogonal(name, P):
    assert_column_coloring(P, color_columns(P))
    assert_column_coloring(sp.csr_array(P.T), color_rows(P))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
def test_banded_with_k_bands_needs_k_colors(k):
    P = banded_pattern(200, range(-(k // 2), k - k // 2))
    assert color_columns(P).max() + 1 == k
    assert choose(P).ncolors == k


def test_arrowhead_bicoloring_needs_at_most_three_where_one_direction_needs_n():
    n = 300
    P = arrowhead_pattern(n)
    assert color_columns(P).max() + 1 == n and color_rows(P).max() + 1 == n
    coloring = choose(P)
    assert coloring.mode == "bidirectional" and coloring.ncolors <= 3


def test_stencil_colors_within_twice_the_row_count():
    P = stencil_pattern(20)
    assert color_columns(P).max() + 1 <= 2 * np.diff(P.indptr).max()


def test_star_coloring_of_tridiagonal_and_arrowhead_hessians():
    assert color_symmetric(banded_pattern(100, (-1, 0, 1))).ncolors <= 3
    assert color_symmetric(arrowhead_pattern(100)).ncolors == 2


@pytest.mark.parametrize("name, P", [p for p in PATTERNS if p[1].shape[0] == p[1].shape[1]],
                         ids=[p[0] for p in PATTERNS if p[1].shape[0] == p[1].shape[1]])
def test_acyclic_colorings_have_no_two_colored_cycle(name, P):
    P = sp.csr_array((P + P.T) != 0)
    coloring = color_acyclic(P)
    colors = coloring.colors
    coo = sp.triu(P, k=1, format="coo")
    assert (colors[coo.row] != colors[coo.col]).all()
    for a in range(coloring.ncolors):  # every two-colored subgraph is a forest: edges = vertices - components
        for b in range(a + 1, coloring.ncolors):
            keep = np.isin(colors[coo.row], (a, b)) & np.isin(colors[coo.col], (a, b))
            vertices = np.unique(np.concatenate([coo.row[keep], coo.col[keep]]))
            if not len(vertices):
                continue
            sub = sp.csr_array((np.ones(keep.sum()), (coo.row[keep], coo.col[keep])), shape=P.shape)
            components = sp.csgraph.connected_components(sub[vertices][:, vertices], directed=False)[0]
            assert keep.sum() == len(vertices) - components
    assert len(coloring.edges) == coo.nnz


def test_acyclic_tridiagonal_needs_two_colors():
    assert color_acyclic(banded_pattern(100, (-1, 0, 1))).ncolors == 2


@pytest.mark.parametrize("seed", range(5))
def test_greedy_variants_agree_with_sequential(seed):
    P = random_pattern(40, 40, 0.08, seed)
    G = column_graph(P)
    rank = np.random.default_rng(seed).permutation(40)
    order = np.argsort(rank)
    np.testing.assert_array_equal(jones_plassmann(G, rank, max_rounds=10 ** 6), sequential_greedy(G, order))
    colors = sequential_greedy(G, order)
    improved = iterated_greedy(G, colors)
    assert improved.max() <= colors.max()
    assert_column_coloring(P, improved)


def test_large_banded_coloring_is_fast():
    import time

    P = banded_pattern(100_000, (-1, 0, 1))
    start = time.perf_counter()
    assert choose(P).ncolors == 3
    assert time.perf_counter() - start < 5.0
