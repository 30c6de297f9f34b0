"""What a workload is, and how it is timed and measured.

A workload gives one zero-argument callable per implementation ("dualgrad",
"numpy" for hand-written derivatives, and peers such as "torch"). Peers are
*builders*: importing the peer happens inside them, and an ``ImportError``
marks the peer as not installed, so a missing library is skipped, not fatal.
"""

from __future__ import annotations

import gc
import timeit
import tracemalloc
from dataclasses import dataclass, field
from typing import Any, Callable

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


def best_time(fn: Callable[[], Any], repeat: int, min_seconds: float = 0.05) -> float:
    """Best-of-``repeat`` seconds per call, after a warm-up, each sample lasting ``min_seconds``."""
    for _ in range(3):
        fn()
    timer = timeit.Timer(fn)
    number, elapsed = 1, timer.timeit(1)
    while elapsed * number < min_seconds:
        number *= 2
    gc.collect()
    return min(timer.repeat(repeat=repeat, number=number)) / number


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
