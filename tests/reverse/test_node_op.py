"""Every kind of op a graph node can hold declares and meets the written ``NodeOp`` protocol."""

from __future__ import annotations

import pytest

import dualgrad as dg
from dualgrad.ops.registry import ALL_OPS, Op
from dualgrad.reverse.node import NodeOp
from dualgrad.reverse.saved import _ALIAS, _Alias
from dualgrad.tools.gradcheck import _UNDEFINED, _UndefinedGrad
from dualgrad.transforms.function import FunctionCtx, FunctionOp


class _Double(dg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _conforms(op: object) -> None:
    assert isinstance(op, NodeOp)
    assert isinstance(op.grad_name, str) and op.grad_name
    assert op.scatter_index is None or callable(op.scatter_index)
    assert isinstance(op.runs_on_undefined, bool)
    assert callable(op.backward)


@pytest.mark.parametrize("cls", [Op, FunctionOp, _Alias, _UndefinedGrad])
def test_each_kind_of_op_declares_the_protocol(cls):
    assert NodeOp in cls.__mro__  # (declared by subclassing; issubclass is not defined for data protocols)


@pytest.mark.parametrize("name", sorted(ALL_OPS))
def test_every_op_of_the_table_meets_the_protocol(name):
    _conforms(ALL_OPS[name])


def test_a_custom_functions_op_and_the_adapters_meet_the_protocol():
    _conforms(FunctionOp(_Double, FunctionCtx(), (dg.ones(2),)))
    _conforms(_ALIAS)
    _conforms(_UNDEFINED)


def test_the_ops_nodes_hold_are_node_ops():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for out in (x.sin(), _Double.apply(x), x[1:]):
        _conforms(out.grad_fn.op)


def test_an_object_without_the_interface_is_not_a_node_op():
    class NoBackward:
        grad_name = "NoBackward0"
        scatter_index = None
        runs_on_undefined = False

    assert not isinstance(NoBackward(), NodeOp)
