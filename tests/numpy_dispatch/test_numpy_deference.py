"""NEP 13/18 deference: Tensor gives way to array types that take precedence under NumPy's rules (issue 24,
part 3), so labelled arrays (xarray) wrap Tensors and derivatives flow through code written with them.

Enumerated: every forward binary operator against each kind of type NumPy's ``ndarray`` defers to, every
ufunc dualgrad supports against a type overriding ``__array_ufunc__``, every dispatched NumPy function
against a type overriding ``__array_function__``; then xarray (a test dependency), pandas and Dask (when
installed).
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from grad_checks import check_first_order

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad import numpy_dispatch
from dualgrad._deference import FORWARD_OPERATORS, defers_to, overrides_ufuncs

OPERATORS = {name: getattr(operator, name.strip("_")) for name in FORWARD_OPERATORS
             if name not in ("__and__", "__or__")}
OPERATORS["__and__"], OPERATORS["__or__"] = operator.and_, operator.or_
REFLECTED = {"__eq__": "__eq__", "__ne__": "__ne__", "__lt__": "__gt__", "__le__": "__ge__", "__gt__": "__lt__",
             "__ge__": "__le__"}


def _reflected_name(name):
    return REFLECTED.get(name, "__r" + name[2:])


def _answering(base, **attributes):
    """A class whose reflected operators answer with their own name."""
    methods = {_reflected_name(name): (lambda n: lambda self, other: n)(_reflected_name(name))
               for name in FORWARD_OPERATORS}
    return type(base, (), {**methods, **attributes})


NO_UFUNCS = _answering("NoUfuncs", __array_ufunc__=None)
OWN_UFUNCS = _answering("OwnUfuncs", __array_ufunc__=lambda self, ufunc, method, *inputs, **kwargs: "own ufunc")
HIGH_PRIORITY = _answering("HighPriority", __array_priority__=2000.0)
LOW_PRIORITY = _answering("LowPriority", __array_priority__=10.0)


class OwnSubclass(np.ndarray):
    """An ndarray subclass with its own ufuncs (as astropy's Quantity)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return "subclass ufunc"

    def __radd__(self, other):
        return "__radd__"


@pytest.mark.parametrize("kind", [NO_UFUNCS, OWN_UFUNCS, HIGH_PRIORITY], ids=lambda k: k.__name__)
@pytest.mark.parametrize("name", FORWARD_OPERATORS)
def test_every_forward_operator_defers(name, kind):
    assert getattr(dg.Tensor, name)(dg.tensor([1.0, 2.0]), kind()) is NotImplemented
    assert OPERATORS[name](dg.tensor([1.0, 2.0]), kind()) == _reflected_name(name)


@pytest.mark.parametrize("name", FORWARD_OPERATORS)
def test_operators_keep_their_own_operands(name):
    x = dg.tensor([1, 2]) if name in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__") \
        else dg.tensor([1.0, 2.0])
    for other in (x, x._data, 2, np.int64(2), [1, 2], (1, 2), x._data.view(np.ndarray)):
        if name == "__matmul__" and not isinstance(other, (dg.Tensor, np.ndarray, list, tuple)):
            continue
        assert getattr(dg.Tensor, name)(x, other) is not NotImplemented


def test_the_rules():
    assert defers_to(NO_UFUNCS()) and defers_to(OWN_UFUNCS()) and defers_to(HIGH_PRIORITY())
    assert not defers_to(LOW_PRIORITY()) and not defers_to(np.ones(2)) and not defers_to(np.float32(1.0))
    assert defers_to(np.ones(2).view(OwnSubclass)) and not defers_to(np.ma.ones(2))
    assert overrides_ufuncs(OWN_UFUNCS()) and not overrides_ufuncs(NO_UFUNCS()) and not overrides_ufuncs([1.0])
    assert dg.tensor([1.0]) + np.ones(1).view(OwnSubclass) == "__radd__"


def test_reflected_and_in_place_operators_do_not_defer():
    """(as ndarray's: the other operand has had its turn)"""
    x = dg.tensor([1.0, 2.0])
    assert dg.Tensor.__radd__(x, 1.0).tolist() == [2.0, 3.0]
    y = dg.tensor([1.0, 2.0])
    y += np.ones(2)
    assert y.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("ufunc", sorted(numpy_dispatch.UFUNCS, key=lambda u: u.__name__), ids=lambda u: u.__name__)
def test_every_ufunc_defers_to_a_type_with_its_own(ufunc):
    inputs = [dg.tensor([1.0, 2.0])] * (ufunc.nin - 1) + [OWN_UFUNCS()]
    assert ufunc(*inputs) == "own ufunc"
    assert numpy_dispatch.array_ufunc(ufunc, "__call__", tuple(inputs), {}) is NotImplemented
    if ufunc.nin == 2:
        assert ufunc(OWN_UFUNCS(), dg.tensor([1.0])) == "own ufunc"
    if ufunc.nin == 2 and ufunc.signature is None:
        assert ufunc.outer(dg.tensor([1.0]), OWN_UFUNCS()) == "own ufunc"


def test_a_ufunc_defers_to_its_out_argument():
    x = dg.tensor([1.0, 2.0])
    assert np.add(x, x, out=(OWN_UFUNCS(),)) == "own ufunc"


def test_a_ufunc_with_a_type_refusing_ufuncs_raises_numpys_error():
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.add(dg.tensor([1.0]), NO_UFUNCS())


class OwnFunctions:
    def __array_function__(self, func, types, args, kwargs):
        return "own function"


@pytest.mark.parametrize("func", sorted(numpy_dispatch.FUNCTIONS, key=numpy_dispatch.numpy_name),
                         ids=numpy_dispatch.numpy_name)
def test_every_dispatched_function_defers_to_a_type_with_its_own(func):
    assert numpy_dispatch.array_function(func, (dg.Tensor, OwnFunctions), (dg.ones(2), OwnFunctions()), {}) \
        is NotImplemented


def test_numpy_calls_the_other_types_function():
    assert np.concatenate([dg.ones(2), OwnFunctions()]) == "own function"
    assert np.stack([OwnFunctions(), dg.ones(2)]) == "own function"
    assert np.concatenate([dg.ones(2), np.ones(2)]).tolist() == [1.0] * 4  # (ndarray and Tensor: ours)


# -- xarray --------------------------------------------------------------------------------------------
try:
    import xarray as xr
except ImportError:  # (a test dependency: pip install -e ".[test]")
    xr = None
needs_xarray = pytest.mark.skipif(xr is None, reason="xarray is not installed")
X = np.array([0.3, -1.2, 0.7])


def labelled(x, dims="a"):
    return xr.DataArray(x, dims=dims)


@needs_xarray
def test_a_tensor_times_a_data_array_is_a_data_array_holding_a_tensor():
    x = dg.tensor(X, requires_grad=True)
    da = xr.DataArray(np.arange(3.0), dims="a", coords={"a": [10, 20, 30]})
    for result in (x * da, da * x, x + da, np.multiply(x, da), np.add(da, x), x < da):
        assert isinstance(result, xr.DataArray) and isinstance(result.data, dg.Tensor)
        assert result.dims == ("a",) and result.coords["a"].values.tolist() == [10, 20, 30]
    assert (x * da).data.requires_grad
    (x * da).sum().data.backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0]


XARRAY_CODE = {
    "scale_sum": lambda x: (labelled(x) * 2).sum().data,
    "ufunc": lambda x: np.sin(labelled(x)).sum().data,
    "tensor_times_labelled": lambda x: (x * labelled(np.arange(3.0))).sum().data,
    "mean_over_dim": lambda x: (labelled(x) ** 2).mean("a").data,
    "std": lambda x: labelled(x).std().data,
    "outer_broadcast": lambda x: (labelled(x) * labelled(np.array([1.0, -2.0]), "b")).sum("a").data,
    "transposed_broadcast": lambda x: (labelled(dg.reshape(x, (3, 1)), ("a", "b"))
                                       * labelled(np.ones((1, 3)), ("b", "a"))).sum().data,
    "sel": lambda x: xr.DataArray(x, dims="a", coords={"a": [1, 2, 3]}).sel(a=2).data,
    "isel": lambda x: labelled(x).isel(a=slice(0, 2)).sum().data,
    "align": lambda x: (xr.DataArray(x, dims="a", coords={"a": [0, 1, 2]})
                        * xr.DataArray(np.array([2.0, 3.0]), dims="a", coords={"a": [1, 2]})).sum().data,
    "dot": lambda x: xr.dot(labelled(x), labelled(np.arange(3.0))).data,
    "where": lambda x: xr.where(labelled(x) > 0, labelled(x) ** 2, 0.0).sum().data,
    "concat": lambda x: xr.concat([labelled(x), labelled(x ** 2)], dim="a").sum().data,
    "roll": lambda x: (labelled(x).roll(a=1) * labelled(np.arange(3.0))).sum().data,
    "cumsum": lambda x: labelled(x).cumsum().sum().data,
    "groupby": lambda x: (xr.DataArray(x, dims="a", coords={"g": ("a", [0, 0, 1])}).groupby("g").sum() ** 2)
    .sum().data,
    "dataset": lambda x: (xr.Dataset({"v": ("a", x)})["v"] ** 2).sum().data,
}


@needs_xarray
@pytest.mark.parametrize("name", sorted(XARRAY_CODE))
def test_derivatives_flow_through_xarray_code(name):
    call = XARRAY_CODE[name]
    check_first_order(call, [X])
    x = dg.tensor(X)
    reverse = dg.func.jacrev(call)(x)
    forward = dg.func.jacfwd(call)(x)
    np.testing.assert_allclose(forward.numpy(), reverse.numpy(), rtol=1e-12, atol=1e-12)
    batched = dg.vmap(call)(dg.stack([x, 2 * x]))
    with dg.no_grad():
        np.testing.assert_allclose(batched.numpy(), np.stack([call(x).numpy(), call(2 * x).numpy()]), rtol=1e-12)


@needs_xarray
def test_xarray_in_forward_mode_keeps_the_tangent():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor(X), dg.tensor([1.0, 0.0, 0.0]))
        out = (labelled(dual) ** 2).sum().data
        assert fwAD.unpack_dual(out).tangent.item() == pytest.approx(2 * X[0])


@needs_xarray
def test_a_data_array_of_a_tracked_tensor_prints_the_tensor():
    text = repr(labelled(dg.tensor(X, requires_grad=True)))
    assert "requires_grad=True" in text and "Dimensions without coordinates: a" in text


# -- pandas and Dask, where they install ------------------------------------------------------------------
def test_pandas_takes_precedence_and_refuses_to_detach():
    pd = pytest.importorskip("pandas")
    series = pd.Series([1.0, 2.0, 3.0])
    result = dg.tensor(X) * series
    assert isinstance(result, pd.Series) and result.tolist() == pytest.approx((X * [1, 2, 3]).tolist())
    with pytest.raises(RuntimeError, match="NumPy asked for the data of a Tensor that requires grad"):
        dg.tensor(X, requires_grad=True) * series  # (a Series holds ndarrays: it would be a constant)


def test_dask_takes_precedence():
    da = pytest.importorskip("dask.array")
    result = dg.tensor(X) * da.ones(3, chunks=1)
    assert isinstance(result, da.Array)
