"""BDF's discrete adjoint (``_integrate_bdf_adjoint``): the gradient of the computed solution on the forward's steps.

Checked against forward sensitivities and central finite differences of the whole solve (to the solver's
tolerance), with losses over many output times (including ``t0`` and two close times), every step's output
(``t_eval=None``), re-runs of checkpointed segments, ``max_step``, a sparse Jacobian, an inexact ``jac``
(the transposed solves are refined against the exact vjp), a very stiff long span, its cost (one vjp per
step, no backward solve; its memory, flat in the number of steps, is tested with the other adjoints in
test_scipy_integrate.py), and the backward solve still available
with ``adjoint="continuous"``.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad

pytest.importorskip("scipy.integrate")
from dualgrad.implicit import NonConvergedError  # noqa: E402
from dualgrad.scipy import _integrate_bdf_adjoint as bdf_adjoint  # noqa: E402
from dualgrad.scipy._integrate_rhs import OdeFunctions  # noqa: E402
from dualgrad.scipy.integrate import solve_ivp  # noqa: E402

P0 = np.array([1.1, 0.4, 0.4])
Y0 = np.array([2.0, 1.0])


def lotka(t, y, p):
    return dg.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[1] * y[0] * y[1] - p[2] * y[1]])


def robertson(t, y, k):
    return dg.stack([-k[0] * y[0] + k[2] * y[1] * y[2], k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                     k[1] * y[1] ** 2])


def central(f, x, h):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


def loss_of(fun, t_end, times, weights, tol, **options):
    def loss(p, y0, sensitivity):
        sol = solve_ivp(fun, (0.0, t_end), y0, args=(p,), t_eval=times, method="BDF", rtol=tol, atol=tol * 1e-2,
                        sensitivity=sensitivity, **options)
        return (sol.y * dg.tensor(weights)).sum()
    return loss


def check_agreement(loss, p0, y0, tolerance, fd_step=1e-6):
    adjoint = grad(loss, argnums=(0, 1))(dg.tensor(p0), dg.tensor(y0), "adjoint")
    forward = grad(loss, argnums=(0, 1))(dg.tensor(p0), dg.tensor(y0), "forward")
    for a, f in zip(adjoint, forward, strict=True):
        np.testing.assert_allclose(a.numpy(), f.numpy(), rtol=tolerance, atol=tolerance * np.abs(f.numpy()).max())
    fd = central(lambda q: float(loss(dg.tensor(q), dg.tensor(y0), "forward")), p0, fd_step)
    np.testing.assert_allclose(adjoint[0].numpy(), fd, rtol=tolerance, atol=tolerance * np.abs(fd).max())
    return adjoint


@pytest.mark.parametrize("times", [np.linspace(0.0, 3.0, 13), np.array([0.3, 0.31, 1.7, 3.0])])
def test_losses_over_many_output_times_match_forward_sensitivities_and_finite_differences(times):
    weights = np.random.default_rng(3).normal(size=(2, times.size))
    check_agreement(loss_of(lotka, 3.0, times, weights, 1e-9), P0, Y0, 1e-5)


def test_every_step_output_is_the_gradient_of_the_discrete_solution():
    # t_eval=None: the outputs are the steps themselves; a jump on one of them is checked against forward
    # sensitivities evaluated at the very same times
    p, y0 = dg.tensor(P0), dg.tensor(Y0)
    steps = solve_ivp(lotka, (0.0, 3.0), y0, args=(p,), method="BDF", rtol=1e-9, atol=1e-11)
    k = steps.y.shape[1] // 2
    t_k = float(steps.t[k])

    def at_step(q, sensitivity):
        sol = solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(q,), method="BDF", rtol=1e-9, atol=1e-11,
                        sensitivity=sensitivity)
        return sol.y[:, k].sum() + sol.y[:, -1].sum()

    adjoint = grad(at_step)(p, "adjoint").numpy()
    reference = grad(lambda q: solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(q,), t_eval=[t_k, 3.0],
                                         method="BDF", rtol=1e-9, atol=1e-11, sensitivity="forward").y.sum())(p)
    np.testing.assert_allclose(adjoint, reference.numpy(), rtol=1e-5)


def test_checkpointed_segments_are_rerun_with_the_same_steps():
    times = np.linspace(0.5, 3.0, 6)
    weights = np.random.default_rng(4).normal(size=(2, 6))
    loss = loss_of(lotka, 3.0, times, weights, 1e-8, checkpoint_every=7)
    whole = loss_of(lotka, 3.0, times, weights, 1e-8, checkpoint_every=10_000)
    segmented = grad(loss, argnums=(0, 1))(dg.tensor(P0), dg.tensor(Y0), "adjoint")
    single = grad(whole, argnums=(0, 1))(dg.tensor(P0), dg.tensor(Y0), "adjoint")
    for a, b in zip(segmented, single, strict=True):  # (the same steps: the same numbers, to round-off)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_stiff_robertson_with_max_step_matches_forward_sensitivities():
    times = np.array([0.4, 4.0, 40.0])
    weights = np.random.default_rng(5).normal(size=(3, 3))
    k0 = np.array([0.04, 3e7, 1e4])

    def loss(k, y0, sensitivity):
        sol = solve_ivp(robertson, (0.0, 40.0), y0, args=(k,), t_eval=times, method="BDF", rtol=1e-8,
                        atol=1e-12, max_step=5.0, sensitivity=sensitivity, checkpoint_every=20)
        return (sol.y * dg.tensor(weights)).sum()

    adjoint = grad(loss, argnums=(0, 1))(dg.tensor(k0), dg.tensor([1.0, 0.0, 0.0]), "adjoint")
    forward = grad(loss, argnums=(0, 1))(dg.tensor(k0), dg.tensor([1.0, 0.0, 0.0]), "forward")
    for a, f in zip(adjoint, forward, strict=True):
        np.testing.assert_allclose(a.numpy(), f.numpy(), rtol=1e-5, atol=1e-5 * np.abs(f.numpy()).max())


def diffusion(t, y, p):
    left, right = dg.roll(y, 1), dg.roll(y, -1)
    return p[0] * (left + right - 2 * y) * 100.0 - p[1] * y ** 3


def test_large_state_uses_a_sparse_jacobian_and_matches_forward_sensitivities():
    n = 80
    y0 = np.sin(np.linspace(0, 2 * np.pi, n, endpoint=False)) + 1.5
    p0 = np.array([0.3, 0.5])
    weights = np.random.default_rng(6).normal(size=(n, 3))
    functions = OdeFunctions(diffusion, dg.implicit.Parameters((dg.tensor(p0),)), (dg.tensor(p0),), n)
    assert functions.jacobian(0.0, y0).format == "csc"  # (the sparse path is the one the adjoint takes)
    times = np.array([0.1, 0.25, 0.5])
    adjoint = check_agreement(loss_of(diffusion, 0.5, times, weights, 1e-8), p0, y0, 1e-4, fd_step=1e-5)
    # re-run segments start from solver copies that keep the sparse Newton matrix, not its LU: the same steps
    rerun = grad(loss_of(diffusion, 0.5, times, weights, 1e-8, checkpoint_every=3), argnums=(0, 1))(
        dg.tensor(p0), dg.tensor(y0), "adjoint")
    for a, b in zip(rerun, adjoint, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_solver_copies_keep_the_sparse_matrix_not_its_factor(monkeypatch):
    tapes = []
    original = bdf_adjoint.BdfTape.__init__
    monkeypatch.setattr(bdf_adjoint.BdfTape, "__init__", lambda self, k: tapes.append(self) or original(self, k))
    n = 80
    y0 = np.sin(np.linspace(0, 2 * np.pi, n, endpoint=False)) + 1.5
    p = dg.tensor([0.3, 0.5], requires_grad=True)
    solve_ivp(diffusion, (0.0, 0.5), dg.tensor(y0), args=(p,), t_eval=[0.5], method="BDF", rtol=1e-8, atol=1e-10,
              sensitivity="adjoint", checkpoint_every=3)
    (tape,) = tapes
    copies = [start for start, _ in tape.starts[1:]]
    assert copies and all(c.LU is None or c.LU.factor is None for c in copies)
    assert any(c.LU is not None for c in copies)


def test_an_inexact_jac_is_refined_to_the_exact_gradient():
    def jac(t, y, p=P0):  # (the Jacobian without its y[0] y[1] terms: Newton and the adjoint's LU are off)
        return np.array([[p[0], 0.0], [0.0, -p[2]]])

    times = np.array([1.0, 2.0])
    weights = np.random.default_rng(7).normal(size=(2, 2))
    exact = grad(loss_of(lotka, 2.0, times, weights, 1e-9))(dg.tensor(P0), dg.tensor(Y0), "adjoint")
    given = grad(loss_of(lotka, 2.0, times, weights, 1e-9, jac=jac))(dg.tensor(P0), dg.tensor(Y0), "adjoint")
    np.testing.assert_allclose(given.numpy(), exact.numpy(), rtol=1e-5)


def test_a_jac_too_far_off_raises_instead_of_a_wrong_gradient():
    def jac(t, y):
        return np.array([[50.0, 40.0], [-30.0, 20.0]])

    sol = solve_ivp(lotka, (0.0, 1.0), dg.tensor(Y0), args=(dg.tensor(P0, requires_grad=True),), t_eval=[1.0],
                    method="BDF", jac=jac, sensitivity="adjoint", max_step=0.5)
    with pytest.raises(NonConvergedError, match=r"the BDF adjoint's linear system \(I - c J\)\^T w = d̄ .* did "
                                                r"not solve"):
        sol.y.sum().backward()


def test_the_adjoint_costs_one_vjp_per_step_and_no_backward_solve(monkeypatch):
    calls = {"pullback": 0, "solve_ivp": 0}
    original_pullback = OdeFunctions.pullback

    def counted(self, *args):
        calls["pullback"] += 1
        return original_pullback(self, *args)

    monkeypatch.setattr(OdeFunctions, "pullback", counted)
    p = dg.tensor(P0, requires_grad=True)
    sol = solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(p,), t_eval=np.linspace(0.3, 3.0, 10), method="BDF",
                    rtol=1e-7, atol=1e-9, sensitivity="adjoint")
    import scipy.integrate

    def refused(*args, **kwargs):
        raise AssertionError("the discrete adjoint must not integrate backward")

    monkeypatch.setattr(scipy.integrate, "solve_ivp", refused)
    sol.y.sum().backward()
    assert calls["pullback"] <= 2 * sol.nfev  # (one vjp per step, a refinement rarely: far fewer than evaluations)


def test_rescaling_matrix_is_scipys_change_of_step():
    from scipy.integrate._ivp.bdf import change_D

    rng = np.random.default_rng(8)
    for order in range(1, 6):
        d = rng.normal(size=(8, 3))
        expected = d.copy()
        change_D(expected, order, 0.37)
        got = d.copy()
        got[:order + 1] = bdf_adjoint._rescale_matrix(order, 0.37).T @ d[:order + 1]
        np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)


def test_very_stiff_long_span_robertson_matches_forward_sensitivities():
    # (steps up to ~1e4 long: I - c J is ill-conditioned and J^T w cancels; the refinement's test must allow for
    # the rounding of the terms it sums)
    times = np.array([1e-3, 1.0, 1e2, 1e4, 4e5])
    weights = dg.tensor(np.random.default_rng(9).normal(size=(3, 5)))

    def loss(k, sensitivity):
        sol = solve_ivp(robertson, (0.0, 4e5), dg.tensor([1.0, 0.0, 0.0]), args=(k,), t_eval=times, method="BDF",
                        rtol=1e-8, atol=1e-14, sensitivity=sensitivity)
        return (sol.y * weights).sum()

    k0 = dg.tensor([0.04, 3e7, 1e4])
    np.testing.assert_allclose(grad(loss)(k0, "adjoint").numpy(), grad(loss)(k0, "forward").numpy(), rtol=1e-6)


def test_continuous_adjoint_for_bdf_on_request_agrees_with_the_discrete_one():
    times = np.array([0.5, 1.5, 3.0])
    weights = np.random.default_rng(10).normal(size=(2, 3))

    def loss(p, adjoint):
        sol = solve_ivp(lotka, (0.0, 3.0), dg.tensor(Y0), args=(p,), t_eval=times, method="BDF", rtol=1e-9,
                        atol=1e-11, sensitivity="adjoint", adjoint=adjoint)
        return (sol.y * dg.tensor(weights)).sum()

    p = dg.tensor(P0)
    continuous, discrete = grad(loss)(p, "continuous").numpy(), grad(loss)(p, "auto").numpy()
    np.testing.assert_allclose(continuous, discrete, rtol=1e-6)
    np.testing.assert_allclose(grad(loss)(p, "discrete").numpy(), discrete, rtol=0, atol=0)


def test_bad_adjoint_choices_raise():
    y0 = dg.tensor([1.0])
    with pytest.raises(ValueError, match="solve_ivp: adjoint must be one of 'auto', 'discrete', 'continuous', "
                                         "got 'exact'"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, adjoint="exact")
    with pytest.raises(ValueError, match="solve_ivp: adjoint='discrete' is implemented for method='BDF' only, "
                                         "got 'Radau'"):
        solve_ivp(lambda t, y: -y, (0, 1), y0, method="Radau", adjoint="discrete")
