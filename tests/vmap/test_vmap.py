"""vmap semantics (in_dims/out_dims, nesting, chunks, randomness, autograd through it) and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad import vmap


def loop(f, *arrays, in_dims, out_dim=0):
    """The definition of vmap: f on each batch member, results stacked along ``out_dim``."""
    size = next(a.shape[d] for a, d in zip(arrays, in_dims, strict=True) if d is not None)
    results = [f(*[dg.tensor(a if d is None else np.take(a, k, axis=d))
                   for a, d in zip(arrays, in_dims, strict=True)]) for k in range(size)]
    return np.stack([r.numpy() for r in results], axis=out_dim)


def f(x, y):
    return (x.sin() * y).sum(-1) + (x @ y.mT).sum(-1) * 0.5


@given(data=st.data())
def test_vmap_equals_loop_for_any_in_and_out_dims(data):
    size, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
    dx, dy = data.draw(st.sampled_from([0, 1, -1, None])), data.draw(st.sampled_from([0, 1, None]))
    if dx is None and dy is None:
        dx = 0
    shapes = [(n, 2) if d is None else (size, n, 2) if d == 0 else (n, size, 2) if d == 1 else (n, 2, size)
              for d in (dx, dy)]
    x, y = (data.draw(hnp.arrays(np.float64, s, elements=st.floats(-2, 2))) for s in shapes)
    dims = [d if d is None or d >= 0 else 2 for d in (dx, dy)]
    out_dim = data.draw(st.sampled_from([0, 1, -1]))
    got = vmap(f, in_dims=(dx, dy), out_dims=out_dim)(dg.tensor(x), dg.tensor(y))
    np.testing.assert_allclose(got.numpy(), loop(f, x, y, in_dims=dims, out_dim=out_dim), rtol=1e-12)


def test_nested_vmap_equals_double_loop():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4, 2)), rng.standard_normal((4, 2))
    inner = vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0))
    got = vmap(inner, in_dims=(0, None))(dg.tensor(x), dg.tensor(y))
    np.testing.assert_allclose(got.numpy(), np.einsum("ijk,jk->ij", x, y))
    inner_first = vmap(vmap(lambda a: a.exp().sum(), in_dims=1), in_dims=0)(dg.tensor(x))
    np.testing.assert_allclose(inner_first.numpy(), np.exp(x).sum(axis=1))


def test_pytree_inputs_and_outputs_and_passthrough_arguments():
    x, y = dg.ones(3, 2), dg.tensor([1., 2.])

    def g(pair, scale, *, shift):
        a, b = pair["a"], pair["b"]
        return (a * b * scale + shift, [a.sum()])

    out = vmap(g, in_dims=({"a": 0, "b": None}, None), out_dims=(1, [0]))({"a": x, "b": y}, 2.0, shift=1.0)
    assert out[0].shape == (2, 3) and out[1][0].shape == (3,)
    np.testing.assert_allclose(out[0].numpy(), np.tile([[3.], [5.]], (1, 3)))


def test_unbatched_outputs_are_broadcast_and_none_out_dims_pass_through():
    x = dg.ones(3, 2)
    const, same = vmap(lambda a: (dg.zeros(2), 7), out_dims=(0, None))(x)
    assert const.shape == (3, 2) and same == 7


def test_chunk_size_gives_the_same_result():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((7, 3, 2)), rng.standard_normal((3, 2))
    full = vmap(f, in_dims=(0, None))(dg.tensor(x), dg.tensor(y))
    for chunk in (1, 3, 7, 10):
        chunked = vmap(f, in_dims=(0, None), chunk_size=chunk)(dg.tensor(x), dg.tensor(y))
        np.testing.assert_allclose(chunked.numpy(), full.numpy())


def test_randomness_modes():
    x = dg.ones(4, 3)
    same = vmap(lambda a: a * dg.randn(3), randomness="same")(x).numpy()
    assert np.all(same == same[0])
    different = vmap(lambda a: a * dg.rand(3), randomness="different")(x).numpy()
    assert len({tuple(r) for r in different}) == 4
    like = vmap(lambda a: dg.randn_like(a), randomness="different")(x)
    assert like.shape == (4, 3)


def test_chunks_of_a_same_randomness_vmap_draw_the_same_samples():
    x = dg.ones(5)
    same = vmap(lambda a: a * dg.rand(()), randomness="same", chunk_size=2)(x).numpy()
    assert np.all(same == same[0])
    different = vmap(lambda a: a * dg.rand(()), randomness="different", chunk_size=2)(x).numpy()
    assert len(set(different)) == 5
    inner = vmap(lambda a: a * dg.rand(()), randomness="same", chunk_size=1)
    nested = vmap(inner, randomness="different")(dg.ones(2, 3)).numpy()
    assert np.all(nested == nested[:, :1]) and nested[0, 0] != nested[1, 0]


def test_random_op_under_error_mode_raises():
    with pytest.raises(RuntimeError, match="random operation while in randomness error mode"):
        vmap(lambda a: a + dg.randn(3))(dg.ones(2, 3))


def test_grad_through_vmap_matches_finite_differences():
    rng = np.random.default_rng(2)
    x0, y0 = rng.standard_normal((4, 3, 2)), rng.standard_normal((3, 2))
    x = dg.tensor(x0, requires_grad=True)

    def total(a):
        return vmap(f, in_dims=(0, None))(a, dg.tensor(y0)).pow(2).sum()

    (g,) = dg.grad(total(x), x)
    direction = rng.standard_normal(x0.shape)
    with dg.no_grad():
        eps = 1e-6
        plus, minus = total(dg.tensor(x0 + eps * direction)), total(dg.tensor(x0 - eps * direction))
        fd = (plus.item() - minus.item()) / (2 * eps)
    np.testing.assert_allclose(np.sum(g.numpy() * direction), fd, rtol=1e-6)


def test_is_grads_batched_equals_one_backward_per_vector():
    rng = np.random.default_rng(3)
    x = dg.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    w = dg.tensor(rng.standard_normal((2, 4)))
    out = (x @ w).tanh()
    vs = rng.standard_normal((5, 3, 4))
    (batched,) = dg.grad(out, x, dg.tensor(vs), retain_graph=True, is_grads_batched=True)
    assert batched.shape == (5, 3, 2)
    for k in range(5):
        (single,) = dg.grad(out, x, dg.tensor(vs[k]), retain_graph=True)
        np.testing.assert_allclose(batched.numpy()[k], single.numpy(), rtol=1e-12)


def test_is_grads_batched_errors():
    x = dg.ones(3, 2, requires_grad=True)
    out = x * 2
    # (as torch: the shape of one example, ``grad_output[0][0]``, against the output's)
    words = (r"first dimension of each grad_output.*grad_output\[0\] has a shape of \(3,\) and "
             r"output\[0\] has a shape of \(3, 2\)")
    with pytest.raises(RuntimeError, match=words):
        dg.grad(out, x, dg.ones(4, 3), is_grads_batched=True)
    with pytest.raises(RuntimeError, match=r"same size in the mapped dimension, got sizes \[2, 3\]"):
        dg.grad((out, x * 3), x, (dg.ones(2, 3, 2), dg.ones(3, 3, 2)), is_grads_batched=True)


def test_values_of_batched_tensors_cannot_be_read():
    with pytest.raises(RuntimeError, match="vmap: It looks like you're calling .item\\(\\) on a Tensor"):
        vmap(lambda a: a.sum().item())(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="vmap: It looks like you're calling .item\\(\\) on a Tensor"):
        vmap(lambda a: float(a.sum()))(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="attempting to use a Tensor in some data-dependent control flow"):
        vmap(lambda a: a if a.sum() > 0 else -a)(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="cannot read the values of a batched tensor"):
        vmap(lambda a: a.numpy())(dg.ones(2, 3))


@pytest.mark.parametrize("call, error, words", [
    (lambda: vmap(lambda a, b: a + b)(dg.ones(2), dg.ones(3)), ValueError,
     r"Expected all tensors to have the same size in the mapped dimension, got sizes \[2, 3\]"),
    (lambda: vmap(lambda a: a, in_dims=2)(dg.ones(2, 3)), ValueError,
     r"Got in_dim=2 for some input.*dimensionality 2.*-2 <= in_dim < 2"),
    (lambda: vmap(lambda a, b: a, in_dims=(0,))(dg.ones(2), dg.ones(2)), ValueError,
     "in_dims is not compatible with the structure of `inputs`"),
    (lambda: vmap(lambda a: a, in_dims=[0])(dg.ones(2)), ValueError,
     "expected `in_dims` to be int or a \\(potentially nested\\) tuple"),
    (lambda: vmap(lambda a: a, in_dims=(1.5,))(dg.ones(2)), ValueError,
     "in_dim must be either an integer dimension or None"),
    (lambda: vmap(lambda a, b: a * b)(dg.ones(2), 2.0), ValueError,
     "cannot vmap over non-Tensor arguments, please use None"),
    (lambda: vmap(lambda a: a, in_dims=None)(dg.ones(2)), ValueError, "expected `in_dims` to be int"),
    (lambda: vmap(lambda a: a, in_dims=(None,))(dg.ones(2)), ValueError,
     "vmap: Expected at least one Tensor to vmap over"),
    (lambda: vmap(lambda a: a)(dg.tensor(1.)), ValueError,
     "Tensor of dimensionality 0 so expected in_dim to satisfy -0 <= in_dim < 0"),
    (lambda: vmap(lambda: 1)(), ValueError, "got no inputs"),
    (lambda: vmap(lambda a: a, out_dims="a")(dg.ones(2)), ValueError, "`out_dims` must be an int, None"),
    (lambda: vmap(lambda a: (a, a), out_dims=(0, 0, 0))(dg.ones(2)), ValueError,
     "out_dims is not compatible with the structure of `outputs`"),
    (lambda: vmap(lambda a: a, out_dims=3)(dg.ones(2, 3)), IndexError, "Dimension out of range"),
    (lambda: vmap(lambda a: a, out_dims=None)(dg.ones(2)), ValueError,
     "can not return a BatchedTensor when out_dim is None"),
    (lambda: vmap(lambda a: 3)(dg.ones(2)), ValueError, "must only return Tensors, got type <class 'int'>"),
    (lambda: vmap(lambda a: a, randomness="sometimes"), RuntimeError,
     "Only allowed values for randomness are 'error', 'different', or 'same'. Got sometimes"),
    (lambda: vmap(lambda a: a, chunk_size=0), ValueError,
     r"chunk_size should be None or greater than 0. \(got 0\)"),
])
def test_vmap_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_escaped_batched_tensor_is_refused():
    leaked = []
    vmap(lambda a: leaked.append(a) or a)(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="cannot read the values|outside the vmap call"):
        leaked[0] + 1


def test_vmap_returns_named_tuples_of_their_type():
    # torch.vmap keeps the named tuple (torch.return_types.max); so does dualgrad
    result = dg.vmap(lambda row: dg.max(row, 0))(dg.tensor([[1.0, 3.0], [4.0, 2.0]]))
    assert type(result).__name__ == "ValuesIndices"
    np.testing.assert_array_equal(result.values.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(result.indices.numpy(), [1, 0])
    extremes = dg.vmap(dg.aminmax)(dg.tensor([[1.0, 3.0], [4.0, 2.0]]))
    np.testing.assert_array_equal(extremes.min.numpy(), [1.0, 2.0])
