"""In-place operations inside ``vmap`` (torch.func semantics).

An in-place op on a batched tensor updates its physical value (so the tensor
passed to ``vmap`` is changed, batch member by batch member, as a loop of the
same op would change it); an in-place op that would write a batched value into
a tensor not batched at that level raises torch's RuntimeError. Gradients and
tangents through such ops, under every transform, are checked against loops
and central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from batch_checks import check_batch_rule
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad import func
from dualgrad.ops.indexing import GETITEM
from dualgrad.ops.inplace import COPY, COPY_SLICES, INDEX_PUT
from dualgrad.ops.shape.core import PERMUTE

B = 3  # batch size
LEAF = "leaf Variable that requires grad is being used in an in-place operation"
RNG = np.random.default_rng(0)


def _batch(shape: tuple, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, (B,) + shape)


def _inputs(arrays: list, dims: list) -> list:
    """The batched inputs for vmap: member k of ``arrays[i]`` (batch first) moved to ``dims[i]``."""
    return [dg.tensor(a[0] if d is None else np.moveaxis(a, 0, d)) for a, d in zip(arrays, dims, strict=True)]


# -- in-place methods on batched tensors: the physical value changes like a loop -----------------
POSITIVE = (0.5, 2.0)
METHODS = {
    "add_": (lambda x, o: x.add_(o), None),
    "sub_": (lambda x, o: x.sub_(o), None),
    "mul_": (lambda x, o: x.mul_(o), None),
    "div_": (lambda x, o: x.div_(o), POSITIVE),
    "pow_": (lambda x, o: x.pow_(o), POSITIVE),
    "copy_": (lambda x, o: x.copy_(o), None),
    "iadd": (lambda x, o: x.__iadd__(o), None),
    "isub": (lambda x, o: x.__isub__(o), None),
    "imul": (lambda x, o: x.__imul__(o), None),
    "itruediv": (lambda x, o: x.__itruediv__(o), POSITIVE),
    "ipow": (lambda x, o: x.__ipow__(o), POSITIVE),
    "masked_fill_": (lambda x, o: x.masked_fill_(o > 0, -7.0), None),
    "fill_": (lambda x, o: x.fill_(o.sum()), None),
    "neg_": (lambda x, o: x.neg_(), None),
    "exp_": (lambda x, o: x.exp_(), None),
    "log_": (lambda x, o: x.log_(), POSITIVE),
    "sin_": (lambda x, o: x.sin_(), None),
    "cos_": (lambda x, o: x.cos_(), None),
    "tanh_": (lambda x, o: x.tanh_(), None),
    "sigmoid_": (lambda x, o: x.sigmoid_(), None),
    "sqrt_": (lambda x, o: x.sqrt_(), POSITIVE),
    "abs_": (lambda x, o: x.abs_(), None),
    "clamp_": (lambda x, o: x.clamp_(-0.5, 0.7), None),
    "zero_": (lambda x, o: x.zero_(), None),
}


@pytest.mark.parametrize("name", sorted(METHODS))
@given(x_dim=st.sampled_from([0, 1, 2]), o_dim=st.sampled_from([None, 0, 1]))
def test_inplace_method_on_batched_tensor_matches_loop(name, x_dim, o_dim):
    call, domain = METHODS[name]
    x = _batch((2, 3), *(domain or (-2.0, 2.0)))
    o = _batch((3,), *(domain or (-2.0, 2.0)))
    target, other = _inputs([x, o], [x_dim, o_dim])

    got = dg.vmap(call, in_dims=(x_dim, o_dim))(target, other)

    expected = []
    for k in range(B):
        member = dg.tensor(x[k].copy())
        assert call(member, dg.tensor(o[0 if o_dim is None else k])) is member
        expected.append(member.numpy())
    np.testing.assert_allclose(got.numpy(), np.stack(expected), rtol=1e-13, atol=1e-14)
    # the tensor given to vmap was changed in place, each member as in the loop
    changed = np.moveaxis(target.numpy(), x_dim, 0)
    np.testing.assert_allclose(changed, np.stack(expected), rtol=1e-13, atol=1e-14)
    assert target._version == 1


def test_inplace_returns_the_batched_tensor_itself():
    seen = []

    def f(row):
        seen.append(row.mul_(2) is row)
        return row

    dg.vmap(f)(dg.ones(2, 3))
    assert seen == [True]


def test_unbatched_value_into_batched_tensor():
    x = dg.tensor(np.arange(6.0).reshape(2, 3))
    w = dg.tensor([1.0, 10.0, 100.0])
    dg.vmap(lambda row: row.mul_(w))(x)
    np.testing.assert_array_equal(x.numpy(), [[0.0, 10.0, 200.0], [3.0, 40.0, 500.0]])


def test_nested_vmap_inplace_matches_double_loop():
    x = RNG.standard_normal((2, 3, 4))
    o = RNG.standard_normal((4,))
    target = dg.tensor(x.copy())

    def f(r, other):
        r.mul_(other).add_(1.0)
        r[0] = other.sum()
        return r

    got = dg.vmap(dg.vmap(f, in_dims=(1, None)), in_dims=(2, 0))(target, dg.tensor(o))
    expected = np.empty((4, 3, 2))
    for i in range(4):
        for j in range(3):
            member = x[:, j, i] * o[i] + 1.0
            member[0] = o[i]
            expected[i, j] = member
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-13)
    np.testing.assert_allclose(target.numpy(), expected.transpose(2, 1, 0), rtol=1e-13)


# -- x[index] = v with batched x and/or v --------------------------------------------------------
SHAPE = (3, 4, 2)
INDICES = [
    (1,), (-1, 0), (slice(1, None),), (slice(None, None, -2),), (Ellipsis, 1), (None, 0),
    (slice(None), 2, slice(0, 1)), (np.array([2, 0]),), (np.array([[0, 1], [1, 0]]),),
    (np.array([0, 2]), slice(None), np.array([1, 0])),  # advanced dims move to the front
    (slice(None), np.array([3, 1, 0])), (np.array([True, False, True]),),
    (np.arange(24).reshape(SHAPE) % 3 == 0,), (np.array(1), Ellipsis, np.array([0, 1])),
]


@given(index=st.sampled_from(INDICES), x_dim=st.sampled_from([None, 0, 1, 3]),
       v_dim=st.sampled_from([None, 0, 1]), v_rank=st.sampled_from(["full", "trailing", "scalar"]))
def test_setitem_inside_vmap_matches_loop(index, x_dim, v_dim, v_rank):
    if x_dim is None and v_dim is None:
        v_dim = 0
    region = np.empty(SHAPE)[index].shape
    value_shape = {"full": region, "trailing": region[-1:], "scalar": ()}[v_rank]
    if v_dim is not None and v_dim > len(value_shape):
        v_dim = 0
    x, v = _batch(SHAPE), _batch(value_shape)
    if x_dim is None:  # a batched value needs a batched target: compute one from both inputs
        def f(t, val):
            t = t + val.sum()
            t[index] = val
            return t
    else:
        def f(t, val):
            t[index] = val
            return t
    target, value = _inputs([x, v], [x_dim, v_dim])

    got = dg.vmap(f, in_dims=(x_dim, v_dim))(target, value)

    expected = []
    for k in range(B):
        member = dg.tensor(x[0 if x_dim is None else k].copy())
        expected.append(f(member, dg.tensor(v[0 if v_dim is None else k])).numpy())
    np.testing.assert_allclose(got.numpy(), np.stack(expected), rtol=1e-13, atol=1e-14)
    if x_dim is not None:
        np.testing.assert_allclose(np.moveaxis(target.numpy(), x_dim, 0), np.stack(expected), rtol=1e-13)


def test_setitem_through_a_view_of_a_batched_tensor():
    x = dg.tensor(np.arange(12.0).reshape(3, 2, 2))

    def f(m):
        m.T[0] = dg.tensor([-1.0, -2.0])  # writes the first column of each member
        return m

    dg.vmap(f)(x)
    expected = np.arange(12.0).reshape(3, 2, 2)
    expected[:, :, 0] = [-1.0, -2.0]
    np.testing.assert_array_equal(x.numpy(), expected)


# -- batching rules of the in-place ops, called directly ------------------------------------------
CHAINS = [
    ((2, 3), (3,), ((GETITEM, {"index": (1, Ellipsis)}),)),
    ((2, 3), (2,), ((PERMUTE, {"axes": (1, 0)}), (GETITEM, {"index": (2, Ellipsis)}))),
    ((3, 3), (3,), ((dg.ops.ALL_OPS["diagonal"], {"offset": 0, "axis1": 0, "axis2": 1}),)),
    ((4,), (2,), ((GETITEM, {"index": (slice(None, None, -2), Ellipsis)}),)),
    ((), (), ((GETITEM, {"index": (Ellipsis,)}),)),
]


@pytest.mark.parametrize("base_shape, src_shape, chain", CHAINS)
@pytest.mark.parametrize("bdims", [(0, None), (None, 0), (1, 0), (0, 1)])
def test_copy_slices_batching_rule(base_shape, src_shape, chain, bdims):
    bdims = tuple(None if b is None else min(b, len(s))
                  for b, s in zip(bdims, (base_shape, src_shape), strict=True))
    check_batch_rule(COPY_SLICES, [base_shape, src_shape], bdims, {"chain": chain})


@pytest.mark.parametrize("index, src_shape", [
    ((np.array([2, 0]),), (2, 4)), ((slice(None), np.array([1, 1, 3])), (3, 3)),
    ((np.array([0, 2]), np.array([3, 1])), (2,)), ((np.array([True, False, True]), 0), (2,)),
])
@pytest.mark.parametrize("bdims", [(0, None), (None, 0), (2, 1), (1, 0)])
def test_index_put_batching_rule(index, src_shape, bdims):
    bdims = (bdims[0], None if bdims[1] is None else min(bdims[1], len(src_shape)))
    check_batch_rule(INDEX_PUT, [(3, 4), src_shape], bdims, {"index": index})


@pytest.mark.parametrize("bdims", [(0, None), (None, 0), (1, 0), (0, 1)])
def test_copy_batching_rule(bdims):
    check_batch_rule(COPY, [(2, 3), (3,)], bdims, {})


# -- errors: a batched value written into an unbatched tensor ---------------------------------------
def _write_inplace(target: dg.Tensor):
    return {
        "copy_": lambda v: target.copy_(v),
        "add_": lambda v: target.add_(v),
        "masked_fill_": lambda v: target.masked_fill_(v > 0, 1.0),
        "__setitem__": lambda v: target.__setitem__(np.array([0, 1]), v[:2]),
        "copy_ ": lambda v: target.__setitem__(0, v[0]),  # basic index: a copy_ into a view
    }


@pytest.mark.parametrize("name", ["copy_", "add_", "masked_fill_", "__setitem__", "copy_ "])
def test_batched_value_into_unbatched_tensor_raises(name):
    target = dg.tensor([1.0, 2.0, 3.0])
    write = _write_inplace(target)[name]
    with pytest.raises(RuntimeError) as info:
        dg.vmap(write)(dg.ones(4, 3))
    message = str(info.value)
    assert message.startswith(f"vmap: {name.strip()}(self, *extra_args) is not possible")
    shape = "()" if name == "copy_ " else "(3,)"
    for words in ("there exists a Tensor `other` in extra_args that has more elements than `self`",
                  "`other` being vmapped over but `self` not being vmapped over",
                  "use out-of-place operators", f"logical shape {shape}"):
        assert words in message
    np.testing.assert_array_equal(target.numpy(), [1.0, 2.0, 3.0])
    assert target._version == 0


def test_value_batched_at_an_inner_level_into_a_tensor_of_the_outer_level_raises():
    x = dg.ones(2, 3)

    def outer(row):
        return dg.vmap(lambda v: row.add_(v))(dg.ones(5, 3))

    with pytest.raises(RuntimeError, match=r"vmap: add_\(self, \*extra_args\) is not possible"):
        dg.vmap(outer)(x)
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))
    assert x._version == 0


def test_inplace_on_batched_leaf_that_requires_grad_raises():
    for in_dim in (0, 1):
        x = dg.ones(2, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match=LEAF):
            dg.vmap(lambda row: row.mul_(2), in_dims=in_dim)(x)
        np.testing.assert_array_equal(x.numpy(force=True), np.ones((2, 2)))
        assert x._version == 0


def test_modified_saved_tensor_inside_vmap_grad_raises():
    def f(r):
        y = r * 1.0
        z = y.exp()  # saves its output
        z.add_(1.0)
        return z.sum()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        func.vmap(func.grad(f))(dg.ones(2, 3))


# -- gradients and tangents through in-place ops under vmap -----------------------------------------
def loss(x: dg.Tensor) -> dg.Tensor:
    """A scalar function of a 4-vector written with in-place ops of every kind."""
    y = x * 1.0
    y.mul_(x.sin() + 2.0)
    y[0] = y[1] + 3.0
    y[[1, 2]] = y[[2, 1]].exp()
    y[2:] += x[:2] ** 2
    y.masked_fill_(x > 1.5, 0.5)
    buffer = x * 0.0
    buffer[1:].copy_(y[:3].tanh())
    return (y * buffer).sum() + (y ** 2).sum()


def _fd_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.flat[i] = (f(dg.tensor(x + e)).item() - f(dg.tensor(x - e)).item()) / (2 * eps)
    return out


def _inputs_for_loss(seed: int) -> np.ndarray:
    # (a generator of its own: the shared RNG's state depends on how many examples Hypothesis ran)
    return np.random.default_rng(seed).uniform(-1.0, 1.4, (B, 4))  # away from the masked_fill threshold


def _assert_matches_fd(got: np.ndarray, fd: np.ndarray) -> None:
    """Central differences of ``loss`` (with exp terms) are good to about 1e-6 of its largest slope."""
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_vmap_of_grad_through_inplace_ops_matches_loop_and_finite_differences():
    xs = _inputs_for_loss(0)
    got = func.vmap(func.grad(loss))(dg.tensor(xs))
    loop = np.stack([func.grad(loss)(dg.tensor(x)).numpy() for x in xs])
    np.testing.assert_allclose(got.numpy(), loop, rtol=1e-12, atol=1e-12)
    _assert_matches_fd(got.numpy(), np.stack([_fd_grad(loss, x) for x in xs]))


def test_backward_through_vmap_of_inplace_ops():
    xs = _inputs_for_loss(1)
    x = dg.tensor(xs, requires_grad=True)
    dg.vmap(loss)(x).sum().backward()
    _assert_matches_fd(x.grad.numpy(), np.stack([_fd_grad(loss, r) for r in xs]))


def test_vmap_of_jvp_through_inplace_ops_matches_loop():
    xs, ts = _inputs_for_loss(2), np.random.default_rng(3).standard_normal((B, 4))
    _, got = func.vmap(lambda x, t: func.jvp(loss, (x,), (t,)))(dg.tensor(xs), dg.tensor(ts))
    loop = [func.jvp(loss, (dg.tensor(x),), (dg.tensor(t),))[1].item() for x, t in zip(xs, ts, strict=True)]
    np.testing.assert_allclose(got.numpy(), loop, rtol=1e-12)
    _assert_matches_fd(got.numpy(), np.array([(_fd_grad(loss, x) * t).sum() for x, t in zip(xs, ts, strict=True)]))


def test_hessians_through_inplace_ops_agree_across_modes():
    # (an input of its own: the shared RNG's state here depends on how many examples Hypothesis ran)
    x = dg.tensor(np.random.default_rng(3).uniform(-1.0, 1.4, 4))
    reverse = func.jacrev(func.jacrev(loss))(x).numpy()
    forward = func.jacfwd(func.jacfwd(loss))(x).numpy()
    mixed = func.hessian(loss)(x).numpy()
    fd = np.stack([(func.grad(loss)(dg.tensor(x.numpy() + e)).numpy()
                    - func.grad(loss)(dg.tensor(x.numpy() - e)).numpy()) / 2e-6 for e in 1e-6 * np.eye(4)])
    # central differences of gradients that reach 1e5 carry an absolute error near 1e-16 * 1e5 / 1e-6
    np.testing.assert_allclose(reverse, fd, rtol=1e-5, atol=1e-10 * np.abs(fd).max())
    np.testing.assert_allclose(forward, reverse, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mixed, reverse, rtol=1e-12, atol=1e-12)


def test_jacfwd_of_a_function_filling_a_fresh_tensor():
    def f(x):
        y = dg.zeros(3)
        y[0] = x[0] * 2.0
        y[1:] += x[1:].sin()
        y[[2]] *= x[[0]]
        return y

    x = np.array([0.3, -0.4, 1.1])
    expected = np.array([[2.0, 0.0, 0.0],
                         [0.0, np.cos(-0.4), 0.0],
                         [np.sin(1.1), 0.0, np.cos(1.1) * 0.3]])
    np.testing.assert_allclose(func.jacfwd(f)(dg.tensor(x)).numpy(), expected, rtol=1e-13)
    np.testing.assert_allclose(func.jacrev(f)(dg.tensor(x)).numpy(), expected, rtol=1e-13)


def test_batched_cotangents_through_copy_slices_and_index_put():
    x = dg.tensor(RNG.standard_normal(4), requires_grad=True)
    y = x * 2.0
    y[1:3] = x[:2] ** 2
    y[[0, 3]] = x[[3, 0]].sin()
    cotangents = dg.tensor(RNG.standard_normal((5, 4)))
    (batched,) = dg.grad(y, x, cotangents, retain_graph=True, is_grads_batched=True)
    loop = [dg.grad(y, x, c, retain_graph=True)[0].numpy() for c in cotangents]
    np.testing.assert_allclose(batched.numpy(), np.stack(loop), rtol=1e-13)


def test_hvp_through_inplace_ops_keeps_the_old_tangent_for_backward():
    # forward-over-reverse: the rule of mul_ reads the old value's tangent in the backward pass,
    # after the in-place write has overwritten the tensor's tangent
    x, v = dg.tensor(_inputs_for_loss(4)[0]), dg.tensor(RNG.standard_normal(4))
    _, hvp = dg.functional.hvp(loss, x, v)
    hessian = func.jacrev(func.jacrev(loss))(x).numpy()
    np.testing.assert_allclose(hvp.numpy(), hessian @ v.numpy(), rtol=1e-12, atol=1e-12)
