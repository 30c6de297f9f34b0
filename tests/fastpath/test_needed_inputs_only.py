"""A backward pass computes only the gradients it needs: ``autograd.grad(y, x)`` through a layer does not
compute its weights' gradients (``reverse.engine._backward_of_needed_inputs``, torch's engine's input mask).

The gradients must equal those of a pass that computes everything and discards what it does not need:
with the fast paths on and off (``DUALGRAD_FASTPATH=0``), to first and second order, for nodes of one, two
and more inputs, custom Functions and hooks; the test that rules are skipped is marked ``fastpath``.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.ops import registry

RNG = np.random.default_rng(3)
X = RNG.standard_normal((5, 1))
W1, B1 = RNG.standard_normal((1, 8)), RNG.standard_normal(8)
W2, B2 = RNG.standard_normal((8, 1)), RNG.standard_normal(1)


def _leaves():
    return (dg.tensor(X, requires_grad=True), dg.tensor(W1, requires_grad=True), dg.tensor(B1, requires_grad=True),
            dg.tensor(W2, requires_grad=True), dg.tensor(B2, requires_grad=True))


def _net(x, w1, b1, w2, b2):
    """A PINN-shaped network: addmm (three inputs), tanh, matmul, add, and a stack of slices."""
    h = dg.tanh(dg.addmm(b1, x, w1))
    u = h @ w2 + b2
    return dg.stack([u[:, 0] * x[:, 0], u[:, 0].sin()], 1)


def _all_gradients(loss, leaves, create_graph=False):
    return dg.autograd.grad(loss, leaves, create_graph=create_graph)


@pytest.mark.parametrize("wanted", [[0], [1], [0, 3], [2, 4], [4]])
def test_gradients_of_some_leaves_equal_those_of_a_full_pass(wanted):
    leaves = _leaves()
    loss = (_net(*leaves) ** 2).sum()
    every = _all_gradients(loss, leaves)
    some = dg.autograd.grad((_net(*leaves) ** 2).sum(), [leaves[i] for i in wanted])
    for i, g in zip(wanted, some, strict=True):
        np.testing.assert_array_equal(g.numpy(), every[i].numpy())


def test_second_order_through_a_pruned_first_pass_matches_finite_differences():
    """The PINN pattern: ``du/dx`` with create_graph, then gradients of a loss of it for every weight."""
    leaves = _leaves()

    def residual_loss(*leaves):
        u = _net(*leaves)
        (du,) = dg.autograd.grad(u.sum(), leaves[0], create_graph=True)
        return ((du - u[:, :1]) ** 2).mean()

    grads = dg.autograd.grad(residual_loss(*leaves), leaves[1:])
    eps = 1e-6
    for k, g in enumerate(grads, start=1):
        base = [t.detach().numpy().copy() for t in leaves]
        flat = g.numpy().reshape(-1)
        for j in range(0, flat.size, 3):
            shifted = []
            for sign in (1, -1):
                values = [b.copy() for b in base]
                values[k].reshape(-1)[j] += sign * eps
                shifted.append(residual_loss(*[dg.tensor(v, requires_grad=True) for v in values]).item())
            np.testing.assert_allclose(flat[j], (shifted[0] - shifted[1]) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_custom_functions_and_hooks_see_the_pass_as_before():
    calls = []

    class Scale(dg.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            calls.append(ctx.needs_input_grad)
            return g * w, g * x

    x, w = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([3.0, 4.0], requires_grad=True)
    seen = []
    y = Scale.apply(x, w)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
    (gx,) = dg.autograd.grad((y * y).sum(), x)
    np.testing.assert_array_equal(gx.numpy(), 2 * np.array([3.0, 8.0]) * np.array([3.0, 4.0]))
    assert calls == [(True, True)] and seen == [2]
    edges = y.grad_fn.next_functions
    assert all(target is not None for target, _ in edges)  # (the edges hidden for the call are back)


class _CountingVjp:
    """Counts the calls of an op's reverse rules for each input."""

    def __init__(self, op, monkeypatch):
        self.calls = [0] * len(op.vjp)
        rules = list(op.vjp)
        for i, rule in enumerate(rules):
            def counted(*args, i=i, rule=rule, **kwargs):
                self.calls[i] += 1
                return rule(*args, **kwargs)
            rules[i] = counted
        monkeypatch.setattr(op, "vjp", tuple(rules))


@pytest.mark.fastpath
def test_the_rule_of_an_input_the_pass_does_not_need_is_not_called(monkeypatch):
    op = registry.ALL_OPS["mul"]
    counting = _CountingVjp(op, monkeypatch)
    x, w = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    dg.autograd.grad(y.sum(), x)
    assert counting.calls == [1, 0]
