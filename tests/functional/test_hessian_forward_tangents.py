"""``hessian(..., outer_jacobian_strategy='forward-mode')`` records no graph for its forward tangents.

Forward over reverse: the tangents of the inner gradient are computed by its backward pass. When
that pass is not recorded (no ``create_graph``, no enclosing transform), nothing can differentiate
the tangents of the forward pass either, so their rules run with grad mode off (as ``hvp``'s).
An enclosing transform still gets every graph it differentiates.
"""

from __future__ import annotations

import numpy as np
from dualgrad.autograd.functional import hessian, jacobian

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.func import grad
from dualgrad.vmap.batching import physical_value

XN = np.array([0.3, 0.5, -0.2, 0.9])
WN = np.array([1.0, 2.0, -1.5, 0.5])


def _f(w):
    def f(x):
        return (w * x**3).sum() * x.sin().sum() + ((x[1:] - x[:-1] ** 2) ** 2).sum()

    return f


def _spying(f, seen):
    """``f``, recording whether the tangent of ``x**3`` (batched over the basis) requires grad."""

    def spied(x):
        cube = x**3
        seen.append(physical_value(fwAD.unpack_dual(cube).tangent).requires_grad)
        return f(x) + cube.sum() * 0.0

    return spied


def _finite_difference_hessian(f, xn, eps=1e-5):
    """Central differences of the reverse-mode gradient, column by column."""
    columns = []
    for i in range(len(xn)):
        step = np.zeros_like(xn)
        step[i] = eps
        plus = grad(f)(dg.tensor(xn + step)).numpy()
        minus = grad(f)(dg.tensor(xn - step)).numpy()
        columns.append((plus - minus) / (2 * eps))
    return np.stack(columns, axis=1)


def test_forward_over_reverse_hessian_tapes_no_tangents_and_matches_reverse_over_reverse():
    f = _f(dg.tensor(WN))
    seen = []
    forward = hessian(_spying(f, seen), dg.tensor(XN), vectorize=True, outer_jacobian_strategy="forward-mode")
    assert seen == [False]
    reverse = hessian(f, dg.tensor(XN))
    np.testing.assert_allclose(forward.numpy(), reverse.numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(forward.numpy(), _finite_difference_hessian(f, XN), rtol=1e-7, atol=1e-7)
    assert not forward.requires_grad


def test_a_closed_over_leaf_that_requires_grad_gets_no_graph_either_way():
    w = dg.tensor(WN, requires_grad=True)
    forward = hessian(_f(w), dg.tensor(XN), vectorize=True, outer_jacobian_strategy="forward-mode")
    reverse = hessian(_f(w), dg.tensor(XN), vectorize=True)
    assert not forward.requires_grad and not reverse.requires_grad
    np.testing.assert_allclose(forward.numpy(), reverse.detach().numpy(), rtol=1e-13, atol=1e-13)


def test_jacobian_forward_mode_still_tapes_its_tangents():
    """A forward-mode Jacobian is the tangents of the forward pass: with a closed-over leaf, as torch's,
    it is differentiable with respect to that leaf."""
    w = dg.tensor(WN, requires_grad=True)
    seen = []
    jac = jacobian(_spying(lambda x: (w * x).sin(), seen), dg.tensor(XN), vectorize=True, strategy="forward-mode")
    assert seen == [False]  # (x**3 reaches no leaf: its tangent has no graph to record)
    assert jac.requires_grad
    (dw,) = dg.autograd.grad(jac.sum(), w)
    # d/dw_i of sum_j d sin(w_i x_i)/dx_j = d/dw_i (w_i cos(w_i x_i)) = cos(w_i x_i) - w_i x_i sin(w_i x_i)
    np.testing.assert_allclose(dw.numpy(), np.cos(WN * XN) - WN * XN * np.sin(WN * XN), rtol=1e-13)


def test_an_enclosing_transform_differentiates_the_hessian():
    """Under ``func.grad`` the inner gradient is recorded, and so are the forward tangents."""
    x = dg.tensor(XN)
    seen = []

    def total(w):
        return hessian(_spying(_f(w), seen), x, vectorize=True, outer_jacobian_strategy="forward-mode").sum()

    def total_reverse(w):
        return hessian(_f(w), x).sum()

    got = grad(total)(dg.tensor(WN))
    assert seen == [True]
    np.testing.assert_allclose(got.detach().numpy(), grad(total_reverse)(dg.tensor(WN)).numpy(), rtol=1e-12)
    eps = 1e-6
    fd = [(total(dg.tensor(WN + eps * e)).item() - total(dg.tensor(WN - eps * e)).item()) / (2 * eps)
          for e in np.eye(len(WN))]
    np.testing.assert_allclose(got.detach().numpy(), fd, rtol=1e-6, atol=1e-7)
