"""A NumPy array given to an op as an operand and read by a derivative rule is kept as a copy: changing
the array in place after the call (no version counter sees that) changes neither the gradient nor the
tangent. Each call form is run twice: once with the array written to between the call and the
derivative, once with a fresh array; both derivatives must agree."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.forward_ad as fwAD

CALLS = {
    "x * a": lambda a, x: x * a,
    "a * x": lambda a, x: a * x,
    "x / a": lambda a, x: x / a,
    "x ** a": lambda a, x: x ** a,
    "a ** x": lambda a, x: a ** x,
    "np.multiply": lambda a, x: np.multiply(a, x),
    "a @ x": lambda a, x: a @ x,
    "x @ a": lambda a, x: x @ a,
    "np.matmul": lambda a, x: np.matmul(a, x),
    "np.dot": lambda a, x: np.dot(a, x),
    "np.inner": lambda a, x: np.inner(a, x),
    "np.vdot": lambda a, x: np.vdot(a, x),
    "np.kron": lambda a, x: np.kron(a, x),
    "np.einsum": lambda a, x: np.einsum("ij,jk->ik", a, x),
    "np.convolve": lambda a, x: np.convolve(a[0], x[0]),
    "np.polyval": lambda a, x: np.polyval(a[0], x),
    "np.trapezoid": lambda a, x: np.trapezoid(x, a[0]),
    "np.where": lambda a, x: np.where(a > 2, x * a, x),
    "np.linalg.solve": lambda a, x: np.linalg.solve(a, x),
    "dg.mm": lambda a, x: dg.mm(a, x),
    "dg.mv": lambda a, x: dg.mv(a, x[0]),
    "dg.bmm": lambda a, x: dg.bmm(a[None], x[None]),
    "dg.addmm": lambda a, x: dg.addmm(x, a, x),
    "dg.addmv": lambda a, x: dg.addmv(x[0], a, x[0]),
    "dg.einsum": lambda a, x: dg.einsum("ij,jk->ik", a, x),
    "dg.tensordot": lambda a, x: dg.tensordot(a, x, 1),
    "dg.kron": lambda a, x: dg.kron(a, x),
    "dg.outer": lambda a, x: dg.outer(a[0], x[0]),
    "dg.addcmul": lambda a, x: dg.addcmul(x, x, a),
    "dg.addcdiv": lambda a, x: dg.addcdiv(x, x, a),
    "dg.lerp": lambda a, x: dg.lerp(x, x * 2, a),
    "dg.hypot": lambda a, x: dg.hypot(x, a),
    "dg.stack": lambda a, x: dg.stack([a, x]) ** 2,
    "np.concatenate": lambda a, x: np.concatenate([a, x]) ** 2,
    "dg.linalg.solve": lambda a, x: dg.linalg.solve(a, x),
    "dg.linalg.solve_triangular": lambda a, x: dg.linalg.solve_triangular(a, x, upper=True),
    "dg.cholesky_solve": lambda a, x: dg.cholesky_solve(x, a),
    "dg.linalg.lstsq": lambda a, x: dg.linalg.lstsq(a, x).solution,
    "dg.linalg.vecdot": lambda a, x: dg.linalg.vecdot(a, x),
    "dg.linalg.multi_dot": lambda a, x: dg.linalg.multi_dot([a, x, a]),
    "nn.functional.linear": lambda a, x: dg.nn.functional.linear(x, a),
}


def _operand() -> np.ndarray:
    return np.array([[3.0, 1.0], [0.5, 4.0]])


def _scramble(a: np.ndarray) -> None:
    a[...] = [[5.0, 2.0], [1.0, 9.0]]


def _point() -> dg.Tensor:
    return dg.tensor([[1.5, 0.5], [0.25, 2.0]])


def _gradient(call, scramble: bool) -> np.ndarray:
    a, x = _operand(), _point().requires_grad_()
    y = call(a, x)
    if scramble:
        _scramble(a)
    y.sum().backward()
    return x.grad.numpy()


def _tangent(call, scramble: bool) -> np.ndarray:
    a = _operand()
    with fwAD.dual_level():
        y = call(a, fwAD.make_dual(_point(), dg.ones(2, 2)))
        if scramble:
            _scramble(a)
        return fwAD.unpack_dual(y).tangent.numpy()


@pytest.mark.parametrize("name", list(CALLS))
def test_array_changed_after_the_call_changes_no_gradient(name):
    np.testing.assert_array_equal(_gradient(CALLS[name], True), _gradient(CALLS[name], False))


@pytest.mark.parametrize("name", list(CALLS))
def test_array_changed_after_the_call_changes_no_tangent(name):
    np.testing.assert_array_equal(_tangent(CALLS[name], True), _tangent(CALLS[name], False))


@pytest.mark.parametrize("name", ["a @ x", "np.einsum", "dg.addcmul", "dg.linalg.solve"])
def test_array_changed_inside_a_vmapped_gradient_changes_nothing(name):
    call = CALLS[name]

    def per_example(scramble):
        a = _operand()

        def loss(x):
            y = call(a, x)
            if scramble:
                _scramble(a)
            return y.sum()

        return dg.vmap(dg.func.grad(loss))(dg.stack([_point(), 2 * _point()])).numpy()

    np.testing.assert_array_equal(per_example(True), per_example(False))


def test_under_no_grad_the_array_is_not_copied():
    a = np.ones(3)
    with dg.no_grad():
        assert dg.tensor([1.0, 2.0, 3.0]).mul(dg.as_tensor(a))._data is not a  # (a result, never the operand)
        from dualgrad.tensor import as_operand
        assert as_operand(a)._data is a


def test_a_read_only_array_is_not_copied():
    from dualgrad.tensor import as_operand
    a = np.ones(3)
    a.flags.writeable = False
    assert as_operand(a)._data is a
