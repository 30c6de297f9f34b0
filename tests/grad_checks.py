"""Gradient checks against central differences, first and second order (float64).

``call`` takes Tensors and returns a Tensor or a tuple (non-float entries are
ignored); it may use in-place operations, since each evaluation builds fresh
tensors from the arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from helpers import as_outputs, assert_close, directional_fd, leaves, random_like, vdot

import dualgrad as dg
from dualgrad import forward_ad as fwAD


def reverse_grads(call: Callable, arrays: Sequence[np.ndarray], cotangents: Sequence[np.ndarray],
                  create_graph: bool = False) -> tuple[list, tuple]:
    """The leaves and ``J^T u`` for each of them (zeros where unused)."""
    xs = leaves(arrays)
    outs = as_outputs(call(*xs))
    grads = dg.grad(outs, xs, [dg.tensor(u) for u in cotangents], create_graph=create_graph,
                    materialize_grads=True)
    return xs, grads


def check_first_order(call: Callable, arrays: Sequence[np.ndarray], seed: int = 0,
                      rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """``<J^T u, v>`` (reverse mode) equals ``<u, J v>`` (central differences)."""
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    with dg.no_grad():
        outs = as_outputs(call(*[dg.tensor(a) for a in arrays]))
    us = random_like(rng, outs)
    vs = random_like(rng, arrays)
    _, grads = reverse_grads(call, arrays, us)
    expected = vdot(us, directional_fd(call, arrays, vs))
    assert_close(vdot(grads, vs), expected, rtol=rtol, atol=atol, what="first order")


def check_second_order(call: Callable, arrays: Sequence[np.ndarray], seed: int = 0,
                       rtol: float = 1e-4, atol: float = 1e-5, eps: float = 1e-5) -> None:
    """The reverse-over-reverse derivative of ``<J^T u, w>`` matches central differences."""
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    with dg.no_grad():
        outs = as_outputs(call(*[dg.tensor(a) for a in arrays]))
    us = random_like(rng, outs)
    ws = random_like(rng, arrays)
    vs = random_like(rng, arrays)

    def inner(arrs: Sequence[np.ndarray]) -> float:
        _, grads = reverse_grads(call, arrs, us)
        return vdot(grads, ws)

    xs, grads = reverse_grads(call, arrays, us, create_graph=True)
    total: Any = sum((g * dg.tensor(w)).sum() for g, w in zip(grads, ws, strict=True) if g.requires_grad)
    if isinstance(total, int):
        second = 0.0
    else:
        second = vdot(dg.grad(total, xs, materialize_grads=True), vs)
    plus = inner([a + eps * v for a, v in zip(arrays, vs, strict=True)])
    minus = inner([a - eps * v for a, v in zip(arrays, vs, strict=True)])
    assert_close(second, (plus - minus) / (2 * eps), rtol=rtol, atol=atol, what="second order")


def check_forward(call, arrays, seed=0):
    """Tangents of ``call`` (one dual level) equal central differences along random directions."""
    rng = np.random.default_rng(seed)
    directions = [rng.standard_normal(a.shape) for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(v)) for a, v in zip(arrays, directions, strict=True)]
        tangents = [fwAD.unpack_dual(o).tangent for o in as_outputs(call(*duals))]
    expected = directional_fd(call, arrays, directions)
    assert tangents and len(tangents) == len(expected)
    for tangent, e in zip(tangents, expected, strict=True):
        assert tangent is not None, "forward mode lost the tangent"
        np.testing.assert_allclose(tangent.numpy(), e, rtol=1e-5, atol=1e-6)


def check_vmap(call, arrays, size=3):
    """vmap over a batch of scaled copies of the inputs equals a loop over the batch."""
    members = [[a * (1.0 + 0.05 * k) for a in arrays] for k in range(size)]
    stacked = [dg.tensor(np.stack([m[i] for m in members])) for i in range(len(arrays))]
    got = dg.vmap(lambda *xs: as_outputs(call(*xs)))(*stacked)
    for k, member in enumerate(members):
        with dg.no_grad():
            expected = as_outputs(call(*[dg.tensor(a) for a in member]))
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g.numpy()[k], e.numpy(), rtol=1e-12, atol=1e-12)


# -- complex inputs: z.grad == dL/da + 1j dL/db for a real loss L ------------------------------------
def _real_loss(call, cotangents):
    def loss(*zs):
        outs = as_outputs(call(*zs))
        return sum((o * dg.tensor(np.conj(c))).real.sum() for o, c in zip(outs, cotangents, strict=True))

    return loss


def check_wirtinger(call, arrays, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Reverse and forward mode on complex inputs against differences along real and imaginary parts."""
    rng = np.random.default_rng(seed)
    with dg.no_grad():
        outs = as_outputs(call(*[dg.tensor(a) for a in arrays]))
    cotangents = [rng.standard_normal(o.shape) + (1j * rng.standard_normal(o.shape) if o.is_complex() else 0)
                  for o in outs]
    loss = _real_loss(call, cotangents)
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    grads = dg.grad(loss(*xs), xs)
    eps = 1e-6
    for i, (a, g) in enumerate(zip(arrays, grads, strict=True)):
        assert g.dtype == a.dtype
        numeric = np.zeros(a.shape, dtype=complex)
        for part in (1.0, 1j):
            for idx in np.ndindex(a.shape):
                plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
                plus[i][idx] += eps * part
                minus[i][idx] -= eps * part
                with dg.no_grad():
                    d = (loss(*map(dg.tensor, plus)).item() - loss(*map(dg.tensor, minus)).item()) / (2 * eps)
                numeric[idx] += d * part
        np.testing.assert_allclose(g.numpy(), numeric, rtol=rtol, atol=atol)
    vs = [rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape) for a in arrays]
    with fwAD.dual_level():
        value = loss(*[fwAD.make_dual(dg.tensor(a), dg.tensor(v)) for a, v in zip(arrays, vs, strict=True)])
        tangent = fwAD.unpack_dual(value).tangent.item()
    expected = sum(np.real(np.vdot(g.numpy(), v)) for g, v in zip(grads, vs, strict=True))
    np.testing.assert_allclose(tangent, expected, rtol=rtol, atol=atol)
