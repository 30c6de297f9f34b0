"""Threads: modes are per thread, and independent graphs differentiate concurrently.

Every mode switch (grad mode, dual levels, vmap levels, anomaly mode, the
profiler) lives in ``dualgrad.base.state.STATE``, a ``threading.local``. These
tests hold a mode open in one thread while another thread works, and run
eight threads that each differentiate their own graphs, comparing bit for bit
with a serial run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.base.state import STATE

THREADS = 8


@pytest.fixture(autouse=True)
def _fast_switching():
    """Switch threads as often as possible, so that interleavings actually happen."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


def _workload(seed: int) -> list[np.ndarray]:
    """First and second order reverse mode, forward mode, vmap and jacobian on one thread's data."""
    rng = np.random.default_rng(seed)
    w = dg.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    x = dg.tensor(rng.standard_normal((3, 5)))
    results = []
    for _ in range(5):
        loss = ((x @ w).tanh() ** 2).sum() + (w.exp() * w).sum()
        loss.backward(retain_graph=True)
        (g,) = dg.grad(loss, w, create_graph=True)
        (h,) = dg.grad(g.sin().sum(), w)
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual((fwAD.make_dual(x, dg.ones_like(x)) @ w.detach()).tanh()).tangent
        per_row = dg.vmap(lambda row: (row @ w.detach()).sin().sum())(x)
        jac = dg.functional.jacobian(lambda v: (v @ w.detach()).cos(), x[0])
        with dg.no_grad():
            no_graph = w * 2
        assert no_graph.grad_fn is None
        results += [g.detach().numpy(), h.numpy(), w.grad.numpy().copy(), tangent.numpy(),
                    per_row.numpy(), jac.numpy()]
    return results


def _concurrently(fn: Callable[[int], object], n: int = THREADS) -> list:
    barrier = threading.Barrier(n)

    def start_together(i: int) -> object:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(start_together, range(n)))


def test_eight_threads_match_a_serial_run():
    serial = [_workload(seed) for seed in range(THREADS)]
    for parallel in (_concurrently(_workload), _concurrently(_workload)):
        for got, expected in zip(parallel, serial, strict=True):
            for a, b in zip(got, expected, strict=True):
                np.testing.assert_array_equal(a, b)


class _Hold:
    """Run ``enter`` in a helper thread, keep its mode open while ``check`` runs here, then exit."""

    def __init__(self, body: Callable[[Callable[[], None]], None]):
        self.entered, self.release = threading.Event(), threading.Event()
        self.errors: list = []
        self.thread = threading.Thread(target=self._run, args=(body,))

    def _run(self, body: Callable) -> None:
        def wait_inside() -> None:
            self.entered.set()
            assert self.release.wait(30)

        try:
            body(wait_inside)
        except BaseException as exc:  # reported in the main thread
            self.errors.append(exc)
            self.entered.set()

    def __enter__(self) -> _Hold:
        self.thread.start()
        assert self.entered.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(30)
        assert not self.errors, self.errors


def _in_no_grad(wait: Callable) -> None:
    with dg.no_grad():
        wait()


def _in_inference_mode(wait: Callable) -> None:
    with dg.inference_mode():
        wait()


def _in_dual_level(wait: Callable) -> None:
    with fwAD.dual_level():
        fwAD.make_dual(dg.ones(2), dg.ones(2))
        wait()


def _in_vmap(wait: Callable) -> None:
    def body(row: dg.Tensor) -> dg.Tensor:
        wait()
        return row * 2

    dg.vmap(body)(dg.ones(3, 2))


def _in_anomaly_mode(wait: Callable) -> None:
    with dg.autograd.detect_anomaly():
        wait()


def _in_profiler(wait: Callable) -> None:
    with dg.profiler.profile():
        wait()


@pytest.mark.parametrize("body", [_in_no_grad, _in_inference_mode, _in_dual_level, _in_vmap,
                                  _in_anomaly_mode, _in_profiler], ids=lambda f: f.__name__[4:])
@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_mode_of_another_thread_is_not_seen(body):
    with _Hold(body):
        assert dg.is_grad_enabled() and not dg.is_inference_mode_enabled()
        assert STATE.dual_levels == () and STATE.vmap_depth == 0 and STATE.vmap_levels == ()
        assert not dg.autograd.is_anomaly_enabled()
        assert not STATE.observed and STATE.observers == ()
        x = dg.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        assert y.grad_fn is not None and y.shape == ()
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_profiler_records_only_its_own_thread():
    def other(i: int) -> None:
        x = dg.ones(3, requires_grad=True)
        for _ in range(50):
            x.sin().sum().backward()

    with dg.profiler.profile() as prof:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(other, range(2)))
        dg.ones(2).cos()
    names = {e.key for e in prof.key_averages()}
    assert names == {"cos"}
