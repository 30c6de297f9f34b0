"""Regressions found by the differential run against torch (``test_torch_differential.py``), without torch:
the expected values are torch 2.13's where it is right, and central differences where torch is wrong."""

import numpy as np
import pytest

import dualgrad as dg


def central(f, x, direction, eps=1e-6):
    return (f(x + eps * direction) - f(x - eps * direction)) / (2 * eps)


# -- dualgrad was wrong or raised ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_of_a_number_keeps_the_input_dtype(dtype):
    x = dg.tensor(np.zeros((2, 3), dtype=dtype))
    index = dg.tensor([[1, 0, 1]])
    for out in (x.scatter(0, index, 1.25), dg.scatter(x, 0, index, value=1.25)):
        assert out.dtype == dtype
        assert out.tolist() == [[0.0, 1.25, 0.0], [1.25, 0.0, 1.25]]
    assert dg.scatter(dg.tensor([1, 2]), 0, dg.tensor([0]), value=1.7).tolist() == [1, 2]  # torch: cast to int


def test_scatter_of_a_tensor_of_another_dtype_raises_as_torch():
    x = dg.tensor(np.zeros(3, dtype=np.float32))
    src = dg.tensor([2.0])
    for fn in (x.scatter, x.scatter_add):
        with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
            fn(0, dg.tensor([0]), src)
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_contiguous_works_under_vmap():
    x = dg.tensor(np.arange(12.0).reshape(2, 3, 2), requires_grad=True)
    out = dg.vmap(lambda t: t.mT.contiguous() * 2.0)(x)
    np.testing.assert_array_equal(out.detach().numpy(), 2 * np.swapaxes(np.arange(12.0).reshape(2, 3, 2), 1, 2))
    (g,) = dg.autograd.grad(out.sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3, 2), 2.0))


@pytest.mark.parametrize("dim", [0, -1])
def test_quantile_of_a_0d_tensor_with_keepdim_stays_0d(dim):
    x = dg.tensor(0.5)
    assert dg.quantile(x, 0.3, dim=dim, keepdim=True).shape == ()  # torch 2.13: torch.Size([])
    assert dg.nanquantile(x, 0.3, dim=dim, keepdim=True).shape == ()
    assert dg.quantile(x, dg.tensor([0.3, 0.5]), dim=dim, keepdim=True).shape == (2,)
    batched = dg.vmap(lambda t: dg.quantile(t, 0.3, dim=dim, keepdim=True))(dg.tensor([0.5, 0.7, 0.1]))
    assert batched.shape == (3,) and np.allclose(batched.numpy(), [0.5, 0.7, 0.1])


@pytest.mark.parametrize("fn", [dg.argmax, dg.argmin])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin_of_a_0d_tensor_along_a_dim_under_vmap(fn, keepdim):
    assert fn(dg.tensor(0.5), dim=-1, keepdim=keepdim).shape == ()  # torch: a 0-d index 0
    out = dg.vmap(lambda t: fn(t, dim=0, keepdim=keepdim))(dg.tensor([0.5, 0.7, 0.1]))
    assert out.tolist() == [0, 0, 0]
    with pytest.raises(IndexError, match="Dimension out of range"):
        fn(dg.tensor(0.5), dim=1)


# -- torch 2.13 is wrong here; dualgrad agrees with central differences --------------------------------------------
def test_logcumsumexp_second_order_where_the_cotangent_has_zeros():
    """torch's double backward takes log(grad): NaN where the incoming gradient is 0 and depends on a variable."""
    mask, v = np.array([1.0, 0.0, 1.0]), np.array([0.2, -0.3, 0.5])
    x0 = np.array([0.3, -0.5, 1.1])
    x, w = dg.tensor(x0, requires_grad=True), dg.tensor(0.8, requires_grad=True)
    (gx,) = dg.autograd.grad((dg.logcumsumexp(x, 0) * (w * dg.tensor(mask))).sum(), [x], create_graph=True)
    (gw,) = dg.autograd.grad((gx * dg.tensor(v)).sum(), [w])

    def grad_x(w_value):  # linear in w: the answer is <d/dx sum(lcse(x) * mask), v>
        x = dg.tensor(x0, requires_grad=True)
        (g,) = dg.autograd.grad((dg.logcumsumexp(x, 0) * (w_value * dg.tensor(mask))).sum(), [x])
        return float((g.numpy() * v).sum())

    expected = central(grad_x, 0.8, 1.0)
    assert np.isfinite(gw.item())
    np.testing.assert_allclose(gw.item(), expected, rtol=1e-7)
    np.testing.assert_allclose(gw.item(), 0.520548, atol=1e-6)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_forward_mode(include_self):
    """torch 2.13's forward-mode rule of scatter_reduce "prod" returns zeros."""
    x0, s0 = np.array([0.5, 1.2, 0.7, 1.9]), np.array([0.8, 1.5, 0.3, 1.1])
    tx, ts = np.array([0.3, -0.5, 0.2, 0.1]), np.array([0.7, 0.1, -0.4, 0.6])
    index = dg.tensor([0, 0, 2, 3])

    def f(x, s):
        return dg.scatter_reduce(x, 0, index, s, "prod", include_self=include_self)

    with dg.forward_ad.dual_level():
        out = f(dg.forward_ad.make_dual(dg.tensor(x0), dg.tensor(tx)), dg.forward_ad.make_dual(dg.tensor(s0),
                                                                                            dg.tensor(ts)))
        tangent = dg.forward_ad.unpack_dual(out).tangent.numpy()
    eps = 1e-6
    fd = (f(dg.tensor(x0 + eps * tx), dg.tensor(s0 + eps * ts)).numpy()
          - f(dg.tensor(x0 - eps * tx), dg.tensor(s0 - eps * ts)).numpy()) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-7, atol=1e-9)
    assert np.abs(tangent).max() > 0.1


def test_roll_of_a_0d_tensor_under_vmap_is_the_identity():
    """torch.vmap(lambda t: torch.roll(t, -2)) over a vector rolls across the batch (torch 2.13)."""
    x = dg.tensor([0.0, 1.0, 2.0])
    assert dg.vmap(lambda t: dg.roll(t, -2))(x).tolist() == [0.0, 1.0, 2.0]
    assert dg.roll(dg.tensor(5.0), -2).item() == 5.0


def test_sinc_second_derivative_near_zero_in_float32():
    """Near 0 torch's float32 sinc'' loses 3 digits (-3.29489 at x=-0.0028, exactly -3.28979); dualgrad's does not."""
    x0 = -0.002817855556199955

    def second(dtype):
        x = dg.tensor(np.array([x0], dtype=dtype), requires_grad=True)
        (g,) = dg.autograd.grad(dg.sinc(x).sum(), x, create_graph=True)
        (h,) = dg.autograd.grad(g.sum(), x)
        return float(h.numpy()[0])

    exact = -(np.pi ** 2) / 3 * (1 - (np.pi * x0) ** 2 * 3 / 10)  # the Taylor series of sinc'' at x0
    np.testing.assert_allclose(second(np.float64), exact, rtol=1e-8)
    np.testing.assert_allclose(second(np.float32), exact, rtol=1e-5)


def test_logcumsumexp_rules_keep_float32_accuracy_at_large_values():
    """The log-space rules once added log|t| to x ~ 3000 in float32 (one rounding there is 1e-4): a constant
    tangent 0.5 came out as 0.500016. Exact identities: a constant tangent passes through unchanged, and the
    gradient of sum(logcumsumexp(x)) adds up to the number of elements (each row of weights sums to 1)."""
    x0 = np.array([3029.7, 3028.1, 3031.0, 2990.0], dtype=np.float32)
    with dg.forward_ad.dual_level():
        dual = dg.forward_ad.make_dual(dg.tensor(x0), dg.tensor(np.full(4, 0.5, dtype=np.float32)))
        tangent = dg.forward_ad.unpack_dual(dg.logcumsumexp(dual, 0)).tangent.numpy()
    np.testing.assert_allclose(tangent, 0.5, rtol=1e-6)
    x = dg.tensor(x0, requires_grad=True)
    (g,) = dg.autograd.grad(dg.logcumsumexp(x, 0).sum(), x)
    np.testing.assert_allclose(g.numpy().sum(), 4.0, rtol=1e-6)
    assert g.dtype == np.float32
    (g1,) = dg.autograd.grad(dg.logcumsumexp(x[:1], 0).sum(), x)
    assert g1.numpy().tolist() == [1.0, 0.0, 0.0, 0.0]


def test_nextafter_is_differentiable_in_its_input_as_torch():
    """torch 2.13: d nextafter(x, y) / dx = 1 and / dy = 0 (the step is a constant); it was non-differentiable
    here, so ``nextafter(x, y).sum() + x.sum()`` gave x.grad = 1 where torch gives 2."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = dg.tensor([3.0, 0.0], requires_grad=True)
    (dg.nextafter(x, y).sum() + x.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])
