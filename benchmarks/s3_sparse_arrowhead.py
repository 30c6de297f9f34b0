"""S3 (issue 28): an arrowhead Jacobian, n = 10^4: bicoloring needs <= 3 colors where column or row coloring
alone needs n. Workload: dualgrad's sparse Jacobian against the hand-written one and asdex's (JAX), which
colors columns or rows only (n colors here: its jitted evaluation runs in chunks of 500 seeds so that it
fits in memory); ``python -m benchmarks.s3_sparse_arrowhead`` prints the colors of each mode."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import arrowhead, arrowhead_jacobian
from ._sparse_problems import values as _values

N = 10_000


def _point() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.5, 1.5, N)


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    x = _point()
    jac = dgs.jacobian_fn(arrowhead, x)
    NOTES["numpy"] = f" (hand-written; dualgrad: {jac.ncolors} colors {jac.mode})"
    return lambda: (_values(jac(x)),)


def _numpy() -> Callable:
    x = _point()

    def run() -> tuple:
        J = arrowhead_jacobian(x)
        return (_values(J),)

    return run


def _asdex() -> Callable:
    from ._sparse_problems import AsdexPeer, jax_arrowhead

    peer = AsdexPeer(jax_arrowhead, _point(), chunk_size=500)
    NOTES["asdex"] = f" (jitted JAX; {peer.ncolors} colors {peer.mode}: no bicoloring)"
    return lambda: (_values(peer()),)


NOTES: dict = {"numpy": " (hand-written)"}


def workload() -> Workload:
    builders = {"dualgrad": _dualgrad, "numpy": _numpy, "asdex": _asdex}
    return Workload(name="S3 sparse jac arrowhead n=1e4 (goal <=3 colors)", builders=builders, notes=NOTES)


def colors() -> dict:
    import dualgrad.sparse as dgs
    from dualgrad.sparse.coloring import choose, color_columns, color_rows

    pattern = dgs.jacobian_sparsity(arrowhead, _point())
    return {"bidirectional": choose(pattern).ncolors, "columns": int(color_columns(pattern).max()) + 1,
            "rows": int(color_rows(pattern).max()) + 1}


if __name__ == "__main__":
    print(colors())
