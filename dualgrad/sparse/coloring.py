"""Graph coloring of sparsity patterns (NumPy and ``scipy.sparse``; no per-element Python loop for
large patterns).

* ``color_columns(P)``: a partition of the columns of ``P`` (m x n) into structurally orthogonal
  groups (no row has two nonzeros in one group), i.e. a distance-2 coloring of the bipartite
  graph, so that ``J @ S`` with one seed column per group gives every nonzero directly
  (forward mode). ``color_rows(P)`` is the same for the rows (reverse mode).
* ``bicolor(P)``: rows with many nonzeros go to reverse mode, the rest to forward mode (or
  columns with many nonzeros to forward mode, the rest to reverse); each part is colored
  as above. An arrowhead needs 3 colors, where either direction alone needs ``n``.
* ``color_symmetric(P)``: for a Hessian, vertices of high degree get a color each and the
  others a distance-2 coloring of the rest of the pattern: a star coloring (every such
  coloring is one), decompressed directly (a tridiagonal Hessian: 3 colors, an arrowhead: 2).

Greedy colorings depend on the vertex order. ``color_columns`` takes the best of: the cyclic
coloring ``j mod c`` (the natural order's result on banded patterns, checked without a graph), and
greedy first-fit in natural, largest-first and smallest-last order; the best is then improved by
Culberson's iterated greedy (whole color classes recolored at once, never more colors). Greedy in a
given order is computed by Jones-Plassmann rounds, vectorised: each round colors every vertex whose
earlier neighbours are all colored, which gives the sequential result. Graphs up to ``_EXACT_ORDERS``
vertices get the classic orders exactly; larger ones largest-first with ties at random, a batched
smallest-last order, and the natural order only while it needs few rounds. No loop per vertex, except
Matula-Beck's smallest-last order on small graphs. It stops early at the lower bound, the largest
number of nonzeros in a row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

_EXACT_ORDERS = 500  # graphs up to this many vertices get the classic orders exactly (up to n rounds each)
_LARGE_ROUNDS = 2_000  # larger graphs: an order needing more Jones-Plassmann rounds than this is dropped
_SMALLEST_BATCH = 32  # batched smallest-last order: vertices removed per round, at least
_NATURAL_ROUNDS = 50  # (the natural order, rarely the best: banded patterns are the cyclic coloring's)
_GRAPH_BUDGET = 60_000_000  # pairs of nonzeros sharing a row (the column graph's size before merging)
_SEQUENTIAL_ACYCLIC = 100_000  # acyclic coloring: patterns up to this many entries get two vertex orders


@dataclass
class Coloring:
    """A partition for compressed evaluation.

    ``mode`` is "forward", "reverse" or "bidirectional"; ``columns`` / ``rows`` give each
    column's / row's color (-1: not seeded in that direction), ``forward_rows`` the rows whose
    entries come from forward mode in a bidirectional coloring (the rest come from reverse).
    """

    mode: str
    columns: np.ndarray | None
    rows: np.ndarray | None
    forward_rows: np.ndarray | None = None
    forward_columns: np.ndarray | None = None

    @property
    def n_forward(self) -> int:
        return 0 if self.columns is None else int(self.columns.max(initial=-1)) + 1

    @property
    def n_reverse(self) -> int:
        return 0 if self.rows is None else int(self.rows.max(initial=-1)) + 1

    @property
    def ncolors(self) -> int:
        return self.n_forward + self.n_reverse


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (NumPy 2's hashing ``unique`` is several times slower on large int arrays)."""
    a = np.sort(a)
    keep = np.ones(len(a), bool)
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _csr(P: sp.sparray | sp.spmatrix) -> sp.csr_array:
    P = sp.csr_array(P, dtype=bool)
    P.sum_duplicates()
    P.eliminate_zeros()
    return P


def graph_cost(P: sp.csr_array) -> int:
    """The number of (column, column) pairs sharing a row: the work of building the column graph."""
    counts = np.diff(P.indptr).astype(np.int64)
    return int((counts * counts).sum())


def column_graph(P: sp.csr_array) -> sp.csr_array:
    """Columns adjacent when they share a row (no self loops), symmetric CSR."""
    n = P.shape[1]
    Pi = sp.csr_array((np.ones(P.nnz, np.int32), P.indices, P.indptr), shape=P.shape)
    G = sp.csr_array(Pi.T @ Pi)
    G.setdiag(0)
    G.eliminate_zeros()
    G.sort_indices()
    if G.shape != (n, n):
        G.resize((n, n))
    return G


def _is_column_coloring(P: sp.csr_array, colors: np.ndarray) -> bool:
    """True if no row of ``P`` has two nonzeros in columns of one color (colors < 0: column not seeded;
    such a column must have no nonzero)."""
    c = colors[P.indices]
    if (c < 0).any():
        return False
    rows = np.repeat(np.arange(P.shape[0], dtype=np.int64), np.diff(P.indptr))
    width = int(colors.max(initial=0)) + 1
    return len(sorted_unique(rows * width + c)) == P.nnz


def _neighbours(G: sp.csr_array, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The neighbours of ``vertices`` in ``G``, flat, and for each the position of its vertex in ``vertices``."""
    starts = G.indptr[vertices].astype(np.int64)
    counts = G.indptr[vertices + 1] - starts
    ends = np.cumsum(counts)
    position = np.repeat(np.arange(len(vertices), dtype=np.int64), counts)
    offsets = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)
    return position, G.indices[offsets]


def _smallest_free(vertices: np.ndarray, G: sp.csr_array, colors: np.ndarray) -> np.ndarray:
    """For each vertex, the smallest color >= 0 none of its colored neighbours has (vectorised)."""
    position, neighbours = _neighbours(G, vertices)
    return _first_free(position, colors[neighbours], len(vertices))


def _first_free(position: np.ndarray, neighbour_colors: np.ndarray, count: int) -> np.ndarray:
    """For each of ``count`` vertices, the smallest color >= 0 not among ``neighbour_colors`` at its
    ``position`` (sorted; -1: uncolored). With fewer than 63 colors, the lowest zero bit of the OR of the
    neighbours' color bits; else by sorting."""
    if int(neighbour_colors.max(initial=-1)) < 63:
        bits = np.where(neighbour_colors >= 0, np.left_shift(np.uint64(1), np.maximum(neighbour_colors, 0)
                                                             .astype(np.uint64)), np.uint64(0))
        counts = np.bincount(position, minlength=count)
        used = np.zeros(count, np.uint64)
        nonempty = counts > 0
        if len(bits):
            used[nonempty] = np.bitwise_or.reduceat(bits, (np.cumsum(counts) - counts)[nonempty])
        return np.bitwise_count((~used & (used + np.uint64(1))) - np.uint64(1)).astype(np.int64)
    keep = neighbour_colors >= 0
    position, neighbour_colors = position[keep], neighbour_colors[keep].astype(np.int64)
    width = int(neighbour_colors.max(initial=0)) + 2
    key = sorted_unique(position * width + neighbour_colors)
    position, used = key // width, key % width
    first = np.searchsorted(position, np.arange(count))
    rank = np.arange(len(key), dtype=np.int64) - first[position]
    result = np.bincount(position, minlength=count).astype(np.int64)
    gap = used != rank
    np.minimum.at(result, position[gap], rank[gap])
    return result


def jones_plassmann(G: sp.csr_array, rank: np.ndarray, max_rounds: int = 200) -> np.ndarray | None:
    """Greedy first-fit coloring in the order ``rank`` (0 first), computed in rounds: a vertex is colored,
    with all others that are ready, as soon as all its earlier neighbours are, which gives the sequential
    result. Each round touches only the edges of the vertices it colors (a count of uncolored earlier
    neighbours per vertex), so all rounds together cost O(edges) plus a few NumPy calls per round.
    None if it needs more than ``max_rounds`` rounds (the longest chain of neighbours in increasing rank:
    the natural order on a banded pattern needs one round per vertex)."""
    n = G.shape[0]
    colors = np.full(n, -1, np.int64)
    source = np.repeat(np.arange(n, dtype=np.int64), np.diff(G.indptr))
    waiting = np.bincount(source[rank[G.indices] < rank[source]], minlength=n)
    ready = np.flatnonzero(waiting == 0)
    for _ in range(max_rounds):
        if not len(ready):
            return colors
        position, neighbours = _neighbours(G, ready)
        colors[ready] = _first_free(position, colors[neighbours], len(ready))
        later = neighbours[rank[neighbours] > rank[ready[position]]]
        np.subtract.at(waiting, later, 1)
        ready = sorted_unique(later[waiting[later] == 0])
    return colors if not len(ready) else None


def smallest_last_order(G: sp.csr_array) -> np.ndarray:
    """Matula-Beck smallest-last order (a Python loop with buckets: small graphs only, see
    ``batched_smallest_last_order``)."""
    n = G.shape[0]
    indptr, indices = G.indptr.tolist(), G.indices.tolist()
    degree = np.diff(G.indptr).tolist()
    buckets: dict[int, set] = {}
    for v, d in enumerate(degree):
        buckets.setdefault(d, set()).add(v)
    removed = [False] * n
    order = []
    low = 0
    for _ in range(n):
        while not buckets.get(low):
            low += 1
        v = buckets[low].pop()
        removed[v] = True
        order.append(v)
        for u in indices[indptr[v]:indptr[v + 1]]:
            if not removed[u]:
                d = degree[u]
                buckets[d].discard(u)
                degree[u] = d - 1
                buckets.setdefault(d - 1, set()).add(u)
        low = max(low - 1, 0)
    return np.asarray(order[::-1], np.int64)


def batched_smallest_last_order(G: sp.csr_array, rng: np.random.Generator, fraction: float = 0.01) -> np.ndarray:
    """Smallest-last order with vertices removed in batches (vectorised): each round removes the ``fraction``
    of the remaining vertices of smallest remaining degree (at least ``_SMALLEST_BATCH``; ties at random),
    smallest first, so that, as in Matula-Beck's order, removals lower their neighbours' degrees and the
    next rounds continue from there; at most about ``log(n) / fraction`` rounds. The order is the reverse
    of the removals."""
    n = G.shape[0]
    degree = np.diff(G.indptr).astype(np.int64)
    alive = np.ones(n, bool)
    remaining = rng.permutation(n).astype(np.int64)
    removed = []
    while len(remaining):
        d = degree[remaining]
        k = max(int(fraction * len(remaining)), _SMALLEST_BATCH)
        lowest = np.argpartition(d, k - 1)[:k] if k < len(d) else np.arange(len(d))
        batch = remaining[lowest[np.argsort(d[lowest], kind="stable")]]
        removed.append(batch)
        alive[batch] = False
        remaining = remaining[alive[remaining]]
        _, neighbours = _neighbours(G, batch)
        np.subtract.at(degree, neighbours[alive[neighbours]], 1)
    return np.concatenate(removed)[::-1] if removed else np.zeros(0, np.int64)


def _rank(order: np.ndarray) -> np.ndarray:
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank


def iterated_greedy(G: sp.csr_array, colors: np.ndarray, rounds: int = 4, seed: int = 0) -> np.ndarray:
    """Culberson's iterated greedy: recolor whole classes at once (a class is independent), the classes in
    reverse order, then by size, then at random (repeating); the number of colors never grows. Each round
    sorts the vertices and the edges by class once (a stable sort: within a class, by vertex)."""
    best = colors
    rng = np.random.default_rng(seed)
    degrees = np.diff(G.indptr)
    source = np.repeat(np.arange(G.shape[0], dtype=np.int64), degrees)
    for k in range(rounds):
        k_colors = int(best.max()) + 1
        key = best.astype(np.int16 if k_colors < 2 ** 15 else np.int64)  # (int16: NumPy's stable sort is a radix sort)
        by_class = np.argsort(key, kind="stable")
        vertex_bounds = np.concatenate([[0], np.cumsum(np.bincount(best, minlength=k_colors))])
        edges_by_class = G.indices[np.argsort(key[source], kind="stable")]
        edge_bounds = np.concatenate([[0], np.cumsum(np.bincount(best, weights=degrees, minlength=k_colors))
                                      .astype(np.int64)])
        sizes = np.diff(vertex_bounds)
        class_order = (np.arange(k_colors)[::-1], np.argsort(-sizes, kind="stable"), rng.permutation(k_colors))[k % 3]
        new = np.full_like(best, -1)
        for c in class_order:
            members = by_class[vertex_bounds[c]:vertex_bounds[c + 1]]
            position = np.repeat(np.arange(len(members), dtype=np.int64), degrees[members])
            new[members] = _first_free(position, new[edges_by_class[edge_bounds[c]:edge_bounds[c + 1]]], len(members))
        if new.max() + 1 <= best.max() + 1:
            best = new
    return best


def _orders(G: sp.csr_array, rng: np.random.Generator):
    """The vertex orders greedy coloring tries, as (rank, most rounds of Jones-Plassmann): natural,
    largest-first and smallest-last. Small graphs get the classic orders exactly (ties by index; smallest-last
    by Matula-Beck's loop); larger ones largest-first with ties at random, the batched smallest-last order,
    and the natural order only while it needs few rounds (banded patterns are the cyclic coloring's)."""
    n = G.shape[0]
    degrees = np.diff(G.indptr)
    small = n <= _EXACT_ORDERS
    yield np.arange(n, dtype=np.int64), n + 1 if small else _NATURAL_ROUNDS
    if small:
        yield _rank(np.argsort(-degrees, kind="stable")), n + 1
        yield _rank(smallest_last_order(G)), n + 1
    else:
        yield _rank(np.lexsort((rng.random(n), -degrees))), _LARGE_ROUNDS
        yield _rank(batched_smallest_last_order(G, rng)), _LARGE_ROUNDS


def _best_coloring(P: sp.csr_array, rng: np.random.Generator) -> np.ndarray:
    """A column coloring of ``P`` with few colors (see the module docstring)."""
    m, n = P.shape
    if n == 0:
        return np.zeros(0, np.int64)
    counts = np.diff(P.indptr)
    lower = max(int(counts.max(initial=0)), 1)
    present = np.zeros(n, bool)
    present[P.indices] = True
    candidates = []
    for c in range(lower, lower + 4):  # cyclic colorings: banded patterns, no graph needed
        candidate = np.arange(n, dtype=np.int64) % c
        if _is_column_coloring(P, candidate):
            if c == lower:  # (optimal)
                return _compact(candidate, present)
            candidates.append(candidate)
            break
    if graph_cost(P) > _GRAPH_BUDGET:  # (too large a graph: a cyclic coloring, or one color per column)
        return _compact(candidates[0] if candidates else np.arange(n, dtype=np.int64), present)
    G = column_graph(P)
    for rank, max_rounds in _orders(G, rng):
        colors = jones_plassmann(G, rank, max_rounds)
        if colors is not None:
            candidates.append(colors)
            if colors.max() + 1 <= lower:
                return _compact(colors, present)
    if not candidates:  # (a random order needs few rounds)
        candidates.append(jones_plassmann(G, rng.permutation(n), max_rounds=n + 1))
    # (iterated greedy improves the best start, the latest order on ties (smallest-last), by up to 16 rounds:
    # a round without fewer colors can prepare one with fewer. On the 2-D Brusselator the batched
    # smallest-last order's 13 colors become 11 after 4 rounds and 10 after 8 to 16)
    best = min(reversed(candidates), key=lambda c: int(c.max()))
    for seed in range(1, 5):
        if best.max() + 1 <= lower:
            break
        best = iterated_greedy(G, best, seed=seed)  # (never more colors)
    return _compact(best, present)


def _compact(colors: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Colors renumbered 0.. over the columns that have nonzeros; -1 for empty columns (never seeded)."""
    colors = np.where(present, colors, -1)
    used = sorted_unique(colors[colors >= 0])
    lookup = np.full(int(colors.max(initial=-1)) + 2, -1, np.int64)
    lookup[used] = np.arange(len(used))
    return np.where(colors >= 0, lookup[np.maximum(colors, 0)], -1)


def color_columns(P: sp.sparray, seed: int = 0) -> np.ndarray:
    """Each column's color (-1 for an empty column): columns of one color share no row."""
    return _best_coloring(_csr(P), np.random.default_rng(seed))


def color_rows(P: sp.sparray, seed: int = 0) -> np.ndarray:
    """Each row's color (-1 for an empty row): rows of one color share no column."""
    return _best_coloring(_csr(sp.csr_array(P).T), np.random.default_rng(seed))


def _lower_bound(P: sp.csr_array) -> int:
    return int(np.diff(P.indptr).max(initial=0))


def choose(P: sp.sparray, mode: str = "auto", seed: int = 0) -> Coloring:
    """The coloring for ``mode``: "forward", "reverse", "bidirectional" (one direction when no row or column
    is much denser than the others), or "auto" (fewest colors; forward on ties, as its pass is cheaper)."""
    P = _csr(P)
    PT = _csr(P.T)
    options = []
    if mode in ("auto", "forward"):
        if mode == "forward" or graph_cost(P) <= _GRAPH_BUDGET or _lower_bound(P) < 8:
            options.append(Coloring("forward", color_columns(P, seed), None))
    # (reverse mode needs at least as many colors as the densest column has nonzeros: skip it when forward
    # mode already does as well)
    forward_done = mode == "auto" and options and options[0].ncolors <= max(_lower_bound(PT), 1)
    # (a structurally symmetric pattern: the rows' coloring problem is the columns' one)
    forward_done = forward_done or (mode == "auto" and options and P.shape[0] == P.shape[1] and P.nnz == PT.nnz
                                    and np.array_equal(P.indptr, PT.indptr) and np.array_equal(P.indices, PT.indices))
    if mode in ("auto", "reverse") and not forward_done:
        if mode == "reverse" or graph_cost(PT) <= _GRAPH_BUDGET or _lower_bound(PT) < 8:
            options.append(Coloring("reverse", None, color_columns(PT, seed)))
    best_single = min((o.ncolors for o in options), default=None)
    if mode == "bidirectional" or (mode == "auto" and (best_single is None or best_single > 2)):
        options.extend(_bicolorings(P, PT, seed))
    if not options and mode == "bidirectional":  # (no dense row or column to split off: one direction)
        return choose(P, "auto", seed)
    if not options:
        options.append(Coloring("forward", np.arange(P.shape[1], dtype=np.int64), None))
    return min(options, key=lambda o: (o.ncolors, o.mode != "forward"))


def _candidate_counts(counts: np.ndarray) -> list[int]:
    """How many of the densest rows (or columns) to split off: 1, 2, 3, 5, 8, ... while they are denser
    than the rest's median."""
    order = np.sort(counts)[::-1]
    median = float(np.median(counts)) if len(counts) else 0.0
    ks, k, previous = [], 1, 0
    while k <= min(len(counts) - 1, 64):
        if order[k - 1] <= 2 * median:
            break
        ks.append(k)
        k, previous = k + previous, k
    return ks


def _bicolorings(P: sp.csr_array, PT: sp.csr_array, seed: int) -> list[Coloring]:
    """Dense rows by reverse mode (the rest forward), or dense columns by forward mode (the rest reverse)."""
    m, n = P.shape
    options = []
    row_counts, col_counts = np.diff(P.indptr), np.diff(PT.indptr)
    for k in _candidate_counts(row_counts):
        dense = np.argsort(-row_counts, kind="stable")[:k]
        forward_rows = np.ones(m, bool)
        forward_rows[dense] = False
        rest = P[forward_rows]
        if graph_cost(rest) > _GRAPH_BUDGET:
            continue
        columns = color_columns(rest, seed)
        row_colors = np.full(m, -1, np.int64)
        row_colors[dense] = color_columns(_csr(P[dense].T), seed)
        options.append(Coloring("bidirectional", columns, row_colors, forward_rows=forward_rows))
    for k in _candidate_counts(col_counts):
        dense = np.argsort(-col_counts, kind="stable")[:k]
        forward_columns = np.zeros(n, bool)
        forward_columns[dense] = True
        rest = PT[~forward_columns]
        if graph_cost(rest) > _GRAPH_BUDGET:
            continue
        rows = color_columns(rest, seed)
        col_colors = np.full(n, -1, np.int64)
        col_colors[dense] = color_columns(_csr(P[:, dense]), seed)
        options.append(Coloring("bidirectional", col_colors, rows, forward_columns=forward_columns))
    return options


@dataclass
class SymmetricColoring:
    """A Hessian's columns in groups: ``colors[j]`` (-1: an empty column); ``dense`` the vertices whose
    columns are evaluated alone (their rows are read from them by symmetry)."""

    colors: np.ndarray
    dense: np.ndarray

    @property
    def ncolors(self) -> int:
        return int(self.colors.max(initial=-1)) + 1


def color_symmetric(P: sp.sparray, seed: int = 0) -> SymmetricColoring:
    """A star coloring of a symmetric pattern, for direct decompression (see the module docstring)."""
    P = _csr(P)
    P = _csr(P + P.T)
    n = P.shape[0]
    counts = np.diff(P.indptr)
    best = None
    for k in [0, *_candidate_counts(counts)]:
        dense = np.argsort(-counts, kind="stable")[:k]
        rest_mask = np.ones(n, bool)
        rest_mask[dense] = False
        rest = P[rest_mask][:, rest_mask]
        if graph_cost(rest) > _GRAPH_BUDGET:
            continue
        colors = np.full(n, -1, np.int64)
        rest_colors = color_columns(rest, seed)
        colors[rest_mask] = np.where(rest_colors >= 0, rest_colors + k, -1)
        colors[dense] = np.arange(k)
        candidate = SymmetricColoring(_compact(colors, colors >= 0), np.sort(dense))
        if best is None or candidate.ncolors < best.ncolors:
            best = candidate
    if best is None:
        best = SymmetricColoring(np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64))
    return best


# -- acyclic coloring (decompression by substitution) ---------------------------------------------------------
def _acyclic_greedy(P: sp.csr_array, order: np.ndarray) -> np.ndarray:
    """Greedy acyclic coloring in ``order``: a distance-1 coloring in which every two-colored subgraph is a
    forest (a vertex may not take color ``c`` if two of its neighbours of one color ``d`` are already
    connected by ``c``/``d`` edges; one union-find per color pair). A Python loop over vertices."""
    indptr, indices = P.indptr.tolist(), P.indices.tolist()
    n = P.shape[0]
    colors = [-1] * n
    parent: dict = {}  # (c, d, vertex) -> parent in the forest of colors c < d

    def find(key: tuple) -> tuple:
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(key, key) != root:  # (path compression)
            parent[key], key = root, parent[key]
        return root

    for v in order.tolist():
        neighbours = [u for u in indices[indptr[v]:indptr[v + 1]] if u != v and colors[u] >= 0]
        used = {colors[u] for u in neighbours}
        by_color: dict = {}
        for u in neighbours:
            by_color.setdefault(colors[u], []).append(u)
        c = 0
        while True:
            if c not in used and not any(
                    len({find((min(c, d), max(c, d), u)) for u in group}) < len(group)
                    for d, group in by_color.items() if len(group) > 1):
                break
            c += 1
        colors[v] = c
        for u in neighbours:
            d = colors[u]
            a, b = find((min(c, d), max(c, d), v)), find((min(c, d), max(c, d), u))
            if a != b:
                parent[a] = b
    return np.asarray(colors, np.int64)


@dataclass
class AcyclicColoring:
    """An acyclic coloring and its substitution plan: ``solve`` holds the unit lower-triangular system
    ``L h = b`` whose unknowns are the off-diagonal entries (upper triangle, ``edges``) in solving order
    and whose right-hand side ``b`` is read from the compressed product at ``rhs`` (flat index into the
    ``(ncolors, n)`` array)."""

    colors: np.ndarray
    edges: np.ndarray  # (n_edges, 2): i < j, in solving order
    rhs: np.ndarray
    lower: sp.csr_array

    @property
    def ncolors(self) -> int:
        return int(self.colors.max(initial=-1)) + 1


def color_acyclic(P: sp.sparray) -> AcyclicColoring:
    """An acyclic coloring of a symmetric pattern (fewer colors than a star coloring: 2 for a tridiagonal
    Hessian) and the order in which substitution recovers the entries: leaves of each two-colored tree first.

    The greedy pass is a Python loop over the vertices, in natural order (and largest-first too, keeping the
    better, for patterns up to ``_SEQUENTIAL_ACYCLIC`` entries); the substitution plan is vectorised."""
    P = _csr(P)
    P = _csr(P + P.T)
    n = P.shape[0]
    degrees = np.diff(P.indptr)
    orders = [np.arange(n)]
    if P.nnz <= _SEQUENTIAL_ACYCLIC:  # (the greedy pass is a Python loop: a second order on small patterns)
        orders.append(np.argsort(-degrees, kind="stable"))
    colors = min((_acyclic_greedy(P, order) for order in orders), key=lambda c: int(c.max(initial=-1)))
    coo = sp.triu(P, k=1, format="coo")
    ends = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
    edges, rhs, lower = _substitution_plan(colors, ends, n)
    return AcyclicColoring(colors, edges, rhs, lower)


def _substitution_plan(colors: np.ndarray, ends: np.ndarray, n: int) -> tuple:
    """The order in which substitution recovers the off-diagonal entries ``ends`` (i < j) of an acyclically
    colored pattern, vectorised.

    Each vertex ``v`` of color ``c`` appears once per color pair ``{c, d}`` it has neighbours of, as a node of
    the two-colored forest of that pair; compressed entry ``(d, v)`` is the sum of the edges at that node.
    A breadth-first search from a root per tree gives each non-root node ``w`` its parent edge, recovered
    from ``w``'s equation once the edges to its children are: deepest nodes first, a unit lower triangular
    system ``L h = b`` (``L``'s off-diagonal ones are the children's edges)."""
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n_edges = len(ends)
    if not n_edges:
        return ends, np.zeros(0, np.int64), sp.csr_array((0, 0))
    k = int(colors.max()) + 1
    ci, cj = colors[ends[:, 0]], colors[ends[:, 1]]
    pair = np.minimum(ci, cj) * k + np.maximum(ci, cj)
    keys = np.concatenate([ends[:, 0], ends[:, 1]]) * (k * k) + np.concatenate([pair, pair])
    node_keys = sorted_unique(keys)
    node = np.searchsorted(node_keys, keys)
    a, b = node[:n_edges], node[n_edges:]  # each edge's two nodes
    n_nodes = len(node_keys)
    n_trees, tree = connected_components(sp.csr_array((np.ones(n_edges), (a, b)), shape=(n_nodes, n_nodes)),
                                         directed=False)
    if n_edges != n_nodes - n_trees:
        raise RuntimeError("color_acyclic: the coloring has a two-colored cycle (an internal error)")
    roots = np.full(n_trees, n_nodes, np.int64)
    np.minimum.at(roots, tree, np.arange(n_nodes))
    top = n_nodes  # (a node above every tree's root: one search reaches them all)
    joined = sp.csr_array((np.ones(n_edges + n_trees), (np.concatenate([a, np.full(n_trees, top)]),
                                                        np.concatenate([b, roots]))), shape=(top + 1, top + 1))
    order, parent = breadth_first_order(joined, top, directed=False, return_predecessors=True)
    depth_rank = np.empty(n_nodes + 1, np.int64)
    depth_rank[order] = np.arange(len(order))
    child = np.where(parent[a] == b, a, b)  # the endpoint farther from its root
    up = np.where(child == a, b, a)
    solve_order = np.argsort(-depth_rank[child], kind="stable")  # deepest first
    position = np.empty(n_edges, np.int64)
    position[solve_order] = np.arange(n_edges)
    edge_above = np.full(n_nodes + 1, -1, np.int64)  # each non-root node's parent edge
    edge_above[child] = np.arange(n_edges)
    # the vertex of each child node, and the other color of its pair: its equation is compressed (d, v)
    vertex = np.concatenate([ends[:, 0], ends[:, 1]])[np.where(child == a, 0, n_edges) + np.arange(n_edges)]
    other = np.where(child == a, cj, ci)
    rhs = (other * n + vertex)[solve_order]
    has_row = edge_above[up] >= 0  # an edge below a non-root node enters that node's equation
    rows = position[edge_above[up[has_row]]]
    cols = position[np.flatnonzero(has_row)]
    lower = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n_edges, n_edges)) + sp.identity(
        n_edges, format="csr")
    return ends[solve_order], rhs, sp.csr_array(lower)
