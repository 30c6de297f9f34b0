"""solve_ivp sensitivities: every method in both modes against finite differences, second derivatives
(through the nested sensitivity solve), the compiled and eager right-hand sides, sparse Jacobians, events,
vmap over parameters and the errors of what is not supported."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, hessian, jacfwd, jacrev, vmap

pytest.importorskip("scipy.integrate")
from dualgrad.scipy._integrate_rhs import OdeFunctions, is_autonomous  # noqa: E402
from dualgrad.scipy.integrate import SECOND_ORDER_EVENT_MESSAGE, solve_ivp  # noqa: E402

P0 = np.array([1.1, 0.4, 0.4])
Y0 = np.array([2.0, 1.0])
TIMES = np.array([0.5, 1.5, 3.0])
WEIGHTS = np.random.default_rng(1).normal(size=(2, 3))


def lotka(t, y, p):
    return dg.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[1] * y[0] * y[1] - p[2] * y[1]])


def loss(p, y0, sensitivity, method, tol=1e-10):
    sol = solve_ivp(lotka, (0.0, 3.0), y0, args=(p,), t_eval=TIMES, method=method, rtol=tol, atol=tol,
                    sensitivity=sensitivity)
    return (sol.y * dg.tensor(WEIGHTS)).sum()


def central(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_forward_adjoint_and_finite_differences_agree_for_every_method(method):
    forward = grad(loss, argnums=(0, 1))(dg.tensor(P0), dg.tensor(Y0), "forward", method)
    adjoint = grad(loss, argnums=(0, 1))(dg.tensor(P0), dg.tensor(Y0), "adjoint", method)
    fd_p = central(lambda p: float(loss(dg.tensor(p), dg.tensor(Y0), "forward", method)), P0)
    fd_y = central(lambda y: float(loss(dg.tensor(P0), dg.tensor(y), "forward", method)), Y0)
    for got in (forward, adjoint):
        np.testing.assert_allclose(got[0].numpy(), fd_p, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1].numpy(), fd_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(adjoint[0].numpy(), forward[0].numpy(), rtol=1e-6, atol=1e-7)


def test_hessian_matches_finite_differences_of_the_gradient():
    def logistic(p, sensitivity="forward"):
        sol = solve_ivp(lambda t, y, p: p[0] * y - p[1] * y ** 2, (0.0, 2.0), dg.tensor([0.3]), args=(p,),
                        t_eval=[1.0, 2.0], rtol=1e-10, atol=1e-12, sensitivity=sensitivity)
        return (sol.y ** 2).sum()

    p0 = np.array([1.2, 0.8])
    h = hessian(logistic)(dg.tensor(p0)).numpy()
    fd = central(lambda p: grad(logistic)(dg.tensor(p)).numpy(), p0, 1e-5)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, h.T, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jacrev(jacrev(logistic))(dg.tensor(p0)).numpy(), h, rtol=1e-7, atol=1e-9)
    adjoint = jacfwd(jacrev(lambda p: logistic(p, "adjoint")))(dg.tensor(p0)).numpy()
    np.testing.assert_allclose(adjoint, h, rtol=1e-6, atol=1e-8)


def test_second_derivative_with_respect_to_y0_and_grad_of_grad():
    k = dg.tensor(0.7, requires_grad=True)
    y0 = dg.tensor([2.0], requires_grad=True)
    sol = solve_ivp(lambda t, y, k: -k * y ** 2, (0.0, 1.5), y0, args=(k,), t_eval=[1.5], rtol=1e-11,
                    atol=1e-12)
    (gk,) = dg.autograd.grad(sol.y.sum(), k, create_graph=True)
    gk.backward()  # y = y0 / (1 + k y0 t): d2y/dk2 = 2 y0^3 t^2 / (1 + k y0 t)^3
    t, a, b = 1.5, 0.7, 2.0
    assert float(gk.detach()) == pytest.approx(-b * b * t / (1 + a * b * t) ** 2, rel=1e-8)
    assert float(k.grad) == pytest.approx(2 * b ** 3 * t ** 2 / (1 + a * b * t) ** 3, rel=1e-6)
    assert float(y0.grad[0]) == pytest.approx(-2 * b * t / (1 + a * b * t) ** 3, rel=1e-6)


def test_second_derivatives_through_a_terminal_event_raise():
    def hit(t, s, g):
        return s[0]

    hit.terminal, hit.direction = True, -1

    def height_speed(g):
        return solve_ivp(lambda t, s, g: dg.stack([s[1], -g + 0 * s[0]]), (0, 10), dg.tensor([10.0, 0.0]),
                         args=(g,), events=hit, rtol=1e-10, atol=1e-10).y[1, -1]

    assert float(grad(height_speed)(dg.tensor(9.81))) == pytest.approx(-10 / np.sqrt(2 * 9.81 * 10), rel=1e-7)
    with pytest.raises(NotImplementedError, match="solve_ivp: second derivatives of a solution ended by a terminal"):
        hessian(height_speed)(dg.tensor(9.81))
    assert "solve_ivp" in SECOND_ORDER_EVENT_MESSAGE


def test_time_dependent_fun_runs_eagerly_and_is_exact():
    k = dg.tensor(0.8, requires_grad=True)
    fun = lambda t, y, k: -k * t * y  # y = exp(-k t^2 / 2)
    assert not is_autonomous(fun)
    for sensitivity in ("forward", "adjoint"):
        sol = solve_ivp(fun, (0, 2), dg.tensor([1.0]), args=(k,), t_eval=[2.0], method="BDF", rtol=1e-10,
                        atol=1e-12, sensitivity=sensitivity)
        (g,) = dg.autograd.grad(sol.y.sum(), k)
        assert float(g) == pytest.approx(-2.0 * np.exp(-0.8 * 2.0), rel=1e-6)


def test_is_autonomous_reads_the_code():
    scale = 2.0

    class Model:
        def rhs(self, t, y):
            return -y

        def forced(self, t, y):
            return -y + t

    assert is_autonomous(lambda t, y: -scale * y) and is_autonomous(Model().rhs)
    assert not is_autonomous(Model().forced)
    assert not is_autonomous(lambda t, y: [t for _ in range(1)][0] * y)  # (t captured by an inner scope)
    assert not is_autonomous(lambda *a: -a[1])
    assert not is_autonomous(np.negative)
    assert not is_autonomous(lambda t, y: locals()["t"] * y)


def test_compiled_and_eager_right_hand_sides_agree():
    from dualgrad.implicit import Parameters

    p = dg.tensor(P0)
    compiled = OdeFunctions(lotka, Parameters((p,)), [p], 2)
    eager = OdeFunctions(lambda t, y, p: lotka(t, y, p) + 0 * t, Parameters((p,)), [p], 2)
    assert compiled.compiled and not eager.compiled
    y, s = np.array([1.3, 0.7]), np.random.default_rng(0).normal(size=(2, 2))
    directions = (dg.tensor(np.random.default_rng(1).normal(size=(2, 3))),)
    for _ in range(3):  # (trace, checked replay, replay)
        np.testing.assert_allclose(compiled.rhs(0.5, y), eager.rhs(0.5, y))
        for a, b in zip(compiled.moved(0.5, y, s, directions), eager.moved(0.5, y, s, directions), strict=True):
            np.testing.assert_allclose(a, b)
        for a, b in zip(compiled.pullback(0.5, y, s[0]), eager.pullback(0.5, y, s[0]), strict=True):
            np.testing.assert_allclose(a, b)
        np.testing.assert_allclose(compiled.jacobian(0.5, y), eager.jacobian(0.5, y))
        np.testing.assert_allclose(compiled.couplings(0.5, y, s, directions), eager.couplings(0.5, y, s, directions))
        np.testing.assert_allclose(compiled.parameter_jacobian(0.5, y), eager.parameter_jacobian(0.5, y))


def reaction_diffusion(t, y, p):
    """A 1-D reaction-diffusion chain (80 states, tridiagonal Jacobian): the sparse path."""
    left = dg.cat([y[:1], y[:-1]])
    right = dg.cat([y[1:], y[-1:]])
    return p[0] * (left - 2 * y + right) * 100.0 - p[1] * y ** 3


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_large_sparse_state_uses_a_sparse_jacobian(method):
    from dualgrad.implicit import Parameters

    y0 = np.sin(np.linspace(0, np.pi, 80)) + 0.5
    p0 = np.array([1.0, 2.0])
    p = dg.tensor(p0)
    functions = OdeFunctions(reaction_diffusion, Parameters((p,)), [p], 80)
    jac = functions.jacobian(0.0, y0)
    assert functions.sparse and jac.nnz <= 3 * 80
    np.testing.assert_allclose(jac.toarray(), jacfwd(lambda y: reaction_diffusion(0.0, y, p))(dg.tensor(y0)).numpy())
    weights = dg.tensor(np.random.default_rng(2).normal(size=(80, 2)))

    def value(p, sensitivity):
        sol = solve_ivp(reaction_diffusion, (0, 0.5), dg.tensor(y0), args=(p,), t_eval=[0.2, 0.5], method=method,
                        rtol=1e-9, atol=1e-11, sensitivity=sensitivity)
        return (sol.y * weights).sum()

    forward = grad(lambda p: value(p, "forward"))(dg.tensor(p0)).numpy()
    adjoint = grad(lambda p: value(p, "adjoint"))(dg.tensor(p0)).numpy()
    fd = central(lambda q: float(value(dg.tensor(q), "forward")), p0, 1e-6)
    np.testing.assert_allclose(forward, fd, rtol=1e-5)
    np.testing.assert_allclose(adjoint, forward, rtol=1e-5)


@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_vmap_over_parameters_is_the_loop(sensitivity):
    batch = np.stack([P0, P0 * 1.1, P0 * 0.9])
    f = lambda p: loss(p, dg.tensor(Y0), sensitivity, "RK45", 1e-9)
    values = vmap(f)(dg.tensor(batch)).numpy()
    grads = vmap(grad(f))(dg.tensor(batch)).numpy()
    for i, p in enumerate(batch):  # (a member with sensitivities takes other steps than a plain solve)
        assert values[i] == pytest.approx(float(f(dg.tensor(p, requires_grad=True)).detach()), rel=1e-8)
        np.testing.assert_allclose(grads[i], grad(f)(dg.tensor(p)).numpy(), rtol=1e-8)


def test_solution_with_sensitivities_keeps_scipys_fields():
    p = dg.tensor(P0, requires_grad=True)

    def low_prey(t, y, p):
        return y[0] - 1.0

    sol = solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(p,), events=low_prey, rtol=1e-8, atol=1e-8,
                    dense_output=True)
    assert sol.sensitivity == "forward" and sol.y.shape == (2, len(sol.t))
    assert sol.y_events[0].shape == (len(sol.t_events[0]), 2)
    plain = solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(dg.tensor(P0),), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(sol.y.detach().numpy()[:, -1], plain.y.numpy()[:, -1], rtol=1e-6)
    value = sol.sol(2.0)
    (g,) = dg.autograd.grad(value.sum(), p)
    fd = central(lambda q: float(solve_ivp(lotka, (0.0, 2.0), dg.tensor(Y0), args=(dg.tensor(q),), rtol=1e-10,
                                           atol=1e-10).y[:, -1].sum()), P0)
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-5)


def test_non_tensor_arguments_and_custom_solver_classes():
    from scipy.integrate import BDF

    class MyBDF(BDF):
        pass

    k = dg.tensor(0.5, requires_grad=True)
    for method in (MyBDF, "BDF"):
        for sensitivity in ("forward", "adjoint"):
            sol = solve_ivp(lambda t, y, k, c: -k * c * y, (0, 1), dg.tensor([1.0]), args=(k, 2.0), t_eval=[1.0],
                            method=method, rtol=1e-10, atol=1e-12, sensitivity=sensitivity)
            (g,) = dg.autograd.grad(sol.y.sum(), k)
            assert float(g) == pytest.approx(-2.0 * np.exp(-1.0), rel=1e-6)


def test_adjoint_with_events_and_unknown_sensitivity_raise():
    event = lambda t, y: y[0] - 0.5
    with pytest.raises(ValueError, match=r"solve_ivp: events are not supported with sensitivity='adjoint'"):
        solve_ivp(lambda t, y: -y, (0, 1), dg.tensor([1.0]), events=event, sensitivity="adjoint")
    with pytest.raises(ValueError, match="solve_ivp: sensitivity must be one of"):
        solve_ivp(lambda t, y: -y, (0, 1), dg.tensor([1.0]), sensitivity="discrete")
    with pytest.raises(ValueError, match="solve_ivp: method must be a name or an OdeSolver subclass"):
        solve_ivp(lambda t, y: -y, (0, 1), dg.tensor([1.0]), method=object)


def test_repeated_solves_of_one_fun_see_what_it_reads_now():
    rate = 1.0
    weights = np.array([1.0])
    fun = lambda t, y, k: -k * rate * weights * y
    k = dg.tensor(0.5, requires_grad=True)
    for new_rate, new_weight in ((1.0, 1.0), (2.0, 1.0), (2.0, 3.0)):
        rate = new_rate
        weights[0] = new_weight  # (in place: the compiled replay must not keep the old value)
        for sensitivity in ("forward", "adjoint"):
            sol = solve_ivp(fun, (0, 1), dg.tensor([1.0]), args=(k,), t_eval=[1.0], rtol=1e-10, atol=1e-12,
                            sensitivity=sensitivity)
            c = 0.5 * new_rate * new_weight
            assert float(sol.y.detach()[0, 0]) == pytest.approx(np.exp(-c), rel=1e-8)
            (g,) = dg.autograd.grad(sol.y.sum(), k)
            assert float(g) == pytest.approx(-new_rate * new_weight * np.exp(-c), rel=1e-7)
