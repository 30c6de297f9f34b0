"""Run every workload and print, per workload and peer, the time (and memory) ratio.

``python -m benchmarks [-k SUBSTRING] [--exclude SUBSTRING] [--repeat N]``. The ratio is dualgrad's time
divided by the peer's, so below 1 means dualgrad is faster. Results of every
implementation are checked against dualgrad's before timing.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

import numpy as np

from ._harness import Workload, best_times, peak_memory

ROW = "{:<34} {:<14} {:>11} {:>11} {:>8} {:>7}  {}"


def discover() -> list[Workload]:
    """The ``workload()`` of every module in this package that has one (not ``run``, nor the
    stand-alone scripts ``scaling``, ``solvers`` and ``graph_objects``), in name order."""
    package = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(package)])
                   if not m.name.startswith("_") and m.name not in ("run", "scaling", "solvers", "graph_objects"))
    return [importlib.import_module(f"{__package__}.{name}").workload() for name in names]


def _build(workload: Workload) -> tuple[dict, dict]:
    """Callables of the installed implementations, and why the others are skipped."""
    runs, skipped = {}, {}
    for impl, builder in workload.builders.items():
        try:
            runs[impl] = builder()
        except ImportError as exc:
            skipped[impl] = f"not installed ({exc.name})"
    return runs, skipped


def _check(workload: Workload, runs: dict) -> None:
    expected = [np.asarray(r) for r in runs["dualgrad"]()]
    for impl, fn in runs.items():
        got = [np.asarray(r) for r in fn()]
        if len(got) != len(expected) or not all(
                np.allclose(g, e, rtol=1e-6, atol=1e-9) for g, e in zip(got, expected, strict=True)):
            raise AssertionError(f"{workload.name}: {impl} disagrees with dualgrad")


def _verdict(ratio: float, goal: float | None) -> str:
    if goal is None:
        return ""
    return "ok" if ratio <= goal else "MISSED"


def run_workload(workload: Workload, repeat: int) -> list[tuple]:
    """Rows ``(workload, peer, ratio kind, peer value, ratio, goal, verdict)``."""
    runs, skipped = _build(workload)
    _check(workload, runs)
    times = best_times(runs, repeat)
    ours = times["dualgrad"]
    rows = [(workload.name, "dualgrad", f"{ours * 1e3:.3f} ms", "", "", "", "")]
    for impl, seconds in times.items():
        if impl == "dualgrad":
            continue
        goal = workload.time_goals.get(impl)
        ratio = ours / seconds
        rows.append((workload.name, impl, f"{seconds * 1e3:.3f} ms", "time", f"{ratio:.2f}x",
                     f"<={goal}x" if goal else "", _verdict(ratio, goal) + workload.notes.get(impl, "")))
    if workload.memory_goals:
        our_peak = peak_memory(runs["dualgrad"])
        for impl, goal in workload.memory_goals.items():
            if impl in runs:
                peak = peak_memory(runs[impl])
                ratio = our_peak / peak
                rows.append((workload.name, impl, f"{peak / 2**20:.2f} MiB", "memory",
                             f"{ratio:.2f}x", f"<={goal}x", _verdict(ratio, goal)))
    rows += [(workload.name, impl, "", "", "", "", why) for impl, why in skipped.items()]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("-k", default="", help="only workloads whose name contains this")
    parser.add_argument("--exclude", default=None, help="leave out workloads whose name contains this")
    parser.add_argument("--repeat", type=int, default=30, help="timing samples per implementation")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}; ratio = dualgrad / peer")
    print(ROW.format("workload", "implementation", "measured", "ratio of", "ratio", "goal", ""))
    for workload in discover():
        name = workload.name.lower()
        if args.k.lower() not in name or args.exclude is not None and args.exclude.lower() in name:
            continue
        for row in run_workload(workload, args.repeat):
            print(ROW.format(*row), flush=True)

