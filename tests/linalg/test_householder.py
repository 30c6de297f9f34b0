"""``geqrf`` (Householder reflectors) and ``linalg.householder_product`` (``orgqr``): torch's values and errors.

``householder_product`` is built from differentiable ops, so its derivatives are checked against finite
differences in both modes; ``geqrf`` is not differentiable, as in torch, and says so instead of giving zeros.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.ops.linalg.decompositions import LinAlgError

RNG = np.random.default_rng(11)
A = np.array([[2.0, -1.0, 0.5], [1.0, 3.0, -2.0], [0.0, 1.0, 1.0], [4.0, 0.0, -1.0]])


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 5, 3), (3, 4, 4)])
def test_householder_product_of_geqrf_is_the_q_of_qr(shape):
    a = dg.tensor(RNG.standard_normal(shape))
    reflectors, tau = dg.geqrf(a)
    np.testing.assert_allclose(dg.linalg.householder_product(reflectors, tau).numpy(), dg.linalg.qr(a).Q.numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(reflectors.triu().numpy()[..., : shape[-1], :], dg.linalg.qr(a).R.numpy(), atol=1e-12)


def test_complex_reflectors():
    a = dg.tensor(RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3)))
    q = dg.linalg.householder_product(*dg.geqrf(a))
    np.testing.assert_allclose(q.numpy(), np.linalg.qr(a.numpy())[0], atol=1e-12)


def test_values_equal_torchs():
    """torch 2.13: ``householder_product(A, tau)`` with fewer reflectors than columns, and ``geqrf``."""
    got = dg.linalg.householder_product(dg.tensor(A), dg.tensor([1.2, 0.4]))
    np.testing.assert_allclose(got.numpy(), [[-0.2, -0.72, 0.48], [-1.2, -0.12, 0.08], [0.0, -0.4, 0.6],
                                             [-4.8, -2.88, 1.92]], atol=1e-12)
    reflectors, tau = dg.geqrf(dg.tensor([[3.0, 1.0], [4.0, 2.0]]))
    np.testing.assert_allclose(reflectors.numpy(), [[-5.0, -2.2], [0.5, 0.4]], atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), [1.6, 0.0], atol=1e-12)


def test_orgqr_is_the_same_function_top_level_and_as_a_method():
    reflectors, tau = dg.tensor(A), dg.tensor([1.2, 0.4])
    expected = dg.linalg.householder_product(reflectors, tau).numpy()
    np.testing.assert_array_equal(dg.orgqr(reflectors, tau).numpy(), expected)
    np.testing.assert_array_equal(reflectors.orgqr(tau).numpy(), expected)
    assert dg.tensor(A).geqrf().tau.shape == (3,)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2)])
def test_householder_product_derivatives_match_finite_differences_in_both_modes(shape):
    reflectors = dg.tensor(RNG.standard_normal(shape), requires_grad=True)
    tau = dg.tensor(RNG.uniform(0.5, 1.5, shape[:-2] + (shape[-1] - 1,)), requires_grad=True)
    assert dg.autograd.gradcheck(dg.linalg.householder_product, (reflectors, tau), check_forward_ad=True)
    assert dg.autograd.gradgradcheck(dg.linalg.householder_product, (reflectors, tau))


def test_householder_product_under_vmap_equals_the_batched_call():
    reflectors, tau = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 2))
    mapped = dg.vmap(dg.linalg.householder_product)(dg.tensor(reflectors), dg.tensor(tau))
    np.testing.assert_allclose(mapped.numpy(), dg.linalg.householder_product(dg.tensor(reflectors),
                                                                             dg.tensor(tau)).numpy(), atol=1e-14)
    np.testing.assert_allclose(dg.vmap(dg.geqrf)(dg.tensor(reflectors))[0].numpy(),
                               dg.geqrf(dg.tensor(reflectors))[0].numpy(), atol=1e-14)


def test_geqrf_is_not_differentiable_and_says_so_in_both_modes():
    a = dg.tensor(A, requires_grad=True)
    reflectors, _ = dg.geqrf(a)
    assert reflectors.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        reflectors.sum().backward()
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        dg.func.jvp(lambda a: dg.geqrf(a).a, (dg.tensor(A),), (dg.ones(4, 3),))


@pytest.mark.parametrize(("reflectors", "tau", "match"), [
    ((3,), (1,), "input must have at least 2 dimensions"),
    ((2, 3), (1,), r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"),
    ((3, 2), (3,), r"input.shape\[-1\] must be greater than or equal to tau.shape\[-1\]"),
    ((3, 2), (1, 1), "Expected tau to have one dimension less than input, but got tau.ndim equal to 2 and "
                     "input.ndim is equal to 2"),
    ((2, 3, 2), (3, 1), r"Expected batch dimensions of tau to be equal to input.shape\[:-2\], but got \[3\]"),
])
def test_householder_product_errors_are_torchs(reflectors, tau, match):
    with pytest.raises(LinAlgError, match="torch.linalg.householder_product: " + match):
        dg.linalg.householder_product(dg.ones(*reflectors), dg.ones(*tau))


def test_mismatched_dtypes_are_torchs_error():
    with pytest.raises(RuntimeError, match="tau dtype float32 does not match input dtype float64"):
        dg.linalg.householder_product(dg.ones(3, 2), dg.ones(2, dtype=dg.float32))


def test_geqrf_of_a_vector_raises_naming_the_shape():
    with pytest.raises(LinAlgError, match=r"geqrf: input must have at least 2 dimensions. \(got shape \(3,\)\)"):
        dg.geqrf(dg.ones(3))
