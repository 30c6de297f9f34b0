"""Custom autograd Functions: gradients against central differences (reverse, second
order, forward mode), the ctx methods, once_differentiable and every documented error."""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order
from helpers import assert_close, directional_fd, vdot

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.autograd import Function
from dualgrad.transforms.function import FunctionCtx, FunctionOp, once_differentiable

RNG = np.random.default_rng(3)


class Exp(Function):
    """The reference example."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class ScaledProduct(Function):
    """``k * x * y`` with a non-Tensor argument and a non-Tensor extra output; style 2."""

    @staticmethod
    def forward(x, k, y):
        return x * y * k, "note"

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k, y = inputs
        ctx.k = k
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)

    @staticmethod
    def vjp(ctx, g, _note):
        x, y = ctx.saved_tensors
        return g * y * ctx.k, None, g * x * ctx.k

    @staticmethod
    def jvp(ctx, x_dot, _k_dot, y_dot):
        x, y = ctx.saved_tensors
        return ctx.k * (x_dot * y + x * y_dot), None


class SinCos(Function):
    """Two outputs, derivatives written with dualgrad ops (so twice differentiable)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc):
        x, = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * x.cos(), -t * x.sin()


# -- reverse mode ----------------------------------------------------------------------------
def test_reference_exp_example():
    x = dg.tensor([0., 1.], requires_grad=True)
    output = Exp.apply(x)
    assert output.grad_fn.name() == "ExpBackward"
    np.testing.assert_allclose(output.detach().numpy(), np.exp([0., 1.]))
    check_first_order(Exp.apply, [RNG.standard_normal(5)])
    check_second_order(Exp.apply, [RNG.standard_normal(5)])


def test_setup_context_style_with_non_tensor_arguments_and_outputs():
    x0, y0 = RNG.standard_normal(3), RNG.standard_normal(3)
    out, note = ScaledProduct.apply(dg.tensor(x0), 2.5, dg.tensor(y0))
    assert note == "note"
    np.testing.assert_allclose(out.numpy(), 2.5 * x0 * y0)

    def call(x, y):
        return ScaledProduct.apply(x, 2.5, y)[0]

    check_first_order(call, [x0, y0])
    check_second_order(call, [x0, y0])


def test_multiple_outputs_first_and_second_order():
    def call(x):
        s, c = SinCos.apply(x)
        return s * c + s

    x0 = RNG.standard_normal(4)
    check_first_order(call, [x0])
    check_second_order(call, [x0])


def test_gradient_of_one_output_only_gets_zeros_for_the_other():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1, g2))
            return g1 * 2 + g2 * 3

    x = dg.tensor([1., 2.], requires_grad=True)
    a, _ = Two.apply(x)
    a.sum().backward()
    assert seen[0][1].tolist() == [0., 0.]
    np.testing.assert_allclose(x.grad.numpy(), [2., 2.])


def test_set_materialize_grads_false_passes_none():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return g1 * 2

    x = dg.tensor([1., 2.], requires_grad=True)
    Two.apply(x)[0].sum().backward()
    assert seen == [None]


class DropsGradient(Function):
    """3x whose backward returns None: the nodes below it receive only undefined gradients."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return None


@pytest.mark.parametrize("materialize", [True, False])
def test_backward_runs_when_every_gradient_reaching_it_is_undefined(materialize):
    # As in torch: the custom backward is called (with zeros, or None without materialized grads),
    # where a built-in op's node would be skipped.
    seen = []

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(g)
            return None if g is None else g * 2

    x = dg.ones(2, requires_grad=True)
    grad, = dg.autograd.grad(DropsGradient.apply(Double.apply(x)).sum(), x, allow_unused=True)
    if materialize:
        assert seen[0].tolist() == [0., 0.] and grad.tolist() == [0., 0.]
    else:
        assert seen == [None] and grad is None
    assert dg.autograd.grad(DropsGradient.apply(x.exp()).sum(), x, allow_unused=True) == (None,)


def test_mark_non_differentiable_output_does_not_require_grad_and_gets_zero_gradients():
    seen = []

    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            index = dg.tensor([1., 0.])
            ctx.mark_non_differentiable(index)
            return x * 2, index

        @staticmethod
        def backward(ctx, g, g_index):
            seen.append(g_index)
            return g * 2

    x = dg.tensor([1., 2.], requires_grad=True)
    out, index = SortLike.apply(x)
    assert out.requires_grad and not index.requires_grad
    out.sum().backward()
    assert seen[0].tolist() == [0., 0.]


def test_needs_input_grad_and_trailing_nones():
    flags = []

    class Add(Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            flags.append(ctx.needs_input_grad)
            return (x + y) * scale

        @staticmethod
        def backward(ctx, g):
            return g, g, None, None, None

    x = dg.tensor([1., 2.], requires_grad=True)
    Add.apply(x, dg.tensor([3., 4.]), 2.0).sum().backward()
    assert flags == [(True, False, False)]
    np.testing.assert_allclose(x.grad.numpy(), [1., 1.])


def test_broadcast_gradient_is_summed_to_the_input_shape():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, s):
            return x * s

        @staticmethod
        def backward(ctx, g):
            return g, g * 2.0  # the gradient of s has x's shape: summed back to s's

    s = dg.tensor(3., requires_grad=True)
    Scale.apply(dg.ones(2, 3), s).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), 12.)


class Identity(Function):
    """Returns its input as-is (torch then makes the output a view of it)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_returned_input_becomes_a_new_tensor_and_input_is_untouched():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3., 3.])


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2  # a deliberately visible factor


def test_mark_dirty_inplace_function():
    x = dg.tensor([1., 2.], requires_grad=True)
    a = x * 1.0
    out = AddOneInPlace.apply(a)
    # torch's count: 1 for add_, 1 for mark_dirty
    assert out is a and a._version == 2 and a.grad_fn.name() == "AddOneInPlaceBackward"
    np.testing.assert_allclose(a.detach().numpy(), [2., 3.])
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2., 2.])


class AddOneThroughNumPy(Function):
    @staticmethod
    def forward(ctx, x):
        x.numpy()[...] += 1  # (grad mode is off in forward: numpy() is allowed)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty_bumps_the_version_so_stale_saved_values_are_caught():
    # torch: a dirty input's version counter is bumped by mark_dirty itself, so a write
    # autograd did not see (NumPy here) still invalidates graphs that saved the old value.
    x = dg.tensor([1., 2.], requires_grad=True)
    a = x * 1.0
    b = a * a  # saves a at version 0
    AddOneThroughNumPy.apply(a)
    assert a._version == 1
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*needed by MulBackward0, "
                                           r"is at version 1; expected version 0"):
        b.sum().backward()
    c = dg.zeros(2)
    AddOneThroughNumPy.apply(c)  # nothing recorded: the version is bumped all the same
    assert c._version == 1 and c.tolist() == [1.0, 1.0]


def test_mark_dirty_on_a_view_rebases_its_base():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    base = x * 1.0
    AddOneInPlace.apply(base[1:])
    assert base.grad_fn.name() == "torch::autograd::CopySlices"
    np.testing.assert_allclose(base.detach().numpy(), [1., 3., 4.])
    base.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1., 2., 2.])


def test_double_backward_of_a_once_differentiable_function_raises():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = dg.tensor([1., 2.], requires_grad=True)
    g, = dg.grad(Square.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2., 4.])
    with pytest.raises(RuntimeError, match=(
            "trying to differentiate twice a function that was marked with "
            "@once_differentiable")):
        g.sum().backward()
    np.testing.assert_allclose(dg.grad(Square.apply(x).sum(), x)[0].numpy(), [2., 4.])


def test_saved_tensor_of_a_function_is_version_checked():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    a = dg.tensor([1., 2.], requires_grad=True) * 1.0
    out = Square.apply(a)
    a.mul_(2)
    with pytest.raises(RuntimeError, match=(
            r"modified by an inplace operation: .*\(2,\).*SquareBackward, "
            r"is at version 1; expected version 0")):
        out.sum().backward()


def test_second_backward_without_retain_graph_raises():
    x = dg.tensor([1., 2.], requires_grad=True)
    out = Exp.apply(x).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_no_node_without_inputs_that_require_grad():
    y = Exp.apply(dg.tensor([1., 2.]))
    assert y.grad_fn is None and not y.requires_grad
    with dg.no_grad():
        assert Exp.apply(dg.tensor([1.], requires_grad=True)).grad_fn is None


# -- errors -----------------------------------------------------------------------------------
def test_wrong_number_of_gradients_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = dg.tensor([1.], requires_grad=True)
    with pytest.raises(RuntimeError, match=(
            r"function BadBackward returned an incorrect number of gradients "
            r"\(expected 2, got 1\)")):
        Bad.apply(x, x).sum().backward()
    assert x.grad is None


def test_extra_non_none_gradient_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        Bad.apply(dg.tensor([1.], requires_grad=True)).sum().backward()


def test_wrong_shape_gradient_raises_with_torchs_message():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, weight):
            return (x * weight).sum()

        @staticmethod
        def backward(ctx, g):
            return g * dg.ones(2), g * dg.ones(3)

    w = dg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match=(
            r"^Function BadBackward returned an invalid gradient at index 1 - got \[3\] but "
            r"expected shape compatible with \[2\]$")):
        Bad.apply(dg.ones(2), w).backward()


def test_gradient_for_a_non_tensor_input_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=(
            "gradient different than None at position 2, but the corresponding "
            "forward input was not a Variable")):
        Bad.apply(dg.tensor([1.], requires_grad=True), 2.0).sum().backward()


def test_mark_dirty_on_an_unmodified_tensor_is_accepted():
    # torch accepts it: the input is returned with the Function's node as its grad_fn
    class Unmodified(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = dg.tensor([1., 2.], requires_grad=True)
    a = x * 1.0
    y = Unmodified.apply(a)
    assert y is a and y.grad_fn.name() == "UnmodifiedBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3., 3.])


def test_mark_dirty_on_a_non_input_warns_and_on_an_unreturned_tensor_raises():
    class NotAnInput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            y.add_(1)
            ctx.mark_dirty(y)
            return y

    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

    # torch only warns about a non-input; it then is a plain output
    x = dg.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match=r"ctx.mark_dirty\(\) received a tensor that was not an input"):
        y = NotAnInput.apply(x)
    assert y.grad_fn.name() == "NotAnInputBackward" and y.tolist() == [3., 3.]
    with pytest.raises(RuntimeError, match=(
            "^Some elements marked as dirty during the forward method were not returned as output. The "
            "inputs that are modified inplace must all be outputs of the Function.$")):
        NotReturned.apply(dg.ones(2))


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    with pytest.raises(RuntimeError, match=(
            "a leaf Variable that requires grad has been used in an in-place "
            "operation")):
        AddOneInPlace.apply(dg.tensor([1.], requires_grad=True))


def test_defining_both_backward_and_vjp_raises():
    with pytest.raises(RuntimeError, match=(
            "Both: Implementing both 'backward' and 'vjp' for a custom Function "
            "is not allowed")):
        class Both(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g


def test_defining_both_vmap_and_generate_vmap_rule_raises():
    with pytest.raises(RuntimeError, match=(
            "Ambiguous: it has both generate_vmap_rule=True and an overridden "
            "vmap staticmethod")):
        class Ambiguous(Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x

            @staticmethod
            def vmap(info, in_dims, x):
                return x, in_dims[0]


def test_save_for_backward_of_a_non_tensor_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match=(
            "^save_for_backward can only save variables, but argument 1 is of type int$")):
        Bad.apply(dg.tensor([1.]))


def test_backward_not_implemented_raises():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="must implement either the backward or vjp method"):
        NoBackward.apply(dg.tensor([1.], requires_grad=True)).sum().backward()


# -- forward mode ----------------------------------------------------------------------------
def _jvp(fn, primals, tangents):
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(p), dg.tensor(t)) for p, t in zip(primals, tangents, strict=True)]
        out = fn(*duals)
        return fwAD.unpack_dual(out).tangent.numpy()


def test_forward_mode_calls_jvp_and_matches_finite_differences():
    x0, y0, tx, ty = (RNG.standard_normal(3) for _ in range(4))

    def call(x, y):
        return ScaledProduct.apply(x, 2.5, y)[0]

    expected = directional_fd(call, [x0, y0], [tx, ty])[0]
    np.testing.assert_allclose(_jvp(call, [x0, y0], [tx, ty]), expected, rtol=1e-6, atol=1e-8)


def test_forward_and_reverse_mode_agree_on_a_function():
    x0, t0, u0 = (RNG.standard_normal(4) for _ in range(3))

    def call(x):
        s, c = SinCos.apply(x)
        return s * c

    jv = _jvp(call, [x0], [t0])
    x = dg.tensor(x0, requires_grad=True)
    vj, = dg.grad(call(x), x, dg.tensor(u0))
    assert_close(vdot([u0], [jv]), vdot([vj], [t0]), what="<u, J t> vs <J^T u, t>")


def test_forward_mode_without_jvp_raises_naming_the_function():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.]), dg.tensor([1.]))
        with pytest.raises(RuntimeError, match=(
                "Exp: You must implement the jvp function for custom autograd.Function "
                "to use it with forward mode AD")):
            Exp.apply(x)


def test_function_without_tangent_inputs_needs_no_jvp():
    with fwAD.dual_level():
        np.testing.assert_allclose(Exp.apply(dg.tensor([0.])).numpy(), [1.])


class ScaleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 3.0 * g

    @staticmethod
    def jvp(ctx, t):
        return 3.0 * t


@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_mode_of_a_function_marking_its_input_dirty(requires_grad):
    leaf = dg.tensor([1.0, 2.0], requires_grad=requires_grad)
    with fwAD.dual_level():
        x = fwAD.make_dual(leaf * 1.0, dg.tensor([1.0, -2.0]))
        out = ScaleInPlace.apply(x)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), [3.0, -6.0])
    if requires_grad:
        out.sum().backward()
        np.testing.assert_allclose(leaf.grad.numpy(), [3.0, 3.0])


# -- vmap (the adapter the batching engine calls) ----------------------------------------------
class BatchedCube(Function):
    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.tag = "cube"  # (read through grad_fn in test_setup_context_attributes_are_read_through_grad_fn)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * g * x ** 2

    @staticmethod
    def vmap(info, in_dims, x):
        return BatchedCube.apply(x.transpose(0, in_dims[0])), 0


def test_vmap_staticmethod_is_the_batching_rule():
    batch = RNG.standard_normal((3, 4))
    args = (dg.tensor(batch),)
    op = FunctionOp(BatchedCube, FunctionCtx(), args)
    out, out_dim = op.batch(args, (1,))
    assert out_dim == 0
    loop = np.stack([batch[:, i] ** 3 for i in range(4)])
    np.testing.assert_allclose(out.numpy(), loop)


def test_vmap_without_a_rule_raises():
    op = FunctionOp(Exp, FunctionCtx(), (dg.ones(2, 3),))
    with pytest.raises(RuntimeError, match=(
            "You tried to vmap over Exp, but it does not have vmap support. Please override and "
            "implement the vmap staticmethod or set generate_vmap_rule=True")):
        op.batch((dg.ones(2, 3),), (0,))


def test_function_under_vmap():
    vmap = pytest.importorskip("dualgrad.vmap.batching").vmap
    batch = RNG.standard_normal((4, 3))

    class Generated(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 4 * g * x

    np.testing.assert_allclose(vmap(Generated.apply)(dg.tensor(batch)).numpy(), 2 * batch ** 2)
    np.testing.assert_allclose(vmap(BatchedCube.apply, in_dims=1)(dg.tensor(batch)).numpy(), batch.T ** 3)
    x = dg.tensor(batch, requires_grad=True)
    vmap(BatchedCube.apply)(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * batch ** 2)
    with pytest.raises(RuntimeError, match="does not have vmap support"):
        vmap(Exp.apply)(dg.tensor(batch))
    x.grad = None
    vmap(Generated.apply)(x).sum().backward()  # reverse mode through the generated rule
    np.testing.assert_allclose(x.grad.numpy(), 4 * batch)


def test_forward_mode_without_jvp_raises_not_implemented_error_as_torch():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.]), dg.tensor([1.]))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            Exp.apply(x)


class Scale(Function):
    """A Function with a non-Tensor argument and an attribute set on ctx."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        ctx.save_for_backward(x)
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


def test_grad_fn_of_a_function_output_reads_its_ctx_as_torch():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = Scale.apply(x, 3.)
    node = y.grad_fn
    assert isinstance(node, dg.autograd.function.BackwardCFunction)
    assert isinstance(node, dg.graph.Node)
    assert type(node).__name__ == "ScaleBackward" and node.name() == "ScaleBackward"
    assert type(node)._forward_cls is Scale
    assert node.factor == 3.
    assert node.needs_input_grad == (True, False)
    saved, = node.saved_tensors
    assert saved is x
    assert node.next_functions == ((x.grad_fn or dg.graph.get_gradient_edge(x).node, 0),)
    assert node.metadata == {}
    assert {"factor", "saved_tensors", "needs_input_grad", "next_functions"} <= set(dir(node))
    node.bar = 1  # set through the node, read on ctx
    assert node.bar == 1
    assert node.apply(dg.ones(2))[0].tolist() == [3., 3.]
    with pytest.raises(AttributeError, match="'ScaleBackward' object has no attribute 'missing'"):
        node.missing  # noqa: B018


def test_hooks_on_a_function_node_and_saved_tensors_after_backward():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = Scale.apply(x, 2.)
    seen = []
    y.grad_fn.register_prehook(lambda grad_outputs: seen.append("pre"))
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append("post"))
    y.sum().backward()
    assert seen == ["pre", "post"]
    assert x.grad.tolist() == [2., 2.]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors  # noqa: B018


def test_setup_context_attributes_are_read_through_grad_fn():
    x = dg.tensor(2., requires_grad=True)
    node = BatchedCube.apply(x).grad_fn
    assert node.tag == "cube" and node.saved_tensors[0] is x and node.name() == "BatchedCubeBackward"
    assert node.needs_input_grad == (True,)


def test_an_input_returned_as_is_is_a_view_that_may_not_be_modified_in_place():
    x = dg.tensor([1., 2.], requires_grad=True)
    a = x * 1.0
    y = Identity.apply(a)
    assert y is not a and y._base is a and y.grad_fn.name() == "IdentityBackward"
    with pytest.raises(RuntimeError, match=(
            "^Output 0 of Identity is a view and is being modified inplace. This view was created inside "
            "a custom Function")):
        y.mul_(2)
    assert y.tolist() == [1., 2.]  # (refused before anything changed)
    a.add_(1)  # the base changed: the output's graph cannot be rebuilt without bypassing backward
    with pytest.raises(RuntimeError, match=(
            "Output 0 of Identity is a view and its base or another view of its base has been modified "
            "inplace")):
        y * 2
    y = Identity.apply(a)  # untouched, it differentiates through the custom backward
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3., 3.])
    with dg.no_grad():
        Identity.apply(a).add_(1)  # allowed without grad, as in torch
    assert a.tolist() == [3., 4.]


def test_a_view_made_in_forward_may_not_be_modified_in_place():
    class View(Function):
        @staticmethod
        def forward(ctx, x):
            return x.reshape(2, 1)

        @staticmethod
        def backward(ctx, g):
            return g.reshape(2)

    out = View.apply(dg.tensor([1., 2.], requires_grad=True) * 1.0)
    with pytest.raises(RuntimeError, match="Output 0 of View is a view and is being modified inplace"):
        out.add_(1)


def test_arguments_given_by_keyword_are_inputs_in_parameter_order():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k=2.0, w=None):
            ctx.seen = ctx.needs_input_grad
            return x * k * w

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, g

    x = dg.tensor([1., 2.], requires_grad=True)
    w = dg.tensor([3., 4.], requires_grad=True)
    y = Scale.apply(x, w=w, k=3.0)
    assert y.grad_fn.seen == (True, False, True) and len(y.grad_fn.next_functions) == 2
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1., 1.])  # (was silently missing)
    with pytest.raises(TypeError, match="the Tensor 'w' cannot be an input"):
        Scale.apply(x, w=w)  # k not given: w cannot take its place among the inputs


def test_setup_context_gets_the_defaults_among_the_inputs():
    class Scale(Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k

    x = dg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients \(expected 2, got 1\)"):
        Scale.apply(x).sum().backward()  # as torch: k is an input, backward owes it a (None) gradient


def test_instantiating_a_function_warns_and_calling_the_instance_raises():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = Exp()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
        instance(dg.ones(2))


def test_a_non_tensor_gradient_raises_torchs_runtime_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return 3.0

    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got float\)"):
        Bad.apply(dg.ones(2, requires_grad=True)).backward()


def test_jvp_returning_the_wrong_number_of_tangents_raises_torchs_message():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g, h):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t

    with fwAD.dual_level(), pytest.raises(RuntimeError, match=(
            r"Function's jvp returned an invalid number of forward gradients \(expected 2 but got 1\)")):
        Two.apply(fwAD.make_dual(dg.ones(2), dg.ones(2)))


def test_context_method_mixin_is_the_ctx_class_as_in_torch():
    # the reference documents torch.autograd.function._ContextMethodMixin (an alias in torch 2.x)
    assert dg.autograd.function._ContextMethodMixin is dg.autograd.function.FunctionCtx
