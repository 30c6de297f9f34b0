"""``backward`` and ``grad``: argument checking around the engine."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..tensor import Tensor, _wrap
from .engine import run_backward
from .node import AccumulateGrad

_TensorOrTensors = Tensor | Sequence[Tensor]


class GradientEdge(NamedTuple):
    """An edge of the backward graph, ``(node, output_nr, ownership_token)``; ``grad`` takes one as an input.

    Made by ``dualgrad.graph.get_gradient_edge``: the gradient of the edge is the
    gradient of the tensor it was taken from, even after that tensor is gone.
    ``ownership_token`` is torch's third field (None here: ``node`` already keeps the node alive).
    """

    node: Any
    output_nr: int
    ownership_token: Any = None


def _edge_input(edge: GradientEdge) -> Tensor:
    """A Tensor that the engine treats as ``edge`` (it keys inputs by ``grad_fn`` and ``_output_nr``)."""
    if isinstance(edge.node, AccumulateGrad):
        return edge.node.variable
    stand_in = _wrap(np.empty(0))
    stand_in._requires_grad = True
    stand_in._grad_fn = edge.node
    stand_in._output_nr = edge.output_nr
    return stand_in


def _as_tuple(value: Any, what: str) -> tuple:
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, (list, tuple)):
        for v in value:
            if not isinstance(v, Tensor):
                raise TypeError(f"{what} must be Tensors, got {type(v).__name__}")
        return tuple(value)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(value).__name__}")


def _make_grads(outputs: tuple, grads: Any) -> list:
    """The initial gradients: ones for scalar outputs, checked user values otherwise."""
    if grads is None or isinstance(grads, (Tensor, int, float, complex)):
        grads = (grads,) * len(outputs) if grads is None else (grads,)
    grads = tuple(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"got {len(grads)} gradients for {len(outputs)} outputs: pass one gradient per output"
        )
    result = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if grad is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out.dtype.kind == "c":
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype}"
                )
            result.append(_wrap(np.ones(out.shape, out.dtype)))
            continue
        if not isinstance(grad, Tensor):
            grad = _wrap(np.asarray(grad, dtype=out.dtype))
        if grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                f"output[{i}] has a shape of {out.shape}."
            )
        if grad.dtype.kind == "c" and out.dtype.kind != "c":
            raise RuntimeError(
                f"For complex Tensors, both grad_output and output are required to have the same "
                f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {grad.dtype} and "
                f"output[{i}] has a dtype of {out.dtype}."
            )
        if grad.dtype != out.dtype:
            grad = grad.to(out.dtype)
        result.append(grad)
    return result


def _check_outputs(outputs: tuple) -> None:
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )


def backward(
    tensors: _TensorOrTensors,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: _TensorOrTensors | None = None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    ``grad_tensors`` gives the vector in the vector-Jacobian product (ones for a
    scalar output when omitted). ``retain_graph`` defaults to ``create_graph``;
    ``create_graph=True`` records the backward pass so it can be differentiated.
    ``inputs`` restricts accumulation to those tensors.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 2.], requires_grad=True)
    >>> dg.backward((x ** 2).sum())
    >>> x.grad
    tensor([2., 4.])
    """
    outputs = _as_tuple(tensors, "tensors")
    if grad_variables is not None:
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    _check_outputs(outputs)
    grads = _make_grads(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    run_backward(outputs, grads, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)


def grad(
    outputs: _TensorOrTensors,
    inputs: _TensorOrTensors,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is untouched.

    ``inputs`` are Tensors or ``GradientEdge``s (``dualgrad.graph.get_gradient_edge``).

    ``allow_unused=True`` returns ``None`` for inputs the graph does not reach
    (zeros with ``materialize_grads=True``). ``is_grads_batched=True`` treats the
    first dimension of every ``grad_outputs`` as a batch of vectors, computed in
    one backward pass through the batching rules.

    >>> import dualgrad as dg
    >>> x = dg.tensor(3., requires_grad=True)
    >>> dg.grad(x ** 3, x)
    (tensor(27.),)
    """
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
            "gradient for other parts of the graph, please use dualgrad.autograd.backward.",
            FutureWarning, stacklevel=2,
        )
    outputs = _as_tuple(outputs, "outputs")
    if isinstance(inputs, GradientEdge) or (
            isinstance(inputs, (list, tuple)) and any(isinstance(t, GradientEdge) for t in inputs)):
        inputs = [_edge_input(t) if isinstance(t, GradientEdge) else t
                  for t in ((inputs,) if isinstance(inputs, GradientEdge) else inputs)]
    inputs = _as_tuple(inputs, "inputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    _check_outputs(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        from ..batching import batched_grad

        result = batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph)
    else:
        grads = _make_grads(outputs, grad_outputs)
        result = run_backward(outputs, grads, retain_graph=retain_graph,
                              create_graph=create_graph, inputs=inputs, accumulate=False)
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                result[i] = _wrap(np.zeros(t.shape, t.dtype))
    return tuple(result)
