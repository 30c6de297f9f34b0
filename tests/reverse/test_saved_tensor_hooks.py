"""Saved-tensor hooks: packing, unpacking, nesting, save_on_cpu, disabling, save_on_disk."""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.graph import disable_saved_tensors_hooks, save_on_cpu, save_on_disk, saved_tensors_hooks


def test_reference_example_prints_in_order(capsys):
    def pack_hook(x):
        print("Packing", x)
        return x

    def unpack_hook(x):
        print("Unpacking", x)
        return x

    a = dg.ones(5, requires_grad=True)
    b = dg.ones(5, requires_grad=True) * 2
    with saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    # (torch 2.13 prints ``other`` first, as here; the reference page's example shows ``self`` first)
    assert capsys.readouterr().out == (
        "Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)\n"
        "Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)\n"
    )
    y.sum().backward()
    assert capsys.readouterr().out == (
        "Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)\n"
        "Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)\n"
    )
    assert a.grad.tolist() == [2.] * 5


def test_pack_hook_runs_in_no_grad_mode_unpack_in_backward_grad_mode():
    # torch: the pack hook never records (grad mode off); the unpack hook sees backward's grad
    # mode (on with create_graph=True, off otherwise).
    seen = []
    x = dg.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: seen.append(("pack", dg.is_grad_enabled())) or t * 1,
                             lambda t: seen.append(("unpack", dg.is_grad_enabled())) or t):
        y = x.exp()
    assert seen == [("pack", False)]
    g, = dg.autograd.grad(y.sum(), x, create_graph=True)
    assert seen[1:] == [("unpack", True)]
    assert g.requires_grad and dg.allclose(g, y)


def test_pack_hook_modifying_its_input_in_place_raises():
    x = dg.ones(3, requires_grad=True)
    z = dg.ones(3)
    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        with saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
            x * z
    # a hook that copies first is fine
    a, w = dg.ones(3, requires_grad=True), dg.full((3,), 3.0)
    with saved_tensors_hooks(lambda t: t.clone().mul_(2), lambda t: t / 2):
        y = a * w
    y.sum().backward()
    assert a.grad.tolist() == [3.0] * 3 and w.tolist() == [3.0] * 3


class Log:
    """A pack/unpack pair that records what it sees and stores a copy of the data."""

    def __init__(self):
        self.packed = []
        self.unpacked = 0

    def pack(self, t):
        self.packed.append(t.shape)
        return t.detach().numpy().copy()

    def unpack(self, array):
        self.unpacked += 1
        return dg.tensor(array)


def test_pack_once_at_save_time_unpack_on_every_use():
    log = Log()
    x = dg.tensor([0.5, 1.0], requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = x.exp()  # saves its result
        z = (y * x).sum()  # saves y and x
        assert log.packed == [(2,), (2,), (2,)] and log.unpacked == 0
    z.backward(retain_graph=True)
    assert log.unpacked == 3
    z.backward(retain_graph=True)
    assert log.unpacked == 6 and len(log.packed) == 3
    assert y.grad_fn._saved_result.tolist() == y.tolist()
    assert log.unpacked == 7
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.0]) * (1 + np.array([0.5, 1.0])))


def test_tensors_saved_by_custom_functions_are_packed():
    class Cube(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    log = Log()
    x = dg.tensor([1., 2.], requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = Cube.apply(x)
    assert log.packed == [(2,)]
    y.sum().backward()
    assert log.unpacked == 1 and x.grad.tolist() == [3., 12.]


def test_nesting_innermost_pair_wins():
    outer, inner = Log(), Log()
    x = dg.tensor([1., 2.], requires_grad=True)
    with saved_tensors_hooks(outer.pack, outer.unpack):
        a = x.sin()
        with saved_tensors_hooks(inner.pack, inner.unpack):
            b = a.cos()
        c = b.exp()
    assert len(outer.packed) == 2 and len(inner.packed) == 1  # sin's input, exp's result / cos's input
    d = x.tanh()  # no hooks outside
    (c.sum() + d.sum()).backward()
    assert outer.unpacked == 2 and inner.unpacked == 1
    x0 = np.array([1., 2.])
    expected = np.exp(np.cos(np.sin(x0))) * -np.sin(np.sin(x0)) * np.cos(x0) + 1 - np.tanh(x0) ** 2
    np.testing.assert_allclose(x.grad.numpy(), expected)


def _third_derivative_case(hooks):
    """f(x) = sum(exp(x) * x^2): saved inputs (leaf and non-leaf) and a saved output."""
    x = dg.tensor([0.3, -0.7, 1.1], requires_grad=True)
    with hooks:
        y = (x.exp() * x * x).sum()
        (g,) = dg.grad(y, x, create_graph=True)
        (h,) = dg.grad(g.sum(), x, create_graph=True)
    h.sum().backward()
    return x, g, h


def test_double_and_triple_backward_through_unpacked_copies():
    log = Log()
    x, g, h = _third_derivative_case(saved_tensors_hooks(log.pack, log.unpack))
    x0 = x.detach().numpy()
    e = np.exp(x0)
    np.testing.assert_allclose(g.detach().numpy(), e * (x0 ** 2 + 2 * x0))
    np.testing.assert_allclose(h.detach().numpy(), e * (x0 ** 2 + 4 * x0 + 2))
    np.testing.assert_allclose(x.grad.numpy(), e * (x0 ** 2 + 6 * x0 + 6))
    assert log.unpacked > 0


def test_double_backward_matches_finite_differences_of_first_derivative():
    log = Log()
    x0 = np.array([0.2, 0.9])
    x = dg.tensor(x0, requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = (x.sin() * x.exp()).sum()
        (g,) = dg.grad(y, x, create_graph=True)
    (hv,) = dg.grad(g.sum(), x)

    def first(v):
        return np.cos(v) * np.exp(v) + np.sin(v) * np.exp(v)

    eps = 1e-6
    np.testing.assert_allclose(hv.numpy(), (first(x0 + eps) - first(x0 - eps)) / (2 * eps), rtol=1e-6)


def test_save_on_cpu_copies_nothing():
    a = dg.tensor([1., 2., 3.], requires_grad=True)
    with save_on_cpu(pin_memory=True, device_type="cpu") as ctx:
        y = a * a
    assert ctx is None
    assert np.shares_memory(y.grad_fn._saved_self.detach().numpy(), a.detach().numpy())
    y.sum().backward()
    assert a.grad.tolist() == [2., 4., 6.]


def test_save_on_cpu_reference_example_structure():
    a, b, c = (dg.randn(5, requires_grad=True) for _ in range(3))
    prod_1 = a * b
    with save_on_cpu():
        prod_2 = prod_1 * c
    y = prod_2 * a
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (a * b * c).detach().numpy())
    np.testing.assert_allclose(c.grad.numpy(), (a * a * b).detach().numpy())


def test_disable_reference_example():
    message = "saved tensors default hooks are disabled"
    with disable_saved_tensors_hooks(message):
        with pytest.raises(RuntimeError, match=message):
            with save_on_cpu():
                pass
        y = dg.ones(2, requires_grad=True) * 2  # ops still save without hooks
    with save_on_cpu():  # allowed again after the block
        pass
    y.sum().backward()


def test_disable_while_hooks_active_and_nested_messages():
    with save_on_cpu():
        with pytest.raises(RuntimeError, match="no hooks here"):
            with disable_saved_tensors_hooks("no hooks here"):
                pass
    with disable_saved_tensors_hooks("outer"):
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(print, print).__enter__()
        with pytest.raises(RuntimeError, match="outer"):
            saved_tensors_hooks(print, print).__enter__()


def test_hooks_are_removed_on_exceptions():
    log = Log()
    with pytest.raises(KeyError):
        with saved_tensors_hooks(log.pack, log.unpack):
            raise KeyError
    dg.ones(2, requires_grad=True) * 2
    assert log.packed == []


def test_non_callable_hooks():
    with pytest.raises(TypeError, match="unpack_hook must be callable, got int"):
        saved_tensors_hooks(print, 3)


def test_unpack_hook_wrong_shape_or_type():
    x = dg.tensor([1., 2.], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: dg.ones(5)):
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"unpack hook returned a tensor of shape \(5,\).*"
                                           r"shape \(2,\) and dtype float64 was packed"):
        y.backward()
    assert x.grad is None
    with saved_tensors_hooks(lambda t: t, lambda t: t.to(np.float32)):
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match="dtype float32.*dtype float64 was packed"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
        y.backward()


def test_freed_after_backward_even_with_hooks():
    log = Log()
    x = dg.tensor([1., 2.], requires_grad=True)
    with saved_tensors_hooks(log.pack, log.unpack):
        y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="already been freed"):
        _ = y.grad_fn._saved_self
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


# -- save_on_disk ---------------------------------------------------------------------------------
def test_save_on_disk_files_memory_mapped_and_removed(tmp_path):
    directory = tmp_path / "saved"
    x = dg.tensor([0.5, 1.5, 2.5], requires_grad=True)
    with save_on_disk(directory):
        y = x.exp()  # saves its result
        z = (y * x).sum()  # saves y and x
    assert len(os.listdir(directory)) == 3
    saved = y.grad_fn._saved_result
    assert isinstance(saved.detach().numpy(), np.memmap)
    assert saved.tolist() == y.tolist()
    del saved
    z.backward()
    x0 = np.array([0.5, 1.5, 2.5])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x0) * (x0 + 1))
    assert os.listdir(directory) == []  # freed with the graph


def test_save_on_disk_retained_graph_keeps_files_until_dropped(tmp_path):
    x = dg.tensor([1., 2.], requires_grad=True)
    with save_on_disk(tmp_path):
        loss = (x.sin() * x).sum()
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    assert len(os.listdir(tmp_path)) == 3  # sin's input, mul's two inputs
    x0 = np.array([1., 2.])
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.cos(x0) * x0 + np.sin(x0)))
    del loss
    assert os.listdir(tmp_path) == []


def test_save_on_disk_double_backward(tmp_path):
    x, g, h = _third_derivative_case(save_on_disk(tmp_path))
    x0 = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x0) * (x0 ** 2 + 6 * x0 + 6))


@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
       dtype=st.sampled_from([np.float32, np.float64, np.complex128]))
def test_save_on_disk_round_trip_any_shape_and_dtype(tmp_path_factory, shape, dtype):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(dtype)
    if np.iscomplexobj(data):
        data = data + 1j * rng.standard_normal(shape)
    x = dg.tensor(data, requires_grad=True)
    with save_on_disk(tmp_path_factory.mktemp("disk")):
        y = x * x
    assert y.grad_fn._saved_self.tolist() == x.tolist()
    assert y.grad_fn._saved_self.dtype == x.dtype
    (y * y.detach().conj()).real.sum().backward() if np.iscomplexobj(data) else y.sum().backward()
    assert x.grad.shape == shape and x.grad.dtype == x.dtype
