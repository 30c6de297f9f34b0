"""The contractions of benchmarks B3 (GMM) and B4 (per-example CNN) run on BLAS in every mode.

A spy on ``np.einsum`` (NumPy's unoptimised loop) records the number of operands of
each call: only one-operand steps (a diagonal, a sum over a letter) may reach it.
Covered: the plain call with its gradients (reverse, and reverse with ``create_graph``),
the tangents of forward mode, ``vmap(grad)`` with a weight broadcast over the batch
(B4's, whose batch axis has stride 0), and ``vmap`` over a ``jvp``. Values are checked
against NumPy's ``einsum`` and against central differences.
"""

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD

REAL_EINSUM = np.einsum  # (expected values: the spy replaces np.einsum itself)



def _gmm_operands(rng):
    k, d, n = 3, 4, 5
    factor = np.tril(rng.standard_normal((k, d, d)))
    centered = rng.standard_normal((n, k, d))
    return factor, centered


def _cnn_operands(rng, batch=4):
    kernel = rng.standard_normal((3, 1, 9)) / 3
    patches = rng.standard_normal((batch, 1, 9, 5, 5))
    return kernel, patches


def test_gmm_contraction_and_its_gradients(einsum_calls):
    factor, centered = _gmm_operands(np.random.default_rng(0))
    f, c = dg.tensor(factor, requires_grad=True), dg.tensor(centered, requires_grad=True)
    out = dg.einsum("kij,nkj->nki", f, c)
    np.testing.assert_allclose(out.detach().numpy(), REAL_EINSUM("kij,nkj->nki", factor, centered), rtol=1e-12)
    gf, gc = dg.grad((out * out).sum(), (f, c), create_graph=True)
    value = out.detach().numpy()
    np.testing.assert_allclose(gf.detach().numpy(), 2 * REAL_EINSUM("nki,nkj->kij", value, centered), rtol=1e-12)
    np.testing.assert_allclose(gc.detach().numpy(), 2 * REAL_EINSUM("nki,kij->nkj", value, factor), rtol=1e-12)
    (gf * gf).sum().backward()  # the gradients' own gradients are contractions too
    assert all(n == 1 for n in einsum_calls), einsum_calls


def test_gmm_tangent_equals_central_differences(einsum_calls):
    rng = np.random.default_rng(1)
    factor, centered = _gmm_operands(rng)
    t_factor, t_centered = rng.standard_normal(factor.shape), rng.standard_normal(centered.shape)
    with fwAD.dual_level():
        out = dg.einsum("kij,nkj->nki", fwAD.make_dual(dg.tensor(factor), dg.tensor(t_factor)),
                        fwAD.make_dual(dg.tensor(centered), dg.tensor(t_centered)))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    h = 1e-6
    plus = REAL_EINSUM("kij,nkj->nki", factor + h * t_factor, centered + h * t_centered)
    minus = REAL_EINSUM("kij,nkj->nki", factor - h * t_factor, centered - h * t_centered)
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-8)
    assert all(n == 1 for n in einsum_calls), einsum_calls


def _cnn_loss(kernel, patches):
    features = dg.einsum("ock,ckhw->ohw", kernel, patches).relu().mean((1, 2))
    return (features * features).sum()


def test_cnn_per_example_gradients_under_vmap_equal_a_loop(einsum_calls):
    kernel, patches = _cnn_operands(np.random.default_rng(2))
    k, p = dg.tensor(kernel), dg.tensor(patches)
    per_example = dg.func.vmap(dg.func.grad(_cnn_loss), in_dims=(None, 0))(k, p)
    loop = np.stack([dg.func.grad(_cnn_loss)(k, p[i]).numpy() for i in range(p.shape[0])])
    np.testing.assert_allclose(per_example.numpy(), loop, rtol=1e-12, atol=1e-15)
    assert all(n == 1 for n in einsum_calls), einsum_calls


def test_cnn_gradient_equals_central_differences():
    kernel, patches = _cnn_operands(np.random.default_rng(3), batch=1)
    p = dg.tensor(patches[0])
    got = dg.func.grad(_cnn_loss)(dg.tensor(kernel), p).numpy()
    h, expected = 1e-6, np.zeros_like(kernel)
    for index in np.ndindex(kernel.shape):
        step = np.zeros_like(kernel)
        step[index] = h
        expected[index] = (_cnn_loss(dg.tensor(kernel + step), p).item()
                           - _cnn_loss(dg.tensor(kernel - step), p).item()) / (2 * h)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_vmap_of_jvp_through_the_cnn_contraction(einsum_calls):
    rng = np.random.default_rng(4)
    kernel, patches = _cnn_operands(rng)
    tangents = rng.standard_normal((2, *kernel.shape))

    def contraction(k):
        return dg.einsum("ock,nckhw->nohw", k, dg.tensor(patches))

    def push(t):
        return dg.func.jvp(contraction, (dg.tensor(kernel),), (t,))[1]

    got = dg.func.vmap(push)(dg.tensor(tangents)).numpy()
    expected = np.stack([REAL_EINSUM("ock,nckhw->nohw", t, patches) for t in tangents])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert all(n == 1 for n in einsum_calls), einsum_calls


@pytest.mark.parametrize("equation, shape_a, shape_b", [
    ("aock,ackhw->aohw", (4, 3, 1, 9), (4, 1, 9, 5, 5)),  # output laid out as the first operand's letters
    ("ackhw,aock->aohw", (4, 1, 9, 5, 5), (4, 3, 1, 9)),  # ... and as the second's: computed as b a
    ("ackhw,aohw->aock", (4, 1, 9, 5, 5), (4, 3, 5, 5)),
    ("ij,jk->ki", (3, 4), (4, 5)),
    ("i,j->ji", (3,), (4,)),
])
def test_either_operand_order_gives_numpys_values(einsum_calls, equation, shape_a, shape_b):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    got = dg.einsum(equation, dg.tensor(a), dg.tensor(b)).numpy()
    np.testing.assert_allclose(got, REAL_EINSUM(equation, a, b), rtol=1e-12, atol=1e-14)
    assert einsum_calls == []
