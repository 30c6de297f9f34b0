"""``dualgrad.linalg``: NumPy's values, derivatives against finite differences, errors.

The primitive ops (inv, solve, det, slogdet, cholesky, eigh, svd, qr) are also
walked by the op-table tests through their samples in ``op_samples.py``; here:
primal results equal to NumPy's over Hypothesis shapes and stack dimensions, the
composites (norms, pinv, lstsq, matrix_power, multi_dot) in all modes, complex
inputs by the conjugate-Wirtinger identity, degenerate spectra, and every
documented error.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_second_order, check_wirtinger
from helpers import as_outputs, directional_fd
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad import forward_ad as fwAD

LinAlgError = np.linalg.LinAlgError
stacks = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


def well_conditioned(rng: np.random.Generator, shape: tuple, dtype=np.float64) -> np.ndarray:
    n = shape[-1]
    a = 2.0 * np.eye(n) + rng.uniform(-0.4, 0.4, shape) / n
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.uniform(-0.4, 0.4, shape) / n
    return a.astype(dtype)


def spd(rng: np.random.Generator, shape: tuple, dtype=np.float64) -> np.ndarray:
    b = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        b = b + 1j * rng.standard_normal(shape)
    return (b @ np.conj(np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def check_forward(call, arrays, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Tangents from ``dualgrad.forward_ad`` against central differences."""
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(np.shape(a)) for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(v)) for a, v in zip(arrays, vs, strict=True)]
        outs = as_outputs(call(*duals))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
    for t, want in zip(tangents, directional_fd(call, arrays, vs), strict=True):
        np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=atol)


def check_all_modes(call, arrays, seed: int = 0) -> None:
    check_first_order(call, arrays, seed)
    check_forward(call, arrays, seed)
    check_second_order(call, arrays, seed)


def check_vmap(call, stacked: np.ndarray) -> None:
    """``vmap(call)`` over the first axis equals a loop."""
    got = dg.vmap(call)(dg.tensor(stacked))
    for k in range(stacked.shape[0]):
        expected = call(dg.tensor(stacked[k])).numpy()
        np.testing.assert_allclose(got[k].numpy(), expected, rtol=1e-10, atol=1e-12)


# -- primal results equal NumPy's --------------------------------------------------------------------
@given(stack=stacks, n=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_square_matrix_functions_equal_numpy(stack, n, seed):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, stack + (n, n))
    b = rng.standard_normal(stack + (n, 2))
    t = dg.tensor(a)
    np.testing.assert_allclose(dg.linalg.inv(t).numpy(), np.linalg.inv(a))
    np.testing.assert_allclose(dg.linalg.solve(t, dg.tensor(b)).numpy(), np.linalg.solve(a, b))
    vector = b[(0,) * len(stack)][:, 0]
    np.testing.assert_allclose(dg.linalg.solve(t, dg.tensor(vector)).numpy(), np.linalg.solve(a, vector))
    np.testing.assert_allclose(dg.linalg.det(t).numpy(), np.linalg.det(a))
    sign, logabsdet = dg.linalg.slogdet(t)
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(a).sign)
    np.testing.assert_allclose(logabsdet.numpy(), np.linalg.slogdet(a).logabsdet)
    s = spd(rng, stack + (n, n))
    np.testing.assert_allclose(dg.linalg.cholesky(dg.tensor(s)).numpy(), np.linalg.cholesky(s))
    np.testing.assert_allclose(dg.linalg.cholesky(dg.tensor(s), upper=True).numpy(),
                               np.linalg.cholesky(s, upper=True))
    for ours, theirs in zip(dg.linalg.eigh(dg.tensor(s)), np.linalg.eigh(s), strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs)
    np.testing.assert_allclose(dg.linalg.eigvalsh(dg.tensor(s), UPLO="U").numpy(),
                               np.linalg.eigvalsh(s, UPLO="U"))
    for k in (-2, 0, 3):
        np.testing.assert_allclose(dg.linalg.matrix_power(t, k).numpy(), np.linalg.matrix_power(a, k))


@given(stack=stacks, m=st.integers(1, 4), n=st.integers(1, 4), seed=st.integers(0, 2**16),
       full=st.booleans())
def test_rectangular_functions_equal_numpy(stack, m, n, seed, full):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(stack + (m, n))
    t = dg.tensor(a)
    for ours, theirs in zip(dg.linalg.svd(t, full_matrices=full), np.linalg.svd(a, full_matrices=full),
                            strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-12)
    np.testing.assert_allclose(dg.linalg.svd(t, compute_uv=False).numpy(), np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose(dg.linalg.svdvals(t).numpy(), np.linalg.svdvals(a))
    for mode in ("reduced", "complete"):
        for ours, theirs in zip(dg.linalg.qr(t, mode=mode), np.linalg.qr(a, mode=mode), strict=True):
            np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-12)
    np.testing.assert_allclose(dg.linalg.qr(t, mode="r").R.numpy(), np.linalg.qr(a, mode="r"), atol=1e-12)
    np.testing.assert_allclose(dg.linalg.pinv(t).numpy(), np.linalg.pinv(a), atol=1e-10)
    np.testing.assert_allclose(dg.linalg.pinv(t, rtol=None).numpy(), np.linalg.pinv(a, rtol=None), atol=1e-10)


ORDS_VECTOR = [None, 1, 2, 3, 0.5, np.inf, -np.inf, -1, 0]
ORDS_MATRIX = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), seed=st.integers(0, 2**16),
       keepdims=st.booleans(), data=st.data())
def test_norms_equal_numpy(shape, seed, keepdims, data):
    x = np.random.default_rng(seed).standard_normal(shape)
    t = dg.tensor(x)
    np.testing.assert_allclose(dg.linalg.norm(t, keepdims=keepdims).numpy(),
                               np.linalg.norm(x, keepdims=keepdims))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ord_ = data.draw(st.sampled_from(ORDS_VECTOR))
    np.testing.assert_allclose(dg.linalg.norm(t, ord_, axis, keepdims).numpy(),
                               np.linalg.norm(x, ord_, axis, keepdims))
    np.testing.assert_allclose(dg.linalg.vector_norm(t, ord=ord_ or 2, axis=axis, keepdims=keepdims).numpy(),
                               np.linalg.vector_norm(x, ord=ord_ or 2, axis=axis, keepdims=keepdims))
    if len(shape) >= 2:
        axes = tuple(data.draw(st.permutations(range(len(shape))))[:2])
        ord_ = data.draw(st.sampled_from(ORDS_MATRIX))
        np.testing.assert_allclose(dg.linalg.norm(t, ord_, axes, keepdims).numpy(),
                                   np.linalg.norm(x, ord_, axes, keepdims))
        np.testing.assert_allclose(dg.linalg.matrix_norm(t, ord=ord_ or "fro", keepdims=keepdims).numpy(),
                                   np.linalg.matrix_norm(x, ord=ord_ or "fro", keepdims=keepdims))


def test_lstsq_and_multi_dot_equal_numpy():
    rng = np.random.default_rng(0)
    a, b, b1 = rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), rng.standard_normal(5)
    for rhs in (b, b1):
        ours, theirs = dg.linalg.lstsq(dg.tensor(a), dg.tensor(rhs)), np.linalg.lstsq(a, rhs)
        for o, t in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(o.numpy(), t)
    wide = rng.standard_normal((2, 4))
    ours, theirs = dg.linalg.lstsq(dg.tensor(wide), dg.tensor(b1[:2])), np.linalg.lstsq(wide, b1[:2])
    np.testing.assert_allclose(ours[0].numpy(), theirs[0])
    assert ours[1].shape == theirs[1].shape == (0,) and int(ours[2]) == theirs[2]
    # torch's field names (torch.linalg.lstsq(A, B).solution)
    named = dg.linalg.lstsq(dg.tensor(a), dg.tensor(b1))
    assert isinstance(named, dg.linalg.LstsqResult) and named._fields == (
        "solution", "residuals", "rank", "singular_values")
    assert named.solution is named[0] and named.singular_values is named[3]
    chain = [rng.standard_normal(4), rng.standard_normal((4, 3)), rng.standard_normal((3, 5)),
             rng.standard_normal(5)]
    np.testing.assert_allclose(dg.linalg.multi_dot([dg.tensor(c) for c in chain]).numpy(),
                               np.linalg.multi_dot(chain))
    np.testing.assert_allclose(dg.linalg.multi_dot([dg.tensor(c) for c in chain[1:3]]).numpy(),
                               np.linalg.multi_dot(chain[1:3]))


# -- composites in all modes ------------------------------------------------------------------------
COMPOSITES = {
    "norm_fro": lambda x: dg.linalg.norm(x),
    "norm_nuc": lambda x: dg.linalg.norm(x, "nuc"),
    "norm_2": lambda x: dg.linalg.norm(x, 2),
    "norm_-2": lambda x: dg.linalg.norm(x, -2),
    "norm_1": lambda x: dg.linalg.norm(x, 1, keepdims=True),
    "norm_inf": lambda x: dg.linalg.norm(x, np.inf, axis=(1, 0)),
    "vector_norm_3": lambda x: dg.linalg.vector_norm(x, ord=3, axis=-1),
    "matrix_norm_-inf": lambda x: dg.linalg.matrix_norm(x, ord=-np.inf),
    "pinv": lambda x: dg.linalg.pinv(x),
    "pinv_wide": lambda x: dg.linalg.pinv(x.mT),
    "lstsq": lambda x: dg.linalg.lstsq(x, x[:, 0] * 2.0 + 1.0)[:2],
    "matrix_power_3": lambda x: dg.linalg.matrix_power(x[:3], 3),
    "matrix_power_-2": lambda x: dg.linalg.matrix_power(x[:3], -2),
    "multi_dot": lambda x: dg.linalg.multi_dot([x[:, 0], x, x.mT, x]),
    "trace": lambda x: dg.linalg.trace(x[:3] @ x[:3]),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_in_all_modes(name):
    rng = np.random.default_rng(1)
    # A tall, well-conditioned matrix with distinct singular values and no ties in row/column sums.
    x = np.vstack([np.diag([3.0, 2.0, 1.0]), rng.uniform(-0.3, 0.3, (2, 3))]) + rng.uniform(-0.2, 0.2, (5, 3))
    check_all_modes(COMPOSITES[name], [x])


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_under_vmap(name):
    rng = np.random.default_rng(2)
    base = np.vstack([np.diag([3.0, 2.0, 1.0]), np.zeros((2, 3))])
    stacked = base + rng.uniform(-0.2, 0.2, (3, 5, 3))
    check_vmap(lambda x: as_outputs(COMPOSITES[name](x))[-1], stacked)


@given(stack=stacks, n=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_vmap_of_primitives_matches_loop(stack, n, seed):
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, (2,) + stack + (n, n))
    b = rng.standard_normal((n,))
    check_vmap(lambda t: dg.linalg.inv(t), a)
    check_vmap(lambda t: dg.linalg.slogdet(t).logabsdet, a)
    check_vmap(lambda t: dg.linalg.solve(t, dg.tensor(b)), a)
    check_vmap(lambda t: dg.linalg.solve(dg.tensor(a[0]), t), rng.standard_normal((3, n)))
    check_vmap(lambda t: dg.linalg.solve(dg.tensor(a[0]), t), rng.standard_normal((3,) + stack + (n, 2)))
    check_vmap(lambda t: dg.linalg.svdvals(t), a)


# -- complex inputs (conjugate Wirtinger) -------------------------------------------------------------
def _phase_free_eigh(t):
    values, vectors = dg.linalg.eigh(t)
    return values, (vectors * dg.tensor(np.arange(1.0, t.shape[-1] + 1))) @ vectors.mH


def _phase_free_svd(t):
    u, s, vh = dg.linalg.svd(t, full_matrices=False)
    return s, (u * dg.tensor(np.arange(1.0, s.shape[-1] + 1))) @ vh, (u * u.conj()).real


def _phase_free_qr(q, r):
    """``Q diag(R)`` and ``R`` (LAPACK's diagonal of ``R`` is real)."""
    return q @ r.diagonal(0, -2, -1).real.diag_embed(), r


COMPLEX = {
    "inv": (lambda a: dg.linalg.inv(a), "square"),
    "solve": (lambda a: dg.linalg.solve(a, a[..., 0] * 1j + 1.0), "square"),
    "det": (lambda a: dg.linalg.det(a), "square"),
    "slogdet": (lambda a: tuple(dg.linalg.slogdet(a)), "square"),
    "cholesky": (lambda a: dg.linalg.cholesky(a @ a.mH + 2.0 * np.eye(3)), "square"),
    "eigh": (lambda a: _phase_free_eigh(a + a.mH), "square"),
    "svd": (_phase_free_svd, "tall"),
    "svd_wide": (lambda a: _phase_free_svd(a.mT), "tall"),
    "qr": (lambda a: _phase_free_qr(*dg.linalg.qr(a)), "tall"),
    "pinv": (lambda a: dg.linalg.pinv(a), "tall"),
    "norm_nuc": (lambda a: dg.linalg.norm(a, "nuc"), "tall"),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_inputs_follow_conjugate_wirtinger(name):
    rng = np.random.default_rng(3)
    call, kind = COMPLEX[name]
    shape = (3, 3) if kind == "square" else (4, 3)
    a = well_conditioned(rng, (3, 3), np.complex128)
    if kind == "tall":
        a = np.vstack([a, rng.uniform(-0.3, 0.3, (1, 3)) * (1 + 1j)])
    assert a.shape == shape
    check_wirtinger(call, [a])


# -- degenerate spectra and stability ---------------------------------------------------------------
def test_eigvalsh_and_svdvals_gradients_are_exact_at_degenerate_values():
    a = dg.tensor(np.eye(3), requires_grad=True)  # all eigenvalues/singular values equal
    (grad_eig,) = dg.grad((dg.linalg.eigvalsh(a) ** 2).sum(), a)  # = ||A||_F^2
    (grad_svd,) = dg.grad((dg.linalg.svdvals(a) ** 2).sum(), a)
    np.testing.assert_allclose(grad_eig.numpy(), 2 * np.eye(3))
    np.testing.assert_allclose(grad_svd.numpy(), 2 * np.eye(3))
    with fwAD.dual_level():
        values = dg.linalg.eigvalsh(fwAD.make_dual(dg.tensor(np.eye(3)), dg.tensor(np.diag([1.0, 2.0, 3.0]))))
        assert np.isfinite(fwAD.unpack_dual(values).tangent.numpy()).all()


def test_slogdet_is_stable_where_det_underflows():
    a = dg.tensor(np.eye(400) * 1e-3, requires_grad=True)
    assert dg.linalg.det(a).item() == 0.0
    sign, logabsdet = dg.linalg.slogdet(a)
    assert sign.item() == 1.0 and np.isclose(logabsdet.item(), 400 * np.log(1e-3))
    (grad,) = dg.grad(logabsdet, a)
    np.testing.assert_allclose(grad.numpy(), np.eye(400) * 1e3)


def test_full_matrices_completion_keeps_u_orthogonal():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 2))
    with fwAD.dual_level():
        u = dg.linalg.svd(fwAD.make_dual(dg.tensor(a), dg.tensor(rng.standard_normal((5, 2)))))[0]
        du = fwAD.unpack_dual(u).tangent.numpy()
    u = u.numpy()
    np.testing.assert_allclose(du.T @ u + u.T @ du, np.zeros((5, 5)), atol=1e-12)


def test_float32_keeps_dtype():
    a = dg.tensor(np.eye(3, dtype=np.float32) * 2, requires_grad=True)
    out = dg.linalg.inv(a).sum() + dg.linalg.slogdet(a).logabsdet + dg.linalg.svdvals(a).sum()
    (grad,) = dg.grad(out, a)
    assert out.dtype == np.float32 and grad.dtype == np.float32


# -- errors ------------------------------------------------------------------------------------------
def test_linalg_error_is_torchs_runtime_error_and_numpys_linalg_error():
    assert issubclass(dg.linalg.LinAlgError, RuntimeError) and issubclass(dg.linalg.LinAlgError, LinAlgError)


def test_singular_matrices_raise_linalg_error_in_torchs_words():
    singular = dg.tensor(np.ones((2, 2)), requires_grad=True)
    with pytest.raises(dg.linalg.LinAlgError, match=r"^linalg.inv: The inversion could not be completed "
                                                    r"because the input matrix is singular.$"):
        dg.linalg.inv(singular)
    with pytest.raises(dg.linalg.LinAlgError, match=r"^linalg.solve: The solver failed because the input "
                                                    r"matrix is singular.$"):
        dg.linalg.solve(singular, dg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"^linalg.inv: \(Batch element 1\): The inversion"):
        dg.inverse(dg.stack([dg.eye(2), singular]))
    assert singular.grad is None


def test_cholesky_of_non_positive_definite_names_the_leading_minor():
    with pytest.raises(dg.linalg.LinAlgError, match=r"^linalg.cholesky: The factorization could not be completed "
                       r"because the input is not positive-definite \(the leading minor of order 2 is not "
                       r"positive-definite\).$"):
        dg.linalg.cholesky(dg.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(LinAlgError, match=r"\(Batch element 1\): .* leading minor of order 3 "):
        dg.linalg.cholesky(dg.stack([dg.eye(3), dg.diag(dg.tensor([1.0, 1.0, -1.0]))]))


@pytest.mark.parametrize("matrix, adjugate", [
    ([[1.0, 2.0], [2.0, 4.0]], [[4.0, -2.0], [-2.0, 1.0]]),  # rank 1 of 2: the adjugate is not zero
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], np.diag([0.0, 0.0, 1.0])),
    ([[0.0, 0.0], [0.0, 0.0]], np.zeros((2, 2))),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]]),
])
def test_det_derivatives_at_singular_matrix_are_the_adjugate(matrix, adjugate):
    a = dg.tensor(matrix, requires_grad=True)
    dg.linalg.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.transpose(adjugate), atol=1e-12)
    direction = np.arange(a.numel(), dtype=np.float64).reshape(a.shape) + 1
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(dg.linalg.det(fwAD.make_dual(dg.tensor(matrix), dg.tensor(direction)))).tangent
    np.testing.assert_allclose(tangent.item(), np.trace(np.asarray(adjugate) @ direction), atol=1e-12)


def test_det_gradient_of_a_batch_with_a_singular_complex_matrix_matches_finite_differences():
    rng = np.random.default_rng(5)
    m = rng.normal(size=(2, 3, 3)) + 1j * rng.normal(size=(2, 3, 3))
    m[0, :, 2] = 2 * m[0, :, 0]  # the first matrix is singular
    weights = np.array([0.3 - 1.0j, 2.0 + 0.5j])

    def loss(x):
        return np.sum(np.real(np.linalg.det(x) * weights))

    a = dg.tensor(m, requires_grad=True)
    (dg.linalg.det(a) * dg.tensor(weights)).real.sum().backward()
    eps, expected = 1e-6, np.zeros_like(m)
    for index in np.ndindex(m.shape):
        step = np.zeros(m.shape)
        step[index] = eps
        d_real = loss(m + step) - loss(m - step)
        d_imag = loss(m + 1j * step) - loss(m - 1j * step)
        expected[index] = (d_real + 1j * d_imag) / (2 * eps)
    np.testing.assert_allclose(a.grad.numpy(), expected, atol=1e-8)


@pytest.mark.parametrize("call, words", [
    (lambda: dg.linalg.inv(dg.ones(2, 3)), ["linalg.inv", "square", "2 by 3"]),
    (lambda: dg.linalg.det(dg.ones(3)), ["linalg.det", "at least 2 dimensions", "(3,)"]),
    (lambda: dg.linalg.eigh(dg.ones(3, 2)), ["linalg.eigh", "square", "3 by 2"]),
    (lambda: dg.linalg.svd(dg.ones(3)), ["svd", "at least 2 dimensions"]),
    (lambda: dg.linalg.lstsq(dg.ones(3, 2), dg.ones(4)), ["lstsq", "(3, 2)", "(4,)"]),
])
def test_shape_errors_name_the_shapes(call, words):
    with pytest.raises(LinAlgError) as info:
        call()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("call, error, words", [
    (lambda: dg.linalg.solve(dg.eye(3), dg.ones(2)), ValueError, ["linalg.solve", "AX = B (3x3 and 2x1)"]),
    (lambda: dg.linalg.solve(dg.ones(2, 3, 3), dg.ones(4, 3, 1)), RuntimeError, ["solve", "(2, 3, 3)",
                                                                                   "(4, 3, 1)"]),
    (lambda: dg.linalg.eigh(dg.eye(2), UPLO="X"), ValueError, ["UPLO", "'X'"]),
    (lambda: dg.linalg.qr(dg.eye(2), mode="raw"), ValueError, ["qr", "'raw'"]),
    (lambda: dg.linalg.norm(dg.ones(3), "fro"), ValueError, ["'fro'", "vectors"]),
    (lambda: dg.linalg.norm(dg.ones(2, 2), 3), ValueError, ["3", "matrices"]),
    (lambda: dg.linalg.norm(dg.ones(2, 2, 2), 2), ValueError, ["dimensions", "(2, 2, 2)"]),
    (lambda: dg.linalg.matrix_power(dg.eye(2), 1.5), TypeError, ["matrix_power", "integer"]),
    (lambda: dg.linalg.multi_dot([dg.eye(2)]), ValueError, ["multi_dot", "two"]),
    (lambda: dg.linalg.multi_dot([dg.eye(2), dg.ones(2, 2, 2), dg.eye(2)]), ValueError,
     ["multi_dot", "(2, 2, 2)"]),
    (lambda: dg.linalg.pinv(dg.eye(2), rcond=1e-3, rtol=1e-3), ValueError, ["rcond", "rtol"]),
])
def test_bad_arguments_raise_clear_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)


def test_qr_derivative_of_wide_matrix_is_not_implemented():
    a = dg.tensor(np.eye(2, 3), requires_grad=True)
    q, r = dg.linalg.qr(a)
    with pytest.raises(NotImplementedError, match=r"qr: derivatives .*shape \(2, 3\)"):
        r.sum().backward()
    assert a.grad is None


# -- torch's names: linalg.cross, logdet, kron, addmm, solve(left=False) ------------------------------
@pytest.mark.parametrize("call, shapes", [
    (lambda a, b: dg.linalg.cross(a, b), [(2, 3), (1, 3)]),
    (lambda a, b: dg.cross(a, b, dim=0), [(3, 2), (3, 1)]),
    (lambda a, b: dg.kron(a, b), [(2, 1, 2), (3, 2)]),
    (lambda i, a, b: dg.addmm(i, a, b, beta=0.5, alpha=-2.0), [(3,), (2, 4), (4, 3)]),
    (lambda a: dg.logdet(a @ a.mT + dg.eye(3)), [(2, 3, 3)]),
    (lambda a, b: dg.linalg.solve(a + 3 * dg.eye(3), b, left=False), [(2, 3, 3), (4, 3)]),
    (lambda a, b: dg.linalg.solve(a + 3 * dg.eye(3), b), [(2, 3, 3), (2, 3)]),
])
def test_torch_named_compositions_differentiate_twice_and_under_vmap(call, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1.0, 1.0, s) for s in shapes]
    check_first_order(call, arrays)
    check_second_order(call, arrays)
    stacked = rng.uniform(-1.0, 1.0, (2,) + shapes[0])
    check_vmap(lambda t: call(t, *[dg.tensor(a) for a in arrays[1:]]), stacked)


def test_det_gradient_under_vmap_with_a_singular_matrix_in_the_batch():
    stack = dg.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    grads = dg.vmap(dg.func.grad(dg.linalg.det))(stack)
    np.testing.assert_allclose(grads.numpy(), [[[4.0, -2.0], [-2.0, 1.0]], [[3.0, -1.0], [-1.0, 2.0]]], atol=1e-12)
