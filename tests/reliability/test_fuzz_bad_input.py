"""Bad input found by a differential fuzz against torch 2.13: torch's exception types and key words,
and nothing changed by a failed call.

Each case pins what torch 2.13 raises for the same call (the type literally, the key words of the
message with ``match``); the comments quote torch where dualgrad's wording differs.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg


def leaf(*shape: int) -> dg.Tensor:
    return dg.tensor(np.arange(float(np.prod(shape))).reshape(shape), requires_grad=True)


# -- dims ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x: x.sum((0, 0)),
    lambda x: x.sum(dim=[1, -1]),
    lambda x: x.mean((0, -2)),
    lambda x: x.amax((1, 1)),
    lambda x: x.std((0, 0)),
    lambda x: x.logsumexp((0, 0)),
    lambda x: dg.count_nonzero(x, (0, 0)),
    lambda x: x.flip((0, -2)),
    lambda x: x.squeeze((1, 1)),
])
def test_a_dim_named_twice_is_torchs_runtime_error(call):
    # torch 2.13: RuntimeError: dim 0 appears multiple times in the list of dims
    with pytest.raises(RuntimeError, match=r"dim \d appears multiple times in the list of dims"):
        call(leaf(3, 4))


def test_a_dim_named_twice_on_a_0d_tensor():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        dg.tensor(2.0).sum((0, -1))


@pytest.mark.parametrize(("dim", "words"), [
    ({}, "must be tuple of ints, not dict"),  # dualgrad summed over no axis: the input came back
    ("ab", "must be tuple of ints, not str"),
    ((0.5,), "must be tuple of ints, but found element of type float at pos 0"),  # was int(0.5) = 0
])
def test_dims_that_are_not_ints_are_a_type_error(dim, words):
    with pytest.raises(TypeError, match=words):
        leaf(3, 4).sum(dim)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "nansum", "nanmean", "std", "var",
                                  "count_nonzero"])
@pytest.mark.parametrize("empty", [[], ()])
def test_an_empty_dim_reduces_every_axis_as_in_torch(name, empty):
    x = dg.tensor(np.arange(12.0).reshape(3, 4))
    # torch 2.13: sum 66., mean 5.5, amax 11., amin 0., std 3.6056, var 13., count_nonzero 11
    expected = {"sum": 66.0, "mean": 5.5, "amax": 11.0, "amin": 0.0, "nansum": 66.0, "nanmean": 5.5,
                "std": 3.605551275463989, "var": 13.0, "count_nonzero": 11.0}[name]
    result = getattr(dg, name)(x, empty)
    assert result.shape == ()
    assert float(result) == pytest.approx(expected, rel=1e-12)


def test_an_empty_dim_keeps_every_axis_with_keepdim():
    assert dg.tensor(np.ones((3, 4))).sum(dim=[], keepdim=True).shape == (1, 1)  # torch 2.13: [1, 1]


def test_all_and_any_with_an_empty_dim_reduce_nothing_as_in_torch():
    x = dg.tensor([[1.0, 0.0]])
    assert dg.all(x, ()).shape == (1, 2)
    assert dg.any(x, []).shape == (1, 2)


def test_numpys_empty_axis_still_reduces_nothing():
    x = dg.tensor(np.ones((3, 4)))
    assert dg.sum(x, axis=()).shape == (3, 4)
    assert np.sum(x, axis=()).shape == (3, 4)


# -- int arguments ---------------------------------------------------------------------------------------
def test_rot90_k_must_be_an_int_and_a_tensor_k_is_left_unchanged():
    x = leaf(2, 2)
    k = dg.tensor([[1.0, 2.0], [3.0, 4.0]])
    # torch 2.13: TypeError: rot90(): argument 'k' (position 2) must be int, not Tensor
    # (dualgrad ran ``k %= 4``: an in-place ``remainder_`` on the caller's tensor)
    with pytest.raises(TypeError, match=r"rot90\(\): argument 'k' \(position 2\) must be int, not Tensor"):
        dg.rot90(x, k)
    assert k.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert k._version == 0


@pytest.mark.parametrize(("k", "name"), [(1.5, "float"), (True, "bool")])
def test_rot90_k_float_or_bool_is_a_type_error(k, name):
    with pytest.raises(TypeError, match=f"must be int, not {name}"):
        dg.rot90(leaf(2, 2), k)


def test_rot90_takes_a_one_element_integer_tensor_as_k():
    x = dg.tensor([[0.0, 1.0], [2.0, 3.0]])
    assert dg.rot90(x, dg.tensor(1)).tolist() == dg.rot90(x, 1).tolist() == [[1.0, 3.0], [0.0, 2.0]]


def test_argmax_dim_must_be_an_int():
    # torch 2.13: TypeError: argmax(): argument 'dim' (position 2) must be int, not float
    with pytest.raises(TypeError, match=r"argmax\(\): argument 'dim' \(position 2\) must be int, not float"):
        leaf(3, 4).argmax(1.5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_of_an_empty_tensor_is_torchs_index_error(name):
    # torch 2.13: IndexError: argmax(): Expected reduction dim to be specified for input.numel() == 0.
    with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim to be specified for input.numel"):
        getattr(dg.zeros(0), name)()
    with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim 0 to have non-zero size"):
        getattr(dg.zeros(0, 3), name)(0)
    assert getattr(dg.zeros(0, 3), name)(1).shape == (0,)


# -- shapes ----------------------------------------------------------------------------------------------
def test_reshape_refuses_negative_sizes_other_than_minus_one():
    # torch 2.13: RuntimeError: invalid shape dimension -2 at index 0 of shape [-2] (NumPy read -2 as -1)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape \[-2\]"):
        leaf(3, 4).reshape(-2)


@pytest.mark.parametrize(("shape", "words"), [
    ((2.5,), "found element of type float at pos 0"),  # was int(2.5)
    (("a",), "found element of type str at pos 0"),  # was NumPy's "invalid literal for int()"
    ((2, 6.0), "found element of type float at pos 1"),
])
def test_reshape_sizes_must_be_ints(shape, words):
    with pytest.raises(TypeError, match=r"reshape\(\): argument 'shape' must be tuple of ints, but " + words):
        leaf(3, 4).reshape(*shape)


def test_permute_and_repeat_name_a_non_int():
    with pytest.raises(TypeError, match="permute.*found element of type float at pos 0"):
        leaf(3, 4).permute(1.5, 0)
    with pytest.raises(TypeError, match="repeat.*found element of type str at pos 0"):
        leaf(3, 4).repeat("a")


def test_view_of_memory_that_needs_a_copy_is_torchs_error():
    x = dg.tensor(np.arange(12.0).reshape(3, 4))
    # torch 2.13: RuntimeError: view size is not compatible with input tensor's size and stride ...
    # (dualgrad returned a copy, so writes through the "view" were lost)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        x.t().view(12)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        x[:, :2].view(6)
    strided = x[:, ::2].view(6)  # expressible with strides: a view, as in torch
    strided[0] = 100.0
    assert x[0, 0].item() == 100.0


# -- joins -----------------------------------------------------------------------------------------------
def test_cat_of_nothing_is_torchs_value_error():
    with pytest.raises(ValueError, match=r"torch.cat\(\): expected a non-empty list of Tensors"):
        dg.cat([])


@pytest.mark.parametrize("join", [dg.cat, dg.stack])
@pytest.mark.parametrize(("bad", "name"), [(None, "NoneType"), ("a", "str")])
def test_joins_name_an_element_that_is_not_a_tensor(join, bad, name):
    # torch 2.13: TypeError: expected Tensor as element 1 in argument 0, but got NoneType
    with pytest.raises(TypeError, match=f"expected Tensor as element 1 in argument 0, but got {name}"):
        join([leaf(3, 4), bad])


# -- non-numeric operands --------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: dg.digamma(None), lambda: dg.lgamma(None), lambda: dg.erf(None), lambda: dg.erfc("a"),
    lambda: dg.erfinv({}), lambda: dg.special.entr(None), lambda: dg.special.i0e(None),
    lambda: dg.special.gammainc(dg.ones(3), None), lambda: dg.special.zeta(dg.ones(3), None),
])
def test_special_functions_refuse_none_and_strings(call):
    # torch 2.13: TypeError: digamma(): argument 'input' (position 1) must be Tensor, not NoneType
    # (dualgrad returned NaN: NumPy made an object array of None and cast it to float)
    with pytest.raises(TypeError, match="must be Tensor or a number, not (NoneType|str|dict)"):
        call()


@pytest.mark.parametrize("call", [
    lambda x: x + "abc", lambda x: dg.add(x, {}), lambda x: dg.maximum(x, "a"), lambda x: dg.clamp(x, "a"),
    lambda x: dg.eq(x, "a"), lambda x: dg.mul(x, {1}),
])
def test_string_dict_and_set_operands_are_a_type_error_naming_the_op(call):
    # torch 2.13: TypeError: add(): argument 'other' (position 2) must be Tensor, not str
    # (dualgrad let NumPy's UFuncTypeError through, or compared elementwise to an object array)
    with pytest.raises(TypeError, match=r"\w+\(\): expected a Tensor or a number as an operand, not (str|dict|set)"):
        call(leaf(3))


@pytest.mark.parametrize("call", [
    lambda x: dg.dot(x, None), lambda x: dg.linalg.det(None), lambda x: dg.fft.fft(None),
    lambda x: dg.diagflat("abc"), lambda x: dg.outer(x, "ab"),
])
def test_shape_linalg_and_fft_operands_refuse_none_and_strings(call):
    # torch 2.13: TypeError: dot(): argument 'tensor' (position 2) must be Tensor, not NoneType
    # (dualgrad's dot gave a tensor of NaNs, diagflat a tensor of dtype <U3)
    with pytest.raises(TypeError, match="expected a Tensor, an array or a number, not (NoneType|str)"):
        call(leaf(3))


@pytest.mark.parametrize(("data", "error", "words"), [
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ({}, RuntimeError, "Could not infer dtype of dict"),
    ("abc", TypeError, "new\\(\\): invalid data type 'str'"),
    (np.array([None]), TypeError, "can't convert np.ndarray of type numpy.object_"),
])
def test_as_tensor_refuses_what_tensor_refuses(data, error, words):
    with pytest.raises(error, match=words):  # torch 2.13's types and words (dualgrad made object tensors)
        dg.as_tensor(data)


def test_tensor_constructor_and_new_tensor_refuse_none_and_strings():
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got NoneType\)"):
        dg.Tensor(None)  # was an empty tensor
    with pytest.raises(TypeError, match=r"new\(\): invalid data type 'str'"):
        dg.Tensor("abc")  # was a tensor of dtype <U3
    with pytest.raises(TypeError):  # torch 2.13: TypeError: must be real number, not NoneType
        dg.ones(2).new_tensor(None)  # was tensor(nan)
    assert dg.Tensor().shape == (0,)


@pytest.mark.parametrize("factory", [dg.zeros_like, dg.ones_like, dg.rand_like])
def test_like_factories_refuse_none_and_strings(factory):
    # torch 2.13: TypeError: zeros_like(): argument 'input' (position 1) must be Tensor, not NoneType
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor, not NoneType"):
        factory(None)


def test_copy_of_none_is_a_type_error_and_leaves_the_tensor_unchanged():
    x = dg.ones(3)
    # torch 2.13: TypeError: copy_(): argument 'other' (position 1) must be Tensor, not NoneType
    # (dualgrad filled the tensor with NaN)
    with pytest.raises(TypeError, match=r"copy_\(\): argument 'other' \(position 1\) must be Tensor, not NoneType"):
        x.copy_(None)
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert x._version == 0


# -- scatter ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x, i: x.scatter(0, i, 1.0),
    lambda x, i: x.clone().scatter_(0, i, 1.0),
    lambda x, i: x.scatter_add(0, i, dg.ones(1, 1)),
    lambda x, i: x.scatter_reduce(0, i, dg.ones(1, 1), "sum"),
])
@pytest.mark.parametrize("index", [5, -1])
def test_scatter_index_out_of_bounds_is_torchs_runtime_error(call, index):
    # torch 2.13: RuntimeError: index 5 is out of bounds for dimension 0 with size 3
    # (dualgrad let NumPy's ValueError "invalid entry in coordinates array" through)
    with pytest.raises(RuntimeError, match=f"index {index} is out of bounds for dimension 0 with size 3"):
        call(dg.zeros(3, 4), dg.tensor([[index]]))


# -- bools -----------------------------------------------------------------------------------------------
def test_sign_of_bools_is_the_bools():
    b = dg.tensor([True, False])
    for fn in (dg.sign, dg.sgn):
        result = fn(b)  # torch 2.13: tensor([ True, False]) (NumPy has no bool sign)
        assert result.dtype == dg.bool and result.tolist() == [True, False]


def test_sigmoid_of_bools_is_floating():
    result = dg.special.expit(dg.tensor([True, False]))  # torch 2.13: tensor([0.7311, 0.5000])
    assert result.dtype == dg.get_default_dtype()
    np.testing.assert_allclose(result.tolist(), [0.7310585786300049, 0.5], rtol=1e-12)


# -- empty tensors ---------------------------------------------------------------------------------------
def test_sort_topk_and_mode_of_an_empty_stack_give_empty_results():
    # torch 2.13: empty results; dualgrad read element 0 of an empty index ("index 0 is out of bounds")
    e = dg.zeros(0, 3, requires_grad=True)
    values, indices = e.sort()
    assert values.shape == indices.shape == (0, 3) and indices.dtype == np.int64
    assert e.topk(0).values.shape == (0, 0)
    assert e.mode().values.shape == e.mode().indices.shape == (0,)
    values.sum().backward()
    assert e.grad.shape == (0, 3)


@pytest.mark.parametrize("call", [lambda e: e.mode(0), lambda e: e.kthvalue(1, 0)])
def test_mode_and_kthvalue_along_an_empty_dim_are_torchs_index_error(call):
    # torch 2.13: IndexError: mode(): Expected reduction dim 0 to have non-zero size.
    with pytest.raises(IndexError, match=r"\(\): Expected reduction dim 0 to have non-zero size"):
        call(dg.zeros(0, 3))


def test_median_of_an_empty_tensor_is_nan():
    x = dg.zeros(0, requires_grad=True)
    m = dg.median(x)  # torch 2.13: tensor(nan) (dualgrad: NumPy's IndexError)
    assert np.isnan(m.item())
    m.backward()
    assert x.grad.shape == (0,)


def test_unique_consecutive_of_empty_and_0d_tensors():
    # torch 2.13: tensor([]), a (0, 3) tensor, tensor([1.]) (dualgrad: NumPy's reshape errors)
    assert dg.unique_consecutive(dg.zeros(0, 3)).shape == (0,)
    assert dg.unique_consecutive(dg.zeros(0, 3), dim=0).shape == (0, 3)
    assert dg.unique_consecutive(dg.tensor(1.0)).tolist() == [1.0]


def test_in_place_shape_changes_take_keyword_dims():
    # torch 2.13 takes x.squeeze_(dim=0); dualgrad raised "unexpected keyword argument 'dim'"
    x = dg.zeros(1, 3)
    assert x.squeeze_(dim=0).shape == (3,)
    assert x.unsqueeze_(dim=0).shape == (1, 3)
    assert x.transpose_(dim0=0, dim1=1).shape == (3, 1)


def test_comparisons_and_logic_with_none_are_a_type_error_and_change_nothing():
    x = dg.ones(3)
    # torch 2.13: TypeError: eq() received an invalid combination of arguments - got (Tensor, NoneType)
    # (dualgrad compared with None elementwise: all False, and x.eq_(None) wrote zeros into x)
    for call in (lambda: dg.eq(x, None), lambda: x.ne(None), lambda: x.eq_(None), lambda: x.logical_and(None),
                 lambda: dg.logical_or(x, None)):
        with pytest.raises(TypeError, match=r"\(\): argument 'other' \(position 2\) must be Tensor, not NoneType"):
            call()
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version == 0
    assert (x == None) is False  # noqa: E711 - Python's identity comparison, as torch's


@pytest.mark.parametrize("bad", [None, "abc", {}])
def test_clone_of_none_or_a_string_is_a_type_error(bad):
    # torch 2.13: TypeError: clone(): argument 'input' (position 1) must be Tensor, not NoneType
    with pytest.raises(TypeError, match="expected a Tensor, an array or a number, not"):
        dg.clone(bad)  # was a tensor of dtype object or <U3


@pytest.mark.parametrize("fn", [dg.cov, dg.corrcoef])
def test_an_int_beyond_numpys_is_an_overflow_error_as_in_tensor(fn):
    """(It became an object array, and ``cov`` divided a Python int by zero.)"""
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        fn(2 ** 70)
