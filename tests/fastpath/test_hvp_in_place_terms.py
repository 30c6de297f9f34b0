"""Forward over reverse (``hvp``) writes into temporaries nobody else can see.

Three places reuse memory: the derived vjp ``g * d`` when the partial ``d`` is a
fresh dual temporary (``fastpath.multiply_into``), the backward engine when a
second gradient reaches a buffer (``fastpath.add_into_buffer``), and the scatter of
``x[block]``'s vjp (zeros only outside the block). These tests pin down the
values (those of the out-of-place formulas), that inputs, tangents and gradients
somebody holds are never overwritten, that tracked values stay out of place, and
that the profiler still sees every op.
"""

import numpy as np
import pytest
from dualgrad.autograd.functional import hvp, vhp
from helpers import rosenbrock, rosenbrock_hvp

import dualgrad as dg
from dualgrad import fastpath
from dualgrad import forward_ad as fwAD
from dualgrad.base.state import STATE
from dualgrad.ops import indexing


@pytest.fixture
def spies(monkeypatch):
    """Record the answers of the in-place decisions (True or a level: the work was done in place)."""
    answers = {"dual_product": [], "accumulate": []}

    def record(module, name, key):
        original = getattr(module, name)

        def spy(*args):
            answers[key].append(original(*args))
            return answers[key][-1]

        monkeypatch.setattr(module, name, spy)

    record(fastpath, "_scratch_dual_level", "dual_product")
    record(fastpath, "add_in_place", "accumulate")
    return answers


@pytest.mark.fastpath
def test_rosenbrock_hvp_in_place_is_exact_and_leaves_inputs_alone(spies):
    rng = np.random.default_rng(0)
    xn, vn = rng.uniform(-1, 1, 7), rng.standard_normal(7)
    x, v = dg.tensor(xn), dg.tensor(vn)
    value, product = hvp(rosenbrock, x, v)
    assert any(level is not None for level in spies["dual_product"])
    assert True in spies["accumulate"]
    np.testing.assert_allclose(product.numpy(), rosenbrock_hvp(xn, vn), rtol=1e-13, atol=1e-12)
    np.testing.assert_array_equal(x.numpy(), xn)
    np.testing.assert_array_equal(v.numpy(), vn)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x).tangent is None  # the caller's x got no tangent


def test_tracked_hvp_stays_out_of_place_and_agrees(spies):
    """``create_graph=True``: every value requires grad, so nothing is reused; same numbers."""
    rng = np.random.default_rng(1)
    x, v = dg.tensor(rng.uniform(-1, 1, 6)), dg.tensor(rng.standard_normal(6))
    _, plain = hvp(rosenbrock, x, v)
    spies["dual_product"].clear()
    spies["accumulate"].clear()
    _, tracked = hvp(rosenbrock, x.requires_grad_(), v, create_graph=True)
    assert all(level is None for level in spies["dual_product"])
    assert True not in spies["accumulate"]
    np.testing.assert_allclose(tracked.detach().numpy(), plain.numpy(), rtol=1e-15)
    _, reverse_over_reverse = vhp(rosenbrock, x, v)
    np.testing.assert_allclose(plain.numpy(), reverse_over_reverse.numpy(), rtol=1e-13)


@pytest.mark.parametrize("first_tangent_free", [True, False])
def test_accumulating_a_gradient_with_and_without_tangent(first_tangent_free):
    """One gradient of ``x`` has no tangent (``x * c``), the other has one (``x ** 3``), in both orders."""
    c = dg.tensor([2.0, -1.0, 0.5])

    def f(x):
        linear, cubic = (x * c).sum(), (x**3).sum()
        return linear + cubic if first_tangent_free else cubic + linear

    xn, vn = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    _, product = hvp(f, dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), 6 * xn * vn, rtol=1e-14)
    np.testing.assert_array_equal(c.numpy(), [2.0, -1.0, 0.5])


def test_square_backward_with_a_cotangent_that_has_a_tangent():
    """``g * d`` where both carry tangents: ``t_g * d + g * t_d`` (the cross term)."""
    xn, vn = np.array([0.5, -1.5, 2.0]), np.array([1.0, 2.0, -1.0])
    _, product = hvp(lambda x: ((x**2) ** 2).sum(), dg.tensor(xn), dg.tensor(vn))
    np.testing.assert_allclose(product.numpy(), 12 * xn**2 * vn, rtol=1e-14)


def test_a_gradient_someone_holds_is_not_accumulated_into():
    """Node hooks keep both gradients of ``x``: neither may be added into."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    first, second = x * 2.0, x * 3.0
    kept = {}
    for name, y in (("first", first), ("second", second)):
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs, name=name: kept.update({name: grad_inputs[0]}))
    (first.sum() + second.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(kept["first"].numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(kept["second"].numpy(), [3.0, 3.0])


def test_a_root_gradient_the_caller_holds_is_not_accumulated_into():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    seed = dg.tensor([1.0, 1.0])
    (grad,) = dg.grad([x, x], [x], [seed, dg.tensor([2.0, 2.0])])
    np.testing.assert_array_equal(grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(seed.numpy(), [1.0, 1.0])


def test_accumulation_under_create_graph_stays_differentiable(spies):
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    (grad,) = dg.grad((x**3).sum() + x.sin().sum(), x, create_graph=True)
    assert True not in spies["accumulate"]
    (second,) = dg.grad(grad.sum(), x)
    np.testing.assert_allclose(second.numpy(), 6 * x.detach().numpy() - np.sin([0.5, 1.5]), rtol=1e-14)


def test_profiler_sees_the_rule_products_and_the_accumulation():
    x, v = dg.tensor([0.5, 1.5, -1.0]), dg.tensor([1.0, 1.0, 2.0])
    with dg.autograd.profiler.profile() as prof:
        _, product = hvp(rosenbrock, x, v)
    names = [event.name for event in prof.function_events]
    assert names.count("mul") >= 12  # every g * d and every tangent term
    assert names.count("add") >= 4  # including the accumulation of x's two gradients
    np.testing.assert_allclose(product.numpy(), rosenbrock_hvp(x.numpy(), v.numpy()), rtol=1e-14)


@pytest.mark.parametrize("shape, index", [
    ((6,), (slice(1, None),)),
    ((6,), (slice(None, -1),)),
    ((6,), (slice(4, 2),)),
    ((6,), (slice(-3, 100),)),
    ((4, 5), (slice(1, 3),)),
    ((4, 5), (slice(1, 3), slice(2, None))),
    ((3, 4, 2), (slice(None), slice(1, 2), slice(0, 1))),
    ((3, 4), ()),
])
def test_scatter_zeroes_exactly_the_complement_of_a_block(shape, index):
    out = np.full(shape, np.nan)
    indexing._zero_outside(out, index)
    out[index] = 1.0
    expected = np.zeros(shape)
    expected[index] = 1.0
    np.testing.assert_array_equal(out, expected)


def test_getitem_gradient_of_blocks_against_numpy():
    x = dg.tensor(np.arange(20.0).reshape(4, 5), requires_grad=True)
    (x[1:3, 2:].sum() * 2 + x[:, :1].sum()).backward()
    expected = np.zeros((4, 5))
    expected[1:3, 2:] += 2
    expected[:, :1] += 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_square_impl_keeps_values_and_dtypes():
    for dtype in (np.float32, np.float64):
        a = np.array([0.5, -3.0, 1e-20], dtype=dtype)
        out = (dg.tensor(a) ** 2).numpy()
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, np.power(a, 2))
    ints = dg.tensor(np.array([2, -3]))
    assert (ints**2).dtype == np.array([2]).dtype
    assert (ints**2.0).numpy().dtype == np.float64  # a float exponent of an int array: NumPy's float power


def test_a_partial_whose_tangent_is_shared_is_not_multiplied_in_place():
    """expm1's partial ``out + 1`` carries ``out``'s own tangent: a second backward must still see it."""
    x, v, w = dg.tensor([0.3, -0.7], requires_grad=True), dg.tensor([1.0, 2.0]), dg.tensor([2.0, 3.0])
    with fwAD.dual_level() as level:
        STATE.dual_levels[level].tape_tangents = False  # (as in hvp: untracked tangents)
        y = (dg.expm1(fwAD.make_dual(x, v)) * w).sum()
        products = [fwAD.unpack_dual(dg.grad(y, x, retain_graph=True)[0]).tangent.numpy() for _ in range(2)]
    expected = w.numpy() * np.exp(x.detach().numpy()) * v.numpy()
    for product in products:
        np.testing.assert_allclose(product, expected, rtol=1e-14)


@pytest.mark.parametrize("shape", [(), (5,), (70_000,), (3, 40_000), (1, 100_000), (40_000, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_product_rule_in_place_by_blocks(shape, dtype):
    """``t_x <- t_x y + t_y x``, ``x <- x y`` block by block: the values of the formula."""
    rng = np.random.default_rng(5)
    x, t_x, y, t_y = (rng.standard_normal(shape).astype(dtype) for _ in range(4))
    expected_tangent, expected = t_x * y + t_y * x, x * y
    fastpath._product_rule_into(x, t_x, y, t_y)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_allclose(t_x, expected_tangent, rtol=1e-6 if dtype == np.float32 else 1e-15)


@pytest.mark.fastpath
def test_a_broadcast_one_is_not_multiplied_and_other_broadcasts_are():
    ones, twos = (np.broadcast_to(np.array(value), (4,)) for value in (1.0, 2.0))
    assert fastpath._is_broadcast_one(ones)
    assert not fastpath._is_broadcast_one(twos) and not fastpath._is_broadcast_one(np.ones(4))
    assert not fastpath._is_broadcast_one(np.ones(0))
    assert not fastpath._is_broadcast_one(np.array(1.0))  # one element: multiplying costs less than checking
    for g, factor in ((ones, 1.0), (twos, 2.0)):
        d = dg.tensor([1.0, -2.0, 3.0, np.nan])
        assert fastpath.multiply_into(d, dg.Tensor(g))
        np.testing.assert_array_equal(d.numpy(), factor * np.array([1.0, -2.0, 3.0, np.nan]))
