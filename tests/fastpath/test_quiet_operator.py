"""``fastpath.quiet_operator``: ``a + b``, ``a - b``, ``a * b``, ``a / b`` take dispatch's common path themselves.

The values, dtypes and graph flags must be dispatch's in every case, with the fast paths on and off
(``DUALGRAD_FASTPATH=0``); the test that the shortcut is taken is marked ``fastpath``.
"""

from __future__ import annotations

import operator
import re
from contextlib import nullcontext

import numpy as np
import pytest
from helpers import dispatch_calls

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.ops import dispatch
from dualgrad.ops.elementwise.core import ADD, DIV, MUL, SUB

OPERATORS = [(operator.add, ADD), (operator.sub, SUB), (operator.mul, MUL), (operator.truediv, DIV)]


def _operands(kind: str) -> tuple:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(1, 2, (2, 3)), rng.uniform(1, 2, (2, 3))
    cases = {
        "same dtype": (dg.tensor(a), dg.tensor(b)),
        "broadcast": (dg.tensor(a), dg.tensor(b[0])),
        "python float": (dg.tensor(a), 1.5),
        "python int": (dg.tensor(a), 3),
        "float32 and float": (dg.tensor(a, dtype=dg.float32), 1.5),
        "float32 and float64": (dg.tensor(a, dtype=dg.float32), dg.tensor(b)),
        "integers": (dg.tensor([1, 2, 3]), dg.tensor([4, 5, 6])),
        "complex": (dg.tensor(a + 1j), dg.tensor(b - 2j)),
        "zero-dim": (dg.tensor(a), dg.tensor(2.0)),
        "both zero-dim": (dg.tensor(3.0), dg.tensor(2.0)),
        "numpy scalar": (dg.tensor(a), np.float64(2.0)),
        "bool": (dg.tensor(a), True),
        "requires grad": (dg.tensor(a, requires_grad=True), dg.tensor(b)),
        "other requires grad": (dg.tensor(a), dg.tensor(b, requires_grad=True)),
        "view": (dg.tensor(a)[0], dg.tensor(b)[1]),
        "view of a leaf that requires grad": (dg.tensor(a, requires_grad=True)[0], 2.0),
        "zero-dim and float": (dg.tensor(2.5), 1.5),
        "zero-dim float32 and int": (dg.tensor(np.float32(2.5)), 3),
        "zero-dim and array": (dg.tensor(2.0, requires_grad=True), dg.tensor(b)),
        "zero-dim views": (dg.tensor(a, requires_grad=True)[0, 1], dg.tensor(b)[1, 2]),
        "zero-dim complex": (dg.tensor(2.0 + 1j), dg.tensor(1.0 - 1j)),
        "numpy array": (dg.tensor(a), b),
        "float32 and int": (dg.tensor(a, dtype=dg.float32), 2),
        "float32 and float32": (dg.tensor(a, dtype=dg.float32), dg.tensor(b, dtype=dg.float32)),
        "bools": (dg.tensor([True, False]), dg.tensor([True, True])),
        "integers and float": (dg.tensor([1, 2, 3]), 0.5),
        "float and integers": (dg.tensor(a[0]), dg.tensor([1, 2, 3])),
        "float and a large int": (dg.tensor(a), 2 ** 70),
        "float16 and float": (dg.tensor(a, dtype=dg.float16), 1e5),
    }
    return cases[kind]


KINDS = ["same dtype", "broadcast", "python float", "python int", "float32 and float", "float32 and float64",
         "integers", "complex", "zero-dim", "both zero-dim", "numpy scalar", "bool", "requires grad",
         "other requires grad", "view", "view of a leaf that requires grad", "zero-dim and float",
         "zero-dim float32 and int", "zero-dim and array", "zero-dim views", "zero-dim complex", "numpy array",
         "float32 and int", "float32 and float32", "bools", "integers and float", "float and integers",
         "float and a large int", "float16 and float"]


def _same(result: dg.Tensor, expected: dg.Tensor) -> None:
    assert type(result) is type(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result.detach().numpy(), expected.detach().numpy())
    assert result.requires_grad == expected.requires_grad
    assert (result.grad_fn is None) == (expected.grad_fn is None)
    if result.grad_fn is not None:
        assert result.grad_fn.name() == expected.grad_fn.name()
    assert result.is_inference() == expected.is_inference()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn, op", OPERATORS, ids=["add", "sub", "mul", "div"])
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
def test_operators_give_dispatchs_result(fn, op, kind, mode):
    a, b = _operands(kind)
    context = {"grad": nullcontext, "no_grad": dg.no_grad, "inference_mode": dg.inference_mode}[mode]
    with context():
        try:
            expected = dispatch.apply(op, a, b)
        except (TypeError, RuntimeError) as error:  # (``bool - bool``): the operator raises the same error
            with pytest.raises(type(error), match=re.escape(str(error))):
                fn(a, b)
            return
        result = fn(a, b)
        _same(result, expected)
        if not isinstance(b, dg.Tensor) and op in (ADD, MUL):  # ``2 * x`` is ``x * 2``, as in torch
            _same(fn(b, a), expected)


def test_gradients_through_the_operators():
    x = dg.tensor([0.5, 1.5], requires_grad=True)
    w = dg.tensor([2.0, -1.0])
    (g,) = dg.grad(((x * w + 1.0) / (x - 3.0)).sum(), x)
    xv, wv = x.detach().numpy(), w.numpy()
    np.testing.assert_allclose(g.numpy(), (wv * (xv - 3.0) - (xv * wv + 1.0)) / (xv - 3.0) ** 2)


def test_a_broadcast_error_is_torchs():
    with pytest.raises(RuntimeError, match=r"mul: The size of tensor a \(3\) must match the size of tensor b \(2\)"):
        dg.ones(3) * dg.ones(2)


def test_a_dual_level_sees_the_operator():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
        y = x * dg.tensor([3.0, 4.0])
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), [3.0, 0.0])


def test_vmap_and_the_profiler_see_the_operator():
    out = dg.vmap(lambda r: r * dg.tensor([1.0, 2.0]))(dg.ones(3, 2))
    np.testing.assert_array_equal(out.numpy(), np.tile([1.0, 2.0], (3, 1)))
    with dg.profiler.profile() as prof:
        dg.ones(2) * dg.ones(2)
    assert any("mul" in event.name for event in prof.events())


def test_a_stale_view_is_rebuilt_before_it_is_used():
    base = dg.zeros(2, 2)
    view = base[0]
    base.mul_(dg.ones(2, 2, requires_grad=True))  # (the base now requires grad: the view's graph changes)
    assert (view * 2.0).requires_grad
    other = dg.zeros(2, 2)
    other_view = other[1]
    other.add_(dg.ones(2, 2, requires_grad=True))
    assert (dg.ones(2) * other_view).requires_grad  # (the right operand too)


def test_the_operators_results_are_fresh_tensors_of_the_versions_and_hooks_of_dispatch():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    w = dg.tensor([3.0, 4.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    y = x * w
    assert y._version == 0 and y._view is None and y.grad is None and y.is_leaf is False
    y.sum().backward()
    np.testing.assert_array_equal(seen[0], [3.0, 4.0])
    z = w * 2.0
    z.add_(1.0)  # (a result is a tensor of its own: its in-place change is seen by nothing else)
    assert z._version == 1 and w._version == 0
    np.testing.assert_array_equal(w.numpy(), [3.0, 4.0])
    v = w[0:1]
    w.mul_(1.0)  # (a version the view's graph is up to date with: both paths read the new values)
    np.testing.assert_array_equal((v * 2.0).numpy(), [6.0])



@pytest.mark.fastpath
def test_the_shortcut_is_taken_only_when_no_mode_can_see_the_op():
    a, b = dg.ones(3), dg.ones(3)
    assert dispatch_calls(lambda: (a * b, a + 1.0, a - 2, a / b, 2.0 * a)) == 0
    x = dg.ones(3, requires_grad=True)
    assert dispatch_calls(lambda: x * b) == 0  # (recorded by the operator itself: dispatch's _record)
    assert (x * b).grad_fn.name() == "MulBackward0"

    def in_inference_mode():
        with dg.inference_mode():
            a * b

    assert dispatch_calls(in_inference_mode) == 1
    assert dispatch_calls(lambda: a * dg.tensor(1.0)) == 0  # (a 0-d operand of the same dtype)
    assert dispatch_calls(lambda: dg.tensor(2.0) * dg.tensor(1.0)) == 0  # (NumPy's scalar arithmetic, as dispatch)
    assert dispatch_calls(lambda: dg.tensor(2.0 + 1j) * dg.tensor(1.0 + 0j)) == 1
    assert dispatch_calls(lambda: a * dg.ones(3, dtype=dg.float32)) == 1  # (type promotion)
    base = dg.ones(2, 3)
    view = base[0]
    assert dispatch_calls(lambda: view * b) == 0  # (a view whose graph is up to date)
    base.add_(1.0)
    assert dispatch_calls(lambda: view * b) == 1  # (a view to bring up to date first)
