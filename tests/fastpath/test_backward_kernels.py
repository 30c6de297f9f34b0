"""The ops of tanh's and sigmoid's reverse rules, and rules that compute by NumPy directly.

``tanh_backward`` and ``sigmoid_backward`` (torch's ``aten`` ops of the same names) take
the product of a gradient and the conjugate of the function's slope with one new array
(none when the backward engine holds the only reference to the gradient: the product
goes into its memory); a graph of second order shows them as TanhBackwardBackward0 and
SigmoidBackwardBackward0, as torch's, for real and complex dtypes. matmul's, sum's and
mean's rules, when no mode can see them (no graph, tangent or observer), call NumPy on the
arrays directly. The values here are torch 2.13's."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.ops.elementwise.core import sigmoid_backward, tanh_backward
from dualgrad.profiler import profile

X = [0.3, -1.2, 2.0]
Z = [0.3 + 0.2j, -0.5 + 1.1j]
# (function, its gradient at X, the gradient of that gradient's sum, torch's node of the gradient)
SECOND_ORDER = [
    (dg.tanh, [0.9151369618266292, 0.30501999620740905, 0.07065082485316443],
     [-0.5331818782014544, 0.5085626501382733, -0.13621868742711296], "TanhBackwardBackward0"),
    (dg.sigmoid, [0.24445831169074586, 0.1778944406468057, 0.10499358540350662],
     [-0.03639618395557626, 0.0955381323207247, -0.07996250105615312], "SigmoidBackwardBackward0"),
]
# (function, the gradient of |f(Z)|.sum(), the gradient of that gradient's |.|.sum())
COMPLEX = [
    (dg.tanh, [0.7459969938208253 + 0.5872874489956589j, 1.0158283924028084 + 1.832430640768225j],
     [-0.5738910385276503 + 0.35102872764044324j, 5.158791698469153 + 3.5490642443397964j]),
    (dg.sigmoid, [0.24523538281125615 + 0.02831145317350706j, 0.2911322797804478 + 0.12341582268386911j],
     [-0.037116109644023586 + 0.024214585442642118j, 0.10420808643443391 + 0.17822270250600084j]),
]


@pytest.mark.parametrize(("fn", "first", "second", "name"), SECOND_ORDER)
def test_second_order_graph_is_torchs(fn, first, second, name):
    x = dg.tensor(X, requires_grad=True)
    out = fn(x)
    (g,) = dg.grad(out.sum(), x, create_graph=True)
    node = g.grad_fn
    assert node.name() == name
    assert node.next_functions[0] == (None, 0) and node.next_functions[1][0] is out.grad_fn
    np.testing.assert_array_equal(node._saved_grad_output.numpy(), np.ones(3))
    assert node._saved_output.grad_fn is out.grad_fn
    np.testing.assert_allclose(g.detach().numpy(), first, rtol=1e-14)
    np.testing.assert_allclose(dg.grad(g.sum(), x)[0].numpy(), second, rtol=1e-13)


@pytest.mark.parametrize(("fn", "first", "second"), COMPLEX)
def test_complex_gradients_keep_the_conjugate(fn, first, second):
    z = dg.tensor(Z, requires_grad=True)
    (g,) = dg.grad(fn(z).abs().sum(), z, create_graph=True)
    assert g.grad_fn.name() == f"{fn.__name__.capitalize()}BackwardBackward0"
    np.testing.assert_allclose(g.detach().numpy(), first, rtol=1e-14)
    np.testing.assert_allclose(dg.grad(g.abs().sum(), z)[0].numpy(), second, rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_tangents_are_the_holomorphic_slope(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(4) + (1j * rng.standard_normal(4) if dtype is np.complex128 else 0)).astype(dtype)
    t = np.ones(4, dtype)
    for fn, slope in [(dg.tanh, lambda y: 1 - y * y), (dg.sigmoid, lambda y: y * (1 - y))]:
        out, tangent = dg.func.jvp(fn, (dg.tensor(x),), (dg.tensor(t),))
        assert tangent.dtype == dtype
        np.testing.assert_allclose(tangent.numpy(), t * slope(out.numpy()), rtol=1e-6)


@pytest.mark.parametrize(("op", "slope"), [(tanh_backward, lambda y: 1 - y * y),
                                           (sigmoid_backward, lambda y: y * (1 - y))])
@pytest.mark.parametrize(("g_shape", "y_shape"), [((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), (3,)),
                                                  ((), ()), ((2, 1), (1, 3))])
def test_kernels_equal_their_formula_and_leave_their_inputs(op, slope, g_shape, y_shape):
    rng = np.random.default_rng(1)
    g, y = rng.standard_normal(g_shape), rng.uniform(0, 1, y_shape)
    g_copy, y_copy = g.copy(), y.copy()
    got = op(dg.tensor(g), dg.tensor(y))
    np.testing.assert_array_equal(got.numpy(), slope(y) * g)
    np.testing.assert_array_equal(g, g_copy)
    np.testing.assert_array_equal(y, y_copy)


@pytest.mark.parametrize("op", [tanh_backward, sigmoid_backward])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_kernels_rules_pass_gradcheck_in_both_modes(op, dtype):
    """The ops' own rules (real and complex: the product is antiholomorphic in the output)."""
    rng = np.random.default_rng(3)

    def leaf():
        values = rng.standard_normal(3) + (1j * rng.standard_normal(3) if dtype is np.complex128 else 0)
        return dg.tensor((0.5 * values).astype(dtype), requires_grad=True)

    inputs = (leaf(), leaf())
    assert dg.autograd.gradcheck(op, inputs, check_forward_ad=True)
    assert dg.autograd.gradgradcheck(op, inputs)


@pytest.mark.parametrize("op", [tanh_backward, sigmoid_backward])
def test_kernels_promote_as_torch(op):
    y = dg.tensor([0.5, 0.25], dtype=dg.float32)
    assert op(dg.tensor([2.0, 1.0], dtype=dg.float64), y).dtype == dg.float64
    assert op(dg.tensor([2.0, 1.0], dtype=dg.float32), y).dtype == dg.float32
    assert op(2.0, y).dtype == dg.float32


def _mlp_grads(x, ws, **kwargs):
    loss = ((x @ ws[0]).tanh() @ ws[1]).sigmoid().sum()
    return dg.grad(loss, ws, **kwargs)


def _mlp_data(dtype_x=np.float64):
    rng = np.random.default_rng(2)
    x = dg.tensor(rng.standard_normal((5, 4)).astype(dtype_x))
    ws = [dg.tensor(rng.standard_normal(s), requires_grad=True) for s in [(4, 3), (3, 2)]]
    return x, ws


def test_matmul_rules_without_a_graph_equal_the_recorded_ones():
    x, ws = _mlp_data()
    plain = _mlp_grads(x, ws)
    recorded = _mlp_grads(x, ws, create_graph=True)
    with profile() as prof:
        observed = _mlp_grads(x, ws)
    # an observer sees every op: two products forward, three backward (x needs no gradient)
    assert {e.key: e.count for e in prof.key_averages()}["matmul"] == 5
    for a, b, c in zip(plain, recorded, observed, strict=True):
        assert a.grad_fn is None and b.grad_fn is not None
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())


def test_matmul_rules_with_mixed_dtypes_and_tangents():
    x, (w, w2) = _mlp_data(np.float32)
    assert [g.dtype for g in _mlp_grads(x, [w, w2])] == [dg.float64, dg.float64]

    def loss(w):
        return ((x @ w).tanh() @ w2.detach()).sigmoid().sum()

    # forward over reverse: the rules see tangents, so NumPy's shortcut must not be taken
    w, v, step = w.detach(), dg.ones(4, 3), 1e-6
    _, hvp = dg.func.jvp(dg.func.grad(loss), (w,), (v,))
    fd = (dg.func.grad(loss)(w + step * v) - dg.func.grad(loss)(w - step * v)) / (2 * step)
    np.testing.assert_allclose(hvp.numpy(), fd.numpy(), rtol=1e-5, atol=1e-7)



@pytest.fixture
def kernel_calls(monkeypatch):
    """The calls of tanh_backward's and sigmoid_backward's kernels, by op name."""
    from dualgrad.ops.elementwise import core as elementwise

    calls = []
    for op in (elementwise.TANH_BACKWARD, elementwise.SIGMOID_BACKWARD):
        def spy(g, y, impl=op.impl, name=op.name):
            calls.append(name)
            return impl(g, y)
        monkeypatch.setattr(op, "impl", spy)
    return calls


@pytest.mark.fastpath
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_rules_write_into_a_gradient_only_the_engine_holds(kernel_calls, dtype):
    """W2's layers: the gradient a product made takes tanh's and sigmoid's slope in its own
    memory (no kernel call), with the kernel's bits; an observer sees the kernels."""
    rng = np.random.default_rng(4)
    x = dg.tensor(rng.standard_normal((5, 4)).astype(dtype))
    ws = [dg.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in [(4, 3), (3, 2)]]

    def grads():
        return dg.grad(((x @ ws[0]).tanh() @ ws[1]).sigmoid().abs().sum(), ws)

    fast = grads()
    assert kernel_calls == []
    with profile():
        observed = grads()
    assert sorted(kernel_calls) == ["sigmoid_backward", "tanh_backward"]
    recorded = dg.grad(((x @ ws[0]).tanh() @ ws[1]).sigmoid().abs().sum(), ws, create_graph=True)
    for a, b, c in zip(fast, observed, recorded, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.detach().numpy())


@pytest.mark.fastpath
@pytest.mark.parametrize("fn", [dg.tanh, dg.sigmoid])
def test_rules_leave_gradients_others_hold(kernel_calls, fn):
    """A gradient the user passed, a hook kept or a retained ``.grad`` is never written into."""
    x = dg.tensor([0.3, -1.2, 2.0], requires_grad=True)
    expected = dg.grad(fn(x), x, dg.tensor([1.0, 2.0, 3.0]))[0].numpy()
    v = dg.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(dg.grad(fn(x), x, v)[0].numpy(), expected)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])

    kept = []
    y = fn(x)
    y.register_hook(kept.append)
    (y * dg.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), expected)

    assert len(kernel_calls) == 3  # (each gradient above was held by a caller or a hook)

    y = fn(x)
    y.retain_grad()  # (a copy: the engine's gradient stays its own, and takes the slope in place)
    (y * dg.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), 2 * expected)
    assert len(kernel_calls) == 3


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize(("shape", "dim", "keepdim"), [((), None, False), ((3, 4), None, False),
                                                       ((3, 4), 1, False), ((3, 4), (0,), True),
                                                       ((2, 1, 3), (0, 2), False), ((2, 3), 0, True)])
def test_reduction_rules_without_a_graph_equal_the_recorded_ones(reduce, shape, dim, keepdim):
    """sum's and mean's rules broadcast the gradient by NumPy directly when no mode can see it."""
    x = dg.tensor(np.random.default_rng(5).standard_normal(shape), requires_grad=True)

    def gradient(**kwargs):
        y = getattr(x * 1.5, reduce)() if dim is None else getattr(x * 1.5, reduce)(dim, keepdim=keepdim)
        return dg.grad((y * y).sum(), x, **kwargs)[0]

    plain = gradient()
    recorded = gradient(create_graph=True)
    with profile():
        observed = gradient()
    assert plain.grad_fn is None and recorded.grad_fn is not None
    assert plain._data.flags.writeable  # (dense, as torch returns it)
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    np.testing.assert_array_equal(plain.numpy(), observed.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_square_of_a_reduced_gradient_equals_the_recorded_rule(dtype, reduce):
    """``x ** 2`` under a sum or mean (W2's loss): 2g, one value, times x by NumPy directly."""
    x = dg.tensor(np.random.default_rng(6).standard_normal((4, 3)).astype(dtype), requires_grad=True)

    def gradient(**kwargs):
        return dg.grad(getattr((x - 0.5) ** 2, reduce)(), x, **kwargs)[0]

    plain, recorded = gradient(), gradient(create_graph=True)
    assert plain.dtype == dtype and plain._data.flags.writeable
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    scale = 2.0 if reduce == "sum" else 2.0 / 12
    np.testing.assert_allclose(plain.numpy(), scale * (x.detach().numpy() - 0.5), rtol=1e-6)
