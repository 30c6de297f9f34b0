"""The memory shape of a recorded graph: how many objects the cyclic garbage collector tracks per op.

Every object a live graph holds that the collector tracks is walked again at each of its
collections, so a workload that keeps a large graph alive (``out[j] = ...`` into a result
tensor, a long recurrent chain) pays for all of them many times over. A recorded op adds at
most two: its node and, when the node saves an input, that input's Tensor (see "A node's
memory" in the performance guide). Memory still comes back by reference counting alone.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import numpy as np
import pytest
from helpers import gc_disabled

import dualgrad as dg
from dualgrad.reverse.node import Node
from dualgrad.reverse.saved import SavedTensor
from dualgrad.tensor import meta_of


def graph_nodes(t: dg.Tensor) -> set:
    """The nodes of ``t``'s graph."""
    seen: set = set()
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or isinstance(node, dg.Tensor) or node in seen:
            continue
        seen.add(node)
        stack.extend(target for target, _ in node.edges)
    return seen


def tracked_per_op(build: Callable[[], dg.Tensor]) -> float:
    """Growth of ``gc.get_objects()`` per node of the graph ``build`` returns, once the collector has
    run (it untracks tuples that hold only untracked values at its first pass over them). A first,
    unmeasured build makes what is made once per process (caches, lazily built objects)."""
    build()
    with gc_disabled():
        before = len(gc.get_objects())
        out = build()
        gc.collect()
        growth = len(gc.get_objects()) - before
        nodes = len(graph_nodes(out))
        del out
    return growth / nodes


def _leaf(n: int = 4) -> dg.Tensor:
    return dg.tensor(np.linspace(0.5, 1.5, n), requires_grad=True)


N = 300


def test_chain_with_a_number_adds_one_tracked_object_per_op():
    x = _leaf()

    def build() -> dg.Tensor:
        y = x
        for _ in range(N):
            y = y * 1.01
        return y

    assert tracked_per_op(build) <= 1.05


@pytest.mark.parametrize("step", [dg.sin, lambda y: y * y, lambda y: y / (y + 1.0), lambda y: y.exp(), dg.tanh],
                         ids=["sin", "square", "ratio", "exp", "tanh"])
def test_chains_add_at_most_two_tracked_objects_per_op(step):
    x = _leaf()

    def build() -> dg.Tensor:
        y = x
        for _ in range(N // 3):
            y = step(y) * 0.5 + 0.25
        return y

    assert tracked_per_op(build) <= 2.0


def test_chain_with_a_saved_leaf_adds_at_most_two_per_op():
    x, w = _leaf(), _leaf()

    def build() -> dg.Tensor:
        y = x
        for _ in range(N):
            y = y * w
        return y

    assert tracked_per_op(build) <= 2.0


def test_graph_kept_alive_by_indexed_assignment_adds_at_most_two_per_op():
    """The shape of a bundle-adjustment objective: small per-item ops written into a result tensor."""
    x = _leaf()

    def build() -> dg.Tensor:
        out = dg.zeros(N, 2)
        for j in range(N):
            p = x[j % 4] * x[(j + 1) % 4]
            out[j] = dg.stack([p.sin(), p * 2.0])
        return out

    assert tracked_per_op(build) <= 2.0


def test_memory_comes_back_by_reference_counting_alone():
    x = _leaf()
    with gc_disabled():
        out = dg.zeros(50, 2)
        for j in range(50):
            p = (x[j % 4] * x[(j + 1) % 4]).exp()
            out[j] = dg.stack([p.sin(), p * 2.0])
        y = (out * out).sum()
        refs = [weakref.ref(node) for node in graph_nodes(y)]
        del out, y, p
        assert all(r() is None for r in refs)
        assert gc.collect() == 0


def test_backward_through_compact_nodes_matches_the_closed_form():
    x = dg.tensor([0.3, 0.7], requires_grad=True)
    w = dg.tensor([1.5, -2.0], requires_grad=True)
    y = (dg.sin(x) * w + x / w).sum()
    gx, gw = dg.grad(y, (x, w))
    xv, wv = x.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), np.cos(xv) * wv + 1 / wv)
    np.testing.assert_allclose(gw.numpy(), np.sin(xv) - xv / wv ** 2)


# -- a saved input folded into its node ---------------------------------------------------------------------
def test_a_folded_input_reads_as_a_saved_tensor():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    b = dg.tensor([3.0, 4.0], requires_grad=True)
    node = (a * b).grad_fn
    assert node._saved_self is a and node._saved_other is b
    raw = node._raw_saved_self
    assert type(raw) is SavedTensor and node._raw_saved_self is raw  # (the same object from then on)
    assert all(type(s) is SavedTensor for s in node.saved) and len(node.saved) == 2


def test_register_hooks_on_a_folded_input():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    b = dg.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    calls = []
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t.numpy().copy(), lambda p: calls.append(1) or dg.tensor(p))
    y.sum().backward()
    assert calls == [1]
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])


def test_a_folded_input_changed_in_place_raises_torchs_error():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    x = a * 1.0
    y = x.sin()
    x.add_(1.0)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*SinBackward0, is at version 1; "
                                           r"expected version 0"):
        y.sum().backward()


def test_a_folded_input_is_freed_by_backward():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    y = a.sin()
    node = y.grad_fn
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node._saved_self  # noqa: B018 - the read raises
    assert all(s._freed and s._tensor is None for s in node.saved)
    assert node.inputs[0].shape == (2,)  # (shape and dtype stay known after the release)


def test_saved_tensor_hooks_still_see_every_saved_input():
    packed = []
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    with dg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = (a.sin() * a).sum()
    assert len(packed) == 3
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]))


def test_next_functions_and_name_of_compact_nodes():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = 2 * x
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x
    assert y.grad_fn.next_functions[1] == (None, 0)
    z = y.exp()
    assert z.grad_fn.next_functions == ((y.grad_fn, 0),)
    assert isinstance(z.grad_fn, Node)


def test_tensor_metas_are_shared_per_shape_and_dtype():
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    assert meta_of(a) is meta_of(b)
    assert meta_of(a) is not meta_of(a.astype(np.float32))
    assert meta_of(a).shape == (2, 3) and meta_of(a).dtype == np.float64


# -- a saved output folded into its node --------------------------------------------------------------------
@pytest.mark.parametrize("step", [dg.exp, dg.tanh, dg.sigmoid, dg.sqrt], ids=["exp", "tanh", "sigmoid", "sqrt"])
def test_chains_saving_their_output_add_at_most_two_tracked_objects_per_op(step):
    x = _leaf()

    def build() -> dg.Tensor:
        y = x * 0.1
        for _ in range(N):
            y = step(y)
        return y

    assert tracked_per_op(build) <= 2.0


def test_a_folded_output_reads_as_a_saved_tensor():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    node = y.grad_fn
    result = node._saved_result
    np.testing.assert_array_equal(result.detach().numpy(), y.detach().numpy())
    assert result.grad_fn is node and result.requires_grad
    raw = node._raw_saved_result
    assert type(raw) is SavedTensor and node._raw_saved_result is raw and raw._is_output


def test_register_hooks_on_a_folded_output():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    calls = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: t.numpy().copy(), lambda p: calls.append(1) or dg.tensor(p))
    y.sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0]))


def test_a_folded_output_changed_in_place_raises_torchs_error():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[float64 \(2,\)\], needed by "
                                           r"ExpBackward0, is at version 1; expected version 0"):
        y.sum().backward()


def test_a_folded_output_is_freed_by_backward():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.tanh()
    node = y.grad_fn
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 1 - np.tanh([0.5, 1.0]) ** 2)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node._saved_result  # noqa: B018 - the read raises
    assert all(s._freed for s in node.saved)


def test_a_folded_output_under_retain_graph_and_create_graph():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.sigmoid().sum()
    (g1,) = dg.grad(y, a, retain_graph=True, create_graph=True)
    (g2,) = dg.grad(y, a, retain_graph=True)
    s = 1 / (1 + np.exp(-np.array([0.5, 1.0])))
    np.testing.assert_allclose(g1.detach().numpy(), s * (1 - s))
    np.testing.assert_allclose(g2.numpy(), s * (1 - s))
    (h,) = dg.grad(g1.sum(), a)
    np.testing.assert_allclose(h.numpy(), s * (1 - s) * (1 - 2 * s))


# -- a saved output's version counter, made on first need ----------------------------------------------------
def test_a_saved_output_gets_its_version_counter_on_first_need():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    assert y._counter is None and y.grad_fn._oc is None  # (no object until something can change it)
    counter = y._version_counter()
    assert y.grad_fn._oc is counter and y._version == 0


@pytest.mark.parametrize("change", [
    lambda y, node: y[0:1].mul_(2.0),  # through a view
    lambda y, node: y.detach().mul_(2.0),  # through a detached alias (it shares the counter, as torch's)
    lambda y, node: node._saved_result.mul_(2.0),  # the Tensor rebuilt on unpack
    lambda y, node: (node._saved_result, y.mul_(2.0)),  # the output after an unpack
    lambda y, node: (node._raw_saved_result, y.mul_(2.0)),  # the output after its SavedTensor was made
], ids=["view", "detached", "unpacked", "after_unpack", "after_unfold"])
def test_a_saved_output_changed_in_place_in_any_way_raises_torchs_error(change):
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    change(y, y.grad_fn)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*ExpBackward0, is at version 1; "
                                           r"expected version 0"):
        y.sum().backward()


def test_a_saved_output_changed_after_backward_is_its_own_business():
    a = dg.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    y.sum().backward(retain_graph=True)
    y.detach().mul_(2.0)  # (the node still saves it: a second backward sees the change)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0]))


# -- views of views and basic indexes ------------------------------------------------------------------------
def test_views_of_a_view_share_its_view_info_and_rebuild_their_chain():
    base = dg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    x = base * 1.0
    row = x[1]
    a, b = row[1:3], row[0]
    assert a._view._parent is row._view and b._view._parent is row._view and a._view.base is x
    assert [params["index"] for _, params in a._view.chain] == [(1,), (slice(1, 3, None),)]
    x.mul_(2.0)  # (the views' graphs are rebuilt from the base, step by step)
    (a.sum() + b).backward()
    expected = np.zeros((3, 4))
    expected[1, 1:3] = 2.0
    expected[1, 0] = 2.0
    np.testing.assert_array_equal(base.grad.numpy(), expected)


def test_basic_indexes_share_their_params():
    x = dg.tensor(np.arange(6.0), requires_grad=True)
    first, second = x[1:3], x[1:3]
    assert first.grad_fn.params is second.grad_fn.params is first._view._params
    assert x[2].grad_fn.params is x[2].grad_fn.params and x[2].grad_fn.params == {"index": (2,)}
    assert x[1:4].grad_fn.params is not first.grad_fn.params
    assert dg.getitem(x, slice(1, 3)).grad_fn.params is first.grad_fn.params  # (the plain path shares too)
    assert x[True].grad_fn.params is not x[True].grad_fn.params  # (a bool is no int: not shared)


# -- the shapes of the benchmarks' graphs (B1 and B2, small) -------------------------------------------------
def test_a_bundle_adjustment_graph_adds_at_most_two_per_op():
    """B1's ops: views of views of leaves, a three-input stack, saved outputs, ``out[j] = ...``."""
    rng = np.random.default_rng(0)
    cams = dg.tensor(np.concatenate([rng.uniform(-0.3, 0.3, (4, 3)), rng.standard_normal((4, 8))], 1),
                     requires_grad=True)
    points = dg.tensor(rng.standard_normal((5, 3)) + [0.0, 0.0, 10.0], requires_grad=True)

    def cross(a, b):  # noqa: ANN001, ANN202
        return dg.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

    def project(cam, point):  # noqa: ANN001, ANN202 - as benchmarks/b1_bundle_adjustment.py
        rotation, center, focal, principal, radial = cam[0:3], cam[3:6], cam[6], cam[7:9], cam[9:11]
        relative = point - center
        theta = (rotation * rotation).sum().sqrt()
        axis = rotation / theta
        cos, sin = theta.cos(), theta.sin()
        rotated = relative * cos + cross(axis, relative) * sin + axis * (axis * relative).sum() * (1 - cos)
        p = rotated[0:2] / rotated[2]
        r2 = (p * p).sum()
        return p * (1 + radial[0] * r2 + radial[1] * r2 * r2) * focal + principal

    def build() -> dg.Tensor:
        out = dg.zeros(40, 2)
        for j in range(40):
            out[j] = project(cams[j % 4], points[j % 5]) - 0.1
        return out

    assert tracked_per_op(build) <= 2.0


def test_an_lstm_graph_adds_at_most_two_per_op():
    """B2's ops: a row of a constant, vector-matrix products, gate slices, sigmoid and tanh."""
    rng = np.random.default_rng(0)
    hidden = 4
    w, u = (dg.tensor(rng.standard_normal((hidden, 4 * hidden)), requires_grad=True) for _ in range(2))
    text = dg.tensor(np.eye(hidden)[rng.integers(0, hidden, 60)])

    def build() -> dg.Tensor:
        h = c = dg.zeros(hidden)
        total = 0.0
        for t in range(59):
            gates = text[t] @ w + h @ u
            i, f = gates[:hidden].sigmoid(), gates[hidden:2 * hidden].sigmoid()
            o = gates[2 * hidden:3 * hidden].sigmoid()
            c = f * c + i * gates[3 * hidden:].tanh()
            h = o * c.tanh()
            total = total - (h * text[t + 1]).sum() + h.logsumexp(0)
        return total

    assert tracked_per_op(build) <= 2.0
