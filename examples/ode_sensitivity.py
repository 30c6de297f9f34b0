"""Forward-mode sensitivity analysis of an ODE integrator, checked against finite differences.

The Lotka-Volterra predator-prey model

    dx/dt = a x - b x y        (prey)
    dy/dt = d x y - c y        (predators)

is integrated with the classical fourth-order Runge-Kutta method (RK4), written
with ordinary dualgrad ops. Forward mode differentiates *through the integrator*:
``dualgrad.func.jacfwd`` pushes one tangent per parameter through every RK4 step
in a single batched pass and returns the sensitivities ``d state(t) / d (a, b, c, d)``
along the whole trajectory. They are checked against central finite differences
of the same integrator, and against the reverse-mode Jacobian (``jacrev``).

Run: ``python examples/ode_sensitivity.py [--plot FILE.png]``; set
``DUALGRAD_EXAMPLES_SMALL=1`` for a quick run (fewer steps). The plot needs
matplotlib (``pip install dualgrad[plot]``) and is skipped without it.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import dualgrad as dg
from dualgrad.func import jacfwd, jacrev

PARAMS = np.array([1.1, 0.4, 0.4, 0.1])  # a, b, c, d
NAMES = ("a", "b", "c", "d")
INITIAL = np.array([10.0, 5.0])  # prey, predators
T_END = 15.0


def lotka_volterra(u: dg.Tensor, p: dg.Tensor) -> dg.Tensor:
    """The vector field ``(a x - b x y, d x y - c y)`` at state ``u = (x, y)``."""
    x, y = u[0], u[1]
    a, b, c, d = p[0], p[1], p[2], p[3]
    return dg.stack([a * x - b * x * y, d * x * y - c * y])


def rk4(p: dg.Tensor, steps: int) -> dg.Tensor:
    """The RK4 trajectory from ``INITIAL`` over ``[0, T_END]``: shape ``(steps + 1, 2)``."""
    h = T_END / steps
    u = dg.tensor(INITIAL)
    states = [u]
    for _ in range(steps):
        k1 = lotka_volterra(u, p)
        k2 = lotka_volterra(u + h / 2 * k1, p)
        k3 = lotka_volterra(u + h / 2 * k2, p)
        k4 = lotka_volterra(u + h * k3, p)
        u = u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        states.append(u)
    return dg.stack(states)


def finite_differences(steps: int, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the trajectory in each parameter: shape ``(steps + 1, 2, 4)``."""
    columns = []
    for i in range(len(PARAMS)):
        step = np.zeros_like(PARAMS)
        step[i] = eps
        plus = rk4(dg.tensor(PARAMS + step), steps).numpy()
        minus = rk4(dg.tensor(PARAMS - step), steps).numpy()
        columns.append((plus - minus) / (2 * eps))
    return np.stack(columns, axis=-1)


def plot(times: np.ndarray, states: np.ndarray, sens: np.ndarray, path: str) -> None:
    """Trajectories and their sensitivities to each parameter, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plot skipped")
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(times, states[:, 0], label="prey x")
    axes[0].plot(times, states[:, 1], label="predators y")
    axes[0].set_title("trajectory")
    for k, who in enumerate(("prey x", "predators y")):
        for i, name in enumerate(NAMES):
            axes[k + 1].plot(times, sens[:, k, i], label=f"d{who[-1]}/d{name}")
        axes[k + 1].set_title(f"sensitivities of {who}")
    for ax in axes:
        ax.set_xlabel("t")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"plot written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="FILE.png", help="write a plot of the sensitivities")
    args = parser.parse_args()
    steps = 60 if os.environ.get("DUALGRAD_EXAMPLES_SMALL") else 300

    p = dg.tensor(PARAMS)
    states = rk4(p, steps).numpy()
    sens = jacfwd(lambda q: rk4(q, steps))(p).numpy()  # (steps + 1, 2, 4): one forward pass
    fd = finite_differences(steps)
    rev = jacrev(lambda q: rk4(q, steps)[-1])(p).numpy()  # final state only, by reverse mode

    print(f"Lotka-Volterra, RK4 with {steps} steps on [0, {T_END}], parameters (a, b, c, d) = {PARAMS}")
    print(f"final state (x, y) = {np.array2string(states[-1], precision=4)}")
    print("sensitivity of the final state, d(x, y)/d(a, b, c, d), by forward mode:")
    print(np.array2string(sens[-1], precision=4))
    relative = np.abs(sens - fd).max() / np.abs(sens).max()
    print(f"max |forward mode - finite differences| / max |sensitivity| = {relative:.1e}")
    print(f"max |forward mode - reverse mode| at the final state = {np.abs(sens[-1] - rev).max():.1e}")
    if args.plot:
        plot(np.linspace(0.0, T_END, steps + 1), states, sens, args.plot)


if __name__ == "__main__":
    main()
