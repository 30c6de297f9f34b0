"""Shape ops: values against NumPy, torch's argument semantics (split sizes, pad order,
repeat), views, derivatives the table tests do not reach, batching rules and errors."""

from __future__ import annotations

import numpy as np
import pytest
from batch_checks import check_batch_rule
from grad_checks import check_first_order
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.ops.shape import core as S

arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
                    elements=st.floats(-5, 5, allow_subnormal=False))


def _grad(fn, x, cotangent=None):
    """The gradient of ``sum(fn(x) * cotangent)`` at ``x`` (cotangent of ones by default)."""
    t = dg.tensor(x, requires_grad=True)
    out = fn(t)
    u = np.ones(out.shape) if cotangent is None else cotangent
    return dg.grad(out, t, dg.tensor(u))[0].numpy()


# -- values against NumPy ------------------------------------------------------------------------
@given(arrays, st.data())
def test_rearrangements_match_numpy(x, data):
    t = dg.tensor(x)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    other = data.draw(st.integers(-x.ndim, x.ndim - 1), label="other")
    np.testing.assert_array_equal(dg.flip(t, axis).numpy(), np.flip(x, axis))
    np.testing.assert_array_equal(dg.flip(t).numpy(), np.flip(x))
    np.testing.assert_array_equal(dg.moveaxis(t, axis, other).numpy(), np.moveaxis(x, axis, other))
    np.testing.assert_array_equal(t.movedim((axis,), (other,)).numpy(), np.moveaxis(x, axis, other))
    np.testing.assert_array_equal(dg.swapaxes(t, axis, other).numpy(), np.swapaxes(x, axis, other))
    np.testing.assert_array_equal(dg.roll(t, 3, axis).numpy(), np.roll(x, 3, axis))
    np.testing.assert_array_equal(dg.roll(t, -2).numpy(), np.roll(x, -2))
    np.testing.assert_array_equal(dg.flatten(t, min(axis % x.ndim, other % x.ndim), -1).numpy(),
                                  x.reshape(x.shape[:min(axis % x.ndim, other % x.ndim)] + (-1,)))
    np.testing.assert_array_equal(dg.unsqueeze(t, axis).numpy(), np.expand_dims(x, axis))
    np.testing.assert_array_equal(dg.repeat_interleave(t, 2, axis).numpy(), np.repeat(x, 2, axis))
    np.testing.assert_array_equal(dg.repeat_interleave(t, 3).numpy(), np.repeat(x, 3))


@given(arrays, st.data())
def test_joining_and_splitting_match_numpy(x, data):
    t = dg.tensor(x)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    np.testing.assert_array_equal(dg.cat([t, t * 2], axis).numpy(), np.concatenate([x, x * 2], axis))
    np.testing.assert_array_equal(dg.stack([t, t], axis).numpy(), np.stack([x, x], axis))
    n = x.shape[axis]
    pieces = dg.split(t, 2, axis)
    assert [p.shape[axis] for p in pieces] == [2] * (n // 2) + [n % 2] * (n % 2)
    np.testing.assert_array_equal(dg.cat(pieces, axis).numpy(), x)
    np.testing.assert_array_equal(dg.stack(dg.unbind(t, axis), axis=axis).numpy(), x)
    if x.ndim > 1:
        np.testing.assert_array_equal(dg.concatenate(dg.unbind(t, axis), axis=axis % (x.ndim - 1)).numpy(),
                                      np.concatenate(list(np.moveaxis(x, axis, 0)), axis % (x.ndim - 1)))


def test_split_and_chunk_sizes_follow_torch():
    x = dg.arange(10.)
    assert [p.shape[0] for p in dg.split(x, 3)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in x.split([2, 0, 8])] == [2, 0, 8]
    assert [p.shape[0] for p in dg.chunk(x, 4)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in dg.chunk(dg.arange(6.), 4)] == [2, 2, 2]  # fewer chunks than asked
    assert [p.shape for p in dg.chunk(dg.zeros(0), 3)] == [(0,)] * 3
    np.testing.assert_array_equal(dg.split(x, [2, 8])[1].numpy(), np.arange(2., 10.))


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(-5, 5)), st.data())
def test_pad_takes_pairs_from_the_last_dim_back(x, data):
    k = data.draw(st.integers(1, x.ndim), label="padded dims")
    amounts = data.draw(st.lists(st.integers(0, 3), min_size=2 * k, max_size=2 * k), label="pad")
    widths = [(0, 0)] * (x.ndim - k) + [(amounts[2 * i], amounts[2 * i + 1]) for i in range(k)][::-1]
    np.testing.assert_array_equal(dg.pad(dg.tensor(x), amounts, value=7.0).numpy(),
                                  np.pad(x, widths, constant_values=7.0))


def test_pad_with_negative_amounts_crops():
    x = np.arange(12.).reshape(3, 4)
    np.testing.assert_array_equal(dg.pad(dg.tensor(x), (-1, 2, 1, -2)).numpy(),
                                  np.pad(x[:1, 1:], ((1, 0), (0, 2))))
    assert dg.pad(dg.ones(2, 3), (1, 2)).shape == (2, 6)


def test_tile_and_repeat_follow_torch():
    x = np.array([[1., 2.], [3., 4.]])
    t = dg.tensor(x)
    np.testing.assert_array_equal(dg.tile(t, (2,)).numpy(), np.tile(x, (1, 2)))  # missing dims count as 1
    np.testing.assert_array_equal(dg.tile(t, (2, 1, 3)).numpy(), np.tile(x, (2, 1, 3)))
    np.testing.assert_array_equal(t.repeat(1, 2).numpy(), np.tile(x, (1, 2)))
    np.testing.assert_array_equal(dg.repeat(t, (3, 1, 2)).numpy(), np.tile(x, (3, 1, 2)))
    np.testing.assert_array_equal(dg.repeat_interleave(t, [1, 3], dim=1).numpy(), np.repeat(x, [1, 3], 1))
    np.testing.assert_array_equal(dg.repeat_interleave(t, dg.tensor([2]), 0).numpy(), np.repeat(x, 2, 0))


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=4, max_side=4),
                  elements=st.floats(-5, 5)), st.integers(-3, 3), st.data())
def test_diagonals_and_triangles_match_numpy(x, k, data):
    t = dg.tensor(x)
    d1, d2 = data.draw(st.permutations(range(x.ndim)), label="dims")[:2]
    np.testing.assert_array_equal(dg.diagonal(t, k, d1, d2).numpy(), np.diagonal(x, k, d1, d2))
    np.testing.assert_array_equal(dg.triu(t, k).numpy(), np.triu(x, k))
    np.testing.assert_array_equal(t.tril(k).numpy(), np.tril(x, k))
    rows = x.reshape(-1, x.shape[-1])
    np.testing.assert_array_equal(dg.diag(dg.tensor(rows), k).numpy(), np.diag(rows, k))
    np.testing.assert_array_equal(dg.diag(dg.tensor(rows[0]), k).numpy(), np.diag(rows[0], k))


def test_diag_embed_puts_the_last_dim_on_the_diagonal():
    x = np.arange(6.).reshape(2, 3)
    out = dg.diag_embed(dg.tensor(x), 1, 0, 2).numpy()
    assert out.shape == (4, 2, 4)
    for b in range(2):
        np.testing.assert_array_equal(out[:, b, :], np.diag(x[b], 1))
    np.testing.assert_array_equal(dg.diag_embed(dg.tensor(x)).numpy(), np.stack([np.diag(r) for r in x]))


def test_narrow_and_squeeze():
    x = dg.arange(24.).reshape(2, 3, 4)
    np.testing.assert_array_equal(dg.narrow(x, 2, 1, 2).numpy(), x.numpy()[:, :, 1:3])
    np.testing.assert_array_equal(x.narrow(-1, -3, 3).numpy(), x.numpy()[..., 1:])
    y = dg.zeros(1, 3, 1)
    assert dg.squeeze(y).shape == (3,) and y.squeeze(0).shape == (3, 1) and y.squeeze((0, 2)).shape == (3,)
    assert y.squeeze(1).shape == (1, 3, 1)  # a dim of size > 1 is left alone, as in torch
    assert dg.squeeze(dg.tensor(1.), 0).shape == ()


# -- views and graph nodes -----------------------------------------------------------------------------
def test_basic_views_share_memory_with_their_input():
    x = dg.arange(24.).reshape(2, 3, 4)
    for view in (x.transpose(0, 2), x.permute(2, 0, 1), x.unsqueeze(1), x[:1].squeeze(0), x.narrow(1, 0, 2),
                 x.diagonal(0, 1, 2), x.expand(2, 2, 3, 4), x.flatten(1)):
        assert np.shares_memory(view.numpy(), x.numpy())


def test_in_place_ops_write_through_a_diagonal_view():
    a = dg.zeros(2, 2)
    a.diagonal().fill_(1.0)
    np.testing.assert_array_equal(a.numpy(), np.eye(2))


def test_grad_fn_names_follow_torch():
    x = dg.ones(2, 3, requires_grad=True)
    names = {
        "ViewBackward0": x.reshape(3, 2), "SqueezeBackward1": x.unsqueeze(0).squeeze(0),
        "UnsqueezeBackward0": x.unsqueeze(0), "CatBackward0": dg.cat([x, x]),
        "StackBackward0": dg.stack([x, x]), "SplitBackward0": x.split(1)[0],
        "UnbindBackward0": x.unbind()[0], "RepeatBackward0": x.repeat(2, 1),
        "ConstantPadNdBackward0": dg.pad(x, (1, 1)), "SliceBackward0": x.narrow(0, 0, 1),
        "DiagonalBackward0": x.diagonal(), "FlipBackward0": x.flip(0), "TriuBackward0": x.triu(),
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name


# -- derivatives --------------------------------------------------------------------------------------
def test_repeat_interleave_gradient_sums_each_run():
    x = np.array([1., 2., 3.])
    u = np.arange(1., 7.)
    np.testing.assert_array_equal(_grad(lambda t: dg.repeat_interleave(t, [3, 0, 3]), x, u), [6., 0., 15.])
    np.testing.assert_array_equal(_grad(lambda t: dg.repeat_interleave(t, 2), x, u), [3., 7., 11.])


def test_split_gradient_fills_unused_pieces_with_zeros():
    x = np.arange(5.)
    t = dg.tensor(x, requires_grad=True)
    first, _, last = dg.split(t, [2, 2, 1])
    (g,) = dg.grad((first * 2).sum() + last.sum(), t)
    np.testing.assert_array_equal(g.numpy(), [2., 2., 0., 0., 1.])


def test_pad_value_does_not_enter_the_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.ones(2), dg.tensor([1., 2.]))
        tangent = fwAD.unpack_dual(dg.pad(x, (1, 1), value=5.0)).tangent
    np.testing.assert_array_equal(tangent.numpy(), [0., 1., 2., 0.])


@pytest.mark.parametrize("fn", [
    lambda t: dg.cat([t, dg.ones(2, 3) * 3, t.flip(1)], 0),
    lambda t: dg.stack([t, t.roll(1, 0)], -1),
    lambda t: dg.tile(t, (2, 1, 2)),
    lambda t: dg.diag_embed(t, -1),
    lambda t: dg.pad(t, (-1, 1, 2, 0), value=2.0),
    lambda t: dg.moveaxis(t.unsqueeze(0), (0, 1), (2, 0)),
    lambda t: dg.narrow(t, 1, 1, 2) * dg.diagonal(t, 1),
])
def test_reverse_mode_matches_finite_differences(fn):
    check_first_order(fn, [np.random.default_rng(3).standard_normal((2, 3))])


def test_vjp_and_jvp_agree_on_a_chain_of_shape_ops():
    """<u, J v> from forward mode equals <J^T u, v> from reverse mode."""
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))

    def fn(t):
        pieces = dg.chunk(dg.pad(t, (1, 0)), 2, 1)
        return dg.triu(dg.cat([pieces[1], pieces[0].flip(0)], 1).repeat(2, 1), -1)

    with fwAD.dual_level():
        out = fn(fwAD.make_dual(dg.tensor(x), dg.tensor(v)))
        jv = fwAD.unpack_dual(out).tangent.numpy()
    u = rng.standard_normal(jv.shape)
    np.testing.assert_allclose(np.sum(u * jv), np.sum(_grad(fn, x, u) * v), rtol=1e-12)


# -- batching rules -------------------------------------------------------------------------------
BATCH_CASES = [
    (S.RESHAPE, [(2, 3)], {"shape": (3, 2)}),
    (S.EXPAND, [(1, 3)], {"shape": (4, 2, 3)}),
    (S.PERMUTE, [(2, 3, 4)], {"axes": (2, 0, 1)}),
    (S.SQUEEZE, [(2, 1, 3)], {"axis": (1,)}),
    (S.UNSQUEEZE, [(2, 3)], {"axis": 2}),
    (S.SPLIT, [(2, 5)], {"sizes": (1, 4), "axis": 1}),
    (S.UNBIND, [(2, 3)], {"axis": 0}),
    (S.FLIP, [(2, 3)], {"axis": (0, 1)}),
    (S.ROLL, [(2, 3)], {"shift": (1, -1), "axis": (1, 0)}),
    (S.TILE, [(2, 3)], {"reps": (2, 1, 2)}),
    (S.TILE, [(2, 3)], {"reps": (2, 2)}),
    (S.REPEAT_INTERLEAVE, [(2, 3)], {"repeats": 2, "axis": 1}),
    (S.REPEAT_INTERLEAVE, [(2, 3)], {"repeats": (1, 0, 2), "axis": 1}),
    (S.DIAGONAL, [(3, 2, 4)], {"offset": 1, "axis1": 0, "axis2": 2}),
    (S.DIAG_EMBED, [(2, 3)], {"shape": (4, 2, 4), "offset": 1, "axis1": 0, "axis2": 2}),
    (S.TRIU, [(2, 3, 3)], {"k": 1}),
    (S.TRIL, [(3, 4)], {"k": -1}),
    (S.PAD, [(2, 3)], {"widths": ((1, 0), (-1, 2)), "value": 1.5}),
    (S.NARROW, [(2, 4)], {"axis": 1, "start": 1, "length": 2}),
]


@pytest.mark.parametrize("where", ["front", "middle", "last"])
@pytest.mark.parametrize(("op", "shapes", "params"), BATCH_CASES, ids=lambda c: getattr(c, "name", None))
def test_batching_rule_equals_a_loop(op, shapes, params, where):
    bdim = {"front": 0, "middle": 1, "last": len(shapes[0])}[where]
    check_batch_rule(op, shapes, [bdim], dict(params))


@pytest.mark.parametrize("bdims", [(0, None, 1), (None, 2, 0), (1, 1, None)])
def test_batching_rules_of_joins_broadcast_unbatched_inputs(bdims):
    check_batch_rule(S.CAT, [(2, 3), (2, 1), (2, 2)], bdims, {"axis": 1})
    check_batch_rule(S.STACK, [(2, 3)] * 3, bdims, {"axis": 2})


def test_vmap_of_public_shape_functions_equals_a_loop():
    x = np.random.default_rng(2).standard_normal((4, 2, 3))

    def f(t):
        a, b = dg.chunk(dg.pad(t, (1, 0)), 2, -1)
        return dg.cat([dg.flatten(a), dg.roll(b, 1).repeat(2, 1).flatten(), dg.diag(dg.triu(t[:, :2]))])

    got = dg.vmap(f)(dg.tensor(x)).numpy()
    np.testing.assert_allclose(got, np.stack([f(dg.tensor(row)).numpy() for row in x]))


# -- errors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "call"), [
    ("flip", lambda t: dg.flip(t, 2)), ("roll", lambda t: dg.roll(t, 1, -3)),
    ("unsqueeze", lambda t: dg.unsqueeze(t, 3)), ("squeeze", lambda t: dg.squeeze(t, 2)),
    ("cat", lambda t: dg.cat([t, t], 2)), ("stack", lambda t: dg.stack([t], -4)),
    ("split", lambda t: dg.split(t, 1, 2)), ("chunk", lambda t: dg.chunk(t, 1, 2)),
    ("unbind", lambda t: dg.unbind(t, 2)), ("movedim", lambda t: dg.movedim(t, 2, 0)),
    ("transpose", lambda t: dg.transpose(t, 0, 2)), ("flatten", lambda t: dg.flatten(t, 2)),
    ("diagonal", lambda t: dg.diagonal(t, 0, 0, 2)), ("narrow", lambda t: dg.narrow(t, 2, 0, 1)),
    ("repeat_interleave", lambda t: dg.repeat_interleave(t, 2, 2)),
    ("permute", lambda t: dg.permute(t, 0, 2)),
])
def test_dim_out_of_range_names_the_op_and_the_range(name, call):
    with pytest.raises(IndexError, match=rf"^{name}: Dimension out of range \(expected to be in range of \["):
        call(dg.ones(2, 3))


def test_cat_and_stack_name_both_shapes():
    with pytest.raises(RuntimeError, match=r"must match except in dimension 0.*\(2, 3\).*\(1, 2\)"):
        dg.cat([dg.ones(2, 3), dg.ones(1, 2)])
    with pytest.raises(RuntimeError, match=r"cat: Sizes of tensors must match.*\(2, 3\).*\(2, 3, 1\)"):
        dg.cat([dg.ones(2, 3), dg.ones(2, 3, 1)], 1)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\(2, 3\) at entry 0 and \(3, 2\) at entry 1"):
        dg.stack([dg.ones(2, 3), dg.ones(3, 2)])
    with pytest.raises(ValueError, match=r"cat\(\): expected a non-empty list of Tensors"):  # torch 2.13's type
        dg.cat([])
    with pytest.raises(TypeError, match="stack: expected a sequence of Tensors, got a Tensor"):
        dg.stack(dg.ones(2))
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        dg.cat([dg.tensor(1.), dg.tensor(2.)])


def test_reshape_and_view_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"reshape: shape \(4, 2\) is invalid for input of shape \(2, 3\)"):
        dg.ones(2, 3).reshape(4, 2)
    with pytest.raises(RuntimeError, match=r"reshape: shape \(-1, -1\) is invalid"):
        dg.ones(2, 3).view(-1, -1)
    with pytest.raises(RuntimeError, match=r"expand: shape \(2, 3\) cannot be expanded to \(2, 4\)"):
        dg.ones(2, 3).expand(2, 4)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda t: dg.split(t, [1, 2]), RuntimeError, r"split_sizes to sum exactly to 2 .*split_sizes=\[1, 2\]"),
    (lambda t: dg.split(t, 0), RuntimeError, "split_size must be positive"),
    (lambda t: dg.chunk(t, 0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda t: t.repeat(2), RuntimeError, r"repeat dims can not be smaller .*\(2, 3\)"),
    (lambda t: dg.tile(t, (-1, 2)), RuntimeError, "negative dimension"),
    (lambda t: dg.repeat_interleave(t, [1, 2], 1), RuntimeError,
     r"repeats.size\(0\) = 2 and input.size\(1\) = 3"),
    (lambda t: dg.repeat_interleave(t, -1), RuntimeError, "repeats can not be negative"),
    (lambda t: dg.repeat_interleave(t, 1.5), TypeError, "repeats must be an int"),
    (lambda t: dg.pad(t, (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda t: dg.pad(t, (1,) * 6), RuntimeError, "padding length 6 and input of dimension 2"),
    (lambda t: dg.pad(t, (-2, -2)), RuntimeError, r"size 3, plus negative padding -2 and -2 .*dimension 1"),
    (lambda t: dg.pad(t, (1, 1), mode="reflect"), NotImplementedError, "only mode='constant'"),
    (lambda t: dg.narrow(t, 1, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\) exceeds dimension size"),
    (lambda t: dg.narrow(t, 1, 4, 0), IndexError, r"narrow: start \(4\) out of range"),
    (lambda t: dg.diagonal(t, 0, 1, -1), RuntimeError, "diagonal dimensions cannot be identical 1, -1"),
    (lambda t: dg.triu(t[0]), RuntimeError, r"triu: input tensor must have at least 2 dimensions, got \(3,"),
    (lambda t: dg.diag(t.unsqueeze(0)), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
    (lambda t: dg.movedim(t, (0, 1), 0), RuntimeError, "movedim: Invalid source or destination dims"),
    (lambda t: dg.movedim(t, (0, 0), (0, 1)), RuntimeError, "movedim: repeated dim"),
    (lambda t: dg.roll(t, (1, 2), 0), RuntimeError, "shifts and dimensions must align. shifts: 2, dims: 1"),
    (lambda t: dg.flatten(t, 1, 0), RuntimeError, r"flatten: start_dim \(1\) cannot come after end_dim"),
    (lambda t: dg.permute(t, 0, 0), RuntimeError, r"permute: \(0, 0\) is not a permutation"),
])
def test_bad_arguments_raise_torchs_errors(call, error, words):
    with pytest.raises(error, match=words):
        call(dg.ones(2, 3))


def test_tensor_split_pieces_are_views_and_batch():
    x = dg.arange(7.0)
    first, empty, last = dg.tensor_split(x, [3, 1])
    last.mul_(10.0)  # the pieces overlap x[1:3], as torch's (indices out of order)
    assert x.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0] and first.tolist() == [0.0, 10.0, 20.0]
    assert empty.shape == (0,)
    batched = dg.vmap(lambda t: dg.tensor_split(t, 2, dim=0)[1])(dg.arange(10.0).reshape(2, 5))
    assert batched.tolist() == [[3.0, 4.0], [8.0, 9.0]]
