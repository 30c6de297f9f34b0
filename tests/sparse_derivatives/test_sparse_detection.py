"""dualgrad.sparse's pattern detection: patterns against the nonzeros of dense Jacobians and Hessians of
generated functions (never a missed nonzero), global against local mode, and the documented errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import dualgrad as dg

pytest.importorskip("scipy")
import dualgrad.sparse as dgs  # noqa: E402
from dualgrad.sparse import SparsityDetectionError  # noqa: E402


def dense_jacobian(f, x):
    return dg.func.jacfwd(lambda z: f(z).reshape(-1))(dg.tensor(x))._data


def dense_hessian(f, x):
    return dg.func.hessian(lambda z: f(z).reshape(()))(dg.tensor(x))._data


def nonzeros_at_random_points(dense, f, n, points=3, seed=0):
    """The union of the nonzero structure of the dense derivative at a few random points."""
    rng = np.random.default_rng(seed)
    return np.any([dense(f, rng.uniform(0.5, 1.5, n) * rng.choice([-1, 1], n)) != 0 for _ in range(points)],
                  axis=0)


# -- generated functions -------------------------------------------------------------------------------------
def banded(offsets, seed):
    rng = np.random.default_rng(seed)
    coefficients = rng.uniform(0.5, 2.0, len(offsets))
    low, high = -min(min(offsets), 0), max(max(offsets), 0)

    def f(x):
        n = x.shape[0]
        inner = slice(low, n - high)
        total = 0.0
        for c, d in zip(coefficients, offsets):
            term = x[low + d:n - high + d]
            total = total + c * (np.sin(term) if d % 2 else term * term)
        return total * x[inner] + 1.0

    return f


def block(sizes, seed):
    rng = np.random.default_rng(seed)
    matrices = [rng.standard_normal((s, s)) for s in sizes]
    bounds = np.cumsum([0, *sizes])

    def f(x):
        return np.concatenate([np.tanh(A @ x[a:b]) for A, a, b in zip(matrices, bounds[:-1], bounds[1:])])

    return f


def arrowhead(x):
    return np.concatenate([np.sum(x ** 2)[None], x[0] * x[1:]])


def random_sparse(m, n, density, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n)) * (rng.random((m, n)) < density)
    B = rng.standard_normal((m, n)) * (rng.random((m, n)) < density)

    def f(x):
        return A @ np.sin(x) + (B @ x) ** 2

    return f


def stencil_2d(N):
    def f(x):
        u = x.reshape(N, N)
        p = np.pad(u, 1)
        lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
        return (lap + u ** 2 - 0.5 * u * u.T).ravel()

    return f


def indexing(n, seed):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    picks = rng.integers(0, n, 5)

    def f(x):
        a = x[perm] * x
        b = np.roll(x, 2)[::2]
        c = np.flip(x)[picks] ** 2
        d = x.reshape(2, -1).T.ravel() * np.exp(x)
        return np.concatenate([a, b, c, d, np.stack([x[0], x[-1] * x[1]])])

    return f


def reductions(x):
    u = x.reshape(3, -1)
    return np.concatenate([np.cumsum(x), u.sum(axis=0) * u.mean(axis=1).sum(), np.linalg.norm(u, axis=1),
                           u.prod(axis=1), np.log(np.sum(np.exp(u), axis=0))])


def matmul_constants(seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 6)) * (rng.random((5, 6)) < 0.4)
    C = rng.standard_normal((2, 3)) * (rng.random((2, 3)) < 0.6)

    def f(x):
        X = x.reshape(3, 2)
        return np.concatenate([A @ x, (C @ X).ravel(), np.einsum("ij,jk->ik", X.T, X).ravel(), x @ x[::-1] * x])

    return f


def written_in_place(x):
    y = np.zeros_like(x)
    y[0] = x[0] ** 2
    y[1:-1] = x[:-2] * x[2:]
    y[-1] = np.sin(x[-1])
    y += x[::-1]
    return y


GENERATED = [
    ("banded_tridiagonal", banded((-1, 0, 1), 0), 12),
    ("banded_5", banded((-2, -1, 0, 1, 2), 1), 15),
    ("banded_skew", banded((0, 1, 3), 2), 14),
    ("block", block((3, 4, 2), 3), 9),
    ("arrowhead", arrowhead, 8),
    ("random_sparse", random_sparse(9, 11, 0.25, 4), 11),
    ("stencil_2d", stencil_2d(4), 16),
    ("indexing", indexing(10, 5), 10),
    ("reductions", reductions, 9),
    ("matmul_constants", matmul_constants(6), 6),
    ("written_in_place", written_in_place, 7),
]


@pytest.mark.parametrize("name, f, n", GENERATED, ids=[g[0] for g in GENERATED])
def test_jacobian_pattern_equals_dense_nonzeros(name, f, n):
    pattern = dgs.jacobian_sparsity(f, np.ones(n)).toarray()
    dense = nonzeros_at_random_points(dense_jacobian, f, n)
    assert pattern.shape == dense.shape
    assert not (dense & ~pattern).any(), "missed nonzeros"
    np.testing.assert_array_equal(pattern, dense)  # (exact for these functions: no cancellation)


def scalar_of(f):
    return lambda x: np.sum(f(x) * np.linspace(1.0, 2.0, f(x).shape[0]) ** 2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


HESSIANS = [
    ("rosenbrock", rosenbrock, 9),
    ("tridiagonal_products", lambda x: np.sum(x[1:] * x[:-1]) + np.sum(np.cos(x)), 8),
    ("quadratic_form", lambda x: x @ (np.diag(np.arange(1.0, 7.0)) + np.eye(6, k=2)) @ x, 6),
    ("linear_is_empty", lambda x: np.sum(3 * x) + x[0], 5),
    ("arrow", lambda x: x[0] * np.sum(x[1:]) + np.sum(x ** 2), 7),
    ("division", lambda x: np.sum(x[:-1] / (1 + x[1:] ** 2)), 6),
    ("banded_residual_squares", scalar_of(banded((-1, 0, 1), 7)), 8),
    ("stencil_squares", scalar_of(stencil_2d(3)), 9),
    ("indexing_squares", scalar_of(indexing(8, 8)), 8),
    ("matmul_squares", scalar_of(matmul_constants(9)), 6),
    ("in_place_squares", scalar_of(written_in_place), 6),
]


@pytest.mark.parametrize("name, f, n", HESSIANS, ids=[h[0] for h in HESSIANS])
def test_hessian_pattern_equals_dense_nonzeros(name, f, n):
    pattern = dgs.hessian_sparsity(f, np.ones(n)).toarray()
    dense = nonzeros_at_random_points(dense_hessian, f, n)
    assert not (dense & ~pattern).any(), "missed nonzeros"
    np.testing.assert_array_equal(pattern, pattern.T)
    np.testing.assert_array_equal(pattern, dense)


def test_hessian_pattern_is_not_the_jacobian_of_the_gradient_pattern():
    # x0 * x1 + x2 ** 2: the product has no diagonal second derivative
    pattern = dgs.hessian_sparsity(lambda x: x[0] * x[1] + x[2] ** 2, np.ones(3)).toarray()
    np.testing.assert_array_equal(pattern, [[0, 1, 0], [1, 0, 0], [0, 0, 1]])


def test_piecewise_ops_global_keeps_both_local_selects():
    def f(x):
        return np.concatenate([np.maximum(x[:2], x[2:4]), np.where(x[:2] > 0, x[2:4], x[4:]),
                               np.clip(x[4:], -1.0, 1.0), np.max(x[:3])[None]])

    x = np.array([2.0, -1.0, 1.0, 3.0, 0.5, 5.0])
    glob = dgs.jacobian_sparsity(f, x).toarray()
    local = dgs.jacobian_sparsity(f, x, local=True).toarray()
    dense = dense_jacobian(f, x) != 0
    assert not (dense & ~local).any() and not (local & ~glob).any()
    np.testing.assert_array_equal(local, dense)
    assert glob[0, 0] and glob[0, 2] and not local[0, 2]


def test_local_mode_follows_python_branches():
    def f(x):
        if x[0] > 0:
            return x[1:] * 2
        return x[1:] * x[0]

    np.testing.assert_array_equal(dgs.jacobian_sparsity(f, np.ones(3), local=True).toarray(),
                                  [[0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(dgs.jacobian_sparsity(f, -np.ones(3), local=True).toarray(),
                                  [[1, 1, 0], [1, 0, 1]])


def test_detached_values_are_not_constants_in_global_mode():
    x = np.array([0.0, 1.0])
    for f in (lambda z: z * z.detach(), lambda z: np.where(z.detach() > 0, z, 0.0), lambda z: z * z.data):
        np.testing.assert_array_equal(dgs.jacobian_sparsity(f, x).toarray(), np.eye(2, dtype=bool))
        local = dgs.jacobian_sparsity(f, x, local=True).toarray()
        assert local[1, 1] and not local[0, 1] and not local[1, 0]
    assert dgs.jacobian_sparsity(lambda z: z.detach() * 2, x).nnz == 0


def test_copy_construction_in_global_mode():
    with pytest.raises(SparsityDetectionError, match=r"dualgrad.tensor\(t\) / t.new_tensor\(t\) copies"):
        dgs.jacobian_sparsity(lambda z: z * dg.tensor(z), np.ones(2))
    with pytest.warns(UserWarning, match="To copy construct"):
        dgs.jacobian_sparsity(lambda z: z * dg.tensor(z), np.ones(2), local=True)


def test_zero_derivative_ops_give_empty_patterns():
    f = lambda x: np.floor(x) + np.sign(x) + (x > 0) + np.round(x * 3)  # noqa: E731
    assert dgs.jacobian_sparsity(f, np.ones(4)).nnz == 0


def test_large_banded_detection_is_vectorised():
    n = 200_000
    pattern = dgs.jacobian_sparsity(lambda u: u[:-2] - 2 * u[1:-1] + u[2:] + u[1:-1] ** 3, np.zeros(n))
    assert pattern.shape == (n - 2, n) and pattern.nnz == 3 * (n - 2)


# -- errors ----------------------------------------------------------------------------------------------------
def test_branch_in_global_mode_points_to_local():
    def f(x):
        return x * 2 if x[0] > 0 else x

    with pytest.raises(SparsityDetectionError, match=r"bool\(\).*local=True"):
        dgs.jacobian_sparsity(f, np.ones(3))


def test_float_of_traced_value_in_global_mode():
    with pytest.raises(SparsityDetectionError, match=r"float\(\).*local=True"):
        dgs.jacobian_sparsity(lambda x: x * float(x[0]), np.ones(3))


def test_value_dependent_output_shape_in_global_mode():
    with pytest.raises(SparsityDetectionError, match="output shape of .* depends on the values"):
        dgs.jacobian_sparsity(lambda x: x[x > 0], np.array([1.0, -1.0, 2.0]))
    pattern = dgs.jacobian_sparsity(lambda x: x[x > 0], np.array([1.0, -1.0, 2.0]), local=True)
    np.testing.assert_array_equal(pattern.toarray(), [[1, 0, 0], [0, 0, 1]])


def test_value_dependent_index_in_global_mode():
    with pytest.raises(SparsityDetectionError, match="index computed from traced values"):
        dgs.jacobian_sparsity(lambda x: np.sort(x), np.array([3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(dgs.jacobian_sparsity(np.sort, np.array([3.0, 1.0, 2.0]), local=True).toarray(),
                                  [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


@pytest.mark.parametrize("reader", [np.nonzero, np.flatnonzero, np.isposinf, np.unique, np.argwhere])
def test_numpy_functions_reading_values_in_global_mode(reader):
    with pytest.raises(SparsityDetectionError, match=rf"np.{reader.__name__}\(\) of a traced value.*local=True"):
        dgs.jacobian_sparsity(lambda x: x * np.size(reader(x)), np.ones(3))
    dgs.jacobian_sparsity(lambda x: x * np.size(reader(x)), np.ones(3), local=True)


def test_escape_to_numpy_is_refused():
    def f(x):
        out = np.zeros(3)
        out[:] = x * 2
        return out

    with pytest.raises(SparsityDetectionError, match="plain NumPy array"):
        dgs.jacobian_sparsity(f, np.ones(3))


@pytest.mark.parametrize("x, error, message", [
    (np.ones((2, 3)), ValueError, r"x must be 1-D, got shape \(2, 3\); flatten it"),
    (np.ones(()), ValueError, "x must be 1-D"),
    ("abc", TypeError, "x must be a 1-D array or Tensor, not str"),
    (np.array(["a"]), TypeError, "x must hold real numbers"),
])
def test_bad_inputs(x, error, message):
    with pytest.raises(error, match=message):
        dgs.jacobian_sparsity(np.sin, x)


def test_hessian_of_vector_function_is_refused():
    with pytest.raises(ValueError, match="must return one value"):
        dgs.hessian_sparsity(np.sin, np.ones(3))


def test_op_without_rule_raises_naming_it():
    class Square(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    with pytest.raises(NotImplementedError, match="no rule for the op"):
        dgs.jacobian_sparsity(lambda x: Square.apply(x), np.ones(3))


def test_detection_leaves_no_observer_behind():
    from dualgrad.base.state import STATE

    with pytest.raises(SparsityDetectionError):
        dgs.jacobian_sparsity(lambda x: x if x[0] else x, np.ones(2))
    assert not STATE.observed and STATE.observers == ()


def test_import_dualgrad_does_not_import_scipy():
    code = "import sys, dualgrad; print('scipy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- many ops: never a missed nonzero, local within global, exact unless the op is piecewise ----------------------
_A = np.random.default_rng(0).standard_normal((6, 6)) * (np.random.default_rng(1).random((6, 6)) < 0.4)
A = _A
OPS = {
    "dot": lambda x: np.dot(A, x),
    "xA": lambda x: x @ A,
    "AX": lambda x: (A[:, :3] @ x.reshape(3, 2)).ravel(),
    "einsum_diag": lambda x: np.einsum("ii->i", np.outer(x, x)),
    "einsum_trace": lambda x: np.einsum("ii", x.reshape(2,3)[:, :2] * 1.0 + A[:2,:2])[None],
    "solve": lambda x: np.linalg.solve(A + 5*np.eye(6), x),
    "solve_mat": lambda x: np.linalg.solve(x.reshape(2,3)[:, :2] + 3*np.eye(2), np.ones(2)),
    "fft": lambda x: np.fft.rfft(x).real,
    "cumsum2d": lambda x: np.cumsum(x.reshape(2,3), axis=1).ravel(),
    "softmax": lambda x: dg.softmax(x.reshape(2,3), 1).ravel(),
    "diff": lambda x: np.diff(x),
    "clip": lambda x: np.clip(x, -0.5, 0.5),
    "abs": lambda x: np.abs(x),
    "where0": lambda x: np.where(x > 0, x, 0.0),
    "outer": lambda x: np.outer(x[:3], x[3:]).ravel(),
    "kron": lambda x: np.kron(x[:2], x[2:4]),
    "tile": lambda x: np.tile(x[:2], 3),
    "repeat": lambda x: np.repeat(x[:3], 2),
    "triu": lambda x: np.triu(x.reshape(2,3)).ravel(),
    "trace": lambda x: np.trace(x.reshape(2,3))[None],
    "mean_axis": lambda x: x.reshape(2,3).mean(0),
    "var": lambda x: x.reshape(2,3).var(1),
    "linspace_mul": lambda x: x * np.linspace(0, 1, 6),
    "take": lambda x: np.take(x, [5, 0, 0, 2]),
    "take_along": lambda x: np.take_along_axis(x.reshape(2,3), np.array([[2,0],[1,1]]), 1).ravel(),
    "pad_edge": lambda x: np.pad(x, 2, mode="edge"),
    "pad_reflect": lambda x: np.pad(x, 2, mode="reflect"),
    "pad_const": lambda x: np.pad(x, 1, constant_values=3.0),
    "stack": lambda x: np.stack([x, x[::-1]]).ravel(),
    "hstack": lambda x: np.hstack([x[:2], x[4:]]),
    "swap": lambda x: np.swapaxes(x.reshape(2,3), 0, 1).ravel(),
    "broadcast": lambda x: (x[:3, None] * x[None, 3:]).ravel(),
    "power": lambda x: x ** 3 + 2.0 ** x,
    "hypot": lambda x: np.hypot(x[:3], x[3:]),
    "arctan2": lambda x: np.arctan2(x[:3], x[3:]),
    "prod": lambda x: np.prod(x.reshape(2,3), axis=0),
    "norm": lambda x: np.linalg.norm(x.reshape(2,3), axis=1),
    "logsumexp": lambda x: dg.logsumexp(x.reshape(2,3), 1),
    "inv": lambda x: np.linalg.inv(x.reshape(2,3)[:, :2] + 3*np.eye(2)).ravel(),
    "det": lambda x: np.linalg.det(x.reshape(2,3)[:, 1:])[None],
    "inplace_mul": lambda x: (lambda y: (y.__imul__(x), y)[1])(np.ones_like(x) * 2),
    "fancy_set": lambda x: (lambda y: (y.__setitem__(np.array([0, 2]), x[3:5] ** 2), y)[1])(np.zeros_like(x)),
    "view_write": lambda x: (lambda y: (y.reshape(2,3).__setitem__((0, slice(None)), x[3:]), y)[1])(x * 1.0),
    "convolve": lambda x: np.convolve(x, np.array([1.0, -2.0, 1.0]), mode="valid"),
    "interp_like": lambda x: 0.5 * (x[1:] + x[:-1]),
    "matrix_power": lambda x: np.linalg.matrix_power(x[:4].reshape(2,2), 2).ravel(),
    "cross": lambda x: np.cross(x[:3], x[3:]),
    "diag": lambda x: np.diag(x[:3]).ravel(),
    "flatnonzero_const": lambda x: x[np.flatnonzero(np.arange(6) % 2)],
}
OPS["threshold"] = lambda x: dg.threshold(x, 0.5, 0.0)
OPS["masked_fill"] = lambda x: x.masked_fill(dg.tensor([True, False, True, False, False, True]), 2.0)
OPS["relu"] = lambda x: dg.relu(x)
OPS["maximum_tensor"] = lambda x: np.maximum(x[:3], x[3:])
OPS["where_constant"] = lambda x: np.where(np.arange(6) % 2 == 0, x, x[::-1] ** 2)
# (piecewise: local mode is exact)
CONSERVATIVE_IN_GLOBAL_MODE = {"clip", "where0", "threshold", "relu", "maximum_tensor"}
DENSE_RULE = {"solve", "solve_mat", "inv", "det", "matrix_power"}  # (linear algebra: every output on every input)


@pytest.mark.parametrize("name", list(OPS))
def test_many_ops_never_miss_a_nonzero(name):
    f = OPS[name]
    x = np.random.default_rng(2).uniform(0.3, 1.2, 6) * np.array([1, -1, 1, -1, 1, 1])
    glob = dgs.jacobian_sparsity(f, x).toarray()
    local = dgs.jacobian_sparsity(f, x, local=True).toarray()
    dense = dense_jacobian(f, x) != 0
    assert not (dense & ~local).any(), "missed nonzeros"
    assert not (local & ~glob).any()
    if name in CONSERVATIVE_IN_GLOBAL_MODE:
        np.testing.assert_array_equal(local, dense)
    elif name not in DENSE_RULE:
        np.testing.assert_array_equal(glob, dense)


def test_tuple_output_is_refused():
    with pytest.raises(TypeError, match=r"f must return one array or Tensor, not a ValuesIndices"):
        dgs.jacobian_sparsity(lambda x: x.reshape(2, 3).max(1), np.ones(6))


# -- property-based: random banded and random sparse functions ------------------------------------------------------
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(offsets=st.sets(st.integers(-3, 3), min_size=1, max_size=5), seed=st.integers(0, 10 ** 6),
       n=st.integers(8, 14))
def test_random_banded_patterns(offsets, seed, n):
    f = banded(tuple(sorted(offsets)), seed)
    pattern = dgs.jacobian_sparsity(f, np.ones(n)).toarray()
    np.testing.assert_array_equal(pattern, nonzeros_at_random_points(dense_jacobian, f, n, points=2, seed=seed))


@given(m=st.integers(1, 9), n=st.integers(1, 9), density=st.floats(0.05, 0.6), seed=st.integers(0, 10 ** 6))
def test_random_sparse_patterns_and_values(m, n, density, seed):
    f = random_sparse(m, n, density, seed)
    x = np.random.default_rng(seed).uniform(0.5, 1.5, n)
    pattern = dgs.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(pattern, nonzeros_at_random_points(dense_jacobian, f, n, points=2, seed=seed))
    np.testing.assert_allclose(dgs.jacobian(f, x).toarray(), dense_jacobian(f, x), rtol=1e-12, atol=1e-12)
    h = scalar_of(f) if m > 1 else (lambda z: np.sum(f(z) ** 2))
    np.testing.assert_allclose(dgs.hessian(h, x).toarray(), dense_hessian(h, x), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dgs.hessian(h, x, coloring="acyclic").toarray(), dense_hessian(h, x),
                               rtol=1e-9, atol=1e-9)


def test_nearly_dense_patterns_stop_with_a_clear_error(monkeypatch):
    from dualgrad.sparse import _rowsets

    monkeypatch.setattr(_rowsets, "LIMIT", 1000)
    with pytest.raises(MemoryError, match="intermediate pattern has 2500 entries"):
        dgs.hessian_sparsity(lambda x: np.exp(np.sum(x)), np.ones(50))


@pytest.mark.parametrize("local", [False, True])
@pytest.mark.parametrize("inner", ["grad", "vjp", "jacrev", "autograd.grad"])
def test_a_reverse_pass_inside_f_is_refused_by_name(inner, local):
    """The reverse pass would start from leaves without index sets: the pattern would be empty."""
    f = lambda x: (x[1:] * x[:-1]).sum() + (x ** 3).sum()  # noqa: E731
    calls = {
        "grad": dg.func.grad(f),
        "vjp": lambda x: dg.func.vjp(f, x)[1](dg.tensor(1.0))[0],
        "jacrev": dg.func.jacrev(f),
        "autograd.grad": lambda x: dg.autograd.grad(f(x.detach().requires_grad_()), x)[0],
    }
    with pytest.raises(SparsityDetectionError, match="cannot follow a reverse-mode derivative inside f"):
        dgs.jacobian_sparsity(calls[inner], dg.ones(5), local=local)


def test_forward_mode_inside_f_is_followed():
    f = lambda x: dg.func.jvp(lambda x: x[1:] * x[:-1], (x,), (dg.ones(5),))[1]  # noqa: E731
    pattern = dgs.jacobian_sparsity(f, dg.ones(5)).toarray()
    np.testing.assert_array_equal(pattern, np.eye(4, 5, dtype=bool) | np.eye(4, 5, 1, dtype=bool))
