"""Backward graph nodes.

A ``Node`` is what ``tensor.grad_fn`` returns. It knows nothing about any
particular op: it holds the op object (a ``NodeOp``: the op table's ``ops.registry.Op``,
a custom Function's ``function.FunctionOp``, or an internal adapter), the edges to the
nodes of its inputs, what was saved for the backward rule, and hooks. Leaves that require
grad are edges to the leaf Tensor itself; ``next_functions`` shows them as ``AccumulateGrad`` nodes.
"""

from __future__ import annotations

import itertools
import numbers
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import tensor as tensor_module
from ..base.hooks import RemovableHandle, add_hook
from ..tensor import Tensor, meta_of

_sequence = itertools.count()


@runtime_checkable
class NodeOp(Protocol):
    """What a graph node asks of its op: the interface between the backward engine and every kind of op.

    Implemented by the op table's ``ops.registry.Op``, a custom Function's ``function.FunctionOp``
    and the internal adapters ``reverse.saved._Alias`` and ``gradcheck._UndefinedGrad``; each
    declares it by subclassing. Besides the members below, a node reads these when an op has them
    (``getattr`` with a default): ``grad_name_for(node) -> str`` (the name of an overload, from
    what the node kept), ``vjp`` and ``number_inputs`` (which inputs get a gradient; see
    ``Node.next_functions``), ``saved_attribute_names(node)`` and ``saved_attribute(node, name)``
    (the ``_saved_<name>`` attributes torch shows).
    """

    __slots__ = ()

    grad_name: str
    """The node's name as torch gives it (``'MulBackward0'``): ``grad_fn.name()`` and error messages."""

    scatter_index: Any
    """None, or ``scatter_index(node) -> index or None`` for a one-input op whose vjp puts the
    gradient into zeros of the input's shape at a basic index (``x[1:]``): the engine may then add
    it into the gradient the input already has (``fastpath.scatter_into_buffer``)."""

    runs_on_undefined: bool
    """True if ``backward`` is called when every gradient of the node's outputs is undefined (None);
    False lets the engine skip the node and give its inputs no gradient."""

    def backward(self, node: Any, grads: list) -> list:
        """The gradients of the node's inputs (one per edge, None for none) from ``grads``, one per
        output (None for an output that received none): the node's vector-Jacobian product."""
        ...


class NodeHooks:
    """The hooks of one node, created on first registration."""

    __slots__ = ("tensor_pre", "pre", "post", "retain")

    def __init__(self) -> None:
        self.tensor_pre: dict[int, dict] = {}  # output_nr -> {id: hook(grad)}
        self.pre: dict = {}  # {id: hook(grad_outputs)}
        self.post: dict = {}  # {id: hook(grad_inputs, grad_outputs)}
        self.retain: dict[int, weakref.ref] = {}  # output_nr -> tensor with retain_grad


class _NodeType(type):
    """Node's metaclass: ``isinstance(x, Node)`` holds for an ``AccumulateGrad`` too, as in torch,
    where ``graph.Node`` is the base of every node (the one that accumulates into a leaf included)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance) or (cls is Node and type(instance) is AccumulateGrad)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return type.__subclasscheck__(cls, subclass) or (cls is Node and subclass is AccumulateGrad)


class Node(metaclass=_NodeType):
    """A recorded operation in the backward graph (``grad_fn`` of its outputs), built by ``new_node``.

    Its ``_saved_<name>`` attributes come from ``add_saved_attributes``. A node handed to the
    user (``grad_fn``, ``next_functions``) is of a subclass named as the node, as torch's are:
    ``type(y.grad_fn).__name__ == 'AddBackward0'`` (see ``named``).

    >>> import dualgrad as dg
    >>> a = dg.tensor([0., 0., 0.], requires_grad=True)
    >>> b = a.exp()
    >>> b.grad_fn.name()
    'ExpBackward0'
    >>> b.grad_fn.next_functions
    ((<AccumulateGrad>, 0),)
    """

    # (``params``, ``inputs``, ``out`` and ``out_metas`` are what an op of the table keeps for its
    # rules, see ``ops.registry.Op.unpack``: slots of the node rather than an object of their own,
    # which every recorded op would pay for)
    #
    # Two layouts (see "A node's memory" in the performance guide's implementation notes). The
    # general one (``_arity`` 0, ``new_node``) keeps ``_edges`` (flat: ``(target0, nr0, target1, nr1, ...)``,
    # no tuple per edge), ``_kept`` and ``_saved`` tuples. The
    # compact one (``_arity`` 1 or 2, ``new_node1`` / ``new_node2``: dispatch's one- and two-argument
    # calls) keeps each input in slots of the node, and no tuple: ``_t<i>``, ``_n<i>`` its edge
    # (target, output_nr); ``_k<i>`` what the node keeps of it (a SavedTensor, a TensorMeta, a
    # constant, or the saved input Tensor itself, "folded"); ``_v<i>`` the version at which a folded
    # input was saved (None when not folded). ``_saved`` then holds only the inputs' SavedTensor
    # objects (usually the shared ``()``) and a saved output stays in ``out``: its SavedTensor, or,
    # folded too, its array (a TensorMeta once released) with ``_ov`` the version it was saved at
    # (None when not folded), ``_oc`` its version counter and ``_org`` its requires_grad flag. Each
    # recorded op thus adds one object the cyclic garbage collector tracks (the node) instead of five
    # or more (two when it saves an input Tensor, or its output's version counter).
    # ``edges``, ``inputs`` and ``saved`` give every reader the tuples of the general layout.
    __slots__ = ("op", "_arity", "_edges", "_kept", "_saved", "_t0", "_n0", "_k0", "_v0", "_t1", "_n1", "_k1",
                 "_v1", "_ov", "_oc", "_org", "params", "out", "out_metas", "seq", "n_outputs", "_hooks", "_metadata",
                 "_released", "__weakref__")

    def name(self) -> str:
        """The node's name, e.g. ``'MulBackward0'``: torch's name of the overload that was called
        (an op's ``grad_name_for``, when it declares one, chooses from what the node kept).

        >>> import dualgrad as dg
        >>> x = dg.ones(2, 3, requires_grad=True)
        >>> x.sum().grad_fn.name(), x.sum(0).grad_fn.name(), x[0].grad_fn.name(), x[1:].grad_fn.name()
        ('SumBackward0', 'SumBackward1', 'SelectBackward0', 'SliceBackward0')
        """
        op = self.op
        grad_name_for = getattr(op, "grad_name_for", None)  # (custom Functions' ops have none)
        return op.grad_name if grad_name_for is None else grad_name_for(self)

    def __repr__(self) -> str:
        return f"<{short_name(self)} object>"

    @property
    def edges(self) -> tuple:
        """``((target, output_nr), ...)``, one per input: target the input's node, the leaf Tensor
        itself, or None where no gradient flows."""
        arity = self._arity
        if arity == 1:
            return ((self._t0, self._n0),)
        if arity == 2:
            return ((self._t0, self._n0), (self._t1, self._n1))
        flat = self._edges
        return tuple(zip(flat[::2], flat[1::2]))

    @property
    def inputs(self) -> tuple:
        """What the node keeps of each input for its rules: a SavedTensor, a TensorMeta or a constant."""
        arity = self._arity
        if not arity:
            return self._kept
        if self._v0 is not None or self._v1 is not None:
            UNFOLD[0](self)
        return (self._k0,) if arity == 1 else (self._k0, self._k1)

    def kept(self) -> tuple:
        """``inputs`` without unfolding: a folded input is the saved Tensor itself (for readers of shapes,
        dtypes and kinds, such as ``grad_name_for``; its value is read through ``Op.unpack``)."""
        arity = self._arity
        if not arity:
            return self._kept
        return (self._k0,) if arity == 1 else (self._k0, self._k1)

    @property
    def saved(self) -> tuple:
        """The SavedTensor objects of the node (inputs, then outputs), released after backward."""
        if not self._arity:
            return self._saved
        if self._v0 is not None or self._v1 is not None or self._ov is not None:
            UNFOLD[0](self)
        out = self.out
        if out is None:
            return self._saved
        return self._saved + (out if type(out) is tuple else (out,))

    @saved.setter
    def saved(self, saved: tuple) -> None:
        if self._arity:
            UNFOLD[0](self)  # (the general layout from here on: what is set is all there is)
            self._edges, self._kept, self._arity = _flat(self.edges), self.inputs, 0
        self._saved = saved

    def saved_objects(self) -> tuple:
        """``saved`` without unfolding: the SavedTensor objects the node holds (not its folded inputs)."""
        out = self.out
        if not self._arity or out is None or self._ov is not None:  # (a folded output is no object)
            return self._saved
        return self._saved + (out if type(out) is tuple else (out,))

    def saved_input_tensors(self) -> list:
        """The input Tensors the node holds for its rules (folded or in a SavedTensor; None for one packed
        by saved-tensor hooks, freed, or an output)."""
        held = [s._tensor for s in self.saved_objects()]
        if self._v0 is not None:
            held.append(self._k0 if type(self._k0) is Tensor else None)
        if self._v1 is not None:
            held.append(self._k1 if type(self._k1) is Tensor else None)
        return held

    @property
    def saves(self) -> bool:
        """True if the node holds anything saved for backward (released after it), without unfolding."""
        return bool(self._saved) or self._v0 is not None or self._v1 is not None or (
            self._arity != 0 and self.out is not None)

    @property
    def metadata(self) -> dict:
        """A dict for user data, kept as long as the node lives."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def next_functions(self) -> tuple:
        """``((node or None, output_nr), ...)``, one pair per input of the op that it can differentiate,
        ``(None, 0)`` for one that does not require grad. As torch's: not ``where``'s condition, nor
        ``gather``'s index, nor a Python number that torch keeps as an attribute of the node
        (``x ** 2``, ``clamp(x, 0, 1)``, ``2 - x``); the number operand of ``+ - * /`` and ``where``
        is an input (torch wraps it as a tensor).

        >>> import dualgrad as dg
        >>> x = dg.tensor([1., 2.], requires_grad=True)
        >>> (x ** 2).grad_fn.next_functions, (2 * x).grad_fn.next_functions
        (((<AccumulateGrad>, 0),), ((<AccumulateGrad>, 0), (None, 0)))
        """
        edges = self.edges
        op = self.op
        rules = getattr(op, "vjp", None)  # (None for an input the op never differentiates)
        shown = [True] * len(edges)
        if type(rules) is tuple and len(rules) == len(edges):
            shown = [rule is not None for rule in rules]
        number_inputs = getattr(op, "number_inputs", True)  # (ops of the table declare it)
        if not (number_inputs if type(number_inputs) is bool else number_inputs(self)):
            shown = [keep and not _is_number(kept) for keep, kept in zip(shown, self.kept(), strict=True)]
        return tuple((_as_node(target), nr) for (target, nr), keep in zip(edges, shown, strict=True) if keep)

    @property
    def requires_grad(self) -> bool:
        return True

    def _get_hooks(self) -> NodeHooks:
        if self._hooks is None:
            self._hooks = NodeHooks()
        return self._hooks

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs)``, run after the node; may return new grad_inputs."""
        return add_hook(self._get_hooks().post, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_outputs)``, run before the node; may return new grad_outputs."""
        return add_hook(self._get_hooks().pre, fn)

    def _register_tensor_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        return add_hook(self._get_hooks().tensor_pre.setdefault(output_nr, {}), fn)

    def _retain_grad_for(self, tensor: Tensor) -> None:
        self._get_hooks().retain[tensor._output_nr] = weakref.ref(tensor)

    def release(self) -> None:
        """Free saved tensors (after a backward without ``retain_graph``)."""
        self._released = True
        for saved in self._saved:
            saved.release()
        if self._arity:
            out = self.out
            if self._ov is not None:  # a folded output: its shape and dtype stay
                if type(out) is np.ndarray:
                    self.out = meta_of(out)
            elif out is not None:
                for saved in out if type(out) is tuple else (out,):
                    saved.release()
            if self._v0 is not None and type(self._k0) is Tensor:  # a folded input: its shape and dtype stay
                self._k0 = meta_of(self._k0._data)
            if self._v1 is not None and type(self._k1) is Tensor:
                self._k1 = meta_of(self._k1._data)

    def __dir__(self) -> list:
        """As torch lists a node: Python's special names, the public API and the saved values."""
        names = {name for name in object.__dir__(self) if name.startswith("__")}
        names.update(_PUBLIC_NAMES)
        names.update(getattr(self.op, "saved_attribute_names", lambda node: ())(self))
        return sorted(names)

    def __call__(self, *grad_outputs: Tensor) -> Any:
        """Apply the backward rule to one gradient per output: the gradient of each input.

        A single input gives a Tensor, several a tuple (``None`` where no gradient flows).

        >>> import dualgrad as dg
        >>> a = dg.tensor([0., 1.], requires_grad=True)
        >>> (a * 3).grad_fn(dg.ones(2))
        (tensor([3., 3.]), None)
        """
        if len(grad_outputs) != self.n_outputs:
            raise TypeError(
                f"{self.name()} expects {self.n_outputs} gradient(s), one per output, "
                f"got {len(grad_outputs)}"
            )
        grads = self.op.backward(self, list(grad_outputs))
        return grads[0] if len(grads) == 1 else tuple(grads)


def short_name(node: Any) -> str:
    """The node's name without torch's namespace, as its class and repr show it (``name()``
    ``'torch::autograd::CopyBackwards'``, class ``CopyBackwards``)."""
    return node.name().rsplit("::", 1)[-1]


def _is_number(kept: Any) -> bool:
    """True if what a node keeps of an argument is a Python (or NumPy) number, or None."""
    return kept is None or isinstance(kept, (numbers.Number, np.generic))


def new_node(op: Any, edges: tuple, saved: tuple = (), params: Any = None, inputs: tuple = (),
             out: Any = None, n_outputs: int = 1) -> Node:
    """A graph node for one call of ``op`` (a plain function: no ``__init__`` dispatch, which the
    recording of every op would pay for).

    ``edges`` has one ``(target, output_nr)`` per input, target None if no grad flows; ``saved``
    holds the SavedTensor objects released after backward; ``params``, ``inputs`` (a SavedTensor,
    TensorMeta or constant per input) and ``out`` (its SavedTensor(s) or None) are what the op's
    backward reads.
    """
    node = Node()  # (a class without ``__init__``: calling it costs less than ``object.__new__``)
    node.op = op
    node._arity = 0
    node._edges = _flat(edges)
    node._saved = saved
    node.params = params
    node._kept = inputs
    node._v0 = node._v1 = node._ov = None
    node.out = out
    node.out_metas = None  # ((shape, dtype), ...) of a multi-output op's outputs, set by its recording
    node.seq = next(_sequence)
    node.n_outputs = n_outputs
    node._hooks = node._metadata = None
    node._released = False
    return node


def _flat(edges: tuple) -> tuple:
    """``((target, nr), ...)`` as ``(target, nr, ...)``: one tuple the garbage collector tracks, not one per edge."""
    return tuple([item for edge in edges for item in edge])


def new_node1(op: Any, target: Any, nr: int, kept: Any, version: int | None, saved: tuple,
              params: Any) -> Node:
    """A node in the compact layout for a call with one argument (see ``Node.__slots__``): its edge
    ``(target, nr)``, what it keeps of the argument (``kept``; the Tensor itself when ``version`` is
    not None: a folded saved input), the argument's SavedTensor in ``saved`` if it has one."""
    node = Node()
    node.op = op
    node._arity = 1
    node._t0 = target
    node._n0 = nr
    node._k0 = kept
    node._v0 = version
    node._v1 = node._ov = None
    node._saved = saved
    node.params = params
    node.out = node.out_metas = None
    node.seq = next(_sequence)
    node.n_outputs = 1
    node._hooks = node._metadata = None
    node._released = False
    return node


def new_node2(op: Any, target0: Any, nr0: int, kept0: Any, version0: int | None, target1: Any, nr1: int,
              kept1: Any, version1: int | None, saved: tuple, params: Any) -> Node:
    """``new_node1`` for a call with two arguments (an argument without edge has target None)."""
    node = Node()
    node.op = op
    node._arity = 2
    node._t0 = target0
    node._n0 = nr0
    node._k0 = kept0
    node._v0 = version0
    node._t1 = target1
    node._n1 = nr1
    node._k1 = kept1
    node._v1 = version1
    node._ov = None
    node._saved = saved
    node.params = params
    node.out = node.out_metas = None
    node.seq = next(_sequence)
    node.n_outputs = 1
    node._hooks = node._metadata = None
    node._released = False
    return node


# Set by ``reverse.saved``: ``unfold(node)`` turns a compact node's folded inputs and output into SavedTensor objects.
UNFOLD: list = [None]


def add_saved_attributes(keys: Iterable[str]) -> None:
    """Give nodes the attributes ``_saved_<key>`` and ``_raw_saved_<key>`` (torch's names for what
    a backward rule saved), answered by the node's op: ``op.saved_attribute(node, attribute)``
    raises AttributeError for a value that this op did not save.

    They are properties of ``Node`` rather than a ``__getattr__`` fallback: with ``__getattr__``
    on its class, every attribute read of every node would skip the interpreter's fast path
    (the backward engine reads node attributes at every step). One class for all ops, for the
    same reason: attribute reads that meet several classes at one place in the code are slow.
    """
    for key in keys:
        for attribute in (f"_saved_{key}", f"_raw_saved_{key}"):
            if attribute not in Node.__dict__:
                setattr(Node, attribute, _saved_property(attribute))


def _saved_property(attribute: str) -> property:
    def get(node: Node) -> Any:
        saved_attribute = getattr(node.op, "saved_attribute", None)
        if saved_attribute is None:
            raise AttributeError(f"'{node.name()}' object has no attribute '{attribute}'")
        return saved_attribute(node, attribute)

    return property(get, doc=f"The value the backward rule saved as ``{attribute}``.")


_PUBLIC_NAMES = ("metadata", "name", "next_functions", "register_hook", "register_prehook",
                 "requires_grad")


ACCUMULATE_GRAD_NAME = "torch::autograd::AccumulateGrad"  # (torch's ``name()`` of these nodes)


class AccumulateGrad:
    """The node through which a leaf tensor receives its gradient; its ``name()`` is torch's,
    ``'torch::autograd::AccumulateGrad'``."""

    __slots__ = ("variable", "__weakref__")

    def __init__(self, variable: Tensor):
        self.variable = variable

    def name(self) -> str:
        return ACCUMULATE_GRAD_NAME

    def __repr__(self) -> str:
        return "<AccumulateGrad>"

    next_functions: tuple = ()

    @property
    def metadata(self) -> dict:
        return self.variable._get_extra().setdefault("accumulate_metadata", {})

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs)``, run after accumulation."""
        return add_hook(self.variable._get_extra().setdefault("accumulate_post_hooks", {}), fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Register ``fn(grad_outputs)``, run before accumulation; may return new grad_outputs."""
        return add_hook(self.variable._get_extra().setdefault("accumulate_pre_hooks", {}), fn)


def _as_node(target: Any) -> Any:
    if isinstance(target, Tensor):
        return accumulate_grad_node(target)
    return named(target)


_NAMED_CLASSES: dict[str, type] = {}


def named(node: Any) -> Any:
    """``node``, made an instance of the subclass of ``Node`` that has its name, if it is a plain
    ``Node`` (an op's; a custom Function's node has its class already).

    Done when a node is handed to the user, not when it is recorded: the backward engine then
    meets one class at its attribute reads, which the interpreter keeps fast.

    >>> import dualgrad as dg
    >>> y = dg.ones(2, requires_grad=True) * 2
    >>> type(y.grad_fn).__name__, isinstance(y.grad_fn, dg.graph.Node)
    ('MulBackward0', True)
    """
    if type(node) is Node:
        name = node.name()
        cls = _NAMED_CLASSES.get(name)
        if cls is None:
            namespace = {"__slots__": (), "__module__": "builtins"}
            cls = _NAMED_CLASSES[name] = _NodeType(short_name(node), (Node,), namespace)
        node.__class__ = cls
    return node


tensor_module.NAMED_NODE[0] = named


def accumulate_grad_node(leaf: Tensor) -> AccumulateGrad:
    """The (weakly cached) AccumulateGrad node of a leaf."""
    extra = leaf._get_extra()
    ref = extra.get("grad_accumulator")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        extra["grad_accumulator"] = weakref.ref(node)
    return node
