"""The ``Tensor``: a NumPy array plus autograd metadata. No math lives here.

Operators and math methods (``+``, ``sin``, ``sum``, ...) are attached by
``dualgrad.ops.methods`` from the op table, so this file only knows storage,
gradient bookkeeping and conversion.

>>> import dualgrad as dg
>>> x = dg.ones(2, 2, requires_grad=True)
>>> x
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)
>>> x.shape, x.dtype, x.is_leaf
((2, 2), dtype('float64'), True)
"""

from __future__ import annotations

import copy
import operator
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .base.checks import as_size, check_number_fits, is_number, normalize_dim
from .base.devices import check_device
from .base.dtypes import _TYPE_NAME_DTYPES, is_differentiable_dtype, torch_dtype_name
from .base.hooks import RemovableHandle, add_hook
from .base.state import STATE

_new = object.__new__
# Set by ``dualgrad.ops.dispatch``: rebuilds a stale view's graph from its base.
REGENERATE_VIEW: list = [None]
# Set by ``dualgrad.reverse.node``: a node as the user sees it, of the class named as it (``node.named``).
NAMED_NODE: list = [None]
# Set by ``dualgrad.reverse.api``: the backward pass behind ``Tensor.backward``.
BACKWARD: list = [None]
# Set by ``dualgrad.reverse.saved``: the version counter that ``t``'s node keeps for ``t``'s array, saved as its
# output while ``t`` had none (made then), or None.
SAVED_OUTPUT_COUNTER: list = [lambda t: None]
# Set by ``dualgrad.tools.printing``: the repr of a tensor (it shows grad_fn and forward-AD tangents).
FORMAT: list = [None]


SCALAR_OF_GRAD_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first."
)


def tracked_conversion_error(t: Any) -> str:
    """The message for NumPy asking for the data of the tracked Tensor ``t`` (``__array__``)."""
    why = "requires grad" if t._requires_grad else "carries a forward-mode tangent"
    return (
        f"NumPy asked for the data of a Tensor that {why} (shape {tuple(t.shape)}, dtype {t.dtype}): the array "
        "would be a constant, detached from the graph. NumPy does this in np.asarray/np.array and when a list "
        "or tuple holding Tensors reaches a NumPy function with no Tensor argument (np.array([x, y]), "
        "np.add([x, y], 1.0)). Build arrays of Tensors with np.stack or dualgrad.stack, pass a Tensor argument, "
        "or use tensor.detach() if no derivative is wanted."
    )


COPY_CONSTRUCT_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than {fn}(sourceTensor)."
)
NON_LEAF_REQUIRES_GRAD = "you can only change requires_grad flags of leaf variables."
NON_LEAF_DETACH_HINT = (
    " If you want to use a computed variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead."
)


class VersionCounter:
    """Counts in-place modifications; shared by a tensor and all its views."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0):
        self.value = value


class TensorMeta:
    """Shape and dtype of a tensor whose data a rule does not need (in place of the tensor), made by ``meta_of``."""

    __slots__ = ("shape", "dtype")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"TensorMeta(shape={self.shape}, dtype={self.dtype})"


# Interned TensorMeta objects, by dtype then shape (see ``meta_of``); at most _METAS_LIMIT shapes each.
_METAS: dict = {}
_METAS_LIMIT = 4096


def meta_of(data: np.ndarray) -> TensorMeta:
    """The TensorMeta of an array: one shared object per shape and dtype (they are immutable).

    Shared, because every TensorMeta a graph holds is one more object that the cyclic garbage
    collector walks, and a recorded op keeps one per input whose value its rules do not read; a
    lookup costs no more than making one. Past ``_METAS_LIMIT`` shapes of a dtype, new ones are
    made and not kept.
    """
    by_shape = _METAS.get(data.dtype)
    if by_shape is None:
        by_shape = _METAS[data.dtype] = {}
    shape = data.shape
    meta = by_shape.get(shape)
    if meta is None:
        meta = TensorMeta()  # (a class without ``__init__``: calling it costs less than ``object.__new__``)
        meta.shape = shape
        meta.dtype = data.dtype
        if len(by_shape) < _METAS_LIMIT:
            by_shape[shape] = meta
    return meta


# Shared ``{"index": index}`` params of basic indexes, by ``_index_key``; at most _METAS_LIMIT.
_INDEX_PARAMS: dict = {}


def shared_index_params(index: tuple) -> dict | None:
    """The params ``{"index": index}`` of an index of ints and slices (of ints or None): one shared
    dict per index, or None for another index (None, Ellipsis, a bool, an array, a NumPy integer, ...).

    Shared for the reason ``meta_of`` shares: the node of ``x[1:3]`` and its view keep these params,
    and a slice (in Python 3.11) and so the tuple and dict holding it are objects the cyclic garbage
    collector tracks, three per op of a graph that indexes in a loop (B1, B2). Nothing changes
    params once an op has them (a batching rule gets a copy), so one dict serves every such op.
    """
    key = []
    for entry in index:
        kind = type(entry)
        if kind is slice:
            start, stop, step = entry.start, entry.stop, entry.step
            if not ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                    and (step is None or type(step) is int)):
                return None
            key.append((start, stop, step))
        elif kind is int:
            key.append(entry)
        else:
            return None
    key = tuple(key)
    params = _INDEX_PARAMS.get(key)
    if params is None:
        params = {"index": index}
        if len(_INDEX_PARAMS) < _METAS_LIMIT:
            _INDEX_PARAMS[key] = params
    return params


class ViewInfo:
    """How a view relates to its base: ``chain`` is the ``(op, params)`` steps from the base.

    ``version`` is the value of the shared counter when the view's ``grad_fn`` was
    last made; when the base or another view changes in place, the view's graph
    is rebuilt from the base on its next use. ``grad_mode`` records whether the
    view was created with grad mode on (None: in inference mode); for an output of a
    custom Function it is the output's name, e.g. ``"Output 0 of F"`` (such a view may
    not be modified in place, see ``custom_function_view_error``).
    """

    # (no tuple of ``(op, params)`` pairs: a tuple holding an op is one more object for the garbage
    # collector per pair, per view a graph saves. A view keeps its own step in ``_op`` and ``_params``
    # and, when it is a view of a view, the ViewInfo of that view in ``_parent``: one object shared
    # by all views made from it, which holds the steps before its own.)
    __slots__ = ("base", "_op", "_params", "_parent", "version", "grad_mode")

    def __init__(self, base: Tensor, steps: tuple, version: int, grad_mode: bool | str | None,
                 parent: ViewInfo | None = None):
        """The view made from ``base`` by ``parent.chain`` (none without ``parent``), then ``steps``."""
        self.base = base
        self._parent = parent
        if len(steps) == 1:
            self._op, self._params = steps[0]
        elif not steps:  # (the view of an alias: no step of its own)
            self._op = self._params = None
        else:  # (several steps: one ViewInfo per step, each the parent of the next)
            self._op, self._params = steps[-1]
            self._parent = ViewInfo(base, steps[:-1], version, grad_mode, parent)
        self.version = version
        self.grad_mode = grad_mode

    @property
    def chain(self) -> tuple:
        """The ``(op, params)`` steps that make the view from its base."""
        own = () if self._op is None else ((self._op, self._params),)
        parent = self._parent
        return own if parent is None else parent.chain + own


def custom_function_view_error(owner: str, base_changed: bool) -> RuntimeError:
    """Torch's error for an in-place change of a custom Function's view output (``owner``) or of its base."""
    what = "its base or another view of its base has been modified" if base_changed else "is being modified"
    return RuntimeError(
        f"{owner} is a view and {what} inplace. This view was created inside a custom Function (or "
        "because an input was returned as-is) and the autograd logic to handle view+inplace would "
        "override the custom backward associated with the custom Function, leading to incorrect "
        "gradients. This behavior is forbidden. You can fix this by cloning the output of the custom "
        "Function."
    )


class Size(int):
    """``t.size`` is NumPy's element count and torch's ``t.size()`` / ``t.size(dim)``.

    >>> import dualgrad as dg
    >>> t = dg.zeros(2, 3)
    >>> t.size, t.size(), t.size(-1)
    (6, (2, 3), 3)
    """

    def __new__(cls, shape: tuple) -> Size:
        size = super().__new__(cls, int(np.prod(shape, dtype=np.int64)))
        size.shape = shape
        return size

    def __call__(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[normalize_dim(dim, len(self.shape), scalar=False)]


class Tensor:
    """An n-dimensional array that can record operations for differentiation.

    Create tensors with ``dualgrad.tensor``, ``dualgrad.zeros`` and the other
    factories; ``Tensor(data)`` also works and copies nothing when ``data`` is an
    ndarray.
    """

    __slots__ = (
        "_data",  # the ndarray
        "_requires_grad",
        "_grad_fn",  # Node that produced this tensor, or None for leaves (see grad_fn)
        "_output_nr",  # which output of grad_fn this tensor is
        "_fw",  # None or {dual level: tangent Tensor}
        "_counter",  # None (never changed, not shared) or a VersionCounter
        "_view",  # None, or the ViewInfo of a view (its base and how to rebuild it)
        "_grad",
        "_extra",  # None or dict: hooks, retains_grad, view base, ...
        "__weakref__",
    )
    __array_priority__ = 1000

    def __init__(self, data: Any = (), *, requires_grad: bool = False):
        self._data = data if isinstance(data, np.ndarray) else _constructor_data(data)
        self._requires_grad = False
        self._grad_fn = None
        self._output_nr = 0
        self._fw = None
        self._counter = None
        self._view = None
        self._grad = None
        self._extra = None
        if requires_grad:
            self.requires_grad = True

    # -- storage ------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> Size:
        return Size(self.shape)

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def strides(self) -> tuple:
        return self._data.strides

    def dim(self) -> int:
        return self.ndim

    def ndimension(self) -> int:
        """The number of dimensions (torch's alias of ``dim``)."""
        return self.ndim

    def type(self, dtype: Any = None) -> Any:
        """Without ``dtype``, torch's type name (``'torch.DoubleTensor'``); else ``self.to(dtype)``, ``dtype``
        a dtype or such a name.

        >>> import dualgrad as dg
        >>> x = dg.tensor([1.5])
        >>> x.type(), x.type(dg.int64), x.type("torch.IntTensor")
        ('torch.DoubleTensor', tensor([1]), tensor([1], dtype=int32))
        """
        if dtype is None:
            return f"torch.{torch_dtype_name(self.dtype)}Tensor"
        if isinstance(dtype, (bool, int, float, complex)) or dtype is Ellipsis:  # (``to`` takes an int as a device)
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(_TYPE_NAME_DTYPES.get(dtype, dtype) if isinstance(dtype, str) else dtype)

    def numel(self) -> int:
        return int(self._data.size)

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    def nelement(self) -> int:
        """The number of elements (torch's alias of ``numel``)."""
        return self.numel()

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self._data.itemsize

    def is_contiguous(self) -> bool:
        """True if the elements are laid out in row-major order without gaps.

        >>> import dualgrad as dg
        >>> dg.zeros(2, 3).is_contiguous(), dg.zeros(2, 3).T.is_contiguous()
        (True, False)
        """
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None) -> Any:
        """The step in elements (not bytes: see ``strides``) along each dimension, or along ``dim``.

        >>> import dualgrad as dg
        >>> dg.zeros(2, 3).stride(), dg.zeros(2, 3).stride(0)
        ((3, 1), 3)
        """
        steps = tuple(step // self._data.itemsize for step in self._data.strides)
        return steps if dim is None else steps[normalize_dim(dim, len(steps), scalar=False)]

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (torch's errors for any other size).

        >>> import dualgrad as dg
        >>> dg.tensor([0.5]).is_nonzero()
        True
        """
        return self.__bool__()

    def isclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
        """Elementwise ``|self - other| <= atol + rtol * |other|`` as a bool tensor (no gradient).

        >>> import dualgrad as dg
        >>> dg.tensor([1.0, 2.0]).isclose(dg.tensor([1.0, 2.1]))
        tensor([ True, False])
        """
        return _wrap(_close("isclose", self, other, rtol, atol, equal_nan))

    def allclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """True if ``isclose`` holds for every element.

        >>> import dualgrad as dg
        >>> dg.tensor([1.0, 2.0]).allclose(dg.tensor([1.0, 2.0 + 1e-9]))
        True
        """
        return bool(_close("allclose", self, other, rtol, atol, equal_nan).all())

    def equal(self, other: Tensor) -> bool:
        """True if ``other`` has the same shape and the same values (dtypes may differ).

        >>> import dualgrad as dg
        >>> dg.tensor([1.0, 2.0]).equal(dg.tensor([1, 2])), dg.tensor([1.0]).equal(dg.tensor([1.0, 1.0]))
        (True, False)
        """
        check_tensor("equal", "other", other)
        return self.shape == other.shape and bool((self._data == other._data).all())

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
                 **_device: Any) -> Tensor:
        """A tensor of ``size`` filled with ``fill_value``, of this tensor's dtype unless ``dtype`` is given.

        >>> import dualgrad as dg
        >>> dg.tensor([1], dtype="float32").new_full((2,), 3)
        tensor([3., 3.], dtype=float32)
        """
        check_device("new_full", _device.get("device"))
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{type(size).__name__}")
        dtype = np.dtype(dtype or self.dtype)
        if isinstance(fill_value, Tensor):
            fill_value = untracked_number(fill_value, "new_full")
        elif not is_number(fill_value):
            raise TypeError(f"new_full(): argument 'fill_value' (position 2) must be Number, not "
                            f"{type(fill_value).__name__}")
        check_number_fits(fill_value, dtype)
        return new_leaf(np.full(as_size((size,), fn="new_full"), fill_value, dtype=dtype), requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        """A tensor of zeros of ``size`` (ints, one tuple or ``size=``), of this tensor's dtype unless ``dtype``
        is given.

        >>> import dualgrad as dg
        >>> dg.tensor([1], dtype="float32").new_zeros(2, 3).shape
        (2, 3)
        """
        return self.new_full(_new_size("new_zeros", size, kwargs), 0, dtype=dtype, requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        """A tensor of ones of ``size`` (ints, one tuple or ``size=``), of this tensor's dtype unless ``dtype``
        is given."""
        return self.new_full(_new_size("new_ones", size, kwargs), 1, dtype=dtype, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        """An uninitialized tensor of ``size`` (ints, one tuple or ``size=``), of this tensor's dtype unless
        ``dtype`` is given."""
        return new_leaf(np.empty(_new_size("new_empty", size, kwargs), dtype=dtype or self.dtype), requires_grad)

    def new_tensor(self, data: Any, *, dtype: Any = None, requires_grad: bool = False, **_device: Any) -> Tensor:
        """A new leaf holding a copy of ``data``, of this tensor's dtype unless ``dtype`` is given.

        Given a Tensor it warns, as torch does (use ``t.detach().clone()``).

        >>> import dualgrad as dg
        >>> dg.tensor([1.0], dtype="float32").new_tensor([1, 2])
        tensor([1., 2.], dtype=float32)
        """
        check_device("new_tensor", _device.get("device"))
        if isinstance(data, Tensor):
            warnings.warn(COPY_CONSTRUCT_WARNING.format(fn="tensor.new_tensor"), UserWarning, stacklevel=2)
            data = data._data
        elif not isinstance(data, np.ndarray):
            data = _constructor_data(data)
        return new_leaf(np.array(data, dtype=dtype or self.dtype, copy=True), requires_grad)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as an ndarray sharing memory (torch semantics).

        Raises for a tensor that requires grad while grad mode is on, unless
        ``force=True``, since the array is outside the graph. Under ``no_grad``
        (and so inside a custom ``Function.forward``) nothing is recorded anyway
        and the array is returned, as torch does.

        >>> import dualgrad as dg
        >>> x = dg.tensor([1.0, 2.0], requires_grad=True)
        >>> with dg.no_grad():
        ...     x.numpy()
        array([1., 2.])
        """
        if self._requires_grad and not force and STATE.grad_enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(t)`` / ``np.array(t)``: the data, like ``numpy()``, for a Tensor that is not tracked.

        A tracked Tensor (one that requires grad while grad mode is on, or carries a
        forward-mode tangent) raises RuntimeError: the array would be a constant, detached
        from the graph (torch's ``numpy()`` refuses too). NumPy asks for it in
        ``np.asarray``/``np.array`` and when a list holding Tensors reaches a NumPy function
        that no Tensor argument dispatches (``np.array([x, y])``, ``np.add([x, y], 1.0)``);
        NumPy functions called with a Tensor argument are differentiated instead, lists
        included (``dualgrad.numpy_dispatch``).

        >>> import numpy as np, dualgrad as dg
        >>> np.asarray(dg.tensor([1.0, 2.0]))
        array([1., 2.])
        >>> np.asarray(dg.tensor([1.0, 2.0], requires_grad=True).detach())
        array([1., 2.])
        """
        if (self._requires_grad and STATE.grad_enabled) or (self._fw and STATE.dual_levels):
            raise RuntimeError(tracked_conversion_error(self))
        data = self._data
        if dtype is not None and data.dtype != dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The slices along the first dimension: ``self.unbind(0)``, as torch's (``UnbindBackward0``)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        size = self._data.size
        if size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no values' if size == 0 else 'more than one value'} is ambiguous"
            )
        return bool(self._data)

    def _scalar(self, warn: bool = True) -> Any:
        """The value of a one-element tensor for ``float()``, ``int()``, ``complex()`` (torch's error, and
        with ``warn`` its warning for a tensor that requires grad, in grad mode only as torch's; ``float`` and
        ``complex`` give it)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if warn and self._requires_grad and STATE.grad_enabled:
            warnings.warn(SCALAR_OF_GRAD_WARNING, UserWarning, stacklevel=3)
        return self._data.item()

    def __float__(self) -> float:
        """The value of a one-element tensor (torch's RuntimeError for a complex one with an imaginary part)."""
        value = self._scalar()
        check_number_fits(value, np.dtype(np.float64))
        return float(value.real if isinstance(value, complex) else value)

    def __int__(self) -> int:
        """The value of a one-element tensor, truncated (torch's RuntimeError for a complex one with an
        imaginary part)."""
        value = self._scalar(warn=False)
        check_number_fits(value, np.dtype(np.int64))
        return int(value.real if isinstance(value, complex) else value)

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.item())

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.3f}"``), any other as its repr, as in torch."""
        if self._data.ndim == 0:
            return format(self._data.item(), spec)
        return object.__format__(self, spec)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        text = FORMAT[0](self)
        return "Parameter containing:\n" + text if self._extra and self._extra.get("parameter") else text

    # -- versions -----------------------------------------------------------
    @property
    def _version(self) -> int:
        """How many in-place operations changed this tensor (or its base, or its views)."""
        counter = self._counter
        return 0 if counter is None else counter.value

    def _version_counter(self) -> VersionCounter:
        """The shared counter, created on first need (the one its node keeps for it, if it is an
        output that its node saved before it had one: ``reverse.saved.fold_output``)."""
        counter = self._counter
        if counter is None:
            counter = None if self._grad_fn is None else SAVED_OUTPUT_COUNTER[0](self)
            counter = self._counter = VersionCounter() if counter is None else counter
        return counter

    def _bump_version(self) -> None:
        self._version_counter().value += 1

    def _is_view(self) -> bool:
        """True if this tensor is a view of another (``_base``), as torch's ``Tensor._is_view``.

        >>> import dualgrad as dg
        >>> x = dg.zeros(2, 3)
        >>> x._is_view(), x[0]._is_view(), x.t()._is_view(), (x + 1)._is_view()
        (False, True, True, False)
        """
        return self._view is not None

    @property
    def _base(self) -> Tensor | None:
        """The tensor this one is a view of (``None`` if it is not a view)."""
        return None if self._view is None else self._view.base

    # -- autograd metadata --------------------------------------------------
    @property
    def grad_fn(self) -> Any:
        """The graph node that produced this tensor (``None`` for leaves), of a class named as
        the node (``type(y.grad_fn).__name__ == 'AddBackward0'``, as in torch).

        A view whose base or sibling view was changed in place since its node
        was made gets a node rebuilt from the base first.
        """
        node = self._node()
        return None if node is not None and _stands_in_for_leaf(node) else NAMED_NODE[0](node)

    @grad_fn.setter
    def grad_fn(self, node: Any) -> None:
        self._grad_fn = node

    def _node(self) -> Any:
        """``grad_fn`` as dualgrad's own code reads it: without the named class, which only nodes
        handed to the user take (the backward engine's attribute reads stay fast when its nodes
        are of one class, see ``reverse.node.named``)."""
        view = self._view
        if view is not None and view.version != self._counter.value:
            REGENERATE_VIEW[0](self)
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        """True if gradients need to be computed for this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise RuntimeError("requires_grad must be a bool")
        if self._node() is not None:  # (requires_grad_(True) of a non-leaf is allowed: it is one already)
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD if value else NON_LEAF_REQUIRES_GRAD + NON_LEAF_DETACH_HINT)
        self._set_requires_grad(bool(value))

    def _set_requires_grad(self, value: bool) -> None:
        if value and not STATE.inference_mode and self.is_inference():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if value and not is_differentiable_dtype(self.dtype):
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients "
                f"(got dtype {self.dtype})"
            )
        self._requires_grad = value

    def is_inference(self) -> bool:
        """True for a tensor made inside ``inference_mode``, a view of one, or its ``detach()``/``.data``.

        Such a tensor cannot be saved for backward, require grad or change in place
        outside the mode (torch's inference tensors). A view made inside the mode of a
        normal tensor is a normal tensor.

        >>> import dualgrad as dg
        >>> with dg.inference_mode():
        ...     y = dg.ones(2) * 2
        >>> y.is_inference(), (y + 1).is_inference(), y[:1].is_inference(), y.detach().is_inference()
        (True, False, True, True)
        """
        extra = self._extra
        return extra is not None and "inference" in extra

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return ``self``.

        As in torch, a non-leaf accepts ``True`` (it requires grad already) and refuses
        ``False`` (use ``detach()``); the setter ``t.requires_grad = ...`` refuses both.

        >>> import dualgrad as dg
        >>> x = dg.ones(2).requires_grad_()
        >>> y = x * 2
        >>> y.requires_grad_() is y
        True
        >>> try:
        ...     y.requires_grad_(False)
        ... except RuntimeError as e:
        ...     print(str(e)[:58])
        you can only change requires_grad flags of leaf variables.
        """
        if not isinstance(requires_grad, (bool, np.bool_)):
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type(requires_grad).__name__}")
        if self._node() is not None:
            if not requires_grad:
                raise RuntimeError(NON_LEAF_REQUIRES_GRAD + NON_LEAF_DETACH_HINT)
            return self
        self._set_requires_grad(bool(requires_grad))
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation (and for a leaf unpacked from a
        saved-tensor hook, as in torch: its gradients go to the leaf that was packed)."""
        node = self._node()
        return node is None or _stands_in_for_leaf(node)

    @property
    def output_nr(self) -> int:
        """Which output of ``grad_fn`` this tensor is (0 for a leaf), as in torch.

        >>> import dualgrad as dg
        >>> x = dg.ones(2, requires_grad=True)
        >>> [t.output_nr for t in (x, *x.unbind())]
        [0, 0, 1]
        """
        return self._output_nr

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient, ``None`` until a backward reaches this tensor.

        Reading it on a non-leaf that does not ``retain_grad`` warns, as in torch:
        backward never fills it, so the read is most likely a mistake.
        """
        grad = self._grad
        if grad is None and self._grad_fn is not None and not self.retains_grad and not _stands_in_for_leaf(
                self._grad_fn):
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
                )
            if value.dtype != self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor with dtype "
                    f"'{self.dtype}'. The gradient must match the tensor's dtype"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def _get_extra(self) -> dict:
        extra = self._extra
        if extra is None:
            extra = self._extra = {}
        return extra

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf tensor whose ``.grad`` is kept (see ``retain_grad``)."""
        return bool(self._extra and self._extra.get("retains_grad"))

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        node = self._node()
        if node is None or self.retains_grad:
            return
        self._get_extra()["retains_grad"] = True
        node._retain_grad_for(self)

    def _follow_retained_grad(self) -> None:
        """Move ``retain_grad`` to the node an in-place op just gave this tensor (as in torch:
        ``.grad`` is then the gradient of the new value; hooks stay with the old node)."""
        if self._extra and self._extra.get("retains_grad") and self._grad_fn is not None:
            self._grad_fn._retain_grad_for(self)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(grad) -> Tensor | None`` to run when this tensor's grad is computed.

        >>> import dualgrad as dg
        >>> v = dg.tensor([0., 0., 0.], requires_grad=True)
        >>> h = v.register_hook(lambda grad: grad * 2)
        >>> v.backward(dg.tensor([1., 2., 3.]))
        >>> v.grad
        tensor([2., 4., 6.])
        >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node = self._node()
        if node is not None:
            return node._register_tensor_hook(self._output_nr, hook)
        return add_hook(self._get_extra().setdefault("hooks", {}), hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(tensor)`` to run after ``.grad`` of this leaf was accumulated."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._node() is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        return add_hook(self._get_extra().setdefault("post_accumulate_hooks", {}), hook)

    def detach(self) -> Tensor:
        """A new leaf sharing data and version counter, outside the graph.

        Forward-mode tangents are dropped too (as in torch).
        """
        out = _wrap(self._data)
        out._counter = self._version_counter()
        inherit_inference(self, out)
        return out

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place, making it a leaf (a view cannot be, as in torch).

        Its forward-mode tangents are dropped too, as ``detach()``'s.
        """
        if self._view is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        self._fw = None  # forward-mode tangents too (as torch's)
        return self

    @property
    def data(self) -> Tensor:
        """A detached tensor sharing memory (not the version counter).

        Assigning to it swaps the array under this tensor (any shape; an ndarray is taken
        as is) and keeps its place in the graph, as in torch:

        >>> import dualgrad as dg
        >>> w = dg.ones(2, requires_grad=True)
        >>> w.data = dg.zeros(3)
        >>> w
        tensor([0., 0., 0.], requires_grad=True)
        >>> w.data = [1., 2.]
        Traceback (most recent call last):
          ...
        TypeError: Variable data has to be a tensor, but got list
        """
        out = _wrap(self._data)
        inherit_inference(self, out)
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        data = value._data if isinstance(value, Tensor) else value
        if not isinstance(data, np.ndarray):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and not is_differentiable_dtype(data.dtype):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data = data

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate the gradient of this tensor into the ``.grad`` of graph leaves.

        See ``dualgrad.backward``.
        """
        BACKWARD[0](self, gradient, retain_graph, create_graph, None, inputs)

    def __reduce__(self) -> tuple:
        """Pickle data, dtype and ``requires_grad`` (never the graph: a non-leaf unpickles as a leaf)."""
        return (_unpickle, (self._data, self._requires_grad))

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A new leaf with copied data, ``requires_grad`` and ``.grad`` (graph leaves only, as torch).

        >>> import copy, dualgrad as dg
        >>> a = dg.tensor([1., 2.], requires_grad=True)
        >>> copy.deepcopy(a)
        tensor([1., 2.], requires_grad=True)
        """
        if self._node() is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment. Use tensor.detach() first to copy a computed tensor."
            )
        new = _unpickle(self._data.copy(), self._requires_grad)
        if self._extra and self._extra.get("parameter"):  # (an nn.Parameter copies as one, as in torch)
            new._get_extra()["parameter"] = True
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        return new


def _wrap(data: np.ndarray) -> Tensor:
    """A new leaf Tensor around ``data`` (no copy, no checks): the hot-path constructor."""
    t = _new(Tensor)
    t._data = data
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._fw = None
    t._counter = None
    t._view = None
    t._grad = None
    t._extra = None
    return t


def new_leaf(data: np.ndarray, requires_grad: bool) -> Tensor:
    """A leaf around ``data`` that requires grad if asked (``requires_grad``'s dtype check included),
    an inference tensor inside ``inference_mode``."""
    t = _wrap(data)
    if STATE.inference_mode:
        mark_inference(t)
    if requires_grad:
        t.requires_grad = True
    return t


def mark_inference(t: Any) -> None:
    """Make ``t`` (if a Tensor) an inference tensor (see ``Tensor.is_inference``)."""
    if isinstance(t, Tensor):
        t._get_extra()["inference"] = True


def inherit_inference(source: Tensor, t: Tensor) -> None:
    """Make ``t`` an inference tensor exactly when ``source`` is one (views, ``detach``, ``.data``)."""
    if source._extra is not None and "inference" in source._extra:
        mark_inference(t)
    elif t._extra is not None:
        t._extra.pop("inference", None)


INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)
INFERENCE_INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
)


def _new_size(fn: str, size: tuple, kwargs: dict) -> tuple:
    """The size of ``Tensor.new_zeros`` and its kin: ints, one tuple or ``size=`` (torch's TypeError for none;
    ``device`` must be the CPU; other keywords are ignored)."""
    if not size and "size" not in kwargs:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    check_device(fn, kwargs.get("device"))
    return as_size(size, kwargs.get("size"), fn)


def numeric_array(value: Any) -> np.ndarray | None:
    """``value`` as an array if it holds bools or numbers; None for ``None``, strings and other objects
    (NumPy makes object or string arrays of them, which no op takes).

    >>> from dualgrad.tensor import numeric_array
    >>> numeric_array([1, 2]), numeric_array("a")
    (array([1, 2]), None)
    """
    array = np.asarray(value)
    return array if array.dtype.kind in "biufc" else None


def untracked_number(value: Tensor, fn: str) -> Any:
    """The number a one-element Tensor given as ``fn``'s ``fill_value`` holds; torch's TypeError for one
    that autograd tracks (requires grad, or has a tangent at an active dual level): its number
    would be a constant, with a zero derivative."""
    fw = value._fw
    if value.requires_grad or (fw and any(fw.get(level) is not None for level in STATE.dual_levels)):
        raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not Tensor")
    return value.item()


def _stands_in_for_leaf(node: Any) -> bool:
    """Whether ``node`` only links a tensor to a leaf whose gradients it passes on (the node of a leaf
    unpacked from a saved-tensor hook): the tensor is then a leaf itself to the user, as torch's,
    whose unpacked leaf shares the packed leaf's gradient accumulator."""
    return getattr(getattr(node, "op", None), "leaf_stand_in", False)


def as_operand(x: Any) -> Tensor:
    """``x`` as a Tensor: a Tensor as it is, an array or numbers wrapped without a copy; anything else
    (``None``, a string) is a TypeError.

    >>> from dualgrad.tensor import as_operand
    >>> as_operand([1.0, 2.0])
    tensor([1., 2.])
    """
    if isinstance(x, Tensor):
        return x
    array = numeric_array(x)
    if array is None:
        raise TypeError(f"expected a Tensor, an array or a number, not {type(x).__name__}")
    return wrap_operand(array) if isinstance(x, np.ndarray) else _wrap(array)


def wrap_operand(array: np.ndarray) -> Tensor:
    """A Tensor over ``array``, a NumPy array the caller passed as an operand: copied when it is writeable and an op may
    record a node or a tangent rule (grad mode, or an active dual level). Rules read their operands
    later (at backward, or when a deferred tangent is formed), and a write into the caller's array
    in between bumps no version counter, so the derivative would silently use the new values.

    >>> import numpy as np
    >>> from dualgrad.tensor import wrap_operand
    >>> a = np.ones(2)
    >>> wrap_operand(a)._data is a  # grad mode is on: a copy
    False
    """
    if array.flags.writeable and (STATE.grad_enabled or STATE.dual_levels):
        return _wrap(array.copy())
    return _wrap(array)


def _constructor_data(data: Any) -> np.ndarray:
    """``Tensor(data)``'s array for data that is not an ndarray: numbers or sequences of them (torch's
    TypeError for ``None`` and strings)."""
    if data is None:
        raise TypeError("new(): data must be a sequence (got NoneType)")
    array = numeric_array(data)
    if array is None:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    return array


def check_tensor(fn: str, arg: str, value: Any) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(value).__name__}")


def int_arg(value: Any, fn: str, arg: str, position: int) -> int:
    """``value`` as an int: an integer or a one-element integer Tensor, not a bool or a float (torch's
    TypeError, naming the argument).

    >>> from dualgrad.tensor import int_arg
    >>> int_arg(3, "rot90", "k", 2)
    3
    >>> int_arg(1.5, "rot90", "k", 2)
    Traceback (most recent call last):
      ...
    TypeError: rot90(): argument 'k' (position 2) must be int, not float
    """
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be int, not {type(value).__name__}")


def _close(fn: str, x: Tensor, y: Any, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """``isclose`` on the data, after torch's errors: a non-Tensor, other dtypes, shapes not broadcasting, a
    negative tolerance."""
    check_tensor(fn, "other", y)
    if x.dtype != y.dtype:
        raise RuntimeError(f"{fn}(): {x.dtype} did not match {y.dtype}")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise RuntimeError(f"{fn}(): shapes {x.shape} and {y.shape} cannot be broadcast together") from None
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{fn}(): {name} must be greater than or equal to zero, but got {value}")
    return np.isclose(x._data, y._data, rtol=rtol, atol=atol, equal_nan=equal_nan)


def is_untracked_like(t: Any, like: Tensor) -> bool:
    """True if ``t`` is a plain Tensor without grad or tangents, of ``like``'s shape and dtype."""
    return (type(t) is Tensor and not t._requires_grad and not t._fw
            and t._data.shape == like._data.shape and t._data.dtype == like._data.dtype)


def _unpickle(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = _wrap(data)
    t._requires_grad = requires_grad
    return t
