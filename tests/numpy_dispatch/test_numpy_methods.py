"""NumPy-style Tensor methods that NumPy user code calls (``a.ravel()``, ``a.copy()``,
``a.astype(...)``, ``a.sum(axis=..., keepdims=...)``, ``a.max(axis=...)``, ...): values
against NumPy on the same data, gradients against central differences, and the torch
forms (``dim=``) kept where the two libraries differ."""

from __future__ import annotations

import numpy as np
import pytest
from grad_checks import check_first_order
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg

RNG = np.random.default_rng(7)


@st.composite
def array_axis_keepdims(draw):
    """A float64 array (ties unlikely), an axis of it (or None, or a pair of axes) and keepdims."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3), unique=True))
    axes = list(range(-len(shape), len(shape)))
    axis = draw(st.one_of(st.none(), st.sampled_from(axes)))
    if len(shape) >= 2 and draw(st.booleans()):
        axis = (0, len(shape) - 1)
    return x, axis, draw(st.booleans())


# -- reductions with NumPy's keywords ---------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var", "max", "min"])
@given(case=array_axis_keepdims())
def test_reductions_with_numpys_keywords_match_numpy(name, case):
    x, axis, keepdims = case
    if axis is None and name in ("std", "var"):
        axis = -1  # (axis=None keeps torch's default correction of 1; see the next tests)
    got = getattr(dg.tensor(x), name)(axis=axis, keepdims=keepdims)
    assert isinstance(got, dg.Tensor)
    np.testing.assert_allclose(got.numpy(), getattr(x, name)(axis=axis, keepdims=keepdims),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var", "max", "min"])
def test_reductions_with_numpys_keywords_have_correct_gradients(name):
    x = RNG.standard_normal((3, 4))
    check_first_order(lambda t: getattr(t, name)(axis=1, keepdims=True), [x])
    check_first_order(lambda t: getattr(t, name)(axis=(0, 1)), [x])


def test_std_and_var_default_to_numpys_ddof_with_axis_and_torchs_correction_with_dim():
    x = RNG.standard_normal((3, 5))
    t = dg.tensor(x)
    np.testing.assert_allclose(t.var(axis=1).numpy(), x.var(axis=1))
    np.testing.assert_allclose(t.std(axis=0, ddof=1).numpy(), x.std(axis=0, ddof=1))
    np.testing.assert_allclose(t.var(dim=1).numpy(), x.var(axis=1, ddof=1))
    np.testing.assert_allclose(t.std(1).numpy(), x.std(axis=1, ddof=1))
    np.testing.assert_allclose(t.std().numpy(), x.std(ddof=1))


def test_max_and_min_keep_torchs_values_and_indices_for_dim():
    x = np.array([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    t = dg.tensor(x)
    for result in (t.max(1), t.max(dim=1)):
        np.testing.assert_array_equal(result.values.numpy(), [5.0, 4.0])
        np.testing.assert_array_equal(result.indices.numpy(), [1, 0])
    values, indices = t.min(0, keepdim=True)
    np.testing.assert_array_equal(values.numpy(), [[1.0, 0.0, 2.0]])
    np.testing.assert_array_equal(indices.numpy(), [[0, 1, 0]])
    np.testing.assert_array_equal(t.max(axis=1).numpy(), [5.0, 4.0])
    np.testing.assert_array_equal(t.min(axis=0, keepdims=True).numpy(), [[1.0, 0.0, 2.0]])


def test_max_with_axis_shares_the_gradient_of_ties_like_amax():
    x = dg.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], requires_grad=True)
    x.max(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])


def test_both_torch_and_numpy_spellings_at_once_raise():
    t = dg.ones(2, 3)
    with pytest.raises(TypeError, match="pass either 'dim' or 'axis', not both"):
        t.max(dim=0, axis=0)
    with pytest.raises(TypeError, match="pass either 'dim' or 'axis', not both"):
        t.sum(dim=0, axis=1)
    with pytest.raises(TypeError, match="var: pass only one of 'correction', 'unbiased' and 'ddof'"):
        t.var(axis=0, ddof=0, correction=1)


# -- copies, views and casts ----------------------------------------------------------------------
def test_ravel_is_a_row_major_view_when_possible():
    x = RNG.standard_normal((2, 3))
    t = dg.tensor(x.copy())
    flat = t.ravel()
    np.testing.assert_array_equal(flat.numpy(), x.ravel())
    assert np.shares_memory(flat.numpy(), t.numpy())
    transposed = t.T.ravel()
    np.testing.assert_array_equal(transposed.numpy(), x.T.ravel())
    np.testing.assert_array_equal(dg.ravel(dg.tensor(3.0)).numpy(), [3.0])
    np.testing.assert_array_equal(t.flatten().numpy(), x.flatten())
    check_first_order(lambda a: a.T.ravel() * dg.arange(6.0), [x])


def test_copy_is_independent_memory_in_the_graph():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    base = x * 1.0
    copied = base.copy()
    assert not np.shares_memory(copied.detach().numpy(), base.detach().numpy())
    copied.mul_(3.0)
    np.testing.assert_array_equal(base.detach().numpy(), [1.0, 2.0])
    (copied * base).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])  # d/dx 3 x^2


def test_conjugate_is_conj():
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    np.testing.assert_array_equal(dg.tensor(z).conjugate().numpy(), z.conjugate())
    w = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    t = dg.tensor(z, requires_grad=True)
    # L = Re(sum(w * conj(z))) = sum(Re(w) a + Im(w) b): z.grad = dL/da + 1j dL/db = w
    (dg.tensor(w) * t.conjugate()).real.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), w)


def test_astype_copies_like_numpy_and_is_differentiable():
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    base = x * 1.0
    same = base.astype(np.float64)
    same.add_(1.0)
    np.testing.assert_array_equal(base.detach().numpy(), [0.5, 1.5])
    assert base.astype("float64", copy=False) is base
    single = base.astype(np.float32)
    assert single.dtype == np.float32
    (single ** 2).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 3.0])


def test_dot_matches_numpy_with_correct_gradients():
    u, v = RNG.standard_normal(4), RNG.standard_normal(4)
    np.testing.assert_allclose(dg.tensor(u).dot(dg.tensor(v)).numpy(), u.dot(v))
    check_first_order(lambda a, b: a.dot(b), [u, v])


# -- NumPy user code, unchanged, on Tensors -------------------------------------------------------
def standardized_spread(a):
    """Code written for ndarrays: column standardization, then the largest value per row."""
    centred = a - a.mean(axis=0, keepdims=True)
    scaled = centred / a.std(axis=0, keepdims=True)
    return scaled.astype(a.dtype).max(axis=1).ravel().copy().sum()


def test_numpy_code_using_methods_runs_on_tensors_with_correct_gradients():
    x = RNG.standard_normal((5, 3))
    expected = standardized_spread(x)
    np.testing.assert_allclose(standardized_spread(dg.tensor(x)).numpy(), expected)
    check_first_order(standardized_spread, [x])
