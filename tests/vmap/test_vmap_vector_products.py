"""vmap of a product of two batched vectors (per-example dot products) is one ``vector_products`` op.

Its values, gradients (reverse, forward, nested vmap, batch axis not first) match the
per-example loop and central finite differences.
"""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose as assert_close

import dualgrad as dg
from dualgrad.func import grad, jacfwd, vmap

RNG = np.random.default_rng(0)
X, Y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))


def _loss(w, x, y):
    z = x @ w
    return dg.softplus(z) - y * z


def test_one_op_and_values_of_the_loop():
    with dg.profiler.profile() as prof:
        out = vmap(lambda a, b: a @ b)(dg.tensor(X), dg.tensor(Y))
    assert [e.name for e in prof.events()] == ["vector_products"]
    assert_close(out.numpy(), np.einsum("bi,bi->b", X, Y))


def test_batch_axis_not_first_and_nested():
    out = vmap(lambda a, b: a @ b, in_dims=(1, 0))(dg.tensor(X.T.copy()), dg.tensor(Y))
    assert_close(out.numpy(), np.einsum("bi,bi->b", X, Y))
    nested = vmap(vmap(lambda a, b: a @ b))(dg.tensor(X.reshape(2, 2, 3)), dg.tensor(Y.reshape(2, 2, 3)))
    assert_close(nested.numpy(), np.einsum("bi,bi->b", X, Y).reshape(2, 2))


def test_per_example_gradients_match_the_loop_and_finite_differences():
    w = RNG.standard_normal(3)
    labels = RNG.standard_normal(4)
    per_example = vmap(grad(_loss), in_dims=(None, 0, 0))(dg.tensor(w), dg.tensor(X), dg.tensor(labels))
    loop = [grad(_loss)(dg.tensor(w), dg.tensor(X[i]), dg.tensor(labels[i])).numpy() for i in range(4)]
    assert np.array_equal(per_example.numpy(), np.stack(loop))
    eps = 1e-6
    for i in range(4):
        for j in range(3):
            step = np.eye(3)[j] * eps
            plus = _loss(dg.tensor(w + step), dg.tensor(X[i]), dg.tensor(labels[i])).item()
            minus = _loss(dg.tensor(w - step), dg.tensor(X[i]), dg.tensor(labels[i])).item()
            assert abs((plus - minus) / (2 * eps) - per_example.numpy()[i, j]) < 1e-6


def test_gradients_of_both_vectors_and_forward_mode():
    x, y = dg.tensor(X, requires_grad=True), dg.tensor(Y, requires_grad=True)
    (vmap(lambda a, b: a @ b)(x, y) * dg.arange(4.0)).sum().backward()
    assert_close(x.grad.numpy(), np.arange(4.0)[:, None] * Y)
    assert_close(y.grad.numpy(), np.arange(4.0)[:, None] * X)
    jac = jacfwd(lambda a: vmap(lambda u, v: u @ v)(a, dg.tensor(Y)))(dg.tensor(X))
    expected = np.einsum("bc,bi->bci", np.eye(4), Y)
    assert_close(jac.numpy(), expected)


def test_complex_vectors_are_not_conjugated():
    a = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    b = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    out = vmap(lambda u, v: u @ v)(dg.tensor(a), dg.tensor(b))
    assert_close(out.numpy(), np.einsum("bi,bi->b", a, b))
