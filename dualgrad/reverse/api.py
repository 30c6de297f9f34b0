"""``backward`` and ``grad``: argument checking around the engine."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import tensor as tensor_module
from ..tensor import Tensor, _wrap
from .engine import run_backward
from .node import AccumulateGrad

# Set by ``dualgrad.vmap.batching`` (the vmap engine sits above this one): ``grad(..., is_grads_batched=True)``.
BATCHED_GRAD: list = [None]

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


def _as_inputs(inputs: Any, fn: str) -> tuple[tuple, tuple]:
    """``(given, tensors)``: the inputs as given (a dict gives its values) and as Tensors.

    A ``GradientEdge`` is replaced by a Tensor the engine treats as that edge; any
    other entry that is not a Tensor is refused with torch's error.
    """
    if isinstance(inputs, (Tensor, GradientEdge)):
        given = (inputs,)
    elif type(inputs) is dict:
        given = tuple(inputs.values())
    elif isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
                        "Other Mapping types are not supported.")
    else:
        given = tuple(inputs)
    tensors = []
    for t in given:
        if isinstance(t, GradientEdge):
            t = _edge_input(t)
        elif not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
        tensors.append(t)
    return given, tuple(tensors)


def _batched_shape_error(i: int, grad: Tensor, out: Tensor) -> RuntimeError:
    example = grad.shape[1:] if grad.ndim else grad.shape
    return RuntimeError(
        "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
        "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
        f"output, but a mismatch was detected: grad_output[{i}] has a shape of {example} and output[{i}] has "
        f"a shape of {out.shape}. If you only want some tensors in `grad_output` to be considered batched, "
        "consider using vmap."
    )


def _make_grads(outputs: tuple, grads: Any, batched: bool = False) -> list:
    """The initial gradients: ones for scalar outputs, checked user values otherwise.

    Entries may be Tensors, ``None`` (for a scalar output), or (dualgrad's extension) Python
    or NumPy numbers and arrays, taken in the output's dtype. With ``batched`` the first
    dimension of each entry is the batch and every entry must be given.
    """
    if grads is None or isinstance(grads, (Tensor, int, float, complex, np.ndarray, np.generic)):
        grads = (grads,) * len(outputs) if grads is None else (grads,)
    grads = tuple(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"got {len(outputs)} tensors and {len(grads)} gradients: pass one gradient (or None) per output"
        )
    result = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if grad is None:
            if batched:
                raise RuntimeError(
                    f"grad_output[{i}] is None: with `is_grads_batched=True` every output needs a batch of "
                    "gradients (its first dimension is the batch)"
                )
            result.append(implicit_grad(out))
            continue
        if not isinstance(grad, Tensor):
            if isinstance(grad, bool) or not isinstance(grad, (int, float, complex, np.ndarray, np.generic)):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
            grad = _wrap(np.asarray(grad, dtype=out.dtype))
        if batched:
            if grad.ndim == 0 or grad.shape[1:] != out.shape:
                raise _batched_shape_error(i, grad, out)
        elif grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                f"output[{i}] has a shape of {out.shape}."
            )
        result.append(in_dtype_of(out, grad, i))
    return result


def implicit_grad(out: Tensor) -> Tensor:
    """The gradient seed of a scalar output given none (ones); torch's errors for any other output."""
    if out.numel() != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    check_real_output(out)
    return _wrap(np.ones(out.shape, out.dtype))


def check_real_output(out: Tensor) -> None:
    """torch's RuntimeError for a complex output whose gradient would be implicitly created."""
    if out.dtype.kind == "c":
        raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")


def in_dtype_of(out: Tensor, grad: Tensor, i: int) -> Tensor:
    """``grad`` (given for output ``i``) in ``out``'s dtype; torch's error if one only is complex."""
    if (grad.dtype.kind == "c") != (out.dtype.kind == "c"):
        raise RuntimeError(
            f"For complex Tensors, both grad_output and output are required to have the same "
            f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {grad.dtype} and "
            f"output[{i}] has a dtype of {out.dtype}."
        )
    return grad if grad.dtype == out.dtype else grad.to(out.dtype)


def _check_outputs(outputs: tuple) -> None:
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )


CREATE_GRAPH_BACKWARD_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
    "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
    "to None after use to break the cycle and avoid the leak."
)


def backward(
    tensors: _TensorOrTensors,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    ``grad_tensors`` gives the vector in the vector-Jacobian product (ones for a
    scalar output when omitted; ``grad_variables`` is its deprecated name).
    ``retain_graph`` defaults to ``create_graph``; ``create_graph=True`` records the
    backward pass so it can be differentiated (and warns, as torch does: ``.grad``
    then references the graph that made it; prefer ``grad`` for higher orders).

    ``inputs`` (a Tensor, a sequence or a dict of them, or ``GradientEdge``s)
    restricts accumulation to those tensors, each once however often it is listed.
    A non-leaf input gets its ``.grad`` filled and keeps it from then on (as after
    ``retain_grad()``).

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 2.], requires_grad=True)
    >>> dg.backward((x ** 2).sum())
    >>> x.grad
    tensor([2., 4.])
    >>> h = x * 3
    >>> (h ** 2).sum().backward(inputs=[h])
    >>> h.grad, h.retains_grad, x.grad
    (tensor([ 6., 12.]), True, tensor([2., 4.]))
    """
    _backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)


def _backward(tensors: Any, grad_tensors: Any, retain_graph: bool | None, create_graph: bool,
              grad_variables: Any, inputs: Any) -> None:
    """``backward``'s work, called by it and by ``Tensor.backward`` (warnings name their caller)."""
    outputs = _as_tuple(tensors, "tensors")
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=3)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if inputs is not None:
        given, inputs = _as_inputs(inputs, "backward")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")  # (torch's words)
        to_retain = [t for edge, t in zip(given, inputs)
                     if t._node() is not None and not isinstance(edge, GradientEdge)]
        inputs = tuple({id(t): t for t in inputs}.values())  # each input accumulates once
    _check_outputs(outputs)
    grads = _make_grads(outputs, grad_tensors)
    if inputs is not None:
        for t in to_retain:  # (as torch: a non-leaf input gets its .grad through retain_grad, now and later)
            t.retain_grad()
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(CREATE_GRAPH_BACKWARD_WARNING, UserWarning, stacklevel=3)
    run_backward(outputs, grads, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)


tensor_module.BACKWARD[0] = _backward  # Tensor.backward (tensor.py imports no engine)


def grad(
    outputs: _TensorOrTensors,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple | dict:
    """The gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is untouched.

    ``inputs`` are Tensors or ``GradientEdge``s (``dualgrad.graph.get_gradient_edge``),
    one or a sequence of them, or a dict of them: the result is then a dict with the
    same keys. A non-leaf input gets the gradient flowing into it.

    ``grad_outputs`` holds one entry per output: a Tensor, or ``None`` for a scalar
    output (ones). ``allow_unused=True`` returns ``None`` for inputs the graph does
    not reach (zeros with ``materialize_grads=True``, which implies it).
    ``is_grads_batched=True`` treats the first dimension of every ``grad_outputs``
    entry as a batch of vectors, computed in one backward pass through the batching
    rules. ``only_inputs`` is deprecated and ignored.

    >>> import dualgrad as dg
    >>> x = dg.tensor(3., requires_grad=True)
    >>> dg.grad(x ** 3, x)
    (tensor(27.),)
    >>> w = dg.tensor([1., 2.], requires_grad=True)
    >>> dg.grad((w * x).sum(), {"w": w, "x": x})
    {'w': tensor([3., 3.]), 'x': tensor(3.)}
    >>> dg.grad(w * 2, w, dg.eye(2), is_grads_batched=True)
    (tensor([[2., 0.],
            [0., 2.]]),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs, "outputs")
    given, tensors = _as_inputs(inputs, "grad")
    if not tensors:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
            "gradient for other parts of the graph, please use dualgrad.autograd.backward.",
            FutureWarning, stacklevel=2,
        )
    _check_outputs(outputs)
    grads = _make_grads(outputs, grad_outputs, batched=is_grads_batched)
    for t in tensors:  # (after the outputs' checks, as torch)
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = BATCHED_GRAD[0](outputs, tensors, grads, retain_graph, create_graph)
    else:
        result = run_backward(outputs, grads, retain_graph=retain_graph,
                              create_graph=create_graph, inputs=tensors, accumulate=False)
    for i, (t, g) in enumerate(zip(tensors, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                if isinstance(given[i], GradientEdge):
                    raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
                result[i] = _wrap(np.zeros(t.shape, t.dtype))
                if create_graph:
                    result[i].requires_grad_()
    if type(inputs) is dict:
        return dict(zip(inputs, result))
    return tuple(result)
