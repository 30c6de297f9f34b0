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


def test_modes_return_none_on_enter():
    for mode in (dg.no_grad(), dg.enable_grad(), dg.set_grad_enabled(True), dg.inference_mode()):
        with mode as entered:
            assert entered is None


def test_decorated_generator_runs_in_the_mode_each_time_it_resumes(x):
    @dg.no_grad()
    def steps():
        received = yield (x * 2).requires_grad
        try:
            yield received, dg.is_grad_enabled()
        except ValueError:
            yield "thrown", dg.is_grad_enabled()
        finally:
            seen.append(dg.is_grad_enabled())
        return "done"

    seen = []
    gen = steps()
    assert steps.__name__ == "steps"
    assert next(gen) is False and dg.is_grad_enabled()
    assert gen.send(5) == (5, False) and dg.is_grad_enabled()
    assert gen.throw(ValueError) == ("thrown", False) and dg.is_grad_enabled()
    gen.close()
    assert seen == [False] and dg.is_grad_enabled()
    gen = steps()
    next(gen), next(gen)
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done" and seen == [False, False]

    @dg.inference_mode
    def inferred():
        yield dg.is_inference_mode_enabled(), dg.is_grad_enabled()

    assert list(inferred()) == [(True, False)] and not dg.is_inference_mode_enabled()


def test_decorated_methods(x):
    class Model:
        @dg.no_grad()
        def method(self, t):
            return (t * 2).requires_grad

        @staticmethod
        @dg.no_grad
        def static(t):
            return (t * 2).requires_grad

        @classmethod
        @dg.inference_mode()
        def klass(cls, t):
            return (t * 2).is_inference()

    assert Model().method(x) is False and Model.static(x) is False and Model.klass(x) is True


def test_decorating_a_class_warns_and_builds_it_in_the_mode():
    class Probe:
        def __init__(self):
            self.grad = dg.is_grad_enabled()

    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        make = dg.no_grad()(Probe)
    assert make().grad is False and dg.is_grad_enabled()


def test_set_grad_enabled_repr_clone_and_bool_argument():
    try:
        mode = dg.set_grad_enabled(False)
        assert repr(mode) == str(mode) == "dualgrad.reverse.grad_mode.set_grad_enabled(mode=False)"
        dg.set_grad_enabled(True)
        assert repr(mode.clone()) == repr(mode) and not dg.is_grad_enabled()  # clone switches, as in torch
    finally:
        dg.set_grad_enabled(True)
    for bad in (1, None, "yes"):
        with pytest.raises(TypeError, match="argument 'enabled' .* must be bool, not " + type(bad).__name__):
            dg.set_grad_enabled(bad)
    assert dg.is_grad_enabled()


def test_namespaces():
    assert dg.autograd.grad_mode.no_grad is dg.autograd.no_grad is dg.no_grad
    assert dg.autograd.grad_mode.inference_mode is dg.inference_mode
    assert dg.autograd.set_grad_enabled is dg.set_grad_enabled


def test_inference_mode_false_inside_inference_mode_turns_it_off_and_grad_on(x):
    with dg.inference_mode(), dg.no_grad():
        with dg.inference_mode(mode=False):
            assert not dg.is_inference_mode_enabled() and dg.is_grad_enabled()
            assert dg.autograd.is_multithreading_enabled()
            y = x * 2
            assert y.grad_fn is not None and not y.is_inference() and not dg.ones(1).is_inference()
            with dg.inference_mode(True):
                assert dg.is_inference_mode_enabled() and not dg.is_grad_enabled()
            assert not dg.is_inference_mode_enabled() and dg.is_grad_enabled()
        assert dg.is_inference_mode_enabled() and not dg.is_grad_enabled()
        assert not dg.autograd.is_multithreading_enabled()  # torch's inference mode turns it off
    with dg.no_grad(), dg.inference_mode(False):  # also outside inference mode: grad mode on
        assert dg.is_grad_enabled()
    assert dg.is_grad_enabled() and not dg.is_inference_mode_enabled()


def test_enable_grad_inside_inference_mode_records_nothing(x):
    with dg.inference_mode():
        with dg.enable_grad():
            assert dg.is_grad_enabled() and dg.is_inference_mode_enabled()
            y = x * 2
            leaf = dg.ones(2, requires_grad=True)
            z = leaf * 2
        assert not dg.is_grad_enabled()
        dg.set_grad_enabled(True)
        assert dg.is_grad_enabled() and (x * 2).grad_fn is None
    assert dg.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad and y.is_inference()
    assert leaf.is_inference() and leaf.requires_grad and z.grad_fn is None and not z.requires_grad


def test_inference_mode_restores_modes_after_an_exception():
    with pytest.raises(ValueError), dg.no_grad(), dg.inference_mode():
        with dg.enable_grad(), dg.inference_mode(False):
            raise ValueError
    assert dg.is_grad_enabled() and not dg.is_inference_mode_enabled()
    assert dg.autograd.is_multithreading_enabled()
