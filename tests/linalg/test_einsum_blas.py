"""Contractions run on BLAS: every pairwise step of an einsum is one (batched) ``matmul``.

NumPy's own ``einsum`` loop is reached only for one-operand steps (a diagonal, a
sum over a letter), never for a product of two operands: a spy on ``np.einsum``
checks this for plain calls, for gradients and under ``vmap``. Values are checked
against ``np.einsum`` on generated equations.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgrad as dg

LETTERS = "abcdef"
SIZES = dict(zip(LETTERS, (2, 3, 4, 1, 3, 2)))



@st.composite
def equations(draw):
    """An explicit equation over 2 or 3 operands, with batch, contracted, free and repeated letters."""
    n_operands = draw(st.integers(2, 3))
    terms = [draw(st.lists(st.sampled_from(LETTERS), min_size=0, max_size=4)) for _ in range(n_operands)]
    used = sorted(set("".join("".join(t) for t in terms)))
    output = draw(st.permutations(used).map(lambda p: p[: draw(st.integers(0, len(p)))]))
    return ",".join("".join(t) for t in terms) + "->" + "".join(output)


@settings(max_examples=200, deadline=None)
@given(equations(), st.randoms(use_true_random=False))
def test_generated_contractions_equal_numpy_einsum(equation, random):
    rng = np.random.default_rng(random.randint(0, 2**32 - 1))
    terms = equation.split("->")[0].split(",")
    arrays = [rng.standard_normal([SIZES[c] for c in term]) for term in terms]
    got = dg.einsum(equation, *[dg.tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)


TWO_OPERAND_PRODUCTS = [
    ("ijk,mik->mij", (4, 5, 5), (7, 4, 5)),  # a GMM's per-component quadratic form
    ("bnohw,bnchw->boc", (2, 3, 4, 5, 5), (2, 3, 6, 5, 5)),  # a CNN's weight gradient
    ("bij,bjk->bik", (3, 4, 5), (3, 5, 2)),
    ("i,i->", (5,), (5,)),
]


@pytest.mark.parametrize("equation, shape_a, shape_b", TWO_OPERAND_PRODUCTS)
def test_products_and_their_gradients_never_reach_numpys_einsum_loop(einsum_calls, equation, shape_a, shape_b):
    rng = np.random.default_rng(0)
    a = dg.tensor(rng.standard_normal(shape_a), requires_grad=True)
    b = dg.tensor(rng.standard_normal(shape_b), requires_grad=True)
    out = dg.einsum(equation, a, b)
    (out * out).sum().backward()
    assert all(n == 1 for n in einsum_calls), einsum_calls


def test_vmap_of_grad_through_einsum_never_reaches_numpys_einsum_loop(einsum_calls):
    rng = np.random.default_rng(1)
    weights = dg.tensor(rng.standard_normal((6, 3, 3)))
    patches = dg.tensor(rng.standard_normal((8, 4, 3, 5)))

    def loss(w, p):
        return (dg.einsum("ock,nkl->nol", w, p) ** 2).sum()

    per_example = dg.func.vmap(dg.func.grad(loss), in_dims=(None, 0))(weights, patches)
    loop = [dg.func.grad(loss)(weights, p) for p in patches]
    np.testing.assert_allclose(per_example.numpy(), np.stack([g.numpy() for g in loop]), rtol=1e-12)
    assert all(n == 1 for n in einsum_calls), einsum_calls


def test_three_operand_chain_is_contracted_pairwise(einsum_calls):
    a, b, c = (dg.tensor(np.random.default_rng(k).standard_normal(s)) for k, s in enumerate([(3, 4), (4, 5), (5, 2)]))
    np.testing.assert_allclose(dg.einsum("ij,jk,kl->il", a, b, c).numpy(), (a.numpy() @ b.numpy()) @ c.numpy())
    assert einsum_calls == []
