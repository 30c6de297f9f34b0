"""dualgrad.scipy.integrate.solve_ivp: forward and adjoint sensitivities against closed forms (exponential decay,
matrix exponential), finite differences and each other; events, dense output, transforms and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, jacfwd, jacrev, vmap
from dualgrad.implicit import NonConvergedError

scipy_linalg = pytest.importorskip("scipy.linalg")
from dualgrad.scipy.integrate import solve_ivp  # noqa: E402

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
RNG = np.random.default_rng(0)
A0 = RNG.normal(size=(3, 3)) * 0.5
Y00 = np.array([1.0, -0.5, 0.3])
TIMES = np.array([0.5, 1.0, 2.0])


def linear_solution(a, y0, sensitivity, method="RK45"):
    return solve_ivp(lambda t, y, a: a @ y, (0.0, 2.0), y0, args=(a,), t_eval=TIMES, method=method,
                     sensitivity=sensitivity, **TIGHT).y


def expm_solution(a):
    return np.stack([scipy_linalg.expm(a * t) @ Y00 for t in TIMES], 1)


def fd_jacobian(f, p, h=1e-6):
    p = np.asarray(p, dtype=np.float64)
    cols = [(f(p + h * e.reshape(p.shape)) - f(p - h * e.reshape(p.shape))) / (2 * h) for e in np.eye(p.size)]
    return np.stack(cols, -1).reshape(np.shape(f(p)) + p.shape)


def test_exponential_decay_closed_form_in_both_sensitivities():
    for sensitivity in ("forward", "adjoint"):
        k, y0 = dg.tensor(0.7, requires_grad=True), dg.tensor([2.0], requires_grad=True)
        sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 3.0), y0, args=(k,), t_eval=[1.0, 3.0],
                        sensitivity=sensitivity, **TIGHT)
        assert sol.sensitivity == sensitivity and isinstance(sol.y, dg.Tensor) and sol.success
        t = np.array([1.0, 3.0])
        np.testing.assert_allclose(sol.y.detach().numpy()[0], 2.0 * np.exp(-0.7 * t), rtol=1e-9)
        gk, gy0 = dg.autograd.grad(sol.y.sum(), (k, y0))
        assert float(gk) == pytest.approx(float(np.sum(-2.0 * t * np.exp(-0.7 * t))), rel=1e-7)
        assert float(gy0[0]) == pytest.approx(float(np.sum(np.exp(-0.7 * t))), rel=1e-7)


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_linear_ode_matches_the_matrix_exponential(method, sensitivity):
    a, y0 = dg.tensor(A0), dg.tensor(Y00)
    loss = lambda a, y0: (linear_solution(a, y0, sensitivity, method) ** 2).sum()
    ga, gy0 = grad(loss, argnums=(0, 1))(a, y0)
    exact = expm_solution(A0)
    ja = fd_jacobian(expm_solution, A0)  # (3, 3 times, 3, 3): differences of the closed form
    np.testing.assert_allclose(ga.numpy(), np.einsum("ij,ijkl->kl", 2 * exact, ja), rtol=1e-6, atol=1e-7)
    jy = np.stack([scipy_linalg.expm(A0 * t) for t in TIMES], 1)
    np.testing.assert_allclose(gy0.numpy(), np.einsum("ij,ijk->k", 2 * exact, jy), rtol=1e-6, atol=1e-7)


def test_forward_and_adjoint_agree_with_each_other_and_finite_differences():
    def lotka(t, y, p):
        return dg.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    p0 = np.array([1.1, 0.4, 0.1, 0.4])
    weights = dg.tensor(RNG.normal(size=(2, 5)))
    times = np.linspace(1, 10, 5)

    def loss(p, sensitivity):
        sol = solve_ivp(lambda t, y, p: lotka(t, y, p), (0, 10), dg.tensor([10.0, 5.0]), args=(p,), t_eval=times,
                        sensitivity=sensitivity, rtol=1e-9, atol=1e-9)
        return (sol.y * weights).sum()

    forward = grad(lambda p: loss(p, "forward"))(dg.tensor(p0)).numpy()
    adjoint = grad(lambda p: loss(p, "adjoint"))(dg.tensor(p0)).numpy()
    fd = fd_jacobian(lambda p: np.array(float(loss(dg.tensor(p), "forward"))), p0, 1e-6)
    np.testing.assert_allclose(forward, fd, rtol=1e-5)
    np.testing.assert_allclose(adjoint, forward, rtol=1e-6)


def test_jacobians_and_vmap():
    a, y0 = dg.tensor(A0), dg.tensor(Y00)
    reference = np.stack([scipy_linalg.expm(A0 * t) for t in TIMES], 1)  # dY/dy0
    for sensitivity in ("forward", "adjoint"):
        for transform in (jacfwd, jacrev):
            got = transform(lambda y: linear_solution(a, y, sensitivity))(y0).numpy()
            np.testing.assert_allclose(got, reference, rtol=1e-8, atol=1e-10)
    batch = dg.tensor(np.stack([Y00, -2 * Y00]))
    np.testing.assert_allclose(vmap(lambda y: linear_solution(a, y, "forward"))(batch).numpy()[1],
                               -2 * expm_solution(A0), rtol=1e-8)
    per_example = vmap(grad(lambda y: linear_solution(a, y, "adjoint").sum()))(batch).numpy()
    np.testing.assert_allclose(per_example, np.tile(reference.sum((0, 1)), (2, 1)), rtol=1e-7)


def test_stiff_robertson_forward_and_adjoint_with_exact_jacobian():
    def robertson(t, y, k):
        return dg.stack([-k[0] * y[0] + k[2] * y[1] * y[2], k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                         k[1] * y[1] ** 2])

    k0 = np.array([0.04, 3e7, 1e4])
    times = np.logspace(-4, 1, 4)

    def loss(k, sensitivity):
        sol = solve_ivp(robertson, (0, 10.0), dg.tensor([1.0, 0.0, 0.0]), args=(k,), method="BDF", t_eval=times,
                        rtol=1e-8, atol=1e-12, sensitivity=sensitivity)
        return sol.y[0].sum() + 1e4 * sol.y[1].sum()

    forward = grad(lambda k: loss(k, "forward"))(dg.tensor(k0)).numpy()
    adjoint = grad(lambda k: loss(k, "adjoint"))(dg.tensor(k0)).numpy()
    rel = lambda i: (float(loss(dg.tensor(k0 * (1 + 1e-5 * np.eye(3)[i])), "forward"))
                     - float(loss(dg.tensor(k0 * (1 - 1e-5 * np.eye(3)[i])), "forward"))) / (2e-5 * k0[i])
    np.testing.assert_allclose(forward, [rel(i) for i in range(3)], rtol=1e-4)
    np.testing.assert_allclose(adjoint, forward, rtol=1e-4)


def test_terminal_event_time_moves_with_the_parameters():
    def fall(t, s, g):
        return dg.stack([s[1], -g + 0 * s[0]])

    def hit(t, s, g):
        return s[0]

    hit.terminal, hit.direction = True, -1
    g, s0 = dg.tensor(9.81, requires_grad=True), dg.tensor([10.0, 2.0], requires_grad=True)
    sol = solve_ivp(fall, (0, 10), s0, args=(g,), events=hit, **TIGHT)
    assert sol.status == 1 and len(sol.t_events[0]) == 1 and sol.sensitivity == "forward"
    impact = np.sqrt(2.0 ** 2 + 2 * 9.81 * 10.0)  # v = -sqrt(v0^2 + 2 g h)
    dg_, ds0 = dg.autograd.grad(sol.y[1, -1], (g, s0))
    assert float(dg_) == pytest.approx(-10.0 / impact, rel=1e-8)
    np.testing.assert_allclose(ds0.numpy(), [-9.81 / impact, -2.0 / impact], rtol=1e-8)


def test_dense_output_is_differentiable():
    k = dg.tensor(0.5, requires_grad=True)
    sol = solve_ivp(lambda t, y, k: -k * y, (0, 2), dg.tensor([1.0]), args=(k,), dense_output=True, **TIGHT)
    value = sol.sol(1.5)
    assert value.shape == (1,)
    assert float(dg.autograd.grad(value.sum(), k)[0]) == pytest.approx(-1.5 * np.exp(-0.75), rel=1e-8)
    assert sol.sol([0.5, 1.0]).shape == (1, 2)


def test_exact_jacobian_is_given_to_stiff_methods():
    calls = []

    def jac(t, y):
        calls.append(t)
        return -np.eye(1)

    solve_ivp(lambda t, y: -y, (0, 1), [1.0], method="BDF", jac=jac)
    assert calls  # a user's jac is kept
    sol = solve_ivp(lambda t, y: -y, (0, 1), [1.0], method="Radau")
    assert sol.njev > 0 and sol.success


@pytest.mark.parametrize("method", ["RK45", "BDF"])  # (BDF's is the discrete adjoint: re-run segments)
def test_adjoint_memory_does_not_grow_with_the_number_of_steps(method):
    import tracemalloc

    def peak(t_end):
        y0 = dg.tensor([1.0, 0.0], requires_grad=True)
        sol = solve_ivp(lambda t, y: dg.stack([-y[1], y[0]]), (0.0, t_end), y0, t_eval=[t_end], rtol=1e-5,
                        atol=1e-8, method=method, sensitivity="adjoint", checkpoint_every=20)
        tracemalloc.start()
        sol.y.sum().backward()
        result = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return result, sol.nfev

    peak(5.0)  # (first-use allocations)
    (small, steps_small), (large, steps_large) = peak(40.0), peak(160.0)
    assert steps_large > 3.5 * steps_small
    assert large < 1.25 * small


def test_bad_input_raises_with_a_clear_message():
    y0 = dg.tensor([1.0])
    with pytest.raises(ValueError, match="sensitivity must be one of 'auto', 'forward', 'adjoint', got 'backward'"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, sensitivity="backward")
    with pytest.raises(ValueError, match="method 'Euler' is not one of SciPy's RK23, RK45"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, method="Euler")
    event = lambda t, y: y[0] - 0.5
    with pytest.raises(ValueError, match="events are not supported with sensitivity='adjoint'"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, events=event, sensitivity="adjoint")
    with pytest.raises(ValueError, match="sensitivity='adjoint' needs t_span increasing"):
        solve_ivp(lambda t, y: -y, (1, 0), y0, sensitivity="adjoint")
    with pytest.raises(ValueError, match="vectorized=True is not supported"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, vectorized=True)
    with pytest.raises(ValueError, match="y0 must be 1-D"):
        solve_ivp(lambda t, y: -y, (0, 1), dg.ones(2, 2))


def test_tensor_closed_over_instead_of_passed_in_args_raises():
    k = dg.tensor(0.5, requires_grad=True)
    with pytest.raises(ValueError, match=r"the function fun uses a Tensor that requires grad .* \(in args\)"):
        solve_ivp(lambda t, y: -k * y, (0, 1), dg.tensor([1.0]))
    with pytest.raises(ValueError, match="solve_ivp: the function fun uses a Tensor that requires grad"):
        grad(lambda k: solve_ivp(lambda t, y: -k * y, (0, 1), dg.tensor([1.0])).y.sum())(dg.tensor(0.5))


def test_failed_integration_raises_on_differentiation_unless_allowed():
    c = dg.tensor(1.0, requires_grad=True)
    sol = solve_ivp(lambda t, y, c: c * y ** 2, (0, 2), dg.tensor([1.0]), args=(c,))  # blows up at t = 1
    assert sol.status == -1
    with pytest.raises(NonConvergedError, match="solve_ivp: cannot differentiate the solution: the integration "
                                                "failed .*allow_nonconverged=True"):
        sol.y.sum().backward()
    sol = solve_ivp(lambda t, y, c: c * y ** 2, (0, 0.5), dg.tensor([1.0]), args=(c,), allow_nonconverged=True)
    sol.y[:, -1].sum().backward()
    assert float(c.grad) == pytest.approx(0.5 / (1 - 0.5) ** 2, rel=1e-3)  # y = 1 / (1 - c t)
