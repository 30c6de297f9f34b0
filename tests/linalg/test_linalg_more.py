"""torch's linear-algebra functions added in ``dualgrad.ops.linalg.matrix_functions`` and ``linalg_lu``.

Their derivative rules are checked by the op-table tests (finite differences, forward
vs reverse, second order, vmap) through ``op_samples_linalg_more.py``; here: values and
gradients against torch 2.13's (pinned), errors with torch's messages, and the
composites and torch's legacy names.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad as dg

F64 = np.float64


def close(actual, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(actual.detach().numpy() if isinstance(actual, dg.Tensor) else actual),
                               np.asarray(expected), rtol=rtol, atol=atol)


# -- matrix_exp -----------------------------------------------------------------------------------------
def test_matrix_exp_matches_torch_with_and_without_squarings():
    a = dg.tensor([[[0.5, -1.0], [2.0, 0.25]], [[8.0, 3.0], [-4.0, 6.0]]], requires_grad=True)
    e = dg.linalg.matrix_exp(a)
    close(e, [[[0.36226490219378626, -1.0193334439337247], [2.0386668878674494, 0.10743154121035436]],
              [[-1137.4564938781778, -172.7365675482764], [230.31542339770198, -1022.2987821793264]]])
    (e[0] * dg.tensor([[1.0, 2.0], [-1.0, 0.5]])).sum().backward()
    close(a.grad[0], [[-1.5775692017704637, 2.01105070729263], [-1.0055253536463145, -2.0837839011654737]])
    close(a.grad[1], np.zeros((2, 2)))


def test_matrix_exp_of_a_complex_matrix_and_its_gradient_match_torch():
    a = dg.tensor([[1j, 1.0], [0.5, -1j]], requires_grad=True)
    e = dg.matrix_exp(a)
    close(e, [[0.7602445970756304 + 0.9187253698655687j, 0.9187253698655687],
              [0.45936268493278437, 0.7602445970756304 - 0.9187253698655687j]])
    (e.real + e.imag * 2).sum().backward()
    close(a.grad, [[3.7621816825757564 + 1.7421307198991358j, 1.4969486343908054 + 2.9938972687816108j],
                   [2.075171898916043 + 4.150343797832086j, -0.8636044336261446 + 4.055023778000086j]])


def test_matrix_exp_keeps_float32_and_gives_the_identity_at_zero():
    out = dg.zeros(3, 2, 2, dtype=dg.float32).matrix_exp()
    assert out.dtype == np.float32
    close(out, np.broadcast_to(np.eye(2), (3, 2, 2)))
    assert dg.linalg.matrix_exp(dg.zeros(2, 0, 0)).shape == (2, 0, 0)


def test_matrix_exp_inverts_exp_of_the_negation():
    a = dg.tensor(np.random.default_rng(0).standard_normal((4, 3, 3)) * 5)
    close(dg.linalg.matrix_exp(a) @ dg.linalg.matrix_exp(-a), np.broadcast_to(np.eye(3), (4, 3, 3)), atol=1e-8)


@pytest.mark.parametrize("x, words", [
    (dg.ones(3, 2), "A must be batches of square matrices, but they are 3 by 2 matrices"),
    (dg.ones(3), "The input tensor A must have at least 2 dimensions"),
    (dg.ones(2, 2, dtype=dg.int64), "Expected a floating point or complex tensor as input"),
])
def test_matrix_exp_errors(x, words):
    with pytest.raises(RuntimeError, match=words):
        dg.linalg.matrix_exp(x)


# -- solve_triangular -----------------------------------------------------------------------------------
T = [[2.0, 5.0, 7.0], [1.0, 4.0, 9.0], [3.0, 2.0, 0.5]]
B = [[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]]


def test_solve_triangular_on_the_right_reads_one_triangle_and_matches_torch():
    t, b = dg.tensor(T, requires_grad=True), dg.tensor(B, requires_grad=True)
    x = dg.linalg.solve_triangular(t, b, upper=True, left=False)
    close(x, [[0.5, -0.125, 1.25], [-0.5, 0.625, 3.75]])
    (x * dg.tensor([[1.0, -2.0, 0.5], [3.0, 1.0, 1.0]])).sum().backward()
    close(t.grad, [[0.625, -0.75, 0.5], [0.0, 2.3125, -1.125], [0.0, 0.0, -8.75]])  # zero below the diagonal
    close(b.grad, [[3.875, -2.75, 1.0], [5.125, -4.25, 2.0]])


def test_solve_triangular_unitriangular_ignores_the_diagonal():
    x = dg.linalg.solve_triangular(dg.tensor(T), dg.tensor(B).mT, upper=False, unitriangular=True)
    close(x, [[1.0, -1.0], [1.0, 1.0], [-2.0, 5.0]])


def test_solve_triangular_broadcasts_stacks_and_gives_inf_nan_for_a_zero_diagonal():
    a = dg.tensor(np.triu(np.ones((3, 3))))
    assert dg.linalg.solve_triangular(a, dg.ones(4, 3, 2, dtype=dg.float64), upper=True).shape == (4, 3, 2)
    singular = np.triu(np.ones((3, 3)))
    singular[1, 1] = 0
    out = dg.linalg.solve_triangular(dg.tensor(singular), dg.ones(3, 1, dtype=dg.float64), upper=True).numpy()
    assert np.isnan(out[:2]).all() and out[2, 0] == 1.0  # torch's values


@pytest.mark.parametrize("a, b, left, words", [
    (dg.ones(3, 3), dg.ones(2, 4), True, r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x4\)"),
    (dg.ones(3, 3), dg.ones(3, 2), False, r"Incompatible shapes of A and B for the equation XA = B \(3x3 and 3x2\)"),
    (dg.ones(3, 3), dg.ones(3), True, "The input tensor B must have at least 2 dimensions"),
    (dg.ones(3, 2), dg.ones(3, 2), True, "A must be batches of square matrices, but they are 3 by 2 matrices"),
    (dg.ones(2, 3, 3), dg.ones(3, 3, 1), True, "do not broadcast"),
])
def test_solve_triangular_errors(a, b, left, words):
    with pytest.raises(RuntimeError, match=words):
        dg.linalg.solve_triangular(a, b, upper=True, left=left)


def test_solve_triangular_needs_upper():
    with pytest.raises(TypeError, match="upper"):
        dg.linalg.solve_triangular(dg.eye(2), dg.ones(2, 1))


def test_triangular_solve_is_the_legacy_form():
    a = dg.tensor(T)
    x, clone = dg.triangular_solve(dg.tensor(B).mT, a, transpose=True)
    close(x, np.linalg.solve(np.triu(T).T, np.asarray(B).T))
    assert clone is not a
    close(clone, T)
    close(dg.tensor(B).mT.triangular_solve(a, upper=False).solution, np.linalg.solve(np.tril(T), np.asarray(B).T))


# -- products ---------------------------------------------------------------------------------------------
def test_vecdot_conjugates_its_first_argument():
    close(dg.linalg.vecdot(dg.tensor([1j, 2.0]), dg.tensor([1j, 1.0])), 3.0)
    close(dg.linalg.vecdot(dg.ones(2, 3), dg.tensor([[1.0], [2.0]]), dim=0), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match="floating point or complex"):
        dg.linalg.vecdot(dg.ones(2, dtype=dg.int64), dg.ones(2, dtype=dg.int64))


def test_matrix_power_at_top_level_and_as_a_method():
    a = dg.tensor([[2.0, 1.0], [0.0, 1.0]])
    close(dg.matrix_power(a, 3), [[8.0, 7.0], [0.0, 1.0]])
    close(a.matrix_power(-1), [[0.5, -0.5], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        dg.matrix_power(dg.ones(2, 3), 2)


def test_vander_in_both_namespaces():
    x = dg.tensor([0.0, 1.5, -2.0], requires_grad=True)
    v = dg.linalg.vander(x, N=4)
    close(v, [[1.0, 0.0, 0.0, 0.0], [1.0, 1.5, 2.25, 3.375], [1.0, -2.0, 4.0, -8.0]])
    v.sum().backward()
    close(x.grad, [1.0, 10.75, 9.0])  # finite at 0
    close(dg.vander(dg.tensor([2.0, 3.0])), [[2.0, 1.0], [3.0, 1.0]])
    close(dg.vander(dg.tensor([2.0, 3.0]), 3, increasing=True), [[1.0, 2.0, 4.0], [1.0, 3.0, 9.0]])
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        dg.linalg.vander(dg.tensor([1.0]))
    with pytest.raises(RuntimeError, match="one-dimensional"):
        dg.vander(dg.ones(2, 2))


def test_add_products_scale_and_ignore_the_input_when_beta_is_zero():
    close(dg.addmv(dg.tensor([1.0, 1.0]), dg.ones(2, 3), dg.tensor([1.0, 2.0, 3.0]), beta=2, alpha=0.5), [5.0, 5.0])
    close(dg.addr(dg.full((2, 2), math.nan), dg.tensor([1.0, 2.0]), dg.tensor([3.0, 4.0]), beta=0),
          [[3.0, 4.0], [6.0, 8.0]])
    close(dg.addbmm(dg.ones(2, 2), dg.ones(3, 2, 4), dg.ones(3, 4, 2), alpha=0.5), np.full((2, 2), 7.0))
    close(dg.baddbmm(dg.ones(2), dg.ones(3, 2, 4), dg.ones(3, 4, 2), beta=-1), np.full((3, 2, 2), 3.0))


def test_add_products_in_place_and_as_methods():
    x = dg.zeros(2)
    assert x.addmv_(dg.eye(2), dg.tensor([1.0, 2.0])) is x
    close(x, [1.0, 2.0])
    y = dg.zeros(2, 2)
    y.addr_(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]))
    y.addbmm_(dg.ones(2, 2, 1), dg.ones(2, 1, 2))
    close(y, [[3.0, 3.0], [4.0, 4.0]])
    z = dg.zeros(1, 2, 2)
    z.baddbmm_(dg.ones(1, 2, 1), dg.ones(1, 1, 2), alpha=3)
    close(z, np.full((1, 2, 2), 3.0))
    close(dg.ones(2).addmv(dg.eye(2), dg.ones(2)), [2.0, 2.0])


@pytest.mark.parametrize("call, words", [
    (lambda: dg.addmv(dg.ones(2), dg.ones(2, 3), dg.ones(3, 1)), "Expected 1-D argument vec, but got 2-D"),
    (lambda: dg.addr(dg.ones(2, 3), dg.ones(2, 1), dg.ones(3)), "addr: Expected 1-D argument vec1, but got 2-D"),
    (lambda: dg.baddbmm(dg.ones(2, 3), dg.ones(2, 3), dg.ones(4, 3, 3)), "expected operands of 3 and 3 dimensions"),
    (lambda: dg.baddbmm(dg.ones(2, 3), dg.ones(4, 2, 3), dg.ones(4, 2, 3)),
     r"Expected size for first two dimensions of batch2 tensor to be: \[4, 3\] but got: \[4, 2\]"),
    (lambda: dg.addmv(dg.ones(3), dg.ones(2, 3), dg.ones(3)), "does not broadcast"),
    (lambda: dg.chain_matmul(dg.ones(2, 2), dg.ones(2)), "Tensor 1 must be 2D, got 1D"),
    (lambda: dg.chain_matmul(), "Expected one or more matrices"),
])
def test_product_errors(call, words):
    with pytest.raises(RuntimeError, match=words):
        call()


def test_diagflat_and_chain_matmul():
    close(dg.diagflat(dg.tensor([[1.0, 2.0]]), -1), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    close(dg.tensor([1.0, 2.0]).diagflat(), [[1.0, 0.0], [0.0, 2.0]])
    close(dg.chain_matmul(dg.ones(2, 3), dg.ones(3, 4), dg.ones(4, 1)), [[12.0], [12.0]])
    a = dg.ones(2, 2)
    assert dg.chain_matmul(a) is not a


# -- Cholesky solvers, legacy names, rank, cond, tensor solvers ------------------------------------------------------
S = [[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]]
BM = [[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]]
CHOL_SOLVE = [[0.06249999999999999, -0.125], [0.4035714285714286, 0.050000000000000044],
              [-0.14285714285714285, 0.9999999999999998]]
CHOL_INV = [[0.3125, -0.125, 0.0], [-0.125, 0.2642857142857143, -0.07142857142857142],
            [0.0, -0.07142857142857142, 0.3571428571428571]]


def test_cholesky_solve_and_inverse_match_torch_for_both_triangles():
    lower = dg.linalg.cholesky(dg.tensor(S))
    close(dg.cholesky_solve(dg.tensor(BM), lower), CHOL_SOLVE)
    close(dg.tensor(BM).cholesky_solve(lower.mT, upper=True), CHOL_SOLVE)
    close(dg.cholesky_inverse(lower), CHOL_INV)
    close(lower.mT.cholesky_inverse(True), CHOL_INV)


def test_cholesky_solve_gradient_lives_in_the_triangle_read():
    # torch also gives the triangle it never reads a gradient; here it is zero (finite differences agree)
    factor = dg.linalg.cholesky(dg.tensor(S)).detach().requires_grad_()
    dg.cholesky_solve(dg.tensor(BM), factor).sum().backward()
    assert (np.triu(factor.grad.numpy(), 1) == 0).all()


def test_legacy_top_level_names():
    a = dg.tensor([[3.0, 1.0], [1.0, -2.0], [0.0, 1.0]])
    u, s, v = dg.svd(a)
    close((u * s) @ v.mT, a.numpy())
    assert [t.shape for t in dg.svd(a, some=False)] == [(3, 3), (2,), (2, 2)]
    zeros_u, _, zeros_v = a.svd(compute_uv=False)
    assert zeros_u.shape == (3, 3) and zeros_v.shape == (2, 2) and not zeros_u.numpy().any()
    q, r = dg.qr(a, some=False)
    assert q.shape == (3, 3) and r.shape == (3, 2)
    close(a.qr().Q @ a.qr().R, a.numpy())
    close(dg.cholesky(dg.tensor(S)) @ dg.cholesky(dg.tensor(S)).mT, S)
    close(dg.tensor(S).cholesky(upper=True), np.linalg.cholesky(np.asarray(S)).T)
    close(dg.pinverse(a), np.linalg.pinv(a.numpy()))
    close(a.pinverse(), np.linalg.pinv(a.numpy()))
    sign, logabsdet = dg.slogdet(dg.tensor([[-2.0, 0.0], [0.0, 3.0]]))
    close(sign, -1.0)
    close(logabsdet, math.log(6.0))


def test_matrix_rank_matches_torch():
    a = dg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1e-3]]])
    assert dg.linalg.matrix_rank(a).tolist() == [1, 2]
    assert dg.linalg.matrix_rank(a, atol=0.01).tolist() == [1, 1]
    assert dg.linalg.matrix_rank(a, tol=0.01).tolist() == [1, 1]
    assert dg.linalg.matrix_rank(a).dtype == np.int64


M = [[1.0, 2.0, 0.5], [4.0, -1.0, 3.0], [2.0, 2.0, 2.0]]


@pytest.mark.parametrize("p, expected", [
    (None, 14.489792206349815), (-2, 0.06901410218717789), ("fro", 16.441183047457383),
    ("nuc", 27.475971592942223), (1, 20.0), (-1, 4.2857142857142865), (math.inf, 24.0), (-math.inf, 2.0),
])
def test_cond_matches_torch(p, expected):
    close(dg.linalg.cond(dg.tensor(M), p), expected)


def test_cond_of_a_singular_matrix_is_inf_and_bad_orders_raise():
    assert dg.linalg.cond(dg.ones(2, 2), 1).item() == math.inf
    with pytest.raises(RuntimeError, match="invalid norm type"):
        dg.linalg.cond(dg.eye(2), 3)


def test_tensorinv_and_tensorsolve():
    a = dg.tensor(np.eye(4).reshape(4, 2, 2) * 2)
    inverse = dg.linalg.tensorinv(a, ind=1)
    assert inverse.shape == (2, 2, 4)
    close(dg.tensordot(a, inverse, 2), np.eye(4))
    k = dg.tensor(np.eye(6).reshape(2, 3, 6) * 2)
    close(dg.linalg.tensorsolve(k, dg.ones(2, 3)), np.full(6, 0.5))
    close(dg.linalg.tensorsolve(k.permute(2, 0, 1), dg.ones(2, 3), dims=(0,)), np.full(6, 0.5))
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got 4 != 2"):
        dg.linalg.tensorinv(dg.ones(2, 2, 2), ind=1)
    with pytest.raises(RuntimeError, match="strictly positive integer for 'ind'"):
        dg.linalg.tensorinv(dg.ones(2, 2), ind=0)


# -- LU -------------------------------------------------------------------------------------------------------
LU = [[4.0, -1.0, 3.0], [0.5, 2.5, 0.5], [0.25, 0.9, -0.7]]


def test_lu_factor_matches_torch_values_pivots_and_gradient():
    m = dg.tensor(M, requires_grad=True)
    lu, pivots = dg.linalg.lu_factor(m)
    close(lu, LU)
    assert pivots.dtype == np.int32 and pivots.tolist() == [2, 3, 3]
    (lu * dg.arange(9.0).reshape(3, 3)).sum().backward()
    close(m.grad, [[-4.2, 1.2, 8.0], [-0.515, -0.76, 1.1], [3.13, 2.92, -2.2]])


def test_lu_and_lu_unpack():
    p, lower, upper = dg.linalg.lu(dg.tensor(M))
    close(p, [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    close(lower, [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.25, 0.9, 1.0]])
    close(upper, [[4.0, -1.0, 3.0], [0.0, 2.5, 0.5], [0.0, 0.0, -0.7]])
    lu, pivots = dg.linalg.lu_factor(dg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))  # a wide matrix
    close(lu, [[4.0, 5.0, 6.0], [0.25, 0.75, 1.5]])
    assert pivots.tolist() == [2, 2]
    p, lower, upper = dg.lu_unpack(lu, pivots)
    close(p @ lower @ upper, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert dg.lu_unpack(lu, pivots, unpack_data=False).L.shape == (0,)


def test_lu_solve_matches_torch():
    lu, pivots = dg.linalg.lu_factor(dg.tensor(M))
    expected = [[1.7142857142857142, -4.0], [0.1428571428571428, -1.0], [-0.6428571428571427, 4.0]]
    close(dg.linalg.lu_solve(lu, pivots, dg.tensor(BM), adjoint=True), expected)
    close(dg.linalg.lu_solve(lu, pivots, dg.tensor(BM).mT, left=False), np.asarray(expected).T)
    close(dg.lu_solve(dg.tensor(BM), lu, pivots), np.linalg.solve(M, BM))
    close(dg.tensor(BM).lu_solve(*dg.tensor(M).lu()), np.linalg.solve(M, BM))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation AX = B"):
        dg.linalg.lu_solve(lu, pivots, dg.ones(2, 2))


def test_lu_errors():
    with pytest.raises(NotImplementedError, match="LU without pivoting is not implemented on the CPU"):
        dg.linalg.lu_factor(dg.eye(2), pivot=False)
    x = dg.ones(2, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="square matrices only"):
        dg.linalg.lu_factor(x).LU.sum().backward()


# -- info outputs -------------------------------------------------------------------------------------------------
def test_ex_functions_report_failures_in_info_as_torch():
    not_pd = dg.tensor([[[4.0, 2.0], [2.0, 5.0]], [[1.0, 2.0], [2.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])
    factor, info = dg.linalg.cholesky_ex(not_pd)
    assert info.dtype == np.int32 and info.tolist() == [0, 2, 1]
    close(factor[0], [[2.0, 0.0], [1.0, 2.0]])
    singular = dg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 1.0]]])
    assert dg.linalg.inv_ex(singular).info.tolist() == [2, 1, 0]
    assert dg.linalg.lu_factor_ex(singular).info.tolist() == [2, 1, 0]
    close(dg.linalg.inv_ex(singular).inverse[2], [[0.5, 0.0], [0.0, 1.0]])
    result, info = dg.linalg.solve_ex(dg.tensor([[2.0, 0.0], [0.0, 4.0]]), dg.tensor([2.0, 4.0]))
    close(result, [1.0, 1.0])
    assert info.tolist() == 0
    close(dg.linalg.cholesky_ex(dg.tensor(S), upper=True).L, np.linalg.cholesky(np.asarray(S)).T)


@pytest.mark.parametrize("call, words", [
    (lambda a: dg.linalg.cholesky_ex(a, check_errors=True), "not positive-definite"),
    (lambda a: dg.linalg.inv_ex(a, check_errors=True), "singular"),
    (lambda a: dg.linalg.solve_ex(a, dg.ones(2), check_errors=True), "singular"),
    (lambda a: dg.linalg.lu_factor_ex(a, check_errors=True), r"\(Batch element 0\): The factorization could not"),
])
def test_ex_functions_raise_with_check_errors(call, words):
    with pytest.raises(RuntimeError, match=words):
        call(dg.tensor([[[1.0, 2.0], [2.0, 4.0]]]) if "Batch" in words else dg.tensor([[1.0, 2.0], [2.0, 4.0]]))


def test_gradients_flow_through_the_ex_functions():
    a = dg.tensor([[3.0, 1.0], [1.0, 2.0]], requires_grad=True)
    dg.linalg.inv_ex(a).inverse.sum().backward()
    expected = dg.tensor([[3.0, 1.0], [1.0, 2.0]], requires_grad=True)
    dg.linalg.inv(expected).sum().backward()
    close(a.grad, expected.grad.numpy())
    b = dg.tensor(S, requires_grad=True)
    dg.linalg.cholesky_ex(b).L.sum().backward()
    c = dg.tensor(S, requires_grad=True)
    dg.linalg.cholesky(c).sum().backward()
    close(b.grad, c.grad.numpy())


# -- eig ----------------------------------------------------------------------------------------------------------
EIG_A = [[1.0, 2.0, 0.0], [-1.0, 1.0, 0.5], [0.0, 0.25, 3.0]]


def test_eig_values_and_their_gradient_match_torch():
    a = dg.tensor(EIG_A, requires_grad=True)
    values, vectors = dg.linalg.eig(a)
    assert values.dtype == np.complex128 and vectors.dtype == np.complex128
    close(values, [0.9793122196145536 + 1.3996553412585584j, 0.9793122196145536 - 1.3996553412585584j,
                   3.0413755607708923])
    close(np.linalg.norm(vectors.detach().numpy(), axis=0), np.ones(3))
    ((values * values).real @ dg.tensor([1.0, -1.0, 0.5])).backward()
    close(a.grad, [[-0.019849505416162067, -0.020260147624971147, -0.12241615127077729],
                   [0.04052029524994252, 0.04135857021922674, 0.24989733944779766],
                   [0.48966460508310994, 0.4997946788955952, 3.019866495967827]])
    close(dg.linalg.eigvals(a), values.detach().numpy())


def test_eig_vector_gradients_are_phase_invariant_functions():
    a = dg.tensor(EIG_A, requires_grad=True)
    values, vectors = dg.linalg.eig(a)
    ((vectors * values.unsqueeze(-2)) @ dg.linalg.inv(vectors)).real.sum().backward()  # = A: gradient ones
    close(a.grad, np.ones((3, 3)), atol=1e-10)


def test_eig_errors():
    with pytest.raises(RuntimeError, match="linalg.eig: A must be batches of square matrices, but they are 2 by 3"):
        dg.linalg.eig(dg.ones(2, 3))
    with pytest.raises(RuntimeError, match="floating point or complex"):
        dg.linalg.eigvals(dg.ones(2, 2, dtype=dg.int64))


def test_info_outputs_and_lu_solvers_under_vmap():
    stack = dg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    assert dg.vmap(lambda a: dg.linalg.inv_ex(a).info)(stack).tolist() == [2, 0]
    assert dg.vmap(lambda a: dg.linalg.cholesky_ex(a).info)(stack).tolist() == [2, 0]
    solved = dg.vmap(lambda a: dg.linalg.lu_solve(*dg.linalg.lu_factor(a), dg.tensor([[3.0], [4.0]])))(stack[1:])
    close(solved, np.linalg.solve(stack[1:].numpy(), [[3.0], [4.0]]))
