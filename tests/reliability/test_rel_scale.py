"""Deep and wide graphs: a 100,000-op chain and a 10,000-way fan-out/fan-in.

The engine is iterative (no Python recursion), so depth is limited by memory
only; these graphs are far beyond the default recursion limit of 1000. Values
are checked against the derivatives computed by a hand-written recurrence.
``DUALGRAD_CHAIN_LENGTH`` / ``DUALGRAD_FAN_WIDTH`` change the sizes (defaults
100000 and 10000). Time per op is measured in ``benchmarks/scaling.py``.
"""

from __future__ import annotations

import gc
import math
import os
import tracemalloc

import numpy as np
import pytest

import dualgrad as dg

CHAIN = int(os.environ.get("DUALGRAD_CHAIN_LENGTH", "100000"))
WIDTH = int(os.environ.get("DUALGRAD_FAN_WIDTH", "10000"))


def _sin_chain_derivatives(x0: float, n: int) -> tuple[float, float]:
    """First and second derivative of sin applied n times, by forward recurrence."""
    y, d, s = x0, 1.0, 0.0
    for _ in range(n):
        c, sn = math.cos(y), math.sin(y)
        y, d, s = sn, c * d, -sn * d * d + c * s
    return d, s


@pytest.mark.slow
def test_long_chain_first_and_second_order():
    x = dg.tensor(1.2, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y.sin()
    (g,) = dg.grad(y, x, create_graph=True)
    (h,) = dg.grad(g, x)
    d, s = _sin_chain_derivatives(1.2, CHAIN)
    assert math.isclose(g.item(), d, rel_tol=1e-9)
    assert math.isclose(h.item(), s, rel_tol=1e-7)
    del y, g, h  # freeing a deep graph must not hit the C recursion limit either


def test_long_chain_backward_into_leaf():
    x = dg.tensor([0.3, -0.7], requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y * 1.00001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.00001 ** CHAIN, rtol=1e-9)


def _stack_fan_in(branches: list) -> dg.Tensor:
    """One node with len(branches) inputs."""
    return dg.stack(branches).sum(0)


def _add_fan_in(branches: list) -> dg.Tensor:
    """A chain of len(branches) - 1 additions."""
    total = branches[0]
    for b in branches[1:]:
        total = total + b
    return total


@pytest.mark.slow
def test_wide_fan_out_and_fan_in():
    """x feeds WIDTH branches, gathered once by stack (one node, WIDTH inputs) and by a chain of adds."""
    data = np.array([0.4, -1.1, 2.0])
    c = np.linspace(0.5, 1.5, WIDTH)
    x = dg.tensor(data, requires_grad=True)
    for fan_in in (_stack_fan_in, _add_fan_in):
        total = fan_in([(x * float(ci)).sin() for ci in c])
        (g,) = dg.grad(total.sum(), x, create_graph=True)
        (h,) = dg.grad(g.sum(), x)
        expected_g = (c[:, None] * np.cos(c[:, None] * data)).sum(0)
        expected_h = -(c[:, None] ** 2 * np.sin(c[:, None] * data)).sum(0)
        np.testing.assert_allclose(g.detach().numpy(), expected_g, rtol=1e-10)
        np.testing.assert_allclose(h.numpy(), expected_h, rtol=1e-10)


def _peak_bytes(n: int) -> int:
    """Peak traced memory of building an n-op chain and back-propagating through it."""
    gc.collect()
    tracemalloc.start()
    try:
        x = dg.tensor(np.ones(4), requires_grad=True)
        y = x
        for _ in range(n):
            y = y.sin()
        y.sum().backward()
        del x, y
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_linearly_with_depth():
    small, large = _peak_bytes(2_000), _peak_bytes(8_000)
    assert 3.0 < large / small < 5.0, (small, large)
