"""``Compare``: measurements as torch's table, one per label: a row per (threads, env, sub-label), a
column per description, the median time of each in one unit."""

from __future__ import annotations

import math
from enum import Enum

from .common import Measurement, select_unit

__all__ = ["Colorize", "Compare"]

BEST, GOOD, BAD, VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
BOLD, TERMINATE = "\033[1m", "\033[0m"
UNIT_NAMES = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


class Colorize(Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (halves to even)."""
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return round(x / scale) * scale


class Compare:
    """torch's ``Compare``: ``print(Compare(measurements))`` shows one table per label.

    >>> from dualgrad.utils.benchmark import Compare, Measurement, TaskSpec
    >>> ms = [Measurement(1, [t], TaskSpec("f", "pass", label="sum", sub_label=row, description=col))
    ...       for row, col, t in [("a", "x", 1.5e-5), ("a", "y", 3e-5), ("b", "x", 2e-5), ("b", "y", 4e-5)]]
    >>> print("\\n".join(line.rstrip() for line in str(Compare(ms)).splitlines()))
    [--------- sum ---------]
             |   x    |   y
    1 threads: --------------
          a  |  15.0  |  30.0
          b  |  20.0  |  40.0
    <BLANKLINE>
    Times are in microseconds (us).
    """

    def __init__(self, results: list[Measurement]):
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results: list[Measurement]) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Show each time with the figures its spread makes significant."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color each time against the best of its column (or row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark times whose spread is large, ``(! XX%)``."""
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return "\n".join(self._table(group) for group in by_label.values())

    # -- one table -------------------------------------------------------------------------------
    def _table(self, results: list[Measurement]) -> str:
        unit, scale = select_unit(min(m.median for m in results))
        row_keys = list(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in results))
        row_keys.sort(key=lambda key: (key[0], key[1] or ""))
        column_keys = list(dict.fromkeys(m.description for m in results))
        grid: list[list[Measurement | None]] = [[None] * len(column_keys) for _ in row_keys]
        for m in results:
            grid[row_keys.index((m.num_threads, m.env, m.as_row_name))][column_keys.index(m.description)] = m
        envs = {m.env for m in results}
        render_env = len(envs) > 1
        env_width = max(len(e or "") for e in envs) if render_env else 0
        groups, previous_threads, previous_env = [], None, ""
        for (threads, env, _), row in zip(row_keys, grid):
            if threads != previous_threads:
                groups.append([])
                previous_threads, previous_env = threads, ""
            groups[-1].append((row, render_env and env != previous_env))
            previous_env = env
        formats = [self._column_format([row[j] for row in grid], scale) for j in range(len(column_keys))]
        highlight = [self._highlight_warnings and any(row[j] is not None and row[j].has_warnings for row in grid)
                     for j in range(len(column_keys))]
        text_rows = [["", *(key or "" for key in column_keys)]]
        for group in groups:
            for row, show_env in group:
                first = next(m for m in row if m is not None)
                env = f"({first.env})" if show_env else ""
                cells = ["  " + env.ljust(env_width + 4) + first.as_row_name]
                for m, (template, digits), marked in zip(row, formats, highlight):
                    cells.append(self._cell(m, template, digits, marked, scale))
                text_rows.append(cells)
        widths = [max(len(r[i]) for r in text_rows) for i in range(len(text_rows[0]))]
        header = "  |  ".join(c.center(w) for c, w in zip(text_rows[0], widths))
        lines, index = [header], 1
        for group in groups:
            lines.append(f"{self._threads(group)} threads: ".ljust(len(header), "-"))
            for row, _ in group:
                lines.append("  |  ".join(self._finish(text_rows[index], widths, row, group)))
                index += 1
        label = results[0].label
        warn = self._highlight_warnings and any(m.has_warnings for m in results)
        return (f"[{(' ' + (label or '') + ' ').center(len(header) - 2, '-')}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {UNIT_NAMES[unit]}s ({unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if warn else ""))

    @staticmethod
    def _threads(group: list) -> int:
        return next(m for row, _ in group for m in row if m is not None).num_threads

    def _column_format(self, column: list[Measurement | None], scale: float) -> tuple[str, int]:
        present = [m for m in column if m is not None]
        leading = [math.ceil(math.log10(m.median / scale)) for m in present]
        decimals = (min(max(_significant_figures(m) - d, 0) for m, d in zip(present, leading))
                    if self._trim_significant_figures else 1)
        length = max(leading) + decimals + (1 if decimals else 0)
        return f"{{:>{length}.{decimals}f}}", decimals

    def _cell(self, m: Measurement | None, template: str, digits: int, marked: bool, scale: float) -> str:
        def text(value: float, sigfigs: int, spread: float | None) -> str:
            if self._trim_significant_figures:
                value = trim_sigfig(value, sigfigs)
            mark = f" (! {spread * 100:.0f}%)" if marked and spread is not None else ""
            return template.format(value) + mark.rjust(7 if marked else 0)

        if m is None:
            return " " * len(text(1, 1, None))
        return text(m.median / scale, _significant_figures(m), m.iqr / m.median if m.has_warnings else None)

    def _finish(self, cells: list[str], widths: list[int], row: list, group: list) -> list[str]:
        """The row's cells padded to the column widths, colored against the best time if asked."""
        out = [cells[0].ljust(widths[0])]
        if self._colorize == Colorize.ROWWISE:
            best = [min(m.median for m in row if m is not None)] * len(row)
        elif self._colorize == Colorize.COLUMNWISE:
            best = [min((r[j].median for r, _ in group if r[j] is not None), default=None) for j in range(len(row))]
        else:
            best = [None] * len(row)
        for cell, width, m, top in zip(cells[1:], widths[1:], row, best):
            cell = cell.center(width)
            if self._colorize != Colorize.NONE and m is not None and top is not None:
                cell = _color(cell, m.median, top)
            out.append(cell)
        return out


def _color(segment: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


def _significant_figures(m: Measurement) -> int:
    """torch's estimate: the figures of the median that the 90% confidence interval of the middle half of
    the times leaves significant (1 to 4)."""
    times = sorted(m.times)
    middle = times[len(times) // 4:math.ceil(3 * len(times) / 4)]
    mean = sum(middle) / len(middle)
    std = math.sqrt(sum((t - mean) ** 2 for t in middle) / len(middle))
    interval = max(1.645 * std / math.sqrt(len(middle)), 25e-9)
    return min(max(math.floor(math.log10(m.median / interval)), 1), 4)
