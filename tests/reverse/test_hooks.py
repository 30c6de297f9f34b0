"""Backward hooks: execution order, grad vs backward, retain_graph, removal, multi-grad hooks."""

import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.graph import register_multi_grad_hook


def _vals(t):
    return None if t is None else t.tolist()


def test_every_kind_of_hook_runs_in_the_documented_order():
    """x -> y = 3x -> L = sum(y); each hook changes the gradient so later ones show what they saw."""
    events = []
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.retain_grad()

    def tensor_hook_1(g):
        events.append(("y hook 1", _vals(g)))
        return g * 2

    def tensor_hook_2(g):
        events.append(("y hook 2", _vals(g)))

    def pre_1(grad_outputs):
        events.append(("pre 1", [_vals(g) for g in grad_outputs], _vals(y.grad)))
        return (grad_outputs[0] * 5,)

    def pre_2(grad_outputs):
        events.append(("pre 2", [_vals(g) for g in grad_outputs], _vals(y.grad)))

    def post_1(grad_inputs, grad_outputs):
        events.append(("post 1", [_vals(g) for g in grad_inputs], [_vals(g) for g in grad_outputs],
                       _vals(y.grad)))
        return (grad_inputs[0] + 1, None)

    def post_2(grad_inputs, grad_outputs):
        events.append(("post 2", [_vals(g) for g in grad_inputs]))

    def leaf_hook(g):
        events.append(("x hook", _vals(g)))
        return g * 10

    def acc_pre(grad_outputs):
        events.append(("acc pre", [_vals(g) for g in grad_outputs], _vals(x.grad)))

    def acc_post(grad_inputs, grad_outputs):
        events.append(("acc post", grad_inputs, [_vals(g) for g in grad_outputs], _vals(x.grad)))

    y.register_hook(tensor_hook_1)
    y.register_hook(tensor_hook_2)
    y.grad_fn.register_prehook(pre_1)
    y.grad_fn.register_prehook(pre_2)
    y.grad_fn.register_hook(post_1)
    y.grad_fn.register_hook(post_2)
    x.register_hook(leaf_hook)
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(acc_pre)
    acc.register_hook(acc_post)
    x.register_post_accumulate_grad_hook(lambda t: events.append(("post accumulate", _vals(t.grad))))

    y.sum().backward()
    assert events == [
        ("y hook 1", [1., 1.]),
        ("y hook 2", [2., 2.]),
        ("pre 1", [[2., 2.]], [2., 2.]),  # retain_grad is updated after the tensor hooks and
        ("pre 2", [[10., 10.]], [2., 2.]),  # before the pre-hooks (torch 2.13's order)
        ("post 1", [[30., 30.], None], [[10., 10.]], [2., 2.]),
        ("post 2", [[31., 31.], None]),
        ("x hook", [31., 31.]),
        ("acc pre", [[310., 310.]], None),
        ("post accumulate", [310., 310.]),
        ("acc post", (), [[310., 310.]], [310., 310.]),
    ]
    assert y.grad.tolist() == [2., 2.]
    assert x.grad.tolist() == [310., 310.]


def test_leaf_tensor_hooks_fire_under_grad_but_accumulate_grad_hooks_do_not():
    events = []
    x = dg.tensor([1., 2.], requires_grad=True)
    x.register_hook(lambda g: events.append("tensor") or g * 2)
    y = x * x
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: events.append("acc pre"))
    acc.register_hook(lambda gi, go: events.append("acc post"))
    x.register_post_accumulate_grad_hook(lambda t: events.append("post accumulate"))
    (gx,) = dg.grad(y.sum(), x)
    assert gx.tolist() == [4., 8.]  # 2x, doubled by the hook
    assert events == ["tensor"]  # both uses of x are summed first: the hook sees one gradient
    assert x.grad is None


def test_non_leaf_hook_under_grad_and_node_not_run():
    events = []
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 2)
    y.grad_fn.register_prehook(lambda g: events.append("pre"))
    (gy,) = dg.grad((y * y).sum(), y)
    assert gy.tolist() == [12., 24.]  # 2y doubled
    assert events == []  # y's node is not needed to reach y, so it does not run


def test_node_of_a_non_leaf_input_of_backward_runs_as_torchs():
    """``backward(inputs=[y])`` runs y's node (torch 2.13): its pre-hook sees y's gradient, its
    post-hook None for the gradients nothing needs, and its saved tensors are used and freed."""
    events = []
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda g: events.append(("pre", g[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: events.append(("post", gi, go[0].tolist())))
    (y * y).sum().backward(inputs=[y])
    assert events == [("pre", [4., 8.]), ("post", (None, None), [4., 8.])]
    assert y.grad.tolist() == [4., 8.] and x.grad is None

    e = x.exp()
    (e * e).sum().backward(inputs=[e])  # (exp's node ran and freed the result it saved)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        (e * 1).sum().backward(inputs=[e])

    events.clear()
    w = y * 3  # (y's node runs under w's now: a post-hook sees the gradient x needs)
    (w * w).sum().backward(inputs=[y, x])
    (pre, (post, (to_x, to_number), seen)) = events
    assert pre == ("pre", [36., 72.]) and post == "post" and seen == [36., 72.]
    assert to_x.tolist() == [72., 144.] and to_number is None


@given(st.lists(st.floats(-3, 3).filter(lambda s: abs(s) > 0.1), min_size=1, max_size=4))
def test_chained_tensor_hooks_compose_in_registration_order(scales):
    """Each hook sees the previous one's result: the leaf gradient is the product of the scales
    times d/dx sum(sin(x) * x), checked against central differences."""
    x0 = np.array([0.3, -1.2, 2.0])
    x = dg.tensor(x0, requires_grad=True)
    y = x.sin()
    seen = []
    for s in scales:
        y.register_hook(lambda g, s=s: seen.append(g.tolist()) or g * s)
    (y * x).sum().backward()
    eps = 1e-6
    fd = np.array([(np.sum(np.sin(x0 + eps * e) * (x0 + eps * e))
                    - np.sum(np.sin(x0 - eps * e) * (x0 - eps * e))) / (2 * eps) for e in np.eye(3)])
    from_y = fd - np.sin(x0)  # the part of the gradient that flows through y
    np.testing.assert_allclose(x.grad.numpy(), np.prod(scales) * from_y + np.sin(x0), rtol=1e-6, atol=1e-6)
    for i in range(1, len(scales)):
        np.testing.assert_allclose(seen[i], np.array(seen[i - 1]) * scales[i - 1])


def test_hooks_with_retain_graph_and_removal():
    calls = []
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    h_tensor = y.register_hook(lambda g: calls.append("tensor") or g * 3)
    h_pre = y.grad_fn.register_prehook(lambda g: calls.append("pre"))
    h_post = y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    loss = y.sum()
    loss.backward(retain_graph=True)
    assert calls == ["tensor", "pre", "post"] and x.grad.tolist() == [6., 6.]
    loss.backward(retain_graph=True)
    assert calls == ["tensor", "pre", "post"] * 2 and x.grad.tolist() == [12., 12.]
    h_tensor.remove()
    h_pre.remove()
    h_tensor.remove()  # removing twice is harmless
    x.grad = None
    loss.backward(retain_graph=True)
    assert calls == ["tensor", "pre", "post"] * 2 + ["post"] and x.grad.tolist() == [2., 2.]
    with h_post:
        pass  # a handle is a context manager that removes its hook
    calls.clear()
    dg.grad(loss, x)
    assert calls == []


def test_prehook_example_of_torch_docs():
    a = dg.tensor([0., 0., 0.], requires_grad=True)
    b = a.clone()
    handle = b.grad_fn.register_prehook(lambda gI: (gI[0] * 2,))
    b.sum().backward(retain_graph=True)
    assert a.grad.tolist() == [2., 2., 2.]
    handle.remove()
    a.grad = None
    b.sum().backward(retain_graph=True)
    assert a.grad.tolist() == [1., 1., 1.]


def test_hook_registered_before_in_place_op_stays_with_old_node():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = a * 2
    seen = {}
    b.register_hook(lambda g: seen.__setitem__("old", g.tolist()))
    old_node = b.grad_fn
    b.mul_(3)
    assert b.grad_fn is not old_node
    b.register_hook(lambda g: seen.__setitem__("new", g.tolist()))
    (b * b).sum().backward()
    new_b = np.array([6., 12.])
    assert seen["new"] == (2 * new_b).tolist()  # d/d(new b) of sum(b^2)
    assert seen["old"] == (3 * 2 * new_b).tolist()  # the gradient of b before the in-place mul
    assert a.grad.tolist() == (2 * 3 * 2 * new_b).tolist()


def test_register_hook_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        dg.ones(2).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="must be callable"):
        dg.ones(2, requires_grad=True).register_hook(3)


# -- bad hook results: clear errors naming node, index and shapes; .grad untouched -------------
def _graph():
    x = dg.tensor([1., 2.], requires_grad=True)
    w = dg.tensor([3., 4.], requires_grad=True)
    y = x * w
    return x, w, y


def test_tensor_hook_wrong_shape():
    x, w, y = _graph()
    y.register_hook(lambda g: dg.ones(3))
    with pytest.raises(RuntimeError, match=r"output 0 of MulBackward0 has changed the size of gradient 0: "
                                           r"expected shape \(2,\), got shape \(3,\)"):
        y.sum().backward()
    assert x.grad is None and w.grad is None


def test_leaf_hook_wrong_shape_and_type():
    x, w, y = _graph()
    x.register_hook(lambda g: dg.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"leaf tensor of shape \(2,\).*\(2, 2\)"):
        y.sum().backward()
    assert w.grad is None  # nothing committed after a failed pass
    x2 = dg.tensor([1., 2.], requires_grad=True)
    x2.register_hook(lambda g: [1., 2.])
    with pytest.raises(TypeError, match="expected Tensor or None for gradient 0, but hook returned 'list'"):
        (x2 * 2).sum().backward()


def test_hook_changing_dtype():
    x, w, y = _graph()
    y.register_hook(lambda g: g.to(np.float32))
    with pytest.raises(RuntimeError, match="changed the type of gradient 0.*float64.*float32"):
        y.sum().backward()


def test_post_hook_wrong_count():
    x, w, y = _graph()
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match=r"of MulBackward0 has returned an incorrect number of values "
                                           r"\(got 1, but expected 2\)"):
        y.sum().backward()
    assert x.grad is None and w.grad is None


def test_post_hook_wrong_shape_names_input_index():
    x, w, y = _graph()
    y.grad_fn.register_hook(lambda gi, go: (gi[0], dg.ones(5)))
    with pytest.raises(RuntimeError, match=r"MulBackward0 has changed the size of gradient 1: "
                                           r"expected shape \(2,\), got shape \(5,\)"):
        y.sum().backward()


def test_pre_hook_wrong_count_and_type():
    x, w, y = _graph()
    handle = y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match=r"MulBackward0 \(pre-hook\) has returned an incorrect number.*"
                                           r"got 2, but expected 1"):
        y.sum().backward(retain_graph=True)
    handle.remove()
    y.grad_fn.register_prehook(lambda go: go[0])
    with pytest.raises(TypeError, match=r"MulBackward0 \(pre-hook\): expected tuple.*but hook returned 'Tensor'"):
        y.sum().backward()


# -- register_multi_grad_hook -------------------------------------------------------------------
def test_multi_grad_hook_reference_example(capsys):
    a = dg.rand(2, 3, requires_grad=True)
    b = dg.rand(2, 3, requires_grad=True)
    c = a * b
    d = a * b

    def fn(grads):
        print([g is not None for g in grads])

    register_multi_grad_hook((a, b, c, d), fn)
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert capsys.readouterr().out == "[True, True, True, False]\n[True, False, True, False]\n"


def test_multi_grad_hook_sees_the_gradients_and_works_under_grad():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = dg.tensor([3., 4.], requires_grad=True)
    c = a * b
    got = []
    handle = register_multi_grad_hook((a, b, c), lambda grads: got.append([_vals(g) for g in grads]))
    dg.grad(c.sum(), (a,), retain_graph=True)
    assert got == [[[3., 4.], None, [1., 1.]]]
    c.sum().backward(retain_graph=True)
    assert got[1] == [[3., 4.], [1., 2.], [1., 1.]]
    handle.remove()
    c.sum().backward()
    assert len(got) == 2


def test_multi_grad_hook_passes_a_list_as_torch():
    a = dg.ones(2, requires_grad=True)
    got = []
    register_multi_grad_hook((a,), got.append)
    (a * 2).sum().backward()
    assert type(got[0]) is list and got[0][0].tolist() == [2., 2.]


def test_multi_grad_hook_any_mode_once_per_pass():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = dg.tensor([3., 4.], requires_grad=True)
    got = []
    register_multi_grad_hook((a, b), lambda g: got.append(g.tolist()), mode="any")
    (a * b).sum().backward()
    assert len(got) == 1 and got[0] in ([3., 4.], [1., 2.])
    (b * 2).sum().backward()
    assert got[1] == [2., 2.]


def test_multi_grad_hook_errors_leave_no_hook_behind():
    a = dg.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"mode to be one of \('all', 'any'\) but got some$"):
        register_multi_grad_hook((a,), print, mode="some")
    got = []
    with pytest.raises(RuntimeError, match=r"tensors\[1\] does not require grad"):
        register_multi_grad_hook((a, dg.ones(2)), got.append)
    with pytest.raises(TypeError, match=r"tensors\[0\] is a list, not a Tensor"):
        register_multi_grad_hook(([1.],), got.append)
    (a * 2).sum().backward()
    assert got == []


def test_multi_grad_hook_keeps_no_tensor_alive():
    a = dg.ones(2, requires_grad=True)
    c = a * 2
    register_multi_grad_hook((a, c), lambda grads: None)
    node = weakref.ref(c.grad_fn)
    leaf = weakref.ref(a)
    del a, c
    assert node() is None and leaf() is None  # freed by reference counting alone
