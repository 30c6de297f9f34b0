"""Tensors made from a batched tensor inside vmap are batched (torch.func's semantics): ``new_zeros``,
``new_ones``, ``new_empty``, ``new_full`` and NumPy's ``zeros_like`` and friends, so that the in-place
pattern torch.func recommends (``r = v.new_zeros(...); r.diagonal().copy_(v)``) works."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.vmap.batching import BatchedTensor

X = np.array([[1.0, 2.0, 3.0], [3.0, -4.0, 5.0]])

NEW = {
    "new_zeros": (lambda v: v.new_zeros(2, 3), lambda v: np.zeros((2, 3))),
    "new_zeros(size=)": (lambda v: v.new_zeros(size=(4,)), lambda v: np.zeros(4)),
    "new_ones": (lambda v: v.new_ones((2,)), lambda v: np.ones(2)),
    "new_full": (lambda v: v.new_full((3,), 1.5), lambda v: np.full(3, 1.5)),
    "new_empty": (lambda v: v.new_empty(3).fill_(2.0), lambda v: np.full(3, 2.0)),
    "np.zeros_like": (lambda v: np.zeros_like(v), np.zeros_like),
    "np.ones_like": (lambda v: np.ones_like(v), np.ones_like),
    "np.empty_like": (lambda v: np.empty_like(v).fill_(3.0), lambda v: np.full_like(v, 3.0)),
    "np.full_like": (lambda v: np.full_like(v, 7.0), lambda v: np.full_like(v, 7.0)),
    "np.zeros_like(shape=)": (lambda v: np.zeros_like(v, shape=(2, 2)), lambda v: np.zeros((2, 2))),
    "np.full_like(tensor fill)": (lambda v: np.full_like(v, v[0]), lambda v: np.full_like(v, v[0])),
}


@pytest.mark.parametrize("name", list(NEW))
def test_new_tensors_of_a_batched_tensor_are_batched(name):
    make, expected = NEW[name]
    seen = []

    def f(v):
        r = make(v)
        seen.append(type(r))
        return r

    out = dg.func.vmap(f)(dg.tensor(X))
    assert seen == [BatchedTensor]
    np.testing.assert_array_equal(out.numpy(), np.stack([expected(row) for row in X]))


def test_new_tensors_keep_dtype_and_take_a_dtype():
    x = dg.tensor(X, dtype=dg.float32)
    out = dg.func.vmap(lambda v: (v.new_zeros(2), v.new_ones(2, dtype=dg.int64), np.zeros_like(v, dtype=np.int32)))(x)
    assert [o.dtype for o in out] == [np.float32, np.int64, np.int32]
    assert [o.shape for o in out] == [(2, 2), (2, 2), (2, 3)]


def test_nested_vmap_batches_at_every_level():
    out = dg.func.vmap(dg.func.vmap(lambda s: s.new_zeros(2) + s))(dg.tensor(X))
    np.testing.assert_array_equal(out.numpy(), np.repeat(X[..., None], 2, axis=-1))


def _embed_diagonal(v):
    r = v.new_zeros(v.shape[0], v.shape[0])
    r.diagonal().copy_(v)
    return r


def _energy(v):
    r = _embed_diagonal(v)
    return (r @ r + r).sum()  # sum of v**2 + v


@pytest.mark.parametrize("in_dims", [0, 1])
def test_torch_func_in_place_pattern_matches_a_loop(in_dims):
    x = dg.tensor(X if in_dims == 0 else X.T.copy())
    batched = dg.func.vmap(_embed_diagonal, in_dims=in_dims)(x)
    loop = np.stack([np.diag(row) for row in X])
    np.testing.assert_array_equal(batched.numpy(), loop)


def test_in_place_pattern_under_grad_of_vmap_and_vmap_of_grad():
    x = dg.tensor(X)
    want = 2 * X + 1
    np.testing.assert_allclose(dg.func.grad(lambda x: dg.func.vmap(_energy)(x).sum())(x).numpy(), want)
    np.testing.assert_allclose(dg.func.vmap(dg.func.grad(_energy))(x).numpy(), want)
    np.testing.assert_allclose(dg.func.vmap(dg.func.jacfwd(_energy))(x).numpy(), want)
    jac = dg.func.vmap(dg.func.jacrev(_embed_diagonal))(x).numpy()
    np.testing.assert_allclose(jac, np.broadcast_to(np.eye(3)[:, :, None] * np.eye(3)[:, None, :], (2, 3, 3, 3)))


def test_in_place_pattern_matches_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor(X)
    want = torch.func.vmap(lambda v: (lambda r: (r.diagonal().copy_(v), r)[1])(v.new_zeros(3, 3)))(t)
    np.testing.assert_array_equal(dg.func.vmap(_embed_diagonal)(dg.tensor(X)).numpy(), want.numpy())


def test_new_full_errors_are_torchs():
    with pytest.raises(TypeError, match="new_full\\(\\): argument 'size' \\(position 1\\) must be tuple of ints"):
        dg.func.vmap(lambda v: v.new_full(3, 1.0))(dg.tensor(X))
    with pytest.raises(TypeError, match='new_empty\\(\\) missing 1 required positional arguments: "size"'):
        dg.func.vmap(lambda v: v.new_empty())(dg.tensor(X))


def test_np_full_like_with_a_tracked_fill_value_is_differentiable():
    x = dg.ones(2, 3)
    assert dg.func.grad(lambda v: np.full_like(x, v).sum())(dg.tensor(2.0)).item() == 6.0
    _, tangent = dg.func.jvp(lambda v: np.full_like(x, v), (dg.tensor(2.0),), (dg.tensor(1.0),))
    assert tangent.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("make, name", [
    (lambda v: dg.full((2,), v), "full"),
    (lambda v: dg.ones(2).new_full((2,), v), "new_full"),
    (lambda v: dg.full_like(dg.ones(2), v), "full_like"),
])
def test_a_tracked_tensor_as_fill_value_is_torchs_type_error(make, name):
    # (its number would be a constant: a zero derivative; torch raises the same TypeError)
    message = f"{name}\\(\\): argument 'fill_value' \\(position 2\\) must be Number, not Tensor"
    with pytest.raises(TypeError, match=message):
        make(dg.tensor(2.0, requires_grad=True))
    with pytest.raises(TypeError, match=message):
        dg.func.jvp(make, (dg.tensor(2.0),), (dg.tensor(1.0),))
    assert make(dg.tensor(2.0)).tolist() == [2.0, 2.0]  # (an untracked one gives its number, as torch)
