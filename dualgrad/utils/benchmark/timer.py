"""``Timer``: torch's ``timeit`` wrapper (``timeit``, ``blocked_autorange``, ``adaptive_autorange``)."""

from __future__ import annotations

import timeit as _timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from .common import Measurement, TaskSpec

__all__ = ["Timer"]


class Timer:
    """Time a Python statement, as ``torch.utils.benchmark.Timer``.

    ``stmt`` runs ``number`` times after ``setup``, with the names of ``globals`` (``torch`` and ``dg`` are
    dualgrad unless given, so that a ported statement such as ``"torch.mm(a, b)"`` runs unchanged).
    ``num_threads`` is printed; NumPy's own threads are not changed.

    >>> import dualgrad as dg
    >>> from dualgrad.utils.benchmark import Timer
    >>> t = Timer(stmt="(x * x).sum()", setup="x = torch.ones(10)", label="square", description="10 elements")
    >>> m = t.timeit(100)
    >>> print("\\n".join(repr(m).splitlines()[1:3]))
    square
    10 elements
    >>> m.number_per_run, len(m.times), m.median > 0
    (100, 1, True)
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = _timeit.default_timer, globals: dict[str, Any] | None = None,  # noqa: A002
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: str = "python"):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if str(language).lower() not in ("python", "py", "language.python"):
            raise ValueError(f"Timer(): only Python statements are supported, not language={language!r}")
        import dualgrad

        self._globals = dict(globals or {})
        self._globals.setdefault("torch", dualgrad)
        self._globals.setdefault("dg", dualgrad)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)

    def _timeit(self, number: int) -> float:
        return self._timer.timeit(number=max(number, 0))

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up of ``number // 100`` runs, at least 2)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number_per_run=number, raw_times=[self._timeit(number)], task_spec=self._task_spec)

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block: a power of 10 making the timer's overhead negligible, as torch's."""
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            time_taken = self._timeit(number)
            if (overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000) or time_taken > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _measure(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
                 max_run_time: float | None, callback: Callable[[int, float], Any] | None) -> list[float]:
        total, times, can_stop = 0.0, [], False
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a size chosen by ``_estimate_block_size`` until ``min_run_time`` seconds are spent."""
        number = self._estimate_block_size(min_run_time)
        times = self._measure(number, lambda times: True, min_run_time, None, callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Blocks until the interquartile range is below ``threshold`` times the median (more than 3 blocks,
        at least ``min_run_time``, at most ``max_run_time`` seconds)."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float]) -> bool:
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)

        times = self._measure(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
