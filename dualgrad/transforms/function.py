"""Custom autograd Functions: ``Function``, its ``ctx`` (``FunctionCtx``) and ``once_differentiable``.

A subclass gives static ``forward`` and ``backward`` (alias ``vjp``), and optionally
``jvp`` (forward mode), ``vmap`` or ``generate_vmap_rule = True`` (vmap) and
``setup_context``. ``Function.apply`` runs ``forward`` with grad mode off and,
when an input requires grad, records one graph node whose op is a
``FunctionOp``: an object with the same ``backward`` / ``jvp`` / ``batch``
methods as an entry of the op table, so the engines need no special case.

>>> import dualgrad as dg
>>> class Exp(dg.autograd.Function):
...     @staticmethod
...     def forward(ctx, i):
...         result = i.exp()
...         ctx.save_for_backward(result)
...         return result
...
...     @staticmethod
...     def backward(ctx, grad_output):
...         result, = ctx.saved_tensors
...         return grad_output * result
>>> x = dg.tensor([0., 1.], requires_grad=True)
>>> y = Exp.apply(x)
>>> y
tensor([1.0000, 2.7183], grad_fn=<ExpBackward>)
>>> y.sum().backward()
>>> x.grad
tensor([1.0000, 2.7183])
"""

from __future__ import annotations

import functools
import inspect
import warnings
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..base import pytree
from ..base.state import STATE
from ..forward_ad.engine import propagate_tangents, tangent_at
from ..ops import dispatch
from ..ops.dispatch import make_view, regenerate_view
from ..ops.inplace import VIEW_OF_LEAF_MESSAGE, take_graph
from ..ops.registry import fit_gradient
from ..reverse.anomaly import remember_forward_stack
from ..reverse.grad_mode import no_grad
from ..reverse.node import Node, NodeOp, new_node
from ..reverse.saved import FREED_MESSAGE, save_tensor
from ..tensor import Tensor, _wrap
from ..vmap.batching import (
    BatchedTensor,
    VmapLevel,
    is_batched_at,
    level_to_front,
    make_batched,
    movedim,
    only_vmap_levels,
    vmap_level,
)

CLEARED_ON_ACCESS_MESSAGE = (
    "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on the "
    "autograd.Function. Either access saved_tensors only once, or set clear_saved_tensors_on_access=False."
)
ONCE_DIFFERENTIABLE_MESSAGE = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)


class VmapInfo(NamedTuple):
    """What a ``vmap`` staticmethod is told about the batch."""

    batch_size: int
    randomness: str = "error"


class _SavedOutput(NamedTuple):
    """A ``save_for_forward`` entry that is an output: ``jvp`` reads it from the outputs it is given."""

    position: int  # among the differentiable outputs (``FunctionOp.differentiable_outputs``)


class FunctionCtx:
    """The ``ctx`` passed to a custom Function's ``forward``/``setup_context``, ``backward`` and ``jvp``.

    Any attribute may be set on it to pass values to ``backward``. After
    ``forward`` it holds no output Tensor (see ``_forget_outputs``): an output
    holds the Function's node, which holds the ctx.
    """

    def __init__(self) -> None:
        self._to_save: tuple = ()
        self._saved: tuple | None = None  # per saved value: None, or (its index in node.saved, output_nr)
        self._node_ref: Any = None
        self._for_forward: tuple = ()  # Tensor | None | _SavedOutput per value
        self._in_jvp = False
        self._jvp_outputs: tuple = ()  # inside ``jvp``: the differentiable outputs (aliases when taped)
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self.materialize_grads = True
        self.needs_input_grad: tuple = ()
        self._clear_on_access = False  # (the Function's ``clear_saved_tensors_on_access``)
        self._saved_accessed = False

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Save tensors (or ``None``) for ``backward``; read them back with ``saved_tensors``.

        Saved tensors are version-checked: changing one in place before backward
        raises an error there.
        """
        _check_tensors(tensors, "save_for_backward")
        self._to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Save tensors for ``jvp``, where ``saved_tensors`` returns them."""
        _check_tensors(tensors, "save_for_forward")
        self._for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (``save_for_forward`` inside ``jvp``).

        A saved output comes back as a new Tensor with its data, attached to the
        Function's node (an alias of the output inside ``jvp``). When the Function sets
        ``clear_saved_tensors_on_access = True``, the first read (``jvp``'s aside) lets go of
        the saved values (the caller then holds the only references) and a second read raises
        torch's RuntimeError.
        """
        if self._in_jvp:
            return tuple(self._jvp_outputs[t.position] if type(t) is _SavedOutput else t
                         for t in self._for_forward)
        if not self._clear_on_access:
            return self._saved_values()
        if self._saved_accessed:
            raise RuntimeError(CLEARED_ON_ACCESS_MESSAGE)
        self._saved_accessed = True
        values = self._saved_values()
        if self._saved is not None:
            node = self._node_ref()
            for entry in self._saved:
                if entry is not None:
                    node.saved[entry[0]].release()
        self._to_save = ()
        return values

    def _saved_values(self) -> tuple:
        """What ``saved_tensors`` returns outside ``jvp`` (unpacked, version-checked), not counted as a read."""
        if self._saved is None:
            return self._to_save
        node = self._node_ref()
        if node is None:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(None if entry is None else node.saved[entry[0]].unpack(node, entry[1])
                     for entry in self._saved)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Mark input tensors that ``forward`` modified in place (they must be returned)."""
        _check_tensors(tensors, "mark_dirty")
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Mark outputs that do not require grad; ``backward`` still gets (zero) gradients for them."""
        _check_tensors(tensors, "mark_non_differentiable")
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With ``False``, ``backward``/``jvp`` receive ``None`` instead of zeros for missing gradients."""
        if not isinstance(value, bool):
            raise TypeError(f"set_materialize_grads expects a bool, got {type(value).__name__}")
        self.materialize_grads = value

    def _forget_outputs(self, outputs: list, differentiable: tuple) -> None:
        """Drop every reference to ``outputs`` that ``forward`` left here (after the node was recorded).

        An output holds the node, which holds this ctx: keeping the output would be a
        reference cycle, freed only by the garbage collector (torch saves outputs the
        same way). ``save_for_backward`` values are already ``SavedTensor`` objects
        (an output by data and version); a differentiable output given to
        ``save_for_forward`` becomes a ``_SavedOutput``, for which ``jvp`` sees the
        output it is handed (an alias when the tangent is taped). Attributes the user
        set to an output (``ctx.out = out``) are not found: they still make a cycle.
        """
        self._to_save = self._dirty = self._non_differentiable = ()
        if self._for_forward:
            differentiable_outputs = [outputs[i] for i in differentiable]
            self._for_forward = tuple(_saved_for_forward(t, differentiable_outputs) for t in self._for_forward)


# torch's older name for the ctx class, which its reference documents (the same class in torch 2.x)
_ContextMethodMixin = FunctionCtx


class BackwardCFunction(Node):
    """The ``grad_fn`` of a custom Function's outputs: a graph node that also reads as its ``ctx``.

    As in torch, what ``forward``/``setup_context`` left on ``ctx`` is read (and set) through
    the node: ``saved_tensors``, ``needs_input_grad``, ``ctx.foo``. Each Function gets its own
    subclass, named ``<Name>Backward``, whose ``_forward_cls`` is the Function. Only these nodes
    have a ``__getattr__``: on ``Node`` it would slow every attribute read of the engine (see
    ``add_saved_attributes``).

    >>> import dualgrad as dg
    >>> class Double(dg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.factor = 2
    ...         return x * 2
    ...
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         return g * ctx.factor
    >>> y = Double.apply(dg.tensor([1., 2.], requires_grad=True))
    >>> node = y.grad_fn
    >>> type(node).__name__, node.name(), node.factor, node.needs_input_grad
    ('DoubleBackward', 'DoubleBackward', 2, (True,))
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:  # (only reached for names the node itself does not have)
        if name in _NODE_SLOTS or name.startswith("__"):  # (a slot not set yet: ``op`` while being built)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        try:
            return getattr(self.op.ctx, name)
        except AttributeError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _NODE_SLOTS:
            object.__setattr__(self, name, value)
        else:
            setattr(self.op.ctx, name, value)

    @property
    def next_functions(self) -> tuple:
        """One ``(node or None, output_nr)`` per Tensor argument of ``forward`` (torch skips the others)."""
        metas = self.op.input_metas
        return tuple(pair for pair, meta in zip(super().next_functions, metas, strict=True) if meta is not None)

    def apply(self, *grad_outputs: Any) -> Any:
        """The Function's ``backward`` on this node's ctx, its result unchecked (torch's ``apply``)."""
        return self.op.cls._vjp_rule(self.op.ctx, *grad_outputs)

    def __dir__(self) -> list:
        """The node's names and the ctx's public ones."""
        return sorted({*super().__dir__(), *(n for n in dir(self.op.ctx) if not n.startswith("_"))})


_NODE_SLOTS = frozenset(Node.__slots__) | {"saved"}  # (and the one settable property of nodes)


def _saved_for_forward(t: Tensor | None, outputs: list) -> Tensor | _SavedOutput | None:
    """How ``ctx`` keeps ``t`` for ``jvp``: a ``_SavedOutput`` if it is one of ``outputs``, else ``t``."""
    position = next((k for k, o in enumerate(outputs) if o is t), None)
    return t if position is None else _SavedOutput(position)


def _check_tensors(values: tuple, method: str) -> None:
    """torch's errors for a value that is neither a Tensor nor None: TypeError to save, RuntimeError to mark."""
    for i, v in enumerate(values):
        if v is not None and not isinstance(v, Tensor):
            error, verb = (TypeError, "save") if method.startswith("save") else (RuntimeError, "accept")
            raise error(f"{method} can only {verb} variables, but argument {i} is of type {type(v).__name__}")


def _contains(items: tuple, x: Any) -> bool:
    return any(item is x for item in items)


def _zeros(meta: tuple) -> Tensor:
    shape, dtype = meta
    return _wrap(np.zeros(shape, dtype))


class FunctionOp(NodeOp):
    """The op of one ``Function.apply`` call: the engines' view of a custom Function."""

    family = "custom"
    differentiable = True
    view = False
    multi_output = True
    scatter_index = None  # (see Op.scatter_index)
    runs_on_undefined = True  # (torch calls backward with None, or zeros when materializing)

    def __init__(self, cls: type, ctx: FunctionCtx, args: tuple):
        self.cls = cls
        self.ctx = ctx
        ctx._clear_on_access = cls.clear_saved_tensors_on_access
        self.name = cls.__name__
        self.grad_name = f"{cls.__name__}Backward"
        self.input_metas = tuple((a.shape, a.dtype) if isinstance(a, Tensor) else None for a in args)
        self.output_metas: tuple = ()
        self.differentiable_outputs: tuple = ()  # indices of the outputs that get the node and tangents
        self.vmap_info: VmapInfo | None = None  # (under vmap: the batch the ``vmap`` staticmethod is told)

    def __repr__(self) -> str:
        return f"<FunctionOp {self.name}>"

    # -- reverse mode -------------------------------------------------------------------
    def backward(self, node: Node, grads: list) -> list:
        """Call the user's ``backward`` and check what it returns."""
        if node._released and node.saved:
            raise RuntimeError(FREED_MESSAGE)
        ctx = self.ctx
        if ctx.materialize_grads:
            grads = [_zeros(meta) if g is None and meta is not None else g
                     for g, meta in zip(grads, self.output_metas, strict=True)]
        result = self.cls._vjp_rule(ctx, *grads)
        return self._check_gradients(node, result if isinstance(result, tuple) else (result,))

    def _check_gradients(self, node: Node, result: tuple) -> list:
        n = len(node.edges)
        if len(result) < n or any(g is not None for g in result[n:]):
            raise RuntimeError(
                f"function {self.grad_name} returned an incorrect number of gradients "
                f"(expected {n}, got {len(result)})"
            )
        grads: list = []
        for i, ((target, _), g, meta) in enumerate(zip(node.edges, result, self.input_metas, strict=False)):
            if g is not None and meta is None:
                raise RuntimeError(
                    f"function {self.grad_name} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Variable"
                )
            if g is not None and not isinstance(g, Tensor):  # (torch checks it for every input)
                raise RuntimeError(
                    f"function {self.grad_name} returned a {type(g).__name__} as the gradient of "
                    f"{self.cls._input_name(i)}: expected Variable or None (got {type(g).__name__})"
                )
            if g is None or target is None:
                grads.append(None)
                continue
            _check_gradient(self.cls, i, g, meta)
            grads.append(fit_gradient(g, *meta))
        return grads

    # -- forward mode -------------------------------------------------------------------
    def jvp(self, tangents: tuple, out: Any, *inputs: Any, **params: Any) -> tuple:
        """Tangents of the differentiable outputs from the user's ``jvp``."""
        cls = self.cls
        ctx = self.ctx
        if ctx.materialize_grads:
            tangents = tuple(_zeros(meta) if t is None and meta is not None else t
                             for t, meta in zip(tangents, self.input_metas, strict=True))
        ctx._in_jvp, ctx._jvp_outputs = True, out
        try:
            result = cls._jvp_rule(ctx, *tangents)
        finally:
            ctx._in_jvp, ctx._jvp_outputs = False, ()
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(self.output_metas):
            raise RuntimeError(
                f"Function's jvp returned an invalid number of forward gradients (expected "
                f"{len(self.output_metas)} but got {len(result)})"
            )
        for i in self.differentiable_outputs:
            _check_tangent(i, result[i], self.output_metas[i][0])
        return tuple(result[i] for i in self.differentiable_outputs)

    # -- vmap ----------------------------------------------------------------------------
    def batch(self, args: tuple, bdims: tuple, **params: Any) -> tuple:
        """Run the user's ``vmap`` staticmethod: ``(output, out_dims)``."""
        cls = self.cls
        if not cls._has("vmap"):
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                "override and implement the vmap staticmethod or set generate_vmap_rule=True."
            )
        return _checked_vmap_result(cls.vmap(self.vmap_info, tuple(bdims), *args, **params))


def _checked_vmap_result(result: Any) -> tuple:
    """``(output, out_dims)`` from what a ``vmap`` staticmethod returned, ``out_dims`` one per output.

    RuntimeError (torch's) unless ``result`` is a pair whose ``out_dims`` (an int or None,
    or one per output) matches the structure of ``output``.
    """
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            "Expected the vmap staticmethod to have two returns, an output and out_dims with pytree "
            f"structure compatible with the output. Got a {type(result)} instead"
        )
    output, out_dims = result
    dims = pytree.broadcast_prefix(out_dims, output)
    if dims is None or not all(d is None or isinstance(d, int) for d in dims):
        raise RuntimeError(
            "The autograd.Function's vmap staticmethod returned an incompatible (output, out_dims) "
            f"tuple. Expected out_dims={out_dims} to be compatible with the structure of `output`. "
            f"out_dims has structure {pytree.describe(pytree.flatten(out_dims)[1])} but output has "
            f"structure {pytree.describe(pytree.flatten(output)[1])}."
        )
    return output, tuple(dims) if isinstance(output, tuple) else dims[0]


def _without_dirty(args: tuple, dirty: tuple) -> tuple:
    """``args`` for the tangent rules: each input marked dirty replaced by a Tensor holding only its tangents.

    A dirty input now is an output (the output's data, graph and, once pushed,
    tangents), and what the tangent rules are given is kept by the node's
    ``TangentRecipe``: the input itself would be a cycle through the node. A
    Function's ``jvp`` reads ``ctx``, not the inputs, so only their tangents matter.
    """
    if not dirty:
        return args
    return tuple(_tangents_only(a) if _contains(dirty, a) else a for a in args)


def _tangents_only(x: Tensor) -> Tensor:
    """A new Tensor with ``x``'s tangents at the active dual levels (and its current data)."""
    copy = _wrap(x._data)
    copy._fw = {level: t for level in STATE.dual_levels if (t := tangent_at(x, level)) is not None} or None
    return copy


def _check_tangent(i: int, t: Any, shape: tuple) -> None:
    """RuntimeError unless ``t``, what ``jvp`` returned for output ``i``, is None or a Tensor of its ``shape``."""
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(t).__name__}) for grad output {i}.")
    if t.shape != shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(shape)} while the given forward "
            f"gradient is of size {list(t.shape)}."
        )


def _check_gradient(cls: type, i: int, g: Tensor, meta: tuple) -> None:
    """RuntimeError unless gradient ``g`` fits input ``i`` of ``(shape, dtype)`` ``meta``, as torch checks.

    Its shape must sum back to the input's. Its dtype is cast to the input's, but
    a complex gradient for a real input, or a non-floating one for a complex input,
    is an error (dualgrad's ops keep the real part; torch rejects it from a Function).
    """
    shape, dtype = meta
    if g.shape != shape and not _reducible(g.shape, shape):
        raise RuntimeError(
            f"Function {cls.__name__}Backward returned an invalid gradient at index {i} - got "
            f"{list(g.shape)} but expected shape compatible with {list(shape)}"
        )
    if (g.dtype.kind == "c") != (dtype.kind == "c") and g.dtype.kind != "f":
        raise RuntimeError(
            f"Function {cls.__name__}Backward returned an invalid gradient at index {i} - got dtype "
            f"{g.dtype} for an input of dtype {dtype}: a real input needs a real gradient, and a "
            "complex input a complex or floating point one"
        )


def _reducible(grad_shape: tuple, shape: tuple) -> bool:
    """True if a gradient of ``grad_shape`` sums back to ``shape`` (``shape`` broadcasts to it)."""
    try:
        return np.broadcast_shapes(grad_shape, shape) == tuple(grad_shape)
    except ValueError:
        return False


class Function:
    """Base class of custom autograd Functions; subclass it and call ``apply``.

    Write ``forward(ctx, *args)``, or ``forward(*args)`` together with
    ``setup_context(ctx, inputs, output)``; then ``backward(ctx, *grad_outputs)``
    returning one gradient (or ``None``) per input of ``forward``, written with
    dualgrad ops so that it can be differentiated again. Non-Tensor arguments
    and outputs pass through. Arguments given to ``apply`` by keyword are bound
    to ``forward``'s parameters and are inputs like the others (with
    ``setup_context``, so are the defaults), as in torch.

    >>> import dualgrad as dg
    >>> class Cube(dg.autograd.Function):
    ...     @staticmethod
    ...     def forward(x):
    ...         return x ** 3
    ...
    ...     @staticmethod
    ...     def setup_context(ctx, inputs, output):
    ...         ctx.save_for_backward(inputs[0])
    ...
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         x, = ctx.saved_tensors
    ...         return 3 * g * x ** 2
    >>> x = dg.tensor(2., requires_grad=True)
    >>> g, = dg.grad(Cube.apply(x), x, create_graph=True)
    >>> g, dg.grad(g, x)[0]
    (tensor(12., grad_fn=<MulBackward0>), tensor(12.))
    """

    generate_vmap_rule = False
    # With True, the first read of ``ctx.saved_tensors`` lets go of the saved values (so that memory
    # comes back as soon as the caller drops them) and a second read raises RuntimeError.
    clear_saved_tensors_on_access = False
    # With True, ``backward(ctx, grads)`` gets the output gradients as one list that it may change
    # (``grads.pop()`` frees a gradient as soon as it was used), instead of ``backward(ctx, *grads)``.
    boxed_grads_call = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._has("backward") and cls._has("vjp"):
            raise RuntimeError(
                f"{cls.__name__}: Implementing both 'backward' and 'vjp' for a custom Function "
                "is not allowed. You should only implement one of them."
            )
        if cls._has("vmap") and cls.generate_vmap_rule:
            raise RuntimeError(
                f"{cls.__name__}: it has both generate_vmap_rule=True and an overridden vmap "
                "staticmethod. Please set generate_vmap_rule=False or delete the overridden vmap "
                "staticmethod to avoid ambiguity."
            )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
            "you should invoke them on the class itself. Instantiating an autograd function will raise "
            "an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @classmethod
    def _has(cls, name: str) -> bool:
        return getattr(cls, name) is not getattr(Function, name)

    @classmethod
    def _bind(cls, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """``args`` and ``kwargs`` bound to ``forward``'s parameters: ``(inputs, keyword-only ones)``.

        As torch, arguments given by keyword are inputs too (in the order of the parameters,
        so they get gradients); with ``setup_context`` the defaults are inputs as well.
        """
        signature = cls.__dict__.get("_forward_signature")
        if signature is None:
            signature = inspect.signature(cls.forward)
            if not cls._has("setup_context"):  # (forward(ctx, ...): ctx is not an argument)
                signature = signature.replace(parameters=list(signature.parameters.values())[1:])
            cls._forward_signature = signature
        bound = signature.bind(*args, **kwargs)
        if cls._has("setup_context"):
            bound.apply_defaults()
        for name, value in bound.kwargs.items():
            if isinstance(value, Tensor) and value.requires_grad:
                raise TypeError(
                    f"{cls.__name__}.apply: the Tensor '{name}' cannot be an input (it is keyword-only, or "
                    "a parameter before it was not given), so it would get no gradient; pass it positionally"
                )
        return bound.args, bound.kwargs

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs (grad mode is off here); override it."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Save what ``backward`` needs when ``forward`` does not take ``ctx``."""
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """The vector-Jacobian product: one gradient (or None) per input of forward."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """The Jacobian-vector product: one tangent per output of forward."""
        raise NotImplementedError

    @staticmethod
    def vmap(info: VmapInfo, in_dims: tuple, *args: Any) -> tuple:
        """The batching rule: ``(output, out_dims)`` for inputs batched along ``in_dims``."""
        raise NotImplementedError

    @classmethod
    def _vjp_rule(cls, ctx: FunctionCtx, *grads: Any) -> Any:
        if cls.boxed_grads_call:  # (torch's: one mutable list, also for ``grad_fn.apply(*grads)``)
            grads = (list(grads),)
        return cls.vjp(ctx, *grads) if cls._has("vjp") else cls.backward(ctx, *grads)

    @classmethod
    def _check_flags(cls) -> None:
        """torch's RuntimeError for a class attribute that must be a bool (checked at every ``apply``)."""
        for name in ("clear_saved_tensors_on_access", "boxed_grads_call"):
            value = getattr(cls, name)
            if type(value) is not bool:
                raise RuntimeError(f"{name} must be a bool, got {type(value).__name__}")

    @classmethod
    def _jvp_rule(cls, ctx: FunctionCtx, *tangents: Any) -> Any:
        if not cls._has("jvp"):
            raise NotImplementedError(  # torch's type (a RuntimeError subclass)
                f"{cls.__name__}: You must implement the jvp function for custom "
                "autograd.Function to use it with forward mode AD."
            )
        return cls.jvp(ctx, *tangents)

    @classmethod
    def _node_class(cls) -> type:
        """The ``BackwardCFunction`` subclass of this Function's nodes, made on first use."""
        node_class = cls.__dict__.get("_backward_cls")
        if node_class is None:
            node_class = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                              {"__slots__": (), "_forward_cls": cls, "__module__": cls.__module__})
            cls._backward_cls = node_class
        return node_class

    @classmethod
    def _input_name(cls, i: int) -> str:
        params = list(inspect.signature(cls.forward).parameters.values())
        if not cls._has("setup_context"):
            params = params[1:]
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                   params[i].POSITIONAL_OR_KEYWORD):
            return f"input {i} ('{params[i].name}')"
        return f"input {i}"

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the Function on ``args``, recording it for every active autograd mode.

        Observers see the call as one op named after the class (the profiler's
        row for the forward; the backward node is ``<ClassName>Backward``).
        """
        state = STATE
        cls._check_flags()
        if kwargs or cls._has("setup_context"):
            args, kwargs = cls._bind(args, kwargs)
        if state.vmap_depth and (level := _vmap_level_of(args)) is not None:
            if cls.generate_vmap_rule:
                return _apply_generated_vmap_rule(cls, level, args, kwargs)
            op = FunctionOp(cls, FunctionCtx(), args)
            op.vmap_info = VmapInfo(level.size, level.randomness)
            return dispatch.run_batched(op, args, kwargs)
        op = FunctionOp(cls, FunctionCtx(), args)
        if state.observed:
            run = cls._apply_op
            for observer in state.observers:
                run = observer.wrap_op(run)
            return run(op, args, kwargs)
        return cls._apply_op(op, args, kwargs)

    @classmethod
    def _apply_op(cls, op: FunctionOp, args: tuple, kwargs: dict) -> Any:
        """``apply`` after vmap: forward, then the graph node and the tangents."""
        state = STATE
        ctx = op.ctx
        grad_on = state.grad_enabled
        if grad_on:
            for a in args:
                if isinstance(a, Tensor) and a._view is not None and a._view.version != a._counter.value:
                    regenerate_view(a)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)  # (torch's,
        recording = grad_on and any(ctx.needs_input_grad)  # even under no_grad, where no node is recorded)
        edges = tuple((a._node() or a, a._output_nr) if recording and need
                      else dispatch.NO_EDGE for a, need in zip(args, ctx.needs_input_grad, strict=True))
        output = cls._run_forward(ctx, args, kwargs)
        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        op.differentiable_outputs = differentiable = tuple(
            i for i, o in enumerate(outputs)
            if isinstance(o, Tensor) and o.dtype.kind in "fc" and not _contains(ctx._non_differentiable, o))
        outputs = cls._prepare_outputs(ctx, args, outputs, recording)
        op.output_metas = tuple((o.shape, o.dtype) if isinstance(o, Tensor) else None for o in outputs)
        if recording:
            cls._record(op, edges, outputs)
        tangent_args = _without_dirty(args, ctx._dirty) if state.dual_levels else args
        ctx._forget_outputs(outputs, differentiable)
        if state.dual_levels:
            propagate_tangents(op, tangent_args, kwargs, tuple(outputs[i] for i in differentiable))
        return tuple(outputs) if is_tuple else outputs[0]

    @classmethod
    def _run_forward(cls, ctx: FunctionCtx, args: tuple, kwargs: dict) -> Any:
        """``forward`` (and ``setup_context``) with grad mode and forward AD off."""
        state = STATE
        levels = state.dual_levels
        state.dual_levels = ()
        try:
            with no_grad():
                if cls._has("setup_context"):
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args, **kwargs)
        finally:
            state.dual_levels = levels
        return output

    @classmethod
    def _prepare_outputs(cls, ctx: FunctionCtx, args: tuple, outputs: tuple, recording: bool) -> list:
        """Check ``mark_dirty``; an input returned as-is becomes a new view of it.

        As in torch, an output that is a view (of an input, or made in ``forward``) may not
        be modified in place, nor used after its base was: the custom backward would be
        bypassed (``ViewInfo.grad_mode`` holds the output's name for that error). An input
        that requires grad returned as-is (dirty or not) where it gets no node (marked
        non-differentiable, or no graph is recorded) becomes its ``detach()``, as in torch.
        """
        if ctx._dirty:
            cls._check_dirty(ctx, args, outputs, recording)
        result = []
        for i, o in enumerate(outputs):
            if isinstance(o, Tensor):
                owner = f"Output {i} of {cls.__name__}"
                if _contains(args, o):
                    o = cls._input_as_output(ctx, o, owner, recording)
                elif o._view is not None:
                    o._view.grad_mode = owner
            result.append(o)
        return result

    @staticmethod
    def _input_as_output(ctx: FunctionCtx, x: Tensor, owner: str, recording: bool) -> Tensor:
        """What ``apply`` returns for input ``x`` returned as-is by ``forward``."""
        if x._requires_grad and (not recording or _contains(ctx._non_differentiable, x)):
            return x.detach()
        if _contains(ctx._dirty, x):
            return x
        alias = _wrap(x._data)
        make_view(x, alias, (), owner)
        return alias

    @staticmethod
    def _check_dirty(ctx: FunctionCtx, args: tuple, outputs: tuple, recording: bool) -> None:
        """Torch's checks of ``mark_dirty``, in torch's order: every dirty tensor must be returned;
        each one's version counter is then bumped; a non-input is only warned about (and then a
        plain output); a dirty leaf that requires grad is refused (after its bump, as in torch)."""
        for t in ctx._dirty:
            if not _contains(outputs, t):
                raise RuntimeError(
                    "Some elements marked as dirty during the forward method were not returned as "
                    "output. The inputs that are modified inplace must all be outputs of the Function."
                )
        for t in ctx._dirty:  # as torch: a dirty tensor counts as modified in place (even if forward
            t._bump_version()  # wrote through NumPy), so graphs that saved its old value see the change
        if not all(_contains(args, t) for t in ctx._dirty):
            warnings.warn(
                "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that "
                "have been mutated should be passed to ctx.mark_dirty().", UserWarning, stacklevel=4)
            ctx._dirty = tuple(t for t in ctx._dirty if _contains(args, t))
        if recording:
            for t in ctx._dirty:
                _refuse_dirty_leaf(t)

    @classmethod
    def _record(cls, op: FunctionOp, edges: tuple, outputs: list) -> None:
        """Create the graph node, attach it to the differentiable outputs, save tensors."""
        ctx = op.ctx
        node = new_node(op, edges, (), n_outputs=len(outputs))
        node.__class__ = cls._node_class()  # (a subclass without slots: new_node stays one class)
        for i in op.differentiable_outputs:
            o = outputs[i]
            if _contains(ctx._dirty, o):
                marker = _wrap(o._data)
                marker._requires_grad = True
                marker.grad_fn = node
                marker._output_nr = i
                take_graph(o, marker)
            else:
                o._requires_grad = True
                o.grad_fn = node
                o._output_nr = i
        layout, saved = [], []
        for t in ctx._to_save:
            if t is None:
                layout.append(None)
                continue
            nr = next((i for i, o in enumerate(outputs) if o is t), None)
            layout.append((len(saved), nr or 0))
            saved.append(save_tensor(t, is_output=nr is not None))
        ctx._saved = tuple(layout)  # the node holds the SavedTensors: their tangent recipes hold the op and ctx
        ctx._node_ref = weakref.ref(node)
        node.saved = tuple(saved)
        if STATE.anomaly_enabled:
            remember_forward_stack(node)


# -- generate_vmap_rule: the Function one vmap level down -------------------------------------------
def _vmap_level_of(args: tuple) -> VmapLevel | None:
    """The innermost vmap level among the batched ``args`` (None when none is batched)."""
    top = max((a.level for a in args if type(a) is BatchedTensor), default=0)
    if not top:
        return None
    level = next((v for v in STATE.vmap_levels if v.id == top), None)
    if level is None:
        raise RuntimeError(
            "vmap: a batched tensor was used outside the vmap call that created it; return it from "
            "the vmapped function instead of storing it"
        )
    return level


def _apply_generated_vmap_rule(cls: type, level: VmapLevel, args: tuple, kwargs: dict) -> Any:
    """``cls.apply`` with ``args`` batched at vmap ``level`` and ``generate_vmap_rule = True`` (torch.func's design).

    That level is unwrapped and a generated Function (``_GeneratedRule.function``)
    is applied to the physical values with the level inactive: a graph node and
    tangents are recorded for it like for any Function, on the physical tensors.
    Its ``forward``, ``backward`` and ``jvp`` run the user's on per-example
    (batched) tensors under a fresh vmap level, so they batch through the ops'
    own rules.
    """
    top = level.id
    own = [type(a) is BatchedTensor and a.level == top for a in args]
    rule = _GeneratedRule(cls, level, tuple(a.bdim if mine else None for a, mine in zip(args, own)),
                          tuple((a.shape, a.dtype) if isinstance(a, Tensor) else None for a in args))
    with _without_level(level):
        output = rule.function().apply(*[a.value if mine else a for a, mine in zip(args, own)], **kwargs)
    if isinstance(output, tuple):
        return tuple(make_batched(o, d, top) for o, d in zip(output, rule.out_dims, strict=True))
    return make_batched(output, rule.out_dims[0], top)


def _without_level(level: VmapLevel) -> only_vmap_levels:
    """Make vmap ``level`` inactive in the block (the generated Function runs below it)."""
    return only_vmap_levels(tuple(v for v in STATE.vmap_levels if v is not level))


def _unbatched(x: Any, level: int) -> tuple:
    """``(physical value, batch dim)`` of ``x`` at vmap ``level`` (``(x, None)`` if not batched there)."""
    if type(x) is BatchedTensor and x.level == level:
        return x.value, x.bdim
    return x, None


class _GeneratedRule:
    """The generated vmap rule of one ``apply``: the batch layout it records and the Function it makes.

    ``in_dims`` / ``input_metas`` describe the arguments (batch dim at the
    unwrapped level, logical shape and dtype); ``forward`` records ``out_dims``,
    the logical ``output_shapes`` and the batch dims of the saved tensors.
    """

    def __init__(self, cls: type, level: VmapLevel, in_dims: tuple, input_metas: tuple):
        self.cls = cls
        self.size = level.size
        self.randomness = level.randomness
        self.in_dims = in_dims
        self.input_metas = input_metas
        self.out_dims: tuple = ()
        self.output_shapes: tuple = ()
        self.saved_dims: tuple = ()
        self.forward_dims: tuple = ()

    def function(self) -> type:
        """A Function on the physical values, named ``Vmapped<Name>``, that may be batched again."""
        return type(f"Vmapped{self.cls.__name__}", (Function,), {
            "generate_vmap_rule": True,
            "clear_saved_tensors_on_access": self.cls.clear_saved_tensors_on_access,  # (the ctx is this one's)
            "forward": staticmethod(self.forward),
            "backward": staticmethod(self.backward),
            "jvp": staticmethod(self.jvp),
        })

    def forward(self, ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """The user's ``forward`` (and ``setup_context``) on per-example tensors."""
        cls = self.cls
        with vmap_level(self.size, self.randomness) as level:
            inputs = tuple(make_batched(a, d, level.id) for a, d in zip(args, self.in_dims, strict=True))
            level_ctx = _LevelCtx(ctx, level, self)
            if cls._has("setup_context"):
                output = cls.forward(*inputs, **kwargs)
                cls.setup_context(level_ctx, inputs, output)
            else:
                output = cls.forward(level_ctx, *inputs, **kwargs)
            outputs = output if isinstance(output, tuple) else (output,)
            physical, self.out_dims = zip(*(_unbatched(o, level.id) for o in outputs))
            self.output_shapes = tuple(o.shape if isinstance(o, Tensor) else None for o in outputs)
        return physical if isinstance(output, tuple) else physical[0]

    def backward(self, ctx: FunctionCtx, *grads: Any) -> tuple:
        """The user's ``backward`` on per-example cotangents; gradients back in the inputs' layout."""
        with vmap_level(self.size, self.randomness) as level:
            cotangents = [make_batched(g, d, level.id) for g, d in zip(grads, self.out_dims, strict=True)]
            result = self.cls._vjp_rule(_LevelCtx(ctx, level, self), *cotangents)
            result = result if isinstance(result, tuple) else (result,)
            return tuple(self._input_gradient(i, g, level) for i, g in enumerate(result))

    def _input_gradient(self, i: int, g: Any, level: VmapLevel) -> Any:
        """Per-example ``g`` summed to input ``i``'s logical shape, then laid out like the input.

        An input shared by the batch (not batched) gets the sum over the batch;
        a batched input gets ``g`` broadcast along the batch if it is not batched.
        Anything that is not a gradient is left for ``FunctionOp`` to reject.
        """
        if i >= len(self.in_dims) or not isinstance(g, Tensor) or self.input_metas[i] is None:
            return g
        _check_gradient(self.cls, i, g, self.input_metas[i])
        g = fit_gradient(g, *self.input_metas[i])
        dim = self.in_dims[i]
        if dim is None:
            return level_to_front(g, level).sum(0) if is_batched_at(g, level) else g
        return movedim(level_to_front(g, level), 0, dim)

    def jvp(self, ctx: FunctionCtx, *tangents: Any) -> tuple:
        """The user's ``jvp`` on per-example tangents; output tangents in the outputs' layout."""
        with vmap_level(self.size, self.randomness) as level:
            inputs = [make_batched(t, d, level.id) for t, d in zip(tangents, self.in_dims, strict=True)]
            result = self.cls._jvp_rule(_LevelCtx(ctx, level, self), *inputs)
            result = result if isinstance(result, tuple) else (result,)
            return tuple(self._output_tangent(i, t, level) for i, t in enumerate(result))

    def _output_tangent(self, i: int, t: Any, level: VmapLevel) -> Any:
        """Per-example tangent ``t`` of output ``i`` laid out like the output (its shape checked)."""
        if i >= len(self.out_dims) or not isinstance(t, Tensor) or self.output_shapes[i] is None:
            return t
        _check_tangent(i, t, self.output_shapes[i])
        dim = self.out_dims[i]
        if dim is not None:
            return movedim(level_to_front(t, level), 0, dim)
        if is_batched_at(t, level):
            raise RuntimeError(
                f"{self.cls.__name__}.jvp returned a tangent for output {i} that varies over the vmap batch, "
                "but forward returned that output unbatched (the same for every batch member)"
            )
        return t


class _LevelCtx:
    """The ``ctx`` that a Function with a generated vmap rule sees: per-example tensors at one level.

    Saved tensors are stored physically in the real ``ctx`` (with their batch dims
    in the rule) and come back batched at the current level; ``mark_dirty`` and
    ``mark_non_differentiable`` name the physical outputs. Every other attribute,
    including the user's own, lives on the real ``ctx``.
    """

    def __init__(self, ctx: Any, level: VmapLevel, rule: _GeneratedRule):
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "_level", level)
        object.__setattr__(self, "_rule", rule)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ctx, name, value)

    def _physical(self, tensors: tuple, method: str) -> tuple[tuple, tuple]:
        _check_tensors(tensors, method)
        pairs = [_unbatched(t, self._level.id) for t in tensors]
        return tuple(p for p, _ in pairs), tuple(d for _, d in pairs)

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        physical, self._rule.saved_dims = self._physical(tensors, "save_for_backward")
        self._ctx.save_for_backward(*physical)

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        physical, self._rule.forward_dims = self._physical(tensors, "save_for_forward")
        self._ctx.save_for_forward(*physical)

    @property
    def saved_tensors(self) -> tuple:
        dims = self._rule.forward_dims if self._ctx._in_jvp else self._rule.saved_dims
        return tuple(make_batched(t, d, self._level.id)
                     for t, d in zip(self._ctx.saved_tensors, dims, strict=True))

    def mark_dirty(self, *tensors: Tensor) -> None:
        self._ctx.mark_dirty(*self._physical(tensors, "mark_dirty")[0])

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self._ctx.mark_non_differentiable(*self._physical(tensors, "mark_non_differentiable")[0])


def _refuse_dirty_leaf(t: Tensor) -> None:
    """Torch's errors for a dirty input of a recorded call that is a leaf requiring grad, or a view of one."""
    info = t._view
    if info is not None and info.grad_mode is True and info.base._requires_grad:
        if info.base._node() is None:
            raise RuntimeError(VIEW_OF_LEAF_MESSAGE)
    elif t._requires_grad and t._node() is None:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")


def once_differentiable(fn: Callable) -> Callable:
    """Decorate ``backward`` so it runs with grad off; differentiating its result raises.

    >>> import dualgrad as dg
    >>> class Square(dg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...
    ...     @staticmethod
    ...     @dg.autograd.function.once_differentiable
    ...     def backward(ctx, g):
    ...         x, = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = dg.tensor(3., requires_grad=True)
    >>> dg.grad(Square.apply(x), x)
    (tensor(6.),)
    """

    @functools.wraps(fn)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        sources = None
        if STATE.grad_enabled:  # (read before ``fn``, which may empty a boxed list or clear the saved tensors)
            values = [g for a in grads for g in (a if isinstance(a, list) else (a,))]  # (boxed: one list)
            values += ctx._saved_values() if isinstance(ctx, FunctionCtx) else ctx.saved_tensors
            sources = [t for t in values if isinstance(t, Tensor) and t._requires_grad]
        with no_grad():
            result = fn(ctx, *grads)
        if not STATE.grad_enabled or not sources:
            return result
        is_tuple = isinstance(result, tuple)
        outputs = result if is_tuple else (result,)
        edges = tuple((t._node() or t, t._output_nr) for t in sources)
        node = new_node(_DelayedError(), edges, (), n_outputs=len(outputs))
        wrapped = []
        for i, g in enumerate(outputs):
            if isinstance(g, Tensor) and g.dtype.kind in "fc":
                g = _wrap(g._data)
                g._requires_grad = True
                g.grad_fn = node
                g._output_nr = i
            wrapped.append(g)
        return tuple(wrapped) if is_tuple else wrapped[0]

    return wrapper


class _DelayedError:
    """The op of the node behind a ``once_differentiable`` backward's results."""

    grad_name = "DelayedError"
    scatter_index = None
    runs_on_undefined = False

    def backward(self, node: Node, grads: list) -> list:
        raise RuntimeError(ONCE_DIFFERENTIABLE_MESSAGE)
