"""Forward-mode AD: the dual-level API, its errors, nesting, and composition with reverse mode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.base.state import STATE
from dualgrad.forward_ad.engine import commit_tangents


def f(x):
    """A smooth test function R^n -> R with a dense Hessian."""
    return (dg.sin(x) * dg.exp(x.sum() * 0.3)).sum()


def grad_numpy(x):
    """The gradient of ``f``, by hand: exp(0.3 s) (cos x + 0.3 sum(sin x))."""
    return np.exp(0.3 * x.sum()) * (np.cos(x) + 0.3 * np.sin(x).sum())


def hvp_fd(x, v, eps=1e-5):
    return (grad_numpy(x + eps * v) - grad_numpy(x - eps * v)) / (2 * eps)


X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    assert STATE.dual_levels == (), "a test left a dual level open"


# -- the API ------------------------------------------------------------------------------
def test_hand_written_gradient_matches_finite_differences():
    eps = 1e-6
    value = lambda x: float(np.sum(np.sin(x) * np.exp(x.sum() * 0.3)))  # noqa: E731
    fd = [(value(X + eps * e) - value(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(grad_numpy(X), fd, rtol=1e-7)


def test_make_dual_and_unpack_dual():
    x, v = dg.tensor(X), dg.tensor(V)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, v)
        out = fwAD.unpack_dual(dg.sin(dual))
        primal, tangent = out
        assert out.primal is primal and out.tangent is tangent
        np.testing.assert_allclose(primal.numpy(), np.sin(X))
        np.testing.assert_allclose(tangent.numpy(), np.cos(X) * V)
        assert fwAD.unpack_dual(dual).tangent is v
    assert fwAD.unpack_dual(out.primal).tangent is None


def test_outside_a_level_unpack_returns_the_tensor():
    x = dg.tensor(X)
    assert fwAD.unpack_dual(x) == (x, None)
    assert fwAD.unpack_dual([1.0]) == ([1.0], None)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x, level=-1) == (x, None)


def test_inside_a_level_unpack_of_a_plain_tensor_gives_a_view():
    x = dg.tensor(X)
    with fwAD.dual_level():
        primal, tangent = fwAD.unpack_dual(x)
        assert tangent is None and primal is not x
        assert np.shares_memory(primal.numpy(), x.numpy())


def test_unpacked_dual_tensor_is_a_named_tuple():
    with fwAD.dual_level():
        out = fwAD.unpack_dual(fwAD.make_dual(dg.tensor([1.0]), dg.tensor([2.0])))
    assert fwAD.UnpackedDualTensor._fields == ("primal", "tangent")
    assert repr(out) == "UnpackedDualTensor(primal=tensor([1.]), tangent=tensor([2.]))"


# -- levels are ints, as torch's ------------------------------------------------------------
def test_levels_are_numbered_by_depth():
    level = fwAD.enter_dual_level()
    try:
        assert type(level) is int and level == 0
        with fwAD.dual_level() as inner:
            assert inner == 1
    finally:
        fwAD.exit_dual_level(level=0)
    with fwAD.dual_level() as level:
        assert level == 0


def test_level_numbers_address_levels():
    with fwAD.dual_level() as outer, fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor(V), level=0)
        assert fwAD.unpack_dual(dual, level=outer).tangent.tolist() == V.tolist()
        assert fwAD.unpack_dual(dual).tangent is None
        assert fwAD.unpack_dual(dual, level=5).tangent is None  # a level that does not exist


def test_dual_level_is_a_decorator():
    @fwAD.dual_level()
    def tangent_of_cube(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v) ** 3).tangent

    assert tangent_of_cube(dg.tensor(2.0), dg.tensor(1.0)).item() == 12.0
    assert tangent_of_cube(dg.tensor(1.0), dg.tensor(1.0)).item() == 3.0


def test_dual_level_decorates_a_generator_function_level_open_only_while_it_runs():
    @fwAD.dual_level()
    def tangents(v):
        for scale in (2.0, 3.0):
            assert len(STATE.dual_levels) == 1
            yield fwAD.unpack_dual(fwAD.make_dual(dg.tensor(1.0), v) * scale).tangent

    gen = tangents(dg.tensor(1.0))
    assert next(gen).item() == 2.0
    assert STATE.dual_levels == ()  # the caller's code between two resumptions is outside the level
    assert [t.item() for t in gen] == [3.0]


def test_an_error_in_a_dual_level_block_exits_the_level():
    with pytest.raises(KeyError), fwAD.dual_level():
        raise KeyError("x")


def test_tangents_are_gone_after_the_level_exits():
    with fwAD.dual_level():
        y = dg.exp(fwAD.make_dual(dg.tensor(X), dg.tensor(V)))
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(y * 2).tangent is None


def test_primal_is_a_view_sharing_memory():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
        y = dual * 2
        primal = fwAD.unpack_dual(y).primal
        assert np.shares_memory(primal.numpy(), y.numpy())
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(primal * 3).tangent is None


def test_make_dual_is_a_view_of_its_input():
    x = dg.tensor(X)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, dg.tensor(V))
        assert np.shares_memory(dual.numpy(), x.numpy())


def test_tangent_keeps_its_dtype_and_ops_give_the_output_dtype():
    # torch: make_dual stores the tangent as it is; an op's tangent has the op's output dtype here
    with fwAD.dual_level():
        tangent32 = dg.tensor(V, dtype="float32")
        dual = fwAD.make_dual(dg.tensor(X), tangent32)
        assert fwAD.unpack_dual(dual).tangent is tangent32
        assert fwAD.unpack_dual(dg.sin(dual)).tangent.dtype == np.float64
        dual32 = fwAD.make_dual(dg.tensor(X, dtype="float32"), dg.tensor(V))
        assert fwAD.unpack_dual(dual32).tangent.dtype == np.float64
        assert fwAD.unpack_dual(dg.sin(dual32)).tangent.dtype == np.float32


def test_complex_primal_takes_real_or_complex_tangents():
    z = dg.tensor(X + 1j * V)
    with fwAD.dual_level():
        dual = fwAD.make_dual(z, dg.tensor(V))
        assert fwAD.unpack_dual(dual).tangent.dtype == np.float64
        assert fwAD.unpack_dual(dual * 2).tangent.dtype == np.complex128
        out = fwAD.unpack_dual(dg.exp(fwAD.make_dual(z, dg.tensor(V * 1j)))).tangent
        np.testing.assert_allclose(out.numpy(), np.exp(X + 1j * V) * V * 1j)


def test_inputs_without_tangent_count_as_zero_and_cost_nothing():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
        plain = dg.tensor(V)
        assert (plain * 3)._fw is None
        out = fwAD.unpack_dual(dual * plain + plain).tangent
        np.testing.assert_allclose(out.numpy(), V * V)


def test_broadcast_tangent_takes_the_output_shape():
    with fwAD.dual_level():
        scalar = fwAD.make_dual(dg.tensor(2.0), dg.tensor(1.0))
        tangent = fwAD.unpack_dual(scalar + dg.tensor(X)).tangent
        np.testing.assert_allclose(tangent.numpy(), np.ones(3))


def test_repr_shows_the_tangent():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor([1.0]), dg.tensor([2.0]))
        assert repr(dual) == "tensor([1.], tangent=tensor([2.]))"
    assert repr(dual) == "tensor([1.])"


@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements=st.floats(-3, 3)),
       scale=st.floats(-2, 2))
def test_jvp_is_linear_in_the_tangent(x, scale):
    v = np.cos(np.arange(x.size, dtype=np.float64)).reshape(x.shape)
    with fwAD.dual_level():
        a = fwAD.unpack_dual(dg.tanh(fwAD.make_dual(dg.tensor(x), dg.tensor(v)))).tangent
        b = fwAD.unpack_dual(dg.tanh(fwAD.make_dual(dg.tensor(x), dg.tensor(scale * v)))).tangent
    np.testing.assert_allclose(b.numpy(), scale * a.numpy(), atol=1e-12)
    np.testing.assert_allclose(a.numpy(), (1 - np.tanh(x) ** 2) * v, atol=1e-12)


# -- errors -------------------------------------------------------------------------------
def test_make_dual_without_a_level():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(dg.tensor(X), dg.tensor(V))
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(dg.tensor(X), dg.tensor(V), level=-1)


@pytest.mark.parametrize("opened", [0, 1])
def test_make_dual_at_a_level_that_does_not_exist(opened):
    levels = [fwAD.enter_dual_level() for _ in range(opened)]
    try:
        with pytest.raises(RuntimeError, match="invalid index.*not created or is already deleted"):
            fwAD.make_dual(dg.tensor(X), dg.tensor(V), level=opened)
    finally:
        for level in reversed(levels):
            fwAD.exit_dual_level(level=level)


@pytest.mark.parametrize("level", [0.0, True, "0"])
@pytest.mark.parametrize("call", [
    lambda level: fwAD.make_dual(dg.tensor(X), dg.tensor(V), level=level),
    lambda level: fwAD.unpack_dual(dg.tensor(X), level=level),
    lambda level: fwAD.exit_dual_level(level=level),
])
def test_a_level_must_be_an_int(call, level):
    with fwAD.dual_level(), pytest.raises(TypeError, match="argument 'level' must be int, not"):
        call(level)


@pytest.mark.parametrize("call", [
    lambda: fwAD.make_dual(dg.tensor(X), dg.tensor(V), 0),
    lambda: fwAD.unpack_dual(dg.tensor(X), 0),
    lambda: fwAD.exit_dual_level(0),
])
def test_the_level_is_keyword_only(call):
    with fwAD.dual_level(), pytest.raises(TypeError, match="positional argument"):
        call()


def test_unpack_dual_of_a_non_tensor_inside_a_level():
    with fwAD.dual_level(), pytest.raises(TypeError, match="must be Tensor, not list"):
        fwAD.unpack_dual([1.0])


def test_tangent_shape_mismatch_names_both_shapes():
    with fwAD.dual_level(), pytest.raises(RuntimeError, match=r"different size.*\[3\].*\[2\]"):
        fwAD.make_dual(dg.tensor(X), dg.tensor([1.0, 2.0]))


@pytest.mark.parametrize("which", ["primal", "tangent"])
def test_non_floating_primal_or_tangent(which):
    ints = dg.tensor([1, 2, 3])
    args = (ints, dg.tensor(V)) if which == "primal" else (dg.tensor(X), ints)
    with fwAD.dual_level(), pytest.raises(ValueError, match=f"Expected {which} to be floating point"):
        fwAD.make_dual(*args)


def test_complex_tangent_for_real_primal():
    with fwAD.dual_level(), pytest.raises(ValueError, match="tangent is complex.*primal is real"):
        fwAD.make_dual(dg.tensor(X), dg.tensor(V * 1j))


def test_make_dual_of_a_dual_at_the_same_level():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level"):
            fwAD.make_dual(dual * 2, dg.tensor(V))
        with pytest.raises(RuntimeError, match="Setting a forward grad that itself has a forward gradient"):
            fwAD.make_dual(dg.tensor(X), dual)


def test_exiting_a_level_that_is_not_the_innermost():
    outer = fwAD.enter_dual_level()
    inner = fwAD.enter_dual_level()
    try:
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fwAD.exit_dual_level(level=outer)
        assert (outer, inner) == (0, 1) and len(STATE.dual_levels) == 2
    finally:
        fwAD.exit_dual_level(level=inner)
        fwAD.exit_dual_level(level=outer)


def test_exiting_with_no_level():
    with pytest.raises(RuntimeError, match="Dual level must be a positive number.*no forward AD level"):
        fwAD.exit_dual_level()
    with pytest.raises(RuntimeError, match="not the last one that was created"):
        fwAD.exit_dual_level(level=0)


def test_a_level_number_after_its_level_exited():
    # as torch: the number names no level until a new level takes it, with none of the old tangents
    with fwAD.dual_level() as level:
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
    assert fwAD.unpack_dual(dual, level=level).tangent is None
    with pytest.raises(RuntimeError, match="not the last one that was created"):
        fwAD.exit_dual_level(level=level)
    with fwAD.dual_level() as new:
        assert new == level
        assert fwAD.unpack_dual(dual, level=level).tangent is None
        again = fwAD.make_dual(dual, dg.tensor(X), level=level)
        assert fwAD.unpack_dual(again, level=level).tangent.tolist() == X.tolist()


# -- nested levels --------------------------------------------------------------------------
def test_nested_levels_give_the_second_directional_derivative():
    u = np.array([0.2, -1.0, 0.4])
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        x = fwAD.make_dual(fwAD.make_dual(dg.tensor(X), dg.tensor(u), level=outer), dg.tensor(V), level=inner)
        y = f(x)
        first = fwAD.unpack_dual(y, level=inner).tangent
        second = fwAD.unpack_dual(first, level=outer).tangent
        assert fwAD.unpack_dual(y, level=outer).tangent is not None
    np.testing.assert_allclose(first.item(), grad_numpy(X) @ V, rtol=1e-6)
    np.testing.assert_allclose(second.item(), hvp_fd(X, V) @ u, rtol=1e-5)


def test_a_function_can_use_forward_mode_inside_a_caller_level():
    def directional(x, v):
        with fwAD.dual_level():
            return fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent

    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
        d = directional(x, dg.tensor(V))
        np.testing.assert_allclose(d.item(), grad_numpy(X) @ V, rtol=1e-6)
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.item(), hvp_fd(X, V) @ V, rtol=1e-5)
        assert fwAD.unpack_dual(x).tangent.numpy().tolist() == V.tolist()


# -- composition with reverse mode ------------------------------------------------------------
def test_dual_of_a_tensor_requiring_grad_stays_in_the_graph():
    x = dg.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        y = f(fwAD.make_dual(x, dg.tensor(V)))
        (g,) = dg.grad(y, x)
    np.testing.assert_allclose(g.detach().numpy(), grad_numpy(X), rtol=1e-6)


def test_reverse_over_forward():
    x = dg.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, dg.tensor(V)))).tangent
        assert tangent.requires_grad
        (hv,) = dg.grad(tangent, x)
    np.testing.assert_allclose(hv.detach().numpy(), hvp_fd(X, V), rtol=1e-5)


def test_forward_over_reverse_gives_hessian_vector_product():
    x = dg.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        (g,) = dg.grad(f(fwAD.make_dual(x, dg.tensor(V))), x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(g.detach().numpy(), grad_numpy(X), rtol=1e-6)
    np.testing.assert_allclose(hv.detach().numpy(), hvp_fd(X, V), rtol=1e-5)


# -- in-place ops and views ----------------------------------------------------------------------
def test_inplace_op_on_a_dual_updates_its_tangent_in_place():
    v = dg.tensor(V)
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), v)
        dual.mul_(dg.tensor(X))
        np.testing.assert_allclose(fwAD.unpack_dual(dual).tangent.numpy(), X * V)
        assert fwAD.unpack_dual(dual).tangent is v


def test_tangent_of_a_view_is_the_view_of_the_base_tangent():
    with fwAD.dual_level():
        base = fwAD.make_dual(dg.tensor(np.arange(6.0).reshape(2, 3)), dg.ones(2, 3))
        column = base[:, 1]
        base.mul_(3.0)
        np.testing.assert_allclose(fwAD.unpack_dual(column).tangent.numpy(), [3.0, 3.0])


def test_writing_a_dual_into_a_slice_gives_the_base_a_tangent_zero_elsewhere():
    with fwAD.dual_level():
        base = dg.zeros(2, 3)
        column = base[:, 0]
        base[1] = fwAD.make_dual(dg.ones(3), dg.tensor([1.0, 2.0, 3.0]))
        np.testing.assert_allclose(fwAD.unpack_dual(base).tangent.numpy(), [[0, 0, 0], [1, 2, 3]])
        np.testing.assert_allclose(fwAD.unpack_dual(column).tangent.numpy(), [0.0, 1.0])


def test_commit_tangents_overwrites_with_zeros_when_the_new_value_has_no_tangent():
    v = dg.tensor(V)
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), v)
        commit_tangents(dual, dg.tensor(V))
        assert v.numpy().tolist() == [0.0, 0.0, 0.0]


def test_commit_tangents_keeps_tangents_of_tangents():
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        x = fwAD.make_dual(fwAD.make_dual(dg.tensor([2.0]), dg.ones(1), level=outer), dg.ones(1), level=inner)
        target = fwAD.make_dual(dg.tensor([5.0]), dg.zeros(1), level=inner)
        commit_tangents(target, x * x)
        tangent = fwAD.unpack_dual(target, level=inner).tangent
        assert tangent.item() == 4.0
        assert fwAD.unpack_dual(tangent, level=outer).tangent.item() == 2.0
