"""The Tensor API (issue 2, item 2): storage, conversion, repr, dtypes, factories, operators."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg

FLOAT_DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]


def real_loss(t: dg.Tensor) -> dg.Tensor:
    """A real scalar from ``t`` (its real part for complex dtypes)."""
    total = t.sum()
    return total.real if t.is_complex() else total


# -- storage and conversion -----------------------------------------------------------------
def test_shape_dtype_ndim_size_and_transpose():
    t = dg.tensor(np.arange(6.0).reshape(2, 3))
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == np.float64
    assert t.size == 6 and t.size() == (2, 3) and t.size(0) == 2 and t.numel() == 6
    assert t.T.shape == (3, 2)
    np.testing.assert_array_equal(t.T.numpy(), np.arange(6.0).reshape(2, 3).T)


def test_item_numpy_tolist_len_and_iteration():
    t = dg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert dg.tensor([2.5]).item() == 2.5 and isinstance(dg.tensor(3).item(), int)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert isinstance(t.numpy(), np.ndarray)
    assert len(t) == 2
    rows = list(t)
    assert len(rows) == 2 and all(isinstance(r, dg.Tensor) for r in rows)
    assert rows[1].tolist() == [3.0, 4.0]


def test_numpy_shares_memory():
    a = np.zeros(3)
    t = dg.from_numpy(a)
    t.numpy()[0] = 5.0
    assert a[0] == 5.0


def test_item_of_many_elements_and_len_of_scalar_raise():
    with pytest.raises(RuntimeError, match="2 elements cannot be converted to Scalar"):
        dg.tensor([1.0, 2.0]).item()
    with pytest.raises(TypeError, match="0-d"):
        len(dg.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(dg.tensor(1.0))


def test_numpy_of_tensor_requiring_grad_raises():
    t = dg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\).numpy\(\)"):
        t.numpy()
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 1.0])


def test_numpy_of_tensor_requiring_grad_is_allowed_when_grad_mode_is_off():
    # torch checks ``requires_grad and grad mode``: under no_grad / inference_mode, and so
    # inside a custom Function's forward (the "NumpySort" pattern of torch's docs), it converts.
    t = dg.ones(2, requires_grad=True)
    with dg.no_grad():
        np.testing.assert_array_equal(t.numpy(), [1.0, 1.0])
    with dg.inference_mode():
        assert t.numpy() is t.detach().numpy()

    class Double(dg.autograd.Function):
        @staticmethod
        def forward(x):
            return dg.tensor(x.cpu().numpy() * 2, device=x.device)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    y = Double.apply(t)
    y.sum().backward()
    assert y.tolist() == [2.0, 2.0] and t.grad.tolist() == [2.0, 2.0]


# -- repr ----------------------------------------------------------------------------------
def test_repr_like_torch():
    x = dg.ones(2, 2, requires_grad=True)
    assert repr(x + 2) == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    assert repr(x) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    assert repr(dg.tensor([0.5, 1.0])) == "tensor([0.5000, 1.0000])"
    assert repr(dg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(dg.tensor([1.0], dtype="float32")) == "tensor([1.], dtype=float32)"
    assert repr(dg.tensor(2.0)) == "tensor(2.)"
    assert repr((x * 2).sum()) == "tensor(8., grad_fn=<SumBackward0>)"


# -- dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_floating_and_complex_dtypes_can_require_grad(dtype):
    t = dg.ones(3, dtype=dtype, requires_grad=True)
    assert t.dtype == np.dtype(dtype) and t.requires_grad
    real_loss(t * t).backward()
    assert t.grad.dtype == np.dtype(dtype)
    np.testing.assert_allclose(t.grad.numpy(), 2 * np.ones(3))


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "uint8"])
def test_integer_and_bool_tensors_cannot_require_grad(dtype):
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        dg.zeros(2, dtype=dtype, requires_grad=True)
    t = dg.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        t.requires_grad_()
    assert not t.requires_grad


def test_dtype_aliases():
    assert dg.float32 == np.float32 and dg.double == np.float64 and dg.cfloat == np.complex64


# -- factories -----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda **kw: dg.zeros(2, 3, **kw), lambda **kw: dg.ones((2, 3), **kw),
    lambda **kw: dg.empty(2, 3, **kw), lambda **kw: dg.full((2, 3), 1.5, **kw),
    lambda **kw: dg.rand(2, 3, **kw), lambda **kw: dg.randn(2, 3, **kw),
    lambda **kw: dg.eye(2, 3, **kw), lambda **kw: dg.tensor(np.ones((2, 3)), **kw),
    lambda **kw: dg.zeros_like(dg.ones(2, 3), **kw), lambda **kw: dg.ones_like(dg.ones(2, 3), **kw),
    lambda **kw: dg.empty_like(dg.ones(2, 3), **kw), lambda **kw: dg.full_like(dg.ones(2, 3), 7.0, **kw),
    lambda **kw: dg.rand_like(dg.ones(2, 3), **kw), lambda **kw: dg.randn_like(dg.ones(2, 3), **kw),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_factories_take_dtype_and_requires_grad(make, dtype):
    t = make(dtype=dtype, requires_grad=True)
    assert t.shape == (2, 3) and t.dtype == np.dtype(dtype) and t.requires_grad and t.is_leaf
    assert make().dtype == np.float64 and not make().requires_grad


def test_factory_values():
    np.testing.assert_array_equal(dg.arange(1, 7, 2).numpy(), [1, 3, 5])
    assert dg.arange(3.0).dtype == np.float64
    np.testing.assert_allclose(dg.linspace(0, 1, 5).numpy(), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_array_equal(dg.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(dg.full((2,), 3).numpy(), [3, 3])
    np.testing.assert_array_equal(dg.zeros_like(dg.arange(3)).numpy(), [0, 0, 0])
    assert dg.zeros_like(dg.arange(3)).dtype == np.int64
    r = dg.rand(1000).numpy()
    assert r.min() >= 0 and r.max() < 1


def test_tensor_copies_and_as_tensor_shares():
    a = np.ones(2)
    t, s = dg.tensor(a), dg.as_tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 1.0] and s.tolist() == [9.0, 1.0]
    assert dg.tensor([dg.tensor(1.0), dg.tensor(2.0)]).tolist() == [1.0, 2.0]


def test_manual_seed_makes_random_factories_reproducible():
    dg.manual_seed(123)
    first = (dg.rand(3).numpy(), dg.randn(2, 2).numpy(), dg.randn_like(dg.ones(2)).numpy())
    dg.manual_seed(123)
    second = (dg.rand(3).numpy(), dg.randn(2, 2).numpy(), dg.randn_like(dg.ones(2)).numpy())
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    dg.manual_seed(124)
    assert not np.array_equal(dg.rand(3).numpy(), first[0])


# -- operators -----------------------------------------------------------------------------
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.matmul]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operators_match_numpy(op):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.5, 2, (3, 3)), rng.uniform(0.5, 2, (3, 3))
    np.testing.assert_allclose(op(dg.tensor(a), dg.tensor(b)).numpy(), op(a, b))
    np.testing.assert_allclose(op(dg.tensor(a), b).numpy(), op(a, b))
    if op is not operator.matmul:
        np.testing.assert_allclose(op(dg.tensor(a), 1.5).numpy(), op(a, 1.5))
        np.testing.assert_allclose(op(1.5, dg.tensor(a)).numpy(), op(1.5, a))


def test_unary_operators():
    a = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_array_equal((-dg.tensor(a)).numpy(), -a)
    np.testing.assert_array_equal(abs(dg.tensor(a)).numpy(), np.abs(a))


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
                                operator.ne], ids=lambda op: op.__name__)
def test_comparisons_give_untracked_bool_tensors(op):
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    result = op(x, 2.0)
    assert isinstance(result, dg.Tensor) and result.dtype == np.bool_
    assert not result.requires_grad and result.grad_fn is None
    np.testing.assert_array_equal(result.numpy(), op(np.array([1.0, 2.0, 3.0]), 2.0))


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3))
def test_broadcasting_follows_numpy(shapes):
    a, b = np.ones(shapes.input_shapes[0]), np.full(shapes.input_shapes[1], 2.0)
    out = dg.tensor(a, requires_grad=True) * dg.tensor(b)
    assert out.shape == shapes.result_shape


def test_broadcast_gradient_is_summed_back_to_each_shape():
    x = dg.ones(3, 1, requires_grad=True)
    y = dg.ones(4, requires_grad=True)
    (x * y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 1), 8.0))
    np.testing.assert_array_equal(y.grad.numpy(), np.full(4, 6.0))


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64"])
@given(scalar=st.floats(-10, 10, allow_nan=False) | st.integers(-10, 10))
def test_python_scalars_do_not_upcast(dtype, scalar):
    x = dg.ones(2, dtype=dtype, requires_grad=True)
    for out in (x + scalar, scalar * x, x - scalar, x / 2.0, x ** 2, 2.0 ** x):
        assert out.dtype == np.dtype(dtype)
    real_loss(x * scalar).backward()
    assert x.grad.dtype == np.dtype(dtype)


def test_mixed_tensor_dtypes_promote_like_numpy():
    out = dg.ones(2, dtype="float32") + dg.ones(2, dtype="float64")
    assert out.dtype == np.float64
    assert (dg.arange(3) * 1.5).dtype == np.float64


# -- torch parity of factories ---------------------------------------------------------------
@pytest.mark.parametrize("factory", [dg.zeros, dg.ones, dg.empty, dg.rand, dg.randn])
def test_factories_take_the_size_as_ints_a_tuple_or_the_size_keyword(factory):
    assert factory(2, 3).shape == factory((2, 3)).shape == factory([2, 3]).shape == factory(size=(2, 3)).shape == (2, 3)
    assert factory(size=4).shape == (4,)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        factory(2, -1)


def test_rand_and_randn_refuse_integer_dtypes():
    for call in (lambda: dg.rand(2, dtype=dg.int64), lambda: dg.randn_like(dg.tensor([1, 2]))):
        with pytest.raises(NotImplementedError, match="int64"):
            call()


def test_arange_keywords_and_errors_as_torch():
    assert dg.arange(end=3).tolist() == [0, 1, 2] and dg.arange(start=1, end=3).tolist() == [1, 2]
    assert dg.arange(dg.tensor(3)).tolist() == [0, 1, 2] and dg.arange(0, 1, 0.5).dtype == np.float64
    with pytest.raises(RuntimeError, match="^step must be nonzero"):
        dg.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        dg.arange(5, 1)


def test_randint_and_randint_like():
    dg.manual_seed(0)
    a = dg.randint(0, 10, (50,))
    dg.manual_seed(0)
    assert dg.equal(a, dg.randint(10, (50,))) and a.dtype == np.int64
    assert 0 <= a.min().item() and a.max().item() < 10
    assert dg.randint(3, 5, size=(2, 2)).shape == (2, 2) and dg.randint(2, (3,), dtype=dg.float64).dtype == np.float64
    like = dg.randint_like(dg.zeros(4, dtype=dg.float32), 2, 4)
    assert like.shape == (4,) and like.dtype == np.float32 and set(like.tolist()) <= {2.0, 3.0}
    with pytest.raises(RuntimeError, match="from=5 >= to=0"):
        dg.randint(5, 0, (2,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        dg.randint(0, 5, 2)


def test_tensor_from_a_tensor_warns_and_strings_are_refused():
    with pytest.warns(UserWarning, match=r"To copy construct from a tensor.*sourceTensor.detach\(\).clone\(\)"):
        copy = dg.tensor(dg.tensor([1.0, 2.0]))
    assert copy.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        dg.tensor("a")


def test_from_numpy_refuses_other_types_and_as_tensor_shares_memory():
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        dg.from_numpy([1, 2])
    a = np.zeros(3, dtype=np.float32)
    t = dg.as_tensor(a)
    t[0] = 5.0
    assert a[0] == 5.0 and t.dtype == np.float32


# -- dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, method, dtype", [
    ("bool", "bool", "bool"), ("uint8", "byte", "uint8"), ("int8", "char", "int8"), ("int16", "short", "int16"),
    ("short", "short", "int16"), ("int", "int", "int32"), ("long", "long", "int64"), ("half", "half", "float16"),
    ("float", "float", "float32"), ("double", "double", "float64"), ("cfloat", "cfloat", "complex64"),
    ("cdouble", "cdouble", "complex128"),
])
def test_torch_dtype_names_and_cast_methods(name, method, dtype):
    assert getattr(dg, name) == np.dtype(dtype)
    assert dg.zeros(2, dtype=getattr(dg, name)).dtype == getattr(dg, name)
    x = dg.tensor([1.7, -1.7, 0.0])
    assert getattr(x, method)().dtype == np.dtype(dtype) and x.to(getattr(dg, name)).dtype == np.dtype(dtype)


def test_type_to_and_cpu():
    x = dg.tensor([1.5])
    assert x.type() == "torch.DoubleTensor" and dg.tensor([1]).type() == "torch.LongTensor"
    assert x.type(dg.int32).tolist() == [1] and x.type(dg.float64) is x
    assert x.to(dg.tensor([1], dtype=dg.int32)).dtype == np.int32
    assert x.to(dg.float64) is x and x.to("cpu") is x and x.cpu() is x
    y = x.to(dg.float64, copy=True)
    assert y is not x and y.tolist() == [1.5]
    assert x.long().tolist() == [1] and dg.tensor([1.7, -1.7]).int().tolist() == [1, -1]


def test_finfo_and_iinfo():
    assert dg.finfo(dg.float32).eps == np.finfo(np.float32).eps and dg.finfo().eps == np.finfo(np.float64).eps
    assert dg.iinfo(dg.int32).max == 2**31 - 1


# -- metadata and Python protocols --------------------------------------------------------------
def test_size_dim_out_of_range_and_ndimension():
    x = dg.zeros(2, 3)
    assert x.size(-1) == 3 and x.ndimension() == 2
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.size(2)


def test_python_number_conversions_follow_torch():
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(dg.zeros(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(dg.zeros(0))
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            convert(dg.zeros(2))
    assert float(dg.tensor([[2.5]])) == 2.5 and int(dg.tensor([2.7])) == 2
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
        assert float(dg.tensor(1.5, requires_grad=True)) == 1.5
    assert [10, 20, 30][dg.tensor([1])] == 20 and [10, 20][dg.tensor(True)] == 20
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][dg.tensor(1.0)]


def test_format_of_0d_tensors_is_that_of_their_value():
    assert f"{dg.tensor(2.5):.2f}" == "2.50" and f"{dg.tensor(3):3d}" == "  3"
    assert f"{dg.tensor([1.0, 2.0], requires_grad=True)[0]:.1f}" == "1.0"
    assert format(dg.tensor([1.5])) == "tensor([1.5000])"
    with pytest.raises(TypeError):
        format(dg.tensor([1.5]), ".2f")


def test_contains_reversed_and_comparison_with_none():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert 2.0 in x and 7 not in x and dg.tensor([3.0, 4.0]) in x
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in x  # noqa: B015
    assert reversed(x).tolist() == [[3.0, 4.0], [1.0, 2.0]] and reversed(dg.tensor(1.0)).item() == 1.0
    assert (x == None) is False and (x != None) is True  # noqa: E711


def test_grad_assignment_errors_name_sizes_and_dtypes_as_torch():
    x = dg.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="but got grad of type list"):
        x.grad = [1.0, 2.0]
    with pytest.raises(RuntimeError, match=r"assign a gradient of size '\[3\]' to a tensor of size '\[2\]'"):
        x.grad = dg.ones(3)
