"""Argument handling and strict-mode checks shared by the functional API (``torch.autograd.functional``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.state import STATE
from ..factories import zeros_like
from ..tensor import Tensor
from ..transforms.levels import ReverseLevel, lower, tag_leaf, tracked_by_enclosing_transform
from ..vmap.batching import BatchedTensor

# torch's strict-mode messages, by what was found independent of the inputs
INDEPENDENT = (
    "The output of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode."
)
OUTPUT_NO_GRAD = (
    "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
    "in a differentiable manner from the input when running in strict mode."
)
JACOBIAN_INDEPENDENT = (
    "While computing the hessian, found that the jacobian of the user-provided function with respect "
    "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
    "that your function is twice differentiable and that the jacobian depends on the inputs (this would "
    "be violated by a linear function for example)."
)
GRAPH_INDEPENDENT = (
    "The {what} of the user-provided function is independent of input {i}. This is not allowed in "
    "strict mode when create_graph=True."
)


# what to use under vmap instead of each ``autograd.functional`` function
_FUNC_EQUIVALENT = {"vjp": "vjp", "jvp": "jvp", "vhp": "vjp of func.grad", "hvp": "jvp of func.grad",
                    "jacobian": "jacrev (or jacobian's forward mode)", "hessian": "hessian"}


def as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_tuple, value as a tuple of Tensors)``; TypeError otherwise (a list is not a tuple, as in torch)."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            which = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but {which} has type {type(v)}.")
    return is_tuple, values


def refuse_batched(inputs: tuple, fn_name: str) -> None:
    """torch refuses ``autograd.functional`` under vmap; so does this, except ``jacobian``'s forward mode."""
    for i, x in enumerate(inputs):
        if isinstance(x, BatchedTensor):
            raise RuntimeError(
                f"autograd.functional.{fn_name}: input {i} is batched by an enclosing vmap, which "
                f"autograd.functional does not support here (nor does torch). Use "
                f"dualgrad.func.{_FUNC_EQUIVALENT[fn_name]} inside vmap instead."
            )


def unpack(values: tuple, is_tuple: bool) -> Any:
    return values if is_tuple else values[0]


def prepare(inputs: tuple, create_graph: bool, level: ReverseLevel, fn_name: str, need_graph: bool = True) -> tuple:
    """Inputs to differentiate, as ``level``'s leaves: fresh leaves, or aliases that keep the graph
    and tangents of an input that ``create_graph`` or an enclosing transform (``func``) tracks."""
    refuse_batched(inputs, fn_name)
    result = []
    for x in inputs:
        if (create_graph and x.requires_grad) or tracked_by_enclosing_transform(x):
            alias = x.view(x.shape)
            result.append(alias if alias.requires_grad or not need_graph else tag_leaf(alias.requires_grad_(), level))
        else:
            result.append(tag_leaf(x.detach().requires_grad_(bool(need_graph)), level))
    return tuple(result)


def graph_needed(create_graph: bool) -> bool:
    """Whether the products' own passes are recorded: with ``create_graph``, or for an enclosing
    ``func`` transform (its reverse level is alive), which differentiates the results whatever
    ``create_graph`` says (torch refuses ``autograd.functional`` inside its transforms)."""
    return create_graph or bool(STATE.reverse_levels)


def finish(values: tuple, create_graph: bool) -> tuple:
    """Results: with ``create_graph`` as they are; otherwise without a graph of the base level (as
    torch), but with the graphs and tangents of enclosing transforms."""
    return tuple(v if v is None or create_graph else lower(v, base=False) for v in values)


def check_v(v: Any, others: tuple, others_tuple: bool, fn_name: str, none_message: str) -> tuple:
    """The vector ``v`` as a tuple matching ``others`` (None: allowed for one single-element Tensor)."""
    if v is None:
        if len(others) != 1 or others[0].numel() != 1:
            raise RuntimeError(none_message)
        return (zeros_like(others[0]) + 1,)
    _, vs = as_tuple(v, "v", fn_name)
    if len(vs) != len(others):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(others)} but got {len(vs)}."
                           if others_tuple else "The given v should contain a single Tensor.")
    for i, (vi, o) in enumerate(zip(vs, others, strict=True)):
        if vi.shape != o.shape:
            entry = f"Entry {i} in " if others_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {o.shape} but got {vi.shape}.")
    return vs


def check_requires_grad(values: tuple, strict: bool, message: str = OUTPUT_NO_GRAD) -> None:
    """In strict mode, every value must be present and depend differentiably on the inputs."""
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(INDEPENDENT.format(i=i))
        if not value.requires_grad:
            raise RuntimeError(message.format(i=i))


def fill_unused(grads: tuple, refs: tuple, strict: bool, message: str, create_graph: bool = False,
                what: str = "jacobian") -> tuple:
    """Zeros for the missing results; in strict mode, an error naming the index instead, and with
    ``create_graph`` also for a result that does not depend on the inputs (torch's checks)."""
    result = []
    for i, (g, ref) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(GRAPH_INDEPENDENT.format(what=what, i=i))
        result.append(g)
    return tuple(result)


def scalar_output(func: Callable, xs: tuple, fn_name: str, strict: bool) -> Tensor:
    """``func(*xs)``, checked in torch's order: Tensors, strict mode, a single Tensor of one element."""
    out_tuple, outs = as_tuple(func(*xs), "outputs of the user-provided function", fn_name)
    check_requires_grad(outs, strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single element"
        )
    return outs[0]
