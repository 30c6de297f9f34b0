"""dg.save / dg.load: round trips (values, dtypes, requires_grad, shared views, optimizer states), torch's
file format both ways when torch is installed, and the weights_only refusal of other globals."""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np
import pytest

import dualgrad as dg


class Custom:
    """A class that weights_only loads refuse."""

    def __init__(self, value):
        self.value = value


def _round_trip(obj, **load_options):
    buffer = io.BytesIO()
    dg.save(obj, buffer)
    buffer.seek(0)
    return dg.load(buffer, **load_options)


def test_tensors_keep_values_dtypes_and_requires_grad():
    tensors = [dg.tensor([1.5, -2.0], requires_grad=True), dg.tensor([1, 2], dtype=dg.int32),
               dg.tensor([True, False]), dg.tensor([1 + 2j], dtype=dg.complex64), dg.tensor(3.0, dtype=dg.float16),
               dg.zeros(0, 3), dg.arange(6.0).reshape(2, 3)]
    loaded = _round_trip(tensors)
    for before, after in zip(tensors, loaded):
        assert after.dtype == before.dtype and after.shape == before.shape
        assert after.requires_grad == before.requires_grad and after.is_leaf
        assert np.array_equal(after.detach().numpy(), before.detach().numpy())


def test_non_leaf_loads_as_a_leaf_that_requires_grad_and_grad_is_not_saved():
    a = dg.ones(2, requires_grad=True)
    (a * 3).sum().backward()
    loaded = _round_trip({"a": a, "b": a * 2})
    assert loaded["b"].is_leaf and loaded["b"].requires_grad and loaded["b"].tolist() == [2.0, 2.0]
    assert loaded["a"].grad is None


def test_views_share_memory_after_loading():
    x = dg.arange(6.0)
    loaded = _round_trip([x, x[2:4], x.view(2, 3).T, x.flip(0)])
    loaded[0][2] = 100.0
    assert loaded[1].tolist() == [100.0, 3.0]
    assert loaded[2].tolist() == [[0.0, 3.0], [1.0, 4.0], [100.0, 5.0]]
    assert loaded[3].tolist() == [5.0, 4.0, 3.0, 100.0, 1.0, 0.0]


def test_containers_and_plain_values():
    obj = {"sd": collections.OrderedDict(w=dg.ones(2), b=dg.zeros(1)), "tuple": (1, 2.5, "s", None, True),
           "set": {1, 2}, "complex": 1 + 2j, "bytes": b"\x00\xff", "counter": collections.Counter("aab"),
           "device": dg.device("cpu"), "dtype": dg.float32, "nested": [[dg.tensor([1.0])]]}
    loaded = _round_trip(obj)
    assert type(loaded["sd"]) is collections.OrderedDict and list(loaded["sd"]) == ["w", "b"]
    assert loaded["tuple"] == (1, 2.5, "s", None, True) and loaded["set"] == {1, 2}
    assert loaded["complex"] == 1 + 2j and loaded["bytes"] == b"\x00\xff" and loaded["counter"]["a"] == 2
    assert loaded["device"] == dg.device("cpu") and loaded["dtype"] == dg.float32
    assert loaded["nested"][0][0].tolist() == [1.0]


def test_optimizer_state_round_trip_continues_identically(tmp_path):
    w = dg.tensor([1.0, -2.0], requires_grad=True)
    opt = dg.optim.Adam([w], lr=0.1, amsgrad=True)
    for _ in range(2):
        opt.zero_grad()
        (w ** 4).sum().backward()
        opt.step()
    path = tmp_path / "checkpoint.pt"
    dg.save({"w": w, "opt": opt.state_dict()}, path)
    checkpoint = dg.load(path)
    w2 = checkpoint["w"]
    opt2 = dg.optim.Adam([w2], lr=0.1, amsgrad=True)
    opt2.load_state_dict(checkpoint["opt"])
    for model, optimizer in ((w, opt), (w2, opt2)):
        optimizer.zero_grad()
        (model ** 4).sum().backward()
        optimizer.step()
    assert w.tolist() == w2.tolist()


def test_weights_only_refuses_other_globals_and_runs_nothing():
    buffer = io.BytesIO()
    dg.save({"custom": Custom(3)}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as info:
        dg.load(buffer)
    message = str(info.value)
    assert message.startswith("Weights only load failed. This file can still be loaded")
    assert f"Unsupported global: GLOBAL {__name__}.Custom was not an allowed global by default." in message
    assert "`weights_only` set to `False`" in message
    buffer.seek(0)
    assert dg.load(buffer, weights_only=False)["custom"].value == 3
    buffer.seek(0)
    with dg.serialization.safe_globals([Custom]):
        assert dg.load(buffer)["custom"].value == 3
    assert dg.serialization.get_safe_globals() == []


def test_a_malicious_pickle_does_not_execute():
    class Exploit:
        def __reduce__(self):
            return (exec, ("raise SystemExit('executed')",))

    buffer = io.BytesIO()
    dg.save(Exploit(), buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL builtins.exec was not an allowed global"):
        dg.load(buffer)


def test_load_errors():
    with pytest.raises(RuntimeError, match="not a zip archive written by dualgrad.save or torch.save"):
        dg.load(io.BytesIO(pickle.dumps([1, 2])))
    buffer = io.BytesIO()
    dg.save([dg.ones(1)], buffer)
    buffer.seek(0)
    with pytest.raises(AssertionError, match="CPU only"):
        dg.load(buffer, map_location="cuda")
    buffer.seek(0)
    assert dg.load(buffer, map_location="cpu")[0].tolist() == [1.0]
    with pytest.raises(NotImplementedError, match="mmap"):
        dg.load(buffer, mmap=True)
    with pytest.raises(TypeError, match="save\\(\\): tensors of dtype uint16 cannot be saved"):
        dg.save(dg.tensor(np.array([1], dtype=np.uint16)), io.BytesIO())


def test_torch_reads_our_files_and_we_read_torchs(tmp_path):
    torch = pytest.importorskip("torch")
    x = dg.arange(6.0, requires_grad=True)
    dg.save({"x": x, "tail": x[3:], "i": dg.tensor([1, 2], dtype=dg.int32)}, tmp_path / "ours.pt")
    theirs = torch.load(tmp_path / "ours.pt")
    assert theirs["x"].dtype == torch.float64 and theirs["x"].requires_grad
    assert theirs["x"].tolist() == x.tolist() and theirs["tail"].tolist() == [3.0, 4.0, 5.0]
    assert theirs["tail"].untyped_storage().data_ptr() == theirs["x"].untyped_storage().data_ptr()
    assert theirs["i"].dtype == torch.int32
    sgd = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    torch.save({"w": torch.arange(4.0).reshape(2, 2).t(), "opt": sgd.state_dict(), "size": torch.Size([2, 3])},
               tmp_path / "theirs.pt")
    loaded = dg.load(tmp_path / "theirs.pt")
    assert loaded["w"].dtype == dg.float32 and loaded["w"].tolist() == [[0.0, 2.0], [1.0, 3.0]]
    assert loaded["opt"]["param_groups"][0]["momentum"] == 0.9 and tuple(loaded["size"]) == (2, 3)


def test_a_parameter_is_saved_as_torchs_parameter():
    class Parameter(dg.Tensor):  # what dualgrad.nn.Parameter is: a Tensor subclass of that name
        pass

    p = Parameter([1.0, 2.0]).requires_grad_()
    buffer = io.BytesIO()
    dg.save({"p": p}, buffer)
    buffer.seek(0)
    loaded = dg.load(buffer)["p"]
    assert loaded.requires_grad and loaded.tolist() == [1.0, 2.0]
    torch = pytest.importorskip("torch")
    buffer.seek(0)
    assert type(torch.load(buffer)["p"]) is torch.nn.Parameter


def test_save_to_something_without_write_raises_torchs_attribute_error():
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object with a 'write'"):
        dg.save(dg.tensor(0.0), None)
