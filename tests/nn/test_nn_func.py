"""``functional_call`` and ``stack_module_state`` with ``grad``, ``vmap``, ``jacrev`` and ``hessian``: the
patterns of torch.func's tutorials (per-sample gradients, model ensembling, neural tangent kernels) against
Python loops, and torch's errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.nn.functional as F
from dualgrad import nn
from dualgrad.func import functional_call, grad, hessian, jacrev, stack_module_state, vmap


class SmallCNN(nn.Module):
    """The per-sample-gradients tutorial's network, smaller."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.fc = nn.Linear(3 * 3 * 3, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return F.log_softmax(self.fc(dg.flatten(x, 1)), dim=1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.norm = nn.LayerNorm(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def test_functional_call_uses_the_given_tensors_and_restores_the_module():
    model = nn.Linear(2, 1)
    weight, bias = model.weight, model.bias
    w = dg.tensor([[1.0, 2.0]])
    out = functional_call(model, {"weight": w, "bias": dg.tensor([0.5])}, (dg.tensor([[1.0, 1.0]]),))
    assert out.tolist() == [[3.5]]
    assert model.weight is weight and model.bias is bias
    # names not given keep the module's own tensors; args may be a single tensor
    out = functional_call(model, {"weight": w}, dg.tensor([[1.0, 1.0]]))
    np.testing.assert_allclose(out.detach().numpy(), [[3.0 + bias.item()]])


def test_functional_call_restores_the_module_when_the_call_raises():
    model = nn.Linear(2, 1)
    weight = model.weight
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        functional_call(model, {"weight": dg.zeros(1, 3)}, (dg.ones(1, 2),))
    assert model.weight is weight


def test_functional_call_with_a_tuple_of_dicts_and_kwargs():
    model = nn.BatchNorm1d(2).eval()
    params = dict(model.named_parameters())
    buffers = {"running_mean": dg.tensor([1.0, 2.0]), "running_var": dg.tensor([4.0, 1.0]),
               "num_batches_tracked": dg.tensor(0)}
    out = functional_call(model, (params, buffers), args=(), kwargs={"input": dg.tensor([[3.0, 3.0]])})
    np.testing.assert_allclose(out.detach().numpy(), [[2 / np.sqrt(4 + 1e-5), 1 / np.sqrt(1 + 1e-5)]])
    assert model.running_mean.tolist() == [0.0, 0.0]


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    model = Tied()
    w = dg.eye(2) * 2
    assert functional_call(model, {"a.weight": w}, (dg.ones(1, 2),)).tolist() == [[4.0, 4.0]]
    assert functional_call(model, {"a.weight": w}, (dg.ones(1, 2),), strict=True).tolist() == [[4.0, 4.0]]
    untied = functional_call(model, {"a.weight": w}, (dg.ones(1, 2),), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), (dg.ones(1, 2) @ (w @ model.a.weight.mT)).detach().numpy())
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys \['a.weight', 'b.weight'\], "
                                         r"which are tied. Consider using tie_weights=False"):
        functional_call(model, {"a.weight": w, "b.weight": w * 3}, (dg.ones(1, 2),))


def test_functional_call_errors_are_torchs():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    x = dg.ones(4, 2)
    with pytest.raises(AttributeError, match="Sequential has no attribute `5`"):
        functional_call(model, {"5.weight": dg.zeros(1)}, (x,))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Sequential:\n\tMissing key\(s\): "
                                           r"'0.bias', '1.bias', '1.num_batches_tracked', '1.running_mean', "
                                           r"'1.running_var', '1.weight'.$"):
        functional_call(model, {"0.weight": dg.zeros(3, 2)}, (x,), strict=True)
    with pytest.raises(RuntimeError, match=r"\n\tUnexpected key\(s\): 'zz'.\n\tMissing key\(s\): '0.bias'"):
        functional_call(model, {"0.weight": dg.zeros(3, 2), "zz": dg.zeros(1)}, (x,), strict=True)
    with pytest.raises(ValueError, match=r"\['0.weight'\] appeared in multiple dictionaries; behavior of functional "
                                         "call is ambiguous"):
        functional_call(model, ({"0.weight": dg.zeros(3, 2)}, {"0.weight": dg.zeros(3, 2)}), (x,))
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                                         "dicts, but got <class 'int'>"):
        functional_call(model, 3, (x,))
    assert model[0].weight.shape == (3, 2) and isinstance(model[0].weight, nn.Parameter)


def test_per_sample_gradients_match_a_loop():
    """torch.func's per-sample-gradients tutorial: vmap(grad(loss of functional_call))."""
    dg.manual_seed(0)
    model = SmallCNN()
    data, targets = dg.randn(5, 1, 8, 8), dg.tensor([0, 3, 1, 1, 2])
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))

    per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    for i in range(5):
        model.zero_grad()
        F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(per_sample[name][i].numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_model_ensembling_matches_a_loop():
    """torch.func's ensembling tutorial: stack_module_state + vmap(functional_call)."""
    dg.manual_seed(1)
    models = [MLP() for _ in range(4)]
    minibatches = dg.randn(4, 6, 5)
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    different = vmap(fmodel)(params, buffers, minibatches)
    same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatches[0])
    for i, m in enumerate(models):
        np.testing.assert_allclose(different[i].detach().numpy(), m(minibatches[i]).detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(same[i].detach().numpy(), m(minibatches[0]).detach().numpy(), rtol=1e-12)
    # gradients of an ensemble loss reach the stacked leaves
    vmap(fmodel)(params, buffers, minibatches).sum().backward()
    assert params["fc1.weight"].grad.shape == (4, 8, 5)


def test_stack_module_state():
    models = [nn.BatchNorm1d(2) for _ in range(3)]
    models[1].running_mean.fill_(1.0)
    params, buffers = stack_module_state(models)
    assert list(params) == ["weight", "bias"] and list(buffers) == ["running_mean", "running_var",
                                                                    "num_batches_tracked"]
    assert params["weight"].shape == (3, 2) and params["weight"].is_leaf and params["weight"].requires_grad
    assert buffers["running_mean"][:, 0].tolist() == [0.0, 1.0, 0.0] and not buffers["running_mean"].requires_grad
    assert buffers["num_batches_tracked"].shape == (3,)
    for m in models:
        m.bias.requires_grad_(False)
    params, _ = stack_module_state(models)
    assert params["weight"].requires_grad and not params["bias"].requires_grad
    models[0].weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match=r"Expected weight from each model to have the same \.requires_grad"):
        stack_module_state(models)


@pytest.mark.parametrize("models, message", [
    ([], "stack_module_state: Expected at least one model, got 0."),
    ([nn.Linear(1, 1), nn.Tanh()], "stack_module_state: Expected all models to be of the same class."),
    ([nn.Linear(1, 1), nn.Linear(1, 1).eval()], "stack_module_state: Expected all models to have the same "
                                                "training/eval mode."),
])
def test_stack_module_state_errors(models, message):
    with pytest.raises(RuntimeError, match=message.replace(".", r"\.").replace("/", "/")):
        stack_module_state(models)


def test_neural_tangent_kernel_matches_a_loop():
    """torch.func's NTK tutorial: vmap(jacrev(f)) over two batches, contracted over the parameters."""
    dg.manual_seed(2)
    net = MLP()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x1, x2 = dg.randn(3, 5), dg.randn(2, 5)

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    jac1 = [j.flatten(2) for j in vmap(jacrev(fnet_single), (None, 0))(params, x1).values()]
    jac2 = [j.flatten(2) for j in vmap(jacrev(fnet_single), (None, 0))(params, x2).values()]
    ntk = dg.stack([dg.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2, strict=True)]).sum(0)

    def jacobian(x):  # rows: outputs; columns: all parameters, one backward per output
        rows = []
        for a in range(3):
            net.zero_grad()
            net(x.unsqueeze(0))[0, a].backward()
            rows.append(np.concatenate([p.grad.numpy().ravel() for p in net.parameters()]))
        return np.stack(rows)

    expected = np.array([[jacobian(a) @ jacobian(b).T for b in x2] for a in x1])
    np.testing.assert_allclose(ntk.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_hessian_of_a_loss_in_the_parameters():
    model = nn.Linear(3, 1)
    x, y = dg.randn(6, 3), dg.randn(6, 1)

    def loss(weight):
        return F.mse_loss(functional_call(model, {"weight": weight}, (x,)), y)

    h = hessian(loss)(model.weight.detach())
    expected = (2 / 6) * (x.mT @ x)  # d^2/dw^2 of mean((x w^T + b - y)^2)
    np.testing.assert_allclose(h.reshape(3, 3).numpy(), expected.numpy(), rtol=1e-12)


def test_grad_through_conv_and_batch_norm_under_vmap():
    model = nn.Sequential(nn.Conv1d(2, 3, 3, padding=1), nn.BatchNorm1d(3), nn.Tanh(), nn.Flatten(), nn.Linear(12, 1))
    model.eval()
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    data = dg.randn(4, 2, 4)

    def loss(params, x):
        return functional_call(model, (params, buffers), (x.unsqueeze(0),)).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))(params, data)
    for i in range(4):
        model.zero_grad()
        model(data[i:i + 1]).sum().backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(per_sample[name][i].numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_forward_and_reverse_mode_agree_through_a_model():
    """jacfwd (forward mode) == jacrev (reverse mode) of a model's output in its parameters and inputs."""
    from dualgrad.func import jacfwd

    dg.manual_seed(3)
    model = nn.Sequential(nn.Conv1d(1, 2, 3, padding="same"), nn.GELU(), nn.AvgPool1d(2), nn.Flatten(),
                          nn.Linear(8, 2), nn.LayerNorm(2), nn.SiLU())
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = dg.randn(3, 1, 8)

    def f(params, x):
        return functional_call(model, params, (x,))

    forward, reverse = jacfwd(f, argnums=(0, 1))(params, x), jacrev(f, argnums=(0, 1))(params, x)
    for name in params:
        np.testing.assert_allclose(forward[0][name].numpy(), reverse[0][name].numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(forward[1].numpy(), reverse[1].numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("build, shape", [
    (lambda: nn.Conv2d(1, 2, 2, stride=1, padding=1), (1, 1, 3, 3)),
    (lambda: nn.Sequential(nn.Linear(3, 3), nn.ELU(), nn.LayerNorm(3)), (2, 3)),
    (lambda: nn.Sequential(nn.Linear(3, 4), nn.Softplus(), nn.LogSoftmax(1)), (2, 3)),
    (lambda: nn.MaxPool2d(2, padding=1), (1, 1, 3, 3)),
])
def test_second_derivatives_of_layers(build, shape):
    """gradgradcheck in the input and the parameters (the rules are differentiable again)."""
    model = build()
    names = [n for n, _ in model.named_parameters()]
    params = [p.detach().clone().requires_grad_() for _, p in model.named_parameters()]
    x = dg.randn(*shape, requires_grad=True)

    def call(x, *ps):
        return functional_call(model, dict(zip(names, ps, strict=True)), (x,))

    assert dg.gradgradcheck(call, (x, *params), eps=1e-6, atol=1e-5, rtol=1e-4)
