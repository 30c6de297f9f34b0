"""``split``, ``chunk`` and ``unbind`` return views of their input.

The pieces share memory and the version counter with the input; an in-place
change of a piece updates the input, and gradients (first and second order,
reverse and forward) equal those of the out-of-place formulation and central
differences. Until a piece is changed in place, all pieces come from one node
whose backward is one ``cat`` / ``stack``.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order
from helpers import directional_fd

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.func import grad, vmap

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 3))

# (name, pieces of y, how to join pieces back, which piece is changed in place)
CASES = [
    ("split_size", lambda y: y.split(2), lambda ps: dg.cat(ps, 0), 1),
    ("split_sizes_dim1", lambda y: dg.split(y, [1, 2], dim=1), lambda ps: dg.cat(ps, 1), 0),
    ("chunk_dim1", lambda y: y.chunk(2, dim=1), lambda ps: dg.cat(ps, 1), 1),
    ("unbind", lambda y: y.unbind(), lambda ps: dg.stack(ps, 0), 2),
    ("unbind_dim1", lambda y: dg.unbind(y, -1), lambda ps: dg.stack(ps, 1), 1),
]
IDS = [c[0] for c in CASES]


def _piece_shape(pieces_of, k: int) -> tuple:
    return pieces_of(dg.tensor(X))[k].shape


@pytest.mark.parametrize(("name", "pieces_of", "join", "k"), CASES, ids=IDS)
def test_pieces_share_memory_and_the_version_counter(name, pieces_of, join, k):
    x = dg.tensor(X)
    pieces = pieces_of(x)
    assert all(p._base is x and np.shares_memory(p.numpy(), x.numpy()) for p in pieces)
    pieces[k].add_(1.0)
    assert x._version == 1 and all(p._version == 1 for p in pieces)
    expected = join([dg.tensor(p.numpy() + (i == k)) for i, p in enumerate(pieces_of(dg.tensor(X)))])
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    x.mul_(2.0)  # a change of the input is seen by every piece
    np.testing.assert_array_equal(join(list(pieces)).numpy(), x.numpy())
    assert all(p._version == 2 for p in pieces)


def test_pieces_of_a_view_are_views_of_its_base():
    x = dg.tensor(X)
    first, rest = x.T.split([1, 2])
    assert first._base is x
    first.fill_(0.0)
    np.testing.assert_array_equal(x.numpy()[:, 0], 0.0)


@pytest.mark.parametrize(("name", "pieces_of", "join", "k"), CASES, ids=IDS)
def test_pieces_come_from_one_node_until_changed(name, pieces_of, join, k):
    x = dg.tensor(X, requires_grad=True)
    pieces = pieces_of(x * 1)
    assert len({id(p.grad_fn) for p in pieces}) == 1
    assert pieces[0].grad_fn.name() in ("SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0")


def _in_place(pieces_of, k: int):
    def call(x, w):
        y = x * 1
        piece = pieces_of(y)[k]
        piece.mul_(w)
        piece.sin_()
        return y * y
    return call


def _out_of_place(pieces_of, join, k: int):
    def call(x, w):
        pieces = list(pieces_of(x * 1))
        pieces[k] = (pieces[k] * w).sin()
        return join(pieces) * join(pieces)
    return call


@pytest.mark.parametrize(("name", "pieces_of", "join", "k"), CASES, ids=IDS)
def test_in_place_through_a_piece_matches_out_of_place_first_and_second_order(name, pieces_of, join, k):
    w = RNG.standard_normal(_piece_shape(pieces_of, k))
    in_place, out_of_place = _in_place(pieces_of, k), _out_of_place(pieces_of, join, k)
    xs = [dg.tensor(X, requires_grad=True), dg.tensor(w, requires_grad=True)]
    ys = [dg.tensor(X, requires_grad=True), dg.tensor(w, requires_grad=True)]
    a, b = in_place(*xs), out_of_place(*ys)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-14)
    u = dg.tensor(RNG.standard_normal(a.shape))
    ga = dg.grad(a, xs, u, create_graph=True)
    gb = dg.grad(b, ys, u, create_graph=True)
    for left, right in zip(ga, gb):
        np.testing.assert_allclose(left.detach().numpy(), right.detach().numpy(), rtol=1e-12, atol=1e-14)
    v = [dg.tensor(RNG.standard_normal(t.shape)) for t in xs]
    second_a = dg.grad(sum((g * d).sum() for g, d in zip(ga, v)), xs)
    second_b = dg.grad(sum((g * d).sum() for g, d in zip(gb, v)), ys)
    for left, right in zip(second_a, second_b):
        np.testing.assert_allclose(left.numpy(), right.numpy(), rtol=1e-12, atol=1e-14)
    check_first_order(in_place, [X, w])
    check_second_order(in_place, [X, w])


@pytest.mark.parametrize(("name", "pieces_of", "join", "k"), CASES, ids=IDS)
def test_forward_mode_through_an_in_place_piece(name, pieces_of, join, k):
    w = RNG.standard_normal(_piece_shape(pieces_of, k))
    tangent = RNG.standard_normal(X.shape)
    in_place = _in_place(pieces_of, k)
    with fwAD.dual_level():
        out = in_place(fwAD.make_dual(dg.tensor(X), dg.tensor(tangent)), dg.tensor(w))
        got = fwAD.unpack_dual(out).tangent.numpy()
    expected, = directional_fd(in_place, [X, w], [tangent, np.zeros_like(w)])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_a_saved_piece_changed_through_a_sibling_or_the_base_raises_at_backward():
    x = dg.tensor(X, requires_grad=True)
    y = x * 1
    first, second = y.split(2)
    z = first.sin()  # saves first
    second.add_(1.0)  # the shared version counter moves
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y = x * 1
    first, _ = y.unbind(1)[:2]
    z = first.sin()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_in_place_on_a_piece_of_a_leaf_that_requires_grad_raises():
    x = dg.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.split(2)[0].mul_(2.0)


def test_in_place_through_a_piece_under_vmap_matches_a_loop():
    def f(row, w):
        y = row * 1
        first, rest = y.split([1, 2])
        first.mul_(rest.sum() * w)
        return (y ** 2).sum()

    def out_of_place(row, w):
        first, rest = row.split([1, 2])
        return (dg.cat([first * rest.sum() * w, rest]) ** 2).sum()

    w = dg.tensor(0.7)
    batched = vmap(grad(f), in_dims=(0, None))(dg.tensor(X), w)
    loop = np.stack([grad(f)(dg.tensor(row), w).numpy() for row in X])
    expected = np.stack([grad(out_of_place)(dg.tensor(row), w).numpy() for row in X])
    np.testing.assert_allclose(loop, expected, rtol=1e-12)
    np.testing.assert_allclose(batched.numpy(), expected, rtol=1e-12)
    total = grad(lambda x: vmap(f, in_dims=(0, None))(x, w).sum())(dg.tensor(X))
    np.testing.assert_allclose(total.numpy(), expected, rtol=1e-12)
