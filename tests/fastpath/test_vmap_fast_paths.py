"""Fast paths of the vmap machinery behind vectorized Jacobians and Hessians.

* The elementwise family rule runs the op on the inputs as they are when their
  batch axes already line up (same place, full rank, no unbatched input
  reaching back to the batch axis); otherwise it moves batch axes first.
  Both paths are checked against a loop over the batch, for batch axes at 0
  and elsewhere, nested vmap and derivatives through the rule.
* ``batch_position`` answers basic indices without NumPy's probe.
* ``func.jvp`` returns primal outputs that do not keep the exited level's tangents.
* ``jacobian(..., strategy='forward-mode')`` batches the basis at a vmap level
  of its own (also inside an enclosing vmap), and ``hessian``'s
  forward-over-reverse leaves the caller's inputs as they were.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, jacobian

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.func import grad, jacfwd, jacrev, jvp
from dualgrad.ops.batch_rules import elementwise_batch
from dualgrad.ops.elementwise.core import ADD, MUL
from dualgrad.ops.indexing import _probe, batch_position

SIZE = 3
LOGICAL = (2, 4)

# (bdim of x, y: "scalar", ("fixed", shape) unbatched, or (bdim, logical shape) batched, fast path taken?)
CASES = [
    (1, "scalar", True),
    (2, "scalar", True),
    (1, ("fixed", (4,)), True),         # y broadcasts over the axes after the batch axis only
    (0, ("fixed", (2, 4)), True),
    (1, ("fixed", (2, 4)), False),      # y would broadcast against the batch axis
    (2, ("fixed", (4,)), False),
    (1, ("fixed", (3, 2, 4)), False),   # y of higher rank than x
    (0, (0, (2, 4)), True),
    (1, (1, (2, 4)), True),
    (1, (1, (1, 4)), True),             # size-1 logical axes broadcast in place
    (0, (0, (4,)), False),              # ranks differ
    (0, (2, (2, 4)), False),            # batch axes at different places
]


def _operands(rng, x_bdim, y_spec):
    x = rng.standard_normal(LOGICAL[:x_bdim] + (SIZE,) + LOGICAL[x_bdim:])
    if y_spec == "scalar":
        return x, 1.5, None
    kind, shape = y_spec
    if kind == "fixed":
        return x, rng.standard_normal(shape), None
    return x, rng.standard_normal(shape[:kind] + (SIZE,) + shape[kind:]), kind


def _loop(f, x, x_bdim, y, y_bdim):
    results = []
    for k in range(SIZE):
        yk = y if y_bdim is None else np.take(y, k, axis=y_bdim)
        results.append(f(np.take(x, k, axis=x_bdim), yk))
    return np.stack(results)


@pytest.mark.parametrize("x_bdim, y_spec, fast", CASES)
def test_elementwise_rule_equals_loop(x_bdim, y_spec, fast):
    x, y, y_bdim = _operands(np.random.default_rng(0), x_bdim, y_spec)
    y_arg = dg.tensor(y) if isinstance(y, np.ndarray) else y
    for f in (lambda a, b: a * b, lambda a, b: b - a, lambda a, b: dg.where(a > 0, a, b)):
        got = dg.vmap(f, in_dims=(x_bdim, y_bdim))(dg.tensor(x), y_arg)
        expected = _loop(lambda a, b: f(dg.tensor(a), dg.tensor(b)).numpy(), x, x_bdim, y, y_bdim)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14)


@pytest.mark.parametrize("x_bdim, y_spec, fast", CASES)
def test_elementwise_rule_keeps_lined_up_batch_axes_in_place(x_bdim, y_spec, fast):
    """The fast path answers with the inputs' own batch axis; the other path with axis 0."""
    x, y, y_bdim = _operands(np.random.default_rng(1), x_bdim, y_spec)
    y_arg = dg.tensor(y) if isinstance(y, np.ndarray) else y
    for op in (ADD, MUL):
        out, out_bdim = elementwise_batch(op, [dg.tensor(x), y_arg], [x_bdim, y_bdim])
        assert out_bdim == (x_bdim if fast else 0)
        expected = _loop(lambda a, b: op.impl(a, b), x, x_bdim, y, y_bdim)
        np.testing.assert_allclose(np.moveaxis(out.numpy(), out_bdim, 0), expected, rtol=1e-14)


def test_elementwise_rule_under_nested_vmap_equals_double_loop():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, SIZE, 4, 5))   # inner batch at axis 1, outer at axis 3
    y = rng.standard_normal((5, 4))            # outer batch at axis 0
    inner = dg.vmap(lambda a, b: a * b + b, in_dims=(1, None))
    got = dg.vmap(inner, in_dims=(3, 0))(dg.tensor(x), dg.tensor(y))
    expected = np.stack([np.stack([x[:, i, :, o] * y[o] + y[o] for i in range(SIZE)]) for o in range(5)])
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14)


def test_derivatives_through_the_lined_up_path():
    rng = np.random.default_rng(3)
    x, w = dg.tensor(rng.standard_normal((2, SIZE))), dg.tensor(rng.standard_normal(2))

    def loss(w, x):
        return dg.vmap(lambda col, w: (col * w).sin(), in_dims=(1, None), out_dims=1)(x, w).sum()

    expected = (np.cos(x.numpy() * w.numpy()[:, None]) * x.numpy()).sum(axis=1)
    np.testing.assert_allclose(grad(loss)(w, x).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(loss)(w, x).numpy(), expected, rtol=1e-12)
    per_example = dg.vmap(grad(lambda w, col: (col * w).sin().sum()), in_dims=(None, 1))(w, x)
    np.testing.assert_allclose(per_example.numpy(), (np.cos(x.numpy() * w.numpy()[:, None]) * x.numpy()).T,
                               rtol=1e-12)


@pytest.mark.parametrize("index, ndim", [
    ((slice(1, None),), 3), ((0,), 3), ((None, 0, slice(None)), 3), ((Ellipsis, -1), 3),
    ((np.int64(1), slice(None)), 3), ((0, slice(None), 0), 4), ((True,), 2), ((True, slice(None), 0), 3),
    ((np.array([0, 1]), slice(None), 0), 4), ((0, slice(None), np.array([0])), 4),
])
def test_batch_position_agrees_with_numpy(index, ndim):
    probe = np.empty((2,) + (1,) * (ndim - 1))[(slice(None),) + tuple(_probe(i) for i in index)]
    assert batch_position(index, ndim) == probe.shape.index(2)


@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_basic_indexing_under_vmap_equals_loop(bdim):
    x = np.random.default_rng(4).standard_normal((4, 5, 6))
    for f in (lambda t: t[1:], lambda t: t[0, ..., None], lambda t: t[:, -1], lambda t: t[None, 1:, 2]):
        got = dg.vmap(f, in_dims=bdim)(dg.tensor(x))
        expected = np.stack([f(dg.tensor(np.take(x, k, axis=bdim))).numpy() for k in range(x.shape[bdim])])
        np.testing.assert_allclose(got.numpy(), expected)


def test_jvp_primal_output_does_not_keep_the_tangent():
    x, t = dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0])
    out, tangent = jvp(lambda a: a.exp(), (x,), (t,))
    np.testing.assert_allclose(tangent.numpy(), [np.e, 0.0])
    ref = weakref.ref(tangent)
    del tangent
    gc.collect()
    assert ref() is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(out).tangent is None


def test_jvp_primal_output_keeps_the_tangents_of_enclosing_levels():
    x, outer, inner = dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]), dg.tensor([0.0, 1.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, outer)
        out, tangent = jvp(lambda a: a ** 3, (dual,), (inner,))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), 3 * x.numpy() ** 2)
        np.testing.assert_allclose(fwAD.unpack_dual(tangent).tangent.numpy(), 6 * x.numpy() * inner.numpy())


def test_jvp_of_a_function_returning_its_input():
    x, t = dg.tensor([1.0, 2.0]), dg.tensor([3.0, 4.0])
    out, tangent = jvp(lambda a: a, (x,), (t,))
    np.testing.assert_allclose(out.numpy(), x.numpy())
    np.testing.assert_allclose(tangent.numpy(), t.numpy())
    assert fwAD.unpack_dual(x).tangent is None


def _two_in_two_out(a, b):
    return (a.sin() * b.sum(), a.reshape(-1)[:2] * b[0] ** 2)


def test_forward_jacobian_of_tuples_equals_reverse():
    rng = np.random.default_rng(5)
    a, b = dg.tensor(rng.standard_normal((2, 3))), dg.tensor(rng.standard_normal(4))
    forward = jacobian(_two_in_two_out, (a, b), vectorize=True, strategy="forward-mode")
    reverse = jacobian(_two_in_two_out, (a, b))
    for row_f, row_r in zip(forward, reverse, strict=True):
        for block_f, block_r in zip(row_f, row_r, strict=True):
            assert block_f.shape == block_r.shape
            np.testing.assert_allclose(block_f.numpy(), block_r.numpy(), rtol=1e-12, atol=1e-14)


def test_forward_jacobian_inside_vmap_equals_loop():
    x = dg.tensor(np.random.default_rng(6).standard_normal((4, 3)))

    def f(v):
        return v.sin() * v.sum(), v ** 2

    got = dg.vmap(lambda v: jacobian(f, v, vectorize=True, strategy="forward-mode"))(x)
    for i in range(4):
        expected = jacrev(f)(x[i])
        for k in range(2):
            np.testing.assert_allclose(got[k].numpy()[i], expected[k].numpy(), rtol=1e-12)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_over_reverse_hessian_leaves_the_inputs_alone(requires_grad):
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=requires_grad)

    def f(v):
        return (v[1:] * v[:-1].exp()).sum() + (v ** 3).sum()

    h = hessian(f, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(h.numpy(), hessian(f, x).numpy(), rtol=1e-12)
    assert x.requires_grad is requires_grad and x.grad is None and x.is_leaf
    assert not h.requires_grad


def test_escaped_batched_tensor_is_refused_inside_another_vmap():
    """The batching hook only searches the active levels when the tensor is not of the innermost one."""
    leaked = []
    dg.vmap(lambda a: leaked.append(a) or a)(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="outside the vmap call"):
        dg.vmap(lambda b: leaked[0] + b)(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="outside the vmap call"):
        dg.vmap(lambda b: leaked[0] * 2)(dg.ones(2, 3))
