"""An out-of-place op's output never shares its tangent with an input's (``engine._output_tangent``).

Rules may return an input's tangent as it is (``x + c``: one term with partial 1,
a ``Function``'s jvp, ...). If the output kept that object (or memory), an
in-place op on either tensor would then change the other's tangent too: a
silently wrong derivative. Views are the exception: a view's tangent is a view
of its base's, so that an in-place op on either updates both.
"""

from __future__ import annotations

import numpy as np
import pytest
from dualgrad.autograd.functional import hvp, vhp

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.autograd import Function
from dualgrad.forward_ad import engine
from dualgrad.func import jacfwd

X = np.array([1.0, 2.0, -0.5])
V = np.array([1.0, -2.0, 0.5])
U = np.array([0.25, 3.0, -1.0])  # the tangent of what in-place ops write


class PassTangent(Function):
    """``x`` (a copy, or ``x`` itself if ``share``) whose jvp returns the input tangent itself, or a
    view of it (``as_view``)."""

    @staticmethod
    def forward(ctx, x, share, as_view=False):
        ctx.as_view = as_view
        return x if share else x.clone()

    @staticmethod
    def backward(ctx, g):
        return g, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return t[:] if ctx.as_view else t


PRODUCERS = {  # each returns a tensor equal to y, with y's tangent
    "y + c": lambda y: y + 0.0,
    "view of y + c": lambda y: y[:] + 0.0,
    "c + y": lambda y: 0.0 + y,
    "y - c": lambda y: y - 0.0,
    "y + tensor without tangent": lambda y: y + dg.zeros(3),
    "tensor without tangent + y": lambda y: dg.zeros(3) + y,
    "add(y, c)": lambda y: dg.add(y, 0.0),
    "Function jvp returning its input tangent": lambda y: PassTangent.apply(y, False),
    "Function jvp returning a view of its input tangent": lambda y: PassTangent.apply(y, False, True),
    "clone": lambda y: y.clone(),
    "to float32 and back": lambda y: y.to("float32").to("float64"),
    "astype": lambda y: y.astype("float64"),
    "where": lambda y: dg.where(dg.tensor([True, True, True]), y, 0.0),
}


def _write(name, target, other):
    """Apply in-place op ``name`` to ``target``; ``other`` is a dual tensor with tangent U. Returns the new
    tangent of ``target`` given its old one (a NumPy function)."""
    if name == "mul_":
        target.mul_(3.0)
        return lambda t: 3.0 * t
    if name == "add_":
        target.add_(other)
        return lambda t: t + U
    if name == "copy_":
        target.copy_(other)
        return lambda t: U
    if name == "setitem":
        target[1] = other[1]
        return lambda t: np.where(np.arange(3) == 1, U, t)
    if name == "iadd":
        target += other
        return lambda t: t + U
    raise AssertionError(name)


def _tangent(x):
    return fwAD.unpack_dual(x).tangent.numpy()


@pytest.mark.parametrize("write", ["mul_", "add_", "copy_", "setitem", "iadd"])
@pytest.mark.parametrize("written", ["input", "output"])
@pytest.mark.parametrize("produce", list(PRODUCERS), ids=list(PRODUCERS))
def test_in_place_on_one_leaves_the_others_tangent(produce, written, write):
    with fwAD.dual_level():
        y = fwAD.make_dual(dg.tensor(X), dg.tensor(V)) * 1.5
        w = PRODUCERS[produce](y)
        other = fwAD.make_dual(dg.tensor(X + 1.0), dg.tensor(U))
        target, untouched = (y, w) if written == "input" else (w, y)
        new_tangent = _write(write, target, other)
        np.testing.assert_allclose(_tangent(untouched), 1.5 * V)
        np.testing.assert_allclose(_tangent(target), new_tangent(1.5 * V))


@pytest.mark.parametrize("written", ["base", "view"])
@pytest.mark.parametrize("make_view", [lambda y: y[1:], lambda y: y.reshape(3), lambda y: y.view(3, 1)[:, 0]],
                         ids=["slice", "reshape", "view"])
def test_views_still_share_their_bases_tangent(make_view, written):
    with fwAD.dual_level():
        y = fwAD.make_dual(dg.tensor(X), dg.tensor(V)) * 1.5
        view = make_view(y)
        n = view.shape[0]
        assert np.may_share_memory(fwAD.unpack_dual(view).tangent.numpy(), fwAD.unpack_dual(y).tangent.numpy())
        (y if written == "base" else view).mul_(3.0)
        np.testing.assert_allclose(_tangent(y), (4.5 if written == "base" else np.where(np.arange(3) < 3 - n, 1.5,
                                                                                        4.5)) * V)
        np.testing.assert_allclose(_tangent(view), 4.5 * V[3 - n:])


def test_real_of_a_real_tensor_shares_primal_and_tangent():
    """``real`` returns its real input's memory: an in-place op on it changes both primals, so both tangents."""
    with fwAD.dual_level():
        y = fwAD.make_dual(dg.tensor(X), dg.tensor(V)) * 1.5
        r = y.real
        r.mul_(3.0)
        np.testing.assert_allclose(fwAD.unpack_dual(y).primal.numpy(), 4.5 * X)
        np.testing.assert_allclose(_tangent(y), 4.5 * V)
        np.testing.assert_allclose(_tangent(r), 4.5 * V)


def test_function_returning_its_input_shares_its_tangent():
    """A Function's output that is its input (an alias of its memory) keeps the input's tangent."""
    with fwAD.dual_level():
        y = fwAD.make_dual(dg.tensor(X), dg.tensor(V)) * 1.5
        w = PassTangent.apply(y, True)
        w.mul_(3.0)
        np.testing.assert_allclose(fwAD.unpack_dual(y).primal.numpy(), 4.5 * X)
        np.testing.assert_allclose(_tangent(y), 4.5 * V)


def _alias_then_scale(x):
    """``x * x`` computed through a tensor whose tangent an in-place op on another could corrupt."""
    y = x * x
    w = y + 0.0
    y.mul_(3.0)
    return w + y  # 4 x**2


def test_forward_over_forward():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor(X), dg.tensor(V))
        with fwAD.dual_level():
            x_inner = fwAD.make_dual(x, dg.tensor(U))
            y = x_inner * x_inner
            w = y + 0.0
            y.mul_(3.0)
            inner = fwAD.unpack_dual(w).tangent  # 2 x u, whose outer tangent is 2 v u
        np.testing.assert_allclose(fwAD.unpack_dual(inner).primal.numpy(), 2 * X * U)
        np.testing.assert_allclose(_tangent(inner), 2 * V * U)
        np.testing.assert_allclose(_tangent(w), 2 * X * V)


def test_jacfwd_of_a_function_writing_in_place():
    np.testing.assert_allclose(jacfwd(_alias_then_scale)(dg.tensor(X)).numpy(), np.diag(8 * X))


def _squares_after_write(x):
    y = dg.sin(x)
    w = y + 0.0
    y.mul_(3.0)
    return (w * w).sum()  # sum(sin(x)**2): its Hessian is diag(2 cos 2x)


@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_against_vhp_and_finite_differences(create_graph):
    _, product = hvp(_squares_after_write, dg.tensor(X), dg.tensor(V), create_graph=create_graph)
    _, reverse = vhp(_squares_after_write, dg.tensor(X), dg.tensor(V))
    eps = 1e-6
    fd = (np.sin(2 * (X + eps * V)) - np.sin(2 * (X - eps * V))) / (2 * eps)
    product = product.detach()
    np.testing.assert_allclose(product.numpy(), 2 * np.cos(2 * X) * V, rtol=1e-12)
    np.testing.assert_allclose(product.numpy(), reverse.numpy(), rtol=1e-12)
    np.testing.assert_allclose(product.numpy(), fd, rtol=1e-6)


def test_hvp_writing_the_output_in_place():
    def f(x):
        y = dg.sin(x)
        w = y + 0.0
        w.mul_(3.0)
        return (y * w).sum()  # 3 sum(sin(x)**2)

    _, product = hvp(f, dg.tensor(X), dg.tensor(V))
    np.testing.assert_allclose(product.numpy(), 6 * np.cos(2 * X) * V, rtol=1e-12)


@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_writing_a_view_in_place(create_graph):
    """A view's (deferred) tangent stays a view of its base's: the write reaches the base's tangent."""
    def f(x):
        y = dg.sin(x)
        y.reshape(3, 1).mul_(3.0)
        return (y * y).sum()  # 9 sum(sin(x)**2)

    _, product = hvp(f, dg.tensor(X), dg.tensor(V), create_graph=create_graph)
    np.testing.assert_allclose(product.detach().numpy(), 18 * np.cos(2 * X) * V, rtol=1e-12)


def test_the_overlap_test_never_misses_shared_memory():
    """``_may_overlap`` skips ``np.may_share_memory`` only when array ownership answers for it."""
    a, b = np.zeros(6), np.zeros(6)
    arrays = [a, b, a[1:], a[::2], a.reshape(2, 3), a.reshape(2, 3)[1], b[:3], np.frombuffer(a),
              np.asarray(memoryview(a)), np.frombuffer(a)[2:], np.broadcast_to(b[0], (3,))]
    for x in arrays:
        for y in arrays:
            assert engine._may_overlap(x, y) == np.may_share_memory(x, y)


def test_tangent_of_a_product_with_a_broadcast_input_tangent_is_writable():
    # (the derived jvp multiplies a number partial by NumPy directly: a stride-0 input tangent
    # must still give a dense, writable output tangent, as torch's)
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1., 2., 3.]), dg.tensor(1.0).expand(3))
        tangent = fwAD.unpack_dual(x * 2.0).tangent
        tangent.add_(1.0)
    np.testing.assert_array_equal(tangent.numpy(), [3., 3., 3.])


def test_scalar_chain_gives_each_step_its_own_exact_tangent():
    # (WF1's chain on 0-d tensors: ``+ 0.1``'s rule returns its input's tangent, which
    # ``_output_tangent`` copies on its fast path; the chain rule gives prod(1.01 cos(y_i)))
    ys, expected = [0.3], 1.0
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(ys[0]), dg.tensor(1.0))]
        for _ in range(4):
            duals.append(dg.sin(duals[-1]) * 1.01 + 0.1)
            expected *= 1.01 * np.cos(ys[-1])
            ys.append(np.sin(ys[-1]) * 1.01 + 0.1)
        tangents = [fwAD.unpack_dual(y).tangent for y in duals]
    np.testing.assert_allclose(duals[-1].detach().numpy(), ys[-1], rtol=1e-15)
    assert abs(tangents[-1].item() - expected) <= 1e-15
    arrays = [t.numpy() for t in tangents]
    assert not any(np.may_share_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])
