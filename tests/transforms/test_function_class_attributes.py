"""``autograd.Function``'s class attributes of torch 2.13: ``clear_saved_tensors_on_access`` and
``boxed_grads_call`` (semantics and errors as torch's, checked against torch when it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD

SECOND_ACCESS = "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True"


def _libraries():
    libraries = [dg]
    try:
        import torch
    except ImportError:
        return libraries
    return [*libraries, torch]


LIBRARIES = _libraries()
IDS = [lib.__name__ for lib in LIBRARIES]


def _mul(T, **attributes):
    """``x * y`` as a Function saving both inputs, with the class ``attributes``."""

    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward), **attributes}
    return type("Mul", (T.autograd.Function,), namespace)


def _inputs(T):
    return (T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True),
            T.tensor([3.0, -4.0], dtype=T.float64, requires_grad=True))


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_clear_saved_tensors_on_access_allows_one_read(T):
    x, y = _inputs(T)
    out = _mul(T, clear_saved_tensors_on_access=True).apply(x, y)
    gx, gy = T.autograd.grad(out.sum(), (x, y), retain_graph=True)
    assert gx.tolist() == [3.0, -4.0] and gy.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match=SECOND_ACCESS):
        T.autograd.grad(out.sum(), (x, y))  # (backward reads them a second time)
    with pytest.raises(RuntimeError, match=SECOND_ACCESS):
        _ = out.grad_fn.saved_tensors


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_reading_through_the_node_counts_as_the_read(T):
    x, y = _inputs(T)
    out = _mul(T, clear_saved_tensors_on_access=True).apply(x, y)
    saved = out.grad_fn.saved_tensors
    assert [t.tolist() for t in saved] == [[1.0, 2.0], [3.0, -4.0]]
    with pytest.raises(RuntimeError, match=SECOND_ACCESS):
        out.sum().backward()


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_a_second_read_inside_backward_raises_even_with_nothing_saved(T):
    class Twice(T.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            assert ctx.saved_tensors == ()
            _ = ctx.saved_tensors
            return g * 2

    with pytest.raises(RuntimeError, match=SECOND_ACCESS):
        Twice.apply(T.ones(2, requires_grad=True)).sum().backward()


def test_the_read_lets_go_of_the_saved_values():
    x, y = _inputs(dg)
    out = _mul(dg, clear_saved_tensors_on_access=True).apply(x * 1, y * 1)
    values = out.grad_fn.saved_tensors
    assert len(out.grad_fn.saved) == 2 and all(saved._freed for saved in out.grad_fn.saved)
    assert [v.tolist() for v in values] == [[1.0, 2.0], [3.0, -4.0]]  # (held by the caller only)


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_clearing_does_not_apply_to_jvp_and_keeps_second_order(T):
    class Square(T.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            (x,) = ctx.saved_tensors  # (jvp's reads are not limited, as in torch)
            return 2 * x * t

    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [2.0, 4.0]
    assert T.autograd.grad(g.sum(), x)[0].tolist() == [2.0, 2.0]
    fw = fwAD if T is dg else T.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(T.tensor([1.0, 2.0], dtype=T.float64), T.tensor([1.0, 1.0], dtype=T.float64))
        assert fw.unpack_dual(Square.apply(d)).tangent.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_clearing_with_saved_tensor_hooks_unpacks_once(T):
    events = []
    x, y = _inputs(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: (events.append("pack"), t)[1],
                                              lambda t: (events.append("unpack"), t)[1]):
        out = _mul(T, clear_saved_tensors_on_access=True).apply(x, y)
    out.sum().backward()
    assert events == ["pack", "pack", "unpack", "unpack"]


class _Record:
    seen: list = []


def _two_outputs(T, materialize=True):
    class Pair(T.autograd.Function):
        boxed_grads_call = True

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grads):
            _Record.seen.append((type(grads).__name__, [None if g is None else g.tolist() for g in grads]))
            g0, g1 = grads
            grads.clear()  # (the list is backward's own: it may let go of the gradients)
            total = 0
            if g0 is not None:
                total = total + g0 * 2
            if g1 is not None:
                total = total + g1 * 3
            return total

    return Pair


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
def test_boxed_grads_call_gives_backward_one_list(T):
    _Record.seen = []
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    u, v = _two_outputs(T).apply(x)
    (g,) = T.autograd.grad(u.sum() + (v * T.tensor([1.0, 2.0], dtype=T.float64)).sum(), x)
    assert g.tolist() == [5.0, 8.0]
    assert _Record.seen == [("list", [[1.0, 1.0], [1.0, 2.0]])]
    u, v = _two_outputs(T, materialize=False).apply(x)
    (g,) = T.autograd.grad(v.sum(), x)
    assert g.tolist() == [3.0, 3.0] and _Record.seen[-1] == ("list", [None, [1.0, 1.0]])
    u, v = _two_outputs(T).apply(x)
    assert u.grad_fn.apply(T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64)).tolist() == [5.0, 5.0]
    assert _Record.seen[-1] == ("list", [[1.0, 1.0], [1.0, 1.0]])


def test_boxed_grads_call_with_non_uniform_gradients_is_right():
    # (a backward written for one list, called unboxed, would index the first gradient instead)
    _Record.seen = []
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    u, v = _two_outputs(dg).apply(x)
    (g,) = dg.autograd.grad((u * dg.tensor([1.0, -1.0, 2.0])).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, -2.0, 4.0])


def test_boxed_grads_call_under_vmap_and_once_differentiable():
    class Double(dg.autograd.Function):
        boxed_grads_call = True
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grads):
            return grads[0] * 2

    w = dg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    per_row = dg.func.vmap(dg.func.grad(lambda x: (Double.apply(x) * x).sum()))(w)
    np.testing.assert_array_equal(per_row.numpy(), 4 * w.numpy())  # (torch 2.13 raises here)

    class Once(dg.autograd.Function):
        boxed_grads_call = True

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @dg.autograd.function.once_differentiable
        def backward(ctx, grads):
            return grads.pop() * 2

    x = dg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = dg.autograd.grad(Once.apply(x).sum(), x)
    assert g.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("T", LIBRARIES, ids=IDS)
@pytest.mark.parametrize("name, value, type_name", [
    ("clear_saved_tensors_on_access", 1, "int"),
    ("boxed_grads_call", "yes", "str"),
    ("boxed_grads_call", None, "NoneType"),
])
def test_class_attributes_must_be_bools(T, name, value, type_name):
    F = _mul(T, **{name: value})
    x, y = _inputs(T)
    with pytest.raises(RuntimeError, match=f"{name} must be a bool, got {type_name}"):
        F.apply(x, y)
    with T.no_grad(), pytest.raises(RuntimeError, match=f"{name} must be a bool, got {type_name}"):
        F.apply(x, y)


def test_defaults_are_torchs():
    assert dg.autograd.Function.clear_saved_tensors_on_access is False
    assert dg.autograd.Function.boxed_grads_call is False
