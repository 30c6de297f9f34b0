"""dualgrad.sparse's evaluation paths: ``compile=True`` (the batched pass replayed by ``dualgrad.compile``)
gives the eager values at every point, follows changed state, pickles; the decompression index of a
bidirectional coloring whose forward part has no entry."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dualgrad as dg

sp = pytest.importorskip("scipy.sparse")
import dualgrad.sparse as dgs  # noqa: E402
from dualgrad.sparse.coloring import Coloring, color_rows  # noqa: E402


def dense_jacobian(f, x):
    return dg.func.jacfwd(lambda z: f(z).reshape(-1))(dg.tensor(x))._data


def dense_hessian(f, x):
    return dg.func.hessian(lambda z: f(z).reshape(()))(dg.tensor(x))._data


def reaction_diffusion(u):
    lap = np.concatenate([-2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:], u[-2:-1] - 2 * u[-1:]])
    return lap + u * (1 - u)


def arrowhead(x):
    return np.concatenate([np.sum(np.sin(x))[None], x[0] * x[1:] ** 2])


def wide(x):
    return np.stack([np.sum(x[::2] ** 2), np.prod(x[:4]), x[3] * x[7]])


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


class Scaled:
    """A residual with a parameter read from an attribute (compile guards it)."""

    def __init__(self, k: float):
        self.k = k

    def __call__(self, u):
        return self.k * u[1:] * u[:-1] + np.exp(u[1:])


POINTS = [np.random.default_rng(seed).uniform(0.5, 1.5, 12) for seed in range(3)]


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("f", [reaction_diffusion, arrowhead, wide], ids=["rd", "arrowhead", "wide"])
def test_compiled_jacobian_equals_eager_at_every_point(f, mode):
    eager = dgs.jacobian_fn(f, np.ones(12), mode=mode)
    compiled = dgs.jacobian_fn(f, np.ones(12), mode=mode, compile=True)
    assert compiled.compile and not eager.compile
    for x in POINTS:  # (the first call traces, the next ones replay with new values)
        J = compiled(x)
        assert isinstance(J, sp.csr_array)
        np.testing.assert_allclose(J.toarray(), eager(x).toarray(), rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(J.toarray(), dense_jacobian(f, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("coloring", ["star", "acyclic"])
def test_compiled_hessian_equals_dense_at_every_point(coloring):
    hess = dgs.hessian_fn(rosenbrock, np.ones(12), coloring=coloring, compile=True)
    for x in POINTS:
        np.testing.assert_allclose(hess(x).toarray(), dense_hessian(rosenbrock, x), rtol=1e-10, atol=1e-10)


K = [2.0]  # (a global read by the functions below; a list, so that the tests change it in place)


class Parameters:
    k = 2.0


PARAMETERS = Parameters()


def global_residual(u):
    return K[0] * u[1:] * u[:-1] + np.exp(u[1:])


def attribute_residual(u):
    return PARAMETERS.k * u[1:] * u[:-1] + np.exp(u[1:])


def global_energy(u):
    return np.sum(K[0] * u[1:] ** 2 * u[:-1])


def test_compiled_jacobian_follows_changed_state():
    # a callable object's attribute, a global, an attribute of a global object: each change traces again
    scaled = Scaled(2.0)
    cases = [(scaled, lambda v: setattr(scaled, "k", v)), (global_residual, lambda v: K.__setitem__(0, v)),
             (attribute_residual, lambda v: setattr(PARAMETERS, "k", v))]
    x = POINTS[0][:8]
    for f, set_parameter in cases:
        set_parameter(2.0)
        jac = dgs.jacobian_fn(f, np.ones(8), compile=True)
        jac(x)
        jac(x)
        set_parameter(-3.0)
        np.testing.assert_allclose(jac(x).toarray(), dense_jacobian(f, x), rtol=1e-12, atol=1e-12)
        set_parameter(2.0)


def test_compiled_hessian_follows_changed_state():
    hess = dgs.hessian_fn(global_energy, np.ones(8), compile=True)
    x = POINTS[1][:8]
    hess(x)
    hess(x)
    K[0] = -3.0
    try:
        np.testing.assert_allclose(hess(x).toarray(), dense_hessian(global_energy, x), rtol=1e-10, atol=1e-10)
    finally:
        K[0] = 2.0


def test_compiled_prepared_objects_pickle():
    jac = pickle.loads(pickle.dumps(dgs.jacobian_fn(reaction_diffusion, np.ones(8), compile=True)))
    hess = dgs.hessian_fn(rosenbrock, np.ones(8), compile=True)
    hess(np.ones(8))  # (a compiled pass exists now: it is not pickled, but rebuilt on first use)
    hess = pickle.loads(pickle.dumps(hess))
    x = POINTS[1][:8]
    assert jac.compile and hess.compile
    np.testing.assert_allclose(jac(x).toarray(), dense_jacobian(reaction_diffusion, x), rtol=1e-12)
    np.testing.assert_allclose(hess(x).toarray(), dense_hessian(rosenbrock, x), rtol=1e-10)


def test_bidirectional_coloring_with_every_entry_in_reverse_mode():
    # a bidirectional coloring whose forward part holds no entry: the reverse products are then the only
    # ones evaluated, and their values must be read from the start of the compressed array
    pattern = dgs.jacobian_sparsity(arrowhead, np.ones(6))
    coloring = Coloring("bidirectional", np.arange(6, dtype=np.int64), color_rows(pattern),
                        forward_rows=np.zeros(6, bool))
    jac = dgs.SparseJacobian(arrowhead, pattern, coloring, "csr")
    x = POINTS[2][:6]
    np.testing.assert_allclose(jac(x).toarray(), dense_jacobian(arrowhead, x), rtol=1e-12, atol=1e-12)


def test_index_arrays_are_scipys_and_results_are_fresh():
    jac = dgs.jacobian_fn(reaction_diffusion, np.ones(10))
    J = jac(np.ones(10))
    assert J.indices.dtype == np.int32 and J.indptr.dtype == np.int32
    J.indices[:] = 0  # (a user writing into a result must not change the next one)
    np.testing.assert_array_equal(jac(np.ones(10)).indices, jac.sparsity.indices)


@pytest.mark.parametrize("prepare, fn", [(dgs.jacobian_fn, "jacobian_fn"), (dgs.hessian_fn, "hessian_fn")])
def test_compile_must_be_a_bool(prepare, fn):
    with pytest.raises(ValueError, match=rf"{fn}\(\): compile must be one of False, True, got 'yes'"):
        prepare(rosenbrock, np.ones(4), compile="yes")


@pytest.mark.parametrize("compile", [False, True])
@pytest.mark.parametrize("f, mode", [(np.sin, "forward"), (lambda x: np.sum(x ** 3)[None], "reverse"),
                                     (lambda x: x[::-1] * 2.0, "forward")], ids=["sin", "sum", "reversed"])
def test_one_color_per_direction(f, mode, compile):
    # (a single seed is evaluated without vmap)
    jac = dgs.jacobian_fn(f, np.ones(6), compile=compile)
    assert jac.ncolors == 1 and jac.mode == mode
    for x in POINTS:
        np.testing.assert_allclose(jac(x[:6]).toarray(), dense_jacobian(f, x[:6]), rtol=1e-13, atol=1e-13)
