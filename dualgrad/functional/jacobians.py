"""Full Jacobians and Hessians: row by row, or in one batched pass (``vectorize=True``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..factories import zeros_like
from ..ops.shape.core import stack
from ..reverse import enable_grad
from ..reverse import grad as autograd_grad
from ..tensor import Tensor
from ..transforms.func import _jvp as func_jvp
from ..transforms.func import _rows, _to_trailing
from ..transforms.levels import reverse_level, tracked_by_enclosing_transform
from ..vmap.batching import make_batched, output_at, vmap_level
from ..vmap.identity_basis import identity_blocks
from ._common import (
    JACOBIAN_INDEPENDENT,
    as_tuple,
    check_requires_grad,
    fill_unused,
    finish,
    graph_needed,
    prepare,
    refuse_batched,
    scalar_output,
)

FORWARD_NEEDS_VECTORIZE = (
    "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only implemented for "
    "`vectorize=True`."
)
NOT_TOGETHER = (
    "dualgrad.autograd.functional.jacobian: `{option}=True` and `{other}` are not supported together{yet}. "
    "Please either set `{option}=False` or `{alternative}`."
)
FORWARD_NOT_TOGETHER = dict(other='strategy="forward-mode"', yet=" (yet)", alternative='strategy="reverse-mode"')
STRICT_OUTPUT_INDEPENDENT = (
    "Output {o} of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode."
)


def _rows_loop(outputs: tuple, xs: tuple, record: bool, strict: bool, create_graph: bool) -> list:
    """One backward pass per output element (``vectorize=False``), recorded if ``record``."""
    jac = []
    for o, out in enumerate(outputs):
        flat = out.reshape(-1)
        rows: list = [[] for _ in xs]
        for j in range(flat.shape[0]):
            grads = (autograd_grad(flat[j], xs, retain_graph=True, create_graph=record,
                                   allow_unused=True) if out.requires_grad else (None,) * len(xs))
            grads = fill_unused(grads, xs, strict, STRICT_OUTPUT_INDEPENDENT.replace("{o}", str(o)),
                                create_graph)
            for r, g in zip(rows, grads, strict=True):
                r.append(g)
        jac.append(tuple(stack(r).reshape(tuple(out.shape) + tuple(x.shape)) if r
                         else zeros_like(x).expand(tuple(out.shape) + tuple(x.shape))  # (an empty output)
                         for r, x in zip(rows, xs, strict=True)))
    return jac


def _rows_batched(outputs: tuple, xs: tuple, create_graph: bool) -> list:
    """All rows in one backward pass with a batch of basis cotangents (``is_grads_batched``)."""
    pairs = [(o, c) for o, c in zip(outputs, identity_blocks(outputs), strict=True) if o.requires_grad]
    if pairs:
        grads = autograd_grad([o for o, _ in pairs], xs, [c for _, c in pairs], retain_graph=True,
                              create_graph=create_graph, allow_unused=True, is_grads_batched=True)
    else:
        grads = (None,) * len(xs)
    jac, start = [], 0
    for out in outputs:
        stop = start + out.numel()
        shape = tuple(out.shape)
        jac.append(tuple(zeros_like(x).expand(shape + tuple(x.shape)) if g is None
                         else _rows(g, start, stop).reshape(shape + tuple(x.shape))
                         for g, x in zip(grads, xs, strict=True)))
        start = stop
    return jac


def _columns_forward(func: Callable, inputs: tuple, tape_tangents: bool = True) -> tuple[list, bool]:
    """All columns in one forward pass with a batch of basis tangents (``strategy='forward-mode'``).

    ``vmap`` of ``func.jvp`` over the basis, without vmap's argument checks:
    the tangents are batched at a new vmap level directly. ``tape_tangents=False``: no reverse
    pass differentiates the tangents (``hessian``'s, when its inner gradient is not recorded).
    """
    # (an alias keeps what an enclosing transform tracks; hessian's gradient may set requires_grad on it)
    xs = tuple(x.view(x.shape) if tracked_by_enclosing_transform(x) else x.detach() for x in inputs)
    out_is_tuple = []

    def as_tuple_func(*args: Any) -> tuple:
        is_tuple, outs = as_tuple(func(*args), "outputs of the user-provided function", "jacobian")
        out_is_tuple.append(is_tuple)
        return outs

    n = sum(x.numel() for x in xs)
    with vmap_level(n) as level:
        tangents = tuple(make_batched(block, 0, level.id) for block in identity_blocks(xs))
        pushed = func_jvp(as_tuple_func, xs, tangents, tape_tangents=tape_tangents)[1]
    jac = []
    for t in (output_at("jacobian", t, 0, level) for t in pushed):
        shape, start, per_input = tuple(t.shape[1:]), 0, []
        for x in xs:
            stop = start + x.numel()
            per_input.append(_to_trailing(_rows(t, start, stop), shape, tuple(x.shape)))
            start = stop
        jac.append(tuple(per_input))
    return jac, out_is_tuple[0]


def _structure(jac: list, out_tuple: bool, in_tuple: bool) -> Any:
    rows = [row if in_tuple else row[0] for row in jac]
    return tuple(rows) if out_tuple else rows[0]


def _check_strategy(strategy: str, fn: str) -> None:
    if strategy not in ("forward-mode", "reverse-mode"):  # (torch asserts: an AssertionError, and
        # only jacobian's message has the hint)
        hint = (' Hint: If your function has more outputs than inputs, "forward-mode" tends to be more '
                'performant. Otherwise, prefer to use "reverse-mode".') if fn == "jacobian" else ""
        raise AssertionError(f'Expected strategy to be either "forward-mode" or "reverse-mode".{hint}')


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``jac[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``.

    The nesting follows ``torch.autograd.functional.jacobian``: a tuple level
    for tuple outputs, inside it one for tuple inputs. ``vectorize=True``
    computes it in one batched pass: reverse mode (a batch of basis
    cotangents) or, with ``strategy='forward-mode'``, forward mode (a batch of
    basis tangents); otherwise one backward pass per output element.
    ``strict=True`` raises when an output does not depend on an input (with
    ``create_graph=True``, also when the Jacobian does not); torch refuses it
    with ``vectorize=True`` and with forward mode, and so does this.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import jacobian
    >>> jacobian(lambda x: x ** 2, dg.tensor([1., 2.]), vectorize=True)
    tensor([[2., 0.],
            [0., 4.]])
    """
    return _jacobian(func, inputs, create_graph, strict, vectorize, strategy)


def _jacobian(func: Callable, inputs: Any, create_graph: bool, strict: bool, vectorize: bool, strategy: str,
              tape_tangents: bool = True) -> Any:
    """``jacobian``; ``tape_tangents`` goes to its forward mode (``_columns_forward``)."""
    _check_strategy(strategy, "jacobian")
    if strategy == "forward-mode":  # torch's checks, in torch's order
        if create_graph:
            raise NotImplementedError(NOT_TOGETHER.format(option="create_graph", **FORWARD_NOT_TOGETHER))
        if strict:
            raise RuntimeError(NOT_TOGETHER.format(option="strict", **FORWARD_NOT_TOGETHER))
        in_tuple, inputs = as_tuple(inputs, "inputs", "jacobian")
        if not vectorize:
            raise NotImplementedError(FORWARD_NEEDS_VECTORIZE)
        jac, out_tuple = _columns_forward(func, inputs, tape_tangents)
        return _structure(jac, out_tuple, in_tuple)
    record = graph_needed(create_graph)
    with enable_grad(), reverse_level() as level:
        in_tuple, inputs = as_tuple(inputs, "inputs", "jacobian")
        xs = prepare(inputs, create_graph, level, "jacobian")
        out_tuple, outputs = as_tuple(func(*xs), "outputs of the user-provided function", "jacobian")
        check_requires_grad(outputs, strict)
        if vectorize:
            if strict:
                raise RuntimeError(NOT_TOGETHER.format(option="strict", other="vectorize=True", yet="",
                                                       alternative="vectorize=False"))
            jac = _rows_batched(outputs, xs, record)
        else:
            jac = _rows_loop(outputs, xs, record, strict, create_graph)
    return _structure([finish(row, create_graph) for row in jac], out_tuple, in_tuple)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of scalar ``func`` at ``inputs`` (``hess[i][j]``: ``inputs[i].shape + inputs[j].shape``).

    The Jacobian of the gradient: with ``vectorize=True`` and
    ``outer_jacobian_strategy='forward-mode'``, forward over reverse in one
    batched pass; reverse over reverse otherwise.

    >>> import dualgrad as dg
    >>> from dualgrad.autograd.functional import hessian
    >>> hessian(lambda x: (x ** 3).sum(), dg.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    in_tuple, inputs = as_tuple(inputs, "inputs", "hessian")
    refuse_batched(inputs, "hessian")
    _check_strategy(outer_jacobian_strategy, "hessian")
    # (recorded for the outer reverse-mode Jacobian, and for an enclosing transform)
    inner_graph = outer_jacobian_strategy == "reverse-mode" or graph_needed(create_graph)

    def gradient(*xs: Tensor) -> tuple:
        with enable_grad():
            # jacobian passes its own tensors (fresh leaves, or the duals of its forward pass),
            # so one that does not require grad yet may be made to in place
            xs = tuple(x if x.requires_grad else x.requires_grad_() for x in xs)
            out = scalar_output(func, xs, "hessian", strict)
            grads = (autograd_grad(out, xs, create_graph=inner_graph, allow_unused=True)
                     if out.requires_grad else (None,) * len(xs))
            # as torch: the inner gradient is not strict (zeros), the check is on its dependence
            grads = fill_unused(grads, xs, False, "")
            check_requires_grad(grads, strict, JACOBIAN_INDEPENDENT)
            return grads

    # Forward over reverse without a recorded inner gradient: the tangents of the backward pass are
    # computed with grad mode off, so nothing can differentiate those of the forward pass either
    # (their graph would only be recorded and dropped).
    hess = _jacobian(gradient, inputs if in_tuple else inputs[0], create_graph, strict, vectorize,
                     outer_jacobian_strategy, tape_tangents=inner_graph)
    return hess if in_tuple else hess[0]
