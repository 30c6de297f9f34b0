"""A physics-informed network for an ODE, trained as in PyTorch: ``dualgrad.optim`` and ``dg.save``.

The network ``u(t)``, 1 -> 32 -> 32 -> 1 with tanh, learns the solution of the oscillator
``u'' + u = 0`` on [0, pi] with ``u(0) = 1``, ``u'(0) = 0`` (the exact solution is ``cos t``) from the
equation alone: the loss is the mean squared residual ``u'' + u`` on 64 points plus the two initial
conditions. ``u'`` and ``u''`` come from ``dg.autograd.grad(..., create_graph=True)``, so each
training step differentiates three times. Adam (with a StepLR schedule) does the bulk of the work,
L-BFGS with a strong-Wolfe line search polishes; the parameters and the optimizer state are saved
with ``dg.save`` and loaded back to continue. The code is PyTorch's with ``torch`` renamed.

Run: ``python examples/pinn_ode.py``; ``DUALGRAD_EXAMPLES_SMALL=1`` for a quick run (fewer steps).
"""

from __future__ import annotations

import io
import math
import os
import time

import dualgrad as dg

SMALL = bool(os.environ.get("DUALGRAD_EXAMPLES_SMALL"))
ADAM_STEPS = 400 if SMALL else 2000
WIDTH = 32


def init_params() -> list:
    """Xavier-scaled weights, zero biases (float64)."""
    dg.manual_seed(0)
    sizes = [(1, WIDTH), (WIDTH, WIDTH), (WIDTH, 1)]
    params = []
    for fan_in, fan_out in sizes:
        params.append((dg.randn(fan_in, fan_out) * math.sqrt(2.0 / (fan_in + fan_out))).requires_grad_())
        params.append(dg.zeros(fan_out, requires_grad=True))
    return params


def net(params: list, t: dg.Tensor) -> dg.Tensor:
    w1, b1, w2, b2, w3, b3 = params
    return dg.tanh(dg.tanh(t @ w1 + b1) @ w2 + b2) @ w3 + b3


def loss_fn(params: list, t: dg.Tensor, t0: dg.Tensor) -> dg.Tensor:
    """Mean squared residual of u'' + u = 0, plus (u(0) - 1)^2 + u'(0)^2."""
    u = net(params, t)
    (du,) = dg.autograd.grad(u.sum(), t, create_graph=True)
    (d2u,) = dg.autograd.grad(du.sum(), t, create_graph=True)
    u0 = net(params, t0)
    (du0,) = dg.autograd.grad(u0.sum(), t0, create_graph=True)
    return ((d2u + u) ** 2).mean() + ((u0 - 1.0) ** 2).sum() + (du0 ** 2).sum()


def main() -> None:
    device = "cuda" if dg.cuda.is_available() else "cpu"  # the usual line: dualgrad takes the CPU
    t = dg.linspace(0.0, math.pi, 64, device=device).reshape(-1, 1).requires_grad_()
    t0 = dg.zeros(1, 1, device=device, requires_grad=True)
    params = init_params()

    opt = dg.optim.Adam(params, lr=1e-2)
    sched = dg.optim.lr_scheduler.StepLR(opt, step_size=ADAM_STEPS // 4, gamma=0.5)
    start = time.perf_counter()
    for step in range(ADAM_STEPS):
        opt.zero_grad()
        loss = loss_fn(params, t, t0)
        loss.backward()
        opt.step()
        sched.step()
        if step % (ADAM_STEPS // 4) == 0:
            print(f"Adam step {step:5d}: loss {loss.item():.3e}, lr {sched.get_last_lr()[0]:.2e}")
    print(f"after {ADAM_STEPS} Adam steps: loss {loss_fn(params, t, t0).item():.3e} "
          f"({time.perf_counter() - start:.1f} s)")

    # checkpoint and restore, as with torch.save / torch.load
    buffer = io.BytesIO()
    dg.save({"params": params, "adam": opt.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = dg.load(buffer)
    params = checkpoint["params"]
    print(f"checkpoint restored: {len(params)} tensors, Adam at step "
          f"{int(checkpoint['adam']['state'][0]['step'].item())}")

    lbfgs = dg.optim.LBFGS(params, max_iter=50, line_search_fn="strong_wolfe")

    def closure() -> dg.Tensor:
        lbfgs.zero_grad()
        value = loss_fn(params, t, t0)
        value.backward()
        return value

    for _ in range(2 if SMALL else 6):
        lbfgs.step(closure)
    print(f"after L-BFGS: loss {loss_fn(params, t, t0).item():.3e}")

    with dg.no_grad():
        grid = dg.linspace(0.0, math.pi, 201).reshape(-1, 1)
        error = (net(params, grid) - dg.cos(grid)).abs().max().item()
    print(f"max |u(t) - cos t| on [0, pi] = {error:.2e}")


if __name__ == "__main__":
    main()
