"""Vector products: ``vjp`` and ``vhp`` (reverse mode), ``jvp`` and ``hvp`` (forward mode, one pass)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._state import STATE
from ..factories import zeros_like
from ..forward_ad import dual_level, make_dual, unpack_dual
from ..forward_ad.engine import DualLevel, set_tangent
from ..reverse import enable_grad
from ..reverse import grad as autograd_grad
from ..reverse.engine import run_backward
from ..tensor import Tensor
from ._common import as_tuple, check_requires_grad, check_v, fill_unused, finish, prepare, unpack

INDEPENDENT = (
    "The output of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode."
)
# torch's message when the Hessian is structurally zero (its jacobian does not depend on the input).
JACOBIAN_INDEPENDENT = (
    "While computing the hessian, found that the jacobian of the user-provided function with respect "
    "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
    "that your function is twice differentiable and that the jacobian depends on the inputs (this would "
    "be violated by a linear function for example)."
)


def _pullback(outputs: tuple, inputs: tuple, vs: tuple, create_graph: bool) -> tuple:
    """``sum_i v_i^T d outputs_i / d inputs`` (None for inputs the outputs do not reach)."""
    pairs = [(o, v) for o, v in zip(outputs, vs, strict=True) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad([o for o, _ in pairs], inputs, [v for _, v in pairs], retain_graph=True,
                         create_graph=create_graph, allow_unused=True)


def _gradient(out: Any, inputs: tuple, create_graph: bool) -> tuple:
    """``d out / d inputs`` for a scalar ``out``; without ``create_graph`` the graph, private
    to the caller, has its saved tensors freed as the backward pass uses them (a lower peak)."""
    if create_graph or not out.requires_grad:
        return _pullback((out,), inputs, (zeros_like(out) + 1,), create_graph)
    return tuple(run_backward((out,), (zeros_like(out) + 1,), retain_graph=False, create_graph=False,
                              inputs=inputs, accumulate=False, free_as_used=True))


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    ``v`` matches the outputs (it may be omitted for a single-element output).
    ``create_graph=True`` makes the results differentiable; ``strict=True``
    raises when an output does not depend on an input.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import vjp
    >>> vjp(lambda x: x ** 2, dg.tensor([1., 2.]), dg.tensor([1., 1.]))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        in_tuple, inputs = as_tuple(inputs, "inputs", "vjp")
        xs = prepare(inputs, create_graph)
        out_tuple, outputs = as_tuple(func(*xs), "outputs of the user-provided function", "vjp")
        check_requires_grad(outputs, strict)
        vs = check_v(v, outputs, "vjp")
        grads = fill_unused(_pullback(outputs, xs, vs, create_graph), xs, strict, INDEPENDENT)
    return unpack(finish(outputs, create_graph), out_tuple), unpack(finish(grads, create_graph), in_tuple)


def _input_vectors(v: Any, inputs: tuple, fn_name: str) -> tuple:
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single "
                "Tensor with a single element."
            )
        return (zeros_like(inputs[0]) + 1,)
    return check_v(v, inputs, fn_name)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)``: the Jacobian-vector product, in one forward-mode pass.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import jvp
    >>> jvp(lambda x: x ** 2, dg.tensor([1., 2.]), dg.tensor([1., 0.]))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    in_tuple, inputs = as_tuple(inputs, "inputs", "jvp")
    vs = _input_vectors(v, inputs, "jvp")
    with enable_grad(), dual_level() as number:
        level = STATE.dual_levels[number]
        level.tape_tangents = create_graph
        xs = prepare(inputs, create_graph, need_graph=create_graph or strict)
        out_tuple, outputs = as_tuple(func(*[make_dual(x, t) for x, t in zip(xs, vs, strict=True)]),
                                      "outputs of the user-provided function", "jvp")
        if strict:  # torch's checks: every output depends on the inputs, every input is used
            check_requires_grad(outputs, strict)
            fill_unused(_pullback(outputs, xs, tuple(zeros_like(o) for o in outputs), False), xs, strict,
                        INDEPENDENT)
        primals, tangents = [], []
        for i, out in enumerate(outputs):
            primal, tangent = unpack_dual(out)
            if tangent is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of the inputs. This "
                        "is not allowed in strict mode."
                    )
                tangent = zeros_like(primal)
            elif tangent.dtype != primal.dtype:  # (make_dual keeps v's dtype; torch's jvp gives the output's)
                tangent = tangent.to(primal.dtype)
            primals.append(primal)
            tangents.append(tangent)
    return (unpack(finish(tuple(primals), create_graph), out_tuple),
            unpack(finish(tuple(tangents), create_graph), out_tuple))


def _scalar_output(func: Callable, xs: tuple, fn_name: str) -> Any:
    out = func(*xs)
    _, outs = as_tuple(out, "outputs of the user-provided function", fn_name)
    if len(outs) != 1 or isinstance(out, (tuple, list)):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single element"
        )
    return out


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T H)`` for scalar ``func``, by reverse mode over reverse mode.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import vhp
    >>> vhp(lambda x: (x ** 3).sum(), dg.tensor([1., 2.]), dg.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        in_tuple, inputs = as_tuple(inputs, "inputs", "vhp")
        vs = _input_vectors(v, inputs, "vhp")
        xs = prepare(inputs, create_graph)
        out = _scalar_output(func, xs, "vhp")
        check_requires_grad((out,), strict)
        jac = fill_unused(_pullback((out,), xs, (zeros_like(out) + 1,), True), xs, strict, INDEPENDENT)
        grads = fill_unused(_pullback(jac, xs, vs, create_graph), xs, strict, JACOBIAN_INDEPENDENT)
    return finish((out,), create_graph)[0], unpack(finish(grads, create_graph), in_tuple)


def _carrying(x: Tensor, tangent: Tensor, level: DualLevel) -> Tensor:
    """``x``, an input private to the caller, given ``tangent`` at ``level`` itself.

    ``make_dual`` (its checks) without its view: the gradients of ``x``
    then accumulate into one buffer, with no view node between them and ``x``.
    """
    make_dual(x, tangent, level=level.depth)
    set_tangent(x, level, tangent)
    return x


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), H v)`` for scalar ``func``, by forward mode over reverse mode (one pass each).

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import hvp
    >>> hvp(lambda x: (x ** 3).sum(), dg.tensor([1., 2.]), dg.tensor([1., 0.]))
    (tensor(9.), tensor([6., 0.]))
    """
    in_tuple, inputs = as_tuple(inputs, "inputs", "hvp")
    vs = _input_vectors(v, inputs, "hvp")
    with enable_grad(), dual_level() as number:
        level = STATE.dual_levels[number]
        level.tape_tangents = create_graph
        xs = tuple(_carrying(x, t, level) for x, t in zip(prepare(inputs, create_graph), vs, strict=True))
        level.defer_tangents = not create_graph
        out = _scalar_output(func, xs, "hvp")
        level.defer_tangents = False
        set_tangent(out, level, None)  # never read: what its deferred tangent holds goes now
        check_requires_grad((out,), strict)
        grads = fill_unused(_gradient(out, xs, create_graph), xs, strict, INDEPENDENT)
        products = []
        for i, g in enumerate(grads):
            tangent = unpack_dual(g).tangent
            if tangent is None:
                if strict:
                    raise RuntimeError(JACOBIAN_INDEPENDENT.format(i=i))
                tangent = zeros_like(g)
            products.append(tangent)
        value = unpack_dual(out).primal
    return finish((value,), create_graph)[0], unpack(finish(tuple(products), create_graph), in_tuple)
