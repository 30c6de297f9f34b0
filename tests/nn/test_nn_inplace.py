"""``inplace=True`` of activations and dropout writes the result into the input, as torch's.

The result is the out-of-place one (values and gradients; those are checked against torch and finite
differences elsewhere), the returned tensor is the input itself with its version bumped, a leaf that
requires grad raises torch's error, and the modules' ``inplace`` does the same.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

F = dg.nn.functional
X = np.array([-2.0, -0.5, 0.3, 1.7, 4.0])
CASES = {
    "relu": lambda x, inplace: F.relu(x, inplace),
    "threshold": lambda x, inplace: F.threshold(x, 0.2, -1.0, inplace),
    "relu6": lambda x, inplace: F.relu6(x, inplace),
    "hardtanh": lambda x, inplace: F.hardtanh(x, -1.0, 1.0, inplace),
    "silu": lambda x, inplace: F.silu(x, inplace),
    "elu": lambda x, inplace: F.elu(x, 0.7, inplace),
    "celu": lambda x, inplace: F.celu(x, 0.7, inplace),
    "selu": lambda x, inplace: F.selu(x, inplace),
    "leaky_relu": lambda x, inplace: F.leaky_relu(x, 0.1, inplace),
    "hardsigmoid": lambda x, inplace: F.hardsigmoid(x, inplace),
    "hardswish": lambda x, inplace: F.hardswish(x, inplace),
    "mish": lambda x, inplace: F.mish(x, inplace),
}


def _value_and_grad(fn, inplace):
    a = dg.tensor(X, requires_grad=True)
    x = a * 1.0
    version = x._version
    y = fn(x, inplace)
    (y * y * a).sum().backward()
    return x, y, version, a.grad.numpy()


@pytest.mark.parametrize("name", list(CASES))
def test_the_result_is_written_into_the_input(name):
    x, y, version, grad = _value_and_grad(CASES[name], True)
    _, expected, _, expected_grad = _value_and_grad(CASES[name], False)
    assert y is x and x._version == version + 1
    np.testing.assert_array_equal(x.detach().numpy(), expected.detach().numpy())
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", list(CASES))
def test_a_leaf_that_requires_grad_raises_torchs_error(name):
    leaf = dg.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        CASES[name](leaf, True)
    np.testing.assert_array_equal(leaf.detach().numpy(), X)  # (unchanged)
    with dg.no_grad():
        assert CASES[name](leaf, True) is leaf


def test_modules_with_inplace_write_into_their_input():
    for make in (dg.nn.ReLU, lambda inplace: dg.nn.LeakyReLU(0.2, inplace), dg.nn.Hardtanh, dg.nn.ELU,
                 dg.nn.SiLU, dg.nn.Mish, dg.nn.SELU, dg.nn.CELU, dg.nn.ReLU6, dg.nn.Hardswish,
                 lambda inplace: dg.nn.Threshold(0.2, -1.0, inplace)):
        x = dg.tensor(X)
        assert make(inplace=True)(x) is x
        np.testing.assert_array_equal(x.numpy(), make(inplace=False)(dg.tensor(X)).numpy())


def test_dropout_in_place_draws_what_the_out_of_place_form_draws():
    dg.manual_seed(3)
    expected = F.dropout(dg.ones(8) * 1.0, 0.5, True)
    dg.manual_seed(3)
    x = dg.ones(8) * 1.0
    assert F.dropout(x, 0.5, True, inplace=True) is x
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    module = dg.nn.Dropout(0.5, inplace=True)
    x = dg.ones(8) * 1.0
    assert module(x) is x
    module.eval()
    assert module(x) is x
