"""The ODE sensitivity problems of issue 29 (Robertson, 2-D Brusselator) and their dualgrad and peer runs.

Each problem integrates to ``T_END`` with outputs at 10 times; the scalar loss is
``sum(W * Y)`` for fixed random weights ``W`` over all states and times. Three
dualgrad runs are timed against each other: the plain solve (``solve_ivp`` with
nothing to differentiate), forward sensitivities (``jacfwd`` of ``Y`` with respect to
the parameters) and the adjoint gradient of the loss. Peers: diffrax (JAX) with
Kvaerno5 (implicit, like BDF) on Robertson and Tsit5 on the Brusselator, and
torchdiffeq (PyTorch) with its adjoint; torchdiffeq has no implicit solver, so it
is only run on the Brusselator (mildly stiff, dopri5). diffrax's adjoint is not
compared on the Brusselator: differentiating through Tsit5's steps
(``RecursiveCheckpointAdjoint``) gave a gradient of about 4e22 there (its forward
mode agrees with dualgrad's to 10 %).

Workloads return no arrays for the runner to compare (the solvers differ at the level
of their tolerances): each builder checks its result against dualgrad's forward
sensitivities itself, to a tolerance that follows the solve's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._harness import Workload


@dataclass(frozen=True)
class Problem:
    name: str
    y0: np.ndarray
    params: np.ndarray
    t_end: float
    rtol: float
    atol: float
    method: str = "BDF"

    @property
    def times(self) -> np.ndarray:
        return np.linspace(self.t_end / 10, self.t_end, 10)

    @property
    def weights(self) -> np.ndarray:
        return np.random.default_rng(0).normal(size=(self.y0.size, 10))


def robertson(t, y, k):
    """Robertson's chemical kinetics (stiff): rates ``k = (0.04, 3e7, 1e4)``."""
    import dualgrad as dg

    return dg.stack([-k[0] * y[0] + k[2] * y[1] * y[2], k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                     k[1] * y[1] ** 2])


SIDE = 32  # (2 * 32 * 32 = 2048 states)


def brusselator(t, y, p):
    """2-D Brusselator on a periodic ``SIDE x SIDE`` grid; parameters ``(A, B, alpha, beta)``."""
    import dualgrad as dg

    u, v = y[: SIDE * SIDE].reshape(SIDE, SIDE), y[SIDE * SIDE:].reshape(SIDE, SIDE)

    def laplacian(w):
        return (dg.roll(w, 1, 0) + dg.roll(w, -1, 0) + dg.roll(w, 1, 1) + dg.roll(w, -1, 1) - 4 * w) * SIDE ** 2

    du = p[0] + u * u * v - (p[1] + 1) * u + p[2] * laplacian(u)
    dv = p[1] * u - u * u * v + p[2] * laplacian(v) * p[3]
    return dg.cat([du.reshape(-1), dv.reshape(-1)])


def _brusselator_y0() -> np.ndarray:
    grid = np.linspace(0, 1, SIDE, endpoint=False)
    xx, _ = np.meshgrid(grid, grid)
    return np.concatenate([(1 + np.sin(2 * np.pi * xx) * 0.5).reshape(-1), np.full(SIDE * SIDE, 3.0)])


ROBERTSON = Problem("Robertson", np.array([1.0, 0.0, 0.0]), np.array([0.04, 3e7, 1e4]), 40.0, 1e-6, 1e-10)
BRUSSELATOR = Problem("Brusselator", _brusselator_y0(), np.array([1.0, 3.0, 0.02, 1.0]), 1.0, 1e-4, 1e-6)
RHS = {"Robertson": robertson, "Brusselator": brusselator}
PROBLEMS = {"Robertson": ROBERTSON, "Brusselator": BRUSSELATOR}


def _solve(problem: Problem, params, sensitivity: str):
    import dualgrad as dg
    from dualgrad.scipy.integrate import solve_ivp

    return solve_ivp(RHS[problem.name], (0.0, problem.t_end), dg.tensor(problem.y0), args=(params,),
                     t_eval=problem.times, method=problem.method, rtol=problem.rtol, atol=problem.atol,
                     sensitivity=sensitivity).y


def _no_outputs(fn: Callable) -> Callable:
    """``fn`` returning nothing for the runner to compare (the builders check their results themselves)."""
    def run() -> tuple:
        fn()
        return ()
    return run


def plain(problem: Problem) -> Callable:
    import dualgrad as dg

    return _no_outputs(lambda: _solve(problem, dg.tensor(problem.params), "forward"))


def forward(problem: Problem) -> Callable:
    import dualgrad as dg

    jacobian = dg.func.jacfwd(lambda p: _solve(problem, p, "forward"))
    return _no_outputs(lambda: jacobian(dg.tensor(problem.params)))


def reference(problem: Problem) -> tuple:
    """dualgrad's ``(dY/dp, dL/dp)`` by forward sensitivities (what peers and the adjoint are checked against)."""
    return _reference(problem.name)


@functools.cache
def _reference(name: str) -> tuple:
    import dualgrad as dg

    problem = PROBLEMS[name]
    jacobian = dg.func.jacfwd(lambda p: _solve(problem, p, "forward"))(dg.tensor(problem.params)).numpy()
    return jacobian, np.einsum("ij,ijk->k", problem.weights, jacobian)


def check(problem: Problem, who: str, got: np.ndarray, expected: np.ndarray, rtol: float) -> None:
    scale = np.abs(expected).max()
    if not np.allclose(got, expected, rtol=rtol, atol=rtol * scale):
        raise AssertionError(f"{problem.name}: {who} disagrees with dualgrad's forward sensitivities "
                             f"(largest difference {np.abs(got - expected).max():.3g}, scale {scale:.3g})")


def adjoint(problem: Problem) -> Callable:
    import dualgrad as dg

    weights = dg.tensor(problem.weights)
    gradient = dg.func.grad(lambda p: (_solve(problem, p, "adjoint") * weights).sum())
    check(problem, "the adjoint", gradient(dg.tensor(problem.params)).numpy(), reference(problem)[1],
          100 * problem.rtol)
    return _no_outputs(lambda: gradient(dg.tensor(problem.params)))


# -- peers --------------------------------------------------------------------------------------------
def _diffrax_solution(problem: Problem) -> Callable:
    """``p -> Y`` (shape ``(n, 10)``) by diffrax with a PID step-size controller: Kvaerno5 (implicit) on
    Robertson; Tsit5 (explicit) on the mildly stiff Brusselator, where Kvaerno5's dense 2048 x 2048 Newton
    matrices take minutes per solve."""
    import diffrax
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    if problem.name == "Robertson":
        def field(t, y, k):
            return jnp.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                              k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2], k[1] * y[1] ** 2])
    else:
        def field(t, y, p):
            u, v = y[: SIDE * SIDE].reshape(SIDE, SIDE), y[SIDE * SIDE:].reshape(SIDE, SIDE)

            def laplacian(w):
                return (jnp.roll(w, 1, 0) + jnp.roll(w, -1, 0) + jnp.roll(w, 1, 1) + jnp.roll(w, -1, 1)
                        - 4 * w) * SIDE ** 2

            du = p[0] + u * u * v - (p[1] + 1) * u + p[2] * laplacian(u)
            dv = p[1] * u - u * u * v + p[2] * laplacian(v) * p[3]
            return jnp.concatenate([du.reshape(-1), dv.reshape(-1)])

    solver = diffrax.Kvaerno5() if problem.name == "Robertson" else diffrax.Tsit5()

    def solution(p, adjoint):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(field), solver, 0.0, problem.t_end, None,
                                  jnp.asarray(problem.y0), args=p,
                                  saveat=diffrax.SaveAt(ts=jnp.asarray(problem.times)),
                                  stepsize_controller=diffrax.PIDController(rtol=problem.rtol, atol=problem.atol),
                                  adjoint=adjoint, max_steps=100_000)
        return sol.ys.T

    return solution


def diffrax_forward(problem: Problem) -> Callable:
    import diffrax
    import jax

    solution = _diffrax_solution(problem)
    jacobian = jax.jit(jax.jacfwd(lambda p: solution(p, diffrax.ForwardMode())))
    params = jax.numpy.asarray(problem.params)
    check(problem, "diffrax (forward)", np.asarray(jacobian(params)), reference(problem)[0], 1e3 * problem.rtol)
    return _no_outputs(lambda: jacobian(params).block_until_ready())


def diffrax_plain(problem: Problem) -> Callable:
    import diffrax
    import jax

    solve = _diffrax_solution(problem)
    solution = jax.jit(lambda p: solve(p, diffrax.RecursiveCheckpointAdjoint()))
    params = jax.numpy.asarray(problem.params)
    return _no_outputs(lambda: solution(params).block_until_ready())


def diffrax_adjoint(problem: Problem) -> Callable:
    import diffrax
    import jax

    solution = _diffrax_solution(problem)
    weights = jax.numpy.asarray(problem.weights)
    gradient = jax.jit(jax.grad(lambda p: (solution(p, diffrax.RecursiveCheckpointAdjoint()) * weights).sum()))
    params = jax.numpy.asarray(problem.params)
    check(problem, "diffrax (adjoint)", np.asarray(gradient(params)), reference(problem)[1], 1e3 * problem.rtol)
    return _no_outputs(lambda: gradient(params).block_until_ready())


def _torch_field(problem: Problem):
    import torch

    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.tensor(problem.params, dtype=torch.float64))

        def forward(self, t, y):
            p = self.p
            u, v = y[: SIDE * SIDE].reshape(SIDE, SIDE), y[SIDE * SIDE:].reshape(SIDE, SIDE)

            def laplacian(w):
                return (torch.roll(w, 1, 0) + torch.roll(w, -1, 0) + torch.roll(w, 1, 1) + torch.roll(w, -1, 1)
                        - 4 * w) * SIDE ** 2

            du = p[0] + u * u * v - (p[1] + 1) * u + p[2] * laplacian(u)
            dv = p[1] * u - u * u * v + p[2] * laplacian(v) * p[3]
            return torch.cat([du.reshape(-1), dv.reshape(-1)])

    return Field()


def torchdiffeq_adjoint(problem: Problem) -> Callable:
    """torchdiffeq's ``odeint_adjoint`` (dopri5: it has no implicit solver) on the Brusselator."""
    import torch
    import torchdiffeq

    field = _torch_field(problem)
    y0 = torch.tensor(problem.y0, dtype=torch.float64)
    ts = torch.tensor(np.concatenate([[0.0], problem.times]), dtype=torch.float64)
    weights = torch.tensor(problem.weights, dtype=torch.float64)

    def gradient():
        field.p.grad = None
        ys = torchdiffeq.odeint_adjoint(field, y0, ts, rtol=problem.rtol, atol=problem.atol, method="dopri5")
        (ys[1:].T * weights).sum().backward()
        return field.p.grad.numpy().copy()

    check(problem, "torchdiffeq (adjoint)", gradient(), reference(problem)[1], 1e3 * problem.rtol)
    return _no_outputs(gradient)


def torchdiffeq_plain(problem: Problem) -> Callable:
    import torch
    import torchdiffeq

    field = _torch_field(problem)
    y0 = torch.tensor(problem.y0, dtype=torch.float64)
    ts = torch.tensor(np.concatenate([[0.0], problem.times]), dtype=torch.float64)

    def run():
        with torch.no_grad():
            torchdiffeq.odeint(field, y0, ts, rtol=problem.rtol, atol=problem.atol, method="dopri5")
        return ()

    return run


def workload(problem: Problem, kind: str, label: str) -> Workload:
    """``kind``: "forward" (goal <= 3x the plain solve) or "adjoint" (goal <= 4x)."""
    builders = {"dualgrad": (lambda: forward(problem)) if kind == "forward" else (lambda: adjoint(problem)),
                "plain solve": lambda: plain(problem),
                "diffrax plain": lambda: diffrax_plain(problem)}
    if kind == "forward":
        builders["diffrax"] = lambda: diffrax_forward(problem)
    elif problem.name == "Robertson":  # (on the Brusselator, the gradient through Tsit5's steps came out at 4e22)
        builders["diffrax"] = lambda: diffrax_adjoint(problem)
    solver = "Kvaerno5" if problem.name == "Robertson" else "Tsit5: explicit"
    notes = {"diffrax": f" ({solver}, jit)", "diffrax plain": f" ({solver}, jit)"}
    if kind == "adjoint" and problem.name == "Brusselator":
        builders["torchdiffeq"] = lambda: torchdiffeq_adjoint(problem)
        builders["torchdiffeq plain"] = lambda: torchdiffeq_plain(problem)
        notes["torchdiffeq"] = notes["torchdiffeq plain"] = " (dopri5: no implicit solver)"
    return Workload(name=label, builders=builders, time_goals={"plain solve": 3.0 if kind == "forward" else 4.0},
                    notes=notes)
