"""Regenerate the pictures of the documentation: ``python docs/figures.py`` (needs matplotlib and Graphviz).

* ``_static/profiler_trace.png``: the Chrome trace exported by ``dualgrad.profiler``
  for one training step of a small network, drawn as a timeline;
* ``_static/graph.png``: ``dualgrad.graph.to_dot`` of that step's loss, rendered by ``dot``;
* ``_static/<example>.png``: the plots of the worked examples (``--plot``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matmuls: threads only add noise to the trace

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dualgrad as dg  # noqa: E402
from dualgrad.profiler import profile, record_function  # noqa: E402

DOCS = Path(__file__).resolve().parent
STATIC = DOCS / "_static"
EXAMPLES = ("ode_sensitivity", "newton", "per_example_gradients")


def training_step(x: dg.Tensor, w1: dg.Tensor, w2: dg.Tensor) -> dg.Tensor:
    """The loss of a two-layer network, with its backward pass, inside named ranges."""
    with record_function("forward"):
        loss = ((x @ w1).tanh() @ w2).square().mean()
    with record_function("backward"):
        loss.backward()
    return loss


def trace_events(runs: int = 9) -> list[dict]:
    """The complete events ('ph' == 'X') of the Chrome trace of a training step of median duration.

    Of ``runs`` profiled steps the median one is kept, so that a moment of load
    on the machine does not make the picture.
    """
    dg.manual_seed(0)
    x, w1, w2 = dg.randn(256, 64), dg.randn(64, 32, requires_grad=True), dg.randn(32, 1, requires_grad=True)
    training_step(x, w1, w2)  # warm-up, so that the trace shows steady-state timings
    traces = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        for _ in range(runs):
            with profile(record_shapes=True) as prof:
                training_step(x, w1, w2)
            prof.export_chrome_trace(str(path))
            traces.append([e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"])
    traces.sort(key=lambda events: max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events))
    return traces[runs // 2]


def draw_timeline(events: list[dict], path: Path) -> None:
    """Each event as a bar at its start and duration, one row per nesting depth."""
    events = sorted(events, key=lambda e: (e["ts"], -e["dur"]))
    start = events[0]["ts"]
    open_ends: list[float] = []
    fig, ax = plt.subplots(figsize=(10, 2.8))
    for e in events:
        while open_ends and open_ends[-1] <= e["ts"]:
            open_ends.pop()
        depth = len(open_ends)
        open_ends.append(e["ts"] + e["dur"])
        color = "tab:orange" if e["name"].endswith(("Backward0", "Backward", "Grad")) else "tab:blue"
        color = "0.75" if e["name"] in ("forward", "backward") else color
        ax.barh(-depth, e["dur"], left=e["ts"] - start, height=0.8, color=color, edgecolor="white")
        if e["dur"] > 0.07 * (events[-1]["ts"] + events[-1]["dur"] - start):
            ax.text(e["ts"] - start + e["dur"] / 2, -depth, e["name"], ha="center", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel("time (µs)")
    ax.set_title("dualgrad.profiler Chrome trace: one training step (grey: record_function ranges, "
                 "blue: ops, orange: backward nodes)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_graph(path: Path) -> None:
    """``to_dot`` of a small loss, rendered to PNG by Graphviz's ``dot``."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    w = dg.tensor([0.5, -0.5], requires_grad=True)
    loss = ((x * w).tanh() + x.exp()).sum()
    subprocess.run(["dot", "-Tpng", "-Gdpi=80", "-o", str(path)], input=dg.graph.to_dot(loss), text=True,
                   check=True)


def main() -> None:
    STATIC.mkdir(exist_ok=True)
    draw_timeline(trace_events(), STATIC / "profiler_trace.png")
    draw_graph(STATIC / "graph.png")
    env = dict(os.environ, PYTHONPATH=str(DOCS.parent))
    for name in EXAMPLES:
        subprocess.run([sys.executable, str(DOCS.parent / "examples" / f"{name}.py"), "--plot",
                        str(STATIC / f"{name}.png")], check=True, env=env)


if __name__ == "__main__":
    main()
