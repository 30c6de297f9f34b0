"""The Tensor class and the factories against torch 2.13 (default dtype float64): the divergences a
differential audit found, pinned.

Values, dtypes, error types and key words of messages are torch's (literal: the tests do not import torch).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad as dg

MASK = dg.tensor([True, False])
NOT_DOUBLE = "value cannot be converted to type double without overflow"


def _same(t: dg.Tensor, values: list, dtype: str) -> None:
    assert t.tolist() == values and t.dtype == np.dtype(dtype)


# -- Python numbers of a complex tensor --------------------------------------------------------
@pytest.mark.parametrize("convert, ctype", [(float, "double"), (int, "int64_t")])
def test_float_and_int_of_a_complex_value_raise(convert, ctype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {ctype} without overflow"):
        convert(dg.tensor(1 + 2j))
    assert convert(dg.tensor(2.5 + 0j)) == convert(2.5)  # no imaginary part: its real part, as torch


def test_int_of_a_tensor_that_requires_grad_does_not_warn():
    x = dg.tensor(1.5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert int(x) == 1
    for convert in (float, complex):  # these warn, as torch's
        with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
            convert(x)


def test_iteration_unbinds():
    x = dg.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    rows = list(x)
    assert [r.grad_fn.name() for r in rows] == ["UnbindBackward0"] * 2 and [r.tolist() for r in rows] == x.tolist()
    (rows[0] * 2 + rows[1]).sum().backward()
    assert x.grad.tolist() == [[2., 2.], [1., 1.]]
    assert list(dg.zeros(0, 2)) == []


def test_to_takes_non_blocking_and_copy_positionally():
    x = dg.tensor([1.5])
    assert x.to(dg.float64, False, True) is not x and x.to(dg.float64, False, False) is x
    converted = x.to("cpu", dg.float32, False, True)
    assert converted.tolist() == [1.5] and converted.dtype == np.float32


# -- x[index] = value, fill_ ------------------------------------------------------------------
@pytest.mark.parametrize("value, name", [(None, "NoneType"), ("a", "str"), (object(), "object"), ({1: 2}, "dict")])
def test_assigning_a_value_of_no_number_raises(value, name):
    x = dg.zeros(3)
    with pytest.raises(TypeError, match=f"can't assign a {name} to a torch.DoubleTensor"):
        x[0] = value
    with pytest.raises(TypeError, match="can't assign a NoneType to a torch.LongTensor"):
        dg.zeros(2, dtype=dg.int64)[dg.tensor([True, False])] = None
    assert x.tolist() == [0., 0., 0.] and x._version == 0  # (None used to write NaN)


@pytest.mark.parametrize("dtype, value, ctype", [("float64", 1j, "double"), ("float32", 1 + 2j, "float"),
                                                 ("int64", 1j, "int64_t"), ("int8", 300, "int8_t"),
                                                 ("int32", 2 ** 40, "int"), ("uint8", 256, "uint8_t"),
                                                 ("uint8", -256, "uint8_t")])
def test_writing_a_number_the_dtype_cannot_hold_raises(dtype, value, ctype):
    x = dg.zeros(2, dtype=dtype)
    message = f"value cannot be converted to type {ctype} without overflow"
    with pytest.raises(RuntimeError, match=message):
        x[0] = value
    with pytest.raises(RuntimeError, match=message):
        x.fill_(value)
    assert x.tolist() == [0, 0]


def test_numbers_that_fit_are_written_as_torch():
    x = dg.zeros(3, dtype=dg.int64)
    x[0], x[1], x[2] = 2.7, True, 1 + 0j
    _same(x, [2, 1, 1], "int64")
    _same(dg.zeros(2, dtype=dg.bool).fill_(2.5), [True, True], "bool")
    _same(dg.zeros(2, dtype=dg.complex128).fill_(1j), [1j, 1j], "complex128")


def test_fill_of_no_number_raises():
    x = dg.zeros(2)
    with pytest.raises(TypeError, match=r"fill_\(\) received an invalid combination of arguments - got \(NoneType\)"):
        x.fill_(None)
    assert x.tolist() == [0., 0.]  # (was NaN)


# -- masked_fill ---------------------------------------------------------------------------------
def test_masked_fill_keeps_the_dtype_of_the_tensor():
    _same(dg.tensor([1, 2]).masked_fill(MASK, 2.7), [2, 2], "int64")
    _same(dg.masked_fill(dg.tensor([1, 2]), MASK, dg.tensor(2.5)), [2, 2], "int64")
    _same(dg.tensor([1., 2.], dtype=dg.float32).masked_fill(MASK, dg.tensor(5.)), [5., 2.], "float32")
    x = dg.tensor([1, 2])
    x.masked_fill_(MASK, 2.7)
    _same(x, [2, 2], "int64")


@pytest.mark.parametrize("mask, value, error, words", [
    (dg.tensor([1, 0]), 0., RuntimeError, "masked_fill_ only supports boolean masks, but got mask with dtype"),
    (MASK, dg.tensor([5., 6.]), RuntimeError,
     r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)"),
    (MASK, 1j, RuntimeError, NOT_DOUBLE),
    (MASK, None, TypeError, r"masked_fill\(\) received an invalid combination of arguments"),
])
@pytest.mark.parametrize("in_place", [False, True])
def test_masked_fill_errors(mask, value, error, words, in_place):
    x = dg.tensor([1., 2.])
    with pytest.raises(error, match=words):
        x.masked_fill_(mask, value) if in_place else x.masked_fill(mask, value)
    assert x.tolist() == [1., 2.]


@pytest.mark.parametrize("in_place", [False, True])
def test_masked_fill_is_recorded_as_torchs_node_with_its_gradients(in_place):
    x = dg.tensor([1., 2.], requires_grad=True)
    v = dg.tensor(3., requires_grad=True)
    y = x.clone().masked_fill_(MASK, v) if in_place else x.masked_fill(MASK, v)
    # torch 2.13: MaskedFillBackward1 for a tensor value (MaskedFillBackward0 for a number)
    assert y.grad_fn.name() == "MaskedFillBackward1" and y.tolist() == [3., 2.]
    (y * dg.tensor([5., 7.])).sum().backward()
    assert x.grad.tolist() == [0., 7.] and v.grad.item() == 5.
    assert dg.gradcheck(lambda a, b: a.masked_fill(MASK, b), (x.detach().requires_grad_(), v.detach().requires_grad_()))


# -- new_* ---------------------------------------------------------------------------------------
def test_new_factories_take_size_as_a_keyword():
    x = dg.zeros(1, dtype=dg.float32)
    assert x.new_zeros(size=(2,)).shape == (2,) and x.new_ones(size=[2, 3]).shape == (2, 3)
    assert x.new_empty(size=[3]).shape == (3,) and x.new_empty(size=[3]).dtype == np.float32


@pytest.mark.parametrize("method", ["new_zeros", "new_ones", "new_empty"])
def test_new_factories_without_size_raise(method):
    with pytest.raises(TypeError, match=f'{method}\\(\\) missing 1 required positional arguments: "size"'):
        getattr(dg.zeros(2), method)()


def test_new_full_checks_its_fill_value():
    _same(dg.zeros(2, dtype=dg.int64).new_full((2,), 2.7), [2, 2], "int64")
    with pytest.raises(RuntimeError, match=NOT_DOUBLE):
        dg.zeros(2).new_full((2,), 1j)
    with pytest.raises(TypeError, match="new_full\\(\\): argument 'fill_value' \\(position 2\\) must be Number, not "
                                        "NoneType"):
        dg.zeros(2).new_full((2,), None)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        dg.zeros(2).new_full((-1,), 0.)


def test_new_tensor_of_a_tensor_warns():
    with pytest.warns(UserWarning, match=r"To copy construct from a tensor, it is recommended to use "
                                         r"sourceTensor.detach\(\).clone\(\).*tensor.new_tensor\(sourceTensor\)"):
        made = dg.zeros(2).new_tensor(dg.tensor([1, 2]))
    _same(made, [1., 2.], "float64")


def test_type_takes_torchs_type_names():
    x = dg.tensor([1.5])
    _same(x.type("torch.IntTensor"), [1], "int32")
    _same(x.type("torch.BoolTensor"), [True], "bool")
    assert x.type(x.type()) is x


# -- in-place casts --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, write, names", [
    ("int64", lambda x: x.add_(1.5), "Double can't be cast to the desired output type Long"),
    ("float32", lambda x: x.add_(1j), "ComplexFloat can't be cast to the desired output type Float"),
    ("bool", lambda x: x.add_(1), "Long can't be cast to the desired output type Bool"),
])
def test_in_place_cast_errors_name_torchs_dtypes(dtype, write, names):
    with pytest.raises(RuntimeError, match=f"result type {names}"):
        write(dg.zeros(2, dtype=dtype))


# -- operators -------------------------------------------------------------------------------------
def test_integers_to_a_tensor_of_negative_powers_give_torchs_values():
    base = dg.tensor([2, -1, 1, 0, -1, 3], dtype=dg.int32)
    _same(base ** dg.tensor([-1, -2, -3, -1, -3, 2], dtype=dg.int32), [0, 1, 1, 0, -1, 9], "int32")
    _same(dg.tensor([[2], [-1]]) ** dg.tensor([-1, 2, -3]), [[0, 4, 0], [-1, 1, -1]], "int64")
    _same(dg.tensor([2, 3]) ** dg.tensor(-1), [0, 0], "int64")
    _same(2 ** dg.tensor([-1, 3]), [0, 8], "int64")
    _same(dg.pow(2, dg.tensor([-1])), [0], "int64")
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        dg.tensor([2, 3]) ** -1  # a number exponent: torch's error


@pytest.mark.parametrize("op, kernel", [(lambda x, y: x & y, "bitwise_and"), (lambda x, y: x | y, "bitwise_or"),
                                        (lambda x, y: x ^ y, "bitwise_xor")])
def test_bitwise_ops_on_floating_tensors_raise_not_implemented(op, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}_cpu" not implemented for \'Double\''):
        op(dg.tensor([3.]), 1)
    with pytest.raises(NotImplementedError, match=f'"{kernel}_cpu" not implemented for \'Double\''):
        op(dg.tensor([3]), 1.5)
    _same(op(dg.tensor([True, False]), dg.tensor([True, True])), op(np.array([True, False]), True).tolist(), "bool")


# -- tensor() --------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, values, dtype", [
    ([dg.tensor(1., dtype=dg.float32), 2], [1., 2.], "float32"),
    ([dg.tensor(1, dtype=dg.int32), dg.tensor(2, dtype=dg.int32)], [1, 2], "int32"),
    ([dg.tensor(1, dtype=dg.int32), 2.5], [1., 2.5], "float64"),
    ([dg.tensor(1., dtype=dg.float32), 2.5], [1., 2.5], "float64"),
    ([[dg.tensor(True), 2]], [[1, 2]], "int64"),
    ([dg.tensor(1., dtype=dg.float32), 1j], [1, 1j], "complex128"),
])
def test_tensor_of_a_list_holding_tensors_promotes_as_torch(data, values, dtype):
    _same(dg.tensor(data), values, dtype)


@pytest.mark.parametrize("data, error, words", [
    ([[1, 2], [3]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[[1], [2]], [[1], [2, 3]]], ValueError, r"expected sequence of length 1 at dim 2 \(got 2\)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
    ({1: 2}, RuntimeError, "Could not infer dtype of dict"),
    (object(), RuntimeError, "Could not infer dtype of object"),
    (2 ** 63, ValueError, "Overflow when unpacking long long"),
    ([2 ** 64], ValueError, "Overflow when unpacking long long"),
    ("a", TypeError, "new\\(\\): invalid data type 'str'"),
])
def test_tensor_errors(data, error, words):
    with pytest.raises(error, match=words):
        dg.tensor(data)


@pytest.mark.parametrize("data, dtype", [([300], "int8"), ([2 ** 40], "int32"), ([float("nan")], "int64"),
                                         ([float("inf")], "int32"), ([1e30], "int64"), ([70000], "int16")])
def test_tensor_of_numbers_an_integer_dtype_cannot_hold_raises(data, dtype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype} without overflow"):
        dg.tensor(data, dtype=dtype)


# -- factories -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fill, values, dtype", [
    (np.float32(1.5), [1.5, 1.5], "float64"), (dg.tensor(3, dtype=dg.int32), [3, 3], "int64"),
    (np.int32(3), [3, 3], "int64"), (True, [True, True], "bool"), (1j, [1j, 1j], "complex128"),
])
def test_full_infers_the_dtype_of_its_number(fill, values, dtype):
    _same(dg.full((2,), fill), values, dtype)


def test_full_errors():
    with pytest.raises(TypeError, match="full\\(\\): argument 'fill_value' \\(position 2\\) must be Number, not "
                                        "NoneType"):
        dg.full((2,), None)
    with pytest.raises(RuntimeError, match=NOT_DOUBLE):
        dg.full((2,), 1j, dtype=dg.float64)
    with pytest.raises(RuntimeError, match=NOT_DOUBLE):
        dg.full_like(dg.zeros(2), 1j)
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1: \\[-1\\]"):
        dg.full((-1,), 2)
    _same(dg.full_like(dg.zeros(2, dtype=dg.int64), 2.7), [2, 2], "int64")


@pytest.mark.parametrize("args, values", [
    ((0, 10, 4), [0, 3, 6, 10]), ((-1, 1, 4), [-1, 0, 0, 1]), ((10, 0, 7), [10, 8, 6, 5, 3, 1, 0]),
    ((0, 100, 7), [0, 16, 33, 50, 66, 83, 100]), ((3, -3, 4), [3, 1, -1, -3]),
])
def test_linspace_to_an_integer_dtype_truncates(args, values):
    _same(dg.linspace(*args, dtype=dg.int64), values, "int64")


def test_linspace_and_logspace_of_complex_end_points_are_complex():
    _same(dg.linspace(0, 1 + 1j, 3), [0j, 0.5 + 0.5j, 1 + 1j], "complex128")
    _same(dg.linspace(0, 1 + 1j, 3, dtype=dg.complex64), [0j, 0.5 + 0.5j, 1 + 1j], "complex64")
    _same(dg.linspace(0j, 1, 3), [0j, 0.5 + 0j, 1 + 0j], "complex128")
    np.testing.assert_allclose(dg.logspace(0, 1 + 1j, 3).numpy(),
                               [1, 1.2880 + 2.8881j, -6.6820 + 7.4398j], atol=1e-4)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        dg.logspace(0, 1, -1)


@pytest.mark.parametrize("end", [float("inf"), float("nan")])
def test_arange_to_a_non_finite_end_raises(end):
    with pytest.raises(RuntimeError, match="unsupported range: 0 -> "):
        dg.arange(end)


@pytest.mark.parametrize("args, dtype, values", [
    ((0, 5, 1.5), "int64", [0, 1, 2, 3, 4]), ((-2.5, 2, 1), "int64", [-2, -1, 0, 1]),
    ((0.5, 3.7, 1), "int64", [0, 1, 2]), ((0.5, 3.7, 1), "int32", [0, 1, 2, 3]), ((0, 5, 1.5), "int32", [0, 1, 2, 3]),
    ((2.5, 0, -1), "int64", [2, 1]), ((0, -5, -1.5), "int64", [0, -1, -2, -3, -4]),
    ((0, 10, 3), "uint8", [0, 3, 6, 9]), ((2 ** 60, 2 ** 60 + 3), None, [2 ** 60, 2 ** 60 + 1, 2 ** 60 + 2]),
    ((0, 1, 0.1), "float32", [0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645,
                              0.5, 0.6000000238418579, 0.699999988079071, 0.800000011920929, 0.8999999761581421]),
    ((np.float32(1.5),), None, [0., 1.]), ((0, 10.5, 2.5), "float16", [0., 2.5, 5., 7.5, 10.]),
])
def test_arange_values_as_torch(args, dtype, values):
    result = dg.arange(*args, dtype=dtype)
    expected_dtype = dtype or ("int64" if isinstance(args[0], int) else "float64")
    assert result.tolist() == values and result.dtype == np.dtype(expected_dtype)


@pytest.mark.parametrize("dtype, name", [("bool", "Bool"), ("complex128", "ComplexDouble")])
def test_arange_of_bools_or_complex_numbers_is_not_implemented(dtype, name):
    with pytest.raises(NotImplementedError, match=f'"arange_cpu" not implemented for \'{name}\''):
        dg.arange(3, dtype=dtype)
    with pytest.raises(RuntimeError, match=NOT_DOUBLE):
        dg.arange(1j)


@pytest.mark.parametrize("args, words", [((-1,), "n must be greater or equal to 0, got -1"),
                                         ((2, -1), "m must be greater or equal to 0, got -1")])
def test_eye_of_a_negative_size_raises(args, words):
    with pytest.raises(RuntimeError, match=words):
        dg.eye(*args)


def test_randint_takes_high_with_size_as_a_keyword():
    dg.manual_seed(0)
    drawn = dg.randint(5, size=(3,))
    assert drawn.shape == (3,) and drawn.dtype == np.int64 and all(0 <= v < 5 for v in drawn.tolist())


def test_from_numpy_refuses_arrays_of_no_number():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.str_. The only supported types are"):
        dg.from_numpy(np.array(["a"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dg.from_numpy(np.array([1, 2], dtype=np.uint16)).dtype == np.uint16
