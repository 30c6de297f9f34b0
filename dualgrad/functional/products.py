"""Vector products: ``vjp`` and ``vhp`` (reverse mode), ``jvp`` and ``hvp`` (forward mode, one pass)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.state import STATE
from ..factories import zeros_like
from ..forward_ad import dual_level, make_dual, unpack_dual
from ..forward_ad.engine import DualLevel, set_tangent
from ..reverse import enable_grad
from ..reverse import grad as autograd_grad
from ..reverse.api import implicit_grad, in_dtype_of
from ..reverse.engine import run_backward
from ..tensor import Tensor
from ..transforms.levels import reverse_level
from ._common import (
    INDEPENDENT,
    JACOBIAN_INDEPENDENT,
    as_tuple,
    check_requires_grad,
    check_v,
    fill_unused,
    finish,
    graph_needed,
    prepare,
    scalar_output,
    unpack,
)

V_NONE_OUTPUT = (
    "The vector v can only be None if the user-provided function returns a single Tensor with a single "
    "element."
)
V_NONE_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
    "single element."
)
# torch's strict-mode messages for a product that does not reach an entry of the vector
NOT_REACHED = {
    "jvp": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
           "using the double backward trick to compute forward mode gradients. This is not allowed in "
           "strict mode.",
    "vhp": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
           "in strict mode.",
}


def _pullback(outputs: tuple, inputs: tuple, vs: tuple, create_graph: bool) -> tuple:
    """``sum_i v_i^T d outputs_i / d inputs`` (None for inputs the outputs do not reach)."""
    pairs = [(o, v) for o, v in zip(outputs, vs, strict=True) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad([o for o, _ in pairs], inputs, [v for _, v in pairs], retain_graph=True,
                         create_graph=create_graph, allow_unused=True)


def _gradient(out: Any, inputs: tuple, create_graph: bool) -> tuple:
    """``d out / d inputs`` for a scalar ``out``; without ``create_graph`` the graph, private to
    the caller, is not retained (its saved tensors are freed as the pass uses them: a lower peak)."""
    if not out.requires_grad:
        return (None,) * len(inputs)
    seed = implicit_grad(out)  # (torch's error for a complex ``out``)
    if create_graph:
        return _pullback((out,), inputs, (seed,), create_graph)
    return tuple(run_backward((out,), (seed,), retain_graph=False, create_graph=False,
                              inputs=inputs, accumulate=False))


def _tangents(vs: tuple, inputs: tuple) -> tuple:
    """``v`` as tangents of ``inputs``: each entry in its input's dtype (an integer one too), and
    torch's error for a complex entry of a real input or the reverse (its double-backward trick's)."""
    return tuple(in_dtype_of(x, t, i) for i, (x, t) in enumerate(zip(inputs, vs, strict=True)))


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
    record = graph_needed(create_graph)
    with enable_grad(), reverse_level() as level:
        in_tuple, inputs = as_tuple(inputs, "inputs", "vjp")
        xs = prepare(inputs, create_graph, level, "vjp")
        out_tuple, outputs = as_tuple(func(*xs), "outputs of the user-provided function", "vjp")
        check_requires_grad(outputs, strict)
        vs = check_v(v, outputs, out_tuple, "vjp", V_NONE_OUTPUT)
        grads = fill_unused(_pullback(outputs, xs, vs, record), xs, strict, INDEPENDENT, create_graph)
    return unpack(finish(outputs, create_graph), out_tuple), unpack(finish(grads, create_graph), in_tuple)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)``: the Jacobian-vector product, in one forward-mode pass.

    Each entry of ``v`` is taken in its input's dtype (an integer ``v`` too), as
    in torch; a complex entry for a real input (or the reverse) is torch's
    ``RuntimeError``. ``hvp`` takes ``v`` the same way.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import jvp
    >>> jvp(lambda x: x ** 2, dg.tensor([1., 2.]), dg.tensor([1., 0.]))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    in_tuple, inputs = as_tuple(inputs, "inputs", "jvp")
    vs = _tangents(check_v(v, inputs, in_tuple, "jvp", V_NONE_INPUT), inputs)
    record = graph_needed(create_graph)
    with enable_grad(), reverse_level() as own, dual_level() as number:
        level = STATE.dual_levels[number]
        level.tape_tangents = record
        xs = prepare(inputs, create_graph, own, "jvp", need_graph=create_graph or strict)
        out_tuple, outputs = as_tuple(func(*[make_dual(x, t) for x, t in zip(xs, vs, strict=True)]),
                                      "outputs of the user-provided function", "jvp")
        if strict:  # torch's checks: every output depends on the inputs, every input is used
            check_requires_grad(outputs, strict)
            fill_unused(_pullback(outputs, xs, tuple(zeros_like(o) for o in outputs), False), xs, strict,
                        INDEPENDENT)
        primals, tangents = zip(*(unpack_dual(out) for out in outputs), strict=True)
        tangents = fill_unused(tangents, primals, strict, NOT_REACHED["jvp"], create_graph)
        # make_dual keeps v's dtype; torch's jvp gives the output's
        tangents = tuple(t.to(p.dtype) for t, p in zip(tangents, primals, strict=True))
    return unpack(finish(primals, create_graph), out_tuple), unpack(finish(tangents, create_graph), out_tuple)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T H)`` for scalar ``func``, by reverse mode over reverse mode.

    ``func`` returns one real element (a complex one is torch's ``RuntimeError``, as for ``hvp``).

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import vhp
    >>> vhp(lambda x: (x ** 3).sum(), dg.tensor([1., 2.]), dg.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    record = graph_needed(create_graph)
    with enable_grad(), reverse_level() as level:
        in_tuple, inputs = as_tuple(inputs, "inputs", "vhp")
        vs = check_v(v, inputs, in_tuple, "vhp", V_NONE_INPUT)
        xs = prepare(inputs, create_graph, level, "vhp")
        out = scalar_output(func, xs, "vhp", strict)
        jac = fill_unused(_gradient(out, xs, True), xs, strict, INDEPENDENT)
        check_requires_grad(jac, strict, JACOBIAN_INDEPENDENT)
        grads = fill_unused(_pullback(jac, xs, vs, record), xs, strict, NOT_REACHED["vhp"],
                            create_graph, "hessian")
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
    vs = _tangents(check_v(v, inputs, in_tuple, "hvp", V_NONE_INPUT), inputs)
    record = graph_needed(create_graph)
    with enable_grad(), reverse_level() as own, dual_level() as number:
        level = STATE.dual_levels[number]
        level.tape_tangents = record
        xs = tuple(_carrying(x, t, level) for x, t in zip(prepare(inputs, create_graph, own, "hvp"), vs, strict=True))
        level.defer_tangents = not record
        out = scalar_output(func, xs, "hvp", strict)
        level.defer_tangents = False
        if not record:  # never read: what its deferred tangent holds goes now (when recorded, a
            # backward rule reading ``out`` as a saved output takes its tangent from ``out`` itself)
            set_tangent(out, level, None)
        grads = fill_unused(_gradient(out, xs, record), xs, strict, INDEPENDENT)
        # a missing tangent: the gradient does not depend on the inputs (torch's jacobian check)
        products = fill_unused(tuple(unpack_dual(g).tangent for g in grads), grads, strict,
                               JACOBIAN_INDEPENDENT, create_graph, "hessian")
        value = unpack_dual(out).primal
    return finish((value,), create_graph)[0], unpack(finish(products, create_graph), in_tuple)
