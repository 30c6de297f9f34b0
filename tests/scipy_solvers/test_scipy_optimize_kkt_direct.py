"""Constrained ``minimize`` above ``DENSE_LIMIT`` unknowns: the KKT matrix is assembled (sparse Hessian of the
Lagrangian and constraint Jacobians from ``dualgrad.sparse``, dense blocks where detection cannot follow) and
factorised by a sparse LU; GMRES only where it cannot be assembled. The limit is lowered so that small problems
take these paths; derivatives are checked against finite differences of the whole solve."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

pytest.importorskip("scipy.optimize")
pytest.importorskip("dualgrad.sparse")
import dualgrad.implicit as implicit  # noqa: E402
import dualgrad.implicit._linear as linear  # noqa: E402
from dualgrad.scipy import _kkt, optimize  # noqa: E402

N = 12
A0 = np.linspace(-1.0, 1.0, N)
B0 = 2.0
WEIGHTS = np.random.default_rng(0).normal(size=N)


def objective(x, a):
    return 0.5 * ((x - a) ** 2).sum() + 0.25 * ((x[1:] - x[:-1]) ** 2).sum() + 0.1 * (x ** 4).sum()


def solve(a, b):
    constraints = [{"type": "eq", "fun": lambda x, b: dg.stack([x.sum() - b]), "args": (b,)},
                   {"type": "ineq", "fun": lambda x: dg.stack([x[0] - x[1] - 1.0, x[5] + 10.0])}]
    bounds = [(None, None)] * 3 + [(0.2, None)] + [(None, None)] * (N - 4)
    return optimize.minimize(objective, dg.zeros(N), args=(a,), method="SLSQP", constraints=constraints,
                             bounds=bounds, options={"ftol": 1e-15, "maxiter": 500})


def loss(a, b):
    return (solve(a, b).x * dg.tensor(WEIGHTS)).sum()


@pytest.fixture
def solves(monkeypatch):
    """The linear solves the implicit derivative makes: ``("splu", shape)`` or ``"krylov"``."""
    monkeypatch.setattr(implicit, "DENSE_LIMIT", 5)
    monkeypatch.setattr(linear, "DENSE_LIMIT", 5)
    seen = []
    factor, krylov = linear._sparse_factor, linear.LinearProblem._krylov
    monkeypatch.setattr(linear, "_sparse_factor", lambda a, name: seen.append(("splu", a.shape)) or factor(a, name))
    monkeypatch.setattr(linear.LinearProblem, "_krylov",
                        lambda self, *args: seen.append("krylov") or krylov(self, *args))
    return seen


def gradients():
    a, b = dg.tensor(A0, requires_grad=True), dg.tensor(B0, requires_grad=True)
    return [g.numpy() for g in dg.autograd.grad(loss(a, b), (a, b))]


def finite_differences(h=1e-3):  # (SLSQP's solution is noisy below ~1e-9: a larger step, central)
    value = lambda a, b: float(loss(dg.tensor(a), dg.tensor(b)))
    by_a = np.array([(value(A0 + h * e, B0) - value(A0 - h * e, B0)) / (2 * h) for e in np.eye(N)])
    return by_a, (value(A0, B0 + h) - value(A0, B0 - h)) / (2 * h)


def test_constrained_kkt_is_assembled_and_solved_by_sparse_lu(solves):
    grad_a, grad_b = gradients()
    assert solves == [("splu", (N + 3, N + 3))]  # (x, one equality, two inequalities; never GMRES)
    fd_a, fd_b = finite_differences()
    np.testing.assert_allclose(grad_a, fd_a, atol=1e-5)
    np.testing.assert_allclose(grad_b, fd_b, atol=1e-5)
    assert grad_a[3] == 0.0  # (x[3] is held at its bound)


def test_dense_blocks_where_sparsity_detection_cannot_follow(solves, monkeypatch):
    import dualgrad.sparse

    def refuse(*args, **kwargs):
        raise NotImplementedError("detection refused (test)")

    reference = gradients()
    solves.clear()
    monkeypatch.setattr(dualgrad.sparse, "hessian_fn", refuse)
    monkeypatch.setattr(dualgrad.sparse, "jacobian_fn", refuse)
    got = gradients()
    assert solves == [("splu", (N + 3, N + 3))]
    for g, r in zip(got, reference, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


def test_gmres_only_when_the_matrix_cannot_be_assembled(solves, monkeypatch):
    import dualgrad.sparse

    def refuse(*args, **kwargs):
        raise NotImplementedError("detection refused (test)")

    reference = gradients()
    solves.clear()
    monkeypatch.setattr(dualgrad.sparse, "hessian_fn", refuse)
    monkeypatch.setattr(dualgrad.sparse, "jacobian_fn", refuse)
    monkeypatch.setattr(_kkt, "DENSE_ASSEMBLY_LIMIT", 5)
    got = gradients()
    assert solves == ["krylov"]
    for g, r in zip(got, reference, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-8)
