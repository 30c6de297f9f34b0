"""NumPy's calling conventions keep the graph: Tensors inside lists and tuples (issue 24, part 2).

A list or tuple holding tracked Tensors, passed to a NumPy function or ufunc that a Tensor
argument dispatches to dualgrad, becomes a tracked Tensor (``numpy_dispatch.tracked_array_like``):
checked for every ufunc dualgrad supports and a catalog of array functions, in reverse mode,
forward mode and under vmap, against central differences of NumPy's own conversion of the
same list holding untracked Tensors. Where NumPy converts without asking dualgrad (no Tensor
argument, ``np.array``, ``np.asarray``), the conversion raises; no path gives a constant.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from grad_checks import check_first_order, check_forward, check_vmap
from helpers import as_outputs

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad import numpy_dispatch

RNG = np.random.default_rng(24)
# Values of the tracked input: inside the domain of every supported ufunc after the offset below
X = RNG.uniform(0.3, 0.8, (2, 3))
TRACKED = r"NumPy asked for the data of a Tensor that requires grad .*detached from the graph"


def check_all_modes(call, arrays, vmap=True):
    """Tracked in reverse mode (against central differences), forward mode, and under vmap."""
    outs = as_outputs(call(*[dg.tensor(a, requires_grad=True) for a in arrays]))
    assert outs and all(o.requires_grad for o in outs), "the result is not tracked"
    check_first_order(call, arrays)
    check_forward(call, arrays)
    if vmap:
        check_vmap(call, arrays)
    else:  # (the function reads the values: vmap refuses, it does not give a constant)
        with pytest.raises(RuntimeError, match="vmap: cannot read the values of a batched tensor"):
            check_vmap(call, arrays)


def test_the_issue_reproducer():
    grad = dg.func.grad(lambda x: np.add([x, 2 * x], dg.tensor(1.0)).sum())(dg.tensor(1.5))
    assert grad.item() == 3.0


# -- the array-like forms of a (2, 3) value built from the tracked x ------------------------------------
def _rows(x, base):
    return list(x)


def _row_tuple(x, base):
    return tuple(x)


def _nested(x, base):
    return [[x[i, j] for j in range(3)] for i in range(2)]


def _mixed(x, base):
    """Tensors at two depths with a Python float and a NumPy scalar."""
    return [[x[0, 0], base + 0.5, np.float64(base + 0.25)], x[1]]


def _with_ndarray(x, base):
    return (x[0], np.array([0.1, 0.2, 0.3]) + base)


FORMS = {"rows": _rows, "row_tuple": _row_tuple, "nested": _nested, "mixed": _mixed, "with_ndarray": _with_ndarray}


# -- every ufunc dualgrad supports --------------------------------------------------------------------
def _float_ufunc(ufunc):
    return any(t.startswith("d" * ufunc.nin) for t in ufunc.types) or ufunc is np.ldexp


SUPPORTED = sorted((u for u in numpy_dispatch.UFUNCS if _float_ufunc(u)), key=lambda u: u.__name__)
BINARY = [u for u in SUPPORTED if u.nin == 2]
UNARY = [u for u in SUPPORTED if u.nin == 1]
OFFSET = {np.arccosh: 1.5}  # (added to x and to the constants of the list)
# the other operand: (its shape with the list first, with the list second); None: the list goes first only
OTHER_SHAPES = {np.matmul: ((3,), (2,)), np.vecdot: ((3,), (3,)), np.matvec: ((3,), (4, 3)),
                np.vecmat: ((3, 2), (2,)), np.ldexp: ((3,), None)}


def _other(ufunc, position):
    shape = OTHER_SHAPES.get(ufunc, ((3,), (3,)))[position]
    if ufunc is np.ldexp:
        return dg.tensor([1, -2, 3])
    return dg.tensor(np.linspace(1.1, 1.9, int(np.prod(shape))).reshape(shape))


def _ufunc_call(ufunc, position, form):
    base = OFFSET.get(ufunc, 0.0)
    other = _other(ufunc, position)

    def call(x):
        values = FORMS[form](x + base, base)
        return ufunc(values, other) if position == 0 else ufunc(other, values)

    return call


UFUNC_CASES = [(u, position, form) for u in BINARY for position in (0, 1) for form in FORMS
               if OTHER_SHAPES.get(u, ((3,), (3,)))[position] is not None]


@pytest.mark.parametrize("ufunc, position, form", UFUNC_CASES,
                         ids=[f"{u.__name__}-arg{p}-{f}" for u, p, f in UFUNC_CASES])
def test_ufunc_with_a_list_holding_tensors(ufunc, position, form):
    call = _ufunc_call(ufunc, position, form)
    result = call(dg.tensor(X, requires_grad=True))
    outs = result if isinstance(result, tuple) else (result,)
    with dg.no_grad():  # the values: NumPy's own conversion of the list of untracked Tensors
        expected = call(dg.tensor(X))
    for got, want in zip(outs, expected if isinstance(expected, tuple) else (expected,), strict=True):
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-12)
    if not as_outputs(result):  # (comparisons and logic: not differentiable)
        return
    check_all_modes(call, [X])


@pytest.mark.parametrize("ufunc", UNARY + BINARY, ids=lambda u: u.__name__)
def test_ufunc_with_no_tensor_argument_raises(ufunc):
    """NumPy converts the lists itself (nothing dispatches): the tracked Tensor refuses."""
    x = dg.tensor(X + OFFSET.get(ufunc, 0.0), requires_grad=True)
    inputs = [list(x)] + [[1.0, 2.0, 3.0]] * (ufunc.nin - 1)
    with pytest.raises(RuntimeError, match=TRACKED):
        ufunc(*inputs)


# -- array functions -------------------------------------------------------------------------------
W = dg.tensor([1.0, -2.0, 0.5])
FUNCTION_CALLS = {
    "dot": lambda x: np.dot([x[0], x[1] * 2], W),
    "dot_second": lambda x: np.dot(W[:2], [x[0], x[1]]),
    "where": lambda x: np.where(dg.tensor([True, False, True]), [x[0, 0], 0.5, x[1, 2]], x[1]),
    "append": lambda x: np.append([x[0, 0], x[0, 1]], x[1]),
    "append_second": lambda x: np.append(x[0], [x[1, 0], 1.0]),
    "stack": lambda x: np.stack([[x[0, 0], x[0, 1]], x[1, :2]]),
    "stack_tuple": lambda x: np.stack(((x[0, 0], 0.5), x[1, :2]), axis=1),
    "concatenate": lambda x: np.concatenate([[x[0, 0], 0.5], x[1]]),
    "concatenate_nested": lambda x: np.concatenate([[[x[0, 0], 0.5, x[0, 2]]], x[1:]]),
    "hstack": lambda x: np.hstack([[x[0, 0], 0.5], x[1]]),
    "vstack": lambda x: np.vstack([[x[0, 0], 0.5, x[0, 2]], x[1]]),
    "dstack": lambda x: np.dstack([[x[0, 0], 0.5, x[0, 2]], x[1]]),
    "column_stack": lambda x: np.column_stack([[x[0, 0], x[0, 1]], x[1, :2]]),
    "einsum": lambda x: np.einsum("ij,j->i", [x[0], x[1]], x[0]),
    "outer": lambda x: np.outer([x[0, 0], 2.0], x[1]),
    "inner": lambda x: np.inner([x[0, 0], x[0, 1], 0.5], x[1]),
    "kron": lambda x: np.kron([x[0, 0], 1.0], x[1]),
    "cross": lambda x: np.cross([x[0, 0], x[0, 1], 0.5], x[1]),
    "tensordot": lambda x: np.tensordot([x[0], x[1]], x[0], axes=1),
    "multi_dot": lambda x: np.linalg.multi_dot([[x[0], x[1]], x.T]),
    "select": lambda x: np.select([x[0] > 0.55, x[1] > 0.55], [[x[0, 0], 1.0, 2.0], x[1]], default=0.0),
    "choose": lambda x: np.choose([0, 1, 0], [[x[0, 0], x[0, 1], 0.5], x[1]]),
    "average_weights": lambda x: np.average(x[1], weights=[x[0, 0], 1.0, 2.0]),
    "clip": lambda x: np.clip([x[0, 0], x[0, 1], 0.5], dg.tensor(0.1), 2.0),
    "trapezoid": lambda x: np.trapezoid([x[0, 0], x[0, 1], 0.5], x=x[1]),
    "linspace": lambda x: np.linspace([x[0, 0], 0.5], x[1, :2], 4),
    "diff": lambda x: np.diff([x[0, 0], x[0, 1], 1.0], prepend=x[1, :1]),
    "polyval": lambda x: np.polyval([x[0, 0], x[0, 1], 0.5], x[1]),
    "convolve": lambda x: np.convolve([x[0, 0], x[0, 1]], x[1]),
    "interp": lambda x: np.interp(W * 0.1 + 0.5, [0.0, 0.55, 1.0], [x[0, 0], x[0, 1], x[0, 2]]),
    "linalg_matmul": lambda x: np.linalg.matmul([x[0], x[1]], x[0]),
    "linalg_solve": lambda x: np.linalg.solve([[x[0, 0] + 2, x[0, 1]], [x[1, 0], x[1, 1] + 2]], x[0, :2]),
    "percentile_q": lambda x: np.percentile(W, [x[0, 0] * 10, 50.0]),
    "cov": lambda x: np.cov([x[0], x[1]], W),
    "matmul_operator_list": lambda x: np.matmul([x[0], x[1]], W),
}


@pytest.mark.parametrize("name", sorted(FUNCTION_CALLS))
def test_function_with_a_list_holding_tensors(name):
    call = FUNCTION_CALLS[name]
    with dg.no_grad():
        expected = call(dg.tensor(X))
    np.testing.assert_allclose(call(dg.tensor(X, requires_grad=True)).detach().numpy(), expected.numpy(),
                               rtol=1e-12)
    check_all_modes(call, [X], vmap=name not in READS_VALUES)


# (quantile's q is checked against [0, 1] by value)
READS_VALUES = {"percentile_q"}


def _spy_arguments(monkeypatch, func, args):
    """The arguments that ``func``'s adaptor receives when NumPy dispatches ``func(*args)``."""
    seen = []
    monkeypatch.setitem(numpy_dispatch.FUNCTIONS, func, lambda *a, **k: seen.append((a, k)))
    numpy_dispatch.array_function(func, (dg.Tensor,), args, {})
    return seen[0][0]


def _positional_count(func):
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    count = sum(p.kind in kinds for p in parameters)
    return max(count, 1) if count else 2  # (*args: two of them)


DISPATCHED = sorted(numpy_dispatch.FUNCTIONS, key=numpy_dispatch.numpy_name)


@pytest.mark.parametrize("func", DISPATCHED, ids=numpy_dispatch.numpy_name)
def test_every_dispatched_function_receives_tracked_tensors_for_lists(monkeypatch, func):
    """The one conversion point: whatever the function, its adaptor sees no list holding a tracked Tensor
    (sequence parameters get their entries converted; np.block's lists are its structure)."""
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    args = tuple([[x[0], 1.0], (x[1], 2.0)] for _ in range(_positional_count(func)))
    received = _spy_arguments(monkeypatch, func, args)
    if func in numpy_dispatch.STRUCTURED_FUNCTIONS:
        assert received == args
        return
    positions = {p for _, p in numpy_dispatch.SEQUENCE_PARAMETERS.get(func, ())}
    for position, value in enumerate(received):
        entries = value if position in positions else [value]
        shape = (2,) if position in positions else (2, 2)
        assert all(isinstance(e, dg.Tensor) and e.requires_grad and e.shape == shape for e in entries)


# -- lists stay exactly what NumPy would make of them ----------------------------------------------
def test_the_stacked_tensor_has_numpys_dtype_and_shape():
    x32 = dg.tensor([1.0, 2.0], dtype=dg.float32, requires_grad=True)
    both32 = numpy_dispatch.tracked_array_like([x32, x32 * 2])
    with_float = numpy_dispatch.tracked_array_like([x32, [0.5, 1]])
    assert both32.dtype == np.float32 and both32.shape == (2, 2)
    assert with_float.dtype == np.asarray([np.ones(2, np.float32), [0.5, 1]]).dtype == np.float64
    assert with_float.tolist() == [[1.0, 2.0], [0.5, 1.0]]
    assert numpy_dispatch.tracked_array_like([1.0, 2.0]) == [1.0, 2.0]  # (nothing tracked: as it was)


def test_untracked_lists_are_left_to_numpy():
    untracked = [dg.tensor(1.0), 2.0]
    assert numpy_dispatch.tracked_array_like(untracked) is untracked
    assert np.add([dg.tensor(1.0), 2.0], 1.0).tolist() == [2.0, 3.0]


def test_a_list_of_tracked_tensors_under_no_grad_is_still_stacked():
    x = dg.tensor(1.5, requires_grad=True)
    with dg.no_grad():
        result = np.add([x, 2 * x], dg.tensor(1.0))
    assert result.tolist() == [2.5, 4.0] and not result.requires_grad


# -- each path that cannot track raises --------------------------------------------------------------
def test_np_array_and_asarray_of_tracked_tensors_raise():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for convert in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray):
        with pytest.raises(RuntimeError, match=TRACKED):
            convert(x)
        with pytest.raises(RuntimeError, match=TRACKED):
            convert([x[0], x[1]])
    with pytest.raises(RuntimeError, match=r"np\.stack or dualgrad\.stack"):
        np.array([x, x])
    with pytest.raises(RuntimeError, match=TRACKED):
        np.asarray(x, dtype=np.float32)


def test_functions_that_do_not_dispatch_on_a_list_raise():
    """NumPy dispatches on the arrays its functions name; a list holding Tensors is not one."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    calls = (lambda: np.sum([x[0], x[1]]), lambda: np.mean([x, x], axis=0),
             lambda: np.dot([x[0], x[1]], np.ones(2)), lambda: np.add([x[0], x[1]], 1.0),
             lambda: np.add.reduce([x[0], x[1]]), lambda: np.sin((x[0],)),
             lambda: np.linalg.norm([x[0], x[1]]), lambda: np.ones(2).dot([x[0], x[1]]))
    for call in calls:
        with pytest.raises(RuntimeError, match=TRACKED):
            call()


def test_a_forward_mode_tangent_is_not_converted():
    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
        with pytest.raises(RuntimeError, match=r"carries a forward-mode tangent \(shape \(2,\)"):
            np.asarray(dual)
        with pytest.raises(RuntimeError, match="forward-mode tangent"):
            np.array([dual[0], dual[1]])
        assert fwAD.unpack_dual(np.add([dual[0], dual[1]], dg.tensor(0.0))).tangent.tolist() == [1.0, 0.0]


def test_a_batched_tensor_is_not_converted():
    with pytest.raises(RuntimeError, match="vmap: cannot read the values of a batched tensor"):
        dg.vmap(lambda x: np.asarray([x, x]))(dg.ones(3))
    with pytest.raises(RuntimeError, match="vmap: cannot read the values of a batched tensor"):
        dg.vmap(lambda x: np.add([x, x], 1.0))(dg.ones(3))


def test_a_function_without_a_rule_names_the_tracked_argument():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"no derivative rule for numpy\.insert; it was called with a tracked "
                                        r"Tensor in argument 'values' \(position 3\)"):
        np.insert(dg.tensor([0.0, 0.0]), 0, [x[0], 1.0])
    with pytest.raises(TypeError, match=r"no derivative rule for numpy\.insert; .* in argument 'arr' \(position 1\)"):
        np.insert(x, 0, 1.0)


def test_a_ufunc_without_a_rule_names_the_tracked_input():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"no derivative rule for numpy\.multiply\.at; it was called with a tracked "
                                        r"Tensor in input 1"):
        np.multiply.at(x, [0], 2.0)


def test_a_ragged_or_non_numeric_list_raises():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"numpy\.add, input 1: setting an array element .* inhomogeneous"):
        np.add([x, [1.0]], dg.tensor(1.0))
    with pytest.raises(TypeError, match=r"numpy\.add, input 2: a list holding tracked Tensors makes an array of "
                                        r"dtype object, which has no derivative"):
        np.add(dg.tensor(1.0), [x[0], None])
    with pytest.raises(ValueError, match=r"numpy\.dot, argument 'a' \(position 1\): setting an array element"):
        np.dot([x, [1.0]], dg.ones(2))
    with pytest.raises(ValueError, match=r"numpy\.concatenate, argument 'arrays' \(position 1\), entry 1: "):
        np.concatenate([x, [x, [1.0]]])


def test_dualgrad_tensor_of_a_list_copies_with_torchs_warning():
    """``dualgrad.tensor`` is torch's constructor: a new leaf (copy-constructing warns, as torch's)."""
    x = dg.tensor(1.0, requires_grad=True)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
        copy = dg.tensor([x, x])
    assert copy.is_leaf and not copy.requires_grad


def test_softplus_refuses_a_tensor_beta_as_torch():
    """(found here: a tracked beta was a constant; torch's parameters are numbers)"""
    x = dg.tensor([0.5], requires_grad=True)
    with pytest.raises(TypeError, match=r"softplus\(\): argument 'beta' \(position 2\) must be Number, not Tensor"):
        dg.softplus(x, dg.tensor(2.0, requires_grad=True))
    with pytest.raises(TypeError, match=r"argument 'threshold' \(position 3\) must be Number, not list"):
        dg.softplus(x, 1.0, [20.0])


def test_quantile_is_differentiable_in_q():
    """(found here: np.percentile(a, [q, ...]) with a tracked q was a constant in q; torch's quantile is not)"""
    a = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    check_all_modes(lambda q: dg.quantile(dg.tensor(a), q, dim=1), [np.array([0.3, 0.8])], vmap=False)
    q = dg.tensor([0.3], requires_grad=True)
    dg.quantile(dg.tensor([1.0, 2.0, 4.0]), q).sum().backward()
    assert q.grad.tolist() == pytest.approx([2.0])  # (torch 2.13's value)


def test_detached_and_untracked_conversions_keep_working():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])
    np.testing.assert_array_equal(np.array([x.detach(), x.detach()]), [[1.0, 2.0], [1.0, 2.0]])
    with dg.no_grad():
        np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])
