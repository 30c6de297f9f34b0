"""Memory of custom Functions that save their own outputs: no reference cycle, no leak.

A Function that saves one of its outputs (the reference's ``Exp``: ``result = i.exp();
ctx.save_for_backward(result)``) must not hold that output Tensor: ctx -> output ->
its ``grad_fn`` (the Function's node) -> ctx would be a cycle that only the garbage
collector frees. As torch does, an output is saved as data + version counter and
re-attached to the node when unpacked; ``save_for_forward`` outputs are given back to
``jvp`` as aliases of the outputs. Every check runs with ``gc`` disabled, after a
backward and after the graph is just dropped, and the values and derivatives are
checked too (gradcheck / gradgradcheck / exact Hessians).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np
import pytest
from helpers import gc_disabled
from test_rel_memory import census

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.autograd import Function
from dualgrad.tensor import Tensor
from dualgrad.transforms.function import once_differentiable


def leaked(step: Callable[[], object]) -> collections.Counter:
    """Graph objects left alive by three calls of ``step`` (after one warm-up call), gc disabled."""
    with gc_disabled():
        step()
        before = census()
        for _ in range(3):
            step()
        return census() - before


# -- the Functions ---------------------------------------------------------------------------------
class Exp(Function):
    """The reference example, with a jvp reading the saved output (``save_for_forward``)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        ctx.save_for_forward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result

    @staticmethod
    def jvp(ctx, tangent):
        (result,) = ctx.saved_tensors
        return tangent * result


class ExpSetupContext(Function):
    """``Exp`` in the ``forward`` + ``setup_context`` style."""

    @staticmethod
    def forward(i):
        return i.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result

    @staticmethod
    def jvp(ctx, tangent):
        (result,) = ctx.saved_tensors
        return tangent * result


class ExpTimes(Function):
    """``exp(x) * y``, saving the inputs and the output."""

    @staticmethod
    def forward(ctx, x, y):
        out = x.exp() * y
        ctx.save_for_backward(x, y, out)
        ctx.save_for_forward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y, out = ctx.saved_tensors
        return g * out, g * x.exp()

    @staticmethod
    def jvp(ctx, x_dot, y_dot):
        x, y, out = ctx.saved_tensors
        return x_dot * out + y_dot * x.exp()


class ExpInPlace(Function):
    """``x.exp_()`` marked dirty, saving ``x`` (an input that is also the output)."""

    @staticmethod
    def forward(ctx, x):
        x.exp_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result

    @staticmethod
    def jvp(ctx, tangent):
        (result,) = ctx.saved_tensors
        return tangent * result


class ExpOnce(Function):
    """``Exp`` with a ``once_differentiable`` backward."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class ExpAndSquare(Function):
    """Two outputs, the first saved, the second not."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(x, result)
        return result, x * x

    @staticmethod
    def backward(ctx, g_exp, g_square):
        x, result = ctx.saved_tensors
        return g_exp * result + 2 * g_square * x


def exp_in_place(x: Tensor) -> Tensor:
    return ExpInPlace.apply(x * 1.0)


def exp_times_self(x: Tensor) -> Tensor:
    return ExpTimes.apply(x, x.sin())


def exp_and_square(x: Tensor) -> Tensor:
    e, s = ExpAndSquare.apply(x)
    return e + s


ONE_INPUT = {
    "exp": Exp.apply,
    "exp_setup_context": ExpSetupContext.apply,
    "exp_times": exp_times_self,
    "exp_in_place": exp_in_place,
    "exp_once_differentiable": ExpOnce.apply,
    "exp_and_square": exp_and_square,
}
TWICE_DIFFERENTIABLE = sorted(set(ONE_INPUT) - {"exp_once_differentiable"})
WITH_JVP = ["exp", "exp_setup_context", "exp_times", "exp_in_place"]


def _x() -> Tensor:
    return dg.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)


# -- no graph object survives ----------------------------------------------------------------------
def _backward(f: Callable, x: Tensor) -> None:
    f(x).sum().backward()
    x.grad = None


def _dropped(f: Callable, x: Tensor) -> None:
    """The graph is built and dropped without a backward."""
    f(x).sum()


def _double_backward(f: Callable, x: Tensor) -> None:
    (g,) = dg.grad(f(x).sum(), x, create_graph=True)
    dg.grad((g * g).sum(), x)


def _double_backward_dropped(f: Callable, x: Tensor) -> None:
    """A first-order graph with create_graph=True, dropped without the second backward."""
    dg.grad(f(x).sum(), x, create_graph=True)


def _retain_graph_then_dropped(f: Callable, x: Tensor) -> None:
    y = f(x).sum()
    dg.grad(y, x, retain_graph=True)


def _under_save_on_cpu(f: Callable, x: Tensor) -> None:
    with dg.graph.save_on_cpu():
        y = f(x).sum()
    y.backward()
    x.grad = None


def _under_copying_hooks(f: Callable, x: Tensor) -> None:
    with dg.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(), dg.tensor):
        y = f(x).sum()
    (g,) = dg.grad(y, x, create_graph=True)
    g.sum()


SCENARIOS = {
    "backward": _backward,
    "dropped": _dropped,
    "retain_graph_then_dropped": _retain_graph_then_dropped,
    "save_on_cpu": _under_save_on_cpu,
    "copying_hooks": _under_copying_hooks,
}
SECOND_ORDER = {
    "double_backward": _double_backward,
    "double_backward_dropped": _double_backward_dropped,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_function_saving_its_output_leaves_no_graph_objects(name, scenario):
    x = _x()
    assert leaked(lambda: SCENARIOS[scenario](ONE_INPUT[name], x)) == {}


@pytest.mark.parametrize("scenario", sorted(SECOND_ORDER))
@pytest.mark.parametrize("name", TWICE_DIFFERENTIABLE)
def test_second_order_through_a_saved_output_leaves_no_graph_objects(name, scenario):
    x = _x()
    assert leaked(lambda: SECOND_ORDER[scenario](ONE_INPUT[name], x)) == {}


def test_once_differentiable_double_backward_raises_and_leaves_no_graph_objects():
    x = _x()

    def step() -> None:
        (g,) = dg.grad(ExpOnce.apply(x).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()

    assert leaked(step) == {}


# -- forward mode and forward over reverse ---------------------------------------------------------
def _forward_mode(f: Callable, x: Tensor) -> None:
    with fwAD.dual_level():
        fwAD.unpack_dual(f(fwAD.make_dual(x.detach(), dg.ones_like(x)))).tangent.sum()


def _tangent_requiring_grad(f: Callable, x: Tensor) -> None:
    """A taped tangent: the jvp's ``tangent * result`` must not hold the output that holds the tangent."""
    with fwAD.dual_level():
        fwAD.unpack_dual(f(fwAD.make_dual(x.detach(), dg.ones_like(x).requires_grad_()))).tangent.sum()


def _forward_on_grad_inputs(f: Callable, x: Tensor) -> None:
    with fwAD.dual_level():
        fwAD.unpack_dual(f(fwAD.make_dual(x, dg.ones_like(x)))).tangent.sum()


def _make_dual_hvp(f: Callable, x: Tensor) -> Tensor:
    """Forward over reverse by hand: the tangent of the gradient of ``f(x).sum()`` along ``[1, -2, .5, 3]``."""
    v = dg.tensor([1.0, -2.0, 0.5, 3.0])
    with fwAD.dual_level():
        (g,) = dg.grad(f(fwAD.make_dual(x, v)).sum(), x, create_graph=True)
        return fwAD.unpack_dual(g).tangent


def _forward_over_forward(f: Callable, x: Tensor) -> Tensor:
    """Nested dual levels, both along ones: the second derivative of ``f`` (elementwise) at ``x``."""
    with fwAD.dual_level():
        outer = fwAD.make_dual(x.detach(), dg.ones_like(x))
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(outer, dg.ones_like(x)))).tangent
        return fwAD.unpack_dual(tangent).tangent


FORWARD = {
    "forward_mode": _forward_mode,
    "forward_over_forward": _forward_over_forward,
    "tangent_requiring_grad": _tangent_requiring_grad,
    "forward_on_grad_inputs": _forward_on_grad_inputs,
    "make_dual_hvp": _make_dual_hvp,
}


@pytest.mark.parametrize("scenario", sorted(FORWARD))
@pytest.mark.parametrize("name", WITH_JVP)
def test_forward_mode_through_a_saved_output_leaves_no_graph_objects(name, scenario):
    x = _x()
    assert leaked(lambda: FORWARD[scenario](ONE_INPUT[name], x)) == {}


def test_func_hessian_of_exp_is_exact_and_leaves_no_graph_objects():
    """``dualgrad.func.hessian`` (forward over reverse, under vmap) of a Function saving its output."""
    x = _x().detach()
    hessian = dg.func.hessian(lambda x: Exp.apply(x).sum())
    np.testing.assert_allclose(hessian(x).numpy(), np.diag(np.exp(x.numpy())), rtol=1e-12)
    assert leaked(lambda: hessian(x)) == {}


def _second_derivative(name: str, x: np.ndarray) -> np.ndarray:
    """The closed-form second derivative of ``ONE_INPUT[name]`` (elementwise)."""
    if name == "exp_times":
        return 2 * np.exp(x) * np.cos(x)  # d2/dx2 of exp(x) sin(x)
    return np.exp(x)


@pytest.mark.parametrize("name", WITH_JVP)
def test_forward_over_reverse_through_a_saved_output_is_exact(name):
    """The Hessian-vector product through the saved output, against the closed form."""
    x = _x()
    v = np.array([1.0, -2.0, 0.5, 3.0])
    expected = _second_derivative(name, x.detach().numpy()) * v
    np.testing.assert_allclose(_make_dual_hvp(ONE_INPUT[name], x).detach().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("name", WITH_JVP)
def test_forward_over_forward_through_a_saved_output_is_exact(name):
    """Nested levels: the inner jvp reads the saved output with its outer tangent."""
    x = _x()
    expected = _second_derivative(name, x.detach().numpy())
    np.testing.assert_allclose(_forward_over_forward(ONE_INPUT[name], x).numpy(), expected, rtol=1e-12)


# -- values and derivatives stay right -------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_gradcheck(name):
    assert dg.gradcheck(ONE_INPUT[name], (_x(),), check_forward_ad=name in WITH_JVP)


@pytest.mark.parametrize("name", TWICE_DIFFERENTIABLE)
def test_gradgradcheck(name):
    assert dg.gradgradcheck(ONE_INPUT[name], (_x(),))


def test_gradcheck_two_inputs_saving_inputs_and_output():
    inputs = (_x(), dg.tensor([0.5, -1.5, 2.0, 0.3], requires_grad=True))
    assert dg.gradcheck(ExpTimes.apply, inputs, check_forward_ad=True)
    assert dg.gradgradcheck(ExpTimes.apply, inputs)


# -- what backward and jvp see ---------------------------------------------------------------------
def _probing(cls: type, seen: list) -> type:
    """``cls`` whose backward and jvp append ``(where, ctx.saved_tensors)`` to ``seen``."""

    def backward(ctx, *grads):
        seen.append(("backward", ctx.saved_tensors))
        return cls.backward(ctx, *grads)

    def jvp(ctx, *tangents):
        seen.append(("jvp", ctx.saved_tensors))
        return cls.jvp(ctx, *tangents)

    return type(f"Probed{cls.__name__}", (cls,), {"backward": staticmethod(backward), "jvp": staticmethod(jvp)})


@pytest.mark.parametrize("cls", [Exp, ExpSetupContext, ExpInPlace], ids=lambda c: c.__name__)
def test_saved_output_comes_back_attached_to_the_node(cls):
    """``saved_tensors`` gives a new Tensor with the output's data, whose grad_fn is the Function's node."""
    seen: list = []
    x = _x()
    out = _probing(cls, seen).apply(x * 1.0)
    out.sum().backward(retain_graph=True)
    ((where, (saved,)),) = seen
    assert where == "backward"
    assert saved is not out and saved.grad_fn is out.grad_fn and saved._output_nr == 0
    assert saved.requires_grad and saved._data is out._data


def test_jvp_sees_an_alias_of_the_saved_output():
    """Inside ``jvp`` a ``save_for_forward`` output is an alias (same data, counter, node), not the output."""
    seen: list = []
    x = _x()
    with fwAD.dual_level():
        out = _probing(Exp, seen).apply(fwAD.make_dual(x, dg.ones_like(x)))
        ((where, (saved,)),) = seen
    assert where == "jvp"
    assert saved is not out and saved._data is out._data
    assert saved.grad_fn is out.grad_fn and saved._version_counter() is out._version_counter()


@pytest.mark.parametrize("cls", [Exp, ExpSetupContext], ids=lambda c: c.__name__)
def test_saved_output_changed_in_place_raises(cls):
    x = _x()
    out = cls.apply(x)
    with dg.no_grad():
        out.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_saved_tensors_after_the_graph_is_gone_raise():
    """ctx holds its node weakly (the node holds ctx): once the graph is dropped, saved tensors are gone."""
    ctx = Exp.apply(_x()).grad_fn.op.ctx
    with pytest.raises(RuntimeError, match="saved tensors after they have already been freed"):
        _ = ctx.saved_tensors


def test_ctx_keeps_no_tensor_after_forward():
    """Everything ctx was given during forward is converted or dropped: a direct regression for the cycle."""
    x = _x()
    out = ExpInPlace.apply(x * 1.0)
    ctx = out.grad_fn.op.ctx
    assert ctx._to_save == () and ctx._dirty == () and ctx._non_differentiable == ()
    assert not any(isinstance(t, Tensor) for t in ctx._for_forward)
