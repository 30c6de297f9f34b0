"""dualgrad.scipy.optimize with constraints, bounds and robust losses: solutions differentiated through the KKT
conditions of their active set (closed forms, finite differences of the whole solve, both modes, vmap, second
order), and the ambiguous cases refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, hessian, jacfwd, jacrev, vmap

pytest.importorskip("scipy.optimize")
import scipy.optimize  # noqa: E402

from dualgrad.scipy import optimize  # noqa: E402
from dualgrad.scipy.optimize import DegenerateActiveSetError, robust_cost  # noqa: E402


def fd_jacobian(f, p, h=1e-6):
    p = np.asarray(p, dtype=np.float64)
    cols = [(np.asarray(f(p + h * e.reshape(p.shape))) - np.asarray(f(p - h * e.reshape(p.shape)))) / (2 * h)
            for e in np.eye(p.size)]
    return np.stack(cols, -1).reshape(np.shape(f(p)) + p.shape)


# -- a QP with a known KKT solution ------------------------------------------------------------------
# min 0.5 |x - a|^2  s.t.  sum(x) = b,  x0 - x1 >= 1: at a = (1, 2, 3), b = 3 both constraints are active and
# x is the projection of a onto the affine set {sum = b, x0 - x1 = 1}: dx/da = the projector onto the null space
# of [[1, 1, 1], [1, -1, 0]], i.e. v v^T with v = (1, 1, -2) / sqrt(6); dx/db = its particular solution's slope.
A0, B0 = np.array([1.0, 2.0, 3.0]), 3.0
NULL = np.outer([1.0, 1.0, -2.0], [1.0, 1.0, -2.0]) / 6
ROWS = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]])
DX_DB = (ROWS.T @ np.linalg.solve(ROWS @ ROWS.T, [1.0, 0.0]))


def qp(a, b, method="SLSQP"):
    constraints = [{"type": "eq", "fun": lambda x, b: dg.stack([x.sum() - b]), "args": (b,)},
                   {"type": "ineq", "fun": lambda x: x[0] - x[1] - 1.0}]
    options = {"SLSQP": {"ftol": 1e-14}, "trust-constr": {"gtol": 1e-12, "xtol": 1e-14}}[method]
    return optimize.minimize(lambda x, a: 0.5 * ((x - a) ** 2).sum(), dg.zeros(3), args=(a,), method=method,
                             constraints=constraints, options=options)


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_constrained_qp_matches_its_kkt_closed_form_in_both_modes(method):
    a, b = dg.tensor(A0), dg.tensor(B0)
    result = qp(a, b, method)
    assert result.success
    np.testing.assert_allclose(result.x.numpy(), [1.0, 0.0, 2.0], atol=1e-5)
    forward = jacfwd(lambda a: qp(a, b, method).x)(a).numpy()
    reverse = jacrev(lambda a: qp(a, b, method).x)(a).numpy()
    np.testing.assert_allclose(forward, NULL, atol=1e-6)
    np.testing.assert_allclose(reverse, forward, atol=1e-10)
    # b is a Tensor in a constraint's own args: differentiated too
    np.testing.assert_allclose(jacrev(lambda b: qp(a, b, method).x)(b).numpy(), DX_DB, atol=1e-6)
    np.testing.assert_allclose(jacfwd(lambda b: qp(a, b, method).x)(b).numpy(), DX_DB, atol=1e-6)


def test_constrained_qp_under_vmap_and_second_order():
    a = dg.tensor([[1.0, 2.0, 3.0], [2.0, 0.0, 1.0], [0.0, 3.0, 0.5]])
    b = dg.tensor(B0)
    batched = vmap(jacrev(lambda a: qp(a, b).x))(a).numpy()
    for row, got in zip(a, batched, strict=True):
        np.testing.assert_allclose(got, jacfwd(lambda a: qp(a, b).x)(row).numpy(), atol=1e-9)
    # the solution is affine in a on this active set: its Hessian is zero
    np.testing.assert_allclose(hessian(lambda a: (qp(a, b).x ** 2).sum())(a[0]).numpy(), 2 * NULL.T @ NULL,
                               atol=1e-6)


def nonlinear(a, method="SLSQP"):
    """min sum((x - a)^2) + x0 x1  s.t.  |x|^2 <= 1 (active for the a used), x0 >= -0.5 (inactive)."""
    constraints = [scipy.optimize.NonlinearConstraint(lambda x: (x ** 2).sum(), -np.inf, 1.0),
                   scipy.optimize.LinearConstraint(np.array([[1.0, 0.0]]), -0.5, np.inf)]
    options = {"SLSQP": {"ftol": 1e-12, "maxiter": 500}, "trust-constr": {"gtol": 1e-13, "xtol": 1e-15}}[method]
    return optimize.minimize(lambda x, a: ((x - a) ** 2).sum() + x[0] * x[1], dg.tensor([0.1, 0.1]), args=(a,),
                             method=method, constraints=constraints, options=options).x


def precise_nonlinear(a):
    """The same solution from SciPy's root of the KKT system of the active constraint (``|x|^2 = 1``)."""
    def kkt(z):
        x, mu = z[:2], z[2]
        gradient = 2 * (x - a) + np.array([x[1], x[0]]) + 2 * mu * x
        return np.append(gradient, x @ x - 1.0)

    return scipy.optimize.root(kkt, [0.8, 0.6, 0.5], tol=1e-15).x[:2]


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_nonlinear_and_linear_constraint_objects_match_finite_differences(method):
    a0 = np.array([1.5, 0.7])
    x = nonlinear(dg.tensor(a0), method).numpy()
    assert np.sum(x ** 2) == pytest.approx(1.0, abs=1e-6)
    fd = fd_jacobian(precise_nonlinear, a0, 1e-5)
    forward = jacfwd(lambda a: nonlinear(a, method))(dg.tensor(a0))
    reverse = jacrev(lambda a: nonlinear(a, method))(dg.tensor(a0))
    np.testing.assert_allclose(x, precise_nonlinear(a0), atol=1e-6)
    np.testing.assert_allclose(forward.numpy(), fd, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(reverse.numpy(), fd, rtol=1e-4, atol=1e-5)


def test_inactive_constraints_leave_the_unconstrained_derivative():
    a = dg.tensor([0.2, -0.1])
    cons = {"type": "ineq", "fun": lambda x: 4.0 - (x ** 2).sum()}
    x_of = lambda a: optimize.minimize(lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum(), dg.zeros(2), args=(a,),
                                       method="SLSQP", constraints=cons, options={"ftol": 1e-15}).x
    x = x_of(a).numpy()
    np.testing.assert_allclose(jacrev(x_of)(a).numpy(), np.diag(2 / (2 + 12 * x ** 2)), rtol=1e-6)


def test_bounds_and_constraints_together():
    # min |x - a|^2 s.t. x0 + x1 + x2 = 1, x2 <= 0 (bound, active): x2 = 0, (x0, x1) projected onto x0 + x1 = 1
    a = dg.tensor([0.8, 0.6, 0.5])
    x_of = lambda a: optimize.minimize(lambda x, a: ((x - a) ** 2).sum(), dg.zeros(3), args=(a,), method="SLSQP",
                                       bounds=[(None, None), (None, None), (None, 0.0)],
                                       constraints={"type": "eq", "fun": lambda x: x.sum() - 1.0},
                                       options={"ftol": 1e-15}).x
    np.testing.assert_allclose(x_of(a).numpy(), [0.6, 0.4, 0.0], atol=1e-7)
    expected = np.array([[0.5, -0.5, 0.0], [-0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(jacrev(x_of)(a).numpy(), expected, atol=1e-8)
    np.testing.assert_allclose(jacfwd(x_of)(a).numpy(), expected, atol=1e-8)


def test_degenerate_active_inequality_raises_naming_it():
    # min (x - a)^2 s.t. x >= 0 at a = 0: x = 0 on the constraint with a zero multiplier (one-sided derivatives)
    a = dg.tensor([0.0], requires_grad=True)
    result = optimize.minimize(lambda x, a: ((x - a) ** 2).sum(), dg.tensor([1.0]), args=(a,), method="SLSQP",
                               constraints={"type": "ineq", "fun": lambda x: x}, options={"ftol": 1e-15})
    assert abs(float(result.x.detach()[0])) < 1e-8
    with pytest.raises(DegenerateActiveSetError, match="minimize: cannot differentiate the solution: inequality "
                                                       "constraint 0 is active .* zero multiplier .* strict "
                                                       "complementarity fails"):
        result.x.sum().backward()


def test_degenerate_bound_raises_naming_it():
    a = dg.tensor([0.3, 1.0], requires_grad=True)
    result = optimize.minimize(lambda x, a: ((x - a) ** 2).sum(), dg.zeros(2), args=(a,), method="L-BFGS-B",
                               bounds=[(-1.0, 1.0), (-1.0, 1.0)], options={"gtol": 1e-14, "ftol": 1e-16})
    with pytest.raises(DegenerateActiveSetError, match=r"the upper bound of x\[1\] is active .* zero multiplier"):
        result.x.sum().backward()


def test_bad_constraint_type_raises():
    with pytest.raises(ValueError, match="minimize: a constraint dict needs type 'eq' or 'ineq', got 'le'"):
        optimize.minimize(lambda x: (x ** 2).sum(), dg.zeros(2), constraints={"type": "le", "fun": lambda x: x})
    with pytest.raises(TypeError, match="minimize: constraints must be dicts, NonlinearConstraint or "
                                        "LinearConstraint, got int"):
        optimize.minimize(lambda x: (x ** 2).sum(), dg.zeros(2), constraints=[3])


def test_closed_over_tensor_in_a_constraint_raises():
    b = dg.tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match="minimize: the optimality function uses a Tensor that requires grad"):
        optimize.minimize(lambda x: (x ** 2).sum(), dg.ones(2), method="SLSQP",
                          constraints={"type": "eq", "fun": lambda x: x.sum() - b})


# -- robust least squares ---------------------------------------------------------------------------
T = np.linspace(0.0, 2.0, 9)
Y0 = 1.5 * np.exp(-0.8 * T) + np.array([0.01, -0.02, 0.5, 0.0, -0.01, 0.02, -0.4, 0.01, 0.0])  # two outliers


def model_residuals(p, y):
    return p[0] * dg.exp(-p[1] * dg.tensor(T)) - y


def robust_fit(y, loss, bounds=(-np.inf, np.inf)):
    return optimize.least_squares(model_residuals, dg.tensor([1.0, 0.5]), args=(y,), loss=loss, f_scale=0.1,
                                  bounds=bounds, xtol=1e-15, ftol=1e-15, gtol=1e-15).x


def precise_robust_fit(y, loss, bounds=(-np.inf, np.inf)):
    """SciPy's fit, refined to full precision by a root of the cost's gradient in the coordinates off the bounds
    (least_squares alone stops ~1e-9 short, too coarse for finite differences)."""
    fun = lambda p: p[0] * np.exp(-p[1] * T) - y
    x = scipy.optimize.least_squares(fun, [1.0, 0.5], loss=loss, f_scale=0.1, bounds=bounds, xtol=1e-15,
                                     ftol=1e-15, gtol=1e-15).x
    free = (x > np.asarray(bounds[0]) + 1e-9) & (x < np.asarray(bounds[1]) - 1e-9)
    cost = lambda p: robust_cost(p[0] * dg.exp(-p[1] * dg.tensor(T)) - dg.tensor(y), loss, 0.1)

    def gradient(q):
        p = x.copy()
        p[free] = q
        return grad(cost)(dg.tensor(p)).numpy()[free]

    x[free] = scipy.optimize.root(gradient, x[free], tol=1e-15).x
    return x


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_robust_least_squares_matches_finite_differences_of_the_whole_fit(loss):
    y = dg.tensor(Y0)
    np.testing.assert_allclose(robust_fit(y, loss).numpy(), precise_robust_fit(Y0, loss), rtol=1e-8)
    fd = fd_jacobian(lambda y: precise_robust_fit(y, loss), Y0, 1e-5)
    reverse = jacrev(lambda y: robust_fit(y, loss))(y).numpy()
    np.testing.assert_allclose(reverse, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jacfwd(lambda y: robust_fit(y, loss))(y).numpy(), reverse, atol=1e-10)


def test_robust_cost_is_scipys_cost():
    residuals = np.array([0.05, -0.3, 2.0])
    for loss in ["linear", "soft_l1", "huber", "cauchy", "arctan"]:
        fit = scipy.optimize.least_squares(lambda p: p * 0 + residuals, [0.0], loss=loss, f_scale=0.2, max_nfev=1)
        assert float(robust_cost(dg.tensor(residuals), loss, 0.2)) == pytest.approx(fit.cost, rel=1e-12)


def test_robust_least_squares_with_an_active_bound():
    # the decay rate bounded above below its fitted value: held at the bound, the amplitude refits alone
    bounds = ([-np.inf, 0.0], [np.inf, 0.6])
    y = dg.tensor(Y0)
    x = robust_fit(y, "soft_l1", bounds).numpy()
    assert x[1] == pytest.approx(0.6, abs=1e-9)
    fd = fd_jacobian(lambda y: precise_robust_fit(y, "soft_l1", bounds), Y0, 1e-5)
    np.testing.assert_allclose(jacrev(lambda y: robust_fit(y, "soft_l1", bounds))(y).numpy(), fd, rtol=1e-5,
                               atol=1e-7)


def test_callable_loss_refuses_derivatives():
    y = dg.tensor(Y0, requires_grad=True)
    loss = lambda z: np.vstack([z, np.ones_like(z), np.zeros_like(z)])
    fit = optimize.least_squares(model_residuals, dg.tensor([1.0, 1.0]), args=(y,), loss=loss)
    with pytest.raises(NotImplementedError, match="least_squares: cannot differentiate the solution: only the "
                                                  "losses 'linear', 'soft_l1', .* are differentiable"):
        fit.x.sum().backward()


def test_bounded_robust_fit_and_bounded_scalar_minimum_under_vmap():
    bounds = ([-np.inf, 0.0], [np.inf, 0.6])
    ys = dg.stack([dg.tensor(Y0), dg.tensor(Y0 * 1.1), dg.tensor(Y0 * 0.9)])
    batched = vmap(jacrev(lambda y: robust_fit(y, "huber", bounds)))(ys).numpy()
    for y, got in zip(ys, batched, strict=True):
        np.testing.assert_allclose(got, jacfwd(lambda y: robust_fit(y, "huber", bounds))(y).numpy(), atol=1e-10)
    # minimize_scalar on [1, 2]: the minimum of (x - a)^2 is held at 1 for a < 1, free (x = a) inside
    x_of = lambda a: optimize.minimize_scalar(lambda x, a: (x - a) ** 2, args=(a,), bounds=(1.0, 2.0),
                                              method="bounded", options={"xatol": 1e-12}).x
    np.testing.assert_allclose(vmap(jacrev(x_of))(dg.tensor([0.5, 1.5])).numpy(), [0.0, 1.0], atol=1e-9)


def test_dependent_active_constraints_make_the_kkt_matrix_singular():
    """x0 >= 0 twice (as x0 and 2 x0): both active, their multipliers not unique (LICQ fails)."""
    from dualgrad.implicit import SingularJacobianError

    a = dg.tensor([-1.0, 2.0], requires_grad=True)
    twice = [{"type": "ineq", "fun": lambda x: x[:1]}, {"type": "ineq", "fun": lambda x: 2 * x[:1]}]
    result = optimize.minimize(lambda x, a: ((x - a) ** 2).sum(), dg.ones(2), args=(a,), method="SLSQP",
                               constraints=twice)
    np.testing.assert_allclose(result.x.detach().numpy(), [0.0, 2.0], atol=1e-8)
    with pytest.raises(SingularJacobianError, match="minimize: the Jacobian of the optimality condition .* singular"):
        result.x.sum().backward()


def test_trust_constr_with_default_tolerances_stops_short_of_the_constraint_yet_holds_it():
    """trust-constr (interior point) ends ~5e-4 inside x0 >= 0 with default options: its own multipliers make the
    constraint a candidate, and the derivative holds x0 (d x0 / d a = 0), as SLSQP's does."""
    f = lambda x, a: ((x - a) ** 2).sum()
    a = dg.tensor([-1.0, 2.0])
    for constraint in ({"constraints": {"type": "ineq", "fun": lambda x: x[:1]}},
                       {"bounds": [(0.0, None), (None, None)]}):
        x_of = lambda a, c=constraint: optimize.minimize(f, dg.ones(2), args=(a,), method="trust-constr", **c).x
        assert 1e-4 < float(x_of(a)[0]) < 1e-3
        np.testing.assert_allclose(jacrev(x_of)(a).numpy(), [[0.0, 0.0], [0.0, 1.0]], atol=1e-9)


def test_a_point_far_from_kkt_raises():
    """SLSQP stopped after 2 iterations but allowed: the active set cannot be told; the error says so."""
    a = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    result = optimize.minimize(lambda x, a: 0.5 * ((x - a) ** 2).sum() + 0.1 * (x ** 4).sum(), dg.zeros(3),
                               args=(a,), method="SLSQP", constraints={"type": "ineq", "fun": lambda x: x[0] - 5.0},
                               options={"maxiter": 2}, allow_nonconverged=True)
    with pytest.raises(DegenerateActiveSetError, match="not a KKT point to the accuracy needed"):
        result.x.sum().backward()


@pytest.mark.parametrize("seed", range(6))
def test_random_qps_match_the_closed_form_of_their_active_set(seed):
    """min 0.5 x^T Q x - a^T x, E x = e, G x <= h, 0 <= x with random (feasible) data. The active set read off
    SciPy's solution with NumPy gives the closed form: on it the solution solves the linear KKT system
    [[Q, C^T], [C, 0]] (x, nu) = (a, d), so dx/d(a, e, h) comes from one inverse. (Finite differences of SLSQP's
    solution are too noisy here: its x moves by ~1e-9 between nearby data.)"""
    rng = np.random.default_rng(seed)
    n = 5
    root_q = rng.normal(size=(n, n))
    q_np = root_q @ root_q.T + n * np.eye(n)
    e_np, g_np = rng.normal(size=(1, n)), rng.normal(size=(3, n))
    feasible = rng.random(n)  # (e and h chosen so that this point satisfies every constraint)
    data0 = np.concatenate([rng.normal(size=n) * 3, e_np @ feasible, g_np @ feasible + rng.random(3) * 0.3])
    q, e_rows, g_rows = dg.tensor(q_np), dg.tensor(e_np), dg.tensor(g_np)

    def solve(data):
        a, e, h = data[:n], data[n:n + 1], data[n + 1:]
        constraints = [{"type": "eq", "fun": lambda x, e: e_rows @ x - e, "args": (e,)},
                       {"type": "ineq", "fun": lambda x, h: h - g_rows @ x, "args": (h,)}]
        return optimize.minimize(lambda x, a: 0.5 * x @ (q @ x) - a @ x, dg.zeros(n), args=(a,), method="SLSQP",
                                 bounds=[(0.0, None)] * n, constraints=constraints,
                                 options={"ftol": 1e-13, "maxiter": 1000}).x

    x = solve(dg.tensor(data0)).numpy()
    held = np.flatnonzero(x < 1e-9)
    tight = np.flatnonzero(data0[n + 1:] - g_np @ x < 1e-9)
    c = np.vstack([e_np, g_np[tight], np.eye(n)[held]])  # active constraints as rows: C x = d
    k = c.shape[0]
    kkt = np.block([[q_np, c.T], [c, np.zeros((k, k))]])
    # d = (e, h_tight, 0): its derivative with respect to the data (a, e, h)
    d_data = np.zeros((k, n + 4))
    d_data[0, n] = 1.0
    d_data[1 + np.arange(tight.size), n + 1 + tight] = 1.0
    rhs = np.vstack([np.hstack([np.eye(n), np.zeros((n, 4))]), d_data])
    closed = np.linalg.solve(kkt, rhs)[:n]
    solution = np.linalg.solve(kkt, np.concatenate([data0[:n], data0[n:n + 1], data0[n + 1:][tight],
                                                    np.zeros(held.size)]))
    np.testing.assert_allclose(solution[:n], x, atol=1e-7)
    nu = solution[n + 1:]  # (G x <= h binds with nu > 0, x >= 0 with nu < 0: every active constraint strictly)
    assert np.all(nu[:tight.size] > 1e-6) and np.all(nu[tight.size:] < -1e-6)
    np.testing.assert_allclose(jacrev(solve)(dg.tensor(data0)).numpy(), closed, atol=1e-8)
    np.testing.assert_allclose(jacfwd(solve)(dg.tensor(data0)).numpy(), closed, atol=1e-8)
