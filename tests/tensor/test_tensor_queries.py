"""torch's top-level helpers and Tensor metadata methods (values and errors observed with torch 2.x),
and ``set_default_dtype``."""

import numpy as np
import pytest

import dualgrad as dg


@pytest.fixture
def float32_default():
    dg.set_default_dtype(dg.float32)
    yield
    dg.set_default_dtype(dg.float64)


def test_closeness_and_equality():
    a, b = dg.tensor([1.0, 2.0]), dg.tensor([1.0, 2.0000001])
    assert dg.allclose(a, b) is True and a.allclose(b) is True
    assert dg.isclose(a, b).tolist() == [True, True] and dg.isclose(a, b).dtype == np.bool_
    assert dg.isclose(dg.tensor([1, 2]), dg.tensor([1, 3])).tolist() == [True, False]
    assert dg.isclose(a, dg.tensor(1.0)).tolist() == [True, False]
    nan = dg.tensor([float("nan")])
    assert dg.isclose(nan, nan).tolist() == [False] and dg.isclose(nan, nan, equal_nan=True).tolist() == [True]
    one, near = dg.tensor([1.0]), dg.tensor([1.1])
    assert not dg.allclose(one, near) and dg.allclose(one, near, atol=0.2)
    assert dg.equal(a, dg.tensor([1, 2])) and a.equal(a) and dg.equal(a, a.float())
    assert not dg.equal(a, dg.tensor([1.0])) and not dg.equal(a, b)


def test_closeness_errors():
    a = dg.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="allclose.*'other'.*must be Tensor, not float"):
        dg.allclose(a, 1.0)
    with pytest.raises(TypeError, match="equal.*must be Tensor, not list"):
        dg.equal(a, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="did not match"):
        dg.isclose(a, a.float())
    with pytest.raises(RuntimeError, match="did not match"):
        dg.isclose(a, dg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="broadcast"):
        dg.isclose(a, dg.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        dg.isclose(a, a, rtol=-1)


def test_predicates():
    assert dg.is_tensor(dg.zeros(1)) and not dg.is_tensor(1.0) and not dg.is_tensor(np.zeros(1))
    assert dg.numel(dg.zeros(2, 3)) == 6
    assert dg.is_floating_point(dg.tensor([1.0])) and not dg.is_floating_point(dg.tensor([1]))
    assert dg.is_complex(dg.tensor([1j])) and not dg.is_complex(dg.tensor([1.0]))
    assert dg.is_nonzero(dg.tensor(3)) is True and dg.is_nonzero(dg.tensor([0.0])) is False
    for fn in (dg.numel, dg.is_floating_point, dg.is_complex, dg.is_nonzero):
        with pytest.raises(TypeError, match=f"{fn.__name__}.*must be Tensor"):
            fn(1)
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        dg.is_nonzero(dg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        dg.tensor([]).is_nonzero()


def test_layout_methods():
    x, y = dg.tensor([1.0, 2.0]), dg.zeros(3, 4)
    assert (x.element_size(), x.nelement(), x.stride(), x.stride(-1)) == (8, 2, (1,), 1)
    assert dg.zeros(1, dtype="float32").element_size() == 4
    assert y.is_contiguous() and not y.T.is_contiguous()
    assert (y.stride(), y.T.stride(), y[:, ::2].stride(), dg.tensor(3.0).stride()) == ((4, 1), (1, 4), (4, 2), ())
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        y.stride(2)


def test_new_factories_take_the_tensors_dtype():
    x = dg.tensor([1.0, 2.0], dtype="float32")
    assert x.new_zeros(2, 3).shape == (2, 3) and x.new_zeros((2, 3)).dtype == np.float32
    assert x.new_ones([2]).tolist() == [1.0, 1.0] and x.new_ones(2, dtype="int64").dtype == np.int64
    assert x.new_full((2,), 3).tolist() == [3.0, 3.0] and x.new_full((2,), 3).dtype == np.float32
    assert x.new_empty(2).shape == (2,) and x.new_empty(2).dtype == np.float32
    data = np.array([1, 2])
    made = x.new_tensor(data, requires_grad=True)
    assert made.dtype == np.float32 and made.requires_grad and made.is_leaf
    data[0] = 5
    assert made.tolist() == [1.0, 2.0]  # a copy
    assert x.new_zeros(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="new_full.*'size' .*must be tuple of ints, not int"):
        x.new_full(2, 3)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        x.new_zeros(2, dtype="int64", requires_grad=True)


def test_default_dtype_is_float64():
    assert dg.get_default_dtype() == np.float64
    assert dg.tensor([1.5]).dtype == np.float64 and dg.zeros(1).dtype == np.float64


def test_set_default_dtype_changes_factories_and_python_numbers(float32_default):
    assert dg.get_default_dtype() == np.float32
    f32 = [dg.tensor([1.0]), dg.tensor(1.5), dg.as_tensor([1.0]), dg.full((1,), 2.0), dg.arange(3.0),
           dg.linspace(0, 1, 3), dg.zeros(1), dg.ones(1), dg.empty(1), dg.eye(2), dg.rand(2), dg.randn(2)]
    assert [t.dtype for t in f32] == [np.float32] * len(f32)
    assert dg.tensor(1j).dtype == np.complex64 and dg.randn(2, dtype="complex64").dtype == np.complex64
    # integers, arrays and explicit dtypes are not affected
    assert dg.tensor([1, 2]).dtype == np.int64 and dg.arange(3).dtype == np.int64 and dg.full((1,), 2).dtype == np.int64
    assert dg.tensor(np.array([1.0])).dtype == np.float64 and dg.as_tensor(np.array([1.0])).dtype == np.float64
    assert dg.tensor([1.0], dtype="float64").dtype == np.float64
    assert repr(dg.tensor([1.0])) == "tensor([1.])"
    assert repr(dg.tensor([1.0], dtype="float64")) == "tensor([1.], dtype=float64)"


def test_set_default_dtype_accepts_only_floating_dtypes():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        dg.set_default_dtype(dg.int64)
    assert dg.get_default_dtype() == np.float64
