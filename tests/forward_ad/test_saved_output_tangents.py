"""Forward over reverse through saved outputs: the node keeps a recipe for the output's tangents.

A node that saved its output (``exp``, ``tanh``, ``sqrt``, ``eigh``, ...) does not
hold the output's tangents (their graph leads back to the node: a reference
cycle). When a backward rule unpacks the output inside a dual level, the
tangents are computed again from the op's arguments
(``forward_ad.engine.TangentRecipe``). These tests check that the derivatives
are those of the mathematics: table-driven against central differences, third
order through the recomputed tangents, in-place changes, saved-tensor hooks.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from helpers import as_outputs, directional_fd, leaves, random_like
from hypothesis import given, settings
from hypothesis import strategies as st
from op_samples import SAMPLES

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.base.state import STATE
from dualgrad.forward_ad.engine import TangentRecipe
from dualgrad.ops import ALL_OPS
from dualgrad.reverse.node import Node
from dualgrad.reverse.saved import SavedTensor

SAVING_OUTPUT = sorted(name for name in SAMPLES if ALL_OPS[name].save_out is not False)


# How the node gets the tangents of its saved output back (``TangentRecipe``).
WAYS = ("from the live output", "recomputed", "kept untaped")


def _gradients(call, arrays, us, vs=None, way=WAYS[0]):
    """``J^T u`` at ``arrays``; with directions ``vs``, computed inside a level: then also its tangents."""
    xs = leaves(arrays)
    with fwAD.dual_level() as level:
        STATE.dual_levels[level].tape_tangents = way != "kept untaped"
        inputs = xs if vs is None else [fwAD.make_dual(x, dg.tensor(v)) for x, v in zip(xs, vs, strict=True)]
        outs = as_outputs(call(*inputs))
        if way == "recomputed":
            outs = tuple(o * 1.0 for o in outs)  # (mul by a constant saves nothing): the outputs die
        grads = dg.grad(outs, xs, [dg.tensor(u) for u in us], allow_unused=True, materialize_grads=True)
        tangents = [fwAD.unpack_dual(g).tangent for g in grads]
    return grads, [np.zeros(g.shape) if t is None else t.detach().numpy()
                   for g, t in zip(grads, tangents, strict=True)]


def test_the_table_has_ops_that_save_their_output():
    assert {"exp", "tanh", "sqrt", "linalg_eigh", "linalg_slogdet"} <= set(SAVING_OUTPUT)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", SAVING_OUTPUT)
@settings(max_examples=20)
@given(data=st.data())
def test_forward_over_reverse_matches_finite_differences_of_the_gradient(name, way, data):
    """The tangent of ``J^T u`` along ``v`` is the central difference of ``J^T u`` along ``v``."""
    sample = data.draw(SAMPLES[name], label="sample")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    with dg.no_grad():
        outs = as_outputs(sample.call(*[dg.tensor(a) for a in sample.arrays]))
    us = random_like(rng, outs)
    vs = random_like(rng, sample.arrays)
    _, tangents = _gradients(sample.call, sample.arrays, us, vs, way)

    def gradient(*tensors):
        with dg.enable_grad():  # central differences evaluate under no_grad
            return tuple(_gradients(sample.call, [t.numpy() for t in tensors], us)[0])

    expected = directional_fd(gradient, sample.arrays, vs, eps=1e-5)
    for got, want in zip(tangents, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} ({way}): d/dv (J^T u)")


def test_hessian_vector_product_of_exp_is_exact():
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    v = dg.tensor([1.0, 2.0, -1.0])
    with fwAD.dual_level():
        (g,) = dg.grad(fwAD.make_dual(x, v).exp().sum(), x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(hv.detach().numpy(), np.exp(x.detach().numpy()) * v.numpy(), rtol=1e-12)


def test_third_order_through_a_recomputed_tangent():
    """``d/dx <H(x) v, w>`` of ``sum(tanh(x))``: the recomputed tangent's own graph is differentiated."""
    x0 = np.array([0.3, -0.7, 1.1])
    v, w = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.0, 2.0])

    def hvp_dot(x_array, create_graph=False):
        x = dg.tensor(x_array, requires_grad=True)
        _, hv = dg.functional.hvp(lambda t: t.tanh().sum(), x, dg.tensor(v), create_graph=create_graph)
        return x, (hv * dg.tensor(w)).sum()

    x, value = hvp_dot(x0, create_graph=True)
    (third,) = dg.grad(value, x)
    eps = 1e-5
    expected = [(hvp_dot(x0 + eps * e)[1].item() - hvp_dot(x0 - eps * e)[1].item()) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(third.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_backward_through_a_tangent_inside_its_level():
    """Reverse over forward inside the level: the gradient of ``v * exp(x)`` has tangent ``v**2 * exp(x)``."""
    x = dg.tensor([0.2, -0.4], requires_grad=True)
    v = dg.tensor([3.0, -1.0])
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, v).exp()).tangent
        (g,) = dg.grad(tangent.sum(), x, create_graph=True)
        g_tangent = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(g.detach().numpy(), v.numpy() * np.exp(x.detach().numpy()), rtol=1e-12)
    np.testing.assert_allclose(g_tangent.detach().numpy(), v.numpy() ** 2 * np.exp(x.detach().numpy()), rtol=1e-12)


def test_nested_levels_through_a_saved_output():
    """Two levels over reverse: the inner tangent's outer tangent is a third derivative of ``exp``."""
    x = dg.tensor([0.1, 0.7], requires_grad=True)
    v, w = dg.tensor([1.0, 2.0]), dg.tensor([-1.0, 0.5])
    with fwAD.dual_level() as outer, fwAD.dual_level() as inner:
        dual = fwAD.make_dual(fwAD.make_dual(x, v, level=outer), w, level=inner)
        (g,) = dg.grad(dual.exp().sum(), x)
        hw = fwAD.unpack_dual(g, level=inner).tangent
        third = fwAD.unpack_dual(hw, level=outer).tangent
    e = np.exp(x.detach().numpy())
    np.testing.assert_allclose(hw.detach().numpy(), e * w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(third.numpy(), e * v.numpy() * w.numpy(), rtol=1e-12)


def test_in_place_op_on_a_dual_then_forward_over_reverse():
    """``exp_`` saved its result; the recipe reads the value before the write (a private snapshot)."""
    x = dg.tensor([0.3, -0.2], requires_grad=True)
    v = dg.tensor([1.0, 2.0])
    with fwAD.dual_level():
        y = fwAD.make_dual(x, v) * 1.0
        y.exp_()
        (g,) = dg.grad(y.sum(), x)
        hv = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(hv.detach().numpy(), np.exp(x.detach().numpy()) * v.numpy(), rtol=1e-12)


def test_input_changed_in_place_before_forward_over_reverse_raises():
    """The tangent of ``exp(y)`` is recomputed from ``y``: changing ``y`` in place is an error, as in torch."""
    x = dg.tensor([0.3, -0.2], requires_grad=True)
    with fwAD.dual_level():
        y = fwAD.make_dual(x, dg.tensor([1.0, 2.0])) * 1.0
        z = y.exp()
        y.mul_(2.0)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*needed by ExpBackward0"):
            dg.grad(z.sum(), x)
    (g,) = dg.grad(z.sum(), x)  # outside the level no tangent is needed: the saved output suffices
    np.testing.assert_allclose(g.numpy(), np.exp(x.detach().numpy()), rtol=1e-12)


@pytest.mark.parametrize("fn, hessian_diagonal", [
    (lambda t: t.exp(), np.exp),  # saves its output
    (lambda t: t.sin(), lambda x: -np.sin(x)),  # saves its input
], ids=["saved output", "saved input"])
def test_saved_tensor_hooks_keep_tangents(fn, hessian_diagonal):
    """Regression: a tensor packed by hooks came back without tangents (the product was lost)."""
    x = dg.tensor([0.1, 0.2], requires_grad=True)
    v = dg.tensor([1.0, 2.0])
    packed = []
    with fwAD.dual_level():
        with dg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t.detach(), lambda t: t):
            out = fn(fwAD.make_dual(x, v)).sum()
        (g,) = dg.grad(out, x)
        hv = fwAD.unpack_dual(g).tangent
    assert packed
    np.testing.assert_allclose(hv.detach().numpy(), hessian_diagonal(x.detach().numpy()) * v.numpy(), rtol=1e-12)


GRAPH_PARTS = (dg.Tensor, Node, SavedTensor, TangentRecipe, dict, tuple, list)


def _reachable(start) -> list:
    """The graph objects reachable from ``start`` by strong references (through graph objects only)."""
    seen, stack = {id(start): start}, [start]
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) not in seen and isinstance(ref, GRAPH_PARTS):
                seen[id(ref)] = ref
                stack.append(ref)
    return list(seen.values())


def test_the_node_does_not_reach_its_outputs_tangent():
    """Regression: the node held its output's tangent, whose graph holds the node (a reference cycle)."""
    x = dg.tensor([0.1, 0.2], requires_grad=True)
    with fwAD.dual_level():
        y = fwAD.make_dual(x, dg.ones(2)).exp()
        tangent = fwAD.unpack_dual(y).tangent
        assert tangent.grad_fn is not None  # recorded: its graph leads to y's node
        assert not any(obj is tangent for obj in _reachable(y.grad_fn))


def test_unpacked_output_takes_the_live_outputs_tangent_else_recomputes_it():
    x = dg.tensor([0.1, 0.2], requires_grad=True)
    v = dg.tensor([1.0, -3.0])
    with fwAD.dual_level():
        y = fwAD.make_dual(x, v).exp()
        node, tangent = y.grad_fn, fwAD.unpack_dual(y).tangent
        assert fwAD.unpack_dual(node._saved_result).tangent is tangent  # y is alive: nothing recomputed
        del y, tangent
        recomputed = fwAD.unpack_dual(node._saved_result).tangent
    np.testing.assert_allclose(recomputed.detach().numpy(), np.exp([0.1, 0.2]) * v.numpy(), rtol=1e-12)
