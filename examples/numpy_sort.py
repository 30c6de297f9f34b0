"""NumPy code inside a custom ``Function`` that works under every transform.

``dualgrad`` has a ``sort`` of its own; here we pretend it does not, to show how
to wrap code that runs outside dualgrad (NumPy, a C extension, a solver) so that
``grad``, ``vmap``, ``jacrev``, ``jacfwd`` and ``hessian`` all compose with it.
This is the recipe of torch's "Extending torch.func with autograd.Function":

* ``forward`` computes in NumPy and does not take ``ctx``; intermediates that the
  derivatives need (the sorting permutation and its inverse) are returned as
  extra outputs and saved in ``setup_context``;
* ``backward`` and ``jvp`` are written with another such Function (``Take``: a
  gather by a permutation, whose derivatives are gathers again), so they can be
  differentiated and batched in turn (double backward, forward-over-reverse);
* a ``vmap`` staticmethod says how to run on a batch: move the batch dim to the
  front and sort one axis further in.

The application is least trimmed squares: a line fit that minimizes the mean of
the smallest 60% of the squared residuals, so that gross outliers (here 30% of
the points) do not pull the line. The loss sorts the residuals with the NumPy
sort. ``vmap`` evaluates it for many candidate lines in one call, and a batch of
Newton iterations (``vmap`` of ``grad`` and of ``hessian``) refines the best of
them; ordinary least squares, for comparison, is dragged by the outliers.

Run: ``python examples/numpy_sort.py``; ``DUALGRAD_EXAMPLES_SMALL=1`` uses fewer
candidate lines.
"""

from __future__ import annotations

import os

import numpy as np

import dualgrad as dg
from dualgrad.func import grad, hessian, jacfwd, jacrev, vmap


def _to_front(t: dg.Tensor, bdim: int | None, size: int) -> dg.Tensor:
    """``t`` with its batch dim first (a copy per batch member when it has none)."""
    return t.expand(size, *t.shape) if bdim is None else t.movedim(bdim, 0)


class Take(dg.autograd.Function):
    """``take_along_axis(x, ind, dim)`` in NumPy, for a permutation ``ind`` (inverse ``ind_inv``)."""

    @staticmethod
    def forward(x, ind, ind_inv, dim):
        # grad mode is off in forward, so .numpy() is allowed on a tensor that requires grad
        return dg.tensor(np.take_along_axis(x.numpy(), ind.numpy(), dim))

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_out):
        ind, ind_inv = ctx.saved_tensors
        return Take.apply(grad_out, ind_inv, ind, ctx.dim), None, None, None

    @staticmethod
    def jvp(ctx, x_dot, _ind_dot, _ind_inv_dot, _dim_dot):
        ind, ind_inv = ctx.saved_tensors
        return Take.apply(x_dot, ind, ind_inv, ctx.dim)

    @staticmethod
    def vmap(info, in_dims, x, ind, ind_inv, dim):
        x_bdim, ind_bdim, inv_bdim, _ = in_dims
        ndim = x.ndim - (x_bdim is not None)  # the logical (per-example) number of dims
        dim = dim % ndim
        size = info.batch_size
        args = (_to_front(x, x_bdim, size), _to_front(ind, ind_bdim, size), _to_front(ind_inv, inv_bdim, size))
        return Take.apply(*args, dim + 1), 0


class Sort(dg.autograd.Function):
    """``(sorted x, permutation, inverse permutation)`` along ``dim``, by ``numpy.argsort``."""

    @staticmethod
    def forward(x, dim):
        ind = np.argsort(x.numpy(), axis=dim, kind="stable")
        ind_inv = np.argsort(ind, axis=dim, kind="stable")
        return dg.tensor(np.take_along_axis(x.numpy(), ind, dim)), dg.tensor(ind), dg.tensor(ind_inv)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_sorted, _grad_ind, _grad_ind_inv):
        ind, ind_inv = ctx.saved_tensors
        return Take.apply(grad_sorted, ind_inv, ind, ctx.dim), None

    @staticmethod
    def jvp(ctx, x_dot, _dim_dot):
        ind, ind_inv = ctx.saved_tensors
        return Take.apply(x_dot, ind, ind_inv, ctx.dim), None, None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        x_bdim, _ = in_dims
        dim = dim % (x.ndim - 1)
        return Sort.apply(x.movedim(x_bdim, 0), dim + 1), (0, 0, 0)


def numpy_sort(x: dg.Tensor, dim: int = -1) -> dg.Tensor:
    """``x`` sorted along ``dim`` (the permutations are hidden)."""
    return Sort.apply(x, dim)[0]


def make_data(n: int, seed: int = 0) -> tuple[dg.Tensor, dg.Tensor]:
    """Points on the line ``y = 2 x + 1`` with noise, 30% of them replaced by gross outliers."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, n)
    y = 2 * x + 1 + 0.3 * rng.normal(size=n)
    bad = rng.permutation(n)[: int(0.3 * n)]
    y[bad] = -4 * x[bad] + 9 + rng.normal(size=bad.size)
    return dg.tensor(x), dg.tensor(y)


def trimmed_loss(x: dg.Tensor, y: dg.Tensor, keep: float = 0.6):
    """``theta -> mean of the smallest keep * n squared residuals of the line theta = (slope, intercept)``."""
    h = int(keep * x.shape[0])

    def loss(theta: dg.Tensor) -> dg.Tensor:
        r2 = (y - theta[0] * x - theta[1]) ** 2
        return numpy_sort(r2)[:h].mean()

    return loss


def main() -> None:
    small = bool(os.environ.get("DUALGRAD_EXAMPLES_SMALL"))
    rng = np.random.default_rng(1)

    # 1. The wrapped sort against finite differences, and its transforms against each other.
    z = dg.tensor(rng.normal(size=(3, 5)), requires_grad=True)
    ok = dg.autograd.gradcheck(numpy_sort, (z,), check_forward_ad=True, check_batched_grad=True)
    ok2 = dg.autograd.gradgradcheck(lambda t: numpy_sort(t, 0), (z,))
    print(f"gradcheck (reverse, forward, batched): {ok}; gradgradcheck: {ok2}")
    v = dg.tensor(rng.normal(size=6))
    jr, jf = jacrev(numpy_sort)(v), jacfwd(numpy_sort)(v)
    permutation = bool((jr.sum(0) == 1).all() and (jr.sum(1) == 1).all() and ((jr == 0) | (jr == 1)).all())
    print(f"jacrev == jacfwd: {bool((jr == jf).all())}; a permutation matrix: {permutation}")

    # 2. Least trimmed squares.
    x, y = make_data(200)
    loss = trimmed_loss(x, y)
    design = dg.stack([x, dg.ones_like(x)], dim=1)
    ols = dg.linalg.lstsq(design, y.unsqueeze(1)).solution.squeeze(1)
    print(f"ordinary least squares: slope {ols[0].item():.3f}, intercept {ols[1].item():.3f}  (true: 2, 1)")

    # candidate lines through random pairs of points, all evaluated in one vmap call
    n_candidates = 40 if small else 400
    pairs = np.array([rng.choice(x.shape[0], 2, replace=False) for _ in range(n_candidates)])
    xa, xb, ya, yb = x.numpy()[pairs[:, 0]], x.numpy()[pairs[:, 1]], y.numpy()[pairs[:, 0]], y.numpy()[pairs[:, 1]]
    slopes = (yb - ya) / (xb - xa)
    thetas = dg.tensor(np.stack([slopes, ya - slopes * xa], axis=1))
    losses = vmap(loss)(thetas)
    loop = dg.stack([loss(t) for t in thetas])
    print(f"max |vmap(loss) - loop of loss| over {n_candidates} candidates: {(losses - loop).abs().max().item():.1e}")

    # Newton steps on the 10 best candidates at once: vmap of grad and of hessian
    best = thetas[losses.argsort()[:10]]
    newton_grad, newton_hess = vmap(grad(loss)), vmap(hessian(loss))
    for _ in range(5):
        best = best - dg.linalg.solve(newton_hess(best), newton_grad(best).unsqueeze(-1)).squeeze(-1)
    final = vmap(loss)(best)
    theta = best[final.argmin()]
    print(f"least trimmed squares:  slope {theta[0].item():.3f}, intercept {theta[1].item():.3f}")
    print(f"|grad| at the LTS fit: {grad(loss)(theta).abs().max().item():.1e}")

    # the Hessian (forward-over-reverse through Sort and Take) against differences of the gradient
    eps = 1e-6
    fd = dg.stack([(grad(loss)(theta + eps * e) - grad(loss)(theta - eps * e)) / (2 * eps) for e in dg.eye(2)])
    print(f"max |hessian - finite differences of grad|: {(hessian(loss)(theta) - fd).abs().max().item():.1e}")


if __name__ == "__main__":
    main()
