"""``fastpath.select_or_zero``: ``where(c, x, 0)`` without branches gives ``np.where``'s bits.

Every case runs with the fast paths on and off (``fastpath.ENABLED``), and the
results are compared bit for bit: NaN payloads, infinities and signed zeros included.
"""

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import fastpath

SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, 1e308])


@pytest.fixture(params=[True, False], ids=["fast", "plain"])
def switch(request, monkeypatch):
    monkeypatch.setattr(fastpath, "ENABLED", request.param)
    return request.param


def _same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(bits), np.ascontiguousarray(expected).view(bits))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("zero", [0.0, 0])
@pytest.mark.parametrize("zero_first", [False, True])
def test_where_with_a_zero_branch_gives_numpys_bits(switch, dtype, zero, zero_first):
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):  # (1e308 is inf in float32 and float16)
        values = rng.permutation(np.tile(SPECIAL, 6)).astype(dtype).reshape(3, 20)
    condition = rng.random((3, 20)) < 0.5
    args = (condition, zero, values) if zero_first else (condition, values, zero)
    expected = np.where(*args)
    selected = fastpath.select_or_zero(*args)
    assert (selected is not None) == switch
    if selected is not None:
        _same_bits(selected, expected)
    _same_bits(dg.where(dg.tensor(condition), *(dg.tensor(a) if isinstance(a, np.ndarray) else a
                                                  for a in args[1:])).numpy(), expected)


@pytest.mark.parametrize("c_shape, x_shape", [((4, 5), (4, 1)), ((4, 1), (4, 5)), ((5,), (3, 5)), ((), (2, 3))])
def test_broadcast_operands_give_numpys_bits(switch, c_shape, x_shape):
    rng = np.random.default_rng(1)
    condition = rng.random(c_shape) < 0.5
    values = np.broadcast_to(rng.standard_normal(x_shape[-1:] if x_shape else ()), x_shape)
    expected = np.where(condition, values, 0.0)
    got = fastpath.select_or_zero(condition, values, 0.0)
    _same_bits(expected if got is None else got, expected)


@pytest.mark.parametrize("args", [
    (np.array([True, False]), np.array([1.0, 2.0]), -0.0),  # -0.0 is not selected by masking
    (np.array([True, False]), np.array([1.0, 2.0]), 1.0),
    (np.array([1, 0]), np.array([1.0, 2.0]), 0.0),  # not a bool condition
    (np.array([True, False]), np.array([1 + 1j, 2.0]), 0.0),  # complex
    (np.array([True, False]), np.array([1, 2]), 0),  # integers
    (np.array([True, False]), np.array([1.0, 2.0], dtype=">f8"), 0.0),  # not native byte order
    (np.array(True), np.array(1.0), 0.0),  # 0-d values
])
def test_other_operands_decline(args):
    assert fastpath.select_or_zero(*args) is None


def test_relu_gradient_under_vmap_of_grad_selects_nan_and_inf_gradients_away(switch):
    x = dg.tensor([[-1.0, 2.0, 0.0, 3.0], [1.0, -2.0, 4.0, -0.5]])
    scale = dg.tensor([np.inf, 1.0, np.nan, 2.0])

    def f(row):
        return (row.relu() * scale).sum()

    with np.errstate(invalid="ignore"):  # (0 * inf in the forward pass)
        got = dg.func.vmap(dg.func.grad(f))(x).numpy()
    expected = np.where(x.numpy() > 0, scale.numpy(), 0.0)
    np.testing.assert_array_equal(got, expected)
