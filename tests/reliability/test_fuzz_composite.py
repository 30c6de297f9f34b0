"""Composite programs: divergences from torch 2.13 found by a differential fuzzer of random
compositions, and a small seeded fuzzer that needs no torch (reverse mode against forward mode,
central finite differences and vmap on random compositions of smooth ops)."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.autograd import forward_ad as fwd

NAN = math.nan
INF = math.inf


def _grads(f, *values, cotangent=NAN):
    """dualgrad's gradients of ``f(*values)`` for a cotangent filled with ``cotangent``."""
    leaves = [dg.tensor(v, requires_grad=True) for v in values]
    out = f(*leaves)
    return [g.tolist() for g in dg.grad(out, leaves, dg.full(out.shape, cotangent))]


def _tangent(f, value, tangent=NAN):
    return _tangent_along(f, value, np.full(np.shape(value), tangent))


def _tangent_along(f, value, tangent):
    with fwd.dual_level():
        return fwd.unpack_dual(f(fwd.make_dual(dg.tensor(value), dg.tensor(tangent)))).tangent.tolist()


def _same(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float))


# -- selections pass the gradient where the input counts, and an exact 0 elsewhere -------------------
# (torch selects, dualgrad multiplied by the 0/1 derivative: an inf or NaN gradient gave NaN everywhere)
def test_sqrt_of_relu_has_zero_gradient_where_clipped():
    x = dg.tensor([-1.0, 0.0, 4.0], requires_grad=True)
    (g,) = dg.grad(dg.sqrt(dg.relu(x)).sum(), x)
    _same(g.tolist(), [0.0, 0.0, 0.25])  # torch 2.13; dualgrad gave [nan, nan, 0.25]
    (g,) = dg.grad(dg.log(dg.clamp(x, min=0)).sum(), x)
    _same(g.tolist(), [0.0, INF, 0.25])  # torch 2.13; dualgrad gave [nan, inf, 0.25]


@pytest.mark.parametrize(("f", "values", "cotangent", "expected"), [
    # torch 2.13's gradients, for a cotangent of NaN or inf everywhere
    (lambda x: dg.clamp(x, -0.5, 2.0), ([-1.0, 0.0, 4.0],), NAN, [[0.0, NAN, 0.0]]),
    (lambda x, lo, hi: dg.clamp(x, lo, hi), ([-1.0, 0.0, 4.0], [0.5] * 3, [3.0] * 3), NAN,
     [[0.0, 0.0, 0.0], [NAN, NAN, 0.0], [0.0, 0.0, NAN]]),
    (dg.maximum, ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]), INF, [[0.0, INF, INF], [INF, INF, 0.0]]),
    (dg.minimum, ([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]), INF, [[INF, INF, 0.0], [0.0, INF, INF]]),
    (dg.fmax, ([1.0, NAN, 3.0], [3.0, 2.0, NAN]), NAN, [[0.0, 0.0, NAN], [NAN, NAN, 0.0]]),
    (dg.fmin, ([1.0, NAN, 3.0], [3.0, 2.0, NAN]), NAN, [[NAN, 0.0, NAN], [0.0, NAN, 0.0]]),
    (dg.max, ([1.0, 3.0, 2.0],), NAN, [[0.0, NAN, 0.0]]),
    (dg.min, ([1.0, 3.0, 2.0],), NAN, [[NAN, 0.0, 0.0]]),
    (dg.median, ([1.0, 3.0, 2.0],), NAN, [[0.0, 0.0, NAN]]),
    (lambda x: dg.max(x, 1)[0], ([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]],), NAN, [[[0.0, NAN, 0.0], [0.0, 0.0, NAN]]]),
    (lambda x: dg.median(x, 1)[0], ([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]],), NAN,
     [[[0.0, 0.0, NAN], [NAN, 0.0, 0.0]]]),
    (lambda x, e: x ** e, ([1.0, 0.0, 2.0], [0.0, 0.0, 1.0]), NAN, [[0.0, 0.0, NAN], [NAN, NAN, NAN]]),
    (dg.copysign, ([1.0, -2.0, 3.0], [-1.0, 1.0, 0.0]), INF, [[-INF, -INF, INF], [0.0, 0.0, 0.0]]),
])
def test_selections_give_exact_zeros_for_inf_or_nan_gradients(f, values, cotangent, expected):
    for actual, want in zip(_grads(f, *values, cotangent=cotangent), expected, strict=True):
        _same(actual, want)


@pytest.mark.parametrize("f", [dg.floor, dg.ceil, dg.round, dg.trunc, dg.sign, lambda x: x ** 0,
                               lambda x: dg.linalg.vector_norm(x, 0) * dg.ones(3)])
def test_zero_derivatives_give_zeros_for_inf_or_nan_gradients(f):
    # torch 2.13: zeros (no gradient at all for vector_norm(x, 0)); dualgrad gave NaN (0 * NaN)
    for cotangent in (NAN, INF):
        _same(_grads(f, [-1.5, 0.0, 2.0], cotangent=cotangent)[0], [0.0, 0.0, 0.0])


def test_selections_select_tangents_too():
    # torch 2.13's forward mode, for a tangent of NaN (inf for max(dim)) everywhere
    _same(_tangent(dg.relu, [-1.0, 0.0, 4.0]), [0.0, 0.0, NAN])
    _same(_tangent(lambda x: dg.clamp(x, -0.5, 2.0), [-1.0, 0.0, 4.0]), [0.0, NAN, 0.0])
    _same(_tangent(dg.floor, [-1.0, 0.0, 4.0]), [0.0, 0.0, 0.0])
    _same(_tangent(lambda x: dg.max(x, 1)[0], [[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]], INF), [INF, INF])
    _same(_tangent(lambda x: dg.linalg.vector_norm(x, 0), [1.0, 0.0, 2.0]), 0.0)
    # (torch's fmax tangent here is NaN everywhere: it writes it as t_y + mask * (t_x - t_y))
    _same(_tangent(lambda x: dg.fmax(x, dg.tensor([0.0, 0.0, 5.0])), [-1.0, 0.0, 4.0]), [0.0, NAN, 0.0])


def test_reductions_that_select_tangents_or_gradients():
    # torch 2.13: amax's and amin's tangents are selected (a NaN off the maximum does not reach it)
    _same(_tangent_along(dg.amax, [1.0, 3.0, 2.0], [NAN, 1.0, NAN]), 1.0)
    _same(_tangent_along(lambda x: dg.amax(x, 1), [[1.0, 3.0, 3.0], [0.0, -1.0, 5.0]],
                         [[NAN, 1.0, INF], [1.0, 1.0, -2.0]]), [INF, -2.0])
    _same(_tangent_along(dg.amin, [1.0, 3.0, 2.0], [INF, 1.0, NAN]), INF)
    # std where it is 0: tangent and gradient 0, also for an inf one (torch: [0, 0] and [[0, 0], [-1, 1]])
    _same(_tangent_along(lambda x: dg.std(x, 1), [[0.5, 0.5], [1.0, 2.0]], [[INF, 1.0], [1.0, 1.0]]), [0.0, 0.0])
    x = dg.tensor([[0.5, 0.5], [1.0, 2.0]], requires_grad=True)
    np.testing.assert_allclose(dg.grad(dg.log(dg.std(x, 1)).sum(), x)[0].tolist(), [[0.0, 0.0], [-1.0, 1.0]],
                               rtol=1e-12)


def test_logcumsumexp_tangent_keeps_nan():
    # torch 2.13: [0, nan, nan] (dualgrad dropped the NaN: [0, 0, 0]); without NaN torch gives
    # [0.999999999999261, 1.7310585786296608, 2.5752103826042703] (its 1e-13 guard), dualgrad the exact values
    _same(_tangent_along(lambda x: dg.logcumsumexp(x, 0), [0.0, 1.0, 2.0], [0.0, NAN, 0.0]), [0.0, NAN, NAN])
    exact = [1.0, (1 + 2 * math.e) / (1 + math.e), (1 + 2 * math.e + 3 * math.e ** 2) / (1 + math.e + math.e ** 2)]
    np.testing.assert_allclose(_tangent_along(lambda x: dg.logcumsumexp(x, 0), [0.0, 1.0, 2.0], [1.0, 2.0, 3.0]),
                               exact, rtol=1e-12)


def test_selections_keep_their_gradients_and_second_order():
    x = dg.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    y = dg.tensor([0.5, 0.5, 0.0], requires_grad=True)
    out = (dg.clamp(x, -0.5, 1.0) * x + dg.maximum(x, y) ** 2 + dg.relu(x) ** 3).sum()
    gx, gy = dg.grad(out, (x, y), create_graph=True)
    # d/dx: [0 * x + clamp(x), 2 * 0.5 + 2 * 0.5 * 0.5 (a tie: half) + 3 * 0.25, 1 + 4 + 12]
    np.testing.assert_allclose(gx.tolist(), [-0.5, 2.25, 17.0], rtol=1e-12)
    np.testing.assert_allclose(gy.tolist(), [1.0, 0.5, 0.0], rtol=1e-12)
    (h,) = dg.grad(gx.sum(), x)
    # d2/dx2: 2 clamp' + 2 max'^2 + 6 relu relu'
    np.testing.assert_allclose(h.tolist(), [0.0, 2.0 + 0.5 + 3.0, 2.0 + 12.0], rtol=1e-12)


# -- empty tensors -----------------------------------------------------------------------------------
def test_split_of_an_empty_dim_is_one_empty_piece():
    # torch 2.13: (tensor([], size=(0, 2)),); dualgrad raised ValueError (zip() argument 2 is shorter)
    x = dg.zeros(0, 2, requires_grad=True)
    pieces = dg.split(x, 2)
    assert [p.shape for p in pieces] == [(0, 2)]
    (g,) = dg.grad(dg.cat(pieces).sum(), x)
    assert g.shape == (0, 2)


def test_index_ops_with_an_empty_index_on_an_empty_input():
    # torch 2.13: shapes (0, 2) and (2, 0, 2); dualgrad raised IndexError "index 0 is out of bounds"
    x = dg.zeros(0, 1, requires_grad=True)
    y = dg.index_select(x, 1, dg.tensor([0, 0]))
    assert y.shape == (0, 2)
    assert dg.grad(y.sum(), x)[0].shape == (0, 1)
    z = dg.take_along_dim(dg.zeros(2, 0, 2), dg.zeros((2, 0, 2), dtype=dg.int64), 0)
    assert z.shape == (2, 0, 2)


@pytest.mark.parametrize("ord", [1, 2, math.inf, "nuc", "fro"])
@pytest.mark.parametrize("shape", [(2, 0), (0, 0), (0, 3), (2, 2, 0)])
def test_matrix_norms_of_empty_matrices_are_zero(ord, shape):
    # torch 2.13: 0 for every order but -1 and -2; dualgrad raised "amax(): Expected reduction dim ..."
    x = dg.zeros(*shape, requires_grad=True)
    out = dg.linalg.matrix_norm(x, ord)
    assert out.tolist() == np.zeros(shape[:-2]).tolist()
    assert dg.grad(out.sum(), x)[0].shape == shape


def test_min_type_norms_of_empty_matrices_raise_as_torch():
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 0 to have non-zero size"):
        dg.linalg.matrix_norm(dg.zeros(2, 0), -1)


def test_pinv_and_lstsq_of_empty_matrices():
    # torch 2.13: pinv of (3, 0) is (0, 3), of (2, 0, 3) is (2, 3, 0); dualgrad raised in amax
    assert dg.linalg.pinv(dg.zeros(3, 0)).shape == (0, 3)
    assert dg.linalg.pinv(dg.zeros(2, 0, 3)).shape == (2, 3, 0)
    assert dg.linalg.lstsq(dg.zeros(3, 0), dg.zeros(3, 2)).solution.shape == (0, 2)


def test_median_of_no_elements_is_nan():
    # torch 2.13: tensor(nan) and an empty gradient; dualgrad raised IndexError from np.quantile
    x = dg.zeros(2, 0, requires_grad=True)
    out = dg.median(x)
    assert math.isnan(out.item())
    assert dg.grad(out, x)[0].shape == (2, 0)
    assert dg.median(dg.zeros(0, dtype=dg.float32)).dtype == dg.float32
    # one NaN per member, as a loop gives (torch 2.13's vmap raises IndexError "median(): Expected
    # reduction dim 1 to have non-zero size" from its batching rule)
    assert np.isnan(dg.func.vmap(dg.median)(dg.zeros(3, 0)).numpy()).tolist() == [True] * 3


# -- the seeded fuzzer: random compositions of smooth ops, checked against themselves ----------------
def _matrix(x):
    """A well-conditioned square matrix from the first elements of ``x`` (and the vector it came from)."""
    flat = x.reshape(-1)
    n = min(3, flat.shape[0])
    u = flat[:n]
    return 3 * dg.eye(n) + u[:, None] * dg.sin(u)[None, :], u


def _unary(x, r):
    fs = [dg.sin, dg.tanh, dg.sigmoid, lambda t: dg.exp(dg.tanh(t)), lambda t: t * t,
          lambda t: dg.sqrt(t * t + 1), lambda t: dg.log(t * t + 1), lambda t: 1 / (t * t + 0.5),
          lambda t: 2.0 ** t, lambda t: 1.5 - t, lambda t: dg.atan(t), lambda t: dg.erf(t)]
    return fs[r.integers(len(fs))](x)


def _binary(x, r):
    other = dg.tensor(r.standard_normal(tuple(n if r.random() < 0.7 else 1 for n in x.shape)))
    fs = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a / (b * b + 1), lambda a, b: b - a,
          lambda a, b: dg.hypot(a, b + 2), lambda a, b: dg.atan2(a, b * b + 1), lambda a, b: a * dg.cos(a)]
    return fs[r.integers(len(fs))](x, other)


def _reduction(x, r):
    if x.ndim == 0:
        x = x.reshape(1)
    d = int(r.integers(-x.ndim, x.ndim))
    keep = bool(r.random() < 0.5)
    fs = [lambda: x.sum(d, keepdim=keep), lambda: x.mean(d, keepdim=keep), lambda: x.prod(d, keepdim=keep),
          lambda: dg.var(x, d, correction=0, keepdim=keep), lambda: dg.logsumexp(x, d, keep),
          lambda: dg.softmax(x, d), lambda: dg.log_softmax(x, d), lambda: dg.cumsum(x, d),
          lambda: dg.cumprod(x, d), lambda: dg.linalg.vector_norm(x * x + 1, 3, d, keep),
          lambda: dg.logcumsumexp(x, d)]
    return fs[r.integers(len(fs))]()


def _reshaping(x, r):
    if x.ndim == 0:
        x = x.reshape(1, 1)
    perm = [int(i) for i in r.permutation(x.ndim)]
    d = int(r.integers(-x.ndim, x.ndim))
    fs = [lambda: x.permute(*perm), lambda: dg.flip(x, (d,)), lambda: dg.roll(x, 1, d), lambda: x.reshape(-1),
          lambda: x.unsqueeze(0).expand(2, *x.shape), lambda: dg.cat([x, dg.sin(x)], d),
          lambda: dg.stack([x, 2 * x], d), lambda: dg.pad(x, (1, 2)), lambda: x.transpose(0, -1),
          lambda: dg.cat(dg.split(x, 2, d)[::-1], d), lambda: dg.chunk(x, 2, d)[0]]
    if x.ndim >= 2:
        fs += [lambda: dg.diagonal(x, 0, 0, -1), lambda: dg.triu(x, -1), lambda: x.mT]
    return fs[r.integers(len(fs))]()


def _indexing(x, r):
    if x.ndim == 0:
        x = x.reshape(1)
    d = int(r.integers(0, x.ndim))
    before = (slice(None),) * d
    n = x.shape[d]
    if n == 0:  # (after a mask that kept nothing)
        return x[before + (slice(None, None, 2),)]
    repeats = r.integers(0, n, size=4)
    fs = [lambda: x[before + (slice(None, None, 2),)], lambda: x[before + (slice(-2, None),)],
          lambda: x[before + (-1,)], lambda: x[before + (dg.tensor(repeats),)],
          lambda: dg.index_select(x, d, dg.tensor(repeats)),
          lambda: dg.gather(x, d, dg.tensor(r.integers(0, n, size=x.shape))),
          lambda: x[dg.tensor(r.random(x.shape) < 0.6)]]
    return fs[r.integers(len(fs))]()


def _linalg(x, r):
    a, u = _matrix(x)
    fs = [lambda: dg.linalg.solve(a, u), lambda: dg.linalg.inv(a), lambda: dg.linalg.det(a),
          lambda: dg.linalg.slogdet(a)[1], lambda: dg.linalg.cholesky(a @ a.mT + dg.eye(a.shape[0])),
          lambda: dg.matmul(x, dg.tensor(r.standard_normal(x.shape[-1:] + (2,)))) if x.ndim else x * 2,
          lambda: dg.matmul(a, u), lambda: dg.einsum("ij,j->i", a, u), lambda: dg.tensordot(a, a, dims=1),
          lambda: dg.linalg.matrix_norm(a), lambda: dg.linalg.eigvalsh(a + a.mT)]
    return fs[r.integers(len(fs))]()


_FAMILIES = (_unary, _binary, _reduction, _reshaping, _indexing, _linalg)


def _program(families, seed):
    """A composition of one step per family in ``families``; the same values and indices each call."""

    def f(x):
        r = np.random.default_rng(seed)
        for family in families:
            x = _FAMILIES[family](x, r)
        return x

    return f


def _pairing(f, x, v, u):
    """``<u, J v>`` by reverse mode, forward mode and central differences, for ``f`` at ``x``."""
    leaf = dg.tensor(x, requires_grad=True)
    (g,) = dg.grad((f(leaf) * dg.tensor(u)).sum(), leaf, allow_unused=True, materialize_grads=True)
    reverse = float((g.numpy() * v).sum())
    with fwd.dual_level():
        tangent = fwd.unpack_dual(f(fwd.make_dual(dg.tensor(x), dg.tensor(v)))).tangent
    forward = float((tangent.numpy() * u).sum()) if tangent is not None else 0.0
    return reverse, forward, float((_central_difference(f, x, v) * u).sum())


def _central_difference(f, x, v, h=1e-5):
    """The derivative of ``f`` at ``x`` along ``v``: central differences at steps h and h/2,
    extrapolated (Richardson): an error of order h^4, so a step large enough for little rounding."""

    def at(step):
        return (f(dg.tensor(x + step * v)).numpy() - f(dg.tensor(x - step * v)).numpy()) / (2 * step)

    return (4 * at(h / 2) - at(h)) / 3


@given(families=st.lists(st.integers(0, len(_FAMILIES) - 1), min_size=2, max_size=5),
       shape=st.lists(st.integers(1, 3), min_size=0, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_random_compositions_agree_in_reverse_forward_and_finite_differences(families, shape, seed):
    r = np.random.default_rng(seed)
    x, v = r.standard_normal(shape), r.standard_normal(shape)
    f = _program(families, seed)
    out = f(dg.tensor(x))
    # (the mean of a mask that kept nothing is NaN, a constant; steep programs, 2 ** x of a square of
    # a square, leave finite differences too far from the derivative)
    assume(np.isfinite(out.numpy()).all() and np.abs(out.numpy()).max(initial=0) < 100)
    u = r.standard_normal(out.shape)
    reverse, forward, difference = _pairing(f, x, v, u)
    np.testing.assert_allclose(forward, reverse, rtol=1e-9, atol=1e-10)
    assume(abs(reverse) < 1000)
    np.testing.assert_allclose(difference, reverse, rtol=1e-6, atol=1e-7)
    # vmap over a batch of two inputs is the two calls
    x2 = x + 0.1 * v
    batched = dg.func.vmap(f)(dg.tensor(np.stack([x, x2])))
    np.testing.assert_allclose(batched.numpy()[1], f(dg.tensor(x2)).numpy(), rtol=1e-12, atol=1e-12)
