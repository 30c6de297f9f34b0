"""dualgrad.implicit: derivatives of solutions by the implicit function theorem, checked against finite
differences of the whole solve, closed forms and the other mode, through every transform."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
from dualgrad.implicit import (
    NonConvergedError,
    SingularJacobianError,
    custom_fixed_point,
    custom_root,
    linear_solve,
)


def fd_jacobian(f, p, h=1e-6):
    """Central differences of ``f`` (arrays to arrays) at ``p``: shape ``f(p).shape + p.shape``."""
    p = np.asarray(p, dtype=np.float64)
    columns = []
    for e in np.eye(p.size):
        step = h * e.reshape(p.shape)
        columns.append((np.asarray(f(p + step)) - np.asarray(f(p - step))) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(f(p)) + p.shape)


def residual(x, p):
    """A nonlinear system in x (3 unknowns) with 3 parameters."""
    return dg.stack([x[0] ** 3 + p[0] * x[1] - p[2],
                     dg.sin(x[1]) + 2 * x[1] - p[1] * x[0],
                     x[2] * p[2] + x[0] * x[1] - 1.0 + p[0] ** 2])


def newton(init, p):
    """A plain Newton solver on values (never differentiated)."""
    x = init.detach()
    for _ in range(50):
        jacobian = jacfwd(lambda y: residual(y, p))(x)
        x = x - dg.linalg.solve(jacobian, residual(x, p))
    return x


solve = custom_root(residual)(newton)
INIT = dg.tensor([0.5, 0.5, 0.5])
P0 = np.array([0.7, 1.3, 2.0])


def solution(p):
    return solve(INIT, dg.tensor(p)).numpy()


def test_solution_is_a_root_and_not_recorded_per_iteration():
    p = dg.tensor(P0, requires_grad=True)
    x = solve(INIT, p)
    np.testing.assert_allclose(residual(x.detach(), p.detach()).numpy(), 0.0, atol=1e-12)
    assert type(x.grad_fn).__name__ == "_ImplicitSolveBackward"
    assert [type(n).__name__ for n, _ in x.grad_fn.next_functions] == ["AccumulateGrad"]


@pytest.mark.parametrize("transform", [jacfwd, jacrev])
def test_jacobian_matches_finite_differences_of_the_whole_solve(transform):
    jacobian = transform(lambda p: solve(INIT, p))(dg.tensor(P0)).numpy()
    np.testing.assert_allclose(jacobian, fd_jacobian(solution, P0), rtol=1e-7, atol=1e-8)


def test_both_modes_agree_on_vector_products():
    p, v, u = dg.tensor(P0), dg.tensor([0.3, -1.0, 0.5]), dg.tensor([1.0, 2.0, -0.5])
    _, forward = jvp(lambda p: solve(INIT, p), (p,), (v,))
    _, pullback = vjp(lambda p: solve(INIT, p), p)
    assert float((u * forward).sum()) == pytest.approx(float((pullback(u)[0] * v).sum()), rel=1e-12)


def loss(p):
    x = solve(INIT, p)
    return (x ** 2).sum() + x[0] * x[2]


@pytest.mark.parametrize("second", [hessian, lambda f: jacrev(jacrev(f)), lambda f: jacfwd(jacfwd(f)),
                                    lambda f: jacrev(jacfwd(f))], ids=["hessian", "rev-rev", "fwd-fwd", "rev-fwd"])
def test_second_order_through_the_solution(second):
    h = second(loss)(dg.tensor(P0)).numpy()
    fd = fd_jacobian(lambda p: grad(loss)(dg.tensor(p)).numpy(), P0, h=1e-5)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, h.T, atol=1e-12)


def test_double_backward_with_create_graph():
    p = dg.tensor(P0, requires_grad=True)
    (g,) = dg.autograd.grad(loss(p), p, create_graph=True)
    (gg,) = dg.autograd.grad(g[1], p)
    fd = fd_jacobian(lambda q: grad(loss)(dg.tensor(q)).numpy(), P0, h=1e-5)[1]
    np.testing.assert_allclose(gg.numpy(), fd, rtol=1e-6, atol=1e-7)


def test_vmap_over_parameters_and_per_example_jacobians():
    ps = np.stack([P0, P0 * 1.05, P0 * 0.97])
    np.testing.assert_allclose(vmap(lambda p: solve(INIT, p))(dg.tensor(ps)).numpy(),
                               np.stack([solution(p) for p in ps]), atol=1e-12)
    per_example = vmap(jacrev(lambda p: solve(INIT, p)))(dg.tensor(ps)).numpy()
    np.testing.assert_allclose(per_example, np.stack([fd_jacobian(solution, p) for p in ps]), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(vmap(grad(loss))(dg.tensor(ps)).numpy(),
                               np.stack([grad(loss)(dg.tensor(p)).numpy() for p in ps]), atol=1e-12)


def test_root_of_a_quadratic_closed_form():
    # x^2 + b x + c = 0, larger root x = (-b + sqrt(b^2 - 4c)) / 2
    quadratic = custom_root(lambda x, b, c: x ** 2 + b * x + c)(
        lambda init, b, c: (-b + (b ** 2 - 4 * c).sqrt()) / 2 + 0 * init)
    b, c = dg.tensor(3.0, requires_grad=True), dg.tensor(-4.0, requires_grad=True)
    x = quadratic(dg.tensor(0.0), b, c)
    gb, gc = dg.autograd.grad(x, (b, c))
    d = np.sqrt(9.0 + 16.0)
    assert float(x.detach()) == pytest.approx(1.0)
    assert float(gb) == pytest.approx((-1 + 3.0 / d) / 2, rel=1e-12)
    assert float(gc) == pytest.approx(-1 / d, rel=1e-12)
    second = hessian(lambda c: quadratic(dg.tensor(0.0), dg.tensor(3.0), c))(dg.tensor(-4.0))
    assert float(second) == pytest.approx(-2 / d ** 3, rel=1e-9)  # d/dc (-(b^2 - 4c)^(-1/2))


def test_pytree_parameters_and_constants():
    def fn(x, params, scale):
        return x * params["a"] - params["b"][0] * scale

    solver = custom_root(fn)(lambda init, params, scale: params["b"][0] * scale / params["a"])
    a, b = dg.tensor(2.0), dg.tensor(3.0)
    ga, gb = grad(lambda a, b: solver(None, {"a": a, "b": [b]}, 5.0), argnums=(0, 1))(a, b)
    assert float(ga) == pytest.approx(-15.0 / 4.0) and float(gb) == pytest.approx(2.5)


def test_custom_fixed_point():
    def iterate(x, a):
        for _ in range(200):
            x = dg.cos(a * x)
        return x

    fixed = custom_fixed_point(lambda x, a: dg.cos(a * x))(iterate)
    a = dg.tensor(0.8)
    g = grad(lambda a: fixed(dg.tensor(0.5), a))(a)
    x = float(fixed(dg.tensor(0.5), a))
    # x = cos(a x): dx/da = -sin(a x) x / (1 + a sin(a x))
    assert float(g) == pytest.approx(-np.sin(0.8 * x) * x / (1 + 0.8 * np.sin(0.8 * x)), rel=1e-10)


@pytest.mark.parametrize("method", ["dense", "cg", "gmres", "auto"])
def test_linear_solve_matches_the_explicit_inverse(method):
    rng = np.random.default_rng(0)
    m = rng.normal(size=(4, 4))
    a, b = dg.tensor(m @ m.T + 4 * np.eye(4)), dg.tensor(rng.normal(size=4))
    mine = lambda a, b: linear_solve(lambda v, a: a @ v, b, a, symmetric=True, solve=method)
    reference = lambda a, b: dg.linalg.solve(a, b)
    for transform in (jacfwd, jacrev):
        got = transform(mine, argnums=(0, 1))(a, b)
        want = transform(reference, argnums=(0, 1))(a, b)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-8, atol=1e-10)
    h = hessian(lambda a: (mine(a, b) ** 3).sum())(a).numpy()
    np.testing.assert_allclose(h, hessian(lambda a: (reference(a, b) ** 3).sum())(a).numpy(), rtol=1e-7, atol=1e-9)


def test_linear_least_squares_closed_form():
    # normal equations X^T X beta = X^T y: d beta / dy = (X^T X)^{-1} X^T
    rng = np.random.default_rng(1)
    x_data, y = dg.tensor(rng.normal(size=(6, 2))), dg.tensor(rng.normal(size=6))
    fit = lambda y: linear_solve(lambda v, x: x.T @ (x @ v), x_data.T @ y, x_data)
    np.testing.assert_allclose(jacrev(fit)(y).numpy(), np.linalg.pinv(x_data.numpy()), atol=1e-12)


def test_singular_jacobian_raises_instead_of_returning_garbage():
    double_root = custom_root(lambda x, c: (x - c) ** 2)(lambda init, c: c + 0 * init)
    c = dg.tensor(1.0, requires_grad=True)
    x = double_root(dg.tensor(0.0), c)
    with pytest.raises(SingularJacobianError, match=r"singular at the solution \(condition number"):
        x.backward()
    with pytest.raises(SingularJacobianError, match="singular at the solution"):
        jvp(lambda c: double_root(dg.tensor(0.0), c), (dg.tensor(1.0),), (dg.tensor(1.0),))
    assert c.grad is None


def test_krylov_failure_on_a_singular_system_raises():
    singular = dg.tensor([[1.0, 1.0], [1.0, 1.0]], requires_grad=True)
    with pytest.raises(SingularJacobianError, match="(GMRES did not converge|non-finite)"):
        linear_solve(lambda v, a: a @ v, dg.tensor([1.0, 0.0]), singular, solve="gmres")


def test_closed_over_tensor_raises():
    a = dg.tensor(2.0, requires_grad=True)
    solver = custom_root(lambda x, b: x - a * b)(lambda init, b: 2.0 * b)
    with pytest.raises(ValueError, match="requires grad .* without it being passed as a parameter"):
        solver(dg.tensor(0.0), dg.tensor(1.0, requires_grad=True))
    with pytest.raises(ValueError, match="matvec uses a Tensor that requires grad"):
        linear_solve(lambda v: a * v, dg.tensor([1.0]))


def test_bad_solve_method_raises():
    with pytest.raises(ValueError, match="solve must be one of 'auto', 'dense', 'cg', 'gmres', 'sparse', got 'lu'"):
        custom_root(residual, solve="lu")


def test_nonconverged_problem_raises_on_differentiation():
    from dualgrad.implicit import Parameters, RootProblem, root_node

    problem = RootProblem(lambda x, a: x - a, lambda init, a: a, 0.0, Parameters((dg.tensor(1.0,
                          requires_grad=True),)), method="dense", symmetric=False, name="my solver")
    problem.converged, problem.failure = False, "maxiter reached"
    x = root_node(problem)
    with pytest.raises(NonConvergedError, match=r"my solver: cannot differentiate .*\(maxiter reached\).*"
                                                "allow_nonconverged=True"):
        x.backward()
    problem.allow_nonconverged = True
    x.backward()


def test_sparse_solve_uses_dualgrad_sparse():
    pytest.importorskip("dualgrad.sparse")
    n = 30
    chain = lambda x, p: x ** 3 + 2 * x - dg.cat([x[1:], dg.zeros(1)]) * 0.1 - p
    solver = custom_root(chain, solve="sparse")(lambda init, p: newton_chain(p, chain))
    p = dg.tensor(np.linspace(0.5, 2.0, n))
    dense = custom_root(chain, solve="dense")(lambda init, p: newton_chain(p, chain))
    np.testing.assert_allclose(jacrev(lambda p: solver(None, p))(p).numpy(),
                               jacrev(lambda p: dense(None, p))(p).numpy(), atol=1e-12)


def newton_chain(p, fn):
    x = dg.zeros_like(p)
    for _ in range(40):
        x = x - dg.linalg.solve(jacfwd(lambda y: fn(y, p))(x), fn(x, p))
    return x


def test_sparse_solve_without_dualgrad_sparse_raises(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dualgrad.sparse", None)
    solver = custom_root(lambda x, p: x - p, solve="sparse")(lambda init, p: p)
    x = solver(None, dg.tensor([1.0], requires_grad=True))
    with pytest.raises(ImportError, match="solve='sparse' needs dualgrad.sparse"):
        x.sum().backward()


def test_memory_of_the_gradient_does_not_depend_on_the_iterations():
    import tracemalloc

    def peak(iterations):
        fixed = custom_fixed_point(lambda x, a: 0.5 * dg.cos(x) + a)(lambda x, a: iterate(x, a, iterations))
        a = dg.tensor(np.linspace(0, 1, 50), requires_grad=True)
        tracemalloc.start()
        fixed(dg.zeros(50), a).sum().backward()
        result = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return result

    def iterate(x, a, iterations):
        for _ in range(iterations):
            x = 0.5 * dg.cos(x) + a
        return x

    peak(10)
    assert peak(2000) < 1.5 * peak(40)
