"""What forward-over-reverse keeps alive, and that keeping less changes no derivative.

* ops save only what the rules of the inputs needing a gradient read (``mul``,
  ``div``, ``pow``), as torch does;
* ``hvp``/``jvp`` without ``create_graph`` run their tangent rules untaped;
* a backward without ``retain_graph`` frees each node's saved tensors once it ran (torch's).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import directional_fd, vdot
from hypothesis import given
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad import forward_ad as fwAD

BINARY = {"mul": lambda x, y: x * y, "div": lambda x, y: x / y, "pow": lambda x, y: x ** y}


def _gradients_fd(fn, arrays, needs, rng):
    """``<grad, v>`` of ``sum(fn * u)`` by reverse mode and by central differences."""
    xs = [dg.tensor(a, requires_grad=n) for a, n in zip(arrays, needs, strict=True)]
    out = fn(*xs)
    u = rng.standard_normal(out.shape)
    wanted = [x for x, n in zip(xs, needs, strict=True) if n]
    grads = dg.grad((out * dg.tensor(u)).sum(), wanted)
    vs = [rng.standard_normal(a.shape) if n else np.zeros(a.shape)
          for a, n in zip(arrays, needs, strict=True)]
    expected = vdot([u], directional_fd(fn, arrays, vs))
    return vdot(grads, [v for v, n in zip(vs, needs, strict=True) if n]), expected


@pytest.mark.parametrize("name", sorted(BINARY))
@given(needs=st.sampled_from([(True, False), (False, True), (True, True)]), seed=st.integers(0, 2**16))
def test_binary_gradients_with_either_input_constant(name, needs, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.5, 2.0, (3, 1)), rng.uniform(0.5, 2.0, (4,))]  # broadcasting, positive bases
    got, expected = _gradients_fd(BINARY[name], arrays, needs, rng)
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("name", ["mul", "div"])
def test_input_not_needed_may_change_in_place(name):
    """As in torch: ``y * c`` / ``y / c`` with ``c`` constant does not save ``y``."""
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    c = dg.tensor([3.0, 4.0])
    y = x + 1
    z = BINARY[name](y, c)
    y.mul_(2)
    z.sum().backward()
    expected = [3.0, 4.0] if name == "mul" else [1 / 3, 1 / 4]
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_input_needed_still_checked_for_in_place_changes():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    c = dg.tensor([3.0, 4.0])
    y = x + 1
    z = c * y  # d z / d y reads c
    c.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_pow_with_scalar_exponent_saves_no_result():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    p = x ** 3
    assert "_saved_result" not in dir(p.grad_fn)
    assert p.grad_fn._saved_self.tolist() == [1.0, 2.0]
    q = x ** dg.tensor([2.0, 2.0], requires_grad=True)
    assert q.grad_fn._saved_result.tolist() == [1.0, 4.0]


def _rosenbrock(x):
    head, tail = x[:-1], x[1:]
    return (100.0 * (tail - head ** 2) ** 2 + (1.0 - head) ** 2).sum() + (x / (x * x + 1.0)).sum()


@given(seed=st.integers(0, 2**16), create_graph=st.booleans())
def test_hvp_matches_finite_differences_of_the_gradient(seed, create_graph):
    rng = np.random.default_rng(seed)
    x0, v0 = rng.uniform(-1.5, 1.5, 6), rng.standard_normal(6)

    def gradient(t):
        with dg.enable_grad():
            leaf = t.detach().requires_grad_()
            return dg.grad(_rosenbrock(leaf), leaf)[0]

    value, product = dg.functional.hvp(_rosenbrock, dg.tensor(x0), dg.tensor(v0), create_graph=create_graph)
    np.testing.assert_allclose(value.item(), _rosenbrock(dg.tensor(x0)).item())
    np.testing.assert_allclose(product.detach().numpy(), directional_fd(gradient, [x0], [v0])[0],
                               rtol=1e-6, atol=1e-6)


def test_hvp_create_graph_result_is_differentiable():
    """With ``create_graph=True`` the tangents stay taped: d/dx <H(x) v, w> is a third derivative."""
    x = dg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    v = dg.tensor([1.0, 0.0, 2.0])
    _, product = dg.functional.hvp(lambda t: (t ** 4).sum(), x, v, create_graph=True)
    (third,) = dg.grad(product.sum(), x)
    np.testing.assert_allclose(third.numpy(), 24 * x.detach().numpy() * v.numpy())


def _tangent_taped(fn, create_graph):
    """Whether the tangent of an intermediate of ``fn`` (called by ``fn``'s transform) has a graph."""
    seen = []
    w = dg.tensor([2.0, 3.0], requires_grad=True)  # closed over: tapes the tangent even for jvp

    def probe(t):
        inner = (t * w).sin() * t
        seen.append(fwAD.unpack_dual(inner).tangent.grad_fn is not None)
        return inner.sum()

    fn(probe, dg.tensor([0.5, 1.0], requires_grad=True), dg.tensor([1.0, 1.0]), create_graph=create_graph)
    return seen[0]


@pytest.mark.parametrize("name", ["hvp", "jvp"])
def test_tangent_rules_are_taped_only_with_create_graph(name):
    fn = getattr(dg.functional, name)
    assert not _tangent_taped(fn, False)
    assert _tangent_taped(fn, True)


@pytest.mark.parametrize("retain_graph", [False, True])
def test_saved_tensors_are_released_as_soon_as_their_node_ran(retain_graph):
    x = dg.tensor([0.5, 1.0], requires_grad=True)
    y = x.sin()  # its node runs after exp's
    z = y.exp()
    exp_node = z.grad_fn
    released_when_sin_ran = []
    y.grad_fn.register_prehook(lambda grads: released_when_sin_ran.append(exp_node._released))
    (g,) = dg.grad(z.sum(), x, retain_graph=retain_graph)
    assert released_when_sin_ran == [not retain_graph]
    x0 = x.detach().numpy()
    np.testing.assert_allclose(g.numpy(), np.exp(np.sin(x0)) * np.cos(x0))
    if retain_graph:
        z.sum().backward()
    else:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            z.sum().backward()
