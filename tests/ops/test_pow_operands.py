"""``x ** e`` and ``e ** x`` with an array or a list on the other side: torch's ``pow(Tensor, Tensor)``
with a constant tensor, in both modes and under vmap, against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import directional_fd

import dualgrad as dg

X = np.array([1.2, 0.7, 2.0])
E = [1.5, 2.0, 0.5]
OPERANDS = [("list", E), ("ndarray", np.array(E)), ("tensor", dg.tensor(E))]
CALLS = {
    "x ** e": lambda x, e: x ** e,
    "e ** x": lambda x, e: e ** x,
    "pow(x, e)": lambda x, e: dg.pow(x, e),
    "pow(e, x)": lambda x, e: dg.pow(e, x),
    "np.power(x, e)": lambda x, e: np.power(x, e),
}


@pytest.mark.parametrize("kind, e", OPERANDS, ids=[k for k, _ in OPERANDS])
@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
def test_array_operand_is_a_constant_tensor(call, kind, e):
    f = CALLS[call]
    v = np.array([0.3, -1.0, 0.8])
    expected_value = f(X, np.asarray(E))
    want = directional_fd(lambda x: f(x, e), [X], [v])[0]
    value, tangent = dg.func.jvp(lambda x: f(x, e), (dg.tensor(X),), (dg.tensor(v),))
    np.testing.assert_allclose(value.numpy(), expected_value, rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-6, atol=1e-8)
    gradient = dg.func.grad(lambda x: (f(x, e) * dg.tensor(v)).sum())(dg.tensor(X))
    np.testing.assert_allclose((gradient.numpy() * v).sum(), (want * v).sum(), rtol=1e-6)
    per_row = dg.func.vmap(lambda x: f(x, e))(dg.tensor(np.stack([X, X + 0.5])))
    np.testing.assert_allclose(per_row.numpy(), np.stack([f(X, np.asarray(E)), f(X + 0.5, np.asarray(E))]))


def test_array_exponent_gives_torchs_node_and_dtype():
    x = dg.tensor([1.5, 2.0], dtype=dg.float32, requires_grad=True)
    y = x ** [2.0, 3.0]
    assert y.grad_fn.name() == "PowBackward1"  # torch's pow(Tensor, Tensor)
    assert y.dtype == (x * [2.0, 3.0]).dtype  # (the list promotes as it does in the other operators)


def test_second_derivative_of_array_exponent():
    hess = dg.func.hessian(lambda x: (x ** np.array([3.0, 4.0])).sum())(dg.tensor([1.5, 0.5]))
    np.testing.assert_allclose(hess.numpy(), np.diag([6 * 1.5, 12 * 0.5 ** 2]))


def test_bad_operand_is_a_type_error():
    with pytest.raises(TypeError, match="expected a Tensor, an array or a number, not str"):
        dg.tensor([1.0]) ** "a"


def test_array_exponent_changed_after_the_call_does_not_change_the_gradient():
    x = dg.tensor([1.5, 2.0], requires_grad=True)
    e = np.array([3.0, 2.0])
    y = x ** e
    e[:] = 1.0  # (the node keeps a copy, as torch's tensor constructors would)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3 * 1.5 ** 2, 2 * 2.0])
