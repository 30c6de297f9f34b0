"""dualgrad.sparse's evaluation: decompressed values against dense dualgrad derivatives and central finite
differences, every mode and format, pickling, ``check=True``, and the documented errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dualgrad as dg

sp = pytest.importorskip("scipy.sparse")
import dualgrad.sparse as dgs  # noqa: E402
from dualgrad.sparse import SparsityCheckError  # noqa: E402


def dense_jacobian(f, x):
    return dg.func.jacfwd(lambda z: f(z).reshape(-1))(dg.tensor(x))._data


def dense_hessian(f, x):
    return dg.func.hessian(lambda z: f(z).reshape(()))(dg.tensor(x))._data


def central_differences(f, x, h=1e-6):
    value = lambda z: np.asarray(f(dg.tensor(z))._data, float).ravel()  # noqa: E731
    columns = [(value(x + h * e) - value(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(columns, axis=1)


def reaction_diffusion(u):
    lap = np.concatenate([u[:1] * 0 - 2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:],
                          u[-2:-1] - 2 * u[-1:]])
    return lap + u * (1 - u)


def arrowhead(x):
    return np.concatenate([np.sum(np.sin(x))[None], x[0] * x[1:] ** 2])


def stencil(x):
    u = x.reshape(5, 5)
    p = np.pad(u, 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u + np.exp(u)).ravel()


def wide(x):
    return np.stack([np.sum(x[::2] ** 2), np.prod(x[:4]), x[3] * x[7]])


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


FUNCTIONS = [("reaction_diffusion", reaction_diffusion, 12), ("arrowhead", arrowhead, 10),
             ("stencil", stencil, 25), ("wide", wide, 9)]


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("name, f, n", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_jacobian_values_equal_dense_and_finite_differences(name, f, n, mode):
    x = np.random.default_rng(1).uniform(0.5, 1.5, n)
    jac = dgs.jacobian_fn(f, np.ones(n), mode=mode)
    J = jac(x)
    assert isinstance(J, sp.csr_array)
    np.testing.assert_allclose(J.toarray(), dense_jacobian(f, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J.toarray(), central_differences(f, x), rtol=1e-6, atol=1e-7)
    if mode != "auto":
        assert jac.mode == mode or (mode == "bidirectional" and jac.mode in ("bidirectional", "forward", "reverse"))


def test_auto_mode_choices():
    assert dgs.jacobian_fn(reaction_diffusion, np.ones(30)).mode == "forward"
    assert dgs.jacobian_fn(wide, np.ones(30)).mode == "reverse"
    arrow = dgs.jacobian_fn(arrowhead, np.ones(30))
    assert arrow.mode == "bidirectional" and arrow.ncolors <= 3
    assert dgs.jacobian_fn(reaction_diffusion, np.ones(30)).ncolors == 3


HESSIANS = [("rosenbrock", rosenbrock, 10),
            ("arrow", lambda x: x[0] * np.sum(np.sin(x[1:])) + np.sum(x ** 3), 8),
            ("stencil_energy", lambda x: np.sum(stencil(x) ** 2), 25),
            ("mixed", lambda x: np.sum(x[:-2] * x[2:] / (1 + x[1:-1] ** 2)) + np.log(np.sum(np.exp(x[:3]))), 9)]


@pytest.mark.parametrize("coloring", ["star", "acyclic"])
@pytest.mark.parametrize("name, f, n", HESSIANS, ids=[h[0] for h in HESSIANS])
def test_hessian_values_equal_dense_and_finite_differences(name, f, n, coloring):
    x = np.random.default_rng(2).uniform(0.5, 1.5, n)
    hess = dgs.hessian_fn(f, np.ones(n), coloring=coloring)
    assert hess.coloring == coloring
    H = hess(x).toarray()
    np.testing.assert_allclose(H, dense_hessian(f, x), rtol=1e-9, atol=1e-9)
    gradient = dg.func.grad(lambda z: f(z).reshape(()))
    np.testing.assert_allclose(H, central_differences(gradient, x), rtol=1e-5, atol=1e-5)


def test_color_counts_of_prepared_objects():
    assert dgs.hessian_fn(rosenbrock, np.ones(50)).ncolors <= 3
    assert dgs.hessian_fn(rosenbrock, np.ones(50), coloring="acyclic").ncolors == 2
    assert dgs.hessian_fn(lambda x: x[0] * np.sum(x[1:] ** 2), np.ones(50)).ncolors == 2
    assert dgs.hessian_fn(lambda x: x[0] * np.sum(x[1:] ** 2), np.ones(50), coloring="acyclic").ncolors == 2


def test_acyclic_hessian_of_a_long_chain():
    n = 2000
    x = np.random.default_rng(3).uniform(-1, 1, n)
    H = dgs.hessian(rosenbrock, x, coloring="acyclic").toarray()
    np.testing.assert_allclose(H, dgs.hessian(rosenbrock, x).toarray(), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("format", ["csr", "csc", "coo", "bsr", "dia", "dok", "lil"])
def test_formats(format):
    J = dgs.jacobian(reaction_diffusion, np.ones(6), format=format)
    assert J.format == format
    np.testing.assert_allclose(J.toarray(), dense_jacobian(reaction_diffusion, np.ones(6)))
    assert dgs.hessian(rosenbrock, np.ones(4), format=format).format == format


def test_prepared_objects_pickle():
    jac = dgs.jacobian_fn(reaction_diffusion, np.ones(8))
    again = pickle.loads(pickle.dumps(jac))
    assert again.ncolors == jac.ncolors and (again.sparsity != jac.sparsity).nnz == 0
    x = np.linspace(0.1, 0.9, 8)
    np.testing.assert_array_equal(again(x).toarray(), jac(x).toarray())
    for coloring in ("star", "acyclic"):
        hess = pickle.loads(pickle.dumps(dgs.hessian_fn(rosenbrock, np.ones(5), coloring=coloring)))
        np.testing.assert_allclose(hess(np.ones(5)).toarray(), dense_hessian(rosenbrock, np.ones(5)))


def test_user_sparsity_and_check():
    pattern = dgs.jacobian_sparsity(reaction_diffusion, np.ones(6))
    jac = dgs.jacobian_fn(reaction_diffusion, np.ones(6), sparsity=pattern.toarray(), check=True)
    assert jac.sparsity.nnz == pattern.nnz
    dgs.hessian_fn(rosenbrock, np.ones(5), check=True)


def test_check_names_the_mismatched_entries():
    # an identity pattern misses the off-diagonal entries of row 1 (and so compresses them into (1, 1))
    f = lambda u: np.concatenate([u[:1], u[1:-1] + u[2:] * u[:-2], u[-1:]])  # noqa: E731
    with pytest.raises(SparsityCheckError,
                       match=r"differs from the dense one at 3 entries: \(1, 0\): sparse 0, dense .*\(1, 2\)"):
        dgs.jacobian_fn(f, np.ones(3), sparsity=sp.eye_array(3), check=True)


def test_check_of_a_local_pattern_used_elsewhere():
    f = lambda x: np.maximum(x[:2], x[2:])  # noqa: E731
    jac = dgs.jacobian_fn(f, np.array([1.0, 0.0, 0.0, 1.0]), local=True, check=True)
    assert jac.sparsity.nnz == 2
    J = jac(np.array([0.0, 1.0, 1.0, 0.0]))  # other branches: the local pattern no longer holds
    assert J.nnz == 2 and np.abs(J.toarray()).sum() == 0


@pytest.mark.parametrize("call, error, message", [
    (lambda: dgs.jacobian_fn(np.sin, np.ones(3), sparsity=sp.eye_array(4)), ValueError,
     r"sparsity has shape \(4, 4\), but f's derivative at x0 has shape \(3, 3\)"),
    (lambda: dgs.hessian_fn(rosenbrock, np.ones(3), sparsity=np.ones((3, 2))), ValueError,
     r"sparsity has shape \(3, 2\)"),
    (lambda: dgs.jacobian_fn(np.sin, np.ones(3), mode="sideways"), ValueError, "mode must be one of"),
    (lambda: dgs.jacobian_fn(np.sin, np.ones(3), format="dense"), ValueError, "format must be one of"),
    (lambda: dgs.hessian_fn(rosenbrock, np.ones(3), coloring="greedy"), ValueError, "coloring must be one of"),
    (lambda: dgs.jacobian_fn(np.sin, np.ones((3, 1))), ValueError, "x must be 1-D"),
    (lambda: dgs.jacobian_fn(np.sin, np.ones(3))(np.ones(4)), ValueError,
     "x has 4 elements, the Jacobian was prepared for 3"),
    (lambda: dgs.jacobian_fn(np.sin, np.ones(3))(np.ones((3, 1))), ValueError, "x must be 1-D"),
    (lambda: dgs.hessian_fn(rosenbrock, np.ones(3))(np.ones(2)), ValueError,
     "x has 2 elements, the Hessian was prepared for 3"),
])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_constant_function_has_an_empty_jacobian():
    J = dgs.jacobian(lambda x: np.ones(3) + 0 * np.floor(x[:3]), np.ones(4))
    assert J.shape == (3, 4) and J.nnz == 0
    assert dgs.jacobian_fn(lambda x: np.floor(x), np.ones(4)).ncolors == 0


def test_tensor_input_and_scalar_output():
    x = dg.tensor([1.0, 2.0, 3.0])
    J = dgs.jacobian(lambda z: np.sum(z ** 2), x)
    np.testing.assert_allclose(J.toarray(), [[2.0, 4.0, 6.0]])


def test_local_hessian_pattern_follows_the_branch():
    f = lambda x: np.sum(np.maximum(x, 0.0) ** 3) + x[0] * x[1]  # noqa: E731
    x = np.array([1.0, -1.0, 2.0])
    np.testing.assert_array_equal(dgs.hessian_sparsity(f, x, local=True).toarray(),
                                  [[1, 1, 0], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(dgs.hessian_sparsity(f, x).toarray(), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    H = dgs.hessian_fn(f, x, local=True, check=True)(x).toarray()
    np.testing.assert_allclose(H, dense_hessian(f, x))


def test_detection_in_threads():
    import threading

    results = {}

    def work(k):
        results[k] = dgs.jacobian_sparsity(lambda x: x[1:] * x[:-1], np.ones(50 + k)).nnz

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: 2 * (49 + k) for k in range(4)}


def test_results_share_no_memory_with_the_prepared_object():
    jac = dgs.jacobian_fn(reaction_diffusion, np.ones(6))
    hess = dgs.hessian_fn(rosenbrock, np.ones(5))
    for prepared, x in ((jac, np.zeros(6)), (hess, np.zeros(5))):
        first = prepared(x)
        first.data[:] = 0.0
        first.eliminate_zeros()  # (in place: must not touch the pattern the next call uses)
        np.testing.assert_array_equal(prepared(x).toarray(), prepared(x).toarray())
        assert prepared(x).nnz == prepared.sparsity.nnz


@pytest.mark.parametrize("context", [dg.no_grad, dg.inference_mode])
@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
def test_evaluation_under_no_grad_and_inference_mode(context, mode):
    x = np.linspace(0.5, 1.5, 7)
    with context():
        J = dgs.jacobian_fn(arrowhead, np.ones(7), mode=mode, check=True)(x).toarray()
        H = dgs.hessian_fn(rosenbrock, np.ones(7), check=True)(x).toarray()
        H2 = dgs.hessian(rosenbrock, x, coloring="acyclic").toarray()
    np.testing.assert_allclose(J, dense_jacobian(arrowhead, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H, dense_hessian(rosenbrock, x), rtol=1e-10)
    np.testing.assert_allclose(H2, dense_hessian(rosenbrock, x), rtol=1e-10)


def test_small_arrowhead_is_bicolored():
    f = lambda x: np.concatenate([np.sum(x ** 2)[None], x[0] * x[1:]])  # noqa: E731
    jac = dgs.jacobian_fn(f, np.ones(5))
    assert jac.mode == "bidirectional" and jac.ncolors == 3


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_non_flat_outputs_are_flattened_in_c_order(mode):
    # (a 1-D output is used as it is; others are reshaped: both give the dense Jacobian's values)
    def grid(x):
        u = x.reshape(3, 4)
        return u[:, 1:] * u[:, :-1] + np.sin(u[:, 1:])

    x = np.random.default_rng(3).standard_normal(12)
    np.testing.assert_allclose(dgs.jacobian(grid, x, mode=mode).toarray(), dense_jacobian(grid, x), rtol=1e-13)

    def one_element(z):  # (a Hessian of an output of shape (1,): reshaped to a scalar)
        return np.sum(z[1:] * z[:-1] ** 2, keepdims=True)

    np.testing.assert_allclose(dgs.hessian(one_element, x).toarray(), dense_hessian(one_element, x), rtol=1e-13)
