"""How backward time and memory grow with the size of the graph (issue 9).

``python -m benchmarks.scaling [--sizes 10000 30000 100000] [--repeat 3]``

For a chain of ``n`` sin ops and for a fan-out/fan-in of width ``n`` (``x``
feeds ``n`` branches ``sin(c_i * x)``, summed by a chain of additions) it
prints the best-of-``repeat`` seconds of a first-order ``grad``, of a
``grad(..., create_graph=True)`` followed by a second-order ``grad``, and the
peak traced memory of building the graph plus the first-order pass, each per
op. Linear growth means the per-op columns stay flat as ``n`` grows.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

import dualgrad as dg


def chain(n: int) -> tuple[dg.Tensor, dg.Tensor]:
    x = dg.tensor(np.full(4, 0.5), requires_grad=True)
    y = x
    for _ in range(n):
        y = y.sin()
    return x, y.sum()


def fan(n: int) -> tuple[dg.Tensor, dg.Tensor]:
    x = dg.tensor(np.full(4, 0.5), requires_grad=True)
    total = None
    for c in np.linspace(0.5, 1.5, n):
        branch = (x * float(c)).sin()
        total = branch if total is None else total + branch
    return x, total.sum()


def _first(graph: Callable, n: int) -> Callable[[], object]:
    x, loss = graph(n)
    return lambda: dg.grad(loss, x, retain_graph=True)


def _second(graph: Callable, n: int) -> Callable[[], object]:
    x, loss = graph(n)

    def run() -> object:
        (g,) = dg.grad(loss, x, create_graph=True)
        return dg.grad(g.sum(), x, retain_graph=True)  # repeatable: keep the forward graph

    return run


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def peak_bytes(graph: Callable, n: int) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        x, loss = graph(n)
        dg.grad(loss, x)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    row = "{:<6} {:>8} {:>16} {:>20} {:>16}"
    print(row.format("graph", "n", "grad us/op", "2nd order us/op", "peak KiB/op"))
    for name, graph in (("chain", chain), ("fan", fan)):
        for n in args.sizes:
            first = best_seconds(_first(graph, n), args.repeat)
            second = best_seconds(_second(graph, n), args.repeat)
            memory = peak_bytes(graph, n)
            print(row.format(name, n, f"{first / n * 1e6:.2f}", f"{second / n * 1e6:.2f}",
                             f"{memory / n / 1024:.2f}"), flush=True)


if __name__ == "__main__":
    main()
