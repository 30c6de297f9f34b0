"""Custom Functions with ``generate_vmap_rule = True`` under vmap combined with differentiation.

The generated rule applies the Function one vmap level down, on the physical
tensors, so that its graph node (and its ``jvp``) run the user's ``backward``
(``jvp``) on per-example tensors. Every composition is checked against a Python
loop over the batch, against central differences and against the same
function written with plain ops.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order
from helpers import directional_fd

import dualgrad as dg
from dualgrad.func import grad, jacfwd, jacrev, jvp, vmap
from dualgrad.functional import jacobian

RNG = np.random.default_rng(7)
BATCH = RNG.standard_normal((4, 3))
SHARED = RNG.standard_normal(3)


class CubeTimes(dg.Function):
    """``x ** 3 * y`` in the ``setup_context`` style, with a jvp."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x ** 3 * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return 3 * g * x ** 2 * y, g * x ** 3

    @staticmethod
    def jvp(ctx, x_dot, y_dot):
        x, y = ctx.saved_tensors
        return 3 * x_dot * x ** 2 * y + y_dot * x ** 3


class CubeTimesCtx(dg.Function):
    """The same Function with ``forward(ctx, ...)``, an attribute on ctx and the output saved."""

    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x, y):
        out = x ** 3 * y
        ctx.save_for_backward(x, y, out)
        ctx.save_for_forward(x, y)
        ctx.power = 3
        return out

    @staticmethod
    def backward(ctx, g):
        x, y, out = ctx.saved_tensors
        return ctx.power * g * out / x, g * x ** ctx.power

    @staticmethod
    def jvp(ctx, x_dot, y_dot):
        x, y = ctx.saved_tensors
        return ctx.power * x_dot * x ** 2 * y + y_dot * x ** 3


def plain(x, y):
    return x ** 3 * y


FUNCTIONS = [CubeTimes.apply, CubeTimesCtx.apply]


def loss_with(cube):
    return lambda x, y: cube(x, y).sin().sum()


def per_example_fd(f, xs: np.ndarray, y: np.ndarray, direction: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central difference of scalar ``f(x_i, y)`` along ``direction[i]``, for each batch member i."""
    def value(x):
        return float(f(dg.tensor(x), dg.tensor(y)))
    return np.array([(value(x + eps * v) - value(x - eps * v)) / (2 * eps) for x, v in zip(xs, direction)])


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_vmap_of_grad_matches_a_loop_and_finite_differences(cube):
    f = loss_with(cube)
    per_example = vmap(grad(f), in_dims=(0, None))(dg.tensor(BATCH), dg.tensor(SHARED))
    loop = np.stack([grad(f)(dg.tensor(x), dg.tensor(SHARED)).numpy() for x in BATCH])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12, atol=1e-12)
    direction = RNG.standard_normal(BATCH.shape)
    np.testing.assert_allclose((per_example.numpy() * direction).sum(1),
                               per_example_fd(f, BATCH, SHARED, direction), rtol=1e-6, atol=1e-7)
    reference = vmap(grad(loss_with(plain)), in_dims=(0, None))(dg.tensor(BATCH), dg.tensor(SHARED))
    np.testing.assert_allclose(per_example.numpy(), reference.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_per_example_gradient_of_an_input_shared_by_the_batch(cube):
    f = loss_with(cube)
    per_example = vmap(grad(f, argnums=1), in_dims=(0, None))(dg.tensor(BATCH), dg.tensor(SHARED))
    loop = np.stack([grad(f, argnums=1)(dg.tensor(x), dg.tensor(SHARED)).numpy() for x in BATCH])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_grad_of_a_vmapped_function_sums_over_the_batch_for_a_shared_input(cube):
    f = loss_with(cube)
    total = grad(lambda x, y: vmap(f, in_dims=(0, None))(x, y).sum(), argnums=(0, 1))
    gx, gy = total(dg.tensor(BATCH), dg.tensor(SHARED))
    loops = [grad(f, argnums=(0, 1))(dg.tensor(x), dg.tensor(SHARED)) for x in BATCH]
    np.testing.assert_allclose(gx.numpy(), np.stack([g[0].numpy() for g in loops]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gy.numpy(), sum(g[1].numpy() for g in loops), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_reverse_mode_through_vmap_against_finite_differences_first_and_second_order(cube):
    def call(x, y):
        return vmap(cube, in_dims=(0, None))(x, y).sin()

    check_first_order(call, [BATCH, SHARED])
    check_second_order(call, [BATCH, SHARED])


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_vectorized_jacobian_of_a_vmapped_function(cube):
    y = dg.tensor(SHARED)

    def batched(x):
        return vmap(lambda row: cube(row, y).sin())(x)

    def reference(x):
        return vmap(lambda row: plain(row, y).sin())(x)

    expected = jacobian(reference, dg.tensor(BATCH))
    np.testing.assert_allclose(jacobian(batched, dg.tensor(BATCH), vectorize=True).numpy(), expected.numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacrev(batched)(dg.tensor(BATCH)).numpy(), expected.numpy(),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cube", FUNCTIONS)
@pytest.mark.parametrize("transform", [jacrev, jacfwd])
def test_vmap_of_jacobian_matches_a_loop(cube, transform):
    y = dg.tensor(SHARED)

    def g(x):
        return cube(x, y).sin()

    per_example = vmap(transform(g))(dg.tensor(BATCH))
    loop = np.stack([jacrev(lambda r: plain(r, y).sin())(dg.tensor(x)).numpy() for x in BATCH])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_jvp_through_the_functions_jvp_under_vmap(cube):
    tangents = RNG.standard_normal(BATCH.shape)
    shared_tangent = RNG.standard_normal(SHARED.shape)

    def g(x, y):
        return cube(x, y).sin()

    inside = vmap(lambda x, t: jvp(lambda r: g(r, dg.tensor(SHARED)), (x,), (t,))[1])(
        dg.tensor(BATCH), dg.tensor(tangents))
    loop = np.stack([jvp(lambda r: plain(r, dg.tensor(SHARED)).sin(), (dg.tensor(x),), (dg.tensor(t),))[1].numpy()
                     for x, t in zip(BATCH, tangents)])
    np.testing.assert_allclose(inside.numpy(), loop, rtol=1e-12, atol=1e-12)
    _, outside = jvp(vmap(g, in_dims=(0, None)), (dg.tensor(BATCH), dg.tensor(SHARED)),
                     (dg.tensor(tangents), dg.tensor(shared_tangent)))
    expected, = directional_fd(lambda x, y: vmap(g, in_dims=(0, None))(x, y), [BATCH, SHARED],
                               [tangents, shared_tangent])
    np.testing.assert_allclose(outside.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cube", FUNCTIONS)
def test_second_order_and_nested_vmap(cube):
    f = loss_with(cube)
    hessians = vmap(jacfwd(jacrev(lambda x: f(x, dg.tensor(SHARED)))))(dg.tensor(BATCH))
    loop = np.stack([jacfwd(jacrev(lambda r: loss_with(plain)(r, dg.tensor(SHARED))))(dg.tensor(x)).numpy()
                     for x in BATCH])
    np.testing.assert_allclose(hessians.numpy(), loop, rtol=1e-10, atol=1e-12)
    nested = RNG.standard_normal((2,) + BATCH.shape)
    both = vmap(vmap(grad(f), in_dims=(0, None)), in_dims=(0, None))(dg.tensor(nested), dg.tensor(SHARED))
    loop = np.stack([[grad(f)(dg.tensor(x), dg.tensor(SHARED)).numpy() for x in rows] for rows in nested])
    np.testing.assert_allclose(both.numpy(), loop, rtol=1e-12, atol=1e-12)


def test_the_graph_node_is_the_vmapped_function():
    x = dg.tensor(BATCH, requires_grad=True)
    out = vmap(CubeTimes.apply, in_dims=(0, None))(x, dg.tensor(SHARED))
    assert out.grad_fn.name() == "VmappedCubeTimesBackward"


class SinAndArgmax(dg.Function):
    """Several outputs: a non-differentiable one, a non-Tensor one; ``None`` for missing gradients."""

    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        ctx.set_materialize_grads(False)
        index = dg.argmax(x)
        ctx.mark_non_differentiable(index)
        return x.sin() * scale, index, "label"

    @staticmethod
    def backward(ctx, g, g_index, g_label):
        assert g_index is None and g_label is None
        x, = ctx.saved_tensors
        return g * x.cos() * ctx.scale, None


def test_ctx_features_under_vmap_of_grad():
    def f(x):
        values, index, label = SinAndArgmax.apply(x, 2.0)
        assert label == "label" and not index.requires_grad
        return values.sum()

    per_example = vmap(grad(f))(dg.tensor(BATCH))
    np.testing.assert_allclose(per_example.numpy(), 2 * np.cos(BATCH), rtol=1e-12)
    indices = vmap(lambda x: SinAndArgmax.apply(x, 2.0)[1])(dg.tensor(BATCH))
    np.testing.assert_array_equal(indices.numpy(), BATCH.argmax(1))


class TripleInPlace(dg.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        x.mul_(3.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 3.0 * g


def test_mark_dirty_under_vmap_of_grad():
    def f(x):
        y = x * 1.0
        z = TripleInPlace.apply(y)
        return (z * y).sum()  # 9 x**2

    np.testing.assert_allclose(vmap(grad(f))(dg.tensor(BATCH)).numpy(), 18 * BATCH, rtol=1e-12)


def test_a_saved_tensor_changed_in_place_under_vmap_raises_at_backward():
    def f(x):
        y = x * 1.0
        out = CubeTimes.apply(y, dg.tensor(SHARED))
        y.add_(1.0)
        return out.sum()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        vmap(grad(f))(dg.tensor(BATCH))


class WrongShape(dg.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return dg.ones(5)


class NoJvp(dg.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_errors_name_the_users_function_and_per_example_shapes():
    with pytest.raises(RuntimeError, match=r"WrongShapeBackward returned an invalid gradient at index 0 "
                                           r"- got \[5\] but expected shape compatible with \[3\]"):
        vmap(grad(lambda x: WrongShape.apply(x).sum()))(dg.tensor(BATCH))
    with pytest.raises(RuntimeError, match="NoJvp: You must implement the jvp function"):
        vmap(lambda x: jvp(NoJvp.apply, (x,), (x,)))(dg.tensor(BATCH))


class AddNoise(dg.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        return x + dg.rand_like(x)

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.parametrize("randomness", ["different", "same"])
def test_randomness_inside_a_generated_rule_follows_the_vmap(randomness):
    x = dg.zeros(4, 3, requires_grad=True)
    out = vmap(AddNoise.apply, randomness=randomness)(x)
    assert out.shape == (4, 3)
    values = out.detach().numpy()
    assert np.allclose(values, values[0]) == (randomness == "same")
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((4, 3)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(AddNoise.apply)(x)
