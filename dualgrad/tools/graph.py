"""The implementation of the public namespace ``dualgrad.graph`` (``torch.autograd.graph``): see its docstring."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.state import STATE
from ..reverse.api import GradientEdge
from ..reverse.mutation import allow_mutation_on_saved_tensors
from ..reverse.node import Node, accumulate_grad_node
from ..reverse.saved import push_saved_tensor_hooks
from ..tensor import Tensor, _wrap

__all__ = [
    "GradientEdge", "MultiGradHookHandle", "Node", "allow_mutation_on_saved_tensors",
    "disable_saved_tensors_hooks", "get_gradient_edge", "increment_version", "register_multi_grad_hook",
    "save_on_cpu", "save_on_disk", "saved_tensors_hooks", "to_dot",
]


# -- gradient edges and version counters ----------------------------------------------
def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows: pass it to ``grad`` as an input.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 2.], requires_grad=True)
    >>> y = x * 2
    >>> edge = dg.graph.get_gradient_edge(y)
    >>> edge.node.name(), edge.output_nr
    ('MulBackward0', 0)
    >>> dg.grad((y * y).sum(), edge)
    (tensor([4., 8.]),)
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    node = tensor.grad_fn
    return GradientEdge(accumulate_grad_node(tensor) if node is None else node, tensor._output_nr)


def increment_version(tensor: Tensor | Sequence[Tensor]) -> None:
    """Count an in-place change made behind autograd's back (e.g. through ``.numpy()``).

    A saved tensor whose version changed makes the backward that needs it raise.
    ``tensor`` is a Tensor or an iterable of them (else RuntimeError, as in torch;
    unlike torch, no version changes when one element is not a tensor).

    >>> import dualgrad as dg
    >>> x = dg.zeros(2)
    >>> dg.graph.increment_version(x)
    >>> x._version
    1
    """
    tensors = (tensor,) if isinstance(tensor, Tensor) else _tensor_sequence(tensor)
    for t in tensors:
        t._bump_version()


def _tensor_sequence(tensors: Any) -> tuple:
    """``increment_version``'s argument as a tuple of tensors, with torch's errors for anything else."""
    try:
        tensors = tuple(tensors)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    if not all(isinstance(t, Tensor) for t in tensors):
        raise RuntimeError("increment_version expects each element of the iterable to be a tensor")
    return tensors


# -- saved-tensor hooks -----------------------------------------------------------
class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Context manager: pack every tensor saved for backward, unpack it on every use.

    ``pack_hook(tensor) -> Any`` runs once, when an op (or a custom Function's
    ``save_for_backward``) saves ``tensor``; what it returns is stored in the graph
    instead. ``unpack_hook(packed) -> Tensor`` runs each time backward (or a
    ``_saved_*`` attribute) needs the value, and must return a tensor with the
    shape and dtype of the one packed. The result is re-attached to the graph like
    the original, so double backward works. When nested, the innermost pair wins.

    >>> import dualgrad as dg
    >>> def pack_hook(x):
    ...     print("Packing", x)
    ...     return x
    >>> def unpack_hook(x):
    ...     print("Unpacking", x)
    ...     return x
    >>> a = dg.ones(5, requires_grad=True)
    >>> b = dg.ones(5, requires_grad=True) * 2
    >>> with dg.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    ...     y = a * b
    Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)
    Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)
    >>> y.sum().backward()
    Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)
    Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]):
        for what, hook in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(hook):
                raise TypeError(f"saved_tensors_hooks: {what} must be callable, got {type(hook).__name__}")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        push_saved_tensor_hooks((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: Any) -> None:
        STATE.saved_tensor_hooks = STATE.saved_tensor_hooks[:-1]


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Context manager: store tensors saved for backward in CPU memory.

    NumPy arrays already live in CPU memory, so (as torch does for a graph on the
    CPU) nothing is copied: the pair keeps a detached alias of each saved tensor.
    ``pin_memory`` and ``device_type`` are accepted for torch compatibility.

    >>> import dualgrad as dg
    >>> a = dg.tensor([1., 2.], requires_grad=True)
    >>> with dg.graph.save_on_cpu():
    ...     y = (a * a).sum()
    >>> y.backward()
    >>> a.grad
    tensor([2., 4.])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        super().__init__(Tensor.detach, _identity)
        self.pin_memory = pin_memory
        self.device_type = device_type


def _identity(x: Tensor) -> Tensor:
    return x


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Context manager: using saved-tensor hooks inside raises ``RuntimeError(error_message)``.

    That includes ``save_on_cpu``, ``save_on_disk`` and ``allow_mutation_on_saved_tensors``.
    Entering it while a pair of hooks is active raises the same error; an
    ``error_message`` that is not a ``str`` raises TypeError.

    >>> import dualgrad as dg
    >>> message = "saved tensors default hooks are disabled"
    >>> with dg.graph.disable_saved_tensors_hooks(message):
    ...     with dg.graph.save_on_cpu():
    ...         pass
    Traceback (most recent call last):
    RuntimeError: saved tensors default hooks are disabled
    """

    def __init__(self, error_message: str):
        self.error_message = error_message
        self._previous: list = []

    def __enter__(self) -> None:
        if not isinstance(self.error_message, str):
            raise TypeError(f"disable_saved_tensors_hooks: error_message must be a str, got "
                            f"{type(self.error_message).__name__}")
        if STATE.saved_tensor_hooks:
            raise RuntimeError(self.error_message)
        self._previous.append(STATE.saved_hooks_disabled)
        STATE.saved_hooks_disabled = self.error_message

    def __exit__(self, *exc: Any) -> None:
        STATE.saved_hooks_disabled = self._previous.pop()


class save_on_disk(saved_tensors_hooks):  # noqa: N801 - named like save_on_cpu
    """Context manager (a saved-tensor hook recipe): keep saved tensors in files, memory-mapped.

    For graphs whose saved values do not fit in memory. Each tensor saved for
    backward is written once to a ``.npy`` file in ``directory`` (created if
    missing); backward reads it through a read-only memory map, so only the pages
    a rule touches are loaded. A file is deleted as soon as the graph that saved
    it no longer needs it: after a backward without ``retain_graph``, or when the
    graph is dropped. (On Windows a file still mapped by a live tensor cannot be
    deleted and stays in ``directory``.)

    >>> import tempfile, numpy as np, dualgrad as dg
    >>> x = dg.tensor([1., 2., 3.], requires_grad=True)
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     with dg.graph.save_on_disk(directory):
    ...         y = (x.sin() * x).sum()
    ...     y.backward()
    >>> v = np.array([1., 2., 3.])
    >>> bool(np.allclose(x.grad.numpy(), np.cos(v) * v + np.sin(v)))
    True
    """

    def __init__(self, directory: str | os.PathLike):
        os.makedirs(directory, exist_ok=True)
        self.directory = os.fspath(directory)
        super().__init__(self._pack, _load)

    def _pack(self, tensor: Tensor) -> _DiskTensor:
        fd, path = tempfile.mkstemp(suffix=".npy", prefix="saved-", dir=self.directory)
        packed = _DiskTensor(path)  # owns the file from here on, even if writing fails
        with os.fdopen(fd, "wb") as file:
            np.save(file, tensor.detach().numpy())
        return packed


class _DiskTensor:
    """The path of one saved tensor's file; the file is removed when this object dies."""

    __slots__ = ("path", "__weakref__")

    def __init__(self, path: str):
        self.path = path
        weakref.finalize(self, _remove_file, path)


def _remove_file(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass  # already gone, or still mapped (Windows)


def _load(packed: _DiskTensor) -> Tensor:
    return _wrap(np.load(packed.path, mmap_mode="r"))


# -- multi-grad hooks ---------------------------------------------------------------
class _MultiGradHook:
    """One ``register_multi_grad_hook`` call: the gradients gathered in each backward pass."""

    def __init__(self, tensors: Sequence[Tensor], fn: Callable, mode: str):
        self.fn = fn
        self.mode = mode
        # Weak: the hooks live on these nodes and leaves, so strong references would be cycles.
        self.targets = [weakref.ref(t._node() or t) for t in tensors]
        self.passes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def hook(self, index: int) -> Callable:
        def on_grad(grad: Tensor) -> None:
            self.on_grad(index, grad)

        on_grad.__qualname__ = f"multi_grad_hook[{index}]"
        return on_grad

    def on_grad(self, index: int, grad: Tensor) -> None:
        task = STATE.graph_task
        if self.mode == "any":
            if task not in self.passes:
                self.passes[task] = True
                self.fn(grad)
            return
        state = self.passes.get(task)
        if state is None:
            waiting = {i for i, ref in enumerate(self.targets)
                       if ref() is not None and task.will_compute(ref())}
            state = self.passes[task] = ([None] * len(self.targets), waiting)
        grads, waiting = state
        grads[index] = grad
        waiting.discard(index)
        if not waiting:
            self.fn(list(grads))


class MultiGradHookHandle:
    """Returned by :func:`register_multi_grad_hook`; ``remove()`` unregisters the hook.

    >>> import dualgrad as dg
    >>> a = dg.ones(2, requires_grad=True)
    >>> with dg.graph.register_multi_grad_hook((a,), print):
    ...     (a * 2).sum().backward()
    [tensor([2., 2.])]
    >>> (a * 2).sum().backward()
    """

    def __init__(self, handles: list):
        self._handles = handles

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()

    def __enter__(self) -> MultiGradHookHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *,
                             mode: str = "all") -> MultiGradHookHandle:
    """Call ``fn`` once the gradients of all ``tensors`` of a backward pass are computed.

    With ``mode="all"``, ``fn(grads)`` receives a list with one entry per tensor (``None`` for
    tensors this pass does not compute: not in the graph, or not needed for the
    ``inputs`` of this ``backward`` / ``grad`` call). With ``mode="any"``,
    ``fn(grad)`` runs once per pass, with the first of the gradients computed.

    >>> import dualgrad as dg
    >>> a = dg.rand(2, 3, requires_grad=True)
    >>> b = dg.rand(2, 3, requires_grad=True)
    >>> c = a * b
    >>> d = a * b
    >>> def fn(grads):
    ...     print([g is not None for g in grads])
    >>> handle = dg.graph.register_multi_grad_hook((a, b, c, d), fn)
    >>> c.sum().backward(retain_graph=True)
    [True, True, True, False]
    >>> c.sum().backward(inputs=(a,), retain_graph=True)
    [True, False, True, False]
    >>> handle.remove()
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook: tensors[{i}] is a {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(
                f"register_multi_grad_hook: tensors[{i}] does not require grad; cannot register a "
                "hook on a tensor that doesn't require gradient"
            )
    state = _MultiGradHook(tensors, fn, mode)
    return MultiGradHookHandle([t.register_hook(state.hook(i)) for i, t in enumerate(tensors)])


# -- Graphviz ------------------------------------------------------------------------
def to_dot(root: Tensor | Node, svg_path: str | os.PathLike | None = None) -> str:
    """The backward graph ending at ``root`` (a tensor or a ``grad_fn``) as Graphviz DOT text.

    Each node shows its name and the shapes of its saved tensors; leaves
    (``AccumulateGrad``) are filled blue with the leaf's shape, the root tensor
    green. Edges point the way data flowed in the forward pass (from a node's
    ``next_functions`` to the node). With ``svg_path``, the graph is also rendered
    there by the Graphviz ``dot`` program (a warning if it is not installed, a
    ``RuntimeError`` with its message if it fails).

    >>> import dualgrad as dg
    >>> x = dg.ones(2, requires_grad=True)
    >>> print(to_dot((x * x).sum()))
    digraph backward {
      node [shape=box, fontname="monospace"];
      t [label="tensor ()", style=filled, fillcolor=darkolivegreen1];
      n0 [label="SumBackward0"];
      n0 -> t;
      n1 [label="MulBackward0\\nother: (2,)\\nself: (2,)"];
      n1 -> n0;
      n2 [label="AccumulateGrad\\nleaf (2,)", style=filled, fillcolor=lightblue];
      n2 -> n1;
      n2 -> n1;
    }
    """
    lines = ["digraph backward {", '  node [shape=box, fontname="monospace"];']
    if isinstance(root, Tensor):
        if not root.requires_grad:
            raise ValueError(
                f"to_dot: the tensor of shape {root.shape} does not require grad, so it has no "
                "backward graph"
            )
        lines.append(f'  t [label="tensor {root.shape}", style=filled, fillcolor=darkolivegreen1];')
        start = root.grad_fn or accumulate_grad_node(root)
        root_edge = "t"
    elif callable(getattr(root, "name", None)) and hasattr(root, "next_functions"):
        start, root_edge = root, None
    else:
        raise TypeError(f"to_dot expects a Tensor or a graph Node, got {type(root).__name__}")
    lines += _dot_body(start, root_edge)
    lines.append("}")
    text = "\n".join(lines)
    if svg_path is not None:
        _write_svg(text, svg_path)
    return text


def _dot_body(start: Any, root_edge: str | None) -> list:
    """Node and edge lines, found depth-first without recursion."""
    ids: dict = {}
    keep: list = []  # AccumulateGrad objects are cached weakly: keep them while ids are in use
    lines: list = []

    def visit(node: Any) -> tuple[str, bool]:
        key = id(node.variable) if hasattr(node, "variable") else id(node)
        if key in ids:
            return ids[key], False
        ids[key] = f"n{len(ids)}"
        keep.append(node)
        lines.append(f"  {ids[key]} [{_dot_label(node)}];")
        return ids[key], True

    name, _ = visit(start)
    if root_edge is not None:
        lines.append(f"  {name} -> {root_edge};")
    stack = [start]
    while stack:
        node = stack.pop()
        consumer = visit(node)[0]
        for target, nr in node.next_functions:
            if target is None:
                continue
            producer, new = visit(target)
            label = f' [label="{nr}"]' if getattr(target, "n_outputs", 1) > 1 else ""
            lines.append(f"  {producer} -> {consumer}{label};")
            if new:
                stack.append(target)
    return lines


def _dot_label(node: Any) -> str:
    if hasattr(node, "variable"):
        return f'label="AccumulateGrad\\nleaf {node.variable.shape}", style=filled, fillcolor=lightblue'
    parts = [node.name()]
    for attr in dir(node):
        if attr.startswith("_raw_saved_"):
            shape = getattr(getattr(node, attr), "shape", None)
            if shape is not None:
                parts.append(f"{attr[len('_raw_saved_'):]}: {tuple(shape)}")
    return 'label="' + "\\n".join(parts) + '"'


def _write_svg(text: str, svg_path: str | os.PathLike) -> None:
    dot = shutil.which("dot")
    if dot is None:
        warnings.warn(
            f"to_dot: the Graphviz program 'dot' is not installed, so no SVG was written to "
            f"{os.fspath(svg_path)!r}; the DOT text is returned",
            RuntimeWarning, stacklevel=3,
        )
        return
    done = subprocess.run([dot, "-Tsvg", "-o", os.fspath(svg_path)], input=text, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"to_dot: Graphviz 'dot' failed to write {os.fspath(svg_path)!r}: {done.stderr.strip()}"
        )

