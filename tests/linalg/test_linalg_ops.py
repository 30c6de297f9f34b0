"""Linear-algebra ops: matmul, dot, inner, outer, tensordot, trace, einsum.

Values against NumPy; reverse rules against central differences (the identity
``<u, J v> == <J^T u, v>``), complex gradients against the conjugate-Wirtinger
convention (``z.grad == dL/da + 1j dL/db`` for a real loss), forward rules
against central differences, batching rules against a loop over the batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, directional_fd, vdot
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.ops import einsum as einsum_module
from dualgrad.ops.einsum import EINSUM, parse
from dualgrad.ops.linalg.products import MATMUL


def _check_vjp(call, arrays, seed: int) -> None:
    """Reverse rule of ``call`` at ``arrays`` against central differences."""
    rng = np.random.default_rng(seed)
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    out = call(*xs)
    u = rng.standard_normal(out.shape)
    vs = [rng.standard_normal(np.shape(a)) for a in arrays]
    grads = dg.grad(out, xs, dg.tensor(u), allow_unused=True, materialize_grads=True)
    for x, g in zip(xs, grads, strict=True):
        assert g.shape == x.shape and g.dtype == x.dtype
    expected = vdot([u], directional_fd(call, arrays, vs))
    assert_close(vdot(grads, vs), expected, rtol=1e-6, atol=1e-7, what="<J^T u, v>")


def _real_loss(call, u):
    """L(z) = sum Re(conj(u) * f(z)), a real function of complex inputs."""
    return lambda *zs: (call(*zs) * dg.tensor(np.conj(u))).real.sum()


def _check_complex_vjp(call, arrays, seed: int, eps: float = 1e-6) -> None:
    """``z.grad == dL/da + 1j dL/db`` for each complex input z = a + ib."""
    rng = np.random.default_rng(seed)
    zs = [dg.tensor(a, requires_grad=True) for a in arrays]
    with dg.no_grad():
        out_shape = call(*[dg.tensor(a) for a in arrays]).shape
    u = rng.standard_normal(out_shape) + 1j * rng.standard_normal(out_shape)
    loss = _real_loss(call, u)
    grads = dg.grad(loss(*zs), zs)
    for k, g in enumerate(grads):
        v = rng.standard_normal(np.shape(arrays[k]))
        for unit, part in ((1.0, g.numpy().real), (1j, g.numpy().imag)):
            def shifted(step, unit=unit, v=v, k=k):
                moved = [a + step * unit * v if j == k else a for j, a in enumerate(arrays)]
                with dg.no_grad():
                    return loss(*[dg.tensor(m) for m in moved]).item()
            fd = (shifted(eps) - shifted(-eps)) / (2 * eps)
            assert_close(float(np.sum(part * v)), fd, rtol=1e-6, atol=1e-7, what=f"complex grad {unit}")


def _batched(rng, shape: tuple, size: int, bdim: int | None):
    """A physical array with a batch of ``size`` at ``bdim`` (None: one unbatched array) and its members."""
    if bdim is None:
        x = rng.standard_normal(shape)
        return x, [x] * size
    members = [rng.standard_normal(shape) for _ in range(size)]
    return np.stack(members, axis=bdim), members


# -- matmul ------------------------------------------------------------------------------------------
@st.composite
def matmul_shapes(draw):
    n, k, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    left_batch = draw(st.sampled_from([(), (2,), (1,), (3, 2), (3, 1)]))
    right_batch = draw(st.sampled_from([(), (2,), (1,), (1, 2)]))
    left = draw(st.sampled_from([(k,), left_batch + (n, k)]))
    right = draw(st.sampled_from([(k,), right_batch + (k, m)]))
    return left, right


@given(matmul_shapes(), st.integers(0, 2**32 - 1))
def test_matmul_values_and_gradient(shapes, seed):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(s) for s in shapes)
    np.testing.assert_allclose((dg.tensor(x) @ dg.tensor(y)).numpy(), x @ y)
    _check_vjp(dg.matmul, [x, y], seed)


@given(matmul_shapes(), st.integers(0, 2**32 - 1))
def test_matmul_complex_gradient_is_conjugate_wirtinger(shapes, seed):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes)
    _check_complex_vjp(dg.matmul, [x, y], seed)


@given(matmul_shapes(), st.integers(0, 2**32 - 1))
def test_matmul_jvp_matches_finite_differences(shapes, seed):
    rng = np.random.default_rng(seed)
    x, y, tx, ty = (rng.standard_normal(s) for s in shapes + shapes)
    out = MATMUL.jvp((dg.tensor(tx), dg.tensor(ty)), None, dg.tensor(x), dg.tensor(y))
    (fd,) = directional_fd(dg.matmul, [x, y], [tx, ty])
    np.testing.assert_allclose(out.numpy(), fd, atol=1e-7)
    only_y = MATMUL.jvp((None, dg.tensor(ty)), None, dg.tensor(x), dg.tensor(y))
    np.testing.assert_allclose(only_y.numpy(), x @ ty, atol=1e-12)


@given(st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 3]), st.sampled_from(["both", "x", "y"]),
       st.integers(1, 3), st.data())
def test_matmul_batching_rule_matches_a_loop(x_rank, y_rank, batched, size, data):
    rng = np.random.default_rng(3)
    x_shape = ((2,) * (x_rank - 2) + (3, 4)) if x_rank >= 2 else (4,)
    y_shape = ((2,) * (y_rank - 2) + (4, 5)) if y_rank >= 2 else (4,)
    bx = data.draw(st.integers(0, x_rank)) if batched != "y" else None
    by = data.draw(st.integers(0, y_rank)) if batched != "x" else None
    x, xs = _batched(rng, x_shape, size, bx)
    y, ys = _batched(rng, y_shape, size, by)
    out, out_bdim = MATMUL.batch((dg.tensor(x), dg.tensor(y)), (bx, by))
    expected = np.stack([a @ b for a, b in zip(xs, ys, strict=True)])
    np.testing.assert_allclose(np.moveaxis(out.numpy(), out_bdim, 0), expected)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))], ids=str)
@pytest.mark.parametrize("constant", [0, 1], ids=["ndarray_left", "ndarray_right"])
@pytest.mark.parametrize("call", [dg.matmul, lambda a, b: a @ b], ids=["matmul", "operator"])
def test_matmul_with_a_plain_ndarray_operand(shapes, constant, call):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in shapes]
    fixed, free = arrays[constant], 1 - constant

    def with_constant(t):
        return call(fixed, t) if constant == 0 else call(t, fixed)

    _check_vjp(with_constant, [arrays[free]], seed=5)
    direction = rng.standard_normal(shapes[free])
    with fwAD.dual_level():
        out = with_constant(fwAD.make_dual(dg.tensor(arrays[free]), dg.tensor(direction)))
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(tangent.numpy(), with_constant(dg.tensor(direction)).numpy(), atol=1e-12)


def test_matmul_shape_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(4, 2\)"):
        dg.ones(2, 3) @ dg.ones(4, 2)
    with pytest.raises(RuntimeError, match=r"at least 1 dimension.*\(\) and \(3,\)"):
        dg.matmul(dg.tensor(1.), dg.ones(3))


# -- dot, inner, outer, tensordot, trace ------------------------------------------------------------
PRODUCTS = [
    (dg.dot, np.dot, [(3,), (3,)]), (dg.dot, np.dot, [(2, 3), (3,)]), (dg.dot, np.dot, [(2, 3), (3, 2)]),
    (dg.dot, np.dot, [(2, 3), (2, 3, 4)]), (dg.dot, np.dot, [(), (3,)]),
    (dg.inner, np.inner, [(3,), (3,)]), (dg.inner, np.inner, [(2, 3), (4, 3)]),
    (dg.inner, np.inner, [(2,), ()]),
    (dg.outer, np.outer, [(3,), (2,)]), (dg.outer, np.outer, [(2, 2), (3,)]),
    (lambda a, b: dg.tensordot(a, b, dims=([1, 2], [1, 0])),
     lambda a, b: np.tensordot(a, b, ([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 2)]),
    (lambda a, b: dg.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1), [(2, 3), (3, 4)]),
    (lambda a, b: dg.tensordot(a, b, axes=0), lambda a, b: np.tensordot(a, b, 0), [(2,), (3,)]),
    (lambda a, b: dg.tensordot(a, b, ([-1], [0])), lambda a, b: np.tensordot(a, b, ([-1], [0])),
     [(2, 3), (3,)]),
    (lambda a: dg.trace(a), np.trace, [(3, 3)]), (lambda a: a.trace(), np.trace, [(2, 4)]),
    (lambda a: a.dot(a), lambda a: a.dot(a), [(3,)]),
]


@pytest.mark.parametrize("ours, numpys, shapes", PRODUCTS)
@given(seed=st.integers(0, 2**32 - 1))
def test_products_match_numpy_and_finite_differences(ours, numpys, shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    np.testing.assert_allclose(ours(*[dg.tensor(a) for a in arrays]).numpy(), numpys(*arrays), atol=1e-12)
    _check_vjp(ours, arrays, seed)


def test_products_complex_gradients():
    rng = np.random.default_rng(0)
    for ours, _, shapes in PRODUCTS:
        arrays = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
        _check_complex_vjp(ours, arrays, 1)


def test_product_errors():
    with pytest.raises(RuntimeError, match=r"dot: inconsistent tensor size.*\[3\].*\[4\]"):
        dg.dot(dg.ones(3), dg.ones(4))
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match.*\(2, 3\) and \(4,\)"):
        dg.inner(dg.ones(2, 3), dg.ones(4))
    with pytest.raises(RuntimeError, match=r"contracted dimensions need to match.*size 3 in dim 1.*4 in"):
        dg.tensordot(dg.ones(2, 3), dg.ones(4, 2), dims=([1], [0]))
    with pytest.raises(RuntimeError, match="same length"):
        dg.tensordot(dg.ones(2, 3), dg.ones(3, 2), dims=([1], [0, 1]))
    with pytest.raises(RuntimeError, match=r"dims=3 is invalid.*\(2, 3\)"):
        dg.tensordot(dg.ones(2, 3), dg.ones(3, 2), dims=3)
    with pytest.raises(RuntimeError, match=r"trace: expected a matrix.*dim 1"):
        dg.trace(dg.ones(3))


# -- einsum ----------------------------------------------------------------------------------------
EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("i,i", [(3,), (3,)]),
    ("...ij,...jk", [(2, 1, 2, 3), (4, 3, 2)]), ("i...,i->...", [(2, 3, 4), (2,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("iij->ji", [(2, 2, 3)]), ("iii->", [(2, 2, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 4)]), ("i,j->ij", [(2,), (3,)]), ("ij,j->i", [(2, 3), (1,)]),
    ("ij,kj->ikj", [(1, 3), (2, 3)]), ("ba", [(2, 3)]), ("Ab,bA", [(2, 3), (3, 2)]),
    ("ij,jk->", [(2, 3), (3, 4)]), ("i,jk->ijk", [(2,), (3, 1)]), ("ii,i->", [(3, 3), (3,)]),
    ("ijk->", [(0, 2, 3)]), ("", [()]), (",->", [(), ()]), ("ab...->...ba", [(2, 3)]),
]


def _random(rng, shapes, complex_values=False):
    arrays = [rng.standard_normal(s) for s in shapes]
    if complex_values:
        arrays = [a + 1j * rng.standard_normal(a.shape) for a in arrays]
    return arrays


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_values_match_numpy(equation, shapes):
    arrays = _random(np.random.default_rng(0), shapes)
    ours = dg.einsum(equation, *[dg.tensor(a) for a in arrays])
    np.testing.assert_allclose(ours.numpy(), np.einsum(equation, *arrays), atol=1e-12)


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
@given(seed=st.integers(0, 2**32 - 1))
def test_einsum_gradient_matches_finite_differences(equation, shapes, seed):
    arrays = _random(np.random.default_rng(seed), shapes)
    _check_vjp(lambda *ts: dg.einsum(equation, *ts), arrays, seed)


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_complex_gradient_is_conjugate_wirtinger(equation, shapes):
    arrays = _random(np.random.default_rng(1), shapes, complex_values=True)
    _check_complex_vjp(lambda *ts: dg.einsum(equation, *ts), arrays, 2)


@pytest.mark.parametrize("equation, shapes", EQUATIONS[:16])
def test_einsum_second_order(equation, shapes):
    rng = np.random.default_rng(4)
    arrays = _random(rng, shapes)
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    out = dg.einsum(equation, *xs)
    u = dg.tensor(rng.standard_normal(out.shape))
    grads = dg.grad(out, xs, u, create_graph=True)
    ws = [rng.standard_normal(a.shape) for a in arrays]
    scalar = sum((g * dg.tensor(w)).sum() for g, w in zip(grads, ws, strict=True))
    if not scalar.requires_grad:
        return
    second = dg.grad(scalar, xs, allow_unused=True, materialize_grads=True)
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def grad_dot_w(*tensors):
        inner = [t.detach().requires_grad_() for t in tensors]
        with dg.enable_grad():
            gs = dg.grad(dg.einsum(equation, *inner), inner, u, allow_unused=True, materialize_grads=True)
        return dg.tensor(vdot(gs, ws))

    expected = float(directional_fd(grad_dot_w, arrays, vs, eps=1e-5)[0])
    assert_close(vdot(second, vs), expected, rtol=1e-5, atol=1e-6, what="einsum second order")


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_jvp_matches_finite_differences(equation, shapes):
    rng = np.random.default_rng(5)
    arrays, tangents = _random(rng, shapes), _random(rng, shapes)
    subscripts, reshapes = parse(equation, tuple(shapes))
    operands = [a if s is None else a.reshape(s) for a, s in zip(arrays, reshapes, strict=True)]
    dots = [t if s is None else t.reshape(s) for t, s in zip(tangents, reshapes, strict=True)]
    out = EINSUM.jvp(tuple(dg.tensor(t) for t in dots), None, *[dg.tensor(a) for a in operands],
                     subscripts=subscripts)
    (fd,) = directional_fd(lambda *ts: dg.einsum(equation, *ts), arrays, tangents)
    np.testing.assert_allclose(out.numpy(), fd, atol=1e-7)


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
@given(size=st.integers(1, 3), data=st.data())
def test_einsum_batching_rule_matches_a_loop(equation, shapes, size, data):
    rng = np.random.default_rng(6)
    subscripts, reshapes = parse(equation, tuple(shapes))
    shapes = [s if r is None else r for s, r in zip(shapes, reshapes, strict=True)]
    bdims = [data.draw(st.none() | st.integers(0, len(s))) for s in shapes]
    if all(b is None for b in bdims):
        bdims[0] = 0
    physical, members = zip(*(_batched(rng, s, size, b) for s, b in zip(shapes, bdims, strict=True)),
                            strict=True)
    out, out_bdim = EINSUM.batch(tuple(dg.tensor(p) for p in physical), tuple(bdims), subscripts=subscripts)
    expected = np.stack([np.einsum(subscripts, *[m[i] for m in members]) for i in range(size)])
    np.testing.assert_allclose(np.moveaxis(out.numpy(), out_bdim, 0), expected, atol=1e-12)


def test_einsum_call_forms_agree():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    expected = a @ b
    ta, tb = dg.tensor(a), dg.tensor(b)
    for result in (dg.einsum("ij,jk->ik", ta, tb), dg.einsum("ij,jk->ik", [ta, tb]),
                   dg.einsum("ij,jk->ik", (ta, tb)), dg.einsum(ta, [0, 1], tb, [1, 2], [0, 2]),
                   dg.einsum(ta, [0, 1], tb, [1, 2]), dg.einsum(" ij , jk -> ik ", a, b)):
        np.testing.assert_allclose(result.numpy(), expected)
    np.testing.assert_allclose(dg.einsum(ta, [Ellipsis, 1], [1]).numpy(), a.sum(0))


def test_einsum_path_is_computed_once_per_equation_and_shapes(monkeypatch):
    calls = []
    real = einsum_module.opt_einsum.contract_path

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(einsum_module.opt_einsum, "contract_path", counting)
    einsum_module.contraction.cache_clear()
    a, b, c = dg.ones(5, 6), dg.ones(6, 7), dg.ones(7, 2)
    for _ in range(4):
        dg.einsum("ij,jk,kl->il", a, b, c)
    assert len(calls) == 1
    dg.einsum("ij,jk,kl->il", dg.ones(5, 6), dg.ones(6, 7), dg.ones(7, 3))  # new shapes: a new path
    assert len(calls) == 2
    assert einsum_module.contraction.cache_info().hits >= 3


def test_einsum_result_does_not_alias_its_operand():
    x = dg.tensor(np.arange(6.).reshape(2, 3))
    for equation in ("ij->ji", "ij->ij"):
        assert not np.shares_memory(dg.einsum(equation, x).numpy(), x.numpy())
    y = dg.tensor(np.arange(9.).reshape(3, 3))
    assert not np.shares_memory(dg.einsum("ii->i", y).numpy(), y.numpy())


def test_einsum_float32_stays_float32():
    x = dg.ones(2, 3, dtype=dg.float32, requires_grad=True)
    out = dg.einsum("ij,jk->ik", x, dg.ones(3, 2, dtype=dg.float32))
    out.sum().backward()
    assert out.dtype == np.float32 and x.grad.dtype == np.float32


@pytest.mark.parametrize("equation, shapes, words", [
    ("ij,jk->ik", [(2, 3), (4, 2)], r"subscript j has size 4 for operand 1 \(shape \(4, 2\)\).*size 3"),
    ("ij->i", [(3,)], r"the number of subscripts in the equation \(2\).*dimensions \(1\) for operand 0"),
    ("ii->i", [(3, 2)], r"subscript i is repeated for operand 0.*3 != 2"),
    ("ij,jk->ik", [(2, 3)], r"2 operand\(s\) but 1 were given"),
    ("i1->i", [(3, 3)], r"invalid subscript '1'"),
    ("ij->ii", [(3, 3)], r"output subscript i appears more than once"),
    ("ij->k", [(3, 3)], r"output subscript k does not appear"),
    ("ijk...->", [(3, 3)], r"too few dimensions"),
])
def test_einsum_errors(equation, shapes, words):
    with pytest.raises(RuntimeError, match="einsum\\(\\): .*" + words):
        dg.einsum(equation, *[dg.ones(*s) for s in shapes])
