"""How many objects the cyclic garbage collector tracks per recorded op of B1's and B2's graphs (issue 26).

``python -m benchmarks.graph_objects``

Builds each workload's objective once (its graph kept alive, no backward pass) and prints
the growth of ``gc.get_objects()`` after a full collection, divided by the number of graph
nodes, with the kinds of the objects that remain besides the nodes. Goal: at most 2 per op.
Every tracked object of a live graph is walked again by each collection of its generation,
which is what B1 and B2 pay for with the collector on.
"""

from __future__ import annotations

import collections
import gc
from collections.abc import Callable

import dualgrad as dg

from . import b1_bundle_adjustment as b1
from . import b2_lstm as b2


def _b1() -> Callable[[], dg.Tensor]:
    cams, points, pairs, observed = b1._data()
    cams, points = dg.tensor(cams, requires_grad=True), dg.tensor(points, requires_grad=True)
    observed, pairs, objective = dg.tensor(observed), pairs.tolist(), b1._objective(dg)
    return lambda: objective(cams, points, pairs, observed)


def _b2() -> Callable[[], dg.Tensor]:
    weights, projection, text = b2._data()
    params = [dg.tensor(w, requires_grad=True) for layer in weights for w in layer]
    params.append(dg.tensor(projection, requires_grad=True))
    text, loss = dg.tensor(text), b2._objective(dg)
    return lambda: loss(params, text)


def tracked_per_op(build: Callable[[], dg.Tensor]) -> tuple[float, collections.Counter]:
    """``(tracked objects per graph node, kinds of the new tracked objects)`` of the graph ``build()`` makes."""
    build()  # (what is made once per process: caches, lazily built objects)
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    graph = build()
    gc.collect()
    kinds = collections.Counter(type(o).__name__ for o in gc.get_objects() if id(o) not in before)
    del graph
    return sum(kinds.values()) / max(kinds["Node"], 1), kinds


def main() -> None:
    for name, make in (("B1 bundle adjustment", _b1), ("B2 LSTM", _b2)):
        per_op, kinds = tracked_per_op(make())
        rest = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common(6) if kind != "Node")
        print(f"{name}: {per_op:.2f} tracked objects per op ({kinds['Node']} nodes; besides them: {rest})")


if __name__ == "__main__":
    main()
