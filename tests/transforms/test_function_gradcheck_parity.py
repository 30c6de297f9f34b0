"""Custom Functions and gradcheck against torch 2.13: behaviours a differential audit found
diverging, with torch's values, error types and key words of its messages pinned literally."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD
from dualgrad.autograd import Function
from dualgrad.func import jvp, vmap


def _function(forward, backward, **extra):
    """A Function class named ``F`` from ``forward(ctx, ...)``, ``backward`` and other staticmethods."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    body.update({name: staticmethod(f) for name, f in extra.items()})
    return type("F", (Function,), body)


def _leaf(values):
    return dg.tensor(values, requires_grad=True)


def _dual(values, tangent):
    return fwAD.make_dual(dg.tensor(values), dg.tensor(tangent))


# -- requires_grad combinations: no_grad, mark_non_differentiable, mark_dirty -------------------
def test_needs_input_grad_is_requires_grad_even_under_no_grad():
    seen = []

    def forward(ctx, x, y, k):
        seen.append(ctx.needs_input_grad)
        return x * y * k

    F = _function(forward, lambda ctx, g: (g, g, None))
    with dg.no_grad():
        out = F.apply(_leaf([1.0]), dg.tensor([2.0]), 3)
    assert seen == [(True, False, False)]  # torch: (True, False, False)
    assert not out.requires_grad and out.grad_fn is None


def test_an_input_returned_as_is_without_a_node_is_detached():
    x = _leaf([1.0, 2.0])
    F = _function(lambda ctx, a: a, lambda ctx, g: g)
    with dg.no_grad():
        y = F.apply(x)
    # torch: requires_grad False, not a view of x (``_base`` None), a leaf sharing x's data
    assert (y.requires_grad, y._base, y.is_leaf) == (False, None, True)
    with dg.no_grad():
        y.add_(1)
    assert x.tolist() == [2.0, 3.0] and x._version == 1


def test_an_input_returned_as_is_marked_non_differentiable_is_detached():
    x = _leaf([1.0, 2.0])

    def forward(ctx, a):
        ctx.mark_non_differentiable(a)
        return a

    y = _function(forward, lambda ctx, g: g).apply(x)
    assert (y.requires_grad, y._base, y.grad_fn) == (False, None, None)  # torch: False, None, None
    y.add_(1)  # (not a view of x: torch allows it)
    assert y.tolist() == [2.0, 3.0] and not y.requires_grad


@pytest.mark.parametrize("case", ["no_grad_leaf", "no_grad_non_leaf", "marked_non_differentiable"])
def test_a_dirty_input_without_a_node_comes_back_detached(case):
    def forward(ctx, a):
        ctx.mark_dirty(a)
        if case == "marked_non_differentiable":
            ctx.mark_non_differentiable(a)
        return a.mul_(2)

    F = _function(forward, lambda ctx, g: g * 2)
    x = _leaf([1.0, 2.0])
    if case == "no_grad_leaf":  # torch: no "leaf Variable ... in-place" error without a graph
        with dg.no_grad():
            y = F.apply(x)
    else:
        x = x.clone()
        if case == "no_grad_non_leaf":
            with dg.no_grad():
                y = F.apply(x)
        else:
            y = F.apply(x)
    # torch: (y is x, y.requires_grad, x.requires_grad, x._version) == (False, False, True, 2)
    assert (y is x, y.requires_grad, x.requires_grad, x._version) == (False, False, True, 2)
    assert x.tolist() == [2.0, 4.0]


# -- what backward returns ---------------------------------------------------------------------
def test_a_complex_gradient_for_a_real_input_raises():
    F = _function(lambda ctx, a: a * 2, lambda ctx, g: g * (1 + 1j))
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - got dtype complex128 .* float64"):
        F.apply(_leaf([1.0, 2.0])).sum().backward()


def test_an_integer_gradient_for_a_complex_input_raises():
    F = _function(lambda ctx, a: a * 2, lambda ctx, g: dg.ones(2, dtype=dg.int64))
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - got dtype int64"):
        F.apply(_leaf([1 + 2j, 3 - 1j])).abs().sum().backward()


def test_real_floating_and_integer_gradients_are_cast_to_the_input_dtype():
    z = _leaf([1 + 2j, 3 - 1j])
    _function(lambda ctx, a: a * 2, lambda ctx, g: (g * 2).real).apply(z).abs().sum().backward()
    assert z.grad.dtype == np.complex128  # torch: tensor([0.8944+0.j, 1.8974+0.j])
    np.testing.assert_allclose(z.grad.numpy(), [0.894427191 + 0j, 1.897366596 + 0j], rtol=1e-8)
    x = _leaf([1.0, 2.0])
    _function(lambda ctx, a: a * 2, lambda ctx, g: dg.ones(2, dtype=dg.int64)).apply(x).sum().backward()
    assert x.grad.dtype == np.float64 and x.grad.tolist() == [1.0, 1.0]


def test_a_non_tensor_gradient_raises_even_for_an_input_that_does_not_require_grad():
    F = _function(lambda ctx, a, b: a * b, lambda ctx, g: (g, "abc"))
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got str\)"):
        F.apply(_leaf([1.0, 2.0]), dg.tensor([1.0])).sum().backward()


# -- ctx methods' argument errors --------------------------------------------------------------
@pytest.mark.parametrize("method", ["mark_dirty", "mark_non_differentiable"])
def test_marking_a_non_tensor_is_a_runtime_error(method):
    def forward(ctx, a):
        getattr(ctx, method)(3)
        return a * 2

    with pytest.raises(RuntimeError, match=f"{method} can only accept variables, but argument 0 is of type int"):
        _function(forward, lambda ctx, g: g).apply(_leaf([1.0]))


def test_set_materialize_grads_takes_a_bool():
    def forward(ctx, a):
        ctx.set_materialize_grads(0)
        return a * 2

    with pytest.raises(TypeError, match="set_materialize_grads"):
        _function(forward, lambda ctx, g: g).apply(_leaf([1.0]))


# -- what jvp returns --------------------------------------------------------------------------
def test_a_jvp_tangent_of_the_wrong_shape_raises():
    F = _function(lambda ctx, a: a * 2, lambda ctx, g: g, jvp=lambda ctx, t: t.sum())
    with fwAD.dual_level(), pytest.raises(RuntimeError, match=(
            r"forward gradient that has a different size .* Tensor is of size \[2\] while the given "
            r"forward gradient is of size \[\]")):
        F.apply(_dual([1.0, 2.0], [1.0, 1.0]))


def test_a_jvp_tangent_that_is_not_a_tensor_raises():
    F = _function(lambda ctx, a: a * 2, lambda ctx, g: g, jvp=lambda ctx, t: 3.0)
    with fwAD.dual_level(), pytest.raises(RuntimeError,
                                          match=r"expected Variable or None \(got float\) for grad output 0"):
        F.apply(_dual([1.0, 2.0], [1.0, 1.0]))


class _Twice(Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _WrongTangentShape(_Twice):
    generate_vmap_rule = True

    @staticmethod
    def jvp(ctx, t):
        return t.sum()


def test_a_jvp_tangent_of_the_wrong_shape_raises_under_a_generated_vmap_rule():
    with pytest.raises(RuntimeError, match="forward gradient that has a different size"):
        vmap(lambda x: jvp(_WrongTangentShape.apply, (x,), (dg.ones(2),)))(dg.ones(3, 2))


# -- the vmap staticmethod -------------------------------------------------------------------------
def _with_vmap_rule(rule):
    return type("V", (_Twice,), {"vmap": staticmethod(rule)})


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_the_vmap_staticmethod_is_told_the_batch_size_and_randomness(randomness):
    seen = []

    def rule(info, in_dims, x):
        seen.append((info.batch_size, info.randomness, in_dims))
        return x * 2, in_dims[0]

    out = vmap(_with_vmap_rule(rule).apply, randomness=randomness)(dg.ones(3, 2))
    assert seen == [(3, randomness, (0,))]  # torch: (3, 'different', (0,)) for randomness='different'
    assert out.tolist() == [[2.0, 2.0]] * 3


def test_the_vmap_staticmethod_may_give_one_out_dim_for_every_output():
    V = _with_vmap_rule(lambda info, in_dims, x: ((x * 2, x * 3), 0))
    a, b = vmap(V.apply)(dg.ones(3, 2))  # torch: twos and threes of shape (3, 2)
    assert a.tolist() == [[2.0, 2.0]] * 3 and b.tolist() == [[3.0, 3.0]] * 3


def test_a_vmap_staticmethod_returning_only_the_output_raises():
    V = _with_vmap_rule(lambda info, in_dims, x: x * 2)
    with pytest.raises(RuntimeError, match="Expected the vmap staticmethod to have two returns, an output and"):
        vmap(V.apply)(dg.ones(3, 2))


def test_a_vmap_staticmethod_with_out_dims_not_matching_the_output_raises():
    V = _with_vmap_rule(lambda info, in_dims, x: (x * 2, (0, 0)))
    with pytest.raises(RuntimeError, match=(
            r"vmap staticmethod returned an incompatible \(output, out_dims\) tuple. Expected "
            r"out_dims=\(0, 0\) to be compatible with the structure of `output`")):
        vmap(V.apply)(dg.ones(3, 2))


# -- gradcheck: outputs that do not require grad in forward mode -----------------------------------
@pytest.mark.parametrize("fast_mode", [False, True])
def test_forward_mode_gradcheck_of_outputs_that_do_not_require_grad_expects_them_constant(fast_mode):
    x = _leaf([1.0, 2.0])
    with pytest.raises(dg.autograd.GradcheckError, match="Numerical gradient for function expected to be zero"):
        dg.gradcheck(lambda t: t.detach() * 3, (x,), check_forward_ad=True, check_backward_ad=False,
                     fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_forward_mode_gradcheck_skips_outputs_that_do_not_require_grad_like_reverse_mode(fast_mode):
    x = _leaf([1.0, 2.0])
    for func in (lambda t: (t * 2, t.detach() * 3), lambda t: (t.detach() * 3, t * 2)):
        assert dg.gradcheck(func, (x,), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(dg.autograd.GradcheckError, match="computed with forward mode mismatch for output 1"):
        dg.gradcheck(lambda t: (t.detach() * 3, t * 2 + t.detach()), (x,), check_forward_ad=True,
                     check_backward_ad=False)
