"""Namespaces (issue 2, item 7): top-level functions, and ``dualgrad.autograd`` mirroring torch.autograd."""

from __future__ import annotations

import importlib

import pytest

import dualgrad as dg
from dualgrad import autograd

# torch.autograd names that code ports use, all present in dualgrad.autograd.
AUTOGRAD_NAMES = [
    "Function", "Variable", "backward", "detect_anomaly", "enable_grad", "forward_ad", "functional",
    "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode", "no_grad", "profiler",
    "set_detect_anomaly", "set_grad_enabled",
]
TOP_LEVEL = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
             "is_grad_enabled", "is_inference_mode_enabled", "Variable", "Tensor", "manual_seed",
             "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]  # (torch.is_anomaly_enabled, ...)


@pytest.mark.parametrize("name", AUTOGRAD_NAMES)
def test_autograd_mirrors_torch_autograd(name):
    assert hasattr(autograd, name)


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_functions_live_at_the_top_level(name):
    assert hasattr(dg, name)


def test_autograd_and_top_level_are_the_same_objects():
    for name in ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
                 "Variable", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]:
        assert getattr(autograd, name) is getattr(dg, name)


def test_autograd_all_is_importable():
    for name in autograd.__all__:
        assert hasattr(autograd, name), name


@pytest.mark.parametrize("module", ["dualgrad.autograd.graph", "dualgrad.autograd.profiler",
                                    "dualgrad.autograd.gradcheck", "dualgrad.autograd.forward_ad",
                                    "dualgrad.autograd.function", "dualgrad.autograd.functional",
                                    "dualgrad.autograd.grad_mode", "dualgrad.autograd.anomaly_mode"])
def test_torch_style_submodule_imports(module):
    imported = importlib.import_module(module)
    attribute = getattr(autograd, module.rpartition(".")[2])
    assert imported is (attribute if module != "dualgrad.autograd.gradcheck" else importlib.import_module(
        attribute.__module__))  # as in torch, ``autograd.gradcheck`` is the function


def test_forward_ad_imported_as_in_the_torch_tutorial():
    import dualgrad.autograd.forward_ad as fwAD  # the forward-mode AD tutorial's import

    with fwAD.dual_level():
        dual = fwAD.make_dual(dg.tensor([1., 2.]), dg.tensor([1., 0.]))
        assert fwAD.unpack_dual(dual * dual).tangent.tolist() == [2., 0.]


def test_set_multithreading_enabled_is_a_recorded_mode():
    assert autograd.is_multithreading_enabled()
    with autograd.set_multithreading_enabled(False):
        assert not autograd.is_multithreading_enabled()
        x = dg.ones(2, requires_grad=True)
        (x * 3).sum().backward()
    assert autograd.is_multithreading_enabled()
    assert x.grad.tolist() == [3., 3.]


def test_set_multithreading_enabled_switches_on_a_plain_call_as_set_grad_enabled():
    switch = autograd.set_multithreading_enabled(False)
    try:
        assert not autograd.is_multithreading_enabled()
        assert repr(switch).endswith("set_multithreading_enabled(mode=False)")
        with autograd.set_multithreading_enabled(True):
            assert autograd.is_multithreading_enabled()
        assert not autograd.is_multithreading_enabled()  # leaving the block restores the mode before it

        @autograd.set_multithreading_enabled(True)
        def inside():
            return autograd.is_multithreading_enabled()

        assert not autograd.is_multithreading_enabled()  # decorating does not switch it
        assert inside() and not autograd.is_multithreading_enabled()
    finally:
        autograd.set_multithreading_enabled(True)


def test_ported_torch_autograd_code_runs():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with autograd.set_grad_enabled(True):
        (gx,) = autograd.grad((x ** 2).sum(), x, create_graph=True)
    autograd.backward(gx.sum())
    assert x.grad.tolist() == [2.0, 2.0]
