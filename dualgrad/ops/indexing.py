"""Indexing: ``x[index]``, gather and the functions built on them, with their transposes.

Two pairs of linear ops, each the transpose of the other:

* ``getitem`` (NumPy indexing, ``index`` a parameter) and ``index_add_into_zeros``
  (a scatter-add of the cotangent into zeros; repeated indices accumulate);
* ``gather`` (``out[i][j] = x[i][index[i][j]]`` along ``dim``, ``index`` an
  input, so vmap can batch it) and ``scatter_add_into_zeros``.

Inside ``vmap``, an index Tensor that is batched cannot be a parameter (vmap
unwraps only inputs), so ``x[index]`` and ``x[index] = v`` with such an index go
through ``index_tensor`` and ``index_put_tensor``, which take the index Tensors
as inputs; their batching rule indexes the batch axis with an ``arange``.

``take``, ``take_along_dim`` and ``index_select`` are ``gather`` on reshaped or
broadcast operands, so their derivatives and batching rules come from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..factories import zeros_like
from ..fastpath import quiet_getitem, unseen
from ..tensor import Tensor, _wrap, as_operand, check_tensor
from ..vmap.batching import BatchedTensor, movedim
from ._axes import normalize_axis
from .batch_rules import NOT_BATCHED, to_front
from .dispatch import _record, apply, make_view, tensor_arg
from .elementwise.core import where
from .registry import Op, linear, nondifferentiable
from .surface import exported, public


# -- getitem ------------------------------------------------------------------------------
def _is_basic(index: tuple) -> bool:
    """True when ``index`` has only ints, slices, None and Ellipsis (a view, no repeats)."""
    return all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis for i in index)


def _scatter_add_impl(g: np.ndarray, shape: tuple, index: tuple) -> np.ndarray:
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices accumulate)."""
    if _is_contiguous_block(index, len(shape)):
        out = np.empty(shape, dtype=g.dtype)
        _zero_outside(out, index)  # (only the part that ``g`` does not cover: one pass fewer)
        out[index] = g
    elif _is_basic(index):
        out = np.zeros(shape, dtype=g.dtype)
        out[index] = g
    else:
        out = np.zeros(shape, dtype=g.dtype)
        np.add.at(out, index, g)
    return out


def _is_contiguous_block(index: tuple, ndim: int) -> bool:
    """True when ``index`` is at most ``ndim`` slices with step 1 (a block, such as ``x[1:]``)."""
    return len(index) <= ndim and all(type(i) is slice and i.step in (None, 1) for i in index)


def _zero_outside(out: np.ndarray, index: tuple) -> None:
    """Set to 0 the elements of ``out`` outside the block ``out[index]`` (slices with step 1).

    Axis by axis: the elements inside the block along the earlier axes and before
    or after it along this one.
    """
    inside: list = []
    for axis, entry in enumerate(index):
        start, stop, _ = entry.indices(out.shape[axis])
        stop = max(start, stop)
        out[(*inside, slice(None, start))] = 0
        out[(*inside, slice(stop, None))] = 0
        inside.append(slice(start, stop))


def _probe(entry: Any) -> Any:
    """An index entry of the same kind as ``entry`` that is valid on axes of length 1."""
    if isinstance(entry, (bool, np.bool_)) or entry is None or entry is Ellipsis or isinstance(entry, slice):
        return entry
    if isinstance(entry, (int, np.integer)):
        return 0
    if entry.dtype == np.bool_:
        return np.ones((1,) * entry.ndim, dtype=np.bool_)
    return np.zeros((1,) * entry.ndim, dtype=entry.dtype)


def batch_position(index: tuple, ndim: int) -> int:
    """Where axis 0 of an ``ndim``-d array lands in ``x[(slice(None),) + index]``.

    Axis 0 stays first unless advanced indices separated by a slice, None or
    Ellipsis move their dimensions to the front (NumPy's rule). NumPy itself
    answers, on a tiny probe array of the same rank, unless ``index`` is basic
    (slices, integers, None, Ellipsis; no booleans): then axis 0 stays first.
    """
    if all(type(i) is slice or i is None or i is Ellipsis or (isinstance(i, (int, np.integer)) and type(i) is not bool)
           for i in index):
        return 0
    probe = np.empty((2,) + (1,) * (ndim - 1))[(slice(None),) + tuple(_probe(i) for i in index)]
    return probe.shape.index(2)


def _move_front_to(x: Tensor, position: int) -> Tensor:
    """``x`` with its axis 0 moved to ``position``."""
    if position == 0:
        return x
    axes = tuple(range(1, position + 1)) + (0,) + tuple(range(position + 1, x.ndim))
    return x.permute(axes)  # (a method: shape imports this module)


def _getitem_batch(args: tuple, bdims: tuple, index: tuple) -> tuple:
    """Index every batch member at once: a leading full slice, then find the batch axis."""
    x = to_front(args[0], bdims[0])
    return apply(GETITEM, x, index=(slice(None),) + index), batch_position(index, x.ndim)


def _index_add_batch(args: tuple, bdims: tuple, shape: tuple, index: tuple) -> tuple:
    """Scatter every batch member at once: lay ``g`` out as ``x[:, index]`` would be."""
    position = batch_position(index, len(shape) + 1)
    g = _move_front_to(to_front(args[0], bdims[0]), position)
    return apply(INDEX_ADD_INTO_ZEROS, g, shape=g.shape[position:position + 1] + shape,
                 index=(slice(None),) + index), 0


def _getitem_impl(x: np.ndarray, index: tuple) -> np.ndarray:
    """``x[index]``; a full integer index gives a 0-d view (NumPy would return a scalar copy)."""
    out = x[index]
    return out if type(out) is np.ndarray else x[index + (Ellipsis,)]


def _getitem_name(node: Any) -> str:
    """torch's name for ``x[index]``: torch applies a basic index entry by entry and names the
    result by the last step (an integer SelectBackward0, a slice SliceBackward0, None
    UnsqueezeBackward0; ``:`` and ``...`` are no step unless nothing else is); with an
    array or boolean entry the last step is IndexBackward0."""
    name, full_slice = None, False
    for entry in node.params["index"]:
        if entry is None:
            name = "UnsqueezeBackward0"
        elif type(entry) is slice:
            if entry == _FULL:
                full_slice = True
            else:
                name = "SliceBackward0"
        elif isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            name = "SelectBackward0"
        elif entry is not Ellipsis:
            return "IndexBackward0"
    return name or ("SliceBackward0" if full_slice else "AliasBackward0")


def _getitem_vjp(g: Tensor, out: Any, x: Any, index: tuple) -> Tensor:
    """Zeros of ``x``'s shape with ``g`` added at ``index``: the scatter's impl called directly when
    no mode can see it (``unseen``: a backward without ``create_graph``), where dispatch would only
    call it and wrap the result; the first slice's gradient of each tensor in B1 and B2."""
    if unseen(g):
        return _wrap(_scatter_add_impl(g._data, x.shape, index))
    return apply(INDEX_ADD_INTO_ZEROS, g, shape=x.shape, index=index)


_FULL = slice(None)
GETITEM = linear("getitem", _getitem_impl, (_getitem_vjp,),
                 batch=_getitem_batch, family="indexing", grad_name="IndexBackward0", view=True,
                 grad_name_for=_getitem_name)


def _block_of(node: Any) -> tuple | None:
    """The index where ``x[index]``'s gradient lands in ``x``, as a view index; None unless basic.

    Only ints and slices: each element of ``x`` is then reached at most once. The
    trailing Ellipsis keeps an all-integer index a 0-d view rather than a scalar.
    """
    index = node.params["index"]
    for i in index:  # (a loop with the common kinds tested first: the engine asks at every indexed node)
        kind = type(i)
        if kind is not int and kind is not slice and (kind is bool or not isinstance(i, (int, np.integer))):
            return None
    return index + (Ellipsis,)


GETITEM.scatter_index = _block_of
INDEX_ADD_INTO_ZEROS = linear("index_add_into_zeros", _scatter_add_impl,
                              (lambda g, out, x, shape, index: apply(GETITEM, g, index=index),),
                              batch=_index_add_batch, family="indexing")


def normalize_index(index: Any, keep: bool = False) -> tuple:
    """A tuple index with Tensors replaced by their arrays (bool masks stay masks).

    With ``keep`` (the call records a node, which keeps the index for its backward pass), array
    entries are copies: the caller may change its array or Tensor in place before the backward
    pass. Without it they are the caller's own arrays, whose identity an observer (sparsity
    detection) may follow. Batched Tensors (inside ``vmap``) stay Tensors: see ``index_tensor``.
    """
    if not isinstance(index, tuple):
        index = (index,)
    return tuple(
        (i._data.copy() if keep else i._data) if isinstance(i, Tensor) and type(i) is not BatchedTensor
        else (i.copy() if keep else i) if type(i) is np.ndarray
        else ((np.asarray(i) if i else np.zeros(0, np.int64)) if isinstance(i, list) else i)  # []: no indices
        for i in index
    )


def has_batched_entry(index: tuple) -> bool:
    """True if a normalized ``index`` holds batched Tensors (then use ``index_tensor``)."""
    return any(type(i) is BatchedTensor for i in index)


@public(None, method=False)
def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` for ints, slices, Ellipsis, None, bool masks and integer arrays.

    Basic indexing (ints, slices, None, Ellipsis) returns a view; the gradient of
    advanced indexing adds up over repeated indices.

    >>> import dualgrad as dg
    >>> dg.getitem(dg.arange(5.), slice(1, None, 2))
    tensor([1., 3.])
    >>> x = dg.tensor([1., 2., 3.], requires_grad=True)
    >>> x[[0, 0, 2]].sum().backward()
    >>> x.grad
    tensor([2., 0., 1.])
    """
    x = tensor_arg(x, "getitem")
    index = normalize_index(index, keep=x.requires_grad)
    if has_batched_entry(index):
        spec, tensors = split_index(index)
        return apply(INDEX_TENSOR, x, *tensors, spec=spec)
    try:
        return apply(GETITEM, x, index=index)
    except IndexError as err:
        raise IndexError(f"getitem: invalid index for a tensor of shape {x.shape}: {err}") from None


# -- indexing with Tensor inputs (batched indices inside vmap) ---------------------------------
class _TensorEntry:
    """The marker of an index entry given as an input Tensor in a ``spec``."""

    def __repr__(self) -> str:
        return "<tensor>"


TENSOR = _TensorEntry()


def split_index(index: tuple) -> tuple[tuple, list]:
    """``(spec, tensors)``: ``index`` with its array entries as Tensors, replaced by ``TENSOR`` in ``spec``."""
    spec, tensors = [], []
    for entry in index:
        if isinstance(entry, (Tensor, np.ndarray)):
            spec.append(TENSOR)
            tensors.append(entry if isinstance(entry, Tensor) else _wrap(entry))
        else:
            spec.append(entry)
    return tuple(spec), tensors


def _join_index(spec: tuple, arrays: Any) -> tuple:
    """The NumPy index: ``spec`` with its ``TENSOR`` entries taken from ``arrays`` in order."""
    arrays = iter(arrays)
    return tuple(next(arrays) if entry is TENSOR else entry for entry in spec)


def _plain_index(spec: tuple, tensors: tuple) -> tuple:
    """The index of a rule's (unbatched) index Tensors as a parameter for ``getitem``-style ops."""
    return _join_index(spec, [t._data for t in tensors])


def _index_put_impl(x: np.ndarray, values: Any, *arrays: np.ndarray, spec: tuple) -> np.ndarray:
    out = x.copy()
    out[_join_index(spec, arrays)] = values
    return out


def _index_tensor_vjp(g: Tensor, out: Any, x: Any, *index: Tensor, spec: tuple) -> list:
    """Scatter-add the cotangent into zeros (the index Tensors get no gradient)."""
    return [apply(INDEX_ADD_INTO_ZEROS, g, shape=x.shape, index=_plain_index(spec, index))] + [None] * len(index)


def _index_put_tensor_vjp(g: Tensor, out: Any, x: Any, values: Any, *index: Tensor, spec: tuple) -> list:
    """``x`` gets ``g`` outside the written region, ``values`` gets ``g`` in it."""
    return [apply(INDEX_PUT_TENSOR, g, 0.0, *index, spec=spec),
            apply(INDEX_TENSOR, g, *index, spec=spec)] + [None] * len(index)


def _index_put_tensor_jvp(tangents: tuple, out: Any, x: Tensor, values: Any, *index: Tensor,
                          spec: tuple) -> Tensor:
    """The same write on the tangents (zero where an operand has none)."""
    x_dot = zeros_like(x) if tangents[0] is None else tangents[0]
    values_dot = 0.0 if tangents[1] is None else tangents[1]
    return apply(INDEX_PUT_TENSOR, x_dot, values_dot, *index, spec=spec)


# -- their batching rule: an arange indexes the batch axis ---------------------------------------
def _batched_mask_as_indices(mask: Tensor, bdim: int, size: int) -> list:
    """A mask batched along ``bdim`` as integer index Tensors batched along 0.

    Only when every batch member selects the same number of elements (a shape
    that is static per example); a RuntimeError otherwise.
    """
    if type(mask) is BatchedTensor or mask.ndim == 1:
        raise RuntimeError(
            "vmap: indexing with a boolean mask that is 0-d or batched at several vmap levels is not "
            "supported (its per-example result shapes depend on its values); use integer indices or "
            "dualgrad.where"
        )
    members = np.moveaxis(mask._data, bdim, 0)
    counts = members.reshape(size, -1).sum(axis=1)
    if size and (counts != counts[0]).any():
        raise RuntimeError(
            "vmap: indexing with a batched boolean mask that selects a different number of elements in "
            f"each batch member (counts {counts.tolist()}) would give results of different shapes; use "
            "dualgrad.where(mask, x, 0) or integer indices instead"
        )
    count = int(counts[0]) if size else 0
    return [_wrap(positions.reshape(size, count)) for positions in np.nonzero(members)[1:]]


def _without_batched_masks(spec: tuple, index: list, bdims: list, size: int) -> tuple[tuple, list, list]:
    """``spec``, index Tensors and their bdims with each batched bool mask replaced by integer indices."""
    new_spec, new_index, new_bdims = [], [], []
    tensors = iter(zip(index, bdims, strict=True))
    for entry in spec:
        if entry is not TENSOR:
            new_spec.append(entry)
            continue
        t, bdim = next(tensors)
        if bdim is not NOT_BATCHED and t.dtype == np.bool_:
            positions = _batched_mask_as_indices(t, bdim, size)
            new_spec += [TENSOR] * len(positions)
            new_index += positions
            new_bdims += [0] * len(positions)
        else:
            new_spec.append(entry)
            new_index.append(t)
            new_bdims.append(bdim)
    return tuple(new_spec), new_index, new_bdims


def _width(entry: Any, tensor: Tensor | None) -> int:
    """How many axes of the indexed array an index entry consumes (a mask: its rank)."""
    if entry is TENSOR:
        return tensor.ndim if tensor.dtype == np.bool_ else 1
    return 0 if entry is None or entry is Ellipsis else 1


def _first_tensor_axis(spec: tuple, index: list, ndim: int) -> int:
    """The axis of an ``ndim``-d array that the first ``TENSOR`` entry of ``spec`` indexes."""
    tensors = iter(index)
    widths = [_width(entry, next(tensors) if entry is TENSOR else None) for entry in spec]
    axis = 0
    for entry, width in zip(spec, widths, strict=True):
        if entry is TENSOR:
            break
        axis += ndim - sum(widths) if entry is Ellipsis else width
    return axis


def batch_at(x: Any, bdim: int | None, axis: int, size: int) -> Tensor:
    """``x`` with its batch axis at ``axis`` (an unbatched ``x`` is broadcast along a new one)."""
    if bdim is NOT_BATCHED:
        x = as_operand(x).unsqueeze(axis)
        return x.expand(x.shape[:axis] + (size,) + x.shape[axis + 1:])
    return movedim(x, bdim, axis)


def _physical_index(x: Any, x_bdim: int | None, spec: tuple, index: list, bdims: list, size: int) -> tuple:
    """``(x, spec, index, x_bdim, batched)`` indexing every batch member at once.

    With no batched index, a full slice takes the batch axis of ``x`` along. Else
    the batch axis of ``x`` is put where the first Tensor entry indexes and is
    indexed by an ``arange`` inserted before that entry, broadcast against the
    batched indices (batch axis first, then padded to a common rank): NumPy then
    lays out the result as the logical index would, with the batch axis at the
    front of the indexed block. ``batched`` flags the index Tensors carrying the batch.
    """
    spec, index, bdims = _without_batched_masks(spec, index, bdims, size)
    if all(b is NOT_BATCHED for b in bdims):
        return batch_at(x, x_bdim, 0, size), (slice(None),) + spec, index, 0, [False] * len(index)
    logical_ndim = np.ndim(x) - (x_bdim is not NOT_BATCHED)
    axis = _first_tensor_axis(spec, index, logical_ndim)
    rank = max(1 if t.dtype == np.bool_ else t.ndim - (b is not NOT_BATCHED)
               for t, b in zip(index, bdims, strict=True))
    aligned = []
    for t, bdim in zip(index, bdims, strict=True):
        if bdim is not NOT_BATCHED:
            t = to_front(t, bdim)
            t = t.reshape(t.shape[:1] + (1,) * (rank + 1 - t.ndim) + t.shape[1:])
        aligned.append(t)
    first = spec.index(TENSOR)
    batch_index = _wrap(np.arange(size).reshape((size,) + (1,) * rank))
    return (batch_at(x, x_bdim, axis, size), spec[:first] + (TENSOR,) + spec[first:], [batch_index] + aligned,
            axis, [True] + [b is not NOT_BATCHED for b in bdims])


def _probe_region(ndim: int, x_bdim: int, spec: tuple, index: list, batched: list) -> tuple:
    """The shape of ``x[index]`` for a tiny probe ``x`` whose batch axis has size 2 (the others 1)."""
    probe = np.empty(tuple(2 if d == x_bdim else 1 for d in range(ndim)))
    arrays = [np.ones((1,) * t.ndim, np.bool_) if t.dtype == np.bool_
              else np.zeros((2,) * flag + (1,) * (t.ndim - flag), np.int64)
              for t, flag in zip(index, batched, strict=True)]
    return probe[_join_index(tuple(entry if entry is TENSOR else _probe(entry) for entry in spec), arrays)].shape


def batch_size(args: Any, bdims: Any) -> int:
    """The vmap batch size, read off the first batched argument."""
    return next(a.shape[b] for a, b in zip(args, bdims, strict=True) if b is not NOT_BATCHED)


def _index_tensor_batch(args: tuple, bdims: tuple, spec: tuple) -> tuple:
    """``x[index]`` of every batch member at once (see ``_physical_index``)."""
    x, spec, index, x_bdim, batched = _physical_index(args[0], bdims[0], spec, list(args[1:]),
                                                      list(bdims[1:]), batch_size(args, bdims))
    out = apply(INDEX_TENSOR, x, *index, spec=spec)
    return out, _probe_region(x.ndim, x_bdim, spec, index, batched).index(2)


def _index_put_tensor_batch(args: tuple, bdims: tuple, spec: tuple) -> tuple:
    """``x[index] = values`` of every batch member at once, ``values`` laid out like that region."""
    x, spec, index, x_bdim, batched = _physical_index(args[0], bdims[0], spec, list(args[2:]),
                                                      list(bdims[2:]), batch_size(args, bdims))
    region = _probe_region(x.ndim, x_bdim, spec, index, batched)
    values = values_at(args[1], bdims[1], len(region), region.index(2))
    return apply(INDEX_PUT_TENSOR, x, values, *index, spec=spec), x_bdim


def values_at(values: Any, bdim: int | None, rank: int, position: int) -> Any:
    """``values`` broadcastable to a region of ``rank`` axes whose batch axis is at ``position``."""
    if bdim is NOT_BATCHED:
        if np.ndim(values) == 0:
            return values
        values = as_operand(values).unsqueeze(0)
    else:
        values = to_front(values, bdim)
    values = values.reshape(values.shape[:1] + (1,) * (rank - values.ndim) + values.shape[1:])
    return movedim(values, 0, position)


INDEX_TENSOR = Op(
    "index_tensor", lambda x, *index, spec: _getitem_impl(x, _join_index(spec, index)),
    vjp=_index_tensor_vjp,
    jvp=lambda tangents, out, x, *index, spec: apply(INDEX_TENSOR, tangents[0], *index, spec=spec),
    batch=_index_tensor_batch, family="indexing", grad_name="IndexBackward0",
    save_inputs=lambda needs: (False,) + (True,) * (len(needs) - 1),
)
INDEX_PUT_TENSOR = Op(
    "index_put_tensor", _index_put_impl, vjp=_index_put_tensor_vjp, jvp=_index_put_tensor_jvp,
    batch=_index_put_tensor_batch, family="indexing", grad_name="IndexPutBackward0",
    save_inputs=lambda needs: (False, False) + (True,) * (len(needs) - 2),
)


# -- gather and its transpose -----------------------------------------------------------------
def _gather_index(index: np.ndarray, dim: int) -> tuple:
    """The NumPy index selecting ``x[i][index[i][j]]...``: ``index`` at ``dim``, aranges elsewhere."""
    nd = index.ndim
    return tuple(
        index if d == dim else np.arange(n).reshape((n,) + (1,) * (nd - 1 - d))
        for d, n in enumerate(index.shape)
    )


def _along_axis(index: np.ndarray, dim: int, shape: tuple) -> np.ndarray | None:
    """The vector ``v`` when ``index`` is ``v`` broadcast along ``dim`` over all of ``shape`` (None when
    it is not, or is empty: its vector cannot be read)."""
    if not index.size:
        return None
    if any(s != 0 and d != dim and index.shape[d] != 1 for d, s in enumerate(index.strides)):
        return None
    if any(n != shape[d] for d, n in enumerate(index.shape) if d != dim):
        return None
    return index[(0,) * dim + (slice(None),) + (0,) * (index.ndim - dim - 1)]


def _gather_impl(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    vector = _along_axis(index, dim, x.shape)
    if vector is not None:
        return np.take(x, vector, axis=dim)
    return x[_gather_index(index, dim)]


def _scatter_impl(g: np.ndarray, index: np.ndarray, shape: tuple, dim: int) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    vector = _along_axis(index, dim, shape)
    np.add.at(out, (slice(None),) * dim + (vector,) if vector is not None else _gather_index(index, dim), g)
    return out


def _pair_batch(op: Op, args: tuple, bdims: tuple, **params: Any) -> tuple:
    """Batch a (values, index) op: both operands batched at axis 0, ``dim`` shifted by one."""
    first, index = to_front(args[0], bdims[0]), to_front(args[1], bdims[1])
    size = first.shape[0] if bdims[0] is not NOT_BATCHED else index.shape[0]
    if bdims[0] is NOT_BATCHED:
        first = first.expand((size,) + first.shape)
    if bdims[1] is NOT_BATCHED:
        index = index.expand((size,) + index.shape)
    if "shape" in params:
        params["shape"] = (size,) + params["shape"]
    params["dim"] += 1
    return apply(op, first, index, **params), 0


GATHER = Op(
    "gather", _gather_impl,
    vjp=(lambda g, out, x, index, dim: apply(SCATTER_ADD_INTO_ZEROS, g, index, shape=x.shape, dim=dim), None),
    jvp=lambda tangents, out, x, index, dim: apply(GATHER, tangents[0], index, dim=dim),
    batch=lambda args, bdims, dim: _pair_batch(GATHER, args, bdims, dim=dim),
    family="indexing", arg_names=("self", "index"),
)
SCATTER_ADD_INTO_ZEROS = Op(
    "scatter_add_into_zeros", _scatter_impl,
    vjp=(lambda g, out, g0, index, shape, dim: apply(GATHER, g, index, dim=dim), None),
    jvp=lambda tangents, out, g0, index, shape, dim: apply(SCATTER_ADD_INTO_ZEROS, tangents[0], index,
                                                           shape=shape, dim=dim),
    batch=lambda args, bdims, shape, dim: _pair_batch(SCATTER_ADD_INTO_ZEROS, args, bdims, shape=shape,
                                                      dim=dim),
    family="indexing", arg_names=("self", "index"),
)


def _as_index(index: Any, op: str) -> Tensor:
    """``index`` as an integer Tensor, or a RuntimeError naming ``op``."""
    if not isinstance(index, Tensor):
        index = _wrap(np.asarray(index))
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected an integer dtype for index, got {index.dtype}")
    return index


def _gathered(x: Tensor, index: Tensor, dim: int, op: str, error: type = RuntimeError,
              shape: tuple | None = None) -> Tensor:
    """``apply(GATHER, ...)``, NumPy's out-of-bounds error reworded for ``op`` and the user's ``shape``."""
    try:
        return apply(GATHER, x, index, dim=dim)
    except IndexError as err:
        raise error(f"{op}: {err} (input shape {x.shape if shape is None else shape}, "
                    f"index shape {index.shape})") from None


@public(None, inplace=False)
def gather(input: Tensor, dim: int, index: Any) -> Tensor:  # noqa: A002 - torch's name
    """Values of ``input`` along ``dim`` at ``index``: ``out[i][j] = input[i][index[i][j]]`` for ``dim=1``.

    ``index`` has the dimensions of ``input`` and is no larger than it except
    along ``dim``; the result has the shape of ``index``. Negative indices count
    from the end.

    >>> import dualgrad as dg
    >>> dg.gather(dg.tensor([[1., 2.], [3., 4.]]), 1, dg.tensor([[0, 0], [1, 0]]))
    tensor([[1., 1.],
            [4., 3.]])
    """
    input = tensor_arg(input, "gather")
    index = _as_index(index, "gather")
    if index.ndim != input.ndim:
        raise RuntimeError(
            f"gather(): Index tensor must have the same number of dimensions as input tensor "
            f"(index shape {index.shape}, input shape {input.shape})"
        )
    dim = normalize_axis(dim, input.ndim, "gather")
    if input.ndim == 0:
        return gather(input.reshape(1), 0, index.reshape(1)).reshape(())
    if any(n > input.shape[d] for d, n in enumerate(index.shape) if d != dim):
        raise RuntimeError(
            f"gather(): Size does not match at dimension {dim}: expected index {index.shape} to be no "
            f"larger than self {input.shape} apart from dimension {dim}"
        )
    return _gathered(input, index, dim, "gather()")


@public(None, inplace=False)
def take_along_dim(input: Tensor, indices: Any, dim: int | None = None) -> Tensor:  # noqa: A002
    """``gather`` with ``input`` and ``indices`` broadcast against each other except along ``dim``.

    With ``dim=None`` both are flattened first (``torch.take_along_dim`` and
    ``numpy.take_along_axis`` semantics).

    >>> import dualgrad as dg
    >>> x = dg.tensor([[10., 30., 20.], [60., 40., 50.]])
    >>> dg.take_along_dim(x, dg.tensor([[0], [1]]), dim=1)
    tensor([[10.],
            [40.]])
    """
    input = tensor_arg(input, "take_along_dim")
    indices = _as_index(indices, "take_along_dim")
    if dim is None:
        return _gathered(input.reshape(-1), indices.reshape(-1), 0, "take_along_dim()", shape=input.shape)
    if indices.ndim != input.ndim:
        raise RuntimeError(
            f"take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.ndim} dimensions for input (shape {input.shape}), and {indices.ndim} dimensions for "
            f"indices (shape {indices.shape})"
        )
    dim = normalize_axis(dim, input.ndim, "take_along_dim")

    def with_dim(shape: tuple, n: int) -> tuple:
        return shape[:dim] + (n,) + shape[dim + 1:]

    try:
        common = np.broadcast_shapes(with_dim(input.shape, 1), with_dim(indices.shape, 1))
    except ValueError:
        raise RuntimeError(
            f"take_along_dim(): shapes {input.shape} and {indices.shape} do not broadcast apart from "
            f"dimension {dim}"
        ) from None
    input = input.expand(with_dim(common, input.shape[dim]))
    indices = indices.expand(with_dim(common, indices.shape[dim]))
    return _gathered(input, indices, dim, "take_along_dim()")


@public(None, method=False)
def take_along_axis(arr: Tensor, indices: Any, axis: int | None = -1) -> Tensor:
    """NumPy's spelling of ``take_along_dim``.

    >>> import dualgrad as dg
    >>> dg.take_along_axis(dg.tensor([[3., 1.], [0., 5.]]), dg.tensor([[1], [0]]), 1)
    tensor([[1.],
            [0.]])
    """
    arr = tensor_arg(arr, "take_along_axis")
    return take_along_dim(arr, indices, axis)


@public(None, inplace=False)
def take(input: Tensor, index: Any) -> Tensor:  # noqa: A002 - torch's name
    """Elements of ``input`` read as a flat 1-D tensor, at ``index`` (the result has its shape).

    >>> import dualgrad as dg
    >>> dg.take(dg.tensor([[4., 3.], [5., 7.]]), dg.tensor([0, 2, -1]))
    tensor([4., 5., 7.])
    """
    input = tensor_arg(input, "take")
    index = _as_index(index, "take")
    return _gathered(input.reshape(-1), index.reshape(-1), 0, "take(): out of range", IndexError,
                     input.shape).reshape(index.shape)


@public(None, inplace=False)
def index_select(input: Tensor, dim: int, index: Any) -> Tensor:  # noqa: A002 - torch's name
    """The slices of ``input`` along ``dim`` at the positions in the vector ``index``.

    >>> import dualgrad as dg
    >>> dg.index_select(dg.tensor([[1., 2., 3.], [4., 5., 6.]]), 1, dg.tensor([2, 0]))
    tensor([[3., 1.],
            [6., 4.]])
    """
    input = tensor_arg(input, "index_select")
    index = _as_index(index, "index_select")
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {index.shape}")
    dim = normalize_axis(dim, input.ndim, "index_select")
    if input.ndim == 0:  # (torch: one index, a 0-d result)
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        return index_select(input.reshape(1), 0, index.reshape(1)).reshape(())
    return _gathered(input, _spread(index, dim, input.shape), dim, "index_select()", IndexError)


def _spread(index: Tensor, dim: int, shape: tuple) -> Tensor:
    """The vector ``index`` laid along ``dim`` and expanded over the other dimensions of ``shape``."""
    n = index.numel()
    column = (1,) * dim + (n,) + (1,) * (len(shape) - dim - 1)
    return index.reshape(column).expand(shape[:dim] + (n,) + shape[dim + 1:])


@public(None, inplace=False)
def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002 - torch's name
    """The slice of ``input`` at ``index`` along ``dim`` (a view, one dimension fewer).

    >>> import dualgrad as dg
    >>> dg.select(dg.tensor([[1., 2.], [3., 4.]]), 1, -1)
    tensor([2., 4.])
    """
    input = tensor_arg(input, "select")
    dim = normalize_axis(dim, input.ndim, "select")
    if not -input.shape[dim] <= index < input.shape[dim]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {input.shape} at dimension {dim}")
    return getitem(input, (slice(None),) * dim + (index,))


@public(None, inplace=False)
def masked_select(input: Tensor, mask: Any) -> Tensor:  # noqa: A002 - torch's name
    """The elements of ``input`` where the bool ``mask`` holds, as a 1-D tensor (the two broadcast).

    >>> import dualgrad as dg
    >>> dg.masked_select(dg.tensor([[1., 2.], [3., 4.]]), dg.tensor([True, False]))
    tensor([1., 3.])
    """
    input, mask = tensor_arg(input, "masked_select"), tensor_arg(mask, "masked_select")
    if mask.dtype != np.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = np.broadcast_shapes(input.shape, mask.shape)
    return getitem(input.expand(shape), mask.expand(shape))


def _nonzero_batch(args: tuple, bdims: tuple) -> tuple:
    """Refused: the number of nonzero elements differs between batch members."""
    raise RuntimeError("vmap: nonzero (and where(condition), masked_select) has an output shape that depends "
                       "on the values, which vmap does not support (as torch's)")


NONZERO = nondifferentiable("nonzero", np.argwhere, family="indexing", batch=_nonzero_batch)


@public(None, aliases=("argwhere",), inplace=False)
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple:  # noqa: A002 - torch's name
    """The indices of the nonzero elements: an ``(n, ndim)`` int64 tensor, or with ``as_tuple=True``
    one 1-D tensor per dimension (NumPy's ``nonzero``; a 0-d input counts as 1-d).

    >>> import dualgrad as dg
    >>> dg.nonzero(dg.tensor([[0., 2.], [3., 0.]]))
    tensor([[0, 1],
            [1, 0]])
    """
    input = tensor_arg(input, "nonzero")
    if not as_tuple:
        return apply(NONZERO, input)
    found = apply(NONZERO, input.reshape(1) if input.ndim == 0 else input)
    return tuple(found[:, d] for d in range(found.shape[1]))




def _scatter_checked(input: Any, dim: int, index: Any, src: Any, op: str) -> tuple:
    """``(input, dim, index, src)`` checked as torch's ``scatter``; ``src`` cut to ``index``'s shape."""
    input, index = tensor_arg(input, op), _as_index(index, op)
    src = tensor_arg(src, op)
    if src.dtype != input.dtype:  # torch promotes nothing here: a float64 src would turn a float32 input
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype ({op}: self is {input.dtype}, "
                           f"src is {src.dtype})")
    if src.ndim and not (index.ndim == input.ndim == src.ndim):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as self tensor")
    dim = normalize_axis(dim, input.ndim, op)
    if not isinstance(index, BatchedTensor):
        check_scatter_bounds(index, dim, input.shape[dim] if input.ndim else 1)
    src = src[tuple(slice(0, n) for n in index.shape)] if src.ndim else src.expand(index.shape)
    return input, dim, index, src


def check_scatter_bounds(index: Tensor, dim: int, size: int) -> None:
    """torch's RuntimeError for a scatter ``index`` entry outside ``[0, size)`` (no negative indices)."""
    bad = (index._data < 0) | (index._data >= size)
    if bad.any():
        raise RuntimeError(f"index {index._data[bad][0]} is out of bounds for dimension {dim} with size {size}")


@public(None)
def scatter_add(input: Tensor, dim: int, index: Any, src: Any) -> Tensor:  # noqa: A002 - torch's name
    """``input`` with ``src`` added at ``index`` along ``dim`` (out of place):
    ``out[i][index[i][j]] += src[i][j]`` for ``dim=1``; repeated indices accumulate.

    >>> import dualgrad as dg
    >>> dg.scatter_add(dg.zeros(3), 0, dg.tensor([0, 2, 0]), dg.tensor([1., 2., 3.]))
    tensor([4., 0., 2.])
    """
    input, dim, index, src = _scatter_checked(input, dim, index, src, "scatter_add")
    return input + apply(SCATTER_ADD_INTO_ZEROS, src, index, shape=input.shape, dim=dim)


def _last_writes(index: np.ndarray, dim: int, shape: tuple) -> np.ndarray:
    """True at the positions of ``index`` that write last to their target (the one kept by scatter)."""
    targets = np.ravel_multi_index(_gather_index(index, dim), shape).ravel()
    last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
    keep = np.zeros(targets.size, dtype=bool)
    keep[last] = True
    return keep.reshape(index.shape)


@public(None)
def scatter(input: Tensor, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:  # noqa: A002
    """``input`` with ``src`` (a tensor or a number, also as ``value=``) written at ``index`` along
    ``dim`` (out of place): ``out[i][index[i][j]] = src[i][j]`` for ``dim=1``. Where ``index``
    repeats a target, the last write wins (torch leaves it unspecified); the gradient reaches
    ``input`` where nothing is written and the ``src`` elements written.

    >>> import dualgrad as dg
    >>> dg.scatter(dg.zeros(3), 0, dg.tensor([2, 0]), dg.tensor([1., 2.]))
    tensor([2., 0., 1.])
    """
    src = value if src is None else src
    if isinstance(input, Tensor) and isinstance(src, (bool, int, float, complex)):
        src = _wrap(np.asarray(src, dtype=input.dtype))  # a number takes input's dtype, as in torch
    input, dim, index, src = _scatter_checked(input, dim, index, src, "scatter")
    written = _wrap(_last_writes(index._data, dim, input.shape))
    hit = apply(SCATTER_ADD_INTO_ZEROS, written, index, shape=input.shape, dim=dim)
    placed = apply(SCATTER_ADD_INTO_ZEROS, where(written, src, 0), index, shape=input.shape, dim=dim)
    return where(hit, placed, input)


# -- the index_* family, put and masked_scatter: writes at the positions an index gives -----------------
def _index_along(input: Tensor, dim: int, index: Any, op: str, negative: bool = False,  # noqa: A002
                  error: type = IndexError) -> tuple:
    """``(dim, index)`` checked as torch's ``index_*`` ops: ``index`` an integer vector (1-d) whose
    entries lie in the dimension (or count from its end with ``negative``), else ``error``."""
    index = _as_index(index, op)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim}")
    dim = normalize_axis(dim, input.ndim, op)
    size = input.shape[dim] if input.ndim else 1
    bad = (index._data < (-size if negative else 0)) | (index._data >= size)
    if bad.any():
        raise error(f"{op}(): index {index._data[bad][0]} is out of bounds for dimension {dim} with size {size}")
    return dim, index.reshape(-1)


def _source_along(input: Tensor, dim: int, index: Tensor, source: Any, op: str) -> Tensor:  # noqa: A002
    """``source`` checked to fill the slices ``index`` selects along ``dim`` of ``input`` (same dtype)."""
    source = tensor_arg(source, op)
    if source.dtype != input.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype}) and source ({source.dtype}) must have the same dtype")
    if source.ndim == 0 and input.ndim <= 1:
        source = source.reshape(1)
    expected = input.shape[:dim] + (index.numel(),) + input.shape[dim + 1:]
    if source.shape != expected:
        if source.ndim == input.ndim and all(n == m for d, (n, m) in enumerate(zip(source.shape, expected))
                                             if d != dim):
            raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to "
                               f"source.size(dim): ({source.shape[dim]}), for dim: {dim}")
        raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    return source


def _as_vector(input: Tensor) -> Tensor:  # noqa: A002
    """A 0-d ``input`` as a 1-element vector (torch's ``index_*`` ops treat it so)."""
    return input.reshape(1) if input.ndim == 0 else input


@public(None)
def index_add(input: Tensor, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``input`` with ``alpha * source`` added to the slices at ``index`` along ``dim`` (out of place):
    ``out[index[i]] += alpha * source[i]`` for ``dim=0``; repeated indices accumulate.

    The gradient of ``input`` is the output's, that of ``source`` the output's slices at ``index``
    times ``alpha``.

    >>> import dualgrad as dg
    >>> dg.index_add(dg.zeros(3, 2), 0, dg.tensor([0, 2, 0]), dg.ones(3, 2), alpha=2)
    tensor([[4., 4.],
            [0., 0.],
            [2., 2.]])
    """
    input = tensor_arg(input, "index_add")
    dim, index = _index_along(input, dim, index, "index_add", error=RuntimeError)
    x = _as_vector(input)
    source = _source_along(x, dim, index, source, "index_add")
    added = apply(SCATTER_ADD_INTO_ZEROS, source if alpha == 1 else source * alpha, _spread(index, dim, source.shape),
                  shape=x.shape, dim=dim)
    return (x + added).reshape(()) if input.ndim == 0 else input + added


def _put_along(x: Tensor, dim: int, index: Tensor, values: Any) -> Tensor:
    """``x`` with ``values`` written at the positions ``index`` along ``dim`` (the last write wins)."""
    return apply(INDEX_PUT_TENSOR, x, values, index, spec=(slice(None),) * dim + (TENSOR,))


@public(None)
def index_copy(input: Tensor, dim: int, index: Any, source: Any) -> Tensor:  # noqa: A002
    """``input`` with the slices at ``index`` along ``dim`` replaced by those of ``source`` (out of
    place): ``out[index[i]] = source[i]`` for ``dim=0``. Of repeated indices the last write wins
    (torch leaves it unspecified).

    As in torch, ``input``'s gradient is zero at the copied slices and ``source`` gets the output's
    gradient at ``index`` (every repeat of an index gets it).

    >>> import dualgrad as dg
    >>> dg.index_copy(dg.zeros(2, 3), 1, dg.tensor([2, 0]), dg.tensor([[1., 2.], [3., 4.]]))
    tensor([[2., 0., 1.],
            [4., 0., 3.]])
    """
    input = tensor_arg(input, "index_copy")
    dim, index = _index_along(input, dim, index, "index_copy")
    x = _as_vector(input)
    out = _put_along(x, dim, index, _source_along(x, dim, index, source, "index_copy"))
    return out.reshape(()) if input.ndim == 0 else out


@public(None)
def index_fill(input: Tensor, dim: int, index: Any, value: Any) -> Tensor:  # noqa: A002
    """``input`` with the slices at ``index`` along ``dim`` set to ``value`` (out of place), a number
    or a 0-d Tensor (which gets the sum of the gradient of the filled elements). Negative indices
    count from the end.

    >>> import dualgrad as dg
    >>> dg.index_fill(dg.zeros(2, 3), 1, dg.tensor([0, -1]), 5.)
    tensor([[5., 0., 5.],
            [5., 0., 5.]])
    """
    input = tensor_arg(input, "index_fill")
    dim, index = _index_along(input, dim, index, "index_fill", negative=True)
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    x = _as_vector(input)
    mask = np.zeros(x.shape[dim], dtype=bool)
    mask[index._data] = True
    out = where(_wrap(mask.reshape((-1,) + (1,) * (x.ndim - dim - 1))), value, x)
    out = out.reshape(()) if input.ndim == 0 else out
    return out if out.dtype == input.dtype else out.to(input.dtype)


@public(None)
def masked_scatter(input: Tensor, mask: Any, source: Any) -> Tensor:  # noqa: A002
    """``input`` (broadcast with ``mask``) with the elements where the bool ``mask`` holds replaced, in
    row-major order, by the first elements of ``source`` (out of place).

    The gradient of ``input`` is zero where ``mask`` holds; ``source``'s unused elements get zero.

    >>> import dualgrad as dg
    >>> dg.masked_scatter(dg.zeros(2, 2), dg.tensor([[True, False], [True, True]]), dg.tensor([1., 2., 3., 4.]))
    tensor([[1., 0.],
            [2., 3.]])
    """
    input, mask, source = (tensor_arg(t, "masked_scatter") for t in (input, mask, source))
    if mask.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype} and {source.dtype}")
    try:
        shape = np.broadcast_shapes(input.shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"masked_scatter: the shape of the mask {mask.shape} must match the shape of self "
                           f"{input.shape} (or broadcast with it)") from None
    where_set = np.broadcast_to(mask._data, shape)
    count = int(where_set.sum())
    if count > source.numel():
        raise RuntimeError("masked_scatter: Number of elements of source < number of ones in mask")
    placed = apply(INDEX_ADD_INTO_ZEROS, source.reshape(-1)[:count], shape=shape, index=(where_set,))
    return where(_wrap(where_set), placed, input)


def _flat_index(input: Tensor, index: Any, op: str) -> Tensor:  # noqa: A002
    """``index`` as a flat vector into ``input`` read as 1-D, negative entries counted from the end."""
    index = _as_index(index, op).reshape(-1)
    n = input.numel()
    bad = (index._data < -n) | (index._data >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {index._data[bad][0]} on a tensor of {n} elements.")
    return _wrap(index._data % max(n, 1)) if (index._data < 0).any() else index


@public(None)
def put(input: Tensor, index: Any, source: Any, accumulate: bool = False) -> Tensor:  # noqa: A002
    """``input`` read as 1-D with ``source``'s elements written (``accumulate=True``: added) at ``index``
    (out of place); negative indices count from the end. Without ``accumulate`` the last of repeated
    writes wins and every repeat gets the output's gradient there, as in torch.

    >>> import dualgrad as dg
    >>> dg.put(dg.zeros(2, 2), dg.tensor([0, -1, 0]), dg.tensor([1., 2., 3.]), accumulate=True)
    tensor([[4., 0.],
            [0., 2.]])
    """
    input, source = tensor_arg(input, "put"), tensor_arg(source, "put")
    index = _flat_index(input, index, "put_")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype} and source.dtype = {source.dtype}")
    flat, values = input.reshape(-1), source.reshape(-1)
    if accumulate:
        return (flat + apply(SCATTER_ADD_INTO_ZEROS, values, index, shape=flat.shape, dim=0)).reshape(input.shape)
    return _put_along(flat, 0, index, values).reshape(input.shape)


@public(None)
def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:  # noqa: A002
    """``input`` with ``values`` written (``accumulate=True``: added) at ``input[indices]`` (out of
    place), ``indices`` a tuple of integer or bool Tensors as for ``x[indices]``. ``values``
    broadcasts to the indexed shape; without ``accumulate`` repeated positions keep the last write.

    >>> import dualgrad as dg
    >>> rows, cols = dg.tensor([0, 1, 0]), dg.tensor([1, 1, 1])
    >>> dg.index_put(dg.zeros(2, 2), (rows, cols), dg.tensor([1., 2., 3.]), accumulate=True)
    tensor([[0., 4.],
            [0., 2.]])
    """
    input = tensor_arg(input, "index_put")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    check_tensor("index_put", "values", values)
    if values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {input.dtype} for "
                           f"the destination and {values.dtype} for the source.")
    tensors = [tensor_arg(i, "index_put") for i in indices]
    if any(t.dtype.kind not in "iub" for t in tensors):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    consumed = sum(t.ndim if t.dtype == np.bool_ else 1 for t in tensors)
    if consumed > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim} (got {consumed})")
    if has_batched_entry(tuple(tensors)):  # inside vmap: the shapes are checked per batch member
        shape = None
    else:
        index = tuple(t._data for t in tensors)
        try:
            shape = np.broadcast_to(np.empty((), np.bool_), input.shape)[index].shape
        except IndexError as err:
            raise IndexError(str(err).replace("axis", "dimension")) from None
        try:
            np.broadcast_shapes(values.shape, shape)
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast "
                               f"to indexing result of shape {list(shape)}") from None
    if accumulate:
        if shape is None:
            raise RuntimeError("vmap: index_put with accumulate=True does not support batched indices")
        return input + apply(INDEX_ADD_INTO_ZEROS, values.expand(shape), shape=input.shape, index=index)
    return apply(INDEX_PUT_TENSOR, input, values, *tensors, spec=(TENSOR,) * len(tensors))


# (the indexing operator: fastpath's quiet path for the common ``x[i]``; the methods come from the declarations)
METHODS: dict[str, Any] = {"__getitem__": quiet_getitem(GETITEM, getitem, make_view, _record)}
__all__ = exported(__name__)
