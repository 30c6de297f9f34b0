"""Argument handling shared by the functional API (``torch.autograd.functional`` conventions)."""

from __future__ import annotations

from typing import Any

from ..factories import zeros_like
from ..tensor import Tensor


def as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_tuple, value as a tuple of Tensors)``; TypeError naming the argument otherwise."""
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            where = f"Entry {i} in the {arg_name}" if is_tuple else f"The {arg_name}"
            where += f" given to {fn_name}"
            raise TypeError(f"{where} must be a Tensor or a tuple of Tensors but got {type(v)}.")
    return is_tuple, values


def unpack(values: tuple, is_tuple: bool) -> Any:
    return values if is_tuple else values[0]


def prepare(inputs: tuple, create_graph: bool, need_graph: bool = True) -> tuple:
    """Inputs to differentiate: fresh leaves, or aliases that keep the graph with ``create_graph``."""
    result = []
    for x in inputs:
        if create_graph and x.requires_grad:
            result.append(x.view(x.shape))
        else:
            result.append(x.detach().requires_grad_(need_graph))
    return tuple(result)


def finish(values: tuple, create_graph: bool) -> tuple:
    """Results, detached unless ``create_graph``."""
    return tuple(v if v is None or create_graph else v.detach() for v in values)


def check_v(v: Any, outputs: tuple, fn_name: str, what: str = "user-provided function") -> tuple:
    """The vector ``v`` of a vjp/jvp as a tuple matching ``outputs`` (None: a single-element output)."""
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if the {what} returns a single Tensor with a single element."
            )
        return (zeros_like(outputs[0]) + 1,)
    _, vs = as_tuple(v, "v", fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(
            f"v is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}."
        )
    for vi, o in zip(vs, outputs, strict=True):
        if vi.shape != o.shape:
            raise RuntimeError(f"v has invalid size: should be {o.shape} but got {vi.shape}.")
    return vs


def check_requires_grad(outputs: tuple, strict: bool, what: str = "outputs") -> None:
    """In strict mode, every output must depend differentiably on the inputs."""
    if not strict:
        return
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The {what} "
                "must be computed in a differentiable manner from the input when running in strict mode."
            )


def fill_unused(grads: tuple, inputs: tuple, strict: bool, message: str) -> tuple:
    """Zeros for the inputs a result does not depend on; in strict mode, an error naming the input."""
    result = []
    for i, (g, x) in enumerate(zip(grads, inputs, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(i=i))
            g = zeros_like(x)
        result.append(g)
    return tuple(result)
