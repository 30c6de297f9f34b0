"""In-place operations (``add_``, ``x[i] = v``, ``+=``, ...) and the re-basing of views.

An in-place op is computed out of place and then written back:

1. checks (leaf that requires grad, view of such a leaf, view made under
   ``no_grad``, read-only or overlapping memory) leave everything unchanged on failure;
2. the result ``r`` is computed by the ordinary ops from a *snapshot* of the
   tensor when a graph is recorded, so rules that save the old value keep it;
3. ``r`` is written into the tensor's memory (seen by its base and all its
   views) and the shared version counter is bumped;
4. the tensor takes ``r``'s graph: ``grad_fn`` becomes ``r``'s node. For a view,
   the *base* is re-based instead: its new node ``CopySlices`` sends the
   gradient of the view's region to ``r`` and the rest to the base's old graph,
   and the view's ``grad_fn`` is rebuilt from the base (torch's behaviour).
   Tangents of active dual levels are written in place the same way.

Inside ``vmap``, an update with a batched argument is computed out of place and
written into the physical value of the tensor, which must be batched at every
level where the result is (torch.func's rule); the ops ``copy``, ``copy_slices``
and ``index_put`` have batching rules, so gradients and tangents batch too.

>>> import dualgrad as dg
>>> x = dg.tensor([1., 2., 3.], requires_grad=True)
>>> y = x.clone()
>>> y[1:].mul_(10)
tensor([20., 30.], grad_fn=<SliceBackward0>)
>>> y
tensor([ 1., 20., 30.], grad_fn=<CopySlices>)
>>> y.sum().backward()
>>> x.grad
tensor([ 1., 10., 10.])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.checks import as_size, check_number_fits, is_number
from ..base.dtypes import torch_dtype_name
from ..base.state import STATE
from ..factories import rand, randn, zeros_like
from ..forward_ad.engine import commit_tangents, flush_deferred, set_tangent, tangent_at
from ..reverse.mutation import note_mutation
from ..tensor import INFERENCE_INPLACE_MESSAGE, Tensor, _wrap, custom_function_view_error, numeric_array
from ..vmap.batching import BatchedTensor, from_physical, is_batched_at, make_batched, to_physical
from . import surface
from .dispatch import _record, apply, check_view_geometry, is_view_of, regenerate_view
from .elementwise import core as ew
from .indexing import (
    GETITEM,
    INDEX_PUT_TENSOR,
    _is_basic,
    _probe,
    batch_at,
    batch_position,
    batch_size,
    has_batched_entry,
    normalize_index,
    split_index,
    values_at,
)
from .registry import Op, linear, overload
from .shape.core import IN_PLACE_TWINS
from .shape.views import masked_fill

LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_MESSAGE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked)."
)
INFERENCE_VIEW_MESSAGE = (
    "A view was created in inference mode and is being modified inplace in normal mode. Given that this "
    "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the "
    "view and the inplace either both inside the inference_mode block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)
OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


# -- ops used only by in-place updates ---------------------------------------------------
def view_of(array: np.ndarray, chain: tuple) -> np.ndarray:
    """Apply the view steps ``chain`` to an ndarray (a view of it, never a copy)."""
    for op, params in chain:
        array = op.impl(array, **params)
    return array


def _view_of_tensor(t: Tensor, chain: tuple) -> Tensor:
    for op, params in chain:
        t = apply(op, t, **params)
    return t


def _copy_slices_impl(base: np.ndarray, src: Any, chain: tuple) -> np.ndarray:
    """``base`` with the region ``chain`` selects replaced by ``src``."""
    out = base.copy(order="K")
    region = view_of(out, chain)
    if not is_view_of(region, out):
        raise RuntimeError("copy_slices: the view steps do not give a view of the base")
    if not region.flags.writeable:  # (through ``expand``: the region's memory is still ``out``'s)
        region = _alias_in(out, region)
    region[...] = src
    return out


def _index_put_impl(x: np.ndarray, values: Any, index: tuple) -> np.ndarray:
    out = x.copy()
    out[index] = values
    return out


def _copy_impl(x: Any, src: Any) -> np.ndarray:
    """``src`` broadcast to ``x``'s shape, as a new array of ``x``'s dtype (without NumPy's
    ``broadcast_to`` wrapper when ``src`` is an array of that shape already)."""
    if type(src) is np.ndarray and type(x) is np.ndarray and src.shape == x.shape:
        return src.astype(x.dtype)
    return np.broadcast_to(src, np.shape(x)).astype(x.dtype)


# -- their batching rules: the target batch-first, the written values laid out like its region
def _copy_batch(args: list, bdims: list) -> tuple:
    """``copy`` on batch-first operands (the target broadcast if unbatched, as the result is batched)."""
    x = batch_at(args[0], bdims[0], 0, batch_size(args, bdims))
    return apply(COPY, x, values_at(args[1], bdims[1], x.ndim, 0)), 0


def _index_put_batch(args: list, bdims: list, index: tuple) -> tuple:
    """``index_put`` of every batch member at once: ``x[:, index] = values`` laid out like that region."""
    x = batch_at(args[0], bdims[0], 0, batch_size(args, bdims))
    rank = np.empty((1,) * x.ndim)[(slice(None),) + tuple(_probe(i) for i in index)].ndim
    values = values_at(args[1], bdims[1], rank, batch_position(index, x.ndim))
    return apply(INDEX_PUT, x, values, index=(slice(None),) + index), 0


def _region_index(shape: tuple, chain: tuple) -> tuple:
    """The integer-array index of the elements that the view steps ``chain`` select in ``shape``."""
    flat = view_of(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), chain)
    return np.unravel_index(flat, shape)


def _copy_slices_batch(args: list, bdims: list, chain: tuple) -> tuple:
    """``copy_slices`` as the ``index_put`` of the elements the view selects, for the whole batch."""
    base = batch_at(args[0], bdims[0], 0, batch_size(args, bdims))
    return _index_put_batch([base, args[1]], [0, bdims[1]], _region_index(base.shape[1:], chain))


COPY = linear(
    "copy", lambda x, src: _copy_impl(x, src),
    (lambda g, out, x, src: zeros_like(g), lambda g, out, x, src: g),
    batch=_copy_batch, family="elementwise", grad_name="torch::autograd::CopyBackwards",  # (torch's name())
)
# ``copy`` recorded under torch's names of the in-place fills (their rules are copy's)
FILL_NUMBER = overload(COPY, "fill_number", "FillBackward2")
FILL_TENSOR = overload(COPY, "fill_tensor", "FillBackward3")
ZERO = overload(COPY, "zero", "ZeroBackward0")
UNIFORM = overload(COPY, "uniform_fill", "UniformBackward0")
NORMAL = overload(COPY, "normal_fill", "NormalBackward0")
COPY_SLICES = linear(
    "copy_slices", _copy_slices_impl,
    (lambda g, out, base, src, chain: apply(COPY_SLICES, g, 0.0, chain=chain),
     lambda g, out, base, src, chain: _view_of_tensor(g, chain)),
    batch=_copy_slices_batch, family="indexing", grad_name="torch::autograd::CopySlices",
)
INDEX_PUT = linear(
    "index_put", _index_put_impl,
    (lambda g, out, x, values, index: apply(INDEX_PUT, g, 0.0, index=index),
     lambda g, out, x, values, index: apply(GETITEM, g, index=index)),
    batch=_index_put_batch, family="indexing", grad_name="IndexPutBackward0",
)


# -- the in-place machinery --------------------------------------------------------------
def _check_writable(t: Tensor, what: str, fills: bool = False, operands: tuple = ()) -> None:
    """Refuse before anything changes: leaves that require grad, bad views, read-only memory, and
    (unless the update ``fills`` one value everywhere, as ``fill_`` and ``zero_`` without a graph,
    which torch allows) elements that share memory, as an ``expand``ed tensor's.

    A batched tensor is checked when its physical value is written (``_update_batched``).
    """
    if type(t) is BatchedTensor:
        return
    _check_mutable(t, operands=operands)
    data = t._data
    if not data.flags.writeable:
        if data.size > 1 and 0 in data.strides and not fills:
            raise RuntimeError(f"{what}: {OVERLAP_MESSAGE}")
        if writable(data, t._view) is None:
            raise RuntimeError(f"{what}: the tensor's memory is read-only; clone() it first")


def writable(data: np.ndarray, view: Any) -> np.ndarray | None:
    """``data`` itself, or the same elements as a writable ndarray when ``data`` is a read-only NumPy
    view (``expand`` makes those) of the writable memory of the base of ``view``; None if there is none.
    """
    if data.flags.writeable:
        return data
    if view is None or not view.base._data.flags.writeable:
        return None
    owner = view.base._data
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if not (owner.flags.writeable and (owner.flags.c_contiguous or owner.flags.f_contiguous)):
        return None
    return _alias_in(owner, data)


def _alias_in(owner: np.ndarray, data: np.ndarray) -> np.ndarray:
    """``data``'s elements as an ndarray over ``owner``'s (contiguous) memory, writable if ``owner`` is."""
    offset = data.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return np.ndarray(data.shape, data.dtype, buffer=owner, offset=offset, strides=data.strides)


def _check_mutable(t: Tensor, leaf_message: str = LEAF_MESSAGE, operands: tuple = ()) -> None:
    """The autograd checks of an in-place change: inference tensors, leaves that require grad, bad views.

    As in torch, a view whose node cannot be rebuilt (made under ``no_grad`` or ``inference_mode``,
    a custom Function's output) is refused when the change is recorded: its base requires grad,
    or one of the ``operands`` written into it does.
    """
    if not STATE.inference_mode and t.is_inference():
        raise RuntimeError(INFERENCE_INPLACE_MESSAGE)
    if STATE.grad_enabled:
        if t._requires_grad and t._node() is None and t._view is None:
            raise RuntimeError(leaf_message)
        info = t._view
        if info is None:
            return
        base_requires_grad = info.base._requires_grad
        mode = info.grad_mode
        if mode is not True and (base_requires_grad or _any_requires_grad(operands)):
            if type(mode) is str:
                raise custom_function_view_error(mode, base_changed=False)
            raise RuntimeError(INFERENCE_VIEW_MESSAGE if mode is None else NO_GRAD_VIEW_MESSAGE)
        if base_requires_grad and info.base._node() is None:
            raise RuntimeError(VIEW_OF_LEAF_MESSAGE)


def _any_requires_grad(values: tuple) -> bool:
    return any(isinstance(v, Tensor) and v._requires_grad for v in values)


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t`` with its place in the graph, so that rules may save the old value."""
    s = _wrap(t._data.copy())
    s.grad_fn = t._node()
    s._output_nr = t._output_nr
    s._requires_grad = t._requires_grad
    if STATE.dual_levels:
        s._fw = _old_tangents(t)
    return s


def _old_tangents(t: Tensor) -> dict | None:
    """Copies of ``t``'s tangents by level (the write overwrites the tangents themselves in place)."""
    levels = STATE.dual_levels
    old = {}
    for i, level in enumerate(levels):
        tangent = tangent_at(t, level)
        if tangent is not None:
            STATE.dual_levels = levels[:i]  # the copy keeps the outer levels' tangents
            try:
                old[level] = tangent.clone()
            finally:
                STATE.dual_levels = levels
    return old or None


def _records_graph(t: Tensor, args: tuple, kwargs: dict) -> bool:
    if not STATE.grad_enabled:
        return False
    if t._requires_grad:
        return True
    return _any_requires_grad((*args, *kwargs.values()))


def update_(t: Tensor, compute: Callable, what: str, *args: Any, checked: bool = False, **kwargs: Any) -> Tensor:
    """Set ``t`` to ``compute(t, *args, **kwargs)`` in place (see the module docstring); ``checked``: the
    caller ran ``_check_writable`` already."""
    if STATE.vmap_depth and any(type(a) is BatchedTensor for a in (t, *args, *kwargs.values())):
        return _update_batched(t, compute, what, args, kwargs)
    if not checked:
        _check_writable(t, what, operands=(*args, *kwargs.values()))
    if STATE.dual_levels:
        flush_deferred()  # a deferred tangent may read what the write changes
    view = t._view
    if view is not None and STATE.grad_enabled and view.version != t._counter.value:
        regenerate_view(t)
    source = _snapshot(t) if _records_graph(t, args, kwargs) else t
    commit(t, _fitted(t, compute(source, *args, **kwargs), what))
    return t


def _fitted(t: Tensor, result: Any, what: str) -> Tensor:
    """``result`` checked for ``t``'s shape and cast to its dtype (RuntimeError if it cannot be)."""
    if not isinstance(result, Tensor):
        result = _wrap(np.asarray(result))
    if result.shape != t.shape:
        raise RuntimeError(
            f"{what}: output with shape {list(t.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if result.dtype != t.dtype:
        if not np.can_cast(result.dtype, t.dtype, "same_kind"):
            raise RuntimeError(
                f"{what}: result type {torch_dtype_name(result.dtype)} can't be cast to the desired output type "
                f"{torch_dtype_name(t.dtype)}"
            )
        result = ew.to_dtype(result, t.dtype)
    return result


def _update_batched(t: Tensor, compute: Callable, what: str, args: tuple, kwargs: dict) -> Tensor:
    """``update_`` inside vmap with a batched argument: compute out of place, write physically.

    The result may be batched only at levels where ``t`` is (else it has more
    elements than ``t`` holds: torch's error); it is written with ``copy_`` into
    ``t``'s physical value, whose checks and graph handling then apply.
    """
    source = _batched_snapshot(t) if _records_graph(t, args, kwargs) else t
    result = _fitted(t, compute(source, *args, **kwargs), what)
    levels = STATE.vmap_levels
    if any(is_batched_at(result, level) and not is_batched_at(t, level) for level in levels):
        raise RuntimeError(
            f"vmap: {what}(self, *extra_args) is not possible because there exists a Tensor `other` "
            f"in extra_args that has more elements than `self` (logical shape {t.shape}). This "
            "happened due to `other` being vmapped over but `self` not being vmapped over in a "
            f"vmap. Please try to use out-of-place operators instead of {what}."
        )
    own = tuple(level for level in levels if is_batched_at(t, level))
    copy_(to_physical(t, own), to_physical(result, own))
    return t


def _batched_snapshot(t: Tensor) -> Tensor:
    """``_snapshot`` of the physical value of a (possibly batched) tensor, batched the same way."""
    if type(t) is BatchedTensor:
        return make_batched(_batched_snapshot(t.value), t.bdim, t.level)
    return _snapshot(t)


def commit(t: Tensor, result: Tensor) -> None:
    """Write ``result`` (same shape and dtype) into ``t`` and give ``t`` its graph and tangents."""
    note_mutation(t)
    np.copyto(writable(t._data, t._view), result._data)
    t._bump_version()
    if STATE.dual_levels:
        if STATE.vmap_depth:
            _widen_tangents(t, result)
        commit_tangents(t, result)
    take_graph(t, result)
    if STATE.observed:  # (an observer may follow writes: sparsity detection's index sets, see dualgrad.sparse)
        for observer in STATE.observers:
            note_write = getattr(observer, "note_write", None)
            if note_write is not None:
                note_write(t, result)


def _widen_tangents(t: Tensor, result: Tensor) -> None:
    """Make the tangents that ``result``'s are written into batched wherever those are.

    Unlike a primal, a tangent batched by vmap may be written into a tensor whose
    tangent is not (``jacfwd`` of a function that fills a fresh tensor): the
    tangent of ``t`` (of its base, for a view) is first replaced by a batched copy.
    """
    root = t if t._view is None else t._view.base
    levels = STATE.dual_levels
    for i, level in enumerate(levels):
        new = tangent_at(result, level)
        if type(new) is not BatchedTensor:
            continue
        current = tangent_at(root, level)
        missing = tuple(v for v in STATE.vmap_levels
                        if is_batched_at(new, v) and not is_batched_at(current, v))
        if not missing or (current is None and root is t):
            continue
        STATE.dual_levels = levels[:i]  # the new tangent keeps the outer levels' tangents
        try:
            zero = from_physical(_wrap(np.zeros(tuple(v.size for v in missing), root.dtype)), missing)
            set_tangent(root, level, (zeros_like(root) if current is None else current) + zero)
        finally:
            STATE.dual_levels = levels


def take_graph(t: Tensor, result: Tensor) -> None:
    """Give ``t`` (whose data already is ``result``'s) the graph of ``result``."""
    if result._requires_grad and result._node() is not None:
        info = t._view
        if info is None:
            t.grad_fn = result._node()
            t._output_nr = result._output_nr
            t._requires_grad = True
            t._follow_retained_grad()
        else:
            check_view_geometry(t)
            _rebase(info.base, result, info.chain)
            info.base._follow_retained_grad()
            regenerate_view(t)
    if t._view is not None and type(t._view.grad_mode) is not str:
        # (a custom Function's view output changed under no_grad keeps a stale version: as in
        # torch, reading its grad_fn then raises, see tensor.custom_function_view_error)
        t._view.version = t._counter.value


def _rebase(base: Tensor, result: Tensor, chain: tuple) -> None:
    """Give ``base`` the node ``CopySlices(old base graph, result)`` (data already written)."""
    old = _wrap(base._data)
    old.grad_fn = base._node()
    old._output_nr = base._output_nr
    old._requires_grad = base._requires_grad
    _record(COPY_SLICES, (old, result), {"chain": chain}, base, (old._requires_grad, result._requires_grad))


# -- in-place changes of the shape (the data stays where it is) ----------------------------
def restride_(t: Tensor, view: Callable, what: str, *args: Any, **kwargs: Any) -> Tensor:
    """Give ``t`` the shape and strides of ``view(t, *args, **kwargs)`` (a view op), and that view's graph.

    As in torch: the version is bumped (a tensor saved for backward may not change
    shape); ``t`` stays a view exactly when it was one (of the same base, one step
    further); a leaf that requires grad is refused unless grad mode is off.
    Views taken from ``t`` before the change cannot be rebuilt from it afterwards
    (their graph would be wrong): using them with autograd raises.
    """
    if type(t) is BatchedTensor:
        raise NotImplementedError(f"{what}: changing the shape of a tensor in place is not supported inside vmap")
    _check_mutable(t)
    if STATE.dual_levels:
        flush_deferred()
    result = view(t, *args, **kwargs)
    note_mutation(t)
    t._bump_version()
    if result is t:  # (nothing to change: t_ of a vector, squeeze_ without dimensions of size 1)
        return t
    t._data = result._data
    if result._grad_fn is not None:
        node = t._grad_fn = result._grad_fn
        node.op = IN_PLACE_TWINS.get(node.op, node.op)  # (torch's name of the in-place call)
        t._output_nr = result._output_nr
    if t._view is not None:
        t._view = result._view
        t._view.version = t._counter.value
    if result._fw is not None:
        t._fw = result._fw
    return t


def _restriding(name: str, view: str, doc: str) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return restride_(self, _method(view), name, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


def resize_(self: Tensor, *size: Any) -> Tensor:
    """Give ``self`` the shape ``size`` in place, keeping its first elements (row-major); new ones are zeros.

    As in torch, a tensor that requires grad cannot be resized, even under ``no_grad``. The
    version is bumped when the shape changes. dualgrad resizes only contiguous tensors that
    are not views (torch resizes the storage under any tensor); when the tensor grows, its
    memory is new, so views taken before no longer share it.

    >>> import dualgrad as dg
    >>> dg.arange(6.).resize_(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    >>> dg.tensor([1., 2.]).resize_(3)
    tensor([1., 2., 0.])
    """
    shape = as_size(size, fn="resize_")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    _check_mutable(self)
    if shape == self.shape:
        return self
    data = self._data
    if self._view is not None or not data.flags.c_contiguous or not data.flags.writeable:
        raise NotImplementedError("resize_: dualgrad resizes only writable contiguous tensors that are not "
                                  "views; clone() it first")
    n = math.prod(shape)
    if n <= data.size:
        self._data = data.reshape(-1)[:n].reshape(shape)
    else:
        self._data = np.zeros(shape, data.dtype)
        self._data.reshape(-1)[:data.size] = data.reshape(-1)
    self._bump_version()
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """``resize_`` to ``other``'s shape.

    >>> import dualgrad as dg
    >>> dg.zeros(4).resize_as_(dg.zeros(2, 2)).shape
    (2, 2)
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    return resize_(self, other.shape)


# -- the in-place methods ----------------------------------------------------------------
def _inplace(name: str, compute: Callable, doc: str) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return update_(self, compute, name, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


def _fill(x: Tensor, value: Any, op: Op = COPY) -> Tensor:
    """``x``'s new value ``value`` (broadcast), recorded as ``op`` (``COPY`` or one of its overloads)."""
    return apply(op, x, value)


def _method(name: str) -> Callable:
    """``x.<name>(...)`` (the Tensor method, looked up when called: methods are installed after this module)."""
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype) into ``self``.

    The gradient flows to ``src``; the old value of ``self`` gets zero.

    >>> import dualgrad as dg
    >>> dg.zeros(2).copy_(dg.tensor([1., 2.]))
    tensor([1., 2.])
    """
    if not isinstance(src, Tensor) and numeric_array(src) is None:
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
    shape = src.shape if isinstance(src, Tensor) else np.shape(src)
    if shape == self.shape:  # (the common case, ``out[j] = v``: NumPy's broadcast_shapes costs microseconds)
        broadcast = shape
    else:
        try:
            broadcast = np.broadcast_shapes(shape, self.shape)
        except ValueError:
            broadcast = self.shape  # the op raises torch's error naming the dimension
    if broadcast != self.shape:
        raise RuntimeError(f"copy_: output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(broadcast)}")
    return update_(self, _fill, "copy_", src)


def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with ``value``: a number or a 0-d Tensor (whose gradient is the sum of this one's).

    >>> import dualgrad as dg
    >>> dg.zeros(2).fill_(7)
    tensor([7., 7.])
    """
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
    elif not is_number(value):
        raise TypeError(f"fill_() received an invalid combination of arguments - got ({type(value).__name__}), "
                        "but expected one of: (Tensor value), (Number value)")
    check_number_fits(value, self.dtype)
    return _fill_(self, value, "fill_", FILL_TENSOR if isinstance(value, Tensor) else FILL_NUMBER)


def _fill_(t: Tensor, value: Any, what: str, op: Op) -> Tensor:
    """``t`` set to ``value`` everywhere, expanded tensors included when no graph is recorded (as torch)."""
    if type(t) is not BatchedTensor:
        _check_writable(t, what, fills=not _records_graph(t, (value,), {}), operands=(value,))
    return update_(t, _fill, what, value, op, checked=True)


def uniform_(self: Tensor, low: float = 0.0, high: float = 1.0) -> Tensor:
    """Fill with samples uniform on ``[low, high)`` from dualgrad's generator (``manual_seed``); no gradient
    flows to the old values (torch's ``uniform_(from, to)``).

    >>> import dualgrad as dg
    >>> x = dg.empty(3).uniform_(-1, 1)
    >>> bool(((x >= -1) & (x < 1)).all())
    True
    """
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low:g} > to={high:g}")
    return update_(self, _fill, "uniform_", rand(self.shape, dtype=self.dtype) * (high - low) + low, UNIFORM)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with normal samples of ``mean`` and ``std`` from dualgrad's generator; no gradient flows to the
    old values.

    >>> import dualgrad as dg
    >>> dg.empty(2, 3).normal_(0, 0.02).shape
    (2, 3)
    """
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return update_(self, _fill, "normal_", randn(self.shape, dtype=self.dtype) * std + mean, NORMAL)


def zero_(self: Tensor) -> Tensor:
    """Fill ``self`` with zeros.

    >>> import dualgrad as dg
    >>> dg.ones(2).zero_()
    tensor([0., 0.])
    """
    return _fill_(self, 0, "zero_", ZERO)


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value`` for every index ``__getitem__`` takes; differentiable.

    Basic indices (ints, slices, ``None``, ``...``) copy into a view (``CopySlices``);
    advanced ones (integer arrays, masks) use ``index_put``, where repeated
    indices keep one of the values (which one is unspecified) and its gradient.

    >>> import dualgrad as dg
    >>> x = dg.zeros(3)
    >>> x[1] = 5.
    >>> x
    tensor([0., 5., 0.])

    ``value`` is a Tensor, a number (torch's RuntimeError for one that the dtype cannot hold, such as
    a complex number for a real tensor), or, beyond torch, an ndarray or nested list; anything else
    (``None``, a string) raises torch's TypeError.
    """
    _check_assigned(self, value)
    index = normalize_index(index, keep=self.requires_grad or isinstance(value, Tensor) and value.requires_grad)
    if has_batched_entry(index):  # inside vmap: the index Tensors are inputs of the op
        spec, tensors = split_index(index)
        update_(self, lambda x, v, *t: apply(INDEX_PUT_TENSOR, x, v, *t, spec=spec), "__setitem__", value, *tensors)
    elif _is_basic(index):
        if Ellipsis not in index:
            index = index + (Ellipsis,)
        if type(self) is not BatchedTensor:
            # (the memory is checked in the region written, a view: ``x.expand(3)[0] = v`` is allowed)
            _check_mutable(self, VIEW_OF_LEAF_MESSAGE, operands=(value,))
        copy_(apply(GETITEM, self, index=index), _without_leading_ones(value))
    else:
        update_(self, lambda x, v: apply(INDEX_PUT, x, v, index=index), "__setitem__", value)


def _check_assigned(t: Tensor, value: Any) -> None:
    """torch's errors for a value ``t[index] = value`` cannot take (see ``setitem``)."""
    if isinstance(value, (Tensor, np.ndarray, list, tuple)):
        return
    if not is_number(value):
        raise TypeError(f"can't assign a {type(value).__name__} to a {t.type()}")
    check_number_fits(value, t.dtype)


def _without_leading_ones(value: Any) -> Any:
    """A Tensor value of ``x[index] = value`` without its leading dimensions of size 1 (as torch drops them)."""
    if not isinstance(value, Tensor):
        return value
    shape = value.shape
    lead = next((i for i, n in enumerate(shape) if n != 1), len(shape))
    return value.reshape(shape[lead:]) if lead else value


masked_fill_ = _inplace("masked_fill_", masked_fill, "Set ``value`` where ``mask`` is True.")

_RESTRIDING = {"unsqueeze_": "unsqueeze", "squeeze_": "squeeze", "t_": "t", "transpose_": "transpose",
               "swapdims_": "swapdims", "swapaxes_": "swapaxes"}
METHODS: dict[str, Any] = {
    **{name: _restriding(name, view, f"In-place ``{view}``: a new shape for the same data (see ``restride_``).")
       for name, view in _RESTRIDING.items()},
    "resize_": resize_, "resize_as_": resize_as_,
    "uniform_": uniform_, "normal_": normal_,
    "fill_": fill_, "zero_": zero_, "copy_": copy_, "masked_fill_": masked_fill_,
    "__setitem__": setitem,
}
# the augmented assignments: the in-place method of the operator's op
_AUGMENTED = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_", "__ipow__": "pow_",
              "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__iand__": "bitwise_and_",
              "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_", "__ilshift__": "bitwise_left_shift_",
              "__irshift__": "bitwise_right_shift_"}


def declared_methods() -> dict[str, Callable]:
    """The in-place methods ``x.<method>_(...)`` of every op declared with ``inplace`` (``ops/surface.py``),
    and the augmented assignments (``+=``, ...) among them; ``ops/methods.py`` installs them."""
    methods = {f"{name}_": _inplace(f"{name}_", s.method_function, f"In-place ``{name}``.")
               for s in surface.DECLARED if s.inplace for name in s.methods}
    methods.update({dunder: methods[name] for dunder, name in _AUGMENTED.items()})
    return methods


__all__: list[str] = []
