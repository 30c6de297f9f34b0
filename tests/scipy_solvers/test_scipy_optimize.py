"""dualgrad.scipy.optimize: SciPy solves, the solution is differentiated implicitly (checked against finite
differences of the whole solve, closed forms and the other mode)."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, hessian, jacfwd, jacrev, vmap
from dualgrad.implicit import NonConvergedError, SingularJacobianError

pytest.importorskip("scipy.optimize")
from dualgrad.scipy import optimize  # noqa: E402


def fd_jacobian(f, p, h=1e-6):
    p = np.asarray(p, dtype=np.float64)
    cols = [(np.asarray(f(p + h * e.reshape(p.shape))) - np.asarray(f(p - h * e.reshape(p.shape)))) / (2 * h)
            for e in np.eye(p.size)]
    return np.stack(cols, -1).reshape(np.shape(f(p)) + p.shape)


def system(x, p):
    return dg.stack([x[0] ** 3 + p[0] * x[1] - p[2], dg.tanh(x[1]) + 2 * x[1] - p[1] * x[0]])


P0 = np.array([0.7, 1.3, 2.0])


def root_x(p):
    return optimize.root(system, dg.tensor([1.0, 0.5]), args=(p,), tol=1e-13).x


@pytest.mark.parametrize("transform", [jacfwd, jacrev])
def test_root_derivative_matches_finite_differences(transform):
    result = optimize.root(system, dg.tensor([1.0, 0.5]), args=(dg.tensor(P0),), tol=1e-13)
    assert result.success and isinstance(result.x, dg.Tensor) and "nfev" in result
    got = transform(root_x)(dg.tensor(P0)).numpy()
    np.testing.assert_allclose(got, fd_jacobian(lambda p: root_x(dg.tensor(p)).numpy(), P0), rtol=1e-6, atol=1e-8)


def test_root_second_order_and_vmap():
    f = lambda p: (root_x(p) ** 2).sum()
    h = hessian(f)(dg.tensor(P0)).numpy()
    np.testing.assert_allclose(h, fd_jacobian(lambda p: grad(f)(dg.tensor(p)).numpy(), P0, 1e-5), rtol=1e-5,
                               atol=1e-6)
    ps = np.stack([P0, 1.1 * P0])
    np.testing.assert_allclose(vmap(jacrev(root_x))(dg.tensor(ps)).numpy(),
                               np.stack([jacrev(root_x)(dg.tensor(p)).numpy() for p in ps]), atol=1e-10)


def quartic(x, a):
    return ((x - a) ** 2).sum() + (x ** 4).sum() + x[0] * x[1]


def precise_minimizer(f, x0, *args):
    """The minimizer to round-off (a root of the exact gradient, SciPy's hybr at tol 1e-14), on arrays."""
    import scipy.optimize

    gradient = lambda x: grad(lambda y: f(y, *(dg.tensor(a) for a in args)))(dg.tensor(x)).numpy()
    return scipy.optimize.root(gradient, x0, tol=1e-14).x


@pytest.mark.parametrize("method", [None, "BFGS", "Newton-CG", "trust-exact", "trust-krylov", "L-BFGS-B"])
def test_minimize_derivative_matches_finite_differences_and_modes_agree(method):
    a0 = np.array([1.0, -2.0])
    options = {"Newton-CG": {"xtol": 1e-13}, "L-BFGS-B": {"gtol": 1e-12, "ftol": 1e-15}, "trust-exact": {"gtol": 1e-8},
               "trust-krylov": {"gtol": 1e-8}}.get(method, {"gtol": 1e-12})
    x_of = lambda a: optimize.minimize(quartic, dg.zeros(2), args=(a,), method=method, options=options).x
    fd = fd_jacobian(lambda a: precise_minimizer(quartic, np.zeros(2), a), a0, 1e-5)
    forward, reverse = jacfwd(x_of)(dg.tensor(a0)).numpy(), jacrev(x_of)(dg.tensor(a0)).numpy()
    np.testing.assert_allclose(forward, reverse, atol=1e-12)
    np.testing.assert_allclose(forward, fd, rtol=1e-6, atol=1e-7)


def test_minimize_hyperparameter_gradient_of_ridge_regression_closed_form():
    # x*(lam) = (A^T A + lam I)^{-1} A^T b; the validation loss is differentiated through the solve
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(8, 3)), rng.normal(size=8)
    train = lambda x, lam: ((dg.tensor(a) @ x - dg.tensor(b)) ** 2).sum() + lam * (x ** 2).sum()
    solve = lambda lam: optimize.minimize(train, dg.zeros(3), args=(lam,), method="trust-exact",
                                          options={"gtol": 1e-12}).x
    got = jacrev(solve)(dg.tensor(0.5)).numpy()
    m = a.T @ a + 0.5 * np.eye(3)
    closed = -np.linalg.solve(m, np.linalg.solve(m, a.T @ b))
    np.testing.assert_allclose(got, closed, rtol=1e-8)


def test_minimize_with_an_active_bound_holds_that_coordinate():
    a = dg.tensor([0.5, -3.0])
    f = lambda x, a: ((x - a) ** 2).sum()
    jac = jacrev(lambda a: optimize.minimize(f, dg.zeros(2), args=(a,), method="L-BFGS-B",
                                             bounds=[(-1.0, 1.0), (-1.0, 1.0)]).x)(a).numpy()
    np.testing.assert_allclose(jac, [[1.0, 0.0], [0.0, 0.0]], atol=1e-9)


def test_least_squares_with_a_linear_model_closed_form():
    rng = np.random.default_rng(2)
    design = rng.normal(size=(10, 3))
    y = dg.tensor(rng.normal(size=10))
    fit = lambda y: optimize.least_squares(lambda p, y: dg.tensor(design) @ p - y, dg.zeros(3), args=(y,)).x
    np.testing.assert_allclose(jacrev(fit)(y).numpy(), np.linalg.pinv(design), atol=1e-8)
    np.testing.assert_allclose(jacfwd(fit)(y).numpy(), np.linalg.pinv(design), atol=1e-8)


def test_nonlinear_least_squares_with_nonzero_residual_matches_finite_differences():
    t = np.linspace(0, 2, 12)
    data0 = 2.0 * np.exp(-0.7 * t) + 0.05 * np.sin(7 * t)
    model = lambda p, t, y: p[0] * dg.exp(-p[1] * dg.tensor(t)) - y
    fit = lambda y: optimize.least_squares(model, dg.tensor([1.0, 0.1]), args=(t, y), xtol=1e-15, ftol=1e-15,
                                           gtol=1e-15).x
    half_squares = lambda p, y: 0.5 * (model(p, t, y) ** 2).sum()
    exact = fd_jacobian(lambda y: precise_minimizer(half_squares, np.array([2.0, 0.7]), y), data0)
    np.testing.assert_allclose(jacrev(fit)(dg.tensor(data0)).numpy(), exact, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jacfwd(fit)(dg.tensor(data0)).numpy(), exact, rtol=1e-6, atol=1e-8)


def test_least_squares_kwargs_are_differentiated():
    fit = lambda c: optimize.least_squares(lambda p, *, c: p - c, dg.zeros(2), kwargs={"c": c}).x
    np.testing.assert_allclose(jacrev(fit)(dg.tensor([1.0, 2.0])).numpy(), np.eye(2), atol=1e-10)


def test_root_scalar_methods_and_closed_form():
    a = dg.tensor(2.0)
    for kwargs in ({"bracket": [0.0, 2.0]}, {"x0": 1.0}, {"x0": 1.0, "method": "halley"},
                   {"x0": 1.0, "x1": 1.5, "method": "secant"}):
        g = grad(lambda a: optimize.root_scalar(lambda x, a: x ** 3 - a, args=(a,), xtol=1e-14, **kwargs).root)(a)
        assert float(g) == pytest.approx(1 / (3 * 2.0 ** (2 / 3)), rel=1e-9)


def test_minimize_scalar_interior_and_bounded():
    a = dg.tensor(0.3)
    f = lambda x, a: (x - a) ** 2 + 0.1 * x ** 4
    g = grad(lambda a: optimize.minimize_scalar(f, args=(a,), options={"xtol": 1e-12}).x)(a)
    x = float(optimize.minimize_scalar(f, args=(a,), options={"xtol": 1e-12}).x)
    assert float(g) == pytest.approx(2 / (2 + 1.2 * x ** 2), rel=1e-7)
    held = grad(lambda a: optimize.minimize_scalar(lambda x, a: (x - a) ** 2, args=(a,), bounds=(1.0, 2.0),
                                                   method="bounded", options={"xatol": 1e-10}).x)(a)
    assert float(held) == 0.0


def test_nonconverged_result_raises_on_differentiation_unless_allowed():
    a = dg.tensor([1.0, -2.0], requires_grad=True)
    result = optimize.minimize(quartic, dg.zeros(2), args=(a,), method="BFGS", options={"maxiter": 1})
    assert not result.success
    with pytest.raises(NonConvergedError, match=r"minimize: cannot differentiate the solution: the solver did not "
                                                r"converge \(.*\).*allow_nonconverged=True"):
        result.x.sum().backward()
    allowed = optimize.minimize(quartic, dg.zeros(2), args=(a,), method="BFGS", options={"maxiter": 1},
                                allow_nonconverged=True)
    allowed.x.sum().backward()
    assert a.grad is not None


def test_singular_optimality_condition_raises():
    c = dg.tensor(0.0, requires_grad=True)
    result = optimize.root(lambda x, c: (x - c) ** 2, dg.tensor([0.0]), args=(c,))
    with pytest.raises(SingularJacobianError, match="root: the Jacobian of the optimality condition .* singular"):
        result.x.sum().backward()


def test_parameters_passed_other_than_in_args_raise():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="minimize: the optimality function uses a Tensor that requires grad"):
        optimize.minimize(lambda x: ((x - a) ** 2).sum(), dg.zeros(2))
    with pytest.raises(ValueError, match="root: the optimality function uses a Tensor that requires grad"):
        optimize.root(lambda x: x - a, dg.zeros(2))


def test_jac_true_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="minimize: jac=True .* not supported"):
        optimize.minimize(lambda x: (x ** 2).sum(), dg.zeros(2), jac=True)
    with pytest.raises(ValueError, match="root: jac=True .* not supported"):
        optimize.root(lambda x: x, dg.zeros(2), jac=True)


def test_package_keeps_the_old_names():
    import dualgrad.scipy as dgs

    assert dgs.minimize is optimize.minimize and dgs.least_squares is optimize.least_squares
    assert dgs.root is optimize.root and callable(dgs.minimize_problem) and callable(dgs.residual_problem)


def test_least_squares_with_an_active_bound():
    y = dg.tensor([0.5, 3.0])
    fit = lambda y: optimize.least_squares(lambda p, y: p - y, dg.zeros(2), bounds=(-1.0, 1.0), args=(y,)).x
    np.testing.assert_allclose(fit(y).numpy(), [0.5, 1.0], atol=1e-8)
    np.testing.assert_allclose(jacrev(fit)(y).numpy(), [[1.0, 0.0], [0.0, 0.0]], atol=1e-8)
    np.testing.assert_allclose(jacfwd(fit)(y).numpy(), [[1.0, 0.0], [0.0, 0.0]], atol=1e-8)


def test_minimize_under_vmap_solves_each_member():
    a = dg.tensor([[1.0, -2.0], [0.5, 0.3], [-1.0, 2.0]])
    x_of = lambda a: optimize.minimize(quartic, dg.zeros(2), args=(a,), options={"gtol": 1e-12}).x
    np.testing.assert_allclose(vmap(x_of)(a).numpy(), np.stack([x_of(row).numpy() for row in a]), atol=1e-9)
    np.testing.assert_allclose(vmap(jacrev(x_of))(a).numpy(), np.stack([jacfwd(x_of)(row).numpy() for row in a]),
                               atol=1e-9)
