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
        np.testing.assert_allclose(got[key], value, rtol=1e-10, atol=1e-12, err_msg=f"{name}: {key}")


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
    """Central differences agree with reverse mode for the inputs and the parameters of each layer."""
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

    assert dg.gradcheck(call, (*differentiable, *params), eps=1e-6, atol=1e-5, rtol=1e-4)


class _DualgradNamespace:
    lib = dg

    def __getattr__(self, name):
        return getattr(dg.nn, name)
