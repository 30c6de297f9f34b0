"""Anomaly detection: forward tracebacks of failing backward nodes, and NaN checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import Function, autograd
from dualgrad.base.state import STATE
from dualgrad.ops.dispatch import apply
from dualgrad.ops.registry import ALL_OPS, Op


def _raise_in_backward(g, out, x):
    raise RuntimeError("Some error in backward")


# An op whose backward rule raises; taken out of the table so table-walking tests ignore it.
RAISING = Op("anomaly_test_raising", lambda x: x.copy(), vjp=(_raise_in_backward,),
             grad_name="RaisingBackward0")
del ALL_OPS[RAISING.name]


def raising_op(x):
    return apply(RAISING, x)


def run_fn(a):
    out = raising_op(a)
    return out.sum()


@pytest.fixture
def quiet_enable_warning():
    """Silence the 'Anomaly Detection has been enabled' warning inside a test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
        yield


def test_backward_error_shows_the_forward_traceback(quiet_enable_warning):
    with dg.detect_anomaly():
        inp = dg.rand(10, 10, requires_grad=True)
        out = run_fn(inp)
        with pytest.warns(UserWarning) as record, pytest.raises(RuntimeError, match="Some error in backward"):
            out.backward()
    message = str(record[0].message)
    assert message.startswith("Error detected in RaisingBackward0. "
                              "Traceback of forward call that caused the error:")
    assert "out = run_fn(inp)" in message and "out = raising_op(a)" in message
    assert "test_anomaly.py" in message and "dispatch.py" not in message
    assert record[0].filename == __file__  # attributed to the user's backward call
    assert inp.grad is None


def test_without_anomaly_mode_the_error_is_plain():
    out = run_fn(dg.rand(3, requires_grad=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="Some error in backward"):
            out.backward()


def test_node_created_outside_anomaly_mode_has_no_forward_information(quiet_enable_warning):
    out = run_fn(dg.rand(3, requires_grad=True))
    with dg.detect_anomaly():
        with pytest.warns(UserWarning, match="No forward pass information available"):
            with pytest.raises(RuntimeError, match="Some error in backward"):
                out.backward()


def test_nodes_remember_their_forward_traceback(quiet_enable_warning):
    x = dg.ones(2, requires_grad=True)
    with dg.detect_anomaly():
        y = x.sin()
    frames = y.grad_fn.metadata["traceback_"]
    assert frames[-1].splitlines()[-1].strip() == "y = x.sin()"
    assert "traceback_" not in (x * 2).grad_fn.metadata


class MyFunc(Function):
    @staticmethod
    def forward(ctx, inp):
        return inp.clone()

    @staticmethod
    def backward(ctx, g_o):
        raise RuntimeError("Some error in backward")


def run_my_func(a):
    out = MyFunc.apply(a)
    return out.sum()


def test_reference_example_with_a_custom_function(quiet_enable_warning):
    with dg.detect_anomaly():
        inp = dg.rand(10, 10, requires_grad=True)
        out = run_my_func(inp)
        with pytest.warns(UserWarning) as record, pytest.raises(RuntimeError, match="Some error in backward"):
            out.backward()
    message = str(record[0].message)
    assert "Traceback of forward call that caused the error" in message
    assert "out = run_my_func(inp)" in message and "out = MyFunc.apply(a)" in message


def test_custom_function_errors_are_reported_in_anomaly_mode(quiet_enable_warning):
    inp = dg.rand(3, requires_grad=True)
    with dg.detect_anomaly():
        out = run_my_func(inp)
        with pytest.warns(UserWarning, match="Error detected in MyFuncBackward"):
            with pytest.raises(RuntimeError, match="Some error in backward"):
                out.backward()


# -- NaN checks -------------------------------------------------------------------------------
def _nan_in_div_backward():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with np.errstate(all="ignore"):
        y = (x / dg.tensor([0.0, 1.0])) * 0  # DivBackward0 computes 0 / 0 for x
    return x, y.sum()


def test_check_nan_names_the_node_and_output(quiet_enable_warning):
    with dg.detect_anomaly():
        x, loss = _nan_in_div_backward()
        with pytest.raises(RuntimeError, match=r"^Function 'DivBackward0' returned nan values in its "
                                               r"0th output\.$"), pytest.warns(UserWarning):
            with np.errstate(all="ignore"):
                loss.backward()
    assert x.grad is None


def test_check_nan_names_the_output_index(quiet_enable_warning):
    x = dg.tensor([1.0], requires_grad=True)
    y = dg.tensor([0.0], requires_grad=True)
    with dg.detect_anomaly(), np.errstate(all="ignore"):
        loss = (x * 0 / y).sum()
        with pytest.raises(RuntimeError, match="'DivBackward0' returned nan values in its 1th output"):
            with pytest.warns(UserWarning):
                loss.backward()


def test_check_nan_off(quiet_enable_warning):
    with dg.detect_anomaly(check_nan=False), np.errstate(all="ignore"):
        x, loss = _nan_in_div_backward()
        loss.backward()
    assert np.isnan(x.grad.numpy()[0])


def test_check_nan_sees_the_result_of_post_hooks(quiet_enable_warning):
    x = dg.tensor([1.0], requires_grad=True)
    with dg.detect_anomaly():
        y = x * 2
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * float("nan"), None))
        with pytest.raises(RuntimeError, match="'MulBackward0' returned nan values in its 0th output"):
            with pytest.warns(UserWarning, match="Error detected in MulBackward0"):
                y.backward(dg.tensor([1.0]))
    assert x.grad is None


# -- switching ---------------------------------------------------------------------------------
def test_switches_want_bools_as_torch(quiet_enable_warning):
    with pytest.raises(TypeError, match=r"argument 'enabled' \(position 1\) must be bool, not str"):
        autograd.set_detect_anomaly("yes")
    with pytest.raises(TypeError, match=r"argument 'check_nan' \(position 2\) must be bool, not int"):
        autograd.set_detect_anomaly(True, check_nan=1)
    with pytest.raises(TypeError, match="'check_nan' .* must be bool"):
        with autograd.detect_anomaly(check_nan=None):
            pass
    assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()


def test_enabling_warns_that_it_slows_the_program():
    with pytest.warns(UserWarning, match="increase the runtime and should only be enabled for debugging"):
        with dg.detect_anomaly():
            pass


def test_set_detect_anomaly_as_call_and_context_manager(quiet_enable_warning):
    assert not autograd.is_anomaly_enabled()
    with dg.set_detect_anomaly(True, check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
        with dg.set_detect_anomaly(False):
            assert not autograd.is_anomaly_enabled()
            assert not STATE.observed
        assert autograd.is_anomaly_enabled()
    assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
    dg.set_detect_anomaly(True)
    try:
        assert autograd.is_anomaly_enabled() and STATE.observed
    finally:
        dg.set_detect_anomaly(False)
    assert not STATE.observed and STATE.observers == ()


def test_detect_anomaly_as_decorator(quiet_enable_warning):
    @dg.detect_anomaly()
    def inside():
        return autograd.is_anomaly_enabled()

    assert inside() and not autograd.is_anomaly_enabled()


def test_anomaly_mode_is_thread_local(quiet_enable_warning):
    import threading

    seen = []
    with dg.detect_anomaly():
        thread = threading.Thread(target=lambda: seen.append(autograd.is_anomaly_enabled()))
        thread.start()
        thread.join()
    assert seen == [False]


def test_gradients_are_unchanged_in_anomaly_mode(quiet_enable_warning):
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    with dg.detect_anomaly():
        (x.sin() * x).sum().backward()
    expected = np.cos([0.5, 1.5]) * [0.5, 1.5] + np.sin([0.5, 1.5])
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_set_detect_anomaly_warns_nothing_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dg.set_detect_anomaly(True):
            assert autograd.is_anomaly_enabled()
        dg.set_detect_anomaly(True)
        dg.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
