"""Jacobians seed vmap with an identity basis that matmul's batching rule recognises.

``jacfwd``, ``jacrev`` and ``jacobian(..., vectorize=True)`` make their basis with
``dualgrad.vmap.identity_basis.identity_blocks``; when matmul's batching rule meets such a
block (unchanged, untracked, the very array that was made) it builds the
product from the other operand instead of running a GEMM with the identity.
These tests check the values against the row loop, finite differences and the
GEMM path (the fast path switched off) for the basis on either side, matrices,
several inputs, nested transforms, float32 and complex; that the GEMM really is
skipped; that the result never aliases the other operand; and that a block
that is no longer the identity (changed in place, a view, tracked) is not
taken for one.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, jacobian

import dualgrad as dg
import dualgrad.ops.linalg.products as linalg
from dualgrad.func import jacfwd, jacrev
from dualgrad.profiler import profile
from dualgrad.vmap import identity_basis as _basis

# (shape of the differentiated input, shape of the fixed operand, input on the left of @?)
PRODUCTS = [
    ((4,), (5, 4), False),      # A @ x: a batch of vectors on the right
    ((5,), (5, 3), True),       # x @ A: a batch of vectors on the left
    ((4, 3), (5, 4), False),    # A @ X: a batch of matrices on the right
    ((4,), (4,), False),        # v @ x: vector times a batch of vectors
    ((4, 3), (4,), False),      # v @ X
    ((2, 4), (4, 3), True),     # X @ A: a batch of matrices on the left
    ((2, 4), (4,), True),       # X @ v
    ((2, 3, 4), (4, 5), True),  # a stack of matrices on the left
]


def _random(rng, shape, dtype):
    value = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * rng.standard_normal(shape)
    return value.astype(dtype)


def _function(fixed, left):
    """``tanh`` of the product, plus a term of the input alone, so the Jacobian is not only the product."""
    c = dg.tensor(fixed)

    def f(x):
        product = x @ c if left else c @ x
        return product.tanh() + 0.5 * (x ** 2).sum()

    return f


def _gemm_only(monkeypatch):
    """Switch the fast path off: every operand is an ordinary one."""
    monkeypatch.setattr(linalg, "identity_block_start", lambda t: None)


def _row_loop(f, x):
    return jacobian(f, x, vectorize=False).numpy()


def _forward(f, x):
    return jacobian(f, x, vectorize=True, strategy="forward-mode").numpy()


def _jacfwd(f, x):
    return jacfwd(f)(x).numpy()


@pytest.mark.parametrize("jac", [_forward, _jacfwd])
@pytest.mark.parametrize("shape, fixed, left", PRODUCTS)
def test_jacobian_through_matmul_equals_row_loop_and_finite_differences(shape, fixed, left, jac):
    rng = np.random.default_rng(0)
    x, f = rng.standard_normal(shape), _function(rng.standard_normal(fixed), left)
    got = jac(f, dg.tensor(x))
    np.testing.assert_allclose(got, _row_loop(f, dg.tensor(x)), rtol=1e-12, atol=1e-14)
    eps, columns = 1e-6, []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        plus, minus = (f(dg.tensor(x + s.reshape(shape))).numpy() for s in (step, -step))
        columns.append((plus - minus) / (2 * eps))
    np.testing.assert_allclose(got, np.stack(columns, axis=-1).reshape(got.shape), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape, fixed, left", PRODUCTS)
def test_fast_path_equals_the_gemm_path(shape, fixed, left, dtype, monkeypatch):
    rng = np.random.default_rng(1)
    x, f = dg.tensor(_random(rng, shape, dtype)), _function(_random(rng, fixed, dtype), left)
    fast = [_forward(f, x), _jacfwd(f, x)]
    _gemm_only(monkeypatch)
    gemm = [_forward(f, x), _jacfwd(f, x)]
    for got, expected in zip(fast, gemm, strict=True):
        assert got.dtype == expected.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fixed_dtype, input_dtype", [(np.float32, np.float64), (np.float64, np.float32),
                                                      (np.float64, np.complex128)])
def test_mixed_dtypes_promote_as_the_product(fixed_dtype, input_dtype, monkeypatch):
    rng = np.random.default_rng(2)
    a, x = dg.tensor(_random(rng, (5, 4), fixed_dtype)), dg.tensor(_random(rng, (4,), input_dtype))
    fast = _jacfwd(lambda t: a @ t, x)
    _gemm_only(monkeypatch)
    gemm = _jacfwd(lambda t: a @ t, x)
    assert fast.dtype == gemm.dtype
    np.testing.assert_array_equal(fast, gemm)


@pytest.mark.fastpath
@pytest.mark.parametrize("shape, fixed, left", PRODUCTS)
def test_the_product_with_the_basis_is_skipped(shape, fixed, left):
    """Only the primal product runs: no GEMM with the identity (two products on the old code)."""
    rng = np.random.default_rng(3)
    x, f = dg.tensor(rng.standard_normal(shape)), _function(rng.standard_normal(fixed), left)
    for jac in (_forward, _jacfwd):
        with profile(record_shapes=True) as prof:
            jac(f, x)
        products = [e.input_shapes for e in prof.events() if e.name == "matmul"]
        assert products == [[list(shape), list(fixed)] if left else [list(fixed), list(shape)]]


@pytest.mark.fastpath
def test_several_inputs_use_blocks_of_the_identity():
    rng = np.random.default_rng(4)
    a, b = dg.tensor(rng.standard_normal((3, 4))), dg.tensor(rng.standard_normal((2, 3)))
    x, y = dg.tensor(rng.standard_normal(4)), dg.tensor(rng.standard_normal((2, 2)))

    def f(u, v):
        return (a @ u).sin() + (v @ b).sum(0) * u[:3], (u[:2] @ v).exp()

    expected = jacobian(f, (x, y))
    for got in (jacobian(f, (x, y), vectorize=True, strategy="forward-mode"), jacfwd(f, argnums=(0, 1))(x, y)):
        for row_got, row_expected in zip(got, expected, strict=True):
            for block_got, block_expected in zip(row_got, row_expected, strict=True):
                assert block_got.shape == block_expected.shape
                np.testing.assert_allclose(block_got.numpy(), block_expected.numpy(), rtol=1e-12, atol=1e-14)
    with profile(record_shapes=True) as prof:
        jacobian(f, (x, y), vectorize=True, strategy="forward-mode")
    products = sorted(e.input_shapes for e in prof.events() if e.name == "matmul")
    # the three primal products, and the tangents of u[:2] (a slice of its block: not the identity)
    assert products == [[[2], [2, 2]], [[2, 2], [2, 3]], [[3, 4], [4]], [[8, 2], [2, 2]]]


@pytest.mark.fastpath
def test_blocks_of_several_inputs_start_where_their_columns_do():
    blocks = _basis.identity_blocks([dg.zeros(2), dg.zeros(2, 3), dg.zeros(())])
    assert [b.shape for b in blocks] == [(9, 2), (9, 2, 3), (9,)]
    assert [_basis.identity_block_start(b) for b in blocks] == [0, 2, 8]
    np.testing.assert_array_equal(np.concatenate([b.numpy().reshape(9, -1) for b in blocks], axis=1), np.eye(9))


def test_nested_vmap_of_jacfwd_equals_loop():
    rng = np.random.default_rng(5)
    a, xs = dg.tensor(rng.standard_normal((5, 4))), dg.tensor(rng.standard_normal((3, 4)))

    def f(x):
        return (a @ x).tanh() * x.sum()

    got = dg.vmap(jacfwd(f))(xs)
    for i in range(3):
        np.testing.assert_allclose(got.numpy()[i], jacrev(f)(xs[i]).numpy(), rtol=1e-12)


def test_operand_depending_on_the_input_and_forward_over_forward():
    rng = np.random.default_rng(6)
    x = dg.tensor(rng.standard_normal(4))

    def f(v):
        return v.reshape(2, 2) @ v[:2] + v[2:] @ v.reshape(2, 2)

    np.testing.assert_allclose(jacfwd(f)(x).numpy(), jacrev(f)(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(jacfwd(jacfwd(f))(x).numpy(), jacrev(jacrev(f))(x).numpy(), rtol=1e-12)


def test_hessians_forward_over_reverse():
    rng = np.random.default_rng(7)
    a, x = rng.standard_normal((5, 3)), rng.standard_normal(3)

    def f(t):
        return (dg.tensor(a) @ t).tanh().sum() + (t @ dg.tensor(a.T @ a) @ t)

    d = 1 - np.tanh(a @ x) ** 2
    expected = a.T @ np.diag(-2 * np.tanh(a @ x) * d) @ a + 2 * a.T @ a
    for got in (dg.func.hessian(f)(dg.tensor(x)),
                hessian(f, dg.tensor(x), vectorize=True, outer_jacobian_strategy="forward-mode")):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_the_jacobian_does_not_alias_the_matrix():
    rng = np.random.default_rng(8)
    a_data = rng.standard_normal((5, 4))
    a = dg.tensor(a_data.copy())
    x = dg.tensor(rng.standard_normal(4))
    for jac in (jacfwd(lambda t: a @ t)(x), jacobian(lambda t: t @ a.mT, x, vectorize=True, strategy="forward-mode")):
        np.testing.assert_array_equal(jac.numpy(), a_data)
        assert not np.shares_memory(jac.numpy(), a.numpy())
        jac.add_(1.0)
        np.testing.assert_array_equal(a.numpy(), a_data)
        a.mul_(2.0)
        np.testing.assert_array_equal(jac.numpy(), a_data + 1.0)
        a.copy_(dg.tensor(a_data))


@pytest.mark.fastpath
def test_a_matrix_with_infinities_gives_its_own_entries():
    """The Jacobian of ``A @ x`` is exactly ``A``: a GEMM with the identity would spread ``0 * inf = nan``."""
    a = dg.tensor([[1.0, np.inf], [2.0, 3.0]])
    np.testing.assert_array_equal(jacfwd(lambda t: a @ t)(dg.tensor([1.0, 1.0])).numpy(), a.numpy())


def test_in_place_change_of_a_dual_input_changes_its_tangent():
    """``x.mul_(2)`` writes ``2 * I`` into the basis block: the rule must see an ordinary operand."""
    rng = np.random.default_rng(9)
    a, x = dg.tensor(rng.standard_normal((3, 3))), dg.tensor(rng.standard_normal(3))

    def f(v):
        kept = v * 1
        v.mul_(2)
        return a @ v + kept

    expected = 2 * a.numpy() + np.eye(3)
    for got in (jacfwd(f)(x.clone()), jacobian(f, x.clone(), vectorize=True, strategy="forward-mode")):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14)


@pytest.mark.fastpath
def test_a_block_changed_in_place_is_an_ordinary_operand():
    block = _basis.identity_blocks([dg.zeros(3)])[0]
    assert _basis.identity_block_start(block) == 0
    block.mul_(1.0)
    assert _basis.identity_block_start(block) == 0  # still the identity
    block[0, 1] = 5.0
    assert _basis.identity_block_start(block) is None
    block[0, 1] = 0.0
    block.mul_(2.0)
    assert _basis.identity_block_start(block) is None


@pytest.mark.fastpath
def test_views_copies_and_tracked_blocks_are_not_marked():
    block = _basis.identity_blocks([dg.zeros(3)])[0]
    assert _basis.identity_block_start(block.detach()) == 0  # the same array, untracked
    for other in (block.clone(), block[:], block.reshape(3, 3), block.reshape(9).reshape(3, 3),
                  block.detach().requires_grad_(), dg.tensor(np.eye(3))):
        assert _basis.identity_block_start(other) is None
    with dg.forward_ad.dual_level():
        dual = dg.forward_ad.make_dual(block.detach(), dg.ones(3, 3))
        assert _basis.identity_block_start(dual) is None


def test_an_array_with_another_layout_is_not_marked():
    block = _basis.identity_blocks([dg.zeros(4)])[0]
    block.numpy().shape = (2, 8)  # the same ndarray object, reshaped in place
    assert _basis.identity_block_start(block) is None


@pytest.mark.fastpath
def test_the_registry_forgets_blocks_that_died():
    gc.collect()  # (blocks an earlier test left unreachable would otherwise die inside this test)
    before = len(_basis._REGISTRY)
    blocks = _basis.identity_blocks([dg.zeros(3), dg.zeros(2)])
    assert len(_basis._REGISTRY) == before + 2
    del blocks
    gc.collect()
    assert len(_basis._REGISTRY) == before


def test_a_basis_given_to_vmap_with_a_mismatched_matrix_raises_the_product_error():
    block = _basis.identity_blocks([dg.zeros(3)])[0]
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        dg.vmap(lambda e: dg.ones(2, 4) @ e)(block)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        dg.vmap(lambda e: e @ dg.ones(4, 2))(block)
    np.testing.assert_array_equal(dg.vmap(lambda e: dg.ones(2, 3) @ e)(block).numpy(), np.ones((3, 2)))


def test_empty_inputs_give_empty_jacobians():
    a = dg.tensor(np.arange(12.0).reshape(3, 4))
    jac = jacobian(lambda x, y: a @ x + y.sum(), (dg.zeros(4), dg.zeros(0)), vectorize=True,
                   strategy="forward-mode")
    np.testing.assert_array_equal(jac[0].numpy(), a.numpy())
    assert jac[1].shape == (3, 0)
    assert jacfwd(lambda x: dg.ones(2, 0) @ x)(dg.zeros(0)).shape == (2, 0)
    assert jacfwd(lambda x: dg.ones(2, 3) @ x)(dg.zeros(3, 0)).shape == (2, 0, 3, 0)  # a (0, 2, 0) tangent
