"""Column colorings are no worse than the classic greedy orders (natural, largest-first, smallest-last) on
generated patterns, and within twice the row count on 2-D stencils."""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from sparse_greedy_reference import sequential_greedy  # noqa: E402

from dualgrad.sparse.coloring import (  # noqa: E402
    _is_column_coloring,
    choose,
    color_columns,
    column_graph,
    smallest_last_order,
)


def random_pattern(m, n, density, seed):
    return sp.csr_array(sp.random_array((m, n), density=density, rng=np.random.default_rng(seed), format="csr") != 0)


def stencil_pattern(k, periodic):
    ring = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(k, k), format="lil")
    if periodic:
        ring[0, k - 1] = ring[k - 1, 0] = 1.0
    lap = sp.kron(ring, sp.eye_array(k)) + sp.kron(sp.eye_array(k), ring)
    return sp.csr_array(sp.block_array([[lap, sp.eye_array(k * k)], [sp.eye_array(k * k), lap]]) != 0)


PATTERNS = [(f"random{seed}", random_pattern(80, 60, d, seed)) for seed, d in enumerate([0.03, 0.06, 0.1, 0.15])]
PATTERNS += [("stencil", stencil_pattern(8, False)), ("periodic_stencil", stencil_pattern(9, True))]


@pytest.mark.parametrize("name, P", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_no_worse_than_the_classic_orders(name, P):
    colors = color_columns(P)
    assert _is_column_coloring(P, colors)
    G = column_graph(P)
    n = P.shape[1]
    degrees = np.diff(G.indptr)
    classic = [sequential_greedy(G, order) for order in
               (np.arange(n), np.argsort(-degrees, kind="stable"), smallest_last_order(G))]
    assert colors.max() + 1 <= min(int(c.max()) + 1 for c in classic)


@pytest.mark.parametrize("k", [8, 9, 16])
def test_stencils_within_twice_the_row_count(k):
    P = stencil_pattern(k, True)
    coloring = choose(P)
    assert coloring.mode == "forward"
    assert coloring.ncolors <= 2 * int(np.diff(P.indptr).max())


def test_large_graphs_no_worse_than_the_classic_orders():
    # (above _EXACT_ORDERS vertices: largest-first with random ties and the batched smallest-last order)
    from dualgrad.sparse.coloring import _EXACT_ORDERS

    P = stencil_pattern(36, True)
    n = P.shape[1]
    assert n > _EXACT_ORDERS
    colors = color_columns(P)
    assert _is_column_coloring(P, colors)
    G = column_graph(P)
    degrees = np.diff(G.indptr)
    classic = [sequential_greedy(G, order) for order in
               (np.arange(n), np.argsort(-degrees, kind="stable"), smallest_last_order(G))]
    assert colors.max() + 1 <= min(int(c.max()) + 1 for c in classic)


def test_batched_smallest_last_order_is_a_permutation_ending_in_a_low_degree_vertex():
    from dualgrad.sparse.coloring import batched_smallest_last_order

    G = column_graph(random_pattern(300, 200, 0.03, 7))
    order = batched_smallest_last_order(G, np.random.default_rng(0))
    np.testing.assert_array_equal(np.sort(order), np.arange(200))
    assert np.diff(G.indptr)[order[-1]] == np.diff(G.indptr).min()


@pytest.mark.parametrize("width", [5, 63, 64, 70])
def test_dense_patterns_need_one_color_per_column(width):
    # (63 colors and more: the smallest free color is found by sorting instead of a bit mask)
    P = sp.csr_array(np.ones((3, width), bool))
    colors = color_columns(P)
    np.testing.assert_array_equal(np.sort(colors), np.arange(width))


def test_jones_plassmann_gives_the_sequential_result_in_the_classic_orders():
    from dualgrad.sparse.coloring import _rank, jones_plassmann

    G = column_graph(stencil_pattern(12, True))
    n = G.shape[0]
    degrees = np.diff(G.indptr)
    for order in (np.arange(n), np.argsort(-degrees, kind="stable"), smallest_last_order(G)):
        np.testing.assert_array_equal(jones_plassmann(G, _rank(order), n + 1), sequential_greedy(G, order))
    assert jones_plassmann(G, np.arange(n), max_rounds=3) is None  # (the natural order needs more rounds)


@pytest.mark.parametrize("seed", range(3))
def test_large_random_patterns_get_valid_colorings_in_each_direction(seed):
    P = random_pattern(2500, 3000, 0.002, seed)
    forward, reverse = choose(P, "forward"), choose(P, "reverse")
    assert _is_column_coloring(P, forward.columns)
    assert _is_column_coloring(sp.csr_array(P.T), reverse.rows)
    # (greedy's bound: at most one color more than the largest degree of the column graph)
    assert forward.ncolors <= int(np.diff(column_graph(P).indptr).max()) + 1
    assert choose(P).ncolors <= min(forward.ncolors, reverse.ncolors)
