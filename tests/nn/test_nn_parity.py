"""Every layer, loss and functional form of ``dualgrad.nn`` against torch 2.13 in float64: outputs, gradients
with respect to inputs and parameters, and buffers (BatchNorm's running statistics) after the call; and a
``gradcheck`` of every layer with respect to its inputs and parameters (through ``functional_call``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from nn_cases import CASES, REFERENCE, draw, reference, run

import dualgrad as dg
from dualgrad.func import functional_call

try:
    import torch  # noqa: F401 - a test-only reference
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's own deprecation warnings)
        expected = reference(name)
    got = run(dg, name)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        np.testing.assert_allclose(got[key], value, rtol=CASES[name].get("rtol", 1e-10), atol=1e-12,
                                   err_msg=f"{name}: {key}")


@pytest.mark.skipif(not HAVE_TORCH, reason="the pinned numbers are checked against torch when it is installed")
def test_pinned_numbers_are_torchs():
    import torch

    with np.load(REFERENCE) as data:
        pinned = {k: data[k] for k in data.files}
    for name in CASES:
        for key, value in run(torch, name).items():
            np.testing.assert_allclose(pinned[f"{name}/{key}"], value, rtol=1e-12, atol=1e-14)


# (Embedding's padding row gets no gradient by definition, although the output depends on it)
MODULE_CASES = [name for name, case in CASES.items() if "module" in case and name != "Embedding_padding"]


@pytest.mark.parametrize("name", MODULE_CASES)
def test_gradcheck_layer(name):
    """Central differences agree with reverse and forward mode for the inputs and the parameters of each layer."""
    case = CASES[name]
    rng = np.random.default_rng(1)
    arrays = [draw(spec, rng) for spec in case["inputs"]]
    module = case["module"](_DualgradNamespace()).train(case["train"])
    names = [n for n, _ in module.named_parameters()]
    params = [p.detach().clone().requires_grad_() for _, p in module.named_parameters()]
    inputs = [dg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    if name.startswith(("BCELoss", "CrossEntropyLoss_probs")):
        inputs = [inputs[0], inputs[1].detach()]  # (targets on the simplex / in (0, 1): perturbed, they leave it)
    differentiable = [t for t in inputs if t.requires_grad]

    def call(*tensors):
        given = dict(zip(names, tensors[len(differentiable):], strict=True))
        it = iter(tensors[:len(differentiable)])
        args = [next(it) if t.requires_grad else t for t in inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return functional_call(module, given, tuple(args))

    if name.startswith("BatchNorm") and case["train"]:
        # running statistics change at every call: check the output on a copy whose buffers are reset each time
        buffers = {k: v.clone() for k, v in module.named_buffers()}

        def call(*tensors, _inner=call):  # noqa: F811 - the same call, from the same buffers each time
            with dg.no_grad():
                for k, v in module.named_buffers():
                    v.copy_(buffers[k])
            return _inner(*tensors)

    assert dg.gradcheck(call, (*differentiable, *params), eps=1e-6, atol=1e-5, rtol=1e-4, check_forward_ad=True)


class _DualgradNamespace:
    lib = dg

    def __getattr__(self, name):
        return getattr(dg.nn, name)


def _conv_and_pool_configs(count: int) -> list[dict]:
    rng = np.random.default_rng(0)
    configs = []
    for _ in range(count):
        nd, groups = int(rng.integers(1, 3)), int(rng.choice([1, 2]))
        kernel, stride, dilation = (tuple(int(v) for v in rng.integers(1, 4, nd)),
                                    tuple(int(v) for v in rng.integers(1, 3, nd)),
                                    tuple(int(v) for v in rng.integers(1, 3, nd)))
        padding = tuple(int(v) for v in rng.integers(0, 3, nd))
        if rng.random() < 0.3:
            padding = "same" if all(v == 1 for v in stride) else "valid"
        pool_kernel = tuple(int(v) for v in rng.integers(1, 4, nd))
        configs.append({
            "nd": nd, "groups": groups, "kernel": kernel, "stride": stride, "dilation": dilation,
            "padding": padding, "in": groups * int(rng.integers(1, 3)), "out": groups * int(rng.integers(1, 3)),
            "size": tuple(int(v) for v in rng.integers(max(kernel) * max(dilation), 9, nd)),
            "pool_kernel": pool_kernel, "pool_padding": tuple(int(rng.integers(0, k // 2 + 1)) for k in pool_kernel),
            "ceil_mode": bool(rng.random() < 0.5), "count_include_pad": bool(rng.random() < 0.5)})
    return configs


@pytest.mark.skipif(not HAVE_TORCH, reason="compares with torch")
@pytest.mark.parametrize("config", _conv_and_pool_configs(40))
def test_random_convolutions_and_pools_match_torch(config):
    """Random strides, paddings (numbers, 'same', 'valid'), dilations, groups and ceil modes: values and
    gradients as torch's, and errors where torch raises."""
    import torch

    c, nd = config, config["nd"]
    rng = np.random.default_rng(len(str(config)))
    x = rng.standard_normal((2, c["in"], *c["size"]))
    w = rng.standard_normal((c["out"], c["in"] // c["groups"], *c["kernel"]))
    b = rng.standard_normal(c["out"])
    calls = [
        (lambda F, x, w, b: getattr(F, f"conv{nd}d")(x, w, b, c["stride"], c["padding"], c["dilation"], c["groups"]),
         [x, w, b]),
        (lambda F, x: getattr(F, f"max_pool{nd}d")(x, c["pool_kernel"], c["stride"], c["pool_padding"],
                                                   c["dilation"], c["ceil_mode"]), [x]),
        (lambda F, x: getattr(F, f"avg_pool{nd}d")(x, c["pool_kernel"], c["stride"], c["pool_padding"],
                                                   c["ceil_mode"], c["count_include_pad"]), [x]),
    ]
    for call, arrays in calls:
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        ours = [dg.tensor(a, requires_grad=True) for a in arrays]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = call(torch.nn.functional, *theirs)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                call(dg.nn.functional, *ours)
            continue
        got = call(dg.nn.functional, *ours)
        cotangent = rng.standard_normal(tuple(expected.shape))
        (expected * torch.tensor(cotangent)).sum().backward()
        (got * dg.tensor(cotangent)).sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-12)
        for a, t in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), atol=1e-12)


# (embedding's padding row gets no gradient by definition; pos_weight is used detached, as torch requires)
FUNCTION_CASES = [name for name, case in CASES.items() if "function" in case
                  and name not in ("F.embedding", "F.binary_cross_entropy_with_logits")]


@pytest.mark.parametrize("name", FUNCTION_CASES)
def test_gradcheck_functional(name):
    """Central differences agree with reverse and forward mode for each functional form."""
    case = CASES[name]
    rng = np.random.default_rng(2)
    inputs = [dg.tensor(a, requires_grad=a.dtype.kind == "f") for a in (draw(s, rng) for s in case["inputs"])]
    differentiable = [t for t in inputs if t.requires_grad]

    def call(*tensors):
        it = iter(tensors)
        return case["function"](dg.nn.functional, *[next(it) if t.requires_grad else t for t in inputs])

    assert dg.gradcheck(call, tuple(differentiable), eps=1e-6, atol=1e-5, rtol=1e-4, check_forward_ad=True)
