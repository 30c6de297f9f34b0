"""matmul's fast paths: one matrix product for a batch under vmap, and outer products as a multiply.

Under vmap, when one operand is not batched, the batching rule folds the batch
into the rows (or columns) of a single product; these tests check the values
against a loop over the batch, in every mode (the rule is written with ops, so
it differentiates), and that the physical product really is one 2-D product (via
the profiler's input shapes). Products with an inner dimension of 1 are computed
by a broadcasting multiply, which must agree with NumPy's matmul, errors included.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, jacfwd, jacrev
from dualgrad.profiler import profile

SIZE = 4
# (logical shape of the batched operand, shape of the unbatched one, batched operand on the left?)
CASES = [
    ((3,), (5, 3), False),      # matrix @ batch of vectors: t @ A.mT
    ((3,), (3,), False),        # vector @ batch of vectors
    ((3, 2), (5, 3), False),    # matrix @ batch of matrices: one (3, B * 2) product
    ((3, 2), (3,), False),      # vector @ batch of matrices
    ((3,), (3, 5), True),       # batch of vectors @ matrix
    ((2, 3), (3, 5), True),     # batch of matrices @ matrix: x.reshape(-1, k) @ y
    ((4, 2, 3), (3, 5), True),  # stacks of matrices fold too
    ((2, 3), (3,), True),       # batch of matrices @ vector
]


def _operands(rng, logical, fixed, bdim, dtype=np.float64):
    batch = np.moveaxis(rng.standard_normal((SIZE,) + logical), 0, bdim).astype(dtype)
    other = rng.standard_normal(fixed).astype(dtype)
    if np.dtype(dtype).kind == "c":
        batch = batch + 1j * np.moveaxis(rng.standard_normal((SIZE,) + logical), 0, bdim)
        other = other + 1j * rng.standard_normal(fixed)
    return batch, other


def _product(left_batched):
    return (lambda t, c: t @ c) if left_batched else (lambda t, c: c @ t)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("bdim", [0, 1])
@pytest.mark.parametrize("logical, fixed, left_batched", CASES)
def test_batched_times_unbatched_equals_loop(logical, fixed, left_batched, bdim, dtype):
    bdim = min(bdim, len(logical))
    batch, other = _operands(np.random.default_rng(0), logical, fixed, bdim, dtype)
    product = _product(left_batched)
    got = dg.vmap(product, in_dims=(bdim, None))(dg.tensor(batch), dg.tensor(other))
    expected = np.stack([product(np.take(batch, k, axis=bdim), other) for k in range(SIZE)])
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("logical, fixed, left_batched", CASES)
def test_one_two_dimensional_product_for_the_batch(logical, fixed, left_batched):
    batch, other = _operands(np.random.default_rng(1), logical, fixed, 0)
    with profile(record_shapes=True) as prof:
        dg.vmap(_product(left_batched), in_dims=(0, None))(dg.tensor(batch), dg.tensor(other))
    shapes = [e.input_shapes for e in prof.events() if e.name == "matmul"]
    assert len(shapes) == 1
    assert all(len(s) <= 2 for s in shapes[0]), f"a stack of products: {shapes}"


@pytest.mark.parametrize("logical, fixed, left_batched", CASES)
def test_gradients_through_the_folded_product(logical, fixed, left_batched):
    """Per-example gradients with respect to both operands, against a loop of ``grad`` calls."""
    batch, other = _operands(np.random.default_rng(2), logical, fixed, 0)
    product = _product(left_batched)

    def loss(t, c):
        return (product(t, c).sin()).sum()

    for argnum in (0, 1):
        per_example = dg.vmap(grad(loss, argnums=argnum), in_dims=(0, None))(dg.tensor(batch), dg.tensor(other))
        expected = np.stack([grad(loss, argnums=argnum)(dg.tensor(b), dg.tensor(other)).numpy()
                             for b in batch])
        np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("logical, fixed, left_batched", CASES)
def test_forward_and_reverse_jacobians_agree_with_finite_differences(logical, fixed, left_batched):
    """jacfwd runs the rule on a batch of tangents, jacrev on a batch of cotangents."""
    batch, other = _operands(np.random.default_rng(3), logical, fixed, 0)
    x, c = batch[0], dg.tensor(other)
    product = _product(left_batched)

    def f(t):
        return product(t, c).tanh()

    eps, flat = 1e-6, x.reshape(-1)
    columns = []
    for i in range(flat.size):
        step = np.zeros_like(flat)
        step[i] = eps
        plus, minus = (f(dg.tensor((flat + s).reshape(x.shape))).numpy() for s in (step, -step))
        columns.append((plus - minus) / (2 * eps))
    numeric = np.stack(columns, axis=-1).reshape(f(dg.tensor(x)).shape + x.shape)
    for jac in (jacfwd(f), jacrev(f)):
        np.testing.assert_allclose(jac(dg.tensor(x)).numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_hessian_through_the_folded_product():
    """Forward over reverse: jacfwd(jacrev(f)) batches the rule's own derivative."""
    rng = np.random.default_rng(4)
    a, x = rng.standard_normal((5, 3)), rng.standard_normal(3)

    def f(t):
        return (dg.tensor(a) @ t).tanh().sum()

    hess = dg.func.hessian(f)(dg.tensor(x)).numpy()
    d = 1 - np.tanh(a @ x) ** 2
    expected = a.T @ np.diag(-2 * np.tanh(a @ x) * d) @ a
    np.testing.assert_allclose(hess, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("left, right", [
    ((3, 1), (1, 4)),
    ((5, 3, 1), (5, 1, 2)),
    ((3, 1), (2, 1, 4)),      # batch dimensions broadcast as in matmul
    ((2, 1, 3, 1), (4, 1, 5)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_outer_products_equal_numpy_matmul(left, right, dtype):
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(left).astype(dtype), rng.standard_normal(right).astype(dtype)
    got = dg.matmul(dg.tensor(x), dg.tensor(y)).numpy()
    expected = np.matmul(x, y)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_outer_products_with_stacks_that_do_not_broadcast_raise():
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(2, 3, 1\) and \(4, 1, 5\) cannot be multiplied"):
        dg.matmul(dg.ones(2, 3, 1), dg.ones(4, 1, 5))


@pytest.mark.parametrize("left, right", [
    ((5, 2, 3), (3, 4)),
    ((5, 1, 3), (3, 1)),        # vmap(grad(f)) of x @ w: rows of x times the expanded w
    ((2, 5, 2, 3), (3, 4)),
    ((5, 0, 3), (3, 4)),        # empty stacks and matrices go to NumPy's matmul
    ((0, 2, 3), (3, 4)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_stack_times_a_broadcast_matrix_equals_numpy_matmul(left, right, dtype):
    # one matrix broadcast along the stack (stride 0) is multiplied as one product of the stacked rows
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal(left).astype(dtype), rng.standard_normal(right).astype(dtype)
    y = dg.tensor(w).expand(left[:-2] + right)
    got = dg.matmul(dg.tensor(x), y).numpy()
    expected = np.matmul(x, np.broadcast_to(w, left[:-2] + right))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_stack_times_a_broadcast_matrix_of_the_wrong_size_raises():
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(5, 2, 3\) and \(5, 4, 4\) cannot be multiplied"):
        dg.matmul(dg.ones(5, 2, 3), dg.ones(4, 4).expand((5, 4, 4)))


def test_per_example_gradients_of_a_matrix_vector_product_equal_a_loop():
    rng = np.random.default_rng(7)
    w, x = dg.tensor(rng.standard_normal(3)), dg.tensor(rng.standard_normal((6, 3)))
    per_example = dg.func.vmap(grad(lambda w, x: dg.sin(x @ w)), in_dims=(None, 0))(w, x)
    loop = np.stack([grad(lambda w, x: dg.sin(x @ w))(w, x[i]).numpy() for i in range(6)])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12)
