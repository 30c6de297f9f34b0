"""Index sets, one per element of an array, held as one CSR-like structure (no Python loop per element).

A ``RowSets`` of ``n`` rows holds, for each row ``r``, a sorted set of non-negative
integer keys ``keys[indptr[r]:indptr[r + 1]]``. Detection keeps two of them per traced array:
the first-order sets (which inputs an element depends on) and the second-order sets (which
unordered pairs ``(i, j)``, ``i <= j``, of inputs interact nonlinearly in it, encoded as
``i * n_inputs + j``).

Every propagation rule reduces to ``combine``: out-row ``o`` is the union of the rows
``i`` of some sets, for a list of ``(o, i)`` pairs (a gather, a broadcast, a reduction,
or a product with the nonzero structure of a constant matrix).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_INDEX = np.int64
LIMIT = 400_000_000  # index-set entries in one intermediate (8 bytes each, several arrays: GBs)


def _check_size(total: int) -> None:
    if total > LIMIT:
        raise MemoryError(
            f"sparsity detection: an intermediate pattern has {total} entries (the limit is {LIMIT}): the "
            "Jacobian or Hessian is nearly dense at this size (a sum of all inputs fed into a nonlinear "
            "function, a dense matrix product); use dense derivatives (dualgrad.func.jacfwd / hessian)")


class RowSets:
    """``n_rows`` sorted sets of keys in ``[0, width)``, as ``indptr`` and ``keys`` arrays."""

    __slots__ = ("indptr", "keys", "width")

    def __init__(self, indptr: np.ndarray, keys: np.ndarray, width: int):
        self.indptr = indptr
        self.keys = keys
        self.width = width

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.indptr)

    @staticmethod
    def empty(n_rows: int, width: int) -> RowSets:
        return RowSets(np.zeros(n_rows + 1, _INDEX), np.zeros(0, _INDEX), width)

    @staticmethod
    def identity(n: int) -> RowSets:
        """Row ``i`` is ``{i}``: the first-order sets of the input itself."""
        return RowSets(np.arange(n + 1, dtype=_INDEX), np.arange(n, dtype=_INDEX), n)

    @staticmethod
    def from_pairs(rows: np.ndarray, keys: np.ndarray, n_rows: int, width: int, unique: bool = False) -> RowSets:
        """The sets holding ``keys[k]`` in row ``rows[k]`` (duplicates removed unless ``unique``)."""
        rows = np.asarray(rows, _INDEX)
        keys = np.asarray(keys, _INDEX)
        if not unique and len(keys):
            if n_rows * width < 2 ** 62:  # (a sort, not np.unique: NumPy 2's hashing unique is slower here)
                # (stable: timsort merges the sorted runs the sources give in linear time)
                combined = rows * width  # (in place from here on: at n = 10^6 each temporary is tens of MB)
                combined += keys
                combined.sort(kind="stable")
                keep = np.empty(len(combined), bool)
                keep[0] = True
                np.not_equal(combined[1:], combined[:-1], out=keep[1:])
                if not keep.all():
                    combined = combined[keep]
                rows = combined // width  # (NumPy divides by a scalar fast; % is ~10x slower)
                keys = rows * width
                np.subtract(combined, keys, out=keys)
            else:  # (a key space too large to combine with the row: sort the pairs instead)
                order = np.lexsort((keys, rows))
                rows, keys = rows[order], keys[order]
                keep = np.ones(len(rows), bool)
                keep[1:] = (rows[1:] != rows[:-1]) | (keys[1:] != keys[:-1])
                rows, keys = rows[keep], keys[keep]
        indptr = np.zeros(n_rows + 1, _INDEX)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
        return RowSets(indptr, keys, width)

    def uniform(self) -> int:
        """The number of keys of every row if all rows have as many, else -1."""
        n = self.n_rows
        total = int(self.indptr[-1])
        if n == 0 or total % n:
            return -1
        k = total // n
        return k if np.array_equal(self.indptr, np.arange(n + 1, dtype=_INDEX) * k) else -1

    def entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(position, key)`` of every entry of the rows ``rows`` (in order, with repetitions):
        ``position[k]`` is the index into ``rows`` the entry belongs to."""
        rows = np.asarray(rows, _INDEX)
        k = self.uniform()
        if k == 1:  # (one key per row, as the input's own sets: no repeat needed)
            return np.arange(len(rows), dtype=_INDEX), self.keys[rows]
        if k > 1:
            _check_size(k * len(rows))
            position = np.repeat(np.arange(len(rows), dtype=_INDEX), k)
            return position, self.keys[(rows[:, None] * k + np.arange(k, dtype=_INDEX)).ravel()]
        starts = self.indptr[rows]
        counts = self.indptr[rows + 1] - starts
        total = int(counts.sum())
        _check_size(total)
        position = np.repeat(np.arange(len(rows), dtype=_INDEX), counts)
        offsets = np.arange(total, dtype=_INDEX) - np.repeat(np.cumsum(counts) - counts, counts)
        return position, self.keys[np.repeat(starts, counts) + offsets]

    def take(self, rows: np.ndarray) -> RowSets:
        """Row ``k`` of the result is row ``rows[k]`` of these sets (a gather; no union needed)."""
        rows = np.asarray(rows, _INDEX).ravel()
        counts = self.indptr[rows + 1] - self.indptr[rows]
        indptr = np.zeros(len(rows) + 1, _INDEX)
        np.cumsum(counts, out=indptr[1:])
        return RowSets(indptr, self.entries(rows)[1], self.width)


def combine(sources: Sequence[tuple[RowSets, np.ndarray, np.ndarray]], n_rows: int, width: int) -> RowSets:
    """Out-row ``o`` = union over each ``(sets, out, rows)`` of ``sets[rows[k]]`` for every ``k`` with
    ``out[k] == o``."""
    live = [s for s in sources if s[0] is not None and len(s[0].keys)]
    if len(live) == 1 and len(live[0][1]) == n_rows and _is_range(live[0][1]):
        return live[0][0].take(live[0][2])  # (out-row k from exactly one row: a gather, no union)
    all_rows, all_keys = [], []
    for sets, out, rows in sources:
        if sets is None or not len(sets.keys):
            continue
        position, keys = sets.entries(rows)
        all_rows.append(np.asarray(out, _INDEX)[position])
        all_keys.append(keys)
    if not all_rows:
        return RowSets.empty(n_rows, width)
    return RowSets.from_pairs(np.concatenate(all_rows), np.concatenate(all_keys), n_rows, width)


def _is_range(out: np.ndarray) -> bool:
    """True if ``out`` is ``0, 1, ..., len(out) - 1``."""
    out = np.asarray(out)
    return bool(len(out) == 0 or (out[0] == 0 and out[-1] == len(out) - 1 and (np.diff(out) == 1).all()))


def pairs_within(sets: RowSets, n_inputs: int) -> RowSets:
    """Row ``r`` of the result holds every unordered pair ``(i, j)``, ``i <= j``, of ``sets``'s row ``r``
    (encoded ``i * n_inputs + j``): the second-order sets of a nonlinear function of one argument."""
    return cross_pairs(sets, sets, n_inputs)


def cross_pairs(a: RowSets, b: RowSets, n_inputs: int) -> RowSets:
    """Row ``r`` holds the pairs ``{min(i, j), max(i, j)}`` for ``i`` in ``a[r]`` and ``j`` in ``b[r]``."""
    n_rows = a.n_rows
    width = n_inputs * n_inputs
    if not len(a.keys) or not len(b.keys):
        return RowSets.empty(n_rows, width)
    row_a = np.repeat(np.arange(n_rows, dtype=_INDEX), a.counts)
    repeats = b.counts[row_a]  # each entry of a meets every entry of b's same row
    _check_size(int(repeats.sum()))
    first = np.repeat(a.keys, repeats)
    rows = np.repeat(row_a, repeats)
    offsets = np.arange(len(first), dtype=_INDEX) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    second = b.keys[b.indptr[rows] + offsets]
    low, high = np.minimum(first, second), np.maximum(first, second)
    return RowSets.from_pairs(rows, low * n_inputs + high, n_rows, width)
