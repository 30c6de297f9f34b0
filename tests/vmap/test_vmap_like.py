"""``*_like`` factories inside vmap give one result per batch member.

``zeros_like``, ``ones_like``, ``full_like`` and ``empty_like`` of a batched
tensor are batched like it (so a fresh tensor can be filled in place with
batched values); ``rand_like`` and ``randn_like`` follow the vmap's
``randomness``: 'error' raises, 'different' draws per member, 'same' once.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, vmap
from dualgrad.vmap.batching import BatchedTensor

X = np.arange(12.0).reshape(3, 4)
FILLED = [
    (dg.zeros_like, (), 0.0),
    (dg.ones_like, (), 1.0),
    (dg.full_like, (2.5,), 2.5),
]


@pytest.mark.parametrize(("like", "args", "value"), FILLED)
@pytest.mark.parametrize("in_dim", [0, 1])
def test_deterministic_like_factories_are_batched_like_their_input(like, args, value, in_dim):
    seen = []

    def f(row):
        out = like(row, *args)
        seen.append(out)
        out += row  # an in-place write of a batched value: needs a batched ``out``
        return out

    result = vmap(f, in_dims=in_dim)(dg.tensor(X))
    assert type(seen[0]) is BatchedTensor and seen[0].shape == (X.shape[1 - in_dim],)
    np.testing.assert_array_equal(result.numpy(), np.moveaxis(X, in_dim, 0) + value)


@pytest.mark.parametrize("like", [dg.zeros_like, dg.ones_like, dg.empty_like])
def test_like_keeps_dtype_and_nested_batches(like):
    x = dg.tensor(np.ones((2, 3, 4), dtype=np.float32))
    seen = []

    def f(row):
        seen.append(like(row) if like is dg.empty_like else like(row, dtype="float64"))
        return seen[-1]

    out = vmap(vmap(f))(x)
    assert type(seen[0]) is BatchedTensor and type(seen[0].value) is BatchedTensor
    assert out.shape == (2, 3, 4)
    assert out.dtype == (np.float32 if like is dg.empty_like else np.float64)


def test_like_of_an_unbatched_tensor_inside_vmap_is_not_batched():
    shared = dg.ones(4)
    seen = []

    def f(row):
        seen.append(dg.zeros_like(shared))
        return row + seen[0]

    np.testing.assert_array_equal(vmap(f)(dg.tensor(X)).numpy(), X)
    assert type(seen[0]) is dg.Tensor


def test_filling_a_zeros_like_gives_per_example_gradients():
    def f(row):
        out = dg.zeros_like(row)
        out[1:] = row[:-1] ** 2
        return out.sum()

    per_example = vmap(grad(f))(dg.tensor(X))
    expected = np.concatenate([2 * X[:, :-1], np.zeros((3, 1))], axis=1)
    np.testing.assert_array_equal(per_example.numpy(), expected)


@pytest.mark.parametrize("like", [dg.rand_like, dg.randn_like])
def test_random_like_factories_follow_randomness(like):
    x = dg.tensor(X)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(like)(x)
    different = vmap(like, randomness="different")(x).numpy()
    same = vmap(like, randomness="same")(x).numpy()
    assert different.shape == same.shape == X.shape
    assert not np.allclose(different, different[0])
    np.testing.assert_array_equal(same, np.broadcast_to(same[0], X.shape))
    shared = vmap(lambda row: like(dg.ones(4)), randomness="different")(x).numpy()
    assert not np.allclose(shared, shared[0])  # 'different' also for an input that is not batched
