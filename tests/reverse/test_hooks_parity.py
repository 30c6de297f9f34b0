"""Hooks behave as in torch 2.13 (expected values and messages pinned from torch runs).

Covers what a port of torch code meets: the place of the ``retain_grad`` update, hooks seeing
``None`` gradients, what a ``None`` in a hook's tuple means, hook result checks, the order in
which the leaves of one node run, and the ``_raw_saved_*.register_hooks`` API.
"""

import pytest

import dualgrad as dg


def _vals(t):
    return None if t is None else t.tolist()


class _NoGrad(dg.autograd.Function):
    """Identity whose backward gives its input no gradient (None)."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return None


# -- retain_grad ----------------------------------------------------------------------------------
def test_retain_grad_sees_tensor_hooks_but_not_node_pre_hooks():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    y.grad_fn.register_prehook(lambda go: (go[0] * 7,))
    (y * 1).sum().backward()
    assert y.grad.tolist() == [10., 10.]  # after the tensor hook, before the pre-hook
    assert x.grad.tolist() == [140., 140.]


def test_retain_grad_moves_to_the_node_of_an_in_place_op():
    x = dg.tensor([1.], requires_grad=True)
    a = x.clone()
    seen = []
    a.register_hook(lambda g: seen.append(g.tolist()))
    a.retain_grad()
    a.mul_(2)
    (a.clone() + 1).sum().backward()
    assert a.grad.tolist() == [1.]  # the gradient of the new value of a ...
    assert seen == [[2.]]  # ... while the hook stays with the old node
    assert x.grad.tolist() == [2.]


def test_retain_grad_of_view_and_base_after_in_place_on_the_view():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    y = x * 1
    v = y[1:]
    v.retain_grad()
    y.retain_grad()
    v.mul_(2)
    (y * dg.tensor([1., 10., 100.])).sum().backward()
    assert y.grad.tolist() == [1., 10., 100.]
    assert v.grad is None  # v's node is now rebuilt from y's: not on the path of this backward
    assert x.grad.tolist() == [1., 20., 200.]


# -- None gradients ---------------------------------------------------------------------------------
def test_tensor_hook_of_an_output_without_gradient_sees_none():
    x = dg.tensor([1., 2., 3.], requires_grad=True)
    a, b = (x * 1).split(2)
    seen = []
    b.register_hook(lambda g: seen.append(g))
    a.sum().backward()
    assert seen == [None]
    assert x.grad.tolist() == [1., 1., 0.]


def test_hooks_of_a_leaf_reached_without_gradient_see_none():
    x = dg.tensor([1., 2.], requires_grad=True)
    events = []
    x.register_hook(lambda g: events.append(("hook", g)))
    x.register_post_accumulate_grad_hook(lambda t: events.append(("post accumulate", t.grad)))
    _NoGrad.apply(x).sum().backward()
    assert events == [("hook", None), ("post accumulate", None)]
    assert x.grad is None


@pytest.mark.parametrize("where", ["leaf", "non-leaf"])
def test_hook_cannot_replace_a_none_gradient(where):
    x = dg.tensor([1., 2.], requires_grad=True)
    t = x if where == "leaf" else x * 2
    t.register_hook(lambda g: dg.ones(2))
    with pytest.raises(RuntimeError, match="hook '<lambda>'.*can't replace a None gradient with a non-None value"):
        _NoGrad.apply(t).sum().backward()
    assert x.grad is None


def test_none_in_a_node_hook_tuple_makes_that_gradient_none():
    x = dg.tensor([1., 2.], requires_grad=True)
    w = dg.tensor([1., 2.], requires_grad=True)
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
    y.sum().backward()
    assert x.grad.tolist() == [10., 20.] and w.grad is None

    z = (x * 3) * 1
    z.grad_fn.register_prehook(lambda go: (None,))
    x.grad = None
    z.sum().backward()
    assert x.grad is None

    v = x * 3
    v.grad_fn.next_functions[0][0].register_prehook(lambda go: (None,))
    v.sum().backward()
    assert x.grad is None


def test_node_hooks_cannot_replace_a_none_gradient():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * dg.tensor([1., 2.])  # the constant's gradient is None
    y.grad_fn.register_hook(lambda gi, go: (gi[0], dg.ones(2)))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        y.sum().backward()
    a, b = (x * 1).split(1)
    a.grad_fn.register_prehook(lambda go: (go[0], dg.ones(1)))
    with pytest.raises(RuntimeError, match=r"\(pre-hook\): can't replace a None gradient"):
        a.sum().backward()
    assert x.grad is None


# -- hook results -----------------------------------------------------------------------------------
def test_node_hook_must_return_a_tuple():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.grad_fn.register_hook(lambda gi, go: [gi[0] * 10, None])
    with pytest.raises(TypeError, match=r"hook '<lambda>' of MulBackward0: expected tuple.*but hook returned 'list'"):
        y.sum().backward()


def test_tensor_hook_returning_a_non_tensor():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match=r"hook '<lambda>' of output 0 of MulBackward0: .*but hook returned 'int'"):
        y.sum().backward()


def test_post_accumulate_grad_hook_must_return_none():
    x = dg.tensor([1., 2.], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: t.grad * 0)
    with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return None"):
        (x * 1).sum().backward()


def test_accumulate_grad_post_hook_returns_nothing():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 3
    y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: (dg.ones(2),))
    with pytest.raises(RuntimeError, match=r"AccumulateGrad has returned an incorrect number of values "
                                           r"\(got 1, but expected 0\)"):
        y.sum().backward()


# -- order ------------------------------------------------------------------------------------------
def test_leaves_of_one_node_run_in_the_order_of_its_inputs():
    a, b, c = (dg.tensor([1., 2.], requires_grad=True) for _ in range(3))
    order = []
    for name, t in zip("abc", (a, b, c)):
        t.register_hook(lambda g, name=name: order.append(name))
    (a * b).sum().backward()
    assert order == ["a", "b"]
    order.clear()
    (a * b + c).sum().backward()  # c is reached first (AddBackward0), then a and b
    assert order == ["c", "a", "b"]
    order.clear()
    dg.cat([c, b, a]).sum().backward()
    assert order == ["c", "b", "a"]


# -- _raw_saved_*: SavedTensor.register_hooks -----------------------------------------------------
def test_raw_saved_tensor_register_hooks_packs_at_once_and_unpacks_at_each_use():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = dg.tensor([3., 4.], requires_grad=True)
    y = a * b
    raw = y.grad_fn._raw_saved_self
    assert raw.unpack_hook is None
    events = []

    def pack(t):
        events.append(("pack", t.tolist(), t.requires_grad))
        return t * 10

    def unpack(t):
        events.append(("unpack", t.tolist()))
        return t

    raw.register_hooks(pack, unpack)
    assert raw.unpack_hook is unpack
    assert events == [("pack", [1., 2.], False)]  # a detached alias of the saved value
    saved = y.grad_fn._saved_self
    assert saved.tolist() == [10., 20.] and saved.requires_grad and saved is not a
    y.sum().backward()
    assert events[1:] == [("unpack", [10., 20.]), ("unpack", [10., 20.])]
    assert b.grad.tolist() == [10., 20.]  # the unpacked value is used
    assert a.grad.tolist() == [3., 4.]


def test_raw_saved_output_register_hooks():
    a = dg.tensor([0., 1.], requires_grad=True)
    y = a.exp()
    seen = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: seen.append(t.grad_fn) or t.detach(), lambda t: t)
    assert seen == [None]
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
    y.sum().backward()
    assert a.grad.tolist() == y.tolist()


def test_raw_saved_tensor_register_hooks_errors():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = dg.tensor([3., 4.], requires_grad=True)
    y = a * b
    raw = y.grad_fn._raw_saved_self
    with pytest.raises(TypeError, match="must be callable, got int"):
        raw.register_hooks(1, 2)
    raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="whose hooks have already been set. Hint: only one pair"):
        raw.register_hooks(lambda t: t, lambda t: t)

    with dg.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        z = a * b
    with pytest.raises(RuntimeError, match="whose hooks have already been set"):
        z.grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: t)

    w = a * b
    other = w.grad_fn._raw_saved_other
    w.sum().backward()
    with pytest.raises(RuntimeError, match="Calling register_hooks on a saved tensor after it has been freed"):
        other.register_hooks(lambda t: t, lambda t: t)

    v = a * b
    v.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 3)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
        v.sum().backward()


def test_gradient_edge_has_torch_fields():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    edge = dg.graph.get_gradient_edge(y)
    assert edge == (y.grad_fn, 0, None)
    assert edge.ownership_token is None
    assert dg.grad((y * y).sum(), dg.graph.GradientEdge(y.grad_fn, 0))[0].tolist() == [4., 8.]
