"""Floating-point edge cases warn nothing, as in torch: ``log(0)``, ``1 / 0``, ``0 / 0``, overflow,
and the gradients at domain edges give inf/nan silently, also in a new thread and under
``warnings.simplefilter("error")``."""

from __future__ import annotations

import math
import threading
import warnings

import pytest

import dualgrad as dg

CASES = [
    ("log(0)", lambda x: dg.log(x * 0), -math.inf),
    ("1/0", lambda x: 1 / (x * 0), math.inf),
    ("0/0", lambda x: (x * 0) / (x * 0), math.nan),
    ("exp overflow", lambda x: dg.exp(x * 1000), math.inf),
    ("sqrt(-1)", lambda x: dg.sqrt(-x), math.nan),
    ("inf - inf", lambda x: dg.exp(x * 1000) - dg.exp(x * 1000), math.nan),
    ("float32 cast overflow", lambda x: (x * 1e300).float().double(), math.inf),
]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _run_all() -> list:
    """Every case forward and backward at x = 1 (x = 0 for the gradients of sqrt and log)."""
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _, fn, _ in CASES:
            x = dg.tensor(1., requires_grad=True)
            y = fn(x)
            dg.grad(y, x)
            results.append(y.item())
        zero = dg.tensor(0., requires_grad=True)
        results.append(dg.grad(dg.sqrt(zero), zero)[0].item())
        results.append(dg.grad(dg.log(zero), zero)[0].item())
        results.append(dg.grad(zero ** 0.5, zero)[0].item())
    return results


EXPECTED = [value for _, _, value in CASES] + [math.inf, math.inf, math.inf]


@pytest.mark.parametrize("name, fn, expected", CASES, ids=[c[0] for c in CASES])
def test_op_at_a_domain_edge_warns_nothing(name, fn, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = dg.tensor(1., requires_grad=True)
        y = fn(x)
        dg.grad(y, x)
    assert _same(y.item(), expected)


def test_edges_warn_nothing_in_a_new_thread():
    out: list = []
    thread = threading.Thread(target=lambda: out.append(_run_all()))
    thread.start()
    thread.join()
    assert len(out) == 1 and all(_same(a, b) for a, b in zip(out[0], EXPECTED, strict=True))
