"""S1 (issue 28): the sparse Jacobian of a 1-D reaction-diffusion residual.

Workload (``python -m benchmarks -k S1``): n = 2000, dualgrad's sparse Jacobian (prepared once) against
dense ``jacfwd`` (dualgrad's and torch.func's) and asdex's jitted sparse Jacobian (JAX). The issue's goal,
1000x faster than dense, is set at n = 10^4, where a dense Jacobian is 800 MB (several GB inside
``jacfwd``): too heavy for every benchmark run on a shared machine, so ``python -m
benchmarks.s1_sparse_reaction_diffusion --dense`` measures it once (one call each). The n = 10^5 goals have
their own workloads: detection + coloring (``s1b``), the Jacobian against one residual (``s1c``, ``s1d``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ._harness import Workload
from ._sparse_problems import reaction_diffusion

N = 2000


def _point(n: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(0.0, 1.0, n)


def _pattern_entries() -> tuple:
    import dualgrad.sparse as dgs

    pattern = dgs.jacobian_sparsity(reaction_diffusion, np.zeros(N))
    return np.repeat(np.arange(N), np.diff(pattern.indptr)), pattern.indices


def _dualgrad() -> Callable:
    import dualgrad.sparse as dgs

    x = _point(N)
    jac = dgs.jacobian_fn(reaction_diffusion, x)
    return lambda: (jac(x).data,)


def _dense_dualgrad() -> Callable:
    import dualgrad as dg

    x = dg.tensor(_point(N))
    rows, cols = _pattern_entries()
    dense = dg.func.jacfwd(reaction_diffusion)
    return lambda: (dense(x)._data[rows, cols],)


def _torch() -> Callable:
    import torch

    x = torch.from_numpy(_point(N))
    rows, cols = _pattern_entries()

    def residual(u):
        lap = torch.cat([-2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:], u[-2:-1] - 2 * u[-1:]])
        return lap + u * (1 - u)

    dense = torch.func.jacfwd(residual)
    return lambda: (dense(x).numpy()[rows, cols],)


def _asdex() -> Callable:
    from ._sparse_problems import AsdexPeer, jax_reaction_diffusion

    peer = AsdexPeer(jax_reaction_diffusion, _point(N))
    NOTES["asdex"] = f" (jitted JAX; {peer.ncolors} colors, {peer.mode})"
    return lambda: (peer().data,)


NOTES = {"dualgrad_dense": " (issue's goal: 1000x faster at n = 1e4: --dense)",
         "torch": " (issue's goal: 1000x faster at n = 1e4: --dense)"}


def workload() -> Workload:
    return Workload(
        name="S1 sparse jac reaction-diffusion n=2000",
        builders={"dualgrad": _dualgrad, "dualgrad_dense": _dense_dualgrad, "torch": _torch, "asdex": _asdex},
        notes=NOTES,
    )


def dense(n: int = 10_000) -> dict:
    """One call each at ``n``: dualgrad's sparse Jacobian (best of 20), dense ``jacfwd`` of dualgrad and of
    torch.func (one call each: GBs of memory), and the ratios."""
    import gc

    import dualgrad as dg
    import dualgrad.sparse as dgs

    x = _point(n)
    jac = dgs.jacobian_fn(reaction_diffusion, x)
    jac(x)
    sparse_s = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        jac(x)
        sparse_s = min(sparse_s, time.perf_counter() - start)
    results = {"n": n, "sparse_ms": sparse_s * 1e3}
    start = time.perf_counter()
    J = dg.func.jacfwd(reaction_diffusion)(dg.tensor(x))
    results["dualgrad_dense_s"] = time.perf_counter() - start
    assert np.allclose(J._data[jac.sparsity.toarray()], jac(x).data)  # (rows' entries in CSR order)
    del J
    gc.collect()
    try:
        import torch
    except ImportError:
        return results

    def residual(u):
        lap = torch.cat([-2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:], u[-2:-1] - 2 * u[-1:]])
        return lap + u * (1 - u)

    xt = torch.from_numpy(x)
    start = time.perf_counter()
    torch.func.jacfwd(residual)(xt)
    results["torch_dense_s"] = time.perf_counter() - start
    results["over_dualgrad_dense"] = results["dualgrad_dense_s"] / sparse_s
    results["over_torch_dense"] = results["torch_dense_s"] / sparse_s
    return results


def large(n: int = 100_000, repeat: int = 20) -> dict:
    """The n = 10^5 figures: detection and coloring seconds, colors, Jacobian / residual time."""
    import dualgrad as dg
    import dualgrad.sparse as dgs
    from dualgrad.sparse.coloring import choose

    x = _point(n)
    start = time.perf_counter()
    pattern = dgs.jacobian_sparsity(reaction_diffusion, x)
    detected = time.perf_counter()
    coloring = choose(pattern)
    colored = time.perf_counter()
    jac = dgs.jacobian_fn(reaction_diffusion, x, sparsity=pattern)
    jac(x)
    start_jac = time.perf_counter()
    for _ in range(repeat):
        jac(x)
    per_jac = (time.perf_counter() - start_jac) / repeat
    xt = dg.tensor(x)
    reaction_diffusion(xt)
    start_res = time.perf_counter()
    for _ in range(repeat):
        reaction_diffusion(xt)
    per_res = (time.perf_counter() - start_res) / repeat
    return {"detect_s": detected - start, "color_s": colored - detected, "colors": coloring.ncolors,
            "jacobian_ms": per_jac * 1e3, "residual_ms": per_res * 1e3, "jacobian_over_residual": per_jac / per_res}


if __name__ == "__main__":
    import sys

    print(large())
    if "--dense" in sys.argv:
        print(dense())
