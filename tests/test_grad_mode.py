"""Grad modes (issue 2, item 5): no_grad, enable_grad, set_grad_enabled, inference_mode, threads."""

from __future__ import annotations

import threading

import pytest

import dualgrad as dg


@pytest.fixture
def x():
    return dg.ones(2, requires_grad=True)


def test_no_grad_context_and_decorator(x):
    with dg.no_grad():
        assert not dg.is_grad_enabled()
        y = x * 2
    assert dg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None

    @dg.no_grad()
    def double(t):
        return t * 2

    assert not double(x).requires_grad and dg.is_grad_enabled()


def test_no_grad_restores_mode_after_an_exception():
    with pytest.raises(ValueError), dg.no_grad():
        raise ValueError
    assert dg.is_grad_enabled()


def test_enable_grad_inside_no_grad(x):
    with dg.no_grad():
        with dg.enable_grad():
            assert dg.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not dg.is_grad_enabled()

        @dg.enable_grad()
        def double(t):
            return t * 2

        assert double(x).requires_grad


def test_set_grad_enabled_as_call_context_and_decorator(x):
    dg.set_grad_enabled(False)
    try:
        assert not dg.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        dg.set_grad_enabled(True)
    assert dg.is_grad_enabled()
    with dg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert dg.is_grad_enabled()
    with dg.no_grad(), dg.set_grad_enabled(True):
        assert (x * 2).requires_grad

    @dg.set_grad_enabled(False)
    def double(t):
        return t * 2

    assert dg.is_grad_enabled()  # decorating does not switch the mode
    assert not double(x).requires_grad and dg.is_grad_enabled()


def test_inference_mode(x):
    assert not dg.is_inference_mode_enabled()
    with dg.inference_mode():
        assert dg.is_inference_mode_enabled() and not dg.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert not dg.is_inference_mode_enabled() and dg.is_grad_enabled()
    with dg.inference_mode(False):
        assert not dg.is_inference_mode_enabled() and (x * 2).requires_grad

    @dg.inference_mode()
    def double(t):
        return t * 2

    assert not double(x).requires_grad


def test_backward_still_works_for_graph_built_before_no_grad(x):
    y = (x * 3).sum()
    with dg.no_grad():
        y.backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_mode_is_thread_local(x):
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def worker():
        seen["worker starts enabled"] = dg.is_grad_enabled()
        with dg.no_grad():
            inside.set()
            release.wait(5)
            seen["worker result tracked"] = (x * 2).requires_grad

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    seen["main enabled while worker in no_grad"] = dg.is_grad_enabled()
    seen["main result tracked"] = (x * 2).requires_grad
    release.set()
    thread.join(5)
    with dg.no_grad():
        other = threading.Thread(target=lambda: seen.setdefault("new thread enabled", dg.is_grad_enabled()))
        other.start()
        other.join(5)
    assert seen == {"worker starts enabled": True, "worker result tracked": False,
                    "main enabled while worker in no_grad": True, "main result tracked": True,
                    "new thread enabled": True}


def test_grad_mode_decorators_without_parentheses(x):
    """torch accepts ``@torch.no_grad`` as well as ``@torch.no_grad()``."""

    @dg.no_grad
    def off(t):
        return t * 2

    @dg.enable_grad
    def on(t):
        return t * 2

    assert off.__name__ == "off"
    assert not off(x).requires_grad
    with dg.no_grad():
        assert on(x).requires_grad
    assert dg.is_grad_enabled()
