"""The activations added for torch ports (Threshold, ReLU6, Hardtanh, CELU, SELU, Hardsigmoid, Hardswish,
Softsign, Tanhshrink, LogSigmoid, Softmin, PReLU): torch's reprs, errors, dtypes and the gradients at the
kinks, which differences cannot check (values and smooth gradients are in the parity table of
``nn_cases.py``). torch's results are pinned; they are checked live where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.nn.functional as F
from dualgrad import nn

REPRS = [
    ("Threshold(0.1, 20)", "Threshold(threshold=0.1, value=20)"),
    ("Threshold(0.1, 20.0, True)", "Threshold(threshold=0.1, value=20.0, inplace=True)"),
    ("ReLU6()", "ReLU6()"),
    ("ReLU6(True)", "ReLU6(inplace=True)"),
    ("Hardtanh()", "Hardtanh(min_val=-1.0, max_val=1.0)"),
    ("Hardtanh(-2, 2, True)", "Hardtanh(min_val=-2, max_val=2, inplace=True)"),
    ("CELU()", "CELU(alpha=1.0)"),
    ("CELU(0.5, True)", "CELU(alpha=0.5, inplace=True)"),
    ("SELU(True)", "SELU(inplace=True)"),
    ("Hardsigmoid(True)", "Hardsigmoid()"),
    ("Hardswish()", "Hardswish()"),
    ("Softsign()", "Softsign()"),
    ("Tanhshrink()", "Tanhshrink()"),
    ("LogSigmoid()", "LogSigmoid()"),
    ("Softmin(1)", "Softmin(dim=1)"),
    ("Softmin()", "Softmin(dim=None)"),
    ("PReLU()", "PReLU(num_parameters=1)"),
    ("PReLU(3, 0.1)", "PReLU(num_parameters=3)"),
]


@pytest.mark.parametrize(("call", "expected"), REPRS)
def test_repr_is_torchs(call, expected):
    assert repr(eval(f"nn.{call}")) == expected  # noqa: S307 - the table's own expressions
    torch = _torch()
    if torch is not None:
        assert repr(eval(f"torch.nn.{call}")) == expected  # noqa: S307


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


ERRORS = [
    (lambda: F.prelu(dg.zeros(2, 3), dg.ones(2)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 3."),
    (lambda: F.prelu(dg.zeros(2, 3), dg.ones(2, 2)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3."),
    (lambda: F.prelu(dg.zeros(3), dg.ones(2)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 1."),
    (lambda: F.prelu(dg.tensor(1.0), dg.ones(2)), RuntimeError, "Not allow zero-dim input tensor."),
    (lambda: nn.PReLU(3)(dg.zeros(2, 4)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 4."),
    (lambda: F.celu(dg.zeros(2), alpha=0.0), RuntimeError, "ZeroDivisionError: alpha cannot be 0 for CELU"),
    (lambda: nn.Hardtanh(1.0, -1.0), AssertionError, ""),
]


@pytest.mark.parametrize(("call", "error", "message"), ERRORS)
def test_errors_are_torchs(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


def test_hardtanh_deprecated_keywords_warn_and_apply():
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated and rename to `min_val`"):
        m = nn.Hardtanh(min_value=-3.0)
    assert m.min_val == -3.0 and m(dg.tensor([-5.0])).tolist() == [-3.0]


# gradients at the kinks, as torch 2.13 computes them (pinned; checked live below)
KINKS = {
    "threshold": (lambda F, x: F.threshold(x, 0.5, -2.0), [-1.0, 0.5, 0.5000001, 2.0]),
    "relu6": (lambda F, x: F.relu6(x), [0.0, 3.0, 6.0, 7.0]),
    "hardtanh": (lambda F, x: F.hardtanh(x, -0.5, 0.5), [-0.5, 0.0, 0.5, 0.7]),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x), [-3.0, -2.0, 3.0, 4.0]),
    "hardswish": (lambda F, x: F.hardswish(x), [-4.0, -3.0, 3.0, 4.0]),
    "celu": (lambda F, x: F.celu(x, 2.0), [0.0, -1.0, 1.0, -30.0]),
    "softsign": (lambda F, x: F.softsign(x), [0.0, -1.0, 2.0, 1e300]),
    "prelu": (lambda F, x: F.prelu(x, x.new_tensor([0.25])), [0.0, -1.0, 2.0, -0.0]),
}
PINNED_KINKS = {
    "threshold": ([-2.0, -2.0, 0.5000001, 2.0], [0.0, 0.0, 1.0, 1.0]),
    "relu6": ([0.0, 3.0, 6.0, 6.0], [0.0, 1.0, 0.0, 0.0]),
    "hardtanh": ([-0.5, 0.0, 0.5, 0.5], [0.0, 1.0, 0.0, 0.0]),
    "hardsigmoid": ([0.0, 0.16666666666666666, 1.0, 1.0], [0.0, 0.1666666716337204, 0.0, 0.0]),
    "hardswish": ([-0.0, -0.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0]),
    "celu": ([0.0, -0.7869386805747332, 1.0, -1.999999388195359], [1.0, 0.6065306597126334, 1.0,
                                                                   3.059023205018258e-07]),
    "softsign": ([0.0, -0.5, 0.6666666666666666, 1.0], [1.0, 0.25, 0.1111111111111111, 0.0]),
    "prelu": ([0.0, -0.25, 2.0, -0.0], [0.25, 0.25, 1.0, 0.25]),
}


def _values_and_gradients(lib, name: str) -> tuple[list, list]:
    f, points = KINKS[name]
    x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
    y = f(lib.nn.functional, x)
    (g,) = lib.autograd.grad(y.sum(), x)
    return y.tolist(), g.tolist()


@pytest.mark.parametrize("name", sorted(KINKS))
def test_values_and_gradients_at_kinks_are_torchs(name):
    values, grads = _values_and_gradients(dg, name)
    want_values, want_grads = PINNED_KINKS[name]
    np.testing.assert_array_equal(values, want_values)
    # (torch's hardsigmoid gradient is 1/6 rounded to float32, dualgrad's 1/6 in float64; celu's gradient
    # far below 0 comes from expm1's rule, exp(x) - 1 + 1, which loses digits there, as torch's expm1)
    rtol = {"hardsigmoid": 1e-7, "celu": 1e-9}.get(name, 0)
    np.testing.assert_allclose(grads, want_grads, rtol=rtol, atol=0)
    torch = _torch()
    if torch is not None:
        assert _values_and_gradients(torch, name) == (want_values, want_grads)


@pytest.mark.parametrize("f", [lambda x: F.threshold(x, 0.0, 2.0), F.hardswish, F.hardsigmoid, F.softsign,
                               F.tanhshrink, lambda x: F.celu(x, 0.5), lambda x: F.prelu(x, dg.ones(1))])
def test_float32_stays_float32(f):
    assert f(dg.ones(3, dtype=dg.float32)).dtype == dg.float32


def test_prelu_parameter_is_torchs_and_learns():
    m = nn.PReLU(3, 0.1)
    assert [(n, p.shape, p.tolist()) for n, p in m.named_parameters()] == [("weight", (3,), [0.1, 0.1, 0.1])]
    x = dg.tensor([[[-1.0, 2.0]], [[-3.0, 4.0]], [[5.0, -6.0]]]).permute(1, 0, 2)
    m(x).sum().backward()
    assert m.weight.grad.tolist() == [-1.0, -3.0, -6.0]


def test_second_derivatives_by_gradgradcheck():
    x = dg.tensor([-2.5, -0.7, 0.4, 1.3, 2.2], dtype=dg.float64, requires_grad=True)
    w = dg.tensor([0.3], dtype=dg.float64, requires_grad=True)
    for f in (F.hardswish, F.softsign, F.tanhshrink, lambda t: F.celu(t, 0.7)):
        assert dg.autograd.gradgradcheck(f, (x,))
    assert dg.autograd.gradgradcheck(F.prelu, (x, w))
