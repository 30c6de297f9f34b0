"""Saved-tensor hooks see a node's saved tensors packed, and unpacked, in torch 2.13's order (``a * b``
packs ``b``, then ``a``), and only the tensors torch saves, for every op torch records as one node of
two or three tensor operands. The orders are pinned (generated with torch 2.13) and checked against
torch when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.graph import saved_tensors_hooks

# name -> (number of tensor operands, call(T, a, b, c)) with T the library (dualgrad or torch)
CASES = {
    "mul": (2, lambda T, a, b, c: a * b),
    "div": (2, lambda T, a, b, c: a / b),
    "pow": (2, lambda T, a, b, c: a ** b),
    "atan2": (2, lambda T, a, b, c: T.atan2(a, b)),
    "hypot": (2, lambda T, a, b, c: T.hypot(a, b)),
    "maximum": (2, lambda T, a, b, c: T.maximum(a, b)),
    "minimum": (2, lambda T, a, b, c: T.minimum(a, b)),
    "fmax": (2, lambda T, a, b, c: T.fmax(a, b)),
    "fmin": (2, lambda T, a, b, c: T.fmin(a, b)),
    "logaddexp": (2, lambda T, a, b, c: T.logaddexp(a, b)),
    "logaddexp2": (2, lambda T, a, b, c: T.logaddexp2(a, b)),
    "xlogy": (2, lambda T, a, b, c: T.xlogy(a, b)),
    "special.xlog1py": (2, lambda T, a, b, c: T.special.xlog1py(a, b)),
    "remainder": (2, lambda T, a, b, c: T.remainder(a, b)),
    "fmod": (2, lambda T, a, b, c: T.fmod(a, b)),
    "copysign": (2, lambda T, a, b, c: T.copysign(a, b)),
    "true_divide": (2, lambda T, a, b, c: T.true_divide(a, b)),
    "mm": (2, lambda T, a, b, c: a @ b),
    "mv": (2, lambda T, a, b, c: T.mv(a, b[0])),
    "dot": (2, lambda T, a, b, c: T.dot(a[0], b[0])),
    "bmm": (2, lambda T, a, b, c: T.bmm(a[None], b[None])),
    "einsum": (2, lambda T, a, b, c: T.einsum("ij,jk->ik", a, b)),
    "mul_": (2, lambda T, a, b, c: a.clone().mul_(b)),
    "div_": (2, lambda T, a, b, c: a.clone().div_(b)),
    "atan2_": (2, lambda T, a, b, c: a.clone().atan2_(b)),
    "clamp_min": (2, lambda T, a, b, c: T.clamp(a, min=b)),
    "clamp_max": (2, lambda T, a, b, c: T.clamp(a, max=b)),
    "where": (2, lambda T, a, b, c: T.where(a > 1.0, a, b)),
    "clamp": (3, lambda T, a, b, c: T.clamp(a, b, c)),
    "lerp": (3, lambda T, a, b, c: T.lerp(a, b, c)),
    "addcmul": (3, lambda T, a, b, c: T.addcmul(a, b, c)),
    "addcdiv": (3, lambda T, a, b, c: T.addcdiv(a, b, c)),
}

# torch 2.13's sequences, by which operands require grad ("110": a and b, not c): "pack x" for a saved
# operand x (a, b or c; "new" for another tensor: a result, a view), then the unpacks of a backward
PINNED: dict = {
    'mul': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'div': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'pow': {
        '11': ['pack b', 'pack a', 'pack new', 'unpack b', 'unpack a', 'unpack new'],
        '10': ['pack b', 'pack a', 'pack new', 'unpack b', 'unpack a', 'unpack new'],
        '01': ['pack b', 'pack a', 'pack new', 'unpack b', 'unpack a', 'unpack new'],
    },
    'atan2': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'hypot': {
        '11': ['pack b', 'pack a', 'pack new', 'unpack b', 'unpack a', 'unpack new'],
        '10': ['pack a', 'pack new', 'unpack a', 'unpack new'],
        '01': ['pack b', 'pack new', 'unpack b', 'unpack new'],
    },
    'maximum': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'minimum': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'fmax': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'fmin': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'logaddexp': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'logaddexp2': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'xlogy': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'special.xlog1py': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'remainder': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': [],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'fmod': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': [],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'copysign': {
        '11': ['pack a', 'pack new', 'unpack a', 'unpack new'],
        '10': ['pack a', 'pack new', 'unpack a', 'unpack new'],
        '01': ['pack new', 'unpack new'],
    },
    'true_divide': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'mm': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'mv': {
        '11': ['pack a', 'pack b', 'unpack a', 'unpack b'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'dot': {
        '11': ['pack a', 'pack b', 'unpack a', 'unpack b'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'bmm': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'einsum': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack a', 'unpack a'],
    },
    'mul_': {
        '11': ['pack b', 'pack new', 'unpack b', 'unpack new'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack new', 'unpack new'],
    },
    'div_': {
        '11': ['pack b', 'pack new', 'unpack b', 'unpack new'],
        '10': ['pack b', 'unpack b'],
        '01': ['pack b', 'pack new', 'unpack b', 'unpack new'],
    },
    'atan2_': {
        '11': ['pack b', 'pack new', 'unpack b', 'unpack new'],
        '10': ['pack b', 'pack new', 'unpack b', 'unpack new'],
        '01': ['pack b', 'pack new', 'unpack b', 'unpack new'],
    },
    'clamp_min': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'clamp_max': {
        '11': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '10': ['pack b', 'pack a', 'unpack b', 'unpack a'],
        '01': ['pack b', 'pack a', 'unpack b', 'unpack a'],
    },
    'where': {
        '11': ['pack new', 'unpack new'],
        '10': ['pack new', 'unpack new'],
        '01': ['pack new', 'unpack new'],
    },
    'clamp': {
        '111': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
        '100': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
        '010': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
        '001': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
        '110': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
        '011': ['pack c', 'pack b', 'pack a', 'unpack c', 'unpack b', 'unpack a'],
    },
    'lerp': {
        '111': ['pack b', 'pack a', 'pack c', 'unpack b', 'unpack a', 'unpack c'],
        '100': ['pack c', 'unpack c'],
        '010': ['pack c', 'unpack c'],
        '001': ['pack b', 'pack a', 'pack c', 'unpack b', 'unpack a', 'unpack c'],
        '110': ['pack c', 'unpack c'],
        '011': ['pack b', 'pack a', 'pack c', 'unpack b', 'unpack a', 'unpack c'],
    },
    'addcmul': {
        '111': ['pack b', 'pack c', 'unpack b', 'unpack c'],
        '100': [],
        '010': ['pack c', 'unpack c'],
        '001': ['pack b', 'unpack b'],
        '110': ['pack c', 'unpack c'],
        '011': ['pack b', 'pack c', 'unpack b', 'unpack c'],
    },
    'addcdiv': {
        '111': ['pack b', 'pack c', 'unpack b', 'unpack c'],
        '100': ['pack c', 'unpack c'],
        '010': ['pack c', 'unpack c'],
        '001': ['pack b', 'pack c', 'unpack b', 'unpack c'],
        '110': ['pack c', 'unpack c'],
        '011': ['pack b', 'pack c', 'unpack b', 'unpack c'],
    },
}

# where dualgrad saves less than torch: (name, requires-grad pattern) -> why
SAVES_LESS = {
    ("pow", "10"): "torch also saves the result, which only the exponent's gradient reads",
}


def _sequence(T, call, pattern: str) -> list[str]:
    """The pack and unpack events of ``call`` on operands requiring grad as ``pattern`` says."""
    is_torch = T.__name__ == "torch"
    values = ([[1.5, 2.0], [0.7, 1.2]], [[0.5, 1.1], [1.3, 0.4]], [[1.3, 1.4], [1.0, 2.0]])
    flags = pattern.ljust(3, "0")
    operands = [T.tensor(v, dtype=T.float64, requires_grad=flag == "1") for v, flag in zip(values, flags)]

    def name(t) -> str:
        for letter, x in zip("abc", operands):
            if is_torch and t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
                return letter
            if not is_torch and np.shares_memory(t.detach().numpy(), x.detach().numpy()):
                return letter
        return "new"

    events = []

    def pack(t):
        events.append("pack " + name(t))
        return t

    def unpack(t):
        events.append("unpack " + name(t))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = call(T, *operands)
    out.sum().backward()
    return events


def _patterns(arity: int) -> list[str]:
    return [p for p in ("11", "10", "01") if arity == 2] or ["111", "100", "010", "001", "110", "011"]


@pytest.mark.parametrize("name", list(CASES))
def test_saved_tensors_are_packed_and_unpacked_in_torchs_order(name):
    arity, call = CASES[name]
    for pattern in _patterns(arity):
        if (name, pattern) in SAVES_LESS:
            continue
        assert _sequence(dg, call, pattern) == PINNED[name][pattern], f"{name} with requires_grad {pattern}"


def test_saving_less_than_torch_keeps_torchs_order():
    events = _sequence(dg, CASES["pow"][1], "10")
    assert events == ["pack b", "pack a", "unpack b", "unpack a"]


@pytest.mark.parametrize("name", list(CASES))
def test_pinned_orders_are_torchs(name):
    torch = pytest.importorskip("torch")
    arity, call = CASES[name]
    for pattern in _patterns(arity):
        assert _sequence(torch, call, pattern) == PINNED[name][pattern], f"{name} with requires_grad {pattern}"


@pytest.mark.parametrize("hooks", [
    (lambda t: t, lambda t: t),
    (lambda t: t.detach().clone(), lambda t: t),
    (lambda t: t.numpy().copy(), dg.from_numpy),
], ids=["identity", "copy", "numpy"])
def test_saved_leaf_unpacked_by_hooks_is_a_leaf_whose_gradients_reach_the_leaf(hooks):
    a = dg.ones(3, requires_grad=True)
    b = dg.ones(3, requires_grad=True) * 2
    with saved_tensors_hooks(*hooks):
        y = a * b
    s, o = y.grad_fn._saved_self, y.grad_fn._saved_other
    assert (s.is_leaf, s.requires_grad, s.grad_fn) == (True, True, None)  # torch's
    assert s is not a
    assert not o.is_leaf and o.grad_fn.name() == "MulBackward0"
    (s * 3).sum().backward()
    assert a.grad.tolist() == [3.0] * 3 and s.grad is None  # (torch: the unpacked leaf shares a's accumulator)
    assert dg.autograd.grad((s * 2).sum(), s)[0].tolist() == [2.0] * 3
    assert dg.autograd.grad((s * 2).sum(), a)[0].tolist() == [2.0] * 3


def test_saved_leaf_matches_torch():
    torch = pytest.importorskip("torch")
    a = torch.ones(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = a * (torch.ones(3, requires_grad=True) * 2)
    s = y.grad_fn._saved_self
    assert (s.is_leaf, s.requires_grad, s.grad_fn) == (True, True, None)
