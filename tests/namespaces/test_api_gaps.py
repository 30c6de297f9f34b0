"""Small torch APIs a port meets: ``dualgrad.testing.assert_close`` / ``make_tensor``, type promotion
queries, the generator's seed and state, ``narrow_copy``, ``conj_physical`` and the Tensor's memory
questions. Expected values, error types and messages are torch 2.13's (found by a differential run
with torch's default dtype set to float64, as dualgrad's; torch is not imported here)."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.testing import assert_close, make_tensor

NAN, INF = float("nan"), float("inf")


def test_testing_is_an_attribute_of_dualgrad_without_importing_hypothesis():
    code = ("import sys, dualgrad; dualgrad.testing.assert_close(1.0, 1.0); "
            "print('hypothesis' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- assert_close ------------------------------------------------------------------------------------
def t(data, dtype=None):
    return dg.tensor(data, dtype=dtype)


CLOSE = [
    (t([1.0, 2.0]), t([1.0, 2.0 + 1e-8]), {}),
    (t([1.0, 2.0]), t([1.0, 2.0], dtype=dg.float32), {"check_dtype": False}),
    (t([1.0, NAN]), t([1.0, NAN]), {"equal_nan": True}),
    (t([1.0, INF]), t([1.0, INF]), {}),
    (t([]), t([]), {}),
    (t([0.0, 0.0]), t([0.0, 0.4]), {"rtol": 0, "atol": 0.5}),
    (1, 1, {}), (1, 1.0, {"check_dtype": False}), (NAN, NAN, {"equal_nan": True}), (INF, INF, {}),
    (np.float32(1.0), 1.0, {}), (np.int64(1), 1, {}), (None, None, {}), (True, np.bool_(True), {}),
    ([t(1.0), (2, {"a": t([3])})], (t(1.0), [2, {"a": t([3])}]), {}),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0]), {}),
    (t([1.0, 2.0], dtype=dg.float32), t([1.0, 2.0 + 1e-6], dtype=dg.float32), {}),
]


@pytest.mark.parametrize("actual, expected, options", CLOSE)
def test_assert_close_passes(actual, expected, options):
    assert_close(actual, expected, **options)


NOT_CLOSE = [
    (t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.1]), {}, AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.2 at index (1,) (up to 1e-07 allowed)"),
    (t([1.0, 2.0, 3.0], dg.float32), t([1.0, 2.5, 3.1], dg.float32), {}, AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    (t([1.0, 2.0, 3.0], dg.float16), t([1.0, 2.5, 3.1], dg.float16), {}, AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.199951171875 at index (1,) (up to 0.001 allowed)"),
    (t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]]), {}, AssertionError,
     "Mismatched elements: 1 / 4 (25.0%)\nGreatest absolute difference: 1.0 at index (1, 1)"),
    (t([1, 2]), t([1, 3]), {}, AssertionError,
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\nGreatest relative difference: 0.3333333333333333 at index (1,)"),
    (t([True, False]), t([True, True]), {}, AssertionError,
     "Greatest absolute difference: 1 at index (1,)\nGreatest relative difference: 1.0 at index (1,)"),
    (t([2 ** 62 + 1]), t([2 ** 62]), {}, AssertionError, "Tensor-likes are not equal!"),
    (t([1.0, NAN]), t([1.0, NAN]), {}, AssertionError,
     "Greatest absolute difference: nan at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: nan at index (1,) (up to 1e-07 allowed)"),
    (t([1.0, INF]), t([1.0, -INF]), {}, AssertionError,
     "Greatest absolute difference: inf at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: nan at index (1,)"),
    (t([0.0, 1.0]), t([0.0, 0.0]), {}, AssertionError, "Greatest relative difference: inf at index (1,)"),
    (t([0.0, 0.0]), t([0.0, 1.0]), {"rtol": 0, "atol": 0.5}, AssertionError,
     "Greatest absolute difference: 1.0 at index (1,) (up to 0.5 allowed)\n"
     "Greatest relative difference: 1.0 at index (1,) (up to 0 allowed)"),
    (t([1 + 1j]), t([1 + 2j]), {}, AssertionError,
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.4472135954999579 at index (0,)"),
    (t(1.0), t(2.0), {}, AssertionError,
     "Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)"),
    (t(1.0), t(2.0), {"rtol": 0, "atol": 0}, AssertionError,
     "Scalars are not equal!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0\nRelative difference: 0.5"),
    (1.0, 1.1, {}, AssertionError,
     "Scalars are not close!\n\nExpected 1.1 but got 1.0.\nAbsolute difference: 0.10000000000000009 "
     "(up to 1e-07 allowed)\nRelative difference: 0.09090909090909098 (up to 1e-07 allowed)"),
    (1, 2, {}, AssertionError,
     "Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\nRelative difference: 0.5"),
    (1.0, NAN, {}, AssertionError, "Absolute difference: nan (up to 1e-07 allowed)"),
    (1, 1.0, {}, AssertionError, "The (d)types do not match: <class 'int'> != <class 'float'>."),
    (True, False, {}, AssertionError, "Booleans mismatch: True is not False"),
    (None, 1, {}, AssertionError, "None mismatch: None is not 1"),
    (t([1.0, 2.0]), t([1.0, 2.0, 3.0]), {}, AssertionError,
     "The values for attribute 'shape' do not match: (2,) != (3,)."),
    (t([1.0, 2.0]), t([1.0, 2.0], dg.float32), {}, AssertionError,
     "The values for attribute 'dtype' do not match: float64 != float32."),
    (t([1, 2], dg.int32), t([1, 2]), {}, AssertionError,
     "The values for attribute 'dtype' do not match: int32 != int64."),
    (t([[1.0, 2.0], [3.0, 4.0]]).T, t([[1.0, 3.0], [2.0, 4.0]]), {"check_stride": True}, AssertionError,
     "The values for attribute 'stride()' do not match: (1, 2) != (2, 1)."),
    (t([1, 2]), t([1.0, 2.5], dg.float32), {"check_dtype": False}, AssertionError,
     "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    ([t(1.0), t(3.0)], [t(2.0), t(4.0)], {}, AssertionError,
     "Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)\n\nThe failure occurred for item [0]"),
    ({"a": [t(1.0)]}, {"a": [t(2.0)]}, {}, AssertionError, "The failure occurred for item ['a'][0]"),
    ({"a": t(1.0)}, {"b": t(1.0)}, {}, AssertionError,
     "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
     "Additional keys in the actual mapping: ['a']"),
    ([t(1.0)], [t(1.0), t(1.0)], {}, AssertionError, "The length of the sequences mismatch: 1 != 2"),
    ((1.0, 2.0), (1.0, 3.0), {}, AssertionError, "The failure occurred for item [1]"),
    (np.array([1.0, 2.0]), np.array([1.0, 3.0]), {}, AssertionError,
     "Greatest relative difference: 0.3333333333333333 at index (1,) (up to 1e-07 allowed)"),
    (t([1.0, 2.0]), t([1.0, 2.0]), {"rtol": 1e-3}, ValueError,
     "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."),
    ([t([1.0])], [t([1.0])], {"atol": 1e-3, "msg": "ignored"}, ValueError,
     "Both 'rtol' and 'atol' must be either specified or omitted, but got no rtol.\n\n"
     "The failure occurred for item [0]"),
    (t([1.0, 2.0]), [1.0, 2.0], {}, TypeError,
     "No comparison pair was able to handle inputs of type <class 'dualgrad.tensor.Tensor'> and <class 'list'>."),
    (t([1.0]), np.array([1.0]), {}, TypeError, "No comparison pair was able to handle inputs"),
    (1.0, t(1.0), {}, TypeError, "No comparison pair was able to handle inputs of type <class 'float'>"),
    ("a", "a", {}, TypeError, "inputs of type <class 'str'> and <class 'str'>."),
    ([t(1.0), "a"], [t(2.0), "b"], {}, TypeError, "The failure occurred for item [1]"),  # (structure first)
]


@pytest.mark.parametrize("actual, expected, options, error, message", NOT_CLOSE)
def test_assert_close_fails_as_torch(actual, expected, options, error, message):
    with pytest.raises(error) as info:
        assert_close(actual, expected, **options)
    assert message in str(info.value)


def test_assert_close_msg_replaces_or_rewrites_the_message():
    a, b = [t([1.0, 2.0])], [t([1.0, 3.0])]
    with pytest.raises(AssertionError) as info:
        assert_close(a, b, msg="custom")
    assert str(info.value) == "custom"
    with pytest.raises(AssertionError) as info:
        assert_close(a, b, msg=lambda m: "X" + m)
    assert str(info.value).startswith("XTensor-likes are not close!")
    assert str(info.value).endswith("The failure occurred for item [0]")


def test_assert_close_subclasses():
    class Sub(dg.Tensor):
        pass

    assert_close(Sub(np.array([1.0])), t([1.0]))
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(Sub(np.array([1.0])), t([1.0]), allow_subclasses=False)


def test_assert_close_ignores_requires_grad():
    assert_close(dg.tensor([1.0, 2.0], requires_grad=True) * 1, t([1.0, 2.0]))


# -- make_tensor --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, low, high", [
    (dg.float64, -9, 9), (dg.float32, -9, 9), (dg.float16, -9, 9), (dg.int64, -9, 10), (dg.int8, -9, 10),
    (dg.uint8, 0, 10), (dg.bool, 0, 2),
])
def test_make_tensor_default_ranges(dtype, low, high):
    x = make_tensor(2000, dtype=dtype).numpy()
    assert x.dtype == dtype and x.shape == (2000,)
    values = x.astype(np.float64)
    assert values.min() >= low and values.max() < high
    if dtype.kind in "iub":  # every integer of the range drawn
        assert set(np.unique(values)) == set(range(low, high))


def test_make_tensor_shapes_ranges_and_options():
    assert make_tensor(2, 3, dtype=dg.float64).shape == (2, 3)
    assert make_tensor((2, 3), dtype=dg.float64, device="cpu").shape == (2, 3)
    assert make_tensor([2, 3], dtype=dg.float64).shape == (2, 3)
    assert make_tensor(dtype=dg.float64).shape == ()
    z = make_tensor(500, dtype=dg.complex64, low=0, high=1).numpy()
    assert z.dtype == np.complex64 and 0 <= z.real.min() and z.real.max() < 1 and 0 <= z.imag.min()
    assert make_tensor(3, dtype=dg.uint8, low=-5, high=3).numpy().max() < 3  # low clamped to 0
    assert np.isfinite(make_tensor(50, dtype=dg.float64, low=-1e400, high=1e400).numpy()).all()
    assert set(make_tensor(100, dtype=dg.int64, low=0.5, high=2.5).numpy()) <= {1, 2}  # limits rounded up


def test_make_tensor_noncontiguous_exclude_zero_and_grad():
    x = make_tensor(2, 3, dtype=dg.float64, noncontiguous=True)
    assert x.shape == (2, 3) and x.stride() == (6, 2) and not x.is_contiguous()
    assert make_tensor(1, dtype=dg.float64, noncontiguous=True).is_contiguous()  # (fewer than two elements)
    assert set(make_tensor(1000, dtype=dg.int64, low=-1, high=2, exclude_zero=True).numpy()) == {-1, 1}
    tiny = make_tensor(1000, dtype=dg.float16, low=-1e-9, high=1e-9, exclude_zero=True).numpy()
    assert (tiny != 0).all() and np.abs(tiny).min() == np.finfo(np.float16).tiny
    g = make_tensor(4, dtype=dg.float32, noncontiguous=True, requires_grad=True)
    assert g.requires_grad and g.is_leaf


def test_make_tensor_draws_from_the_seeded_generator():
    dg.manual_seed(3)
    a = make_tensor(5, dtype=dg.float64)
    dg.manual_seed(3)
    assert dg.equal(a, make_tensor(5, dtype=dg.float64))


def test_make_tensor_low_equal_high_warns_for_floats():
    with pytest.warns(FutureWarning, match="low==high"):
        assert dg.equal(make_tensor(3, dtype=dg.float64, low=1, high=1), dg.ones(3))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"dtype": dg.int64, "requires_grad": True}, ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes"),
    ({"dtype": dg.float64, "low": 2, "high": 1}, ValueError, "`low` must be less than `high`, but got 2 >= 1"),
    ({"dtype": dg.int64, "low": 1, "high": 1}, ValueError, "`low` must be less than `high`, but got 1 >= 1"),
    ({"dtype": dg.float64, "low": NAN}, ValueError, "`low` and `high` cannot be NaN, but got low=nan and high=9"),
    ({"dtype": dg.uint8, "low": -5, "high": -1}, ValueError,
     "The value interval specified by `low` and `high` is [-5, -1), but uint8 only supports [0, 256)"),
    ({"dtype": "U3"}, TypeError, "is not supported by dualgrad.testing.make_tensor()"),
])
def test_make_tensor_errors(kwargs, error, message):
    with pytest.raises(error) as info:
        make_tensor(3, **kwargs)
    assert message in str(info.value)


# -- type promotion -----------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, expected", [
    ("int32", "float32", "float32"), ("uint8", "int8", "int16"), ("bool", "int8", "int8"),
    ("float16", "int64", "float16"), ("float32", "complex64", "complex64"), ("float64", "complex64", "complex128"),
    ("int64", "uint8", "int64"), ("bool", "bool", "bool"),
])
def test_promote_types(a, b, expected):
    assert dg.promote_types(np.dtype(a), np.dtype(b)) == expected == dg.promote_types(np.dtype(b), np.dtype(a))


@pytest.mark.parametrize("a, b, expected", [
    ("float64", "float32", True), ("float32", "int32", False), ("int32", "float32", True),
    ("complex64", "float64", False), ("float32", "bool", False), ("bool", "uint8", True), ("int64", "uint8", True),
    ("uint8", "int8", True), ("float32", "complex64", True), ("int64", "bool", False),
    ("complex128", "complex64", True),
])
def test_can_cast(a, b, expected):
    assert dg.can_cast(np.dtype(a), np.dtype(b)) is expected


@pytest.mark.parametrize("fn, args, message", [
    (dg.promote_types, (dg.int64, 1), "promote_types(): argument 'type2' (position 2) must be dtype, not int"),
    (dg.promote_types, (None, dg.int64), "promote_types(): argument 'type1' (position 1) must be dtype, not NoneType"),
    (dg.can_cast, (1, dg.float32), "can_cast(): argument 'from_' (position 1) must be dtype, not int"),
    (dg.result_type, (dg.tensor([1]), "a"), "result_type(): expected Tensors or numbers, but got (Tensor, str)"),
    (dg.result_type, ([1], 1), "expected Tensors or numbers, but got (list, int)"),
])
def test_promotion_queries_refuse_other_arguments(fn, args, message):
    with pytest.raises(TypeError) as info:
        fn(*args)
    assert message in str(info.value)


@pytest.mark.parametrize("a, b, expected", [
    (dg.tensor([1, 2]), 1.0, "float64"), (dg.tensor([1, 2]), dg.tensor(1.0), "float64"),
    (dg.tensor([1.0], dtype=dg.float32), 1, "float32"), (dg.tensor([1.0], dtype=dg.float32), 1.0, "float32"),
    (1, 1.0, "float64"), (1, 2, "int64"), (True, 2, "int64"), (2.0, 1j, "complex128"),
    (np.float32(1), dg.tensor([1]), "float64"),
    (dg.tensor([1], dtype=dg.uint8), dg.tensor([1], dtype=dg.int8), "int16"),
    (dg.tensor([1], dtype=dg.int32), dg.tensor(5), "int32"),
    (dg.tensor(1.0, dtype=dg.float32), dg.tensor([1 + 1j], dtype=dg.complex128), "complex128"),
    (dg.tensor([1.0]), dg.tensor(1j, dtype=dg.complex64), "complex128"),
])
def test_result_type(a, b, expected):
    assert dg.result_type(a, b) == expected


def test_result_type_follows_the_default_dtype():
    dg.set_default_dtype(dg.float32)
    try:
        assert dg.result_type(dg.tensor([1, 2]), 1.0) == "float32"
    finally:
        dg.set_default_dtype(dg.float64)


# -- the generator's seed and state -------------------------------------------------------------------
def test_seed_and_initial_seed():
    dg.manual_seed(5)
    assert dg.initial_seed() == 5
    s = dg.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64 and dg.initial_seed() == s
    a = dg.rand(3)
    dg.manual_seed(s)
    assert dg.equal(a, dg.rand(3))


def test_rng_state_round_trip_restores_draws_and_initial_seed():
    dg.manual_seed(11)
    state = dg.get_rng_state()
    assert state.dtype == np.uint8 and state.shape == (45,)
    expected = dg.rand(4)
    dg.manual_seed(12)
    dg.set_rng_state(state)
    assert dg.initial_seed() == 11 and dg.equal(dg.rand(4), expected)


def test_rng_state_keeps_a_buffered_32_bit_draw():
    generator = dg.manual_seed(11)
    generator.integers(0, 10, dtype=np.int32)  # leaves half of a 64-bit draw in the state
    state = dg.get_rng_state()
    expected = generator.integers(0, 1000, 3, dtype=np.int32)
    dg.set_rng_state(state)
    assert (generator.integers(0, 1000, 3, dtype=np.int32) == expected).all()


@pytest.mark.parametrize("state, error, message", [
    (np.zeros(45, np.uint8), TypeError, "expected a uint8 Tensor, but got numpy.ndarray"),
    (dg.zeros(45), TypeError, "RNG state must be a uint8 Tensor"),
    (dg.tensor([1, 2], dtype=dg.uint8), RuntimeError, "Expected an RNG state of size 45 but found the input RNG "
                                                      "state size to be 2"),
])
def test_set_rng_state_errors(state, error, message):
    with pytest.raises(error) as info:
        dg.set_rng_state(state)
    assert message in str(info.value)


# -- narrow_copy, conj_physical -----------------------------------------------------------------------
def test_narrow_copy_is_a_copy_with_narrows_values_and_gradient():
    x = dg.arange(6.0).reshape(2, 3)
    y = dg.narrow_copy(x, 1, 1, 2)
    assert y.tolist() == [[1.0, 2.0], [4.0, 5.0]] and x.narrow_copy(1, -1, 1).tolist() == [[2.0], [5.0]]
    y[0, 0] = 10.0
    assert x[0, 1].item() == 1.0  # not a view
    leaf = dg.arange(3.0, requires_grad=True)
    dg.narrow_copy(leaf, 0, 1, 2).sum().backward()
    assert leaf.grad.tolist() == [0.0, 1.0, 1.0]
    assert dg.gradcheck(lambda v: dg.narrow_copy(v, 0, 1, 2), (dg.randn(4, 3, requires_grad=True),),
                        check_forward_ad=True)


@pytest.mark.parametrize("args, error, message", [
    ((1, 2, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    ((1, 1, -1), RuntimeError, "start (1) + length (-1) exceeds dimension size (3)."),
])
def test_narrow_copy_errors(args, error, message):
    with pytest.raises(error) as info:
        dg.narrow_copy(dg.zeros(2, 3), *args)
    assert message in str(info.value)
    with pytest.raises(RuntimeError, match="narrow\\(\\) cannot be applied to a 0-dim tensor"):
        dg.narrow_copy(dg.tensor(1.0), 0, 0, 1)


def test_conj_physical():
    z = dg.tensor([1 + 2j], requires_grad=True)
    w = dg.conj_physical(z)
    assert w.tolist() == [1 - 2j] and not w.is_conj()
    w.abs().sum().backward()
    assert np.allclose(z.grad.numpy(), [1 / math.sqrt(5) + 2j / math.sqrt(5)])
    real, integer = dg.tensor([1.0, 2.0]), dg.tensor([1, 2])
    assert dg.conj_physical(real) is real and real.conj_physical() is real and integer.conj_physical() is integer
    assert dg.gradcheck(dg.conj_physical, (dg.randn(3, dtype=dg.complex128, requires_grad=True),),
                        check_forward_ad=True)
    with pytest.raises(TypeError, match="conj_physical"):
        dg.conj_physical([1.0])


# -- the Tensor's memory ------------------------------------------------------------------------------
def test_is_cpu_layout_and_data_ptr():
    x = dg.zeros(2, 3)
    assert x.is_cpu is True and x.layout is dg.strided
    assert repr(x.layout) == str(dg.strided) == "dualgrad.strided"
    assert pickle.loads(pickle.dumps(dg.strided)) is dg.strided
    assert x[1].data_ptr() - x.data_ptr() == 3 * x.itemsize and x[0].data_ptr() == x.data_ptr()
    assert x.T.data_ptr() == x.data_ptr() and x.clone().data_ptr() != x.data_ptr()


@pytest.mark.parametrize("make, expected", [
    (lambda: dg.zeros(2, 3, 4), (0, 1, 2)),
    (lambda: dg.zeros(2, 3, 4).permute(2, 0, 1), (1, 2, 0)),
    (lambda: dg.zeros(2, 3, 4).transpose(0, 1), (1, 0, 2)),
    (lambda: dg.zeros(2, 3, 4)[:, ::2], (0, 1, 2)),
    (lambda: dg.zeros(2, 3, 5, 7).permute(0, 2, 3, 1), (0, 3, 1, 2)),
    (lambda: dg.zeros(2, 1, 3), (0, 1, 2)),
    (lambda: dg.zeros(2, 1, 3).permute(1, 0, 2), (0, 1, 2)),
    (lambda: dg.zeros(2, 1, 3).permute(0, 2, 1), (0, 1, 2)),
    (lambda: dg.zeros(3).expand(2, 3), (0, 1)),
    (lambda: dg.zeros(3, 1).expand(3, 2), (0, 1)),
    (lambda: dg.zeros(()), ()),
])
def test_dim_order(make, expected):
    assert make().dim_order() == expected


def test_dim_order_ambiguity_check():
    assert dg.zeros(2, 3, 4).permute(2, 0, 1).dim_order(ambiguity_check=True) == (1, 2, 0)
    assert dg.zeros(1).expand(3).dim_order(ambiguity_check=True) == (0,)
    for ambiguous in (dg.zeros(2, 1, 3), dg.zeros(3, 1).expand(3, 2), dg.zeros(1)):
        with pytest.raises(RuntimeError, match="The tensor does not have unique dim order"):
            ambiguous.dim_order(ambiguity_check=True)
    with pytest.raises(TypeError, match="The ambiguity_check argument must be a bool"):
        dg.zeros(2).dim_order(ambiguity_check="ILLEGAL")
