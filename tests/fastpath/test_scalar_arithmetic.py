"""Arithmetic on one value (0-d tensors of a real floating dtype) runs NumPy's scalar operators
rather than a ufunc call (``Op.scalar_impl``, several times faster). These tests check that the
two paths cannot be told apart: the same bits, dtype, warnings and errors, and a fresh result."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg

OPS = {"add": (operator.add, np.add), "sub": (operator.sub, np.subtract),
       "mul": (operator.mul, np.multiply), "div": (operator.truediv, np.true_divide)}
DTYPES = [np.float16, np.float32, np.float64, np.longdouble]
VALUES = [0.0, -0.0, 1.5, -2.25, 1e-300, 1e300, 65504.0, np.inf, -np.inf, np.nan]


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bits (for long doubles, whose padding bytes are undefined: equal values, NaNs and signs)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype == np.longdouble:
        return bool(np.array_equal(got, want, equal_nan=True) and np.signbit(got) == np.signbit(want))
    return got.tobytes() == want.tobytes()


def _tensor(value: float, dtype: type) -> dg.Tensor:
    with np.errstate(over="ignore"):
        return dg.tensor(np.array(value, dtype))


def _reflected(name: str, ufunc: np.ufunc, number: float, array: np.ndarray) -> np.ndarray:
    """``number <op> array`` as dualgrad computes it: a number divided by a tensor is torch's
    ``reciprocal(tensor) * number`` (two roundings, as torch's)."""
    if name == "div":
        return np.multiply(np.true_divide(1, array), number)
    return ufunc(number, array)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_zero_dim_arithmetic_has_the_ufuncs_bits(name, dtype):
    python_op, ufunc = OPS[name]
    with np.errstate(all="ignore"):
        for a in VALUES:
            x = _tensor(a, dtype)
            for b in VALUES + [3, -7, 0]:
                want = ufunc(x.numpy()[None], b)[0]
                assert _same_bits(python_op(x, b)._data, want), (name, a, b)
                want = _reflected(name, ufunc, b, x.numpy()[None])[0]
                assert _same_bits(python_op(b, x)._data, want), (name, b, a)
                if isinstance(b, float):
                    y = _tensor(b, dtype)
                    assert _same_bits(python_op(x, y)._data, ufunc(x.numpy()[None], y.numpy()[None])[0])


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True),
       st.sampled_from(list(OPS)), st.sampled_from([np.float32, np.float64]))
def test_zero_dim_arithmetic_matches_one_element_arrays(a, b, name, dtype):
    python_op, _ = OPS[name]
    with np.errstate(all="ignore"):
        zero_dim = python_op(_tensor(a, dtype), b)._data
        one_element = python_op(dg.tensor(np.array([a], dtype)), b)._data
    assert _same_bits(zero_dim, one_element.reshape(()))


def test_result_is_a_fresh_writable_zero_dim_array():
    x = dg.tensor(2.0)
    y = x * 3.0
    assert type(y._data) is np.ndarray and y.shape == () and y._data.flags.writeable
    y.add_(1.0)
    assert (x.item(), y.item()) == (2.0, 7.0)


def test_zero_dim_gradient_products_match_the_array_path():
    """A backward through 0-d products takes the scalar path too (``fastpath.unseen_product``)."""
    def chain(x):
        for _ in range(5):
            x = dg.sin(x) * 1.01 + 0.1
        return x

    x0, x1 = dg.tensor(0.3, requires_grad=True), dg.tensor([0.3], requires_grad=True)
    (g0,), (g1,) = dg.grad(chain(x0), x0), dg.grad(chain(x1).sum(), x1)
    assert _same_bits(g0._data, g1._data.reshape(()))


def test_float32_stays_float32_and_integers_promote():
    assert (dg.tensor(1.5, dtype=dg.float32) * 1e10).dtype == dg.float32
    assert (dg.tensor(3) / 2).dtype == dg.get_default_dtype()  # integer true division: the default float
    assert (dg.tensor(3) * 2.5).item() == 7.5


def test_overflow_warns_and_errstate_raises_as_for_arrays():
    big = dg.tensor(1e300)
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert (big * 1e10).item() == np.inf
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        big * 1e10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            assert (dg.tensor(1.0) / 0.0).item() == np.inf
