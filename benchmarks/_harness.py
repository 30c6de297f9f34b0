"""What a workload is, and how it is timed and measured.

A workload gives one zero-argument callable per implementation ("dualgrad",
"numpy" for hand-written derivatives, and peers such as "torch"). Peers are
*builders*: importing the peer happens inside them, and an ``ImportError``
marks the peer as not installed, so a missing library is skipped, not fatal.
"""

from __future__ import annotations

import gc
import time
import timeit
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Builder = Callable[[], Callable[[], Any]]


@dataclass
class Workload:
    """One benchmark: its implementations (as builders) and its goals.

    ``time_goals[peer]`` is the largest acceptable ``dualgrad time / peer time``;
    ``memory_goals[peer]`` the same for peak traced memory (NumPy-based peers only,
    since tracemalloc sees NumPy's allocations but not torch's or JAX's).
    """

    name: str
    builders: dict[str, Builder]
    time_goals: dict[str, float] = field(default_factory=dict)
    memory_goals: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


def best_times(runs: dict[str, Callable[[], Any]], repeat: int, min_seconds: float = 0.02,
               settle_seconds: float = 0.05) -> dict:
    """Best-of-``repeat`` seconds per call of each callable, after a warm-up.

    Samples of the implementations are interleaved (one sample of each per round),
    so that load from other processes on the machine hits all of them alike.
    Each sample runs a callable often enough to last ``min_seconds``, with the garbage
    collector on (as users run; ``timeit`` alone would turn it off).

    Libraries with thread pools (PyTorch's OpenMP, JAX's XLA runtime) leave their
    worker threads spinning for a while after a call, which slows down whatever
    runs next on a machine with few cores. So each sample starts after a pause of
    ``settle_seconds``, and the order of the implementations rotates from round to
    round, so that no implementation always follows the same one. After the pause, one
    untimed call warms the caches again: a sample measures the steady state, not the
    first call after an idle spell (on a shared machine, up to twice as slow).
    """
    timers, numbers = {}, {}
    for impl, fn in runs.items():
        for _ in range(3):
            fn()
        # (with the garbage collector on, as users run: ``timeit`` turns it off by default, which
        # would hide what a workload that keeps a large graph alive pays for it, as B1's and B2's)
        timers[impl] = timer = timeit.Timer(fn, setup="gc.enable()")
        number, elapsed = 1, timer.timeit(1)
        while elapsed * number < min_seconds:
            number *= 2
        numbers[impl] = number
    best = dict.fromkeys(runs, float("inf"))
    order = list(timers)
    gc.collect()
    for round_number in range(repeat):
        shift = round_number % len(order)
        for impl in order[shift:] + order[:shift]:
            time.sleep(settle_seconds)
            runs[impl]()
            best[impl] = min(best[impl], timers[impl].timeit(numbers[impl]) / numbers[impl])
    return best


def peak_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (as traced by tracemalloc) during one call of ``fn``."""
    fn()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - base
