"""In-place operations: values, gradients (first and second order) against their
out-of-place equivalents and central differences; version counters; errors;
``__setitem__`` over index expressions; ``allow_mutation_on_saved_tensors``."""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.reverse.mutation import allow_mutation_on_saved_tensors

RNG = np.random.default_rng(1)
MASK = np.array([[True, False, True], [False, False, True]])


def _away_from_zero(a: np.ndarray) -> np.ndarray:
    return np.where(np.abs(a) < 0.3, 0.3 * np.sign(a) + 0.3 * (a == 0), a)


# name -> (in-place call, out-of-place equivalent, arrays: x then the others)
CASES = {
    "add_": (lambda t, o: t.add_(o), lambda t, o: t + o, "any", "row"),
    "add_alpha": (lambda t, o: t.add_(o, alpha=2.5), lambda t, o: t + 2.5 * o, "any", "row"),
    "sub_": (lambda t, o: t.sub_(o), lambda t, o: t - o, "any", "same"),
    "sub_alpha": (lambda t, o: t.sub_(o, alpha=-2.0), lambda t, o: t + 2.0 * o, "any", "same"),
    "mul_": (lambda t, o: t.mul_(o), lambda t, o: t * o, "any", "row"),
    "div_": (lambda t, o: t.div_(o), lambda t, o: t / o, "any", "nonzero"),
    "pow_": (lambda t, o: t.pow_(o), lambda t, o: t ** o, "positive", "same"),
    "pow_scalar": (lambda t: t.pow_(3), lambda t: t ** 3, "any"),
    "neg_": (lambda t: t.neg_(), lambda t: -t, "any"),
    "exp_": (lambda t: t.exp_(), dg.exp, "any"),
    "log_": (lambda t: t.log_(), dg.log, "positive"),
    "sin_": (lambda t: t.sin_(), dg.sin, "any"),
    "cos_": (lambda t: t.cos_(), dg.cos, "any"),
    "tanh_": (lambda t: t.tanh_(), dg.tanh, "any"),
    "sigmoid_": (lambda t: t.sigmoid_(), dg.sigmoid, "any"),
    "sqrt_": (lambda t: t.sqrt_(), dg.sqrt, "positive"),
    "abs_": (lambda t: t.abs_(), dg.abs, "nonzero"),
    "clamp_": (lambda t: t.clamp_(-0.5, 0.5), lambda t: dg.clamp(t, -0.5, 0.5), "off_bounds"),
    "zero_": (lambda t: t.zero_(), lambda t: t * 0.0, "any"),
    "fill_": (lambda t, o: t.fill_(o), lambda t, o: t * 0.0 + o, "any", "scalar"),
    "copy_": (lambda t, o: t.copy_(o), lambda t, o: t * 0.0 + o, "any", "row"),
    "masked_fill_": (lambda t, o: t.masked_fill_(dg.tensor(MASK), o),
                     lambda t, o: dg.where(dg.tensor(MASK), o, t), "any", "scalar"),
    "iadd": (lambda t, o: t.__iadd__(o), lambda t, o: t + o, "any", "row"),
    "isub": (lambda t, o: t.__isub__(o), lambda t, o: t - o, "any", "row"),
    "imul": (lambda t, o: t.__imul__(o), lambda t, o: t * o, "any", "same"),
    "itruediv": (lambda t, o: t.__itruediv__(o), lambda t, o: t / o, "any", "nonzero"),
    "ipow": (lambda t, o: t.__ipow__(o), lambda t, o: t ** o, "positive", "same"),
    "reciprocal_": (lambda t: t.reciprocal_(), dg.reciprocal, "nonzero"),
    "atan_": (lambda t: t.atan_(), dg.atan, "any"),
    "atan2_": (lambda t, o: t.atan2_(o), dg.atan2, "any", "nonzero"),
    "hypot_": (lambda t, o: t.hypot_(o), dg.hypot, "nonzero", "row"),
    "cumsum_": (lambda t: t.cumsum_(1), lambda t: t.cumsum(1), "any"),
    "index_add_": (lambda t, o: t.index_add_(1, dg.tensor([2, 0, 2]), o, alpha=2),
                   lambda t, o: dg.index_add(t, 1, dg.tensor([2, 0, 2]), o, alpha=2), "any", "any"),
    "index_copy_": (lambda t, o: t.index_copy_(1, dg.tensor([2, 0, 1]), o),
                    lambda t, o: dg.index_copy(t, 1, dg.tensor([2, 0, 1]), o), "any", "any"),
    "index_fill_": (lambda t, o: t.index_fill_(1, dg.tensor([0, -1]), o),
                    lambda t, o: dg.index_fill(t, 1, dg.tensor([0, -1]), o), "any", "scalar"),
    "masked_scatter_": (lambda t, o: t.masked_scatter_(dg.tensor(MASK), o),
                        lambda t, o: dg.masked_scatter(t, dg.tensor(MASK), o), "any", "any"),
    "put_": (lambda t, o: t.put_(dg.tensor([5, 0, -1]), o, accumulate=True),
             lambda t, o: dg.put(t, dg.tensor([5, 0, -1]), o, accumulate=True), "any", "row"),
    "index_put_": (lambda t, o: t.index_put_((dg.tensor([1, 0, 1]), dg.tensor([2, 2, 0])), o),
                   lambda t, o: dg.index_put(t, (dg.tensor([1, 0, 1]), dg.tensor([2, 2, 0])), o), "any", "row"),
}


def _array(kind: str) -> np.ndarray:
    base = RNG.standard_normal((2, 3))
    if kind == "positive":
        return np.abs(base) + 0.5
    if kind == "nonzero":
        return _away_from_zero(base)
    if kind == "off_bounds":
        return np.where(np.abs(np.abs(base) - 0.5) < 0.1, base + 0.25, base)
    if kind == "row":
        return base[0]
    if kind == "scalar":
        return np.array(0.7)
    return base


def _case(name: str) -> tuple:
    inplace, outplace, *kinds = CASES[name]
    arrays = [_array(kinds[0])] + [_array(k if k != "same" else "any") for k in kinds[1:]]

    def inplace_call(x, *others):
        t = x * 1.0
        result = inplace(t, *others)
        assert result is t
        return t

    return inplace_call, outplace, arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_out_of_place(name):
    inplace_call, outplace, arrays = _case(name)
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    ys = [dg.tensor(a, requires_grad=True) for a in arrays]
    got, want = inplace_call(*xs), outplace(*ys)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    u = dg.tensor(RNG.standard_normal(got.shape))
    got_grads = dg.grad(got, xs, u, materialize_grads=True)
    want_grads = dg.grad(want, ys, u, materialize_grads=True)
    for g, w in zip(got_grads, want_grads, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    inplace_call, _, arrays = _case(name)
    check_first_order(inplace_call, arrays)
    check_second_order(inplace_call, arrays)


@pytest.mark.parametrize("name", ["exp_", "sin_", "mul_", "pow_scalar", "sqrt_", "abs_"])
def test_grad_fn_becomes_the_inplace_ops_node(name):
    inplace_call, outplace, arrays = _case(name)
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    assert inplace_call(*xs).grad_fn.name() == outplace(*xs).grad_fn.name()


def test_chained_inplace_ops_match_composition():
    a = np.abs(RNG.standard_normal(4)) + 0.5

    def chained(x):
        t = x * 1.0
        t.exp_()
        t.mul_(x)
        t.sin_()
        t += x
        return t

    x = dg.tensor(a, requires_grad=True)
    want = dg.sin(dg.exp(x) * x) + x
    np.testing.assert_allclose(chained(x).detach().numpy(), want.detach().numpy())
    check_first_order(chained, [a])
    check_second_order(chained, [a])


def test_gradient_flows_to_the_other_operand_of_an_inplace_op_on_a_constant():
    w = dg.tensor([1., 2.], requires_grad=True)
    t = dg.ones(2)
    t.mul_(w)
    t.add_(w * w)
    assert t.grad_fn is not None and t.requires_grad
    t.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3., 5.])


def test_inplace_without_grad_keeps_the_graph_out():
    x = dg.tensor([1., 2.], requires_grad=True)
    with dg.no_grad():
        x.mul_(2)
    assert x.is_leaf and x._version == 1
    np.testing.assert_allclose(x.detach().numpy(), [2., 4.])


def test_matmul_augmented_assignment_is_not_in_place():
    a = dg.ones(2, 2)
    alias = a
    a @= dg.eye(2) * 2
    assert a is not alias
    np.testing.assert_allclose(alias.numpy(), np.ones((2, 2)))
    np.testing.assert_allclose(a.numpy(), 2 * np.ones((2, 2)))


def test_inplace_keeps_dtype_and_casts_same_kind():
    t = dg.zeros(2, dtype="float32")
    t.add_(dg.tensor([1., 2.]))
    assert t.dtype == np.float32
    i = dg.zeros(2, dtype="int64")
    i.add_(3)
    assert i.dtype == np.int64 and i.tolist() == [3, 3]


def test_version_counter_counts_inplace_ops():
    t = dg.zeros(3)
    assert t._version == 0
    t.add_(1)
    t[0] = 5.
    t += 1
    assert t._version == 3


# -- errors --------------------------------------------------------------------------------
def test_inplace_on_leaf_that_requires_grad_raises():
    x = dg.tensor([1., 2.], requires_grad=True)
    for action in (lambda: x.add_(1), lambda: x.__iadd__(1), lambda: x.zero_()):
        with pytest.raises(RuntimeError, match=(
                "a leaf Variable that requires grad is being used in an in-place "
                "operation")):
            action()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place"):
        x[0] = 3.
    np.testing.assert_allclose(x.detach().numpy(), [1., 2.])
    assert x._version == 0


def test_inplace_on_view_of_leaf_raises():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[1:].mul_(2)
    np.testing.assert_allclose(x.detach().numpy(), [1., 2., 3.])


def test_inplace_with_grad_on_view_made_under_no_grad_raises():
    x = dg.tensor([1., 2., 3.], requires_grad=True) * 1.0
    with dg.no_grad():
        v = x[1:]
    with pytest.raises(RuntimeError, match=(
            "A view was created in no_grad mode and is being modified inplace")):
        v.mul_(2)


def test_result_dtype_that_cannot_be_cast_raises():
    i = dg.zeros(3, dtype="int64")
    with pytest.raises(RuntimeError, match=(
            r"add_: result type Double can't be cast to the desired output "
            r"type Long")):
        i.add_(1.5)
    assert i.tolist() == [0, 0, 0] and i._version == 0


def test_result_that_does_not_fit_the_shape_raises():
    t = dg.zeros(3)
    with pytest.raises(RuntimeError, match=(
            r"mul_: output with shape \[3\] doesn't match the broadcast shape "
            r"\[2, 3\]")):
        t.mul_(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(2\)"):
        t.copy_(dg.ones(2))
    with pytest.raises(RuntimeError, match=r"copy_: output with shape \[3\] doesn't match the broadcast shape \[1, 3"):
        t.copy_(dg.ones(1, 3))
    assert t._version == 0


def test_inplace_on_expanded_tensor_raises():
    e = dg.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match=(
            "more than one element of the written-to tensor refers to a single "
            "memory location")):
        e.add_(1)


def test_inplace_on_a_batched_tensor_inside_vmap_updates_it():
    # the full in-place-under-vmap behaviour is tested in tests/vmap/test_inplace_vmap.py
    x = dg.ones(2, 3)
    dg.vmap(lambda row: row.add_(1))(x)
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 2.0))


def _needed_by_mul(x):
    return x * x


def test_modified_saved_tensor_raises_directly():
    a = dg.tensor([1., 2., 3.], requires_grad=True) * 1.0
    b = _needed_by_mul(a)
    a.add_(1)
    with pytest.raises(RuntimeError, match=(
            r"one of the variables needed for gradient computation has been "
            r"modified by an inplace operation: \[float64 \(3,\)\], needed "
            r"by MulBackward0, is at version 1; expected version 0")):
        b.sum().backward()


def test_modified_saved_tensor_raises_via_a_view():
    a = dg.tensor([1., 2., 3.], requires_grad=True) * 1.0
    b = _needed_by_mul(a)
    a[1:].mul_(2)
    with pytest.raises(RuntimeError, match=(
            r"modified by an inplace operation: .*\(3,\).*MulBackward0, is "
            r"at version 1; expected version 0")):
        b.sum().backward()


def test_modified_saved_view_raises_via_its_base():
    a = dg.tensor([1., 2., 3.], requires_grad=True) * 1.0
    v = a[:2]
    b = _needed_by_mul(v)
    a.add_(1)
    with pytest.raises(RuntimeError, match=(
            r"modified by an inplace operation: .*\(2,\).*MulBackward0, is "
            r"at version 1; expected version 0")):
        b.sum().backward()


def test_failed_backward_after_mutation_leaves_grads_unchanged():
    x = dg.tensor([1., 2.], requires_grad=True)
    a = x * 1.0
    b = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
    assert x.grad is None


# -- __setitem__ ------------------------------------------------------------------------------
SHAPE = (4, 3)


@st.composite
def basic_index(draw):
    """An index of ints, slices (with steps), None and Ellipsis for a (4, 3) tensor."""
    parts = []
    for n in SHAPE:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n, n - 1))
            step = draw(st.sampled_from([None, 1, 2, -1]))
            parts.append(slice(start, None, step))
        else:
            parts.append(slice(None))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if draw(st.booleans()) and parts and isinstance(parts[-1], slice) and parts[-1] == slice(None):
        parts[-1] = Ellipsis
    return tuple(parts)


@st.composite
def advanced_index(draw):
    """Unique integer arrays, a boolean mask, or an integer array mixed with a slice."""
    kind = draw(st.sampled_from(["rows", "mask", "mixed", "pairs"]))
    if kind == "rows":
        return (np.array(draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True))),)
    if kind == "mask":
        flags = draw(st.lists(st.booleans(), min_size=12, max_size=12))
        return (np.array(flags).reshape(SHAPE),)
    if kind == "mixed":
        columns = draw(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
        return (slice(1, None), np.array(columns))
    cells = st.tuples(st.integers(0, 3), st.integers(0, 2))
    pairs = draw(st.lists(cells, min_size=1, max_size=5, unique=True))
    return (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


def _setitem_check(index, value_shape_from_region: bool):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(SHAPE)
    region = x0[index]
    v0 = rng.standard_normal(region.shape[1:] if value_shape_from_region and region.ndim else region.shape)
    c = rng.standard_normal(SHAPE)
    x = dg.tensor(x0, requires_grad=True)
    v = dg.tensor(v0, requires_grad=True)
    t = x * 1.0
    t[index] = v
    expected = x0.copy()
    expected[index] = v0
    np.testing.assert_allclose(t.detach().numpy(), expected)
    (t * dg.tensor(c)).sum().backward()
    grad_x = c.copy()
    grad_x[index] = 0.0
    grad_v = np.broadcast_to(c[index], region.shape).reshape((-1,) + v0.shape).sum(axis=0) \
        if v0.shape != region.shape else c[index]
    np.testing.assert_allclose(x.grad.numpy(), grad_x)
    np.testing.assert_allclose(v.grad.numpy(), grad_v)


@given(basic_index(), st.booleans())
def test_setitem_basic_index_values_and_gradients(index, broadcast):
    _setitem_check(index, broadcast)


@given(advanced_index(), st.booleans())
def test_setitem_advanced_index_values_and_gradients(index, broadcast):
    _setitem_check(index, broadcast)


@given(basic_index() | advanced_index())
def test_getitem_gradient_is_the_scatter_of_the_cotangent(index):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(SHAPE)
    u = rng.standard_normal(x0[index].shape)
    x = dg.tensor(x0, requires_grad=True)
    (x[index] * dg.tensor(u)).sum().backward()
    expected = np.zeros(SHAPE)
    np.add.at(expected, index, u)
    np.testing.assert_allclose(x.grad.numpy(), expected)


@pytest.mark.parametrize("index", [(1,), (slice(None), 2), (np.array([0, 2]),),
                                   (np.array([[True, False, True]] * 4),)])
def test_setitem_second_order(index):
    def call(x, v):
        t = x * x
        t[index] = v * v
        return t * x

    x0 = RNG.standard_normal(SHAPE)
    v0 = RNG.standard_normal(x0[index].shape)
    check_first_order(call, [x0, v0])
    check_second_order(call, [x0, v0])


def test_setitem_with_scalar_and_tensor_index_and_grad_fn_names():
    t = dg.tensor([1., 2., 3.], requires_grad=True) * 1.0
    t[0] = 7.
    assert t.grad_fn.name() == "torch::autograd::CopySlices"
    t[dg.tensor([1, 2])] = 0.
    assert t.grad_fn.name() == "IndexPutBackward0"
    t[dg.tensor([True, False, False])] = 1.
    np.testing.assert_allclose(t.detach().numpy(), [1., 0., 0.])


def test_setitem_of_a_tensor_that_requires_grad_into_a_constant():
    w = dg.tensor(2., requires_grad=True)
    z = dg.zeros(3)
    z[1] = w * 3
    assert z.requires_grad and z.grad_fn.name() == "torch::autograd::CopySlices"
    (z * dg.tensor([1., 5., 7.])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 15.)


# -- allow_mutation_on_saved_tensors -----------------------------------------------------------
def test_allow_mutation_on_saved_tensors_reference_example():
    with allow_mutation_on_saved_tensors():
        a = dg.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        shown = b.sin_()
        out.sum().backward()
    assert repr(shown) == ("tensor([[0.8415, 0.8415, 0.8415],\n"
                           "        [0.8415, 0.8415, 0.8415]], grad_fn=<SinBackward0>)")
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.ones((2, 3)))


def test_allow_mutation_clones_for_mutations_through_views():
    with allow_mutation_on_saved_tensors():
        x = dg.tensor([1., 2., 3.], requires_grad=True)
        a = x * 1.0
        b = a * a
        a[1:].mul_(10)
        b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2., 4., 6.])


def test_allow_mutation_backward_outside_the_context_raises():
    with allow_mutation_on_saved_tensors():
        a = dg.tensor([1., 2.], requires_grad=True) * 1.0
        b = a * a
    with pytest.raises(RuntimeError, match="outside of the 'allow_mutation_on_saved_tensors' context"):
        b.sum().backward()


def test_allow_mutation_contexts_cannot_nest():
    with allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass


# -- forward mode ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_mode_tangents_match_finite_differences(name):
    inplace_call, _, arrays = _case(name)
    directions = [RNG.standard_normal(np.shape(a)) for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(d)) for a, d in zip(arrays, directions, strict=True)]
        tangent = fwAD.unpack_dual(inplace_call(*duals)).tangent.numpy()
    eps = 1e-6

    def at(sign):
        return inplace_call(*[dg.tensor(a + sign * eps * d) for a, d in zip(arrays, directions, strict=True)])

    np.testing.assert_allclose(tangent, (at(1).numpy() - at(-1).numpy()) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_dual_overwritten_by_a_value_without_tangent_gets_zero_tangent(requires_grad):
    leaf = dg.tensor([1.0, 2.0, 3.0], requires_grad=requires_grad)
    with fwAD.dual_level():
        x = fwAD.make_dual(leaf * 1.0, dg.tensor([1.0, 2.0, 3.0]))
        x[1] = 7.0
        np.testing.assert_array_equal(fwAD.unpack_dual(x).tangent.numpy(), [1.0, 0.0, 3.0])
        x.copy_(dg.tensor([5.0, 5.0, 5.0]))
        np.testing.assert_array_equal(fwAD.unpack_dual(x).tangent.numpy(), [0.0, 0.0, 0.0])


def test_inplace_on_a_view_of_a_dual_updates_the_base_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.0, 2.0, 3.0]), dg.tensor([1.0, 1.0, 1.0]))
        x[:2].mul_(x[1:])  # x0 <- x0 x1, x1 <- x1 x2 (computed from the old values)
        np.testing.assert_allclose(fwAD.unpack_dual(x).tangent.numpy(), [3.0, 5.0, 1.0])


def test_nested_levels_inplace_updates_tangents_of_tangents():
    # With s the outer and u the inner direction: x = 2 + s + u, y = 5 + u s, and y.mul_(x)
    # makes y = (2 + s + u)(5 + u s): d/du = 5, d2/du ds = 2, d/ds = 5 at s = u = 0.
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        x = fwAD.make_dual(fwAD.make_dual(dg.tensor([2.0]), dg.ones(1), level=outer), dg.ones(1), level=inner)
        y_tangent = fwAD.make_dual(dg.zeros(1), dg.ones(1), level=outer)
        y = fwAD.make_dual(dg.tensor([5.0]), y_tangent, level=inner)
        y.mul_(x)
        tangent = fwAD.unpack_dual(y, level=inner).tangent
        assert tangent.item() == 5.0
        assert fwAD.unpack_dual(tangent, level=outer).tangent.item() == 2.0
        assert fwAD.unpack_dual(y, level=outer).tangent.item() == 5.0


def test_nested_levels_a_new_tangent_without_outer_tangent_clears_the_old_one():
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        old_tangent = fwAD.make_dual(dg.ones(2), dg.tensor([5.0, 5.0]), level=outer)
        y = fwAD.make_dual(dg.zeros(2), old_tangent, level=inner)
        y.copy_(fwAD.make_dual(dg.tensor([3.0, 3.0]), dg.tensor([2.0, 2.0]), level=inner))
        tangent = fwAD.unpack_dual(y, level=inner).tangent
        np.testing.assert_array_equal(tangent.numpy(), [2.0, 2.0])
        np.testing.assert_array_equal(fwAD.unpack_dual(tangent, level=outer).tangent.numpy(), [0.0, 0.0])


def test_inplace_after_the_level_exited_ignores_its_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]))
        old_tangent = fwAD.unpack_dual(x).tangent
    x.mul_(3.0)
    with fwAD.dual_level():
        x.mul_(2.0)
        assert fwAD.unpack_dual(x).tangent is None
    np.testing.assert_array_equal(x.numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(old_tangent.numpy(), [1.0, 1.0])


# -- torch's other in-place forms, operators and fillers ------------------------------------
@pytest.mark.parametrize("call, expected", [
    (lambda t: t.floor_(), [1.0, -3.0, 2.0]),
    (lambda t: t.round_(), [2.0, -2.0, 2.0]),
    (lambda t: t.sign_(), [1.0, -1.0, 1.0]),
    (lambda t: t.remainder_(2), [1.5, 1.5, 0.0]),
    (lambda t: t.floor_divide_(2), [0.0, -2.0, 1.0]),
    (lambda t: t.div_(2, rounding_mode="trunc"), [0.0, -1.0, 1.0]),
    (lambda t: t.gt_(0), [1.0, 0.0, 1.0]),
    (lambda t: t.eq_(2.0), [0.0, 0.0, 1.0]),
    (lambda t: t.logical_not_(), [0.0, 0.0, 0.0]),
])
def test_more_inplace_methods_write_into_the_tensor_in_its_dtype(call, expected):
    t = dg.tensor([1.5, -2.5, 2.0])
    assert call(t) is t
    assert t.dtype == np.float64 and t.tolist() == expected and t._version == 1


@pytest.mark.parametrize("statement, expected", [
    ("t //= 2", [2, -4]), ("t %= 3", [2, 2]), ("t &= 3", [1, 1]), ("t |= 8", [13, -7]), ("t ^= 1", [4, -8]),
])
def test_augmented_operators_change_the_tensor_itself(statement, expected):
    t = dg.tensor([5, -7])
    alias = t
    exec(statement)
    assert alias.tolist() == expected and alias._version == 1


def test_inplace_bitwise_and_logical_methods_on_ints_and_bools():
    i = dg.tensor([1, 2, 3])
    assert i.bitwise_and_(1).tolist() == [1, 0, 1] and i.bitwise_not_().tolist() == [-2, -1, -2]
    b = dg.tensor([True, False])
    assert b.logical_xor_(dg.tensor([True, True])).tolist() == [False, True] and b.dtype == np.bool_


def test_fill_takes_a_number_or_a_0d_tensor_only():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = dg.zeros(2).fill_(x.sum())
    y.sum().backward()
    assert y.tolist() == [3.0, 3.0] and x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 dim"):
        dg.zeros(2).fill_(dg.tensor([1.0]))


def test_uniform_and_normal_fill_from_the_seeded_generator_without_gradient():
    dg.manual_seed(3)
    a = dg.empty(1000).uniform_(-2, 3)
    dg.manual_seed(3)
    assert dg.equal(a, dg.empty(1000).uniform_(-2, 3))
    assert a.min().item() >= -2 and a.max().item() < 3
    n = dg.empty(20000, dtype=dg.float32).normal_(1.0, 0.5)
    assert n.dtype == np.float32 and abs(n.mean().item() - 1.0) < 0.02 and abs(n.std().item() - 0.5) < 0.02
    x = dg.ones(3, requires_grad=True)
    y = x * 2
    y.normal_()
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_setitem_drops_leading_unit_dimensions_of_the_value_as_torch():
    x = dg.zeros(2, 3)
    x[0] = dg.tensor([[[1.0, 2.0, 3.0]]])
    x[1, 1] = dg.tensor([7.0])
    assert x.tolist() == [[1.0, 2.0, 3.0], [0.0, 7.0, 0.0]]
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(2\)"):
        x[0] = dg.ones(2)


def test_index_family_in_place_through_a_view_updates_the_base_and_its_gradient():
    base = dg.zeros(2, 3, requires_grad=True)
    work = base * 1
    row = work[1]
    assert row.index_add_(0, dg.tensor([0, 0]), dg.tensor([1.0, 2.0])) is row
    row.index_fill_(0, dg.tensor([2]), 7.0)
    assert work.tolist() == [[0.0, 0.0, 0.0], [3.0, 0.0, 7.0]]
    assert work._version == 2 and work.grad_fn.name() == "torch::autograd::CopySlices"
    (work * dg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert base.grad.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]  # the filled element got no gradient


def test_index_family_in_place_checks_leaves_and_saved_tensors():
    leaf = dg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.index_put_((dg.tensor([0]),), dg.tensor([1.0]))
    y = leaf * 1
    z = y.sin()
    y.put_(dg.tensor([1]), dg.tensor([5.0]))
    assert y.tolist() == [0.0, 5.0, 0.0] and y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"):
        dg.zeros(2).masked_scatter_(dg.ones(3, 2, dtype=dg.bool), dg.ones(6))
    with pytest.raises(IndexError, match="out of bounds"):
        dg.zeros(3).index_copy_(0, dg.tensor([3]), dg.ones(1))
