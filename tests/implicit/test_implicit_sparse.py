"""dualgrad.implicit on large sparse optimality conditions: solve="auto" factorises the sparse Jacobian from
dualgrad.sparse, shares the factorisation between the jvp and the vjp of one solution, keeps the pattern per
decorated solver and detects it again when it no longer holds."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.forward_ad import dual_level, make_dual, unpack_dual
from dualgrad.implicit import SingularJacobianError, _linear, custom_root

pytest.importorskip("scipy")
pytest.importorskip("dualgrad.sparse")

N = 1500  # above DENSE_LIMIT: "auto" does not take the dense path


def chain(x, p):
    zero = dg.zeros(1)
    return x ** 3 + 3 * x + 0.5 * (dg.cat([zero, x[:-1]]) + dg.cat([x[1:], zero])) - p


def tridiagonal(x):
    import scipy.sparse

    off = np.full(x.size - 1, 0.5)
    return scipy.sparse.diags([off, 3 * x ** 2 + 3, off], [-1, 0, 1], format="csc")


def newton(init, p):
    import scipy.sparse.linalg

    x, target = np.zeros(p.shape[0]), p.detach()
    for _ in range(30):
        x = x - scipy.sparse.linalg.spsolve(tridiagonal(x), chain(dg.tensor(x), target).numpy())
    return x


@pytest.fixture
def factorisations(monkeypatch):
    """The matrices factorised by the sparse and the dense path, in order."""
    seen = []
    sparse, dense = _linear._sparse_factor, _linear._dense_factor
    monkeypatch.setattr(_linear, "_sparse_factor", lambda a, name: seen.append(("sparse", a)) or sparse(a, name))
    monkeypatch.setattr(_linear, "_dense_factor", lambda a, name: seen.append(("dense", a)) or dense(a, name))
    return seen


def test_auto_takes_the_sparse_path_and_matches_the_closed_form(factorisations):
    p = dg.tensor(np.linspace(1.0, 3.0, N), requires_grad=True)
    x = custom_root(chain)(newton)(None, p)
    g = dg.autograd.grad(x.sum(), p)[0].numpy()
    # dx/dp = J^{-1} (F_p = -I), so the gradient of sum(x) is J^{-T} 1
    import scipy.sparse.linalg

    expected = scipy.sparse.linalg.spsolve(tridiagonal(x.detach().numpy()).T.tocsc(), np.ones(N))
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-14)
    assert [kind for kind, _ in factorisations] == ["sparse"]
    assert factorisations[0][1].nnz == 3 * N - 2


def test_jvp_and_vjp_of_one_solution_share_one_factorisation(factorisations):
    p = dg.tensor(np.linspace(1.0, 3.0, N), requires_grad=True)
    direction = dg.tensor(np.cos(np.arange(N)))
    with dual_level():
        x = custom_root(chain)(newton)(None, make_dual(p, direction))
        tangent = unpack_dual(x).tangent.detach().numpy()
        cotangent = dg.autograd.grad((x * dg.tensor(np.sin(np.arange(N)))).sum(), p)[0].numpy()
    assert len(factorisations) == 1
    jacobian = tridiagonal(x.detach().numpy()).toarray()
    np.testing.assert_allclose(tangent, np.linalg.solve(jacobian, direction.numpy()), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cotangent, np.linalg.solve(jacobian.T, np.sin(np.arange(N))), rtol=1e-10,
                               atol=1e-12)


def test_pattern_is_detected_once_per_decorated_solver(monkeypatch):
    import dualgrad.sparse

    calls = []
    detect = dualgrad.sparse.jacobian_fn
    monkeypatch.setattr(dualgrad.sparse, "jacobian_fn", lambda *a, **k: calls.append(1) or detect(*a, **k))
    solve = custom_root(chain)(newton)
    for shift in (0.0, 0.5, 1.0):
        p = dg.tensor(np.linspace(1.0, 3.0, N) + shift, requires_grad=True)
        dg.autograd.grad(solve(None, p).sum(), p)
    assert len(calls) == 1


def test_stale_pattern_is_detected_again_never_a_wrong_number():
    """The coupling x[order] is a parameter: the pattern kept from the first call does not hold at the second."""
    def coupled(x, p, order):
        return x ** 3 + 3 * x + 0.5 * x[order] - p

    def solver(init, p, order):
        x = np.zeros(N)
        for _ in range(40):
            x = x - 0.2 * coupled(dg.tensor(x), p.detach(), order).numpy()
        return x

    solve = custom_root(coupled, solve="sparse")(solver)
    rng = np.random.default_rng(0)
    for order in (np.arange(N)[::-1].copy(), rng.permutation(N)):
        p = dg.tensor(np.linspace(1.0, 2.0, N), requires_grad=True)
        idx = dg.tensor(order)
        x = solve(None, p, idx)
        g = dg.autograd.grad(x.sum(), p)[0].numpy()
        xv = x.detach().numpy()
        jacobian = np.diag(3 * xv ** 2 + 3)
        jacobian[np.arange(N), order] += 0.5
        np.testing.assert_allclose(g, np.linalg.solve(jacobian.T, np.ones(N)), rtol=1e-10, atol=1e-12)


def test_dense_fallback_above_the_density_limit(factorisations):
    """A dense coupling (every unknown sees the mean): "auto" goes matrix-free, not sparse LU."""
    def mean_coupled(x, p):
        return x ** 3 + 3 * x + x.mean() - p

    def solver(init, p):
        x = np.zeros(N)
        for _ in range(60):
            x = x - 0.2 * mean_coupled(dg.tensor(x), p.detach()).numpy()
        return x

    p = dg.tensor(np.linspace(1.0, 2.0, N), requires_grad=True)
    x = custom_root(mean_coupled)(solver)(None, p)
    g = dg.autograd.grad(x.sum(), p)[0].numpy()
    xv = x.detach().numpy()
    jacobian = np.diag(3 * xv ** 2 + 3) + 1.0 / N
    np.testing.assert_allclose(g, np.linalg.solve(jacobian.T, np.ones(N)), rtol=1e-8)
    assert factorisations == []


def test_singular_sparse_jacobian_raises():
    def degenerate(x, p):  # x_0 enters only through x_0 - x_0: its column of J is zero
        return dg.cat([x[:1] - x[:1] + p[:1], x[1:] - p[1:]])

    p = dg.tensor(np.zeros(N), requires_grad=True)
    x = custom_root(degenerate, solve="sparse")(lambda init, q: np.zeros(N))(None, p)
    with pytest.raises(SingularJacobianError, match="sparse Jacobian of the optimality condition .* singular"):
        dg.autograd.grad(x.sum(), p)


def small_chain_solution(p, solve):
    return custom_root(chain, solve=solve)(lambda init, q: newton(None, q))(None, p)


def test_second_order_and_vmap_through_the_sparse_path_match_the_dense_path():
    from dualgrad.func import hessian, jacrev, vmap

    p0 = dg.tensor(np.linspace(0.5, 2.0, 6))
    loss = lambda solve: (lambda p: (small_chain_solution(p, solve) ** 3).sum())
    sparse_h, dense_h = hessian(loss("sparse"))(p0).numpy(), hessian(loss("dense"))(p0).numpy()
    np.testing.assert_allclose(sparse_h, dense_h, rtol=1e-10, atol=1e-12)
    step = 1e-5
    fd = np.stack([(jacrev(loss("dense"))(p0 + step * e).numpy() - jacrev(loss("dense"))(p0 - step * e).numpy())
                   / (2 * step) for e in dg.eye(6)], -1)
    np.testing.assert_allclose(sparse_h, fd, rtol=1e-6, atol=1e-8)
    batch = dg.stack([p0, p0 * 1.1, p0 * 0.9])
    np.testing.assert_allclose(vmap(jacrev(lambda p: small_chain_solution(p, "sparse")))(batch).numpy(),
                               vmap(jacrev(lambda p: small_chain_solution(p, "dense")))(batch).numpy(),
                               rtol=1e-10, atol=1e-12)


def test_a_pattern_that_does_not_hold_falls_back_or_raises(monkeypatch):
    """If dualgrad.sparse gave a wrong pattern (simulated: the diagonal only), "auto" goes matrix-free and
    "sparse" raises; neither returns the wrong number."""
    import scipy.sparse

    import dualgrad.sparse

    detect = dualgrad.sparse.jacobian_fn

    def diagonal_only(f, x0, **kwargs):
        return detect(f, x0, sparsity=scipy.sparse.eye(x0.shape[0], format="csr"), **kwargs)

    monkeypatch.setattr(dualgrad.sparse, "jacobian_fn", diagonal_only)
    p = dg.tensor(np.linspace(1.0, 3.0, N), requires_grad=True)
    g = dg.autograd.grad(custom_root(chain)(newton)(None, p).sum(), p)[0].numpy()
    x = newton(None, p)
    import scipy.sparse.linalg

    np.testing.assert_allclose(g, scipy.sparse.linalg.spsolve(tridiagonal(x).T.tocsc(), np.ones(N)), rtol=1e-8)
    x = custom_root(chain, solve="sparse")(newton)(None, p)
    with pytest.raises(SingularJacobianError, match="disagrees with a jvp of the optimality condition"):
        dg.autograd.grad(x.sum(), p)


def test_linear_solve_auto_factorises_a_large_sparse_matvec_once(factorisations):
    from dualgrad.implicit import linear_solve

    def matvec(v, d):
        zero = dg.zeros(1)
        return d * v + 0.5 * (dg.cat([zero, v[:-1]]) + dg.cat([v[1:], zero]))

    d = dg.tensor(np.linspace(2.0, 3.0, N), requires_grad=True)
    b = dg.tensor(np.cos(np.arange(N)), requires_grad=True)
    x = linear_solve(matvec, b, d)
    w = dg.tensor(np.sin(np.arange(N)))
    gb, gd = dg.autograd.grad((x * w).sum(), (b, d))
    matrix = np.diag(d.detach().numpy()) + 0.5 * (np.eye(N, k=1) + np.eye(N, k=-1))
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(matrix, b.detach().numpy()), rtol=1e-10)
    adjoint = np.linalg.solve(matrix.T, w.numpy())
    np.testing.assert_allclose(gb.numpy(), adjoint, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(gd.numpy(), -adjoint * x.detach().numpy(), rtol=1e-10, atol=1e-13)
    assert [kind for kind, _ in factorisations] == ["sparse"]


def test_arrowhead_jacobian_takes_a_bidirectional_colouring(factorisations):
    """x_0 couples to every equation and every equation to x_0: neither direction alone colours it cheaply."""
    def arrow(x, p):
        return x ** 3 + 4 * x + 0.1 * x[0] + dg.cat([x[1:].sum().reshape(1) / N, dg.zeros(N - 1)]) - p

    def solver(init, p):
        x = np.zeros(N)
        for _ in range(80):
            x = x - 0.2 * arrow(dg.tensor(x), p.detach()).numpy()
        return x

    p = dg.tensor(np.linspace(1.0, 2.0, N), requires_grad=True)
    x = custom_root(arrow)(solver)(None, p)
    g = dg.autograd.grad(x.sum(), p)[0].numpy()
    xv = x.detach().numpy()
    jacobian = np.diag(3 * xv ** 2 + 4)
    jacobian[:, 0] += 0.1
    jacobian[0, 1:] += 1.0 / N
    np.testing.assert_allclose(g, np.linalg.solve(jacobian.T, np.ones(N)), rtol=1e-8)
    assert [kind for kind, _ in factorisations] == ["sparse"]
