"""``grad_fn.name()`` as torch 2.13's: torch names a node by the overload that was called
(``sum()`` SumBackward0, ``sum(dim)`` SumBackward1; ``x[0]`` SelectBackward0, ``x[1:]``
SliceBackward0). Every expected name is torch 2.13's for the same expression (found by a
differential run; torch is not imported here)."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg

_X = np.linspace(0.5, 1.5, 12).reshape(3, 4)
_SQ = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])


def _env() -> dict:
    def leaf(a):
        return dg.tensor(a, requires_grad=True)

    return {
        "m": dg, "x": leaf(_X), "y": leaf(_X[::-1].copy()), "v": leaf(_X[0]), "w": leaf(_X[1]),
        "s": leaf(np.array(0.7)), "sq": leaf(_SQ), "z": leaf(_X + 1j * _X[::-1]),
        "b3": leaf(np.linspace(0.5, 1.5, 24).reshape(2, 3, 4)), "c": leaf(np.linspace(0.5, 1.5, 20).reshape(4, 5)),
        "x1": leaf(np.ones((1, 4, 1))), "idx": dg.tensor([0, 2]), "mask": dg.tensor(_X > 1.0),
        "ix": dg.tensor([[0, 1, 2, 0], [1, 1, 0, 2]]),
    }


# (expression, torch 2.13's name of the result's grad_fn); the first output of a tuple
NAMES = [
    ('x.clone().zero_()', 'ZeroBackward0'),
    ('x.clone().fill_(0.5)', 'FillBackward2'),
    ('x.clone().fill_(s)', 'FillBackward3'),
    ('x.masked_fill(mask, s)', 'MaskedFillBackward1'),
    ('x.clone().masked_fill_(mask, s)', 'MaskedFillBackward1'),
    ('m.lerp(x, y, 0.5)', 'LerpBackward0'),
    ('m.lerp(x, y, s)', 'LerpBackward1'),
    ('m.addcmul(x, y, x, value=2)', 'AddcmulBackward0'),
    ('m.addcdiv(x, y, x + 1, value=2)', 'AddcdivBackward0'),
    ('m.add(x, y, alpha=2)', 'AddBackward0'),
    ('m.sub(x, y, alpha=2)', 'SubBackward0'),
    ('x + y', 'AddBackward0'),
    ('x + 1', 'AddBackward0'),
    ('1 + x', 'AddBackward0'),
    ('x - y', 'SubBackward0'),
    ('x - 1', 'SubBackward0'),
    ('1 - x', 'RsubBackward1'),
    ('x * y', 'MulBackward0'),
    ('x * 2', 'MulBackward0'),
    ('x / y', 'DivBackward0'),
    ('x / 2', 'DivBackward0'),
    ('-x', 'NegBackward0'),
    ('x ** 2', 'PowBackward0'),
    ('x ** 0.5', 'PowBackward0'),
    ('x ** y', 'PowBackward1'),
    ('x ** s', 'PowBackward1'),
    ('2 ** x', 'PowBackward2'),
    ('m.pow(x, 2)', 'PowBackward0'),
    ('m.pow(2, x)', 'PowBackward2'),
    ('x.square()', 'PowBackward0'),
    ('x.sqrt()', 'SqrtBackward0'),
    ('x.abs()', 'AbsBackward0'),
    ('x.exp()', 'ExpBackward0'),
    ('x.log()', 'LogBackward0'),
    ('x.log1p()', 'Log1PBackward0'),
    ('x.expm1()', 'Expm1Backward0'),
    ('m.deg2rad(x)', 'Deg2RadBackward0'),
    ('m.rad2deg(x)', 'Rad2DegBackward0'),
    ('x.sin()', 'SinBackward0'),
    ('x.tanh()', 'TanhBackward0'),
    ('x.sigmoid()', 'SigmoidBackward0'),
    ('x.relu()', 'ReluBackward0'),
    ('x.frac()', 'FracBackward0'),
    ('m.nan_to_num(x)', 'NanToNumBackward0'),
    ('x % 0.7', 'RemainderBackward0'),
    ('m.remainder(x, y)', 'RemainderBackward1'),
    ('m.fmod(x, 0.7)', 'FmodBackward0'),
    ('m.fmod(x, y)', 'FmodBackward1'),
    ('m.copysign(x, y)', 'CopysignBackward0'),
    ('m.copysign(x, -1.0)', 'CopysignBackward1'),
    ('m.xlogy(x, y)', 'XlogyBackward0'),
    ('m.xlogy(2.0, x)', 'XlogyBackward1'),
    ('m.xlogy(x, 2.0)', 'XlogyBackward2'),
    ('x.round()', 'RoundBackward0'),
    ('x.round(decimals=1)', 'RoundBackward1'),
    ('x.floor()', 'FloorBackward0'),
    ("m.div(x, y, rounding_mode='trunc')", 'DivBackward2'),
    ("m.div(x, 2, rounding_mode='floor')", 'DivBackward2'),
    ('x.clamp(0.8, 1.2)', 'ClampBackward1'),
    ('x.clamp(min=0.8)', 'ClampBackward1'),
    ('x.clamp(min=s)', 'ClampBackward0'),
    ('m.clamp(x, y, y + 1)', 'ClampBackward0'),
    ('m.clamp_min(x, 0.8)', 'ClampMinBackward0'),
    ('m.clamp_max(x, 1.2)', 'ClampMaxBackward0'),
    ('m.clamp_min(x, s)', 'ClampMinBackward1'),
    ('m.maximum(x, y)', 'MaximumBackward0'),
    ('m.where(mask, x, y)', 'WhereBackward0'),
    ('x.to(m.float32)', 'ToCopyBackward0'),
    ('x.clone()', 'CloneBackward0'),
    ('z.conj()', 'ConjBackward0'),
    ('z.abs()', 'AbsBackward0'),
    ('x.sum()', 'SumBackward0'),
    ('x.sum(0)', 'SumBackward1'),
    ('x.sum((0, 1))', 'SumBackward1'),
    ('x.sum(1, keepdim=True)', 'SumBackward1'),
    ('x.mean()', 'MeanBackward0'),
    ('x.mean(0)', 'MeanBackward1'),
    ('x.prod()', 'ProdBackward0'),
    ('x.prod(1)', 'ProdBackward1'),
    ('x.max()', 'MaxBackward1'),
    ('x.min()', 'MinBackward1'),
    ('x.max(0)[0]', 'MaxBackward0'),
    ('x.min(1).values', 'MinBackward0'),
    ('x.amax()', 'AmaxBackward0'),
    ('x.amax(0)', 'AmaxBackward0'),
    ('x.var()', 'VarBackward0'),
    ('x.std(0)', 'StdBackward0'),
    ('x.logsumexp(0)', 'LogsumexpBackward0'),
    ('x.cumsum(1)', 'CumsumBackward0'),
    ('x.softmax(0)', 'SoftmaxBackward0'),
    ('x.log_softmax(1)', 'LogSoftmaxBackward0'),
    ('x.median()', 'MedianBackward0'),
    ('x.norm()', 'LinalgVectorNormBackward0'),
    ('m.linalg.vector_norm(x, dim=1)', 'LinalgVectorNormBackward0'),
    ('x.reshape(12)', 'ViewBackward0'),
    ('x.reshape(4, 3)', 'ViewBackward0'),
    ('x.view(2, 6)', 'ViewBackward0'),
    ('x.flatten()', 'ViewBackward0'),
    ('x.t().reshape(12)', 'UnsafeViewBackward0'),
    ('x.t().flatten()', 'UnsafeViewBackward0'),
    ('x.t().reshape(4, 3)', 'ReshapeAliasBackward0'),
    ('x.T', 'PermuteBackward0'),
    ('x.t()', 'TBackward0'),
    ('v.t()', 'TBackward0'),
    ('x.mT', 'TransposeBackward0'),
    ('x.transpose(0, 1)', 'TransposeBackward0'),
    ('b3.transpose(0, 2)', 'TransposeBackward0'),
    ('m.swapaxes(x, 0, 1)', 'TransposeBackward0'),
    ('x.permute(1, 0)', 'PermuteBackward0'),
    ('m.movedim(b3, 0, 2)', 'PermuteBackward0'),
    ('x.unsqueeze(0)', 'UnsqueezeBackward0'),
    ('x1.squeeze()', 'SqueezeBackward0'),
    ('x1.squeeze(0)', 'SqueezeBackward1'),
    ('x1.squeeze((0, 2))', 'SqueezeBackward2'),
    ('x.squeeze()', 'SqueezeBackward0'),
    ('x.squeeze(0)', 'SqueezeBackward1'),
    ('x.expand(2, 3, 4)', 'ExpandBackward0'),
    ('m.cat([x, y])', 'CatBackward0'),
    ('m.stack([x, y])', 'StackBackward0'),
    ('m.atleast_2d(v)', 'UnsqueezeBackward0'),
    ('m.atleast_3d(v)', 'UnsqueezeBackward0'),
    ('m.atleast_3d(x)', 'UnsqueezeBackward0'),
    ('x.split(2)[0]', 'SplitBackward0'),
    ('x.split([1, 2])[0]', 'SplitWithSizesBackward0'),
    ('x.chunk(2)[0]', 'SplitBackward0'),
    ('x.unbind()[0]', 'UnbindBackward0'),
    ('x.flip(0)', 'FlipBackward0'),
    ('x.roll(1, 0)', 'RollBackward0'),
    ('x.repeat(2, 1)', 'RepeatBackward0'),
    ('x.diagonal()', 'DiagonalBackward0'),
    ('m.diag_embed(v)', 'DiagEmbedBackward0'),
    ('x.triu()', 'TriuBackward0'),
    ('x.narrow(1, 0, 2)', 'SliceBackward0'),
    ('x[0]', 'SelectBackward0'),
    ('x[0, 1]', 'SelectBackward0'),
    ('x[1:]', 'SliceBackward0'),
    ('x[:, 1:]', 'SliceBackward0'),
    ('x[:]', 'SliceBackward0'),
    ('x[...]', 'AliasBackward0'),
    ('x[:, 0]', 'SelectBackward0'),
    ('x[..., 1]', 'SelectBackward0'),
    ('x[1:, 2]', 'SelectBackward0'),
    ('x[None]', 'UnsqueezeBackward0'),
    ('x[:, None]', 'UnsqueezeBackward0'),
    ('x[0, None]', 'UnsqueezeBackward0'),
    ('x[None, 0]', 'SelectBackward0'),
    ('x[idx]', 'IndexBackward0'),
    ('x[:, idx]', 'IndexBackward0'),
    ('x[mask]', 'IndexBackward0'),
    ('x[[0, 2]]', 'IndexBackward0'),
    ('x[idx, 0]', 'IndexBackward0'),
    ('m.select(x, 0, 1)', 'SelectBackward0'),
    ('m.gather(x, 0, ix)', 'GatherBackward0'),
    ('x @ c', 'MmBackward0'),
    ('m.mm(x, c)', 'MmBackward0'),
    ('v @ w', 'DotBackward0'),
    ('m.dot(v, w)', 'DotBackward0'),
    ('x @ v', 'MvBackward0'),
    ('m.mv(x, v)', 'MvBackward0'),
    ('v @ c', 'SqueezeBackward4'),
    ('b3 @ c', 'UnsafeViewBackward0'),
    ('b3 @ b3.mT', 'UnsafeViewBackward0'),
    ('b3 @ v', 'UnsafeViewBackward0'),
    ('x @ b3.mT', 'CloneBackward0'),
    ('m.bmm(b3, b3.transpose(1, 2))', 'BmmBackward0'),
    ('m.linalg.inv(sq)', 'LinalgInvExBackward0'),
    ('m.linalg.det(sq)', 'LinalgDetBackward0'),
    ('m.linalg.cholesky(sq)', 'LinalgCholeskyExBackward0'),
    ('m.fft.fft(v)', 'FftR2CBackward0'),
    ('m.fft.fft(z[0])', 'FftC2CBackward0'),
    ('m.fft.fft2(x)', 'FftC2CBackward0'),
    ('m.fft.rfft(v)', 'FftR2CBackward0'),
    ('m.fft.irfft(v)', 'FftC2RBackward0'),
]


@pytest.mark.parametrize(("expression", "name"), NAMES, ids=[e for e, _ in NAMES])
def test_grad_fn_name_is_torchs(expression, name):
    out = eval(expression, _env())  # noqa: S307 - the literal expressions above
    if isinstance(out, tuple):
        out = out[0]
    assert out.grad_fn.name() == name
    assert type(out.grad_fn).__name__ == name
    assert repr(out.grad_fn) == f"<{name} object>"


@pytest.mark.parametrize(("expression", "expected"), [
    ("x.t().sum(0)", [[1.0] * 4] * 3),
    ("(x.transpose(0, 1) * 2).sum(0)", [[2.0] * 4] * 3),
    ("x.t().reshape(12)[:4]", [[1.0, 1.0, 0.0, 0.0]] + [[1.0, 0.0, 0.0, 0.0]] * 2),  # (column-major order)
    ("x.max().reshape(1)", [[0.0] * 4] * 2 + [[0.0] * 3 + [1.0]]),
    ("x.min().reshape(1)", [[1.0] + [0.0] * 3] + [[0.0] * 4] * 2),
    ("m.clamp_min(x, 1.0)", [[0.0] * 4, [0.0, 0.0, 1.0, 1.0], [1.0] * 4]),
    ("m.clamp_max(x, 1.0)", [[1.0] * 4, [1.0, 1.0, 0.0, 0.0], [0.0] * 4]),
    ("x.unsqueeze(0).squeeze(0)[0]", [[1.0] * 4, [0.0] * 4, [0.0] * 4]),
    ("x.unsqueeze(0).squeeze((0,))[1:]", [[0.0] * 4, [1.0] * 4, [1.0] * 4]),
    ("m.cat(x.split(2))", [[1.0] * 4] * 3),
])
def test_overloads_have_the_gradients_of_their_op(expression, expected):
    env = _env()
    out = eval(expression, env)  # noqa: S307 - the literal expressions above
    (g,) = dg.grad(out.sum(), env["x"])
    np.testing.assert_array_equal(g.numpy(), expected)


def test_t_and_squeeze_return_views_even_when_nothing_moves():
    v = dg.ones(3, requires_grad=True)
    x = dg.ones(2, 3, requires_grad=True)
    for out, name in ((v.t(), "TBackward0"), (x.squeeze(), "SqueezeBackward0"), (x.squeeze(0), "SqueezeBackward1")):
        assert out is not v and out is not x and out.grad_fn.name() == name
    assert x.squeeze().shape == (2, 3) and v.t().shape == (3,)


def test_names_chosen_by_the_arguments_are_kept_by_the_node():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    nodes = [(x ** x).grad_fn, (2 ** x).grad_fn, (x ** 2).grad_fn]
    assert [n.name() for n in nodes] == ["PowBackward1", "PowBackward2", "PowBackward0"]
    assert [n.name() for n, _ in (1 - x).sum(0).grad_fn.next_functions] == ["RsubBackward1"]


def test_the_type_of_a_node_is_named_as_it_and_is_a_graph_node():
    # torch 2.13: type(y.grad_fn).__name__ == "SumBackward0" (module "builtins"); every node,
    # AccumulateGrad included, is an instance of torch.autograd.graph.Node
    x = dg.ones(2, requires_grad=True)
    y = (x * 2).sum()
    assert type(y.grad_fn).__name__ == "SumBackward0" and type(y.grad_fn).__module__ == "builtins"
    mul = y.grad_fn.next_functions[0][0]
    assert type(mul).__name__ == "MulBackward0"
    accumulate = mul.next_functions[0][0]
    assert isinstance(accumulate, dg.autograd.graph.Node) and isinstance(y.grad_fn, dg.graph.Node)
    assert issubclass(type(accumulate), dg.graph.Node) and issubclass(type(mul), dg.graph.Node)
    assert not isinstance(x, dg.graph.Node)
    assert type(dg.graph.get_gradient_edge(y).node).__name__ == "SumBackward0"
    assert type((x.exp() * 1).grad_fn) is type((x.sin() * 3).grad_fn)  # one class per name
    y.backward()  # nodes of named classes run as any other
    assert x.grad.tolist() == [2.0, 2.0]


def test_next_functions_list_the_inputs_the_op_can_differentiate():
    # torch 2.13: where's condition and gather's / index_select's index are not inputs of the node;
    # an input that could take a gradient but does not require one is (None, 0)
    x = dg.ones(3, requires_grad=True)
    condition, index = dg.tensor([True, False, True]), dg.tensor([0, 1])

    def names(t):
        return [(None if f is None else f.name(), nr) for f, nr in t.grad_fn.next_functions]

    assert names(dg.where(condition, x, x * 2)) == [("torch::autograd::AccumulateGrad", 0), ("MulBackward0", 0)]
    assert names(dg.where(condition, x, dg.zeros(3))) == [("torch::autograd::AccumulateGrad", 0), (None, 0)]
    assert names(dg.gather(x, 0, index)) == [("torch::autograd::AccumulateGrad", 0)]
    assert names(dg.index_select(x, 0, index)) == [("torch::autograd::AccumulateGrad", 0)]
    assert names(x * dg.ones(3)) == [("torch::autograd::AccumulateGrad", 0), (None, 0)]


# (expression, torch 2.13's next_functions of its grad_fn, as node names; None for (None, 0)).
# A Python number is an input of the node only for + - * / and where (torch wraps it as a tensor);
# other ops keep it as an attribute. ``2 * x`` and ``2 + x`` are ``x * 2`` and ``x + 2``.
_ACC = "torch::autograd::AccumulateGrad"
NEXT_FUNCTIONS = [
    ("x ** 2", (_ACC,)), ("2 ** x", (_ACC,)), ("x ** y", (_ACC, _ACC)), ("m.pow(x, 2)", (_ACC,)),
    ("2 - x", (_ACC,)), ("x - 2", (_ACC, None)), ("m.rsub(x, 2.0)", (_ACC,)), ("x / 2", (_ACC, None)),
    ("2 * x", (_ACC, None)), ("2 + x", (_ACC, None)), ("x * 2", (_ACC, None)), ("m.sub(x, 2, alpha=2)", (_ACC, None)),
    ("m.clamp(x, 0, 1)", (_ACC,)), ("m.clamp(x, min=0.0)", (_ACC,)), ("x.clamp_max(0.5)", (_ACC,)),
    ("x.masked_fill(mask, 0.5)", (_ACC,)), ("m.where(mask, x, 0.0)", (_ACC, None)),
    ("m.where(mask, 0.0, x)", (None, _ACC)), ("m.fmod(x, 2.0)", (_ACC,)), ("m.remainder(x, 2.0)", (_ACC,)),
    ("m.float_power(x, 2)", (_ACC,)), ("m.special.xlogy(x, 2.0)", (_ACC,)), ("m.special.xlogy(2.0, x)", (_ACC,)),
    ("m.copysign(x, -1.0)", (_ACC,)), ("x // 2", (_ACC,)), ("x.clone().mul_(2)", ("CloneBackward0", None)),
    ("x.clone().pow_(2)", ("CloneBackward0",)), ("x.clone().clamp_(0, 1)", ("CloneBackward0",)),
    ("x.clone().masked_fill_(mask, 0.5)", ("CloneBackward0",)), ("m.hypot(x, y)", (_ACC, _ACC)),
    # one node each, as torch's (they were composites: AddBackward0 of a MulBackward0)
    ("m.lerp(x, y, 0.5)", (_ACC, _ACC)), ("m.lerp(x, y, s)", (_ACC, _ACC, _ACC)),
    ("m.addcmul(x, y, x, value=2)", (_ACC, _ACC, _ACC)),
    ("m.addcdiv(x, y, x + 1, value=2)", (_ACC, _ACC, "AddBackward0")),
    ("m.add(x, y, alpha=2)", (_ACC, _ACC)), ("m.sub(x, y, alpha=2)", (_ACC, _ACC)),
    ("x.masked_fill(mask, s)", (_ACC, _ACC)), ("x.clone().fill_(s)", ("CloneBackward0", _ACC)),
    ("x.clone().fill_(0.5)", ("CloneBackward0",)), ("x.clone().zero_()", ("CloneBackward0",)),
]


@pytest.mark.parametrize(("expression", "expected"), NEXT_FUNCTIONS)
def test_next_functions_show_number_operands_as_torch(expression, expected):
    node = eval(expression, _env()).grad_fn
    assert tuple(None if f is None else f.name() for f, _ in node.next_functions) == expected


def test_copy_node_has_torchs_namespaced_name():
    """torch 2.13: ``name()`` 'torch::autograd::CopyBackwards'; its class and repr say CopyBackwards."""
    x = dg.tensor([0.3, 0.6], requires_grad=True)
    out = x.clone().copy_(x * 2)
    assert out.grad_fn.name() == "torch::autograd::CopyBackwards"
    assert type(out.grad_fn).__name__ == "CopyBackwards" and repr(out.grad_fn) == "<CopyBackwards object>"
    assert repr(out) == "tensor([0.6000, 1.2000], grad_fn=<CopyBackwards>)"
