"""``nn.Module``, ``Parameter`` and the containers: registration, traversal, modes, state dicts, hooks, dtype
conversion and printing, with torch's reprs and errors."""

from __future__ import annotations

import copy
import re
from collections import OrderedDict

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1, 1)
        self.register_buffer("b", dg.zeros(2))
        self.register_buffer("c", None)
        self.register_buffer("scratch", dg.ones(1), persistent=False)
        self.d = None

    def forward(self, x):
        return self.a(x) + self.b.sum()


def test_parameter_is_a_marked_leaf_tensor():
    p = nn.Parameter(dg.tensor([1.0, 2.0]))
    assert isinstance(p, nn.Parameter) and isinstance(p, dg.Tensor) and p.is_leaf and p.requires_grad
    assert not isinstance(dg.tensor([1.0]), nn.Parameter) and not isinstance(3, nn.Parameter)
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(nn.Parameter(dg.ones(2), requires_grad=False)) == "Parameter containing:\ntensor([1., 1.])"
    assert repr(nn.Parameter(dg.ones(1, dtype=dg.float32))) == ("Parameter containing:\n"
                                                                "tensor([1.], dtype=float32, requires_grad=True)")
    assert not isinstance(p * 2, nn.Parameter) and not isinstance(p.detach(), nn.Parameter)
    assert isinstance(copy.deepcopy(p), nn.Parameter)
    assert nn.Parameter().shape == (0,)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(dg.tensor([1]))


def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["a.weight", "a.bias"]
    assert [n for n, _ in net.named_buffers()] == ["b", "scratch"]
    assert [n for n, _ in net.named_children()] == ["a"]
    assert [n for n, _ in net.named_modules()] == ["", "a"]
    assert list(net.children()) == [net.a] and list(net.modules()) == [net, net.a]
    assert [n for n, _ in net.named_parameters(prefix="net", recurse=False)] == []
    assert list(net.state_dict()) == ["b", "a.weight", "a.bias"]  # (non-persistent buffers are left out)
    assert net.d is None and net.c is None
    assert net.get_submodule("a") is net.a
    net.extra = nn.Parameter(dg.zeros(1))
    assert [n for n, _ in net.named_parameters()] == ["extra", "a.weight", "a.bias"]
    del net.extra
    assert "extra" not in dict(net.named_parameters())
    net.a = None
    assert list(net.children()) == [] and net.a is None


def test_shared_parameters_appear_once_unless_asked():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.Tanh(), shared)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_train_eval_requires_grad_zero_grad():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    assert net.training and net[1].training
    assert net.eval() is net and not net[1].training
    net.train()
    assert net[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("no")
    net(dg.ones(3, 2)).sum().backward()
    assert net[0].weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert net[0].weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    net.zero_grad()
    assert net[0].weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_visits_children_first():
    seen = []
    nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Tanh())).apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Tanh", "Sequential", "Sequential"]


def test_state_dict_round_trip_and_incompatible_keys():
    net, other = Net(), Net()
    state = net.state_dict()
    assert isinstance(state, OrderedDict) and not state["a.weight"].requires_grad
    assert net.state_dict(keep_vars=True)["a.weight"] is net.a.weight
    result = other.load_state_dict(state)
    assert repr(result) == "<All keys matched successfully>" and result == ([], [])
    assert other.a.weight.tolist() == net.a.weight.tolist() and isinstance(other.a.weight, nn.Parameter)
    partial = other.load_state_dict({"a.weight": dg.zeros(1, 1), "x": dg.zeros(1)}, strict=False)
    assert partial.missing_keys == ["b", "a.bias"] and partial.unexpected_keys == ["x"]
    assert repr(partial) == "_IncompatibleKeys(missing_keys=['b', 'a.bias'], unexpected_keys=['x'])"
    weight = other.a.weight
    other.load_state_dict({"a.weight": dg.full((1, 1), 7.0), "a.bias": dg.zeros(1), "b": dg.zeros(2)}, assign=True)
    assert other.a.weight is not weight and other.a.weight.item() == 7.0 and isinstance(other.a.weight, nn.Parameter)


@pytest.mark.parametrize("state, message", [
    ({"a.weight": dg.zeros(1, 1), "b": dg.zeros(2)}, '\tMissing key(s) in state_dict: "a.bias". '),
    ({"a.weight": dg.zeros(1, 1), "a.bias": dg.zeros(1), "b": dg.zeros(2), "x": dg.zeros(1), "y.z": dg.zeros(1)},
     '\tUnexpected key(s) in state_dict: "x", "y.z". '),
    ({"a.weight": dg.zeros(2, 1), "a.bias": dg.zeros(1), "b": dg.zeros(2)},
     "\tsize mismatch for a.weight: copying a param with shape torch.Size([2, 1]) from checkpoint, the shape in "
     "current model is torch.Size([1, 1])."),
    ({"a.weight": dg.zeros(2, 1), "a.bias": dg.zeros(1), "x": dg.zeros(2)},
     '\tMissing key(s) in state_dict: "b". \n\tUnexpected key(s) in state_dict: "x". \n\tsize mismatch for '
     "a.weight: copying a param with shape torch.Size([2, 1]) from checkpoint, the shape in current model is "
     "torch.Size([1, 1])."),
])
def test_load_state_dict_errors_are_torchs_and_change_nothing(state, message):
    net = Net()
    before = net.a.weight.item()
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    assert str(info.value) == "Error(s) in loading state_dict for Net:\n" + message
    assert net.a.weight.item() == before


def test_load_state_dict_rejects_non_mappings_and_non_tensors():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        Net().load_state_dict([])
    with pytest.raises(RuntimeError, match='While copying the parameter named "b", expected torch.Tensor or '
                                           "Tensor-like object from checkpoint but received <class 'int'>"):
        Net().load_state_dict({"a.weight": dg.zeros(1, 1), "a.bias": dg.zeros(1), "b": 3})


@pytest.mark.parametrize("action, error, message", [
    (lambda m: m.register_buffer("weight", dg.zeros(1)), KeyError, "attribute 'weight' already exists"),
    (lambda m: m.register_parameter("x.y", None), KeyError, "parameter name can't contain \".\""),
    (lambda m: m.register_buffer("", None), KeyError, "buffer name can't be empty string \"\""),
    (lambda m: m.register_buffer(3, None), TypeError, "buffer name should be a string. Got int"),
    (lambda m: setattr(m, "weight", dg.zeros(1)), TypeError,
     "cannot assign 'torch.DoubleTensor' as parameter 'weight' (torch.nn.Parameter or None expected)"),
    (lambda m: m.foo, AttributeError, "'Linear' object has no attribute 'foo'"),
    (lambda m: m.register_buffer("foo", 3), TypeError,
     "cannot assign 'int' object to buffer 'foo' (torch Tensor or None required)"),
    (lambda m: m.register_parameter("foo", dg.zeros(1)), TypeError,
     "cannot assign 'torch.DoubleTensor' object to parameter 'foo' (torch.nn.Parameter or None required)"),
    (lambda m: m.add_module("a", 3), TypeError, "int is not a Module subclass"),
    (lambda m: m.add_module("a.b", nn.Tanh()), KeyError, "module name can't contain \".\", got: a.b"),
    (lambda m: m.register_parameter("foo", nn.Parameter(dg.zeros(1)) * 2), TypeError,
     "cannot assign 'torch.DoubleTensor' object to parameter 'foo'"),
])
def test_registration_errors_are_torchs(action, error, message):
    module = nn.Linear(2, 2)
    with pytest.raises(error) as info:
        action(module)
    assert info.value.args[0].startswith(message)  # (a KeyError's str() quotes its message)
    assert [n for n, _ in module.named_parameters()] == ["weight", "bias"]


def test_assigning_before_init_and_missing_forward():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(dg.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(1)
    with pytest.raises(TypeError, match=re.escape("Module.__init__() takes 1 positional argument but 2 were given")):
        nn.Module(3)
    with pytest.raises(TypeError, match="Module.__init__\\(\\) got an unexpected keyword argument 'foo'"):
        nn.Module(foo=1)


def test_forward_hooks():
    layer = nn.Linear(1, 1)
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    post = layer.register_forward_hook(lambda m, args, out: calls.append((args[0].item(), out.shape)))
    first = layer.register_forward_hook(lambda m, args, out: calls.append("first"), prepend=True)
    layer(dg.ones(1, 1))
    assert calls == ["first", (2.0, (1, 1))]
    pre.remove(), post.remove(), first.remove()
    replaced = layer.register_forward_hook(lambda m, args, kwargs, out: out * 0 + len(kwargs), with_kwargs=True)
    assert layer(input=dg.ones(1, 1)).item() == 1.0
    replaced.remove()
    layer.register_forward_pre_hook(lambda m, args, kwargs: ((), {"input": dg.zeros(1, 1)}), with_kwargs=True)
    assert layer(dg.ones(1, 1)).item() == layer.bias.item()
    always = []
    bad = nn.Linear(3, 1)
    bad.register_forward_hook(lambda m, args, out: always.append(out), always_call=True)
    with pytest.raises(RuntimeError, match="mat1 and mat2"):
        bad(dg.ones(1, 2))
    assert always == [None]


def test_to_dtype_keeps_parameters_and_integer_buffers():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    weight = net[0].weight
    net(dg.randn(4, 2)).sum().backward()
    assert net.float() is net
    assert net[0].weight is weight and weight.dtype == dg.float32 and weight.grad.dtype == dg.float32
    assert net[1].running_mean.dtype == dg.float32 and net[1].num_batches_tracked.dtype == dg.int64
    assert net(dg.ones(4, 2, dtype=dg.float32)).dtype == dg.float32
    net.to(dtype=dg.float64)
    assert weight.dtype == dg.float64 and net[1].running_var.dtype == dg.float64
    net.to(dg.float32).double()
    assert weight.dtype == dg.float64 and isinstance(net[0].weight, nn.Parameter)
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got "
                                        "desired dtype=int64"):
        net.to(dg.int64)


def test_reprs_are_torchs():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.ModuleList([nn.Tanh(), nn.Tanh(), nn.ReLU()]),
                        nn.ModuleDict({"a": nn.Tanh()}), nn.Sequential(), nn.ModuleList())
    assert repr(net) == """Sequential(
  (0): Linear(in_features=2, out_features=3, bias=True)
  (1): ReLU()
  (2): ModuleList(
    (0-1): 2 x Tanh()
    (2): ReLU()
  )
  (3): ModuleDict(
    (a): Tanh()
  )
  (4): Sequential()
  (5): ModuleList()
)"""
    assert repr(Net()) == "Net(\n  (a): Linear(in_features=1, out_features=1, bias=True)\n)"

    class WithExtra(nn.Module):
        def extra_repr(self):
            return "one\ntwo"

    assert repr(WithExtra()) == "WithExtra(\n  one\n  two\n)"


LAYER_REPRS = [
    (lambda: nn.Conv2d(1, 2, 3, stride=2, padding=1, bias=False),
     "Conv2d(1, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"),
    (lambda: nn.Conv1d(2, 4, 3, padding="same", dilation=2, groups=2),
     "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same, dilation=(2,), groups=2)"),
    (lambda: nn.Conv2d(1, 1, 2, padding_mode="reflect", padding=1),
     "Conv2d(1, 1, kernel_size=(2, 2), stride=(1, 1), padding=(1, 1), padding_mode=reflect)"),
    (lambda: nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (lambda: nn.MaxPool2d(2, 1, 1, 2, ceil_mode=True),
     "MaxPool2d(kernel_size=2, stride=1, padding=1, dilation=2, ceil_mode=True)"),
    (lambda: nn.AvgPool2d(3, stride=1), "AvgPool2d(kernel_size=3, stride=1, padding=0)"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (lambda: nn.Unflatten(1, (2, 2)), "Unflatten(dim=1, unflattened_size=(2, 2))"),
    (lambda: nn.Dropout(0.2), "Dropout(p=0.2, inplace=False)"),
    (lambda: nn.LayerNorm(4), "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (lambda: nn.LayerNorm((2, 3), elementwise_affine=False),
     "LayerNorm((2, 3), eps=1e-05, elementwise_affine=False, bias=False)"),
    (lambda: nn.BatchNorm1d(3),
     "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (lambda: nn.BatchNorm2d(4, momentum=None, affine=False, track_running_stats=False),
     "BatchNorm2d(4, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=False)"),
    (lambda: nn.Embedding(10, 3, padding_idx=0), "Embedding(10, 3, padding_idx=0)"),
    (lambda: nn.Embedding(3, 2), "Embedding(3, 2)"),
    (lambda: nn.Bilinear(2, 3, 4), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"),
    (lambda: nn.Linear(2, 3, bias=False), "Linear(in_features=2, out_features=3, bias=False)"),
    (lambda: nn.GELU(), "GELU(approximate='none')"),
    (lambda: nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (lambda: nn.SiLU(), "SiLU()"),
    (lambda: nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda: nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"),
    (lambda: nn.ELU(0.5), "ELU(alpha=0.5)"),
    (lambda: nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (lambda: nn.Softmax(dim=1), "Softmax(dim=1)"),
    (lambda: nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
    (lambda: nn.Softmax(), "Softmax(dim=None)"),
    (lambda: nn.ReLU(inplace=True), "ReLU(inplace=True)"),
    (lambda: nn.Identity(), "Identity()"),
    (lambda: nn.Tanh(), "Tanh()"),
    (lambda: nn.Sigmoid(), "Sigmoid()"),
    (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), "CrossEntropyLoss()"),
    (lambda: nn.BCEWithLogitsLoss(), "BCEWithLogitsLoss()"),
]


@pytest.mark.parametrize("build, expected", LAYER_REPRS, ids=[r for _, r in LAYER_REPRS])
def test_layer_repr(build, expected):
    assert repr(build()) == expected


def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.Linear(1, 2), nn.Tanh(), nn.Linear(2, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b] and head(dg.ones(1, 1)).shape == (1, 2)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    seq.append(nn.ReLU())
    assert len(seq) == 4 and [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"] and seq[1] is c
    seq.insert(1, b)
    assert seq[1] is b and seq.pop(1) is b and len(seq) == 3
    named = nn.Sequential(OrderedDict([("first", a), ("act", b)]))
    assert named.first is a and [n for n, _ in named.named_children()] == ["first", "act"]
    assert named[1:].act is b


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(list(layers.parameters())) == 6 and isinstance(layers[1:], nn.ModuleList)
    layers.append(nn.Tanh())
    layers += [nn.ReLU()]
    assert len(layers) == 5 and isinstance(layers[-1], nn.ReLU)
    layers.insert(0, nn.Identity())
    assert isinstance(layers[0], nn.Identity) and len(layers) == 6
    del layers[0]
    assert isinstance(layers[0], nn.Linear)
    heads = nn.ModuleDict({"a": nn.Tanh()})
    heads["b"] = nn.Linear(1, 1)
    heads.update([("c", nn.ReLU())])
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(list(heads.parameters())) == 2
    assert heads.pop("a").__class__ is nn.Tanh and list(heads.keys()) == ["b", "c"]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got Tanh"):
        layers.extend(nn.Tanh())


def test_buffer_assignment_and_nn_buffer():
    m = nn.Module()
    m.register_buffer("steps", dg.zeros(1))
    m.steps = dg.ones(1)
    assert m.steps.tolist() == [1.0] and list(m.state_dict()) == ["steps"]
    with pytest.raises(TypeError, match=re.escape("cannot assign 'int' as buffer 'steps' "
                                                  "(torch.Tensor or None expected)")):
        m.steps = 3
    m.hidden = nn.Buffer(dg.zeros(2), persistent=False)
    assert [n for n, _ in m.named_buffers()] == ["steps", "hidden"] and list(m.state_dict()) == ["steps"]


def test_deepcopy_gives_an_independent_module():
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    clone = copy.deepcopy(net)
    with dg.no_grad():
        clone[0].weight.fill_(0.0)
    assert not np.all(net[0].weight.detach().numpy() == 0)
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight.requires_grad


def _parameters(f):
    import inspect

    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):  # (torch's functions implemented in C have none)
        return None
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        return None  # (a dispatching wrapper's ``(*args, **kwargs)``)
    return [(p.name, p.kind, p.default) for p in signature.parameters.values() if p.name not in ("self", "args")]


def test_signatures_are_torchs():
    """Constructor, forward and functional signatures as torch 2.13's (where torch has a Python signature)."""
    torch = pytest.importorskip("torch")
    pairs = []
    for name in nn.__all__:
        if name in ("functional", "init", "utils"):
            continue
        ours, theirs = getattr(nn, name), getattr(torch.nn, name)
        pairs.append((f"nn.{name}", ours.__init__, theirs.__init__))
        if name not in ("Module", "ModuleList", "ModuleDict", "Parameter", "Buffer", "ParameterList", "ParameterDict"):
            pairs.append((f"nn.{name}.forward", ours.forward, theirs.forward))
    for module in ("functional", "init", "utils"):
        for name in getattr(nn, module).__all__:
            pairs.append((f"nn.{module}.{name}", getattr(getattr(nn, module), name),
                          getattr(getattr(torch.nn, module), name)))
    for name in ("named_parameters", "parameters", "named_buffers", "buffers", "children", "named_children", "modules",
                 "named_modules", "train", "eval", "zero_grad", "state_dict", "load_state_dict", "register_buffer",
                 "register_parameter", "add_module", "register_module", "apply", "register_forward_pre_hook",
                 "register_forward_hook", "requires_grad_", "double", "float", "extra_repr", "get_submodule"):
        pairs.append((f"Module.{name}", getattr(nn.Module, name), getattr(torch.nn.Module, name)))
    for name in ("functional_call", "stack_module_state"):
        pairs.append((f"func.{name}", getattr(dg.func, name), getattr(torch.func, name)))
    different = [name for name, ours, theirs in pairs
                 if _parameters(theirs) is not None and _parameters(ours) != _parameters(theirs)]
    assert not different


def test_parameter_list_and_dict():
    owner = nn.Module()
    owner.params = nn.ParameterList([nn.Parameter(dg.zeros(2, 3)), dg.ones(3, dtype=dg.float32)])
    assert [n for n, _ in owner.named_parameters()] == ["params.0", "params.1"]
    assert isinstance(owner.params[1], nn.Parameter) and owner.params[1].requires_grad
    owner.params.append(dg.zeros(1))
    owner.params += [dg.zeros(2)]
    assert len(owner.params) == 4 and owner.params[-1].shape == (2,) and len(owner.params[1:3]) == 2
    assert repr(owner.params) == ("ParameterList(\n    (0): Parameter containing: [float64 of size 2x3]\n"
                                  "    (1): Parameter containing: [float32 of size 3]\n"
                                  "    (2): Parameter containing: [float64 of size 1]\n"
                                  "    (3): Parameter containing: [float64 of size 2]\n)")
    with pytest.raises(IndexError, match="index 4 is out of range"):
        owner.params[4]
    owner.table = nn.ParameterDict({"a": nn.Parameter(dg.zeros(2)), "b": dg.ones(1)})
    assert list(owner.table.state_dict()) == ["a", "b"] and isinstance(owner.table["b"], nn.Parameter)
    assert repr(owner.table) == ("ParameterDict(\n    (a): Parameter containing: [torch.DoubleTensor of size 2]\n"
                                 "    (b): Parameter containing: [torch.DoubleTensor of size 1]\n)")
    assert "a" in owner.table and owner.table.pop("a").shape == (2,) and list(owner.table) == ["b"]
    assert repr(nn.ParameterList()) == "ParameterList()" and repr(nn.ParameterDict()) == "ParameterDict()"
    with pytest.raises(KeyError):
        owner.table["missing"]


def test_pickled_modules_keep_their_parameters():
    import pickle

    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    clone = pickle.loads(pickle.dumps(net))
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight.requires_grad
    assert clone[0].weight.tolist() == net[0].weight.tolist() and clone[1].num_batches_tracked.item() == 0
    assert repr(clone) == repr(net)
