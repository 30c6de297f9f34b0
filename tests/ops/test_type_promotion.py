"""Result dtypes of ops that combine operands follow torch's type promotion, not NumPy's.

Operands are written ``"dim:<dtype>"`` (a tensor of two elements), ``"0d:<dtype>"`` (a
0-d tensor) or as Python / NumPy numbers. The expected dtypes are torch 2.13's (checked
against it once, written here literally), with the default dtype float64 and float32.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD

COND = [True, False]


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    default = dg.get_default_dtype()
    yield
    dg.set_default_dtype(default)


def operand(spec):
    """A tensor for ``"dim:<dtype>"`` / ``"0d:<dtype>"``; anything else as it is."""
    if not isinstance(spec, str):
        return spec
    kind, dtype = spec.split(":")
    value = np.array(True if dtype == "bool" else 3 if "int" in dtype else 1.5 + (0.5j if "complex" in dtype else 0))
    return dg.tensor(np.full((2,) if kind == "dim" else (), value, dtype))


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b, "remainder": lambda a, b: a % b, "pow": lambda a, b: a ** b,
    "maximum": dg.maximum, "minimum": dg.minimum, "atan2": dg.atan2, "copysign": dg.copysign,
    "where": lambda a, b: dg.where(dg.tensor(COND), a, b), "clamp": lambda a, b: dg.clamp(a, b),
    "matmul": lambda a, b: a @ b, "cat": lambda a, b: dg.cat([a, b]), "stack": lambda a, b: dg.stack([a, b]),
    "and": lambda a, b: a & b, "lt": lambda a, b: a < b,
}

# (op, left, right, result with the default dtype float64, result with float32)
CASES = [
    # within a category, dimensioned tensors outrank 0-d tensors, which outrank Python numbers
    ("add", "dim:int32", "0d:int64", "int32", "int32"),
    ("add", "0d:int64", "dim:int32", "int32", "int32"),
    ("add", "dim:float32", "0d:float64", "float32", "float32"),
    ("mul", "0d:float64", "dim:float16", "float16", "float16"),
    ("add", "0d:float32", "0d:float64", "float64", "float64"),
    ("add", "dim:float32", "dim:float64", "float64", "float64"),
    ("add", "dim:float32", 2.5, "float32", "float32"),
    ("add", "0d:float16", 2.5, "float16", "float16"),
    ("add", "dim:int32", 7, "int32", "int32"),
    ("add", "dim:bool", True, "bool", "bool"),
    ("add", "dim:bool", 1, "int64", "int64"),
    ("add", "dim:float32", np.float64(2.0), "float32", "float32"),  # NumPy scalars count as Python numbers
    ("mul", "dim:int32", np.int64(2), "int32", "int32"),
    ("mul", "dim:int64", np.float32(2.0), "float64", "float32"),
    # a higher category of lower rank gives its default dtype, or the tensor's dtype in that category
    ("add", "dim:int64", 2.5, "float64", "float32"),
    ("sub", 2.5, "dim:int32", "float64", "float32"),
    ("add", "dim:bool", 2.5, "float64", "float32"),
    ("add", "dim:int64", 1j, "complex128", "complex64"),
    ("mul", "dim:float32", 1j, "complex64", "complex64"),
    ("mul", "dim:float16", 1j, "complex64", "complex64"),  # torch: complex32, which NumPy lacks
    ("mul", "dim:float64", "0d:complex64", "complex128", "complex128"),
    ("mul", "0d:complex128", "dim:float32", "complex64", "complex64"),
    ("add", "dim:complex64", "0d:float64", "complex64", "complex64"),
    ("add", "dim:int32", "0d:float32", "float32", "float32"),
    ("add", "dim:int32", "0d:float64", "float64", "float64"),
    ("add", "0d:int32", "0d:float16", "float16", "float16"),
    ("add", "dim:int64", "dim:float16", "float16", "float16"),  # an integer does not widen a float
    ("mul", "dim:int32", "dim:complex64", "complex64", "complex64"),
    # true division and atan2 / copysign compute integers in the default dtype
    ("div", "dim:int64", "dim:int64", "float64", "float32"),
    ("div", "dim:int32", 2, "float64", "float32"),
    ("div", "dim:bool", True, "float64", "float32"),
    ("div", "dim:int32", "0d:float16", "float16", "float16"),
    ("div", "dim:float32", "0d:int64", "float32", "float32"),
    ("atan2", "dim:int64", "dim:int64", "float64", "float32"),
    ("copysign", "dim:int64", "dim:int32", "float64", "float32"),
    ("floordiv", "dim:int64", 2, "int64", "int64"),
    ("floordiv", "dim:int32", "0d:int64", "int32", "int32"),
    ("floordiv", "dim:int64", 2.5, "float64", "float32"),
    ("remainder", "dim:float32", "0d:float64", "float32", "float32"),
    ("pow", "dim:int32", 2, "int32", "int32"),
    ("pow", 2, "dim:int32", "int32", "int32"),
    ("pow", 2.0, "dim:int32", "float64", "float32"),
    ("pow", "dim:float32", "0d:float64", "float32", "float32"),
    ("maximum", "dim:float16", "dim:int64", "float16", "float16"),
    ("minimum", "dim:float32", "0d:float64", "float32", "float32"),
    ("where", "dim:int32", 2.5, "float64", "float32"),
    ("where", 1.0, 2, "float64", "float32"),
    ("where", 1, 2, "int64", "int64"),
    ("where", "dim:float32", "0d:float64", "float32", "float32"),
    ("clamp", "dim:int64", 0.5, "float64", "float32"),
    ("clamp", "dim:float32", "0d:float64", "float32", "float32"),
    ("and", "dim:int32", "0d:int64", "int32", "int32"),
    ("lt", "dim:int64", 2.5, "bool", "bool"),
    ("cat", "dim:int32", "dim:float16", "float16", "float16"),
    ("cat", "dim:int32", "dim:bool", "int32", "int32"),
    ("stack", "0d:float32", "0d:float64", "float64", "float64"),
    ("stack", "dim:int64", "dim:float32", "float32", "float32"),
    ("matmul", "dim:float32", "dim:int64", "float32", "float32"),  # torch: an error (same dtypes only)
    ("matmul", "dim:float32", "dim:float64", "float64", "float64"),
]


@pytest.mark.parametrize("default", ["float64", "float32"])
@pytest.mark.parametrize("op, left, right, expected64, expected32", CASES, ids=lambda v: str(v))
def test_result_dtype_is_torchs(op, left, right, expected64, expected32, default):
    dg.set_default_dtype(default)
    out = BINARY[op](operand(left), operand(right))
    assert out.dtype == np.dtype(expected64 if default == "float64" else expected32)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_same_dtype_and_python_numbers_keep_the_dtype(dtype):
    dg.set_default_dtype("float32")
    x = operand(f"dim:{dtype}")
    for out in (x * 1.01, x + 2, 1.5 - x, 2 * x, x / 3, x ** 2, 2.0 ** x, x * x, x / x,
                dg.where(dg.tensor(COND), x, 0.0)):
        assert out.dtype == np.dtype(dtype)


def test_values_are_computed_in_the_result_dtype():
    # 2**24 + 1 is not a float32: torch rounds the integer to float32 before adding / comparing
    big = dg.tensor(np.array([16777217], np.int32))
    assert (big + dg.tensor(np.float32(0.0))).numpy()[0] == np.float32(16777216.0)
    dg.set_default_dtype("float32")
    assert bool((big == 16777216.0)[0])
    dg.set_default_dtype("float64")
    assert not bool((big == 16777216.0)[0])


@pytest.mark.parametrize("default", ["float32", "float64", "float16"])
def test_one_operand_float_ops_give_integers_and_bools_the_default_dtype(default):
    dg.set_default_dtype(default)
    ints, bools = dg.tensor([1, 4]), dg.tensor([True, False])
    for result in (dg.sin(ints), dg.sqrt(ints), dg.exp(bools), dg.reciprocal(ints), ints.log1p()):
        assert result.dtype == np.dtype(default)
    np.testing.assert_allclose(dg.sqrt(ints).numpy(), [1.0, 2.0])
    # ops that keep integers, and explicit casts, are not affected
    assert (-ints).dtype == ints.abs().dtype == dg.sign(ints).dtype == np.int64
    assert ints.double().dtype == np.float64 and ints.float().dtype == np.float32


def test_in_place_keeps_the_tensor_dtype_or_refuses():
    x = dg.tensor(np.ones(2, np.float32))
    x += dg.tensor(np.ones(2))
    assert x.dtype == np.float32
    dg.set_default_dtype("float32")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        dg.tensor([1, 2]).add_(1.5)


def test_bfloat16_with_python_numbers_and_float16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = dg.tensor(np.ones(2, bf16))
    assert (x * 2.5).dtype == (2.5 - x).dtype == (x * dg.tensor([1, 2])).dtype == bf16
    assert (x + dg.tensor(np.ones(2, np.float16))).dtype == np.float32


# -- gradients come back in each input's own dtype -------------------------------------------------
MIXED = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b, "maximum": dg.maximum, "atan2": dg.atan2, "hypot": dg.hypot,
    "where": lambda a, b: dg.where(dg.tensor(COND), a, b), "cat": lambda a, b: dg.cat([a.reshape(-1), b.reshape(-1)]),
    "stack": lambda a, b: dg.stack([a.expand(2), b.expand(2)]),
}
PAIRS = [("dim:float32", "0d:float64"), ("0d:float64", "dim:float32"), ("dim:float16", "dim:float32")]


def _input(spec, values):
    kind, dtype = spec.split(":")
    return dg.tensor(np.array(values if kind == "dim" else values[0], dtype), requires_grad=True)


@pytest.mark.parametrize("left, right", PAIRS)
@pytest.mark.parametrize("name", list(MIXED))
def test_gradients_and_tangents_keep_each_input_dtype(name, left, right):
    f = MIXED[name]
    x, y = _input(left, [0.5, 1.5]), _input(right, [0.75, 1.25])
    out = f(x, y)
    gx, gy = dg.grad(out.sum(), (x, y))
    assert (gx.dtype, gy.dtype) == (x.dtype, y.dtype)
    # the same gradients as in float64 (where gradcheck holds), within the precision of the inputs
    x64, y64 = (dg.tensor(t.detach().numpy().astype(np.float64), requires_grad=True) for t in (x, y))
    for got, expected in zip((gx, gy), dg.grad(f(x64, y64).sum(), (x64, y64)), strict=True):
        np.testing.assert_allclose(got.numpy().astype(np.float64), expected.numpy(), rtol=2e-3, atol=2e-3)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(t.detach(), dg.ones_like(t)) for t in (x, y)]
        primal, tangent = fwAD.unpack_dual(f(*duals))
    assert tangent.dtype == primal.dtype == out.dtype


@pytest.mark.parametrize("name", ["mul", "div", "pow", "atan2", "where", "maximum"])
def test_gradcheck_float32_with_a_float64_scalar_tensor(name):
    x = dg.tensor(np.array([0.5, 1.5], np.float32), requires_grad=True)
    y = dg.tensor(0.7, requires_grad=True)
    with pytest.warns(UserWarning, match="not of double precision"):
        assert dg.gradcheck(MIXED[name], (x, y), eps=1e-3, atol=1e-2, rtol=1e-2,
                            check_grad_dtypes=True, check_forward_ad=True)


def test_gradient_through_an_integer_operand():
    dg.set_default_dtype("float32")
    w = dg.tensor(np.array([0.5, 2.0], np.float32), requires_grad=True)
    out = dg.tensor([1, 2]) * w / dg.tensor([4, 8])
    assert out.dtype == np.float32
    (g,) = dg.grad(out.sum(), w)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), [0.25, 0.25])


def test_vmap_ranks_operands_by_their_per_example_shape():
    # a per-example 0-d float64 is physically a vector: it must still rank below the float32 vector
    w = dg.tensor(np.ones(3, np.float32))
    x = dg.tensor(np.ones(4))
    assert dg.vmap(lambda xi: xi * w)(x).dtype == np.float32
    assert dg.vmap(dg.vmap(lambda xi: w - xi))(dg.ones(2, 4)).dtype == np.float32
    assert dg.vmap(lambda xi: dg.where(dg.tensor(COND + [True]), w, xi))(x).dtype == np.float32
    assert dg.vmap(lambda xi: xi / dg.tensor([2, 4, 8]))(dg.tensor([1, 2])).dtype == np.float64
