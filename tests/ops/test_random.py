"""Random sampling (bernoulli, normal, poisson, multinomial, randperm, in-place fills) and the counting
utilities (searchsorted, bucketize, unique, unique_consecutive, histc, bincount), as torch 2.13's.

Draws come from dualgrad's generator, not torch's: the tests check seeding, shapes, dtypes,
supports and distribution moments with bounds wide enough never to fail by chance (seeded anyway).
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

N = 20000


def _draws():
    return [dg.bernoulli(dg.full((5,), 0.5)), dg.normal(dg.zeros(5), 1.0), dg.normal(0.0, 1.0, size=(5,)),
            dg.poisson(dg.ones(5)), dg.multinomial(dg.ones(6), 3), dg.multinomial(dg.ones(6), 4, True),
            dg.randperm(6), dg.zeros(5).random_(0, 100), dg.zeros(5).bernoulli_(0.5), dg.zeros(5).exponential_(),
            dg.zeros(5).geometric_(0.3), dg.zeros(5).log_normal_(), dg.zeros(5).cauchy_()]


def test_manual_seed_repeats_every_draw():
    dg.manual_seed(7)
    first = _draws()
    dg.manual_seed(7)
    again = _draws()
    dg.manual_seed(8)
    other = _draws()
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize(("fill", "mean", "var"), [
    (lambda x: x.exponential_(2.0), 0.5, 0.25),
    (lambda x: x.geometric_(0.25), 4.0, 12.0),
    (lambda x: x.log_normal_(0.0, 0.5), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    (lambda x: x.random_(3, 7), 4.5, 1.25),
    (lambda x: x.bernoulli_(0.3), 0.3, 0.21),
    (lambda x: x.uniform_(-1, 3), 1.0, 16 / 12),
    (lambda x: x.normal_(2.0, 3.0), 2.0, 9.0),
])
def test_in_place_fills_have_the_distribution_moments(fill, mean, var):
    dg.manual_seed(0)
    x = dg.empty(N)
    assert fill(x) is x
    assert abs(float(x.mean()) - mean) < 6 * np.sqrt(var / N)
    assert abs(float(x.var()) / var - 1) < 0.1


def test_in_place_fills_supports_and_dtypes():
    dg.manual_seed(0)
    assert set(dg.zeros(N).random_(3, 5).tolist()) == {3.0, 4.0}
    assert set(dg.zeros(N).random_(2).tolist()) == {0.0, 1.0}
    assert set(dg.zeros(N, dtype=dg.bool).random_().tolist()) == {False, True}
    u8 = dg.zeros(N, dtype=dg.uint8).random_()
    assert u8.dtype == dg.uint8 and int(u8.max()) > 200
    assert float(dg.zeros(N).random_().max()) > 2.0 ** 50  # [0, 2**53] for float64
    assert float(dg.zeros(N, dtype=dg.float32).random_().max()) <= 2.0 ** 24
    assert dg.zeros(3, dtype=dg.int64).geometric_(0.5).dtype == dg.int64
    assert bool((dg.zeros(N).geometric_(0.5) >= 1).all())
    assert bool((dg.zeros(N).log_normal_() > 0).all())
    assert dg.zeros(4).bernoulli_(dg.tensor([0., 1., 0., 1.])).tolist() == [0., 1., 0., 1.]
    assert abs(float(dg.zeros(N + 1).cauchy_(3.0, 0.5).median()) - 3.0) < 0.05


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: dg.zeros(2).random_(3, 2), RuntimeError, "from=3 >= to=2"),
    (lambda: dg.zeros(2, dtype=dg.int8).random_(-200, 3), RuntimeError, "from is out of bounds"),
    (lambda: dg.zeros(2, dtype=dg.float16).random_(0, 70000), RuntimeError, "to - 1 is out of bounds"),
    (lambda: dg.zeros(2, dtype=dg.complex128).random_(), NotImplementedError, "random_kernel_cpu"),
    (lambda: dg.zeros(2).bernoulli_(1.3), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.3"),
    (lambda: dg.zeros(2).bernoulli_(dg.tensor([0.5, -1.])), RuntimeError, "p_in >= 0 && p_in <= 1"),
    (lambda: dg.zeros(2).exponential_(0.0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: dg.zeros(2, dtype=dg.int64).exponential_(), RuntimeError, "Exponential distribution is a continuous"),
    (lambda: dg.zeros(2).geometric_(1), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=1"),
    (lambda: dg.zeros(2).log_normal_(1, -2), RuntimeError, "log_normal_ expects std > 0.0, but found std=-2"),
    (lambda: dg.zeros(2, dtype=dg.int64).log_normal_(), NotImplementedError, "log_normal_cpu"),
    (lambda: dg.zeros(2).cauchy_(1, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: dg.zeros(2, dtype=dg.int64).cauchy_(), RuntimeError, "Cauchy distribution is a continuous"),
    (lambda: dg.zeros(2).uniform_(2, 1), RuntimeError, "[from, to) range, but found from=2 > to=1"),
    (lambda: dg.zeros(2).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
])
def test_in_place_fill_argument_errors(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        call()


def test_in_place_fills_go_through_the_in_place_machinery():
    leaf = dg.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.exponential_()
    x = dg.ones(3, requires_grad=True)
    y = x * 2
    version = y._version
    y.bernoulli_(0.5)
    assert y._version == version + 1
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]  # the old values get no gradient


def test_bernoulli():
    dg.manual_seed(0)
    assert dg.bernoulli(dg.tensor([0., 1., 1.])).tolist() == [0., 1., 1.]
    assert abs(float(dg.bernoulli(dg.full((N,), 0.3)).mean()) - 0.3) < 0.02
    assert abs(float(dg.bernoulli(dg.zeros(N), p=0.7).mean()) - 0.7) < 0.02
    assert dg.bernoulli(dg.zeros(2, dtype=dg.float32)).dtype == dg.float32
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        dg.bernoulli(dg.tensor([1.5]))
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\]"):
        dg.bernoulli(dg.zeros(1), p=1.5)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        dg.bernoulli(dg.tensor([1, 0]))


def test_normal_forms_shapes_and_moments():
    dg.manual_seed(0)
    both = dg.normal(dg.full((N,), 2.0), dg.full((N,), 3.0))
    assert abs(float(both.mean()) - 2.0) < 0.2 and abs(float(both.std()) - 3.0) < 0.2
    assert dg.normal(dg.zeros(2, 1), dg.ones(3)).shape == (2, 3)
    assert dg.normal(dg.zeros(2), 1.0).shape == (2,)
    assert dg.normal(0.0, dg.ones(3)).shape == (3,)
    scalars = dg.normal(1.0, 0.5, size=(N,))
    assert scalars.shape == (N,) and abs(float(scalars.mean()) - 1.0) < 0.05
    assert dg.normal(0.0, 1.0, (2,), dtype=dg.float32).dtype == dg.float32
    assert dg.normal(dg.zeros(2, dtype=dg.float32), 1.0).dtype == dg.float32


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: dg.normal(0.0, 1.0), TypeError, "invalid combination of arguments"),
    (lambda: dg.normal(dg.zeros(2), 1.0, size=(2,)), TypeError, "invalid combination of arguments"),
    (lambda: dg.normal(dg.zeros(2), -dg.ones(2)), RuntimeError, "all elements of std >= 0.0"),
    (lambda: dg.normal(dg.zeros(2), -1.0), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: dg.normal(0.0, -1.0, (2,)), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: dg.normal(dg.zeros(2), dg.ones(3)), RuntimeError, "size of tensor a \\(2\\) must match"),
    (lambda: dg.normal(dg.zeros(2, dtype=dg.int64), 1.0), NotImplementedError, "normal_kernel_cpu"),
])
def test_normal_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_sampling_gradients_are_zero_as_torch():
    mean = dg.tensor([0., 1.], requires_grad=True)
    out = dg.normal(mean, mean.exp())
    assert out.grad_fn.name() == "NormalBackward3"
    assert dg.autograd.grad(out.sum(), mean)[0].tolist() == [0.0, 0.0]
    p = dg.tensor([0.3, 0.7], requires_grad=True)
    b = dg.bernoulli(p)
    assert b.grad_fn.name() == "BernoulliBackward0"
    assert dg.autograd.grad(b.sum(), p)[0].tolist() == [0.0, 0.0]
    rates = dg.tensor([1., 2.], requires_grad=True)
    q = dg.poisson(rates)
    assert q.grad_fn.name() == "PoissonBackward0"
    assert dg.autograd.grad(q.sum(), rates)[0].tolist() == [0.0, 0.0]


def test_poisson():
    dg.manual_seed(0)
    draws = dg.poisson(dg.full((N,), 4.0))
    assert abs(float(draws.mean()) - 4.0) < 0.1 and bool((draws == draws.round()).all())
    assert dg.poisson(dg.zeros(3)).tolist() == [0., 0., 0.]
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        dg.poisson(dg.tensor([-1.]))
    with pytest.raises(NotImplementedError, match="poisson_cpu"):
        dg.poisson(dg.tensor([1, 2]))


def test_multinomial_frequencies_and_without_replacement():
    dg.manual_seed(0)
    weights = dg.tensor([1., 0., 3.])
    draws = dg.multinomial(weights, N, replacement=True)
    assert draws.dtype == dg.int64 and draws.shape == (N,)
    counts = np.bincount(draws.numpy(), minlength=3)
    assert counts[1] == 0 and abs(counts[2] / N - 0.75) < 0.02
    rows = dg.multinomial(dg.tensor([[0., 1.], [1., 0.]]), 3, replacement=True)
    assert rows.tolist() == [[1, 1, 1], [0, 0, 0]]
    firsts = [int(dg.multinomial(weights, 2)[0]) for _ in range(400)]
    assert 0.6 < firsts.count(2) / 400 < 0.9
    for _ in range(20):
        assert sorted(dg.multinomial(dg.ones(2, 5), 5)[0].tolist()) == [0, 1, 2, 3, 4]
    # zero-weight categories are drawn once the others ran out, as torch's
    assert dg.multinomial(dg.tensor([1., 0., 0.]), 2)[0].item() == 0


@pytest.mark.parametrize(("call", "words"), [
    (lambda: dg.multinomial(dg.tensor([0.2, 0.8]), 3), "cannot sample n_sample > prob_dist.size(-1) samples without"),
    (lambda: dg.multinomial(dg.tensor([-1., 2.]), 1), "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: dg.multinomial(dg.tensor([np.inf, 2.]), 1), "probability tensor contains either"),
    (lambda: dg.multinomial(dg.tensor([0., 0.]), 1), "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda: dg.multinomial(dg.tensor([1, 2]), 1), "only supports floating-point dtypes for input, got: Long"),
    (lambda: dg.multinomial(dg.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    (lambda: dg.multinomial(dg.ones(2), 0), "cannot sample n_sample <= 0 samples"),
])
def test_multinomial_errors(call, words):
    with pytest.raises(RuntimeError) as info:
        call()
    assert words in str(info.value)


def test_randperm():
    dg.manual_seed(0)
    p = dg.randperm(10)
    assert p.dtype == dg.int64 and sorted(p.tolist()) == list(range(10))
    assert dg.randperm(0).shape == (0,)
    assert dg.randperm(3, dtype=dg.float32, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="must be int, not float"):
        dg.randperm(2.5)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        dg.randperm(-1)
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require gradients"):
        dg.randperm(3, requires_grad=True)


def test_vmap_randomness():
    probs = dg.full((4, 50), 0.5)
    different = dg.vmap(dg.bernoulli, randomness="different")(probs)
    same = dg.vmap(dg.bernoulli, randomness="same")(probs)
    assert not bool((different[0] == different[1:]).all())
    assert bool((same == same[0]).all())
    with pytest.raises(RuntimeError, match="randomness error mode"):
        dg.vmap(dg.bernoulli)(probs)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        dg.vmap(dg.poisson)(probs)
    perms = dg.vmap(lambda x: dg.randperm(6), randomness="different")(dg.zeros(3))
    assert all(sorted(row) == list(range(6)) for row in perms.tolist())
    fills = dg.vmap(lambda x: x.clone().exponential_(), randomness="same")(dg.zeros(3, 5))
    assert bool((fills == fills[0]).all())
    picks = dg.vmap(lambda w: dg.multinomial(w, 2), randomness="different")(dg.tensor([[0., 1., 1.], [1., 1., 0.]]))
    assert 0 not in picks[0].tolist() and 2 not in picks[1].tolist()


def test_searchsorted_and_bucketize():
    s = dg.tensor([1, 3, 5, 7, 9])
    v = dg.tensor([3, 6, 9])
    assert dg.searchsorted(s, v).tolist() == [1, 3, 4]
    assert dg.searchsorted(s, v, right=True).tolist() == dg.searchsorted(s, v, side="right").tolist() == [2, 3, 5]
    assert dg.searchsorted(s, v, out_int32=True).dtype == dg.int32
    assert dg.searchsorted(s, 6).shape == () and dg.searchsorted(s, 6).item() == 3
    assert dg.searchsorted(dg.tensor([[1, 3, 5], [2, 4, 6]]), dg.tensor([[3], [3]])).tolist() == [[1], [1]]
    assert dg.searchsorted(dg.tensor([5, 1, 3]), dg.tensor([3]), sorter=dg.tensor([1, 2, 0])).tolist() == [1]
    assert dg.bucketize(dg.tensor([[3, 6], [9, 10]]), s, right=True).tolist() == [[2, 3], [5, 5]]
    assert dg.bucketize(3, s).item() == 1
    assert dg.vmap(lambda x: dg.bucketize(x, s))(dg.tensor([[0, 4], [8, 10]])).tolist() == [[0, 2], [4, 5]]


@pytest.mark.parametrize(("call", "words"), [
    (lambda: dg.searchsorted(dg.tensor([1]), dg.tensor([1]), side="middle"), "side can only be 'left' or 'right'"),
    (lambda: dg.searchsorted(dg.tensor([1]), dg.tensor([1]), side="left", right=True), "can't be set to opposites"),
    (lambda: dg.searchsorted(dg.tensor(1), dg.tensor([1])), "should have positive dimension"),
    (lambda: dg.searchsorted(dg.ones(2, 3), dg.ones(3)), "first N-1 dimensions of boundaries tensor"),
    (lambda: dg.searchsorted(dg.tensor([1, 2]), dg.tensor([1]), sorter=dg.tensor([0])), "boundary and sorter"),
    (lambda: dg.bucketize(dg.tensor([3]), dg.ones(1, 2)), "boundaries tensor must be 1 dimension, but got dim(2)"),
])
def test_searchsorted_errors(call, words):
    with pytest.raises(RuntimeError) as info:
        call()
    assert words in str(info.value)


def test_unique_and_unique_consecutive():
    x = dg.tensor([3, 1, 2, 3, 1, 1])
    assert dg.unique(x).tolist() == x.unique().tolist() == [1, 2, 3]
    values, inverse, counts = dg.unique(x, return_inverse=True, return_counts=True)
    assert inverse.tolist() == [2, 0, 1, 2, 0, 0] and counts.tolist() == [3, 1, 2]
    rows = dg.tensor([[1, 2], [1, 2], [0, 1]])
    values, inverse, counts = dg.unique(rows, dim=0, return_inverse=True, return_counts=True)
    assert values.tolist() == [[0, 1], [1, 2]] and inverse.tolist() == [1, 1, 0] and counts.tolist() == [1, 2]
    assert dg.unique(rows, return_inverse=True)[1].shape == (3, 2)
    assert dg.unique(dg.tensor([np.nan, 1., np.nan])).shape == (3,)  # NaNs stay distinct
    values, inverse, counts = dg.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [3, 1, 2, 3, 1] and inverse.tolist() == [0, 1, 2, 3, 4, 4]
    assert counts.tolist() == [1, 1, 1, 1, 2]
    assert dg.unique_consecutive(rows, dim=0, return_counts=True)[1].tolist() == [2, 1]
    with pytest.raises(IndexError, match="Dimension out of range"):
        dg.unique(dg.tensor([1, 2]), dim=2)
    with pytest.raises(RuntimeError, match="not supported inside vmap"):
        dg.vmap(dg.unique)(rows)


def test_histc_and_bincount():
    assert dg.histc(dg.tensor([1., 2., 1.]), bins=4, min=0, max=3).tolist() == [0., 2., 1., 0.]
    assert dg.histc(dg.tensor([1., 1., 1.]), bins=4).tolist() == [0., 0., 3., 0.]
    assert dg.histc(dg.tensor([1., 2., 1., 5., -1., np.nan]), bins=4, min=0, max=3).tolist() == [0., 2., 1., 0.]
    assert dg.histc(dg.tensor([1., 2.], dtype=dg.float32), bins=2).dtype == dg.float32
    assert dg.bincount(dg.tensor([0, 1, 1, 3])).tolist() == [1, 2, 0, 1]
    assert dg.bincount(dg.tensor([0, 1, 1, 3]), minlength=6).shape == (6,)
    weighted = dg.bincount(dg.tensor([0, 1, 1]), weights=dg.tensor([.5, 1., 2.], dtype=dg.float32))
    assert weighted.tolist() == [0.5, 3.0] and weighted.dtype == dg.float32
    assert dg.bincount(dg.tensor([0, 1]), weights=dg.tensor([1, 2])).dtype == dg.float64
    assert dg.tensor([0, 2]).bincount().tolist() == [1, 0, 1]


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: dg.histc(dg.tensor([1.]), bins=4, min=3, max=0), RuntimeError, "max must be larger than min"),
    (lambda: dg.histc(dg.tensor([1.]), bins=0), RuntimeError, "bins must be > 0"),
    (lambda: dg.histc(dg.tensor([1, 2])), NotImplementedError, "histogram_cpu"),
    (lambda: dg.histc(dg.tensor([1., np.inf])), RuntimeError, "range of [1, inf] is not finite"),
    (lambda: dg.bincount(dg.tensor([0, -1])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda: dg.bincount(dg.tensor([[0, 1]])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda: dg.bincount(dg.tensor([0., 1.])), NotImplementedError, "bincount_cpu"),
    (lambda: dg.bincount(dg.tensor([0, 1]), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda: dg.bincount(dg.tensor([0, 1]), weights=dg.ones(3)), RuntimeError, "same length as input"),
])
def test_histc_and_bincount_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_logspace_and_scalar_tensor():
    assert dg.logspace(0, 2, 3).tolist() == [1., 10., 100.]
    assert dg.logspace(0, 2, 3, base=2).tolist() == [1., 2., 4.]
    assert dg.logspace(0, 2, 3, dtype=dg.int64).tolist() == [1, 10, 100]
    assert dg.logspace(0, 2, 3, dtype=dg.float32).dtype == dg.float32
    for steps in (dg.logspace, dg.linspace):
        with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
            steps(0, 2, -1)
    s = dg.scalar_tensor(3)
    assert s.shape == () and s.dtype == dg.get_default_dtype() and s.item() == 3.0
    assert dg.scalar_tensor(True, dtype=dg.int64).item() == 1
    assert dg.scalar_tensor(2.5, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="cannot be converted"):
        dg.scalar_tensor(1 + 2j)
