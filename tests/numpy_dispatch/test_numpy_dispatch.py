"""NumPy calls on Tensors (NEP 13 / NEP 18) are differentiated in reverse mode, forward mode and vmap.

Derivatives are checked against central differences in float64; vmap against a
loop over the batch; non-differentiable functions against NumPy on the data.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order, check_forward, check_vmap
from helpers import as_outputs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad import numpy_dispatch

RNG = np.random.default_rng(1)


def pos(*shape):
    """Values in [0.3, 2]: inside the domain of log, sqrt, ..."""
    return RNG.uniform(0.3, 2.0, shape)


def unit(*shape):
    """Values in [-0.8, 0.8]: inside the domain of asin, atanh, ..."""
    return RNG.uniform(-0.8, 0.8, shape)


def nonzero(*shape):
    """Values in [-2, -0.3] U [0.3, 2]: away from the kinks of abs, sign, where(x > 0)."""
    return RNG.uniform(0.3, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)


def check_all_modes(call, arrays):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    check_first_order(call, arrays)
    check_forward(call, arrays)
    check_vmap(call, arrays)


# -- the calls of the issue, in all three modes ------------------------------------------------------------
ISSUE_CALLS = {
    "sin": (lambda x: np.sin(x), [unit(2, 3)]),
    "sum_keepdims": (lambda x: np.sum(x, axis=0, keepdims=True), [unit(2, 3)]),
    "tensor_at_ndarray": (lambda x: x @ np.ones(3), [unit(2, 3)]),
    "ndarray_at_tensor": (lambda x: np.ones(2) @ x, [unit(2, 3)]),
    "einsum": (lambda a, b: np.einsum("ij,jk->ik", a, b), [unit(2, 3), unit(3, 4)]),
    "concatenate": (lambda a, b: np.concatenate([a, b, np.ones((1, 3))]), [unit(2, 3), unit(1, 3)]),
    "where": (lambda x: np.where(x > 0, x, 0.0), [nonzero(2, 3)]),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), [np.array([[-0.9, -0.2, 0.3], [0.7, 0.1, -0.6]])]),
    "mean": (lambda x: np.mean(x, axis=1), [unit(2, 3)]),
    "stack": (lambda a, b: np.stack([a, b], axis=1), [unit(2, 3), unit(2, 3)]),
    "linalg_norm": (lambda x: np.linalg.norm(x), [nonzero(2, 3)]),
    "linalg_norm_axis": (lambda x: np.linalg.norm(x, axis=1, keepdims=True), [nonzero(2, 3)]),
    "linalg_norm_matrix_1": (lambda x: np.linalg.norm(x, 1), [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "linalg_norm_matrix_inf": (lambda x: np.linalg.norm(x, np.inf), [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    "mixed_scalars_ndarrays": (lambda x: np.add(np.ones(3), x) * 2 - np.float64(1.0) / (x + 3.0),
                               [unit(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(ISSUE_CALLS))
def test_issue_calls_in_all_modes(name):
    call, arrays = ISSUE_CALLS[name]
    check_all_modes(call, arrays)


def test_results_are_tracked_tensors():
    x = dg.tensor(unit(2, 3), requires_grad=True)
    for call, _ in ISSUE_CALLS.values():
        if call.__code__.co_argcount == 1:
            out = call(x)
            assert isinstance(out, dg.Tensor) and out.requires_grad


def test_linalg_solve_routes_to_dualgrad_linalg():
    solve = getattr(getattr(dg, "linalg", None), "solve", None)
    if solve is None:
        pytest.skip("dualgrad.linalg.solve does not exist yet")
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    check_all_modes(lambda m, b: np.linalg.solve(m, b), [a, unit(2)])


def test_singular_matrix_raises_numpy_linalg_error():
    if getattr(getattr(dg, "linalg", None), "solve", None) is None:
        pytest.skip("dualgrad.linalg.solve does not exist yet")
    singular = dg.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(singular, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(singular)


# -- coverage of the array API standard's names in NumPy's namespace -----------------------------------
def _np(name):
    fn = getattr(np, name)
    return fn


ARRAY_API_DIFFERENTIABLE = {
    # elementwise
    "abs": (lambda x: _np("abs")(x), [nonzero(3)]),
    "acos": (lambda x: _np("acos")(x), [unit(3)]),
    "acosh": (lambda x: _np("acosh")(x + 1.5), [pos(3)]),
    "add": (lambda x, y: _np("add")(x, y), [unit(2, 3), unit(3)]),
    "asin": (lambda x: _np("asin")(x), [unit(3)]),
    "asinh": (lambda x: _np("asinh")(x), [unit(3)]),
    "atan": (lambda x: _np("atan")(x), [unit(3)]),
    "atan2": (lambda x, y: _np("atan2")(x, y), [pos(3), pos(3)]),
    "atanh": (lambda x: _np("atanh")(x), [unit(3)]),
    "clip": (lambda x: _np("clip")(x, min=-0.5), [np.array([-0.9, 0.2, 1.4])]),
    "conj": (lambda x: _np("conj")(x), [unit(3)]),
    "copysign": (lambda x, y: _np("copysign")(x, y), [nonzero(3), nonzero(3)]),
    "cos": (lambda x: _np("cos")(x), [unit(3)]),
    "cosh": (lambda x: _np("cosh")(x), [unit(3)]),
    "divide": (lambda x, y: _np("divide")(x, y), [unit(3), pos(3)]),
    "exp": (lambda x: _np("exp")(x), [unit(3)]),
    "expm1": (lambda x: _np("expm1")(x), [unit(3)]),
    "hypot": (lambda x, y: _np("hypot")(x, y), [pos(3), pos(3)]),
    "imag": (lambda x: _np("imag")(x * (1 + 2j)), [unit(3)]),
    "log": (lambda x: _np("log")(x), [pos(3)]),
    "log1p": (lambda x: _np("log1p")(x), [pos(3)]),
    "log2": (lambda x: _np("log2")(x), [pos(3)]),
    "log10": (lambda x: _np("log10")(x), [pos(3)]),
    "logaddexp": (lambda x, y: _np("logaddexp")(x, y), [unit(3), unit(3)]),
    "maximum": (lambda x, y: _np("maximum")(x, y), [np.array([0.1, 0.9]), np.array([0.5, 0.2])]),
    "minimum": (lambda x, y: _np("minimum")(x, y), [np.array([0.1, 0.9]), np.array([0.5, 0.2])]),
    "multiply": (lambda x, y: _np("multiply")(x, y), [unit(3), unit(2, 1)]),
    "negative": (lambda x: _np("negative")(x), [unit(3)]),
    "positive": (lambda x: _np("positive")(x), [unit(3)]),
    "pow": (lambda x, y: _np("pow")(x, y), [pos(3), unit(3)]),
    "real": (lambda x: _np("real")(x * (1 - 1j)), [unit(3)]),
    "reciprocal": (lambda x: _np("reciprocal")(x), [pos(3)]),
    "remainder": (lambda x, y: _np("remainder")(x, y), [np.array([0.3, 2.5]), np.array([1.1, 1.3])]),
    "sin": (lambda x: _np("sin")(x), [unit(3)]),
    "sinh": (lambda x: _np("sinh")(x), [unit(3)]),
    "square": (lambda x: _np("square")(x), [unit(3)]),
    "sqrt": (lambda x: _np("sqrt")(x), [pos(3)]),
    "subtract": (lambda x, y: _np("subtract")(x, y), [unit(3), unit(3)]),
    "tan": (lambda x: _np("tan")(x), [unit(3)]),
    "tanh": (lambda x: _np("tanh")(x), [unit(3)]),
    # statistical
    "cumulative_sum": (lambda x: _np("cumulative_sum")(x, axis=1, include_initial=True), [unit(2, 3)]),
    "cumulative_prod": (lambda x: _np("cumulative_prod")(x, axis=0), [pos(2, 3)]),
    "max": (lambda x: _np("max")(x, axis=1), [np.array([[0.1, 0.7, 0.3], [0.9, 0.2, 0.4]])]),
    "mean": (lambda x: _np("mean")(x, axis=(0, 1)), [unit(2, 3)]),
    "min": (lambda x: _np("min")(x, axis=0, keepdims=True), [np.array([[0.1, 0.7, 0.3], [0.9, 0.2, 0.4]])]),
    "prod": (lambda x: _np("prod")(x, axis=1), [pos(2, 3)]),
    "std": (lambda x: _np("std")(x, axis=1, ddof=1), [unit(2, 3)]),
    "sum": (lambda x: _np("sum")(x, axis=-1), [unit(2, 3)]),
    "var": (lambda x: _np("var")(x), [unit(2, 3)]),
    # manipulation
    "broadcast_arrays": (lambda x, y: _np("broadcast_arrays")(x, y), [unit(3), unit(2, 1)]),
    "broadcast_to": (lambda x: _np("broadcast_to")(x, (2, 3)), [unit(3)]),
    "concat": (lambda x, y: _np("concat")([x, y], axis=1), [unit(2, 1), unit(2, 3)]),
    "expand_dims": (lambda x: _np("expand_dims")(x, (0, -1)), [unit(2, 3)]),
    "flip": (lambda x: _np("flip")(x, axis=1), [unit(2, 3)]),
    "moveaxis": (lambda x: _np("moveaxis")(x, 0, -1), [unit(2, 3, 2)]),
    "permute_dims": (lambda x: _np("permute_dims")(x, (1, 0, 2)), [unit(2, 3, 2)]),
    "repeat": (lambda x: _np("repeat")(x, 2, axis=0), [unit(2, 3)]),
    "reshape": (lambda x: _np("reshape")(x, (3, 2)), [unit(2, 3)]),
    "roll": (lambda x: _np("roll")(x, 1, axis=1), [unit(2, 3)]),
    "squeeze": (lambda x: _np("squeeze")(x, axis=0), [unit(1, 3)]),
    "stack": (lambda x, y: _np("stack")([x, y], axis=-1), [unit(2, 3), unit(2, 3)]),
    "tile": (lambda x: _np("tile")(x, (2, 1)), [unit(2, 3)]),
    "unstack": (lambda x: _np("unstack")(x, axis=1), [unit(2, 3)]),
    # searching, sorting
    "where": (lambda x, y: _np("where")(x > y, x, y), [np.array([0.1, 0.8]), np.array([0.5, 0.2])]),
    "sort": (lambda x: _np("sort")(x, axis=1), [np.array([[0.3, -0.5, 0.9], [0.1, 0.7, -0.2]])]),
    # utility
    "diff": (lambda x: _np("diff")(x, n=2, axis=1, prepend=0.5), [unit(2, 4)]),
    # linear algebra
    "matmul": (lambda x, y: _np("matmul")(x, y), [unit(2, 3), unit(3, 2)]),
    "matrix_transpose": (lambda x: _np("matrix_transpose")(x), [unit(2, 2, 3)]),
    "tensordot": (lambda x, y: _np("tensordot")(x, y, axes=([1], [0])), [unit(2, 3), unit(3, 2)]),
    "vecdot": (lambda x, y: _np("vecdot")(x, y, axis=0), [unit(3, 2), unit(3, 2)]),
    "astype": (lambda x: _np("astype")(x, np.complex128).real * 2.0, [unit(3)]),
}

NUMPY_EXTRAS = {
    "einsum": (lambda x, y: np.einsum("ij,kj->ik", x, y), [unit(2, 3), unit(4, 3)]),
    "outer": (lambda x, y: np.outer(x, y), [unit(2), unit(3)]),
    "inner": (lambda x, y: np.inner(x, y), [unit(2, 3), unit(3)]),
    "dot": (lambda x, y: np.dot(x, y), [unit(2, 3), unit(3)]),
    "vdot": (lambda x, y: np.vdot(x, y), [unit(2, 3), unit(2, 3)]),
    "trace": (lambda x: np.trace(x), [unit(3, 3)]),
    "diagonal": (lambda x: np.diagonal(x, 1), [unit(3, 3)]),
    "diag": (lambda x: np.diag(x), [unit(3)]),
    "tril": (lambda x: np.tril(x, -1), [unit(3, 3)]),
    "triu": (lambda x: np.triu(x), [unit(3, 3)]),
    "take": (lambda x: np.take(x, [0, 2, 2], axis=1), [unit(2, 3)]),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.array([[1], [0]]), axis=1), [unit(2, 3)]),
    "cross": (lambda x, y: np.cross(x, y), [unit(2, 3), unit(3)]),
    "average": (lambda x: np.average(x, axis=1, weights=np.array([1.0, 2.0, 3.0])), [unit(2, 3)]),
    "cumsum": (lambda x: np.cumsum(x), [unit(2, 3)]),
    "cumprod": (lambda x: np.cumprod(x, axis=1), [pos(2, 3)]),
    "pad": (lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=0.5), [unit(2, 3)]),
    "split": (lambda x: tuple(np.split(x, [1], axis=1)), [unit(2, 3)]),
    "array_split": (lambda x: tuple(np.array_split(x, 2, axis=1)), [unit(2, 3)]),
    "meshgrid": (lambda x, y: np.meshgrid(x, y), [unit(2), unit(3)]),
    "atleast_2d": (lambda x: np.atleast_2d(x), [unit(3)]),
    "hstack": (lambda x, y: np.hstack([x, y]), [unit(2), unit(3)]),
    "vstack": (lambda x, y: np.vstack([x, y]), [unit(3), unit(2, 3)]),
    "ravel": (lambda x: np.ravel(x), [unit(2, 3)]),
    "transpose": (lambda x: np.transpose(x), [unit(2, 3)]),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 1), [unit(2, 3)]),
    "exp2": (lambda x: np.exp2(x), [unit(3)]),
    "cbrt": (lambda x: np.cbrt(x), [nonzero(3)]),
    "deg2rad": (lambda x: np.deg2rad(x), [unit(3)]),
    "rad2deg": (lambda x: np.rad2deg(x), [unit(3)]),
    "fmod": (lambda x, y: np.fmod(x, y), [np.array([-2.5, 0.3]), np.array([1.1, 1.3])]),
    "logaddexp2": (lambda x, y: np.logaddexp2(x, y), [unit(3), unit(3)]),
    "float_power": (lambda x: np.float_power(x, 2.5), [pos(3)]),
    "matvec": (lambda a, v: np.matvec(a, v), [unit(2, 3), unit(3)]),
    "vecmat": (lambda v, a: np.vecmat(v, a), [unit(2), unit(2, 3)]),
    "angle": (lambda x: np.angle(x * (1 + 1j) + 0.5, deg=True), [unit(3)]),
    "sort_flat": (lambda x: np.sort(x, axis=None), [np.array([[0.3, -0.5], [0.1, 0.7]])]),
    "linalg_vecdot": (lambda x, y: np.linalg.vecdot(x, y), [unit(2, 3), unit(2, 3)]),
    "linalg_trace": (lambda x: np.linalg.trace(x), [unit(2, 3, 3)]),
}


@pytest.mark.parametrize("name", sorted(ARRAY_API_DIFFERENTIABLE))
def test_array_api_function_is_differentiated(name):
    call, arrays = ARRAY_API_DIFFERENTIABLE[name]
    outs = as_outputs(call(*[dg.tensor(a, requires_grad=True) for a in arrays]))
    assert outs and all(o.requires_grad for o in outs), f"numpy.{name} did not return tracked Tensors"
    check_first_order(call, arrays)


@pytest.mark.parametrize("name", sorted(NUMPY_EXTRAS))
def test_numpy_function_is_differentiated(name):
    call, arrays = NUMPY_EXTRAS[name]
    outs = as_outputs(call(*[dg.tensor(a, requires_grad=True) for a in arrays]))
    assert outs and all(o.requires_grad for o in outs), f"numpy.{name} did not return tracked Tensors"
    check_first_order(call, arrays)


@pytest.mark.parametrize("name", ["cumulative_sum", "sort", "diff", "vecdot", "expand_dims", "unstack",
                                  "std"])
def test_array_api_function_in_forward_mode_and_vmap(name):
    call, arrays = ARRAY_API_DIFFERENTIABLE[name]
    check_forward(call, arrays)
    check_vmap(call, arrays)


@pytest.mark.parametrize("name", ["cross", "average", "pad", "meshgrid", "take", "trace", "float_power"])
def test_numpy_extra_in_forward_mode_and_vmap(name):
    call, arrays = NUMPY_EXTRAS[name]
    check_forward(call, arrays)
    check_vmap(call, arrays)


def test_primal_values_equal_numpy():
    for table in (ARRAY_API_DIFFERENTIABLE, NUMPY_EXTRAS):
        for name, (call, arrays) in table.items():
            got = call(*[dg.tensor(a) for a in arrays])
            expected = call(*arrays)
            got, expected = (got, expected) if isinstance(expected, (tuple, list)) else ([got], [expected])
            for g, e in zip(got, expected, strict=True):
                np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-12, err_msg=name)


# -- non-differentiable functions: plain results -------------------------------------------------------
X = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, -1.0]])
Y = np.array([[0.5, 1.0, -2.0], [0.0, 3.5, -1.0]])
NONDIFFERENTIABLE = {
    "argmax": lambda x, y: np.argmax(x, axis=1),
    "argmin": lambda x, y: np.argmin(x),
    "argsort": lambda x, y: np.argsort(x, axis=0),
    "nonzero": lambda x, y: np.nonzero(x),
    "count_nonzero": lambda x, y: np.count_nonzero(x, axis=0),
    "searchsorted": lambda x, y: np.searchsorted(np.sort(x[0]), y[0]),
    "unique_values": lambda x, y: np.unique_values(x),
    "unique_counts": lambda x, y: np.unique_counts(x),
    "all": lambda x, y: np.all(x > -2, axis=0),
    "any": lambda x, y: np.any(x > 2),
    "equal": lambda x, y: np.equal(x, y),
    "not_equal": lambda x, y: x != y,
    "less": lambda x, y: np.less(x, y),
    "less_equal": lambda x, y: np.less_equal(x, y),
    "greater": lambda x, y: np.greater(x, y),
    "greater_equal": lambda x, y: np.greater_equal(x, y),
    "isnan": lambda x, y: np.isnan(x / y),
    "isinf": lambda x, y: np.isinf(x / y),
    "isfinite": lambda x, y: np.isfinite(x),
    "signbit": lambda x, y: np.signbit(x),
    "logical_and": lambda x, y: np.logical_and(x, y),
    "logical_or": lambda x, y: np.logical_or(x, y),
    "logical_not": lambda x, y: np.logical_not(x),
    "logical_xor": lambda x, y: np.logical_xor(x, y),
    "isclose": lambda x, y: np.isclose(x, y),
    "allclose": lambda x, y: np.allclose(x, y),
    "array_equal": lambda x, y: np.array_equal(x, x),
    "shape": lambda x, y: np.shape(x),
    "ndim": lambda x, y: np.ndim(x),
    "size": lambda x, y: np.size(x, 1),
    "result_type": lambda x, y: np.result_type(x, 1.0),
    "iscomplexobj": lambda x, y: np.iscomplexobj(x),
}


# Rounding and sign: tracked results with a zero gradient (as torch's and JAX's).
ZERO_GRADIENT = {
    "floor": lambda x: np.floor(x * 1.5),
    "ceil": lambda x: np.ceil(x * 1.5),
    "trunc": lambda x: np.trunc(x * 1.5),
    "round": lambda x: np.round(x * 1.5),
    "sign": lambda x: np.sign(x),
    "floor_divide": lambda x: np.floor_divide(x, 0.7),
}


@pytest.mark.parametrize("name", sorted(ZERO_GRADIENT))
def test_rounding_functions_have_a_zero_gradient(name):
    x = dg.tensor(X, requires_grad=True)
    got = ZERO_GRADIENT[name](x)
    np.testing.assert_array_equal(got.detach().numpy(), ZERO_GRADIENT[name](X))
    assert got.requires_grad
    (g,) = dg.grad(got.sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros_like(X))


@pytest.mark.parametrize("name", sorted(NONDIFFERENTIABLE))
def test_nondifferentiable_function_gives_plain_results(name):
    call = NONDIFFERENTIABLE[name]
    got = call(dg.tensor(X, requires_grad=True), dg.tensor(Y, requires_grad=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = call(X, Y)
    got_items = got if isinstance(got, tuple) else (got,)
    expected_items = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got_items, expected_items, strict=True):
        if isinstance(e, (np.ndarray, np.generic)):  # 0-d results are 0-d Tensors, as in torch
            assert isinstance(g, dg.Tensor) and not g.requires_grad, f"numpy.{name}: {g!r}"
            np.testing.assert_array_equal(g.numpy(), e)
            assert g.dtype == e.dtype
        else:
            assert not isinstance(g, dg.Tensor) and g == e, f"numpy.{name}: {g!r} != {e!r}"


def test_numpy_style_control_flow_keeps_working():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    assert np.allclose(x, [1.0, 2.0]) is True
    assert np.any(np.isnan(x)) == False  # noqa: E712 - a 0-d bool Tensor, as a NumPy user writes it
    if np.all(x > 0) and np.array_equal(np.shape(x), (2,)):
        y = np.sum(x * x)
    assert y.requires_grad


def test_comparisons_run_under_vmap():
    xs = dg.tensor([[1.0, -2.0, 3.0], [0.0, 4.0, -1.0]])
    got = dg.vmap(lambda r: (np.argmax(r), np.argsort(r), np.greater(r, 0.5), np.floor(r / 2)))(xs)
    for member in range(2):
        row = xs.numpy()[member]
        expected = (np.argmax(row), np.argsort(row, kind="stable"), row > 0.5, np.floor(row / 2))
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g.numpy()[member], e)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(-5, 5, allow_subnormal=False)), st.data())
def test_sort_matches_numpy_and_its_vmap_a_loop(values, data):
    axis = data.draw(st.integers(-values.ndim, values.ndim - 1))
    x = dg.tensor(values)
    np.testing.assert_array_equal(np.sort(x, axis=axis).numpy(), np.sort(values, axis=axis))
    np.testing.assert_array_equal(np.argsort(x, axis=axis).numpy(),
                                  np.argsort(values, axis=axis, kind="stable"))
    if values.ndim > 1:
        inner = data.draw(st.integers(-values.ndim + 1, values.ndim - 2))
        batched = dg.vmap(lambda r: np.sort(r, axis=inner))(x)
        for k, member in enumerate(values):
            np.testing.assert_array_equal(batched.numpy()[k], np.sort(member, axis=inner))


def test_argsort_descending_is_stable():
    np.testing.assert_array_equal(dg.argsort(dg.tensor([1.0, 2.0, 1.0, 2.0]), descending=True).numpy(),
                                  [1, 3, 0, 2])


# -- ufunc keywords and methods ------------------------------------------------------------------------
def test_out_tensor_is_written_in_place_and_differentiable():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = dg.zeros(3)
    result = np.multiply(x, 2.0, out=out)
    assert result is out and out.requires_grad
    np.testing.assert_array_equal(out.detach().numpy(), [2.0, 4.0, 6.0])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_out_ndarray_receives_untracked_results_only():
    buffer = np.zeros(3)
    assert np.add(dg.tensor([1.0, 2.0, 3.0]), 1.0, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, [2.0, 3.0, 4.0])
    with pytest.raises(TypeError, match="out= is an ndarray but the result is tracked"):
        np.add(dg.tensor([1.0, 2.0, 3.0], requires_grad=True), 1.0, out=buffer)
    np.testing.assert_array_equal(buffer, [2.0, 3.0, 4.0])


def test_where_keyword_keeps_out_values_and_routes_gradients():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = dg.tensor([10.0, 20.0, 30.0])
    mask = np.array([True, False, True])
    np.exp(x, out=out, where=mask)
    np.testing.assert_allclose(out.detach().numpy(), [np.e, 20.0, np.e ** 3])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [np.e, 0.0, np.e ** 3])
    without_out = np.add(x, 1.0, where=mask)
    np.testing.assert_array_equal(without_out.detach().numpy(), [2.0, 0.0, 4.0])


def test_dtype_keyword_casts_the_inputs():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = np.multiply(x, 3.0, dtype=np.float32)
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_reduce_and_accumulate_methods():
    values = unit(2, 3)
    check_all_modes(lambda x: np.add.reduce(x, axis=1, keepdims=True), [values])
    check_all_modes(lambda x: np.multiply.reduce(x + 2.0, axis=None), [values])
    check_all_modes(lambda x: np.maximum.reduce(x, axis=0, initial=0.1), [values])
    mask = np.array([True, False, True])
    check_all_modes(lambda x: np.add.reduce(x, axis=0, where=mask, initial=1.0), [values])
    check_all_modes(lambda x: np.add.accumulate(x, axis=1), [values])
    check_all_modes(lambda x: np.multiply.accumulate(x + 2.0), [values])
    np.testing.assert_allclose(np.add.reduce(dg.tensor(values), axis=1).numpy(),
                               np.add.reduce(values, axis=1))
    np.testing.assert_allclose(np.minimum.reduce(dg.tensor(values), axis=None).numpy(), values.min())


def test_reduce_with_mask_needs_initial_without_identity():
    with pytest.raises(ValueError, match="does not have an identity"):
        np.maximum.reduce(dg.tensor([1.0, 2.0], requires_grad=True), where=np.array([True, False]))


def test_numpy_keyword_variants_of_functions():
    x = dg.tensor(unit(2, 3), requires_grad=True)
    out = dg.zeros(3)
    assert np.sum(x, axis=0, out=out) is out and out.requires_grad
    x, data = x.detach(), x.detach().numpy()
    mask = np.array([True, False, True])
    np.testing.assert_allclose(np.sum(x, initial=1.0, where=mask).numpy(),
                               np.sum(data, initial=1.0, where=mask))
    np.testing.assert_allclose(np.mean(x, where=mask).numpy(), np.mean(data, where=mask))
    np.testing.assert_allclose(np.max(x, initial=5.0).numpy(), 5.0)
    np.testing.assert_allclose(np.var(x, correction=1).numpy(), np.var(data, ddof=1))
    assert np.sum(x, dtype=np.float32).dtype == np.float32


# -- mixed arguments and promotion ---------------------------------------------------------------------
def test_mixed_tensor_ndarray_and_scalars():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for result in (np.add(np.ones(2), x), np.ones(2) + x, x * np.float64(2.0), np.maximum(x, 1.5),
                   np.concatenate([np.zeros(1), x]), np.stack([x, np.ones(2)]),
                   np.where([True, False], 0.0, x)):
        assert isinstance(result, dg.Tensor) and result.requires_grad


def test_python_scalars_do_not_upcast_float32():
    x = dg.tensor(np.ones(2, np.float32), requires_grad=True)
    for y in (np.multiply(x, 2.5), np.add(1, x), np.power(x, 2.0), np.clip(x, 0.0, 0.5), np.sum(x * 3.0)):
        assert y.dtype == np.float32
    assert (x + np.ones(2)).dtype == np.float64  # a float64 array does promote, as in NumPy


# -- routing to dualgrad.linalg / dualgrad.fft by name -----------------------------------------------------
def test_routed_functions_rename_numpy_keywords(monkeypatch):
    calls = {}

    def rfft(x, n=None, dim=-1, norm=None):
        calls["rfft"] = (n, dim, norm)
        return x * 1.0

    def vector_norm(x, ord=2, dim=None, keepdim=False):  # noqa: A002 - torch's name
        calls["vector_norm"] = (ord, dim, keepdim)
        return x.sum()

    class FakeModule:
        pass

    fft, linalg = FakeModule(), FakeModule()
    fft.rfft, linalg.vector_norm = rfft, vector_norm
    monkeypatch.setattr(numpy_dispatch, "_RESOLVED", {"fft.rfft": rfft, "linalg.vector_norm": vector_norm})
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    np.fft.rfft(x, n=4, axis=0, norm="ortho")
    np.linalg.vector_norm(x, axis=0, keepdims=True, ord=1)
    assert calls == {"rfft": (4, 0, "ortho"), "vector_norm": (1, 0, True)}


def test_missing_linalg_function_runs_numpy_for_untracked_inputs(monkeypatch):
    monkeypatch.setattr(numpy_dispatch, "_resolve", lambda name: None)
    a = dg.tensor([[2.0, 0.0], [0.0, 4.0]])
    result = np.linalg.inv(a)
    assert isinstance(result, dg.Tensor)
    np.testing.assert_allclose(result.numpy(), [[0.5, 0.0], [0.0, 0.25]])
    with pytest.raises(TypeError, match=r"dualgrad has no derivative rule for numpy\.linalg\.inv"):
        np.linalg.inv(dg.tensor([[2.0, 0.0], [0.0, 4.0]], requires_grad=True))


# -- errors --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda x: np.insert(x, 1, 3.0), "numpy.insert"),
    (lambda x: np.trim_zeros(x), "numpy.trim_zeros"),
    (lambda x: np.add.reduceat(x, [0]), "numpy.add.reduceat"),
    (lambda x: np.reshape(x, (2, 1), order="A"), "numpy.reshape with order='A'"),
    (lambda x: np.pad(x, 1, mode="mean"), "numpy.pad with mode='mean'"),
])
def test_function_without_rule_raises_for_tracked_tensors(call, name):
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=f"dualgrad has no derivative rule for {name}"):
        call(x)
    assert x.grad is None and x.requires_grad


def test_function_without_rule_raises_under_forward_mode_and_vmap():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
        with pytest.raises(TypeError, match="no derivative rule for numpy.insert"):
            np.insert(dual, 0, 1.0)
    with pytest.raises(TypeError, match="no derivative rule for numpy.insert"):
        dg.vmap(lambda x: np.insert(x, 0, 1.0))(dg.tensor([[1.0, 2.0], [3.0, 4.0]]))


def test_function_without_rule_runs_numpy_on_untracked_tensors():
    result = np.median(dg.tensor([[1.0, 2.0], [3.0, 5.0]]), axis=0)
    assert isinstance(result, dg.Tensor)
    np.testing.assert_array_equal(result.numpy(), [2.0, 3.5])


def test_asarray_returns_the_data_of_an_untracked_tensor():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    data = np.asarray(x.detach())
    assert type(data) is np.ndarray and np.shares_memory(data, x.detach().numpy())
    assert type(np.array(x.detach())) is np.ndarray
    with dg.no_grad():
        assert np.shares_memory(np.asarray(x), x.detach().numpy())


def test_asarray_of_a_tracked_tensor_raises():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for convert in (np.asarray, np.array):
        with pytest.raises(RuntimeError, match=r"requires grad \(shape \(2,\), dtype float64\).*detached"):
            convert(x)
