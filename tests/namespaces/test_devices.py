"""Device boilerplate as in torch 2.13 on a machine without GPUs: ``dg.device``, ``Tensor.device``/``to``/
``cpu``/``cuda``, ``device=`` in factories, ``dg.cuda``, ``dg.accelerator``, ``dg.backends``."""

from __future__ import annotations

import pickle

import pytest

import dualgrad as dg

CPU_ONLY = "dualgrad runs on the CPU only; 'cuda' is not available \\(Torch not compiled with CUDA enabled\\)"


def test_device_class_as_torch():
    cpu = dg.device("cpu")
    assert (cpu.type, cpu.index) == ("cpu", None)
    assert repr(cpu) == "device(type='cpu')" and str(cpu) == "cpu"
    assert repr(dg.device("cpu:0")) == "device(type='cpu', index=0)" and str(dg.device("cpu", 0)) == "cpu:0"
    assert str(dg.device("cuda:1")) == "cuda:1" and dg.device(dg.device("cuda", 1)) == dg.device("cuda:1")
    assert cpu == dg.device("cpu") and cpu != dg.device("cpu:0") and cpu != "cpu"  # as torch
    assert len({cpu, dg.device("cpu"), dg.device("cpu:0")}) == 2
    assert pickle.loads(pickle.dumps(dg.device("cpu:0"))) == dg.device("cpu:0")


@pytest.mark.parametrize(("args", "error", "message"), [
    (("gpu",), RuntimeError, "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
                             "maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of "
                             "device string: gpu"),
    (("cpu:x",), RuntimeError, "Invalid device string: 'cpu:x'"),
    (("cuda:-1",), RuntimeError, "Invalid device string: 'cuda:-1'"),
    (("cpu", -1), RuntimeError, "Device index must not be negative"),
    (("cpu:0", 1), RuntimeError, "type (string) must not include an index because index was passed explicitly: cpu:0"),
    ((0,), RuntimeError, "Cannot access accelerator device when none is available."),
])
def test_device_errors(args, error, message):
    with pytest.raises(error, match="^" + message.replace("(", "\\(").replace(")", "\\)") + "$"):
        dg.device(*args)
    with pytest.raises(TypeError, match="device\\(\\) received an invalid combination of arguments"):
        dg.device(None)


def test_tensor_device_cpu_and_to():
    x = dg.tensor([1.5, 2.5], requires_grad=True)
    assert x.device == dg.device("cpu") and x.is_cpu and not x.is_cuda
    assert x.cpu() is x and x.to("cpu") is x and x.to(dg.device("cpu")) is x and x.to(device="cpu:0") is x
    assert x.to(dg.float64) is x and x.to(dg.float64, copy=True) is not x
    assert x.to(dg.float64, False, True) is not x  # non_blocking, copy positionally
    assert x.to("cpu", dg.float32).dtype == dg.float32
    assert x.to(device="cpu", dtype=dg.float32, non_blocking=True).dtype == dg.float32
    assert x.to(dg.tensor([1])).dtype == dg.int64
    y = x.to(dg.float32)
    y.sum().backward()  # the cast is differentiable
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        x.to("cpu", "cuda")


@pytest.mark.parametrize("make", [
    lambda: dg.zeros(2, device="cuda"), lambda: dg.ones(2, device="cuda"), lambda: dg.empty(2, device="cuda"),
    lambda: dg.rand(2, device="cuda"), lambda: dg.randn(2, device="cuda"), lambda: dg.arange(3, device="cuda"),
    lambda: dg.full((2,), 1.0, device="cuda"), lambda: dg.tensor([1.0], device="cuda"),
    lambda: dg.as_tensor([1.0], device="cuda"), lambda: dg.eye(2, device="cuda"),
    lambda: dg.linspace(0, 1, 3, device="cuda"), lambda: dg.randint(0, 3, (2,), device="cuda"),
    lambda: dg.zeros_like(dg.zeros(1), device="cuda"), lambda: dg.ones_like(dg.zeros(1), device="cuda"),
    lambda: dg.randn_like(dg.zeros(1), device=dg.device("cuda")), lambda: dg.zeros(1).new_zeros(2, device="cuda"),
    lambda: dg.zeros(1).new_tensor([1.0], device="cuda"), lambda: dg.asarray([1.0], device="cuda"),
    lambda: dg.zeros(1).cuda(), lambda: dg.zeros(1).to("cuda"), lambda: dg.zeros(1).to(device="cuda"),
    lambda: dg.set_default_device("cuda"),
])
def test_cuda_requests_raise_a_clear_error(make):
    with pytest.raises(AssertionError, match=CPU_ONLY):
        make()


def test_other_devices_name_their_backend():
    with pytest.raises(AssertionError, match="'mps' is not available \\(Torch not compiled with MPS enabled\\)"):
        dg.zeros(1, device="mps")


def test_cpu_device_accepted_everywhere():
    assert dg.zeros(2, device="cpu").device == dg.device("cpu")
    assert dg.rand(2, device=dg.device("cpu:0")).shape == (2,)
    assert dg.tensor([1.0], device=dg.device("cpu")).tolist() == [1.0]
    dg.set_default_device("cpu")
    assert dg.get_default_device() == dg.device("cpu")


def test_availability_queries():
    assert dg.cuda.is_available() is False and dg.cuda.device_count() == 0 and not dg.cuda.is_initialized()
    assert dg.accelerator.current_accelerator() is None and dg.accelerator.is_available() is False
    assert dg.backends.mps.is_available() is False and dg.backends.cudnn.is_available() is False
    dg.cuda.manual_seed(0)
    dg.cuda.manual_seed_all(0)
    with pytest.raises(AssertionError, match="CPU only"):
        dg.cuda.synchronize()


def test_gpu_fallback_boilerplate_runs_unchanged():
    """The opening lines of torch's tutorials, with ``torch`` renamed."""
    device = (dg.accelerator.current_accelerator().type if dg.accelerator.is_available() else "cpu")
    device2 = dg.device("cuda" if dg.cuda.is_available() else "mps" if dg.backends.mps.is_available() else "cpu")
    dg.backends.cudnn.benchmark = True
    w = dg.randn(3, 2, device=device, requires_grad=True)
    x = dg.ones(4, 3).to(device2)
    loss = (x @ w.to(device)).pow(2).sum().cpu()
    loss.backward()
    assert w.grad.device.type == "cpu" and w.grad.shape == (3, 2)
    dg.backends.cudnn.benchmark = False


def test_type_with_a_number_is_torchs_type_error_not_a_device():
    """``to(0)`` names a device, but ``type(0)`` asks for a dtype: torch's TypeError."""
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        dg.tensor(0).type(0)
