"""Shape ops: reshape, permute, cat, split, pad and friends. All are linear.

Each op is a ``registry.linear`` entry: its forward rule is the op applied to the
tangent and its reverse rule is the transpose (``cat`` <-> ``split``, ``pad`` <->
``narrow``, ``diagonal`` <-> ``diag_embed``, ...). Public functions check and
normalize their arguments (torch's names and semantics) so that each op's
implementation is one NumPy call. Each op has a batching rule that moves the
batch axis to the front and shifts its axis parameters by one.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import fastpath
from ...base.state import STATE
from ...tensor import Tensor, as_operand
from ...vmap import batching
from ...vmap.batching import BatchedTensor
from .._axes import normalize_axes, normalize_axis, tuple_int
from ..dispatch import apply, make_view, tensor_arg
from ..registry import Op, linear, overload, sum_to_shape
from ..surface import exported, public


def _shape_arg(shape: tuple, fn: str, arg: str) -> tuple:
    """Accept ``f(2, 3)`` and ``f((2, 3))``: ints (or one-element integer Tensors), else torch's TypeError."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(tuple_int(s, i, fn, arg) for i, s in enumerate(shape))


def _dims(dims: Any) -> tuple:
    """An int or a sequence of ints as a tuple."""
    return (int(dims),) if isinstance(dims, int) or hasattr(dims, "__index__") else tuple(dims)


def _inverse_permutation(axes: tuple) -> tuple:
    return tuple(int(i) for i in np.argsort(axes))


# -- batching rules ---------------------------------------------------------------------
def _front(x: Any, bdim: int | None) -> Any:
    """``x`` with its batch axis first: ``batch_rules.to_front``, which cannot be imported here
    because ``batch_rules`` imports this module."""
    if bdim is None or bdim == 0:
        return x
    return apply(PERMUTE, x, axes=(bdim,) + tuple(i for i in range(x.ndim) if i != bdim))


def _fronted(args: Sequence, bdims: Sequence) -> list:
    """All ``args`` with a leading batch axis; unbatched ones are broadcast to the batch size."""
    size = next(a.shape[b] for a, b in zip(args, bdims, strict=True) if b is not None)
    return [
        _front(a, b) if b is not None
        else apply(EXPAND, apply(UNSQUEEZE, as_operand(a), axis=0), shape=(size,) + np.shape(a))
        for a, b in zip(args, bdims, strict=True)
    ]


def _shifted(*axis_params: str) -> Any:
    """A batching rule for a one-input op whose params ``axis_params`` are axes (int or tuple)."""

    def rule(op: Op, args: tuple, bdims: tuple, **params: Any) -> tuple:
        for name in axis_params:
            value = params[name]
            params[name] = value + 1 if isinstance(value, int) else tuple(a + 1 for a in value)
        out = apply(op, _front(args[0], bdims[0]), **params)
        return out, (0,) * len(out) if op.multi_output else 0

    return rule


def _batched(op: Op, rule: Any) -> Op:
    """Give ``op`` the batching rule ``rule(op, args, bdims, **params)``."""
    op.batch = lambda args, bdims, **params: rule(op, args, bdims, **params)
    return op


def _reshape_batch(op: Op, args: tuple, bdims: tuple, *, shape: tuple) -> tuple:
    x = _front(args[0], bdims[0])
    return apply(op, x, shape=x.shape[:1] + shape), 0


def _expand_batch(op: Op, args: tuple, bdims: tuple, *, shape: tuple) -> tuple:
    x = _front(args[0], bdims[0])
    lead = len(shape) - (x.ndim - 1)
    if lead:
        x = apply(RESHAPE, x, shape=x.shape[:1] + (1,) * lead + x.shape[1:])
    return apply(op, x, shape=x.shape[:1] + shape), 0


def _permute_batch(op: Op, args: tuple, bdims: tuple, *, axes: tuple) -> tuple:
    return apply(op, _front(args[0], bdims[0]), axes=(0,) + tuple(a + 1 for a in axes)), 0


def _variadic_batch(op: Op, args: tuple, bdims: tuple, *, axis: int) -> tuple:
    return apply(op, *_fronted(args, bdims), axis=axis + 1), 0


def _tile_batch(op: Op, args: tuple, bdims: tuple, *, reps: tuple) -> tuple:
    x = _front(args[0], bdims[0])
    lead = len(reps) - (x.ndim - 1)
    if lead > 0:
        x = apply(RESHAPE, x, shape=x.shape[:1] + (1,) * lead + x.shape[1:])
    return apply(op, x, reps=(1,) + reps), 0


def _pad_batch(op: Op, args: tuple, bdims: tuple, *, widths: tuple, value: Any) -> tuple:
    return apply(op, _front(args[0], bdims[0]), widths=((0, 0),) + widths, value=value), 0


def _embed_batch(op: Op, args: tuple, bdims: tuple, *, shape: tuple, offset: int, axis1: int,
                 axis2: int) -> tuple:
    x = _front(args[0], bdims[0])
    return apply(op, x, shape=x.shape[:1] + shape, offset=offset, axis1=axis1 + 1, axis2=axis2 + 1), 0


def _same_batch(op: Op, args: tuple, bdims: tuple, **params: Any) -> tuple:
    """For ops acting on the last axes only (triu, tril)."""
    return apply(op, _front(args[0], bdims[0]), **params), 0


# -- implementations that are more than one NumPy call -----------------------------------------
def _split_impl(x: np.ndarray, *, sizes: tuple, axis: int) -> tuple:
    return tuple(np.split(x, np.cumsum(sizes[:-1]), axis=axis))


def _unbind_impl(x: np.ndarray, *, axis: int) -> tuple:
    """The pieces of ``x`` along ``axis`` as views of it (``[i, ...]``: a vector's pieces are 0-d views,
    not copied scalars, so writing into one writes into ``x``)."""
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[i, ...] for i in range(moved.shape[0]))


def _pad_impl(x: np.ndarray, *, widths: tuple, value: Any) -> np.ndarray:
    """Constant padding; negative widths crop (torch's ``pad``)."""
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(widths, x.shape, strict=True))]
        widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths)
    return np.pad(x, widths, constant_values=value)


def _diag_embed_impl(x: np.ndarray, *, shape: tuple, offset: int, axis1: int, axis2: int) -> np.ndarray:
    """Zeros of ``shape`` with the last axis of ``x`` on its diagonal over ``axis1``, ``axis2``."""
    out = np.zeros(shape, dtype=x.dtype)
    i = np.arange(x.shape[-1])
    np.moveaxis(out, (axis1, axis2), (-2, -1))[..., i + max(-offset, 0), i + max(offset, 0)] = x
    return out


def _diagonal_impl(x: np.ndarray, *, offset: int, axis1: int, axis2: int) -> np.ndarray:
    """``np.diagonal``, writable like its input (so in-place ops can write through the view)."""
    d = np.diagonal(x, offset, axis1, axis2)
    if x.flags.writeable:
        d.flags.writeable = True
    return d


def _narrow_impl(x: np.ndarray, *, axis: int, start: int, length: int) -> np.ndarray:
    return x[(slice(None),) * axis + (slice(start, start + length),)]


def _repeat_interleave_vjp(g: Tensor, out: Any, x: Any, *, repeats: Any, axis: int) -> Tensor:
    """Sum each run of repeated copies back onto its source element."""
    if isinstance(repeats, int):
        runs = apply(RESHAPE, g, shape=x.shape[:axis + 1] + (repeats,) + x.shape[axis + 1:])
        return runs.sum(axis=axis + 1)
    from ..indexing import INDEX_ADD_INTO_ZEROS  # indexing imports this module

    source = np.repeat(np.arange(x.shape[axis]), repeats)
    return apply(INDEX_ADD_INTO_ZEROS, g, shape=x.shape, index=(slice(None),) * axis + (source,))


def _pad_jvp(tangents: tuple, out: Any, x: Any, *, widths: tuple, value: Any) -> Tensor:
    """Padding is affine: the tangent is padded with zeros."""
    return apply(PAD, tangents[0], widths=widths, value=0)


# -- the ops -------------------------------------------------------------------------------------
# (an array's own method where the operand is one: NumPy's function adds a dispatch and a wrapper,
# which cost more than reshaping or transposing a small array)
def _reshape_impl(x: Any, shape: tuple) -> Any:
    return x.reshape(shape) if type(x) is np.ndarray else np.reshape(x, shape)


def _permute_impl(x: Any, axes: tuple) -> Any:
    return x.transpose(axes) if type(x) is np.ndarray else np.transpose(x, axes)


RESHAPE = linear("reshape", _reshape_impl,
                 (lambda g, out, x, shape: reshaped(g, x.shape),), family="shape", view=True,
                 grad_name="ViewBackward0")
EXPAND = linear("expand", lambda x, shape: np.broadcast_to(x, shape),
                (lambda g, out, x, shape: sum_to_shape(g, x.shape),), family="shape", view=True)
PERMUTE = linear("permute", _permute_impl,
                 (lambda g, out, x, axes: apply(PERMUTE, g, axes=_inverse_permutation(axes)),),
                 family="shape", view=True)
SQUEEZE = linear("squeeze", lambda x, axis: np.squeeze(x, axis),
                 (lambda g, out, x, axis: apply(RESHAPE, g, shape=x.shape),), family="shape", view=True)
UNSQUEEZE = linear("unsqueeze", lambda x, axis: np.expand_dims(x, axis),
                   (lambda g, out, x, axis: apply(SQUEEZE, g, axis=(axis,)),), family="shape", view=True)
CAT = linear("cat", lambda *xs, axis: np.concatenate(xs, axis=axis),
             lambda g, out, *xs, axis: apply(SPLIT, g, sizes=tuple(x.shape[axis] for x in xs), axis=axis),
             family="shape", promotion=0)
STACK = linear("stack", lambda *xs, axis: np.stack(xs, axis=axis),
               lambda g, out, *xs, axis: apply(UNBIND, g, axis=axis), family="shape", promotion=0)
SPLIT = linear("split", _split_impl, (lambda g, out, x, sizes, axis: apply(CAT, *g, axis=axis),),
               family="shape", multi_output=True, grad_name="SplitWithSizesBackward0")
UNBIND = linear("unbind", _unbind_impl,
                (lambda g, out, x, axis: apply(STACK, *g, axis=axis),), family="shape", multi_output=True)
FLIP = linear("flip", lambda x, axis: np.flip(x, axis),
              (lambda g, out, x, axis: apply(FLIP, g, axis=axis),), family="shape")
ROLL = linear("roll", lambda x, shift, axis: np.roll(x, shift, axis),
              (lambda g, out, x, shift, axis: apply(ROLL, g, shift=tuple(-s for s in shift), axis=axis),),
              family="shape")
TILE = linear("repeat", lambda x, reps: np.tile(x, reps),
              (lambda g, out, x, reps: _untile(g, x.shape, reps),), family="shape")
REPEAT_INTERLEAVE = linear("repeat_interleave", lambda x, repeats, axis: np.repeat(x, repeats, axis),
                           (_repeat_interleave_vjp,), family="shape")
DIAGONAL = linear("diagonal", _diagonal_impl,
                  (lambda g, out, x, offset, axis1, axis2:
                   apply(DIAG_EMBED, g, shape=x.shape, offset=offset, axis1=axis1, axis2=axis2),),
                  family="shape", view=True)
DIAG_EMBED = linear("diag_embed", _diag_embed_impl,
                    (lambda g, out, x, shape, offset, axis1, axis2:
                     apply(DIAGONAL, g, offset=offset, axis1=axis1, axis2=axis2),), family="shape")
TRIU = linear("triu", lambda x, k: np.triu(x, k), (lambda g, out, x, k: apply(TRIU, g, k=k),),
              family="shape")
TRIL = linear("tril", lambda x, k: np.tril(x, k), (lambda g, out, x, k: apply(TRIL, g, k=k),),
              family="shape")
PAD = Op("pad", _pad_impl, vjp=(lambda g, out, x, widths, value:
                                apply(PAD, g, widths=tuple((-lo, -hi) for lo, hi in widths), value=0),),
         jvp=_pad_jvp, family="shape", save_inputs=False, grad_name="ConstantPadNdBackward0")
NARROW = linear("narrow", _narrow_impl,
                (lambda g, out, x, axis, start, length:
                 apply(PAD, g, widths=_narrow_widths(x.shape, axis, start, length), value=0),),
                family="shape", view=True, grad_name="SliceBackward0")

_batched(RESHAPE, _reshape_batch)
_batched(EXPAND, _expand_batch)
_batched(PERMUTE, _permute_batch)
_batched(SQUEEZE, _shifted("axis"))
_batched(UNSQUEEZE, _shifted("axis"))
_batched(CAT, _variadic_batch)
_batched(STACK, _variadic_batch)
_batched(SPLIT, lambda op, args, bdims, sizes, axis: _split_batch(args[0], bdims[0], sizes, axis))
_batched(UNBIND, lambda op, args, bdims, axis: _unbind_batch(args[0], bdims[0], axis))
_batched(FLIP, _shifted("axis"))
_batched(ROLL, _shifted("axis"))
_batched(TILE, _tile_batch)
_batched(REPEAT_INTERLEAVE, _shifted("axis"))
_batched(DIAGONAL, _shifted("axis1", "axis2"))
_batched(DIAG_EMBED, _embed_batch)
_batched(TRIU, _same_batch)
_batched(TRIL, _same_batch)
_batched(PAD, _pad_batch)
_batched(NARROW, _shifted("axis"))

# The calls that torch records as ops of their own (its names of their nodes), with the rules above:
# reshapes that NumPy makes without copying a non-contiguous input, and those that copy
RESHAPE_ALIAS = overload(RESHAPE, "reshape_alias", "ReshapeAliasBackward0")
RESHAPE_COPY = overload(RESHAPE, "reshape_copy", "UnsafeViewBackward0")
TRANSPOSE = overload(PERMUTE, "transpose", "TransposeBackward0")
T = overload(PERMUTE, "t", "TBackward0")
SQUEEZE_DIM = overload(SQUEEZE, "squeeze_dim", "SqueezeBackward1")  # squeeze(x, 0)
SQUEEZE_DIMS = overload(SQUEEZE, "squeeze_dims", "SqueezeBackward2")  # squeeze(x, (0, 2))
SPLIT_EVEN = overload(SPLIT, "split_even", "SplitBackward0")  # split(x, 2), chunk
# The in-place shape changes (``t_``, ``squeeze_``, ...: ``inplace.restride_``) record the same rules
# under torch's names of its in-place overloads
IN_PLACE_TWINS = {op: overload(op, f"{op.name}_", grad_name) for op, grad_name in (
    (T, "TBackward1"), (TRANSPOSE, "TransposeBackward1"), (SQUEEZE, "SqueezeBackward3"),
    (SQUEEZE_DIM, "SqueezeBackward4"), (SQUEEZE_DIMS, "SqueezeBackward5"), (UNSQUEEZE, "UnsqueezeBackward1"))}


def _untile(g: Tensor, shape: tuple, reps: tuple) -> Tensor:
    """Transpose of ``tile``: sum the ``reps[i]`` copies along each axis."""
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    g = apply(RESHAPE, g, shape=tuple(n for pair in zip(reps, padded, strict=True) for n in pair))
    return g.sum(axis=tuple(range(0, 2 * len(reps), 2))).reshape(shape)


# -- split and unbind: one node, pieces that are views ---------------------------------------------
def _as_views(x: Tensor, pieces: tuple, steps: list) -> tuple:
    """Make each piece a view of ``x``, rebuilt from its base by its view ``steps`` (one-output view ops).

    The pieces share ``x``'s memory and version counter. Until an in-place change their
    ``grad_fn`` is the one multi-output node (its backward is one ``cat``/``stack``); after
    one, dispatch rebuilds them from the base, as for ``narrow`` (a batched ``x``'s
    physical pieces were made views by the batching rule).
    """
    if type(x) is BatchedTensor:
        return pieces
    for piece, step in zip(pieces, steps, strict=True):
        make_view(x, piece, step, STATE.grad_enabled)
    return pieces


def _split_views(x: Tensor, sizes: tuple, axis: int, op: Op = SPLIT) -> tuple:
    """``split`` into pieces of ``sizes`` along ``axis``; piece i is ``narrow(x, axis, start_i, sizes[i])``.

    ``op``: SPLIT, or SPLIT_EVEN for pieces of one size (torch's names of the node differ).
    """
    starts = itertools.accumulate(sizes[:-1], initial=0)
    steps = [((NARROW, {"axis": axis, "start": start, "length": n}),) for start, n in zip(starts, sizes)]
    return _as_views(x, apply(op, x, sizes=sizes, axis=axis), steps)


def _unbind_views(x: Tensor, axis: int) -> tuple:
    """``unbind`` along ``axis``; piece i is ``narrow(x, axis, i, 1)`` with that axis squeezed."""
    squeeze = (SQUEEZE, {"axis": (axis,)})  # read-only params, shared by the pieces
    steps = [((NARROW, {"axis": axis, "start": i, "length": 1}), squeeze) for i in range(x.shape[axis])]
    return _as_views(x, apply(UNBIND, x, axis=axis), steps)


def _split_batch(x: Tensor, bdim: int | None, sizes: tuple, axis: int) -> tuple:
    pieces = _split_views(_front(x, bdim), sizes, axis + 1)
    return pieces, (0,) * len(pieces)


def _unbind_batch(x: Tensor, bdim: int | None, axis: int) -> tuple:
    pieces = _unbind_views(_front(x, bdim), axis + 1)
    return pieces, (0,) * len(pieces)


def _narrow_widths(shape: tuple, axis: int, start: int, length: int) -> tuple:
    """The pad widths that put a narrowed slice back in place."""
    return tuple((start, n - start - length) if i == axis else (0, 0) for i, n in enumerate(shape))


# -- public functions: views and reshapes ---------------------------------------------------------
@public(None, inplace=False)
def reshape(x: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
    """The same elements in a new shape (one dimension may be -1), given as sizes or as ``shape=``.

    A view of ``x`` when the memory allows it, else a copy; the node's name says
    which, as torch's: ViewBackward0 (``x`` contiguous), ReshapeAliasBackward0 (a view
    of a non-contiguous ``x``) or UnsafeViewBackward0 (a copy).

    >>> import dualgrad as dg
    >>> dg.reshape(dg.arange(6.), (2, 3))
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    >>> x = dg.zeros(2, 3, requires_grad=True)
    >>> x.reshape(6).grad_fn.name(), x.t().reshape(6).grad_fn.name()
    ('ViewBackward0', 'UnsafeViewBackward0')
    """
    if shape is None and len(sizes) == 1 and type(x) is Tensor and _is_shape_of(sizes[0], x._data.size):
        return reshaped(x, sizes[0])  # (a tuple of sizes that needs no checks: ``fit_gradient``'s)
    x = tensor_arg(x, "reshape")
    return reshaped(x, _target_shape(x, sizes, shape))


def _is_shape_of(shape: Any, size: int) -> bool:
    """True if ``shape`` is a tuple of non-negative ints with ``size`` elements in all (with the fast
    paths on): what ``_target_shape`` would return for it."""
    if not fastpath.ENABLED or type(shape) is not tuple:
        return False
    for n in shape:
        if type(n) is not int or n < 0:
            return False
    return math.prod(shape) == size


def reshaped(x: Tensor, shape: tuple) -> Tensor:
    """``reshape`` to a ``shape`` known to be valid (no -1, ``x``'s number of elements): no checks."""
    return apply(_reshape_op(x, shape), x, shape=shape)


def _reshape_op(x: Tensor, shape: tuple) -> Op:
    """RESHAPE for a contiguous ``x``; else RESHAPE_ALIAS if NumPy reshapes it without a copy, RESHAPE_COPY if not."""
    if type(x) is not Tensor or x._data.flags.c_contiguous:  # (a batched tensor: its batching rule reshapes)
        return RESHAPE
    data = x._data
    try:
        np.reshape(data, shape, copy=False)
    except ValueError:
        return RESHAPE_COPY
    return RESHAPE_ALIAS


@public(None, top_level=False, inplace=False)
def view(x: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
    """``reshape`` as a view (torch's ``Tensor.view``; its node is ViewBackward0).

    >>> import dualgrad as dg
    >>> dg.zeros(2, 3).view(3, 2).shape
    (3, 2)
    """
    x = tensor_arg(x, "view")
    target = _target_shape(x, sizes, shape)
    if _reshape_op(x, target) is RESHAPE_COPY:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return apply(RESHAPE, x, shape=target)


def _target_shape(x: Tensor, sizes: tuple, shape: Any) -> tuple:
    """The shape ``reshape(x, *sizes)`` (or ``shape=``) asks for, -1 resolved (RuntimeError for another size)."""
    shape = _shape_arg(sizes if shape is None else (shape,), "reshape", "shape")
    for i, size in enumerate(shape):
        if size < -1:
            raise RuntimeError(f"invalid shape dimension {size} at index {i} of shape {list(shape)}")
    data_shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    try:
        target = np.empty(data_shape, dtype=np.bool_).reshape(shape).shape
    except ValueError as err:
        raise RuntimeError(
            f"reshape: shape {shape} is invalid for input of shape {data_shape}: {err}"
        ) from None
    return target


@public(None, inplace=False)
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim`` to ``end_dim`` (inclusive) into one.

    >>> import dualgrad as dg
    >>> dg.flatten(dg.zeros(2, 3, 4), 1).shape
    (2, 12)
    """
    x = tensor_arg(x, "flatten")
    start = normalize_axis(start_dim, x.ndim, "flatten")
    end = normalize_axis(end_dim, x.ndim, "flatten")
    if x.ndim == 0:
        return apply(RESHAPE, x, shape=(1,))
    if start > end:
        raise RuntimeError(f"flatten: start_dim ({start_dim}) cannot come after end_dim ({end_dim})")
    merged = math.prod(x.shape[start:end + 1])
    return reshaped(x, x.shape[:start] + (merged,) + x.shape[end + 1:])


@public(None, inplace=False)
def ravel(x: Tensor) -> Tensor:
    """The elements as a 1-D tensor, in row-major order (a view when the memory allows it).

    >>> import dualgrad as dg
    >>> dg.tensor([[1., 2.], [3., 4.]]).ravel()
    tensor([1., 2., 3., 4.])
    """
    x = tensor_arg(x, "ravel")
    return apply(RESHAPE, x, shape=(x.numel(),))


@public(None, inplace=False)
def expand(x: Tensor, *sizes: Any, size: Any = None) -> Tensor:
    """Broadcast ``x`` to ``sizes`` (or ``size=``) without copying (-1 keeps a dimension).

    >>> import dualgrad as dg
    >>> dg.expand(dg.tensor([1., 2.]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """
    x = tensor_arg(x, "expand")
    shape = _shape_arg(sizes if size is None else (size,), "expand", "size")
    lead = len(shape) - x.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({x.ndim})"
        )
    shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    # (NumPy's broadcasting test, spelled out: np.broadcast_shapes builds arrays to find out)
    if any(s < 0 for s in shape) or any(n != s and n != 1 and s != 1 for n, s in zip(x.shape, shape[lead:])):
        raise RuntimeError(f"expand: shape {x.shape} cannot be expanded to {shape}")
    if shape == x.shape:
        return x
    return apply(EXPAND, x, shape=shape)


@public(None, inplace=False)
def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    """NumPy's name for ``expand``.

    >>> import dualgrad as dg
    >>> dg.broadcast_to(dg.tensor([1., 2.]), (3, 2)).shape
    (3, 2)
    """
    x = tensor_arg(x, "broadcast_to")
    return expand(x, tuple(shape) if not isinstance(shape, int) else (shape,))


@public(None, inplace=False)
def permute(x: Tensor, *axes: Any, dims: Any = None) -> Tensor:
    """Reorder the dimensions (given as ints, a sequence, or ``dims=``).

    >>> import dualgrad as dg
    >>> dg.permute(dg.zeros(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    x = tensor_arg(x, "permute")
    axes = _shape_arg(axes if dims is None else (dims,), "permute", "dims")
    normalized = tuple(normalize_axis(a, x.ndim, "permute") for a in axes)
    if sorted(normalized) != list(range(x.ndim)):
        raise RuntimeError(f"permute: {axes} is not a permutation of the {x.ndim} dimensions")
    return apply(PERMUTE, x, axes=normalized)


@public(None, aliases=("swapaxes", "swapdims"), method=("swapaxes", "swapdims"), inplace=False)
def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dimensions (the last two by default).

    >>> import dualgrad as dg
    >>> dg.transpose(dg.zeros(2, 3), 0, 1).shape
    (3, 2)
    """
    x = tensor_arg(x, "transpose")
    axes = list(range(x.ndim))
    a, b = normalize_axis(dim0, x.ndim, "transpose"), normalize_axis(dim1, x.ndim, "transpose")
    if axes:  # (a 0-d tensor takes dims 0 and -1 and stays as it is)
        axes[a], axes[b] = axes[b], axes[a]
    return apply(TRANSPOSE, x, axes=tuple(axes))




def _transpose_method(self: Tensor, dim0: Any = -2, dim1: int = -1) -> Tensor:
    """``t.transpose(dim0, dim1)`` (torch's), or with one tuple of axes NumPy's ``a.transpose(axes)``
    (``permute``; duck-array code such as xarray's calls it so).

    >>> import dualgrad as dg
    >>> dg.zeros(2, 3, 4).transpose(0, 1).shape, dg.zeros(2, 3, 4).transpose((2, 0, 1)).shape
    ((3, 2, 4), (4, 2, 3))
    """
    if isinstance(dim0, (tuple, list)):
        return permute(self, dim0)
    return transpose(self, dim0, dim1)


@public(None, aliases=("movedim",), inplace=False)
def moveaxis(x: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dimensions ``source`` to positions ``destination`` (torch's ``movedim``).

    >>> import dualgrad as dg
    >>> dg.moveaxis(dg.zeros(2, 3, 4), 0, -1).shape
    (3, 4, 2)
    """
    x = tensor_arg(x, "moveaxis")
    source, destination = _dims(source), _dims(destination)
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
            f"contain the same number of dims as destination ({list(destination)} dims)"
        )
    src = [normalize_axis(a, x.ndim, "movedim") for a in source]
    dst = [normalize_axis(a, x.ndim, "movedim") for a in destination]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(
            f"movedim: repeated dim in source {list(source)} or destination {list(destination)}"
        )
    rest = iter(a for a in range(x.ndim) if a not in src)
    placed = dict(zip(dst, src, strict=True))
    return apply(PERMUTE, x, axes=tuple(placed[i] if i in placed else next(rest) for i in range(x.ndim)))




@public(None, inplace=False)
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim``.

    >>> import dualgrad as dg
    >>> dg.unsqueeze(dg.zeros(3), 0).shape
    (1, 3)
    """
    x = tensor_arg(x, "unsqueeze")
    return apply(UNSQUEEZE, x, axis=normalize_axis(dim, x.ndim + 1, "unsqueeze"))


@public(None, inplace=False)
def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """Remove dimensions of size 1 (only ``dim``, which may be a tuple, when given).

    >>> import dualgrad as dg
    >>> dg.squeeze(dg.zeros(1, 3, 1)).shape
    (3,)
    """
    x = tensor_arg(x, "squeeze")
    if dim is None:
        return apply(SQUEEZE, x, axis=tuple(i for i, n in enumerate(x.shape) if n == 1))
    axes = tuple(a for a in normalize_axes(dim, x.ndim, "squeeze") if x.ndim and x.shape[a] == 1)
    return apply(SQUEEZE_DIMS if isinstance(dim, (tuple, list)) else SQUEEZE_DIM, x, axis=axes)


# -- joining and splitting ------------------------------------------------------------------------
def _check_join(name: str, tensors: Sequence) -> list:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}: expected a sequence of Tensors, got a Tensor")
    if not len(tensors):
        if name == "cat":  # (torch's cat raises ValueError here, its other joins RuntimeError)
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{name}: expected a non-empty sequence of Tensors")
    return [_join_operand(t, i) for i, t in enumerate(tensors)]


def _join_operand(x: Any, position: int) -> Tensor:
    """A Tensor, or an array or number as one; anything else (None, a string) is torch's TypeError."""
    try:
        return as_operand(x)
    except TypeError:
        raise TypeError(f"expected Tensor as element {position} in argument 0, but got {type(x).__name__}") from None


@public(None, aliases=("concatenate", "concat"), method=False)
def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along an existing dimension; the other sizes must match.

    >>> import dualgrad as dg
    >>> dg.cat([dg.zeros(2, 3), dg.ones(1, 3)]).shape
    (3, 3)
    """
    xs = _check_join("cat", tensors)
    first = xs[0]
    if first.ndim == 0:
        raise RuntimeError("cat: zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_axis(dim if axis is None else axis, first.ndim, "cat")
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != first.ndim or x.shape[:d] + x.shape[d + 1:] != first.shape[:d] + first.shape[d + 1:]:
            raise RuntimeError(
                f"cat: Sizes of tensors must match except in dimension {d}: tensor 0 has shape "
                f"{first.shape} but tensor {i} has shape {x.shape}"
            )
    return apply(CAT, *xs, axis=d)


batching.concatenate[0] = cat  # vmap joins its chunks with it (the engine imports no op)


@public(None, method=False)
def stack(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors of equal shape along a new dimension.

    >>> import dualgrad as dg
    >>> dg.stack([dg.zeros(3), dg.ones(3)], dim=1).shape
    (3, 2)
    """
    xs = _check_join("stack", tensors)
    for i, x in enumerate(xs[1:], 1):
        if x.shape != xs[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {xs[0].shape} at entry 0 "
                f"and {x.shape} at entry {i}"
            )
    return apply(STACK, *xs, axis=normalize_axis(dim if axis is None else axis, xs[0].ndim + 1, "stack"))


@public(None, inplace=False)
def split(x: Tensor, split_size_or_sections: Any = None, dim: int = 0, *, split_size: Any = None) -> tuple:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes.

    The pieces are views of ``x`` (see ``narrow``): they share its memory and
    version counter, and an in-place change of one is seen by ``x`` and its gradient.

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.split(dg.zeros(5, 2), 2)]
    [(2, 2), (2, 2), (1, 2)]
    >>> [p.shape for p in dg.split(dg.zeros(5, 2), [1, 4])]
    [(1, 2), (4, 2)]
    """
    x = _at_least_1d(tensor_arg(x, "split"), "split expects")
    if split_size_or_sections is None:  # (Tensor.split's keyword)
        split_size_or_sections = split_size
    axis = normalize_axis(dim, x.ndim, "split")
    n = x.shape[axis]
    if isinstance(split_size_or_sections, int) or hasattr(split_size_or_sections, "__index__"):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n):
            raise RuntimeError(f"split: split_size must be positive, but got split_size={size}")
        sizes = (size,) * (n // size) + ((n % size,) if n % size else ()) if n else (0,)
        return _split_views(x, sizes, axis, SPLIT_EVEN)
    else:
        sizes = tuple(int(s) for s in split_size_or_sections)
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {axis}), but got split_sizes={list(sizes)}"
            )
    return _split_views(x, sizes, axis)


def _at_least_1d(x: Tensor, message: str, rest: str = " at least a 1-dimensional tensor") -> Tensor:
    """``x``, or torch's RuntimeError ``message + rest`` for a 0-d tensor (which has nothing to split)."""
    if x.ndim == 0:
        raise RuntimeError(message + rest)
    return x


@public(None, inplace=False)
def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most ``chunks`` pieces (views, as ``split``'s) of ``ceil(size / chunks)`` along ``dim`` (torch's rule).

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.chunk(dg.zeros(5), 3)]
    [(2,), (2,), (1,)]
    """
    x = tensor_arg(x, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    x = _at_least_1d(as_operand(x), "chunk expects")
    n = x.shape[normalize_axis(dim, x.ndim, "chunk")]
    if n == 0:
        return split(x, [0] * chunks, dim)
    return split(x, -(-n // chunks), dim)


@public(None, inplace=False)
def unbind(x: Tensor, dim: int = 0) -> tuple:
    """The slices of ``x`` along ``dim``, as a tuple of views of ``x`` (as ``split``'s pieces).

    >>> import dualgrad as dg
    >>> dg.unbind(dg.tensor([[1., 2.], [3., 4.]]), 1)
    (tensor([1., 3.]), tensor([2., 4.]))
    """
    x = tensor_arg(x, "unbind")
    return _unbind_views(x, normalize_axis(dim, x.ndim, "unbind"))


def _split_points(spec: Any, n: int) -> list:
    """The boundaries of ``tensor_split``'s pieces along an axis of size ``n``: ``sections`` or indices."""
    if isinstance(spec, Tensor):
        spec = spec.tolist()
    if hasattr(spec, "__index__"):
        sections = operator.index(spec)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size, extra = divmod(n, sections)
        return [i * size + min(i, extra) for i in range(1, sections)]
    if not isinstance(spec, Sequence):
        raise TypeError(f"tensor_split: indices_or_sections must be an int, a sequence of ints or an integer "
                        f"Tensor, got {type(spec).__name__}")
    return [min(max(i + n if i < 0 else i, 0), n) for i in map(operator.index, spec)]


@public(None, inplace=False)
def tensor_split(x: Tensor, indices_or_sections: Any = None, dim: int = 0, *, sections: Any = None,
                 indices: Any = None, tensor_indices_or_sections: Any = None) -> tuple:
    """Views of ``x`` split along ``dim`` into ``sections`` near-equal pieces or at the given indices.

    As torch's: ``n`` sections of a size ``s`` axis have sizes ``s // n + 1`` (the
    first ``s % n``) and ``s // n``; indices ``[i, j]`` give ``x[:i], x[i:j], x[j:]``
    (negative indices count from the end; out-of-order ones give empty pieces).

    >>> import dualgrad as dg
    >>> dg.tensor_split(dg.arange(7.), 3)
    (tensor([0., 1., 2.]), tensor([3., 4.]), tensor([5., 6.]))
    >>> [p.tolist() for p in dg.tensor_split(dg.arange(7.), [1, 5])]
    [[0.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0]]
    """
    x = tensor_arg(x, "tensor_split")
    if x.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    spec = next((s for s in (indices_or_sections, sections, indices, tensor_indices_or_sections)
                 if s is not None), None)
    axis = normalize_axis(dim, x.ndim, "tensor_split")
    n = x.shape[axis]
    points = _split_points(spec, n)
    return tuple(apply(NARROW, x, axis=axis, start=start, length=max(stop - start, 0))
                 for start, stop in zip([0, *points], [*points, n], strict=True))


# -- rearranging -------------------------------------------------------------------------------------
@public(None, inplace=False)
def flip(x: Tensor, *args: Any, dims: Any = None) -> Tensor:
    """Reverse the order of elements along ``dims`` (ints, a sequence or ``dims=``; all when None).

    >>> import dualgrad as dg
    >>> dg.flip(dg.tensor([[1., 2.], [3., 4.]]), 1)
    tensor([[2., 1.],
            [4., 3.]])
    """
    x = tensor_arg(x, "flip")
    if args:
        dims = args[0] if len(args) == 1 else args
    axes = tuple(range(x.ndim)) if dims is None else normalize_axes(dims, x.ndim, "flip")
    return apply(FLIP, x, axis=axes)


@public(None, inplace=False)
def fliplr(x: Tensor) -> Tensor:
    """Reverse the columns (dimension 1) of a tensor of at least 2 dimensions.

    >>> import dualgrad as dg
    >>> dg.fliplr(dg.tensor([[1., 2.], [3., 4.]]))
    tensor([[2., 1.],
            [4., 3.]])
    """
    x = tensor_arg(x, "fliplr")
    if x.ndim < 2:
        raise RuntimeError("fliplr: Input must be >= 2-d.")
    return flip(x, 1)


@public(None, inplace=False)
def flipud(x: Tensor) -> Tensor:
    """Reverse the rows (dimension 0) of a tensor of at least 1 dimension.

    >>> import dualgrad as dg
    >>> dg.flipud(dg.tensor([1., 2.]))
    tensor([2., 1.])
    """
    x = tensor_arg(x, "flipud")
    if x.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d.")
    return flip(x, 0)


@public(None, inplace=False)
def unflatten(x: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (one of them may be -1).

    >>> import dualgrad as dg
    >>> dg.unflatten(dg.zeros(2, 6), 1, (2, 3)).shape
    (2, 2, 3)
    """
    x = tensor_arg(x, "unflatten")
    axis = normalize_axis(dim, x.ndim, "unflatten")
    return reshape(x, x.shape[:axis] + tuple(sizes) + x.shape[axis + 1:])


def with_rank_at_least(x: Any, ndim: int) -> Tensor:
    """``x`` with dims added as NumPy's ``atleast_1d`` / ``_2d`` / ``_3d`` (``(n,)`` -> ``(1, n)``,
    ``(1, n, 1)``; ``(m, n)`` -> ``(m, n, 1)``)."""
    x = as_operand(x)
    if x.ndim >= ndim:
        return x
    if x.ndim == 0:
        return reshape(x, (1,) * ndim)
    if ndim == 2:
        return unsqueeze(x, 0)
    return unsqueeze(x if x.ndim == 2 else unsqueeze(x, 0), -1)


@public(None, method=False)
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dimension 1 (0 for 1-d tensors), as torch's and NumPy's.

    >>> import dualgrad as dg
    >>> dg.hstack([dg.zeros(2), dg.ones(3)]).shape
    (5,)
    """
    xs = [with_rank_at_least(t, 1) for t in _check_join("hstack", tensors)]
    return cat(xs, 0 if xs[0].ndim == 1 else 1)


@public(None, method=False)
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dimension 0, 1-d tensors as rows.

    >>> import dualgrad as dg
    >>> dg.vstack([dg.zeros(2), dg.ones(2)]).shape
    (2, 2)
    """
    return cat([with_rank_at_least(t, 2) for t in _check_join("vstack", tensors)], 0)


@public(None, method=False)
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dimension 2, after making each tensor at least 3-d.

    >>> import dualgrad as dg
    >>> dg.dstack([dg.zeros(2), dg.ones(2)]).shape
    (1, 2, 2)
    """
    return cat([with_rank_at_least(t, 3) for t in _check_join("dstack", tensors)], 2)


@public(None, inplace=False)
def roll(x: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements circularly along ``dims`` (over the flattened tensor when None).

    >>> import dualgrad as dg
    >>> dg.roll(dg.tensor([1., 2., 3.]), 1)
    tensor([3., 1., 2.])
    """
    x = tensor_arg(x, "roll")
    if dims is None:
        flat = apply(RESHAPE, x, shape=(x.size,))
        return apply(RESHAPE, roll(flat, shifts, 0), shape=x.shape)
    shifts, dims = _dims(shifts), _dims(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}"
        )
    axes = tuple(normalize_axis(d, x.ndim, "roll", scalar=False) for d in dims)
    return apply(ROLL, x, shift=shifts, axis=axes)


@public(None, method=False)
def tile(x: Tensor, dims: Any) -> Tensor:
    """Repeat ``x`` ``dims[i]`` times along each dimension (missing leading entries count as 1).

    >>> import dualgrad as dg
    >>> dg.tile(dg.tensor([1., 2.]), (2,))
    tensor([1., 2., 1., 2.])
    """
    x = tensor_arg(x, "tile")
    reps = _dims(dims)
    if any(r < 0 for r in reps):
        raise RuntimeError(f"tile: trying to create a tensor with negative dimension: repeats {reps}")
    reps = (1,) * (x.ndim - len(reps)) + reps
    return apply(TILE, x, reps=reps)


@public(None, inplace=False)
def repeat(x: Tensor, *sizes: Any) -> Tensor:
    """Torch's ``Tensor.repeat``: tile ``x`` with one count per dimension (leading new ones allowed).

    >>> import dualgrad as dg
    >>> dg.repeat(dg.tensor([1., 2.]), 2, 2)
    tensor([[1., 2., 1., 2.],
            [1., 2., 1., 2.]])
    """
    x = tensor_arg(x, "repeat")
    reps = _shape_arg(sizes, "repeat", "repeats")
    if len(reps) < x.ndim:
        raise RuntimeError(
            "repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor (got {len(reps)} repeats for a tensor of shape {x.shape})"
        )
    return tile(x, reps)


@public(None, inplace=False)
def repeat_interleave(x: Tensor, repeats: Any, dim: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (flattened when None), as ``np.repeat``.

    >>> import dualgrad as dg
    >>> dg.repeat_interleave(dg.tensor([1., 2.]), 2)
    tensor([1., 1., 2., 2.])
    >>> dg.repeat_interleave(dg.tensor([[1., 2.], [3., 4.]]), [1, 2], dim=0)
    tensor([[1., 2.],
            [3., 4.],
            [3., 4.]])
    """
    x = tensor_arg(x, "repeat_interleave")
    if dim is None:
        x, dim = apply(RESHAPE, x, shape=(x.size,)), 0
    axis = normalize_axis(dim, x.ndim, "repeat_interleave")
    counts = np.asarray(repeats._data if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise TypeError(
            f"repeat_interleave: repeats must be an int or a 1-D sequence of ints, got {repeats!r}"
        )
    if (counts < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    if counts.ndim == 1 and counts.size not in (1, x.shape[axis]):
        raise RuntimeError(
            f"repeat_interleave: repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {counts.size} and input.size({axis}) = {x.shape[axis]}"
        )
    counts = int(counts.ravel()[0]) if counts.size == 1 else tuple(int(c) for c in counts)
    return apply(REPEAT_INTERLEAVE, x, repeats=counts, axis=axis)


# -- diagonals and triangles ------------------------------------------------------------------------------
@public(None, inplace=False)
def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal over ``dim1``, ``dim2`` (above it for ``offset > 0``), as the last dimension.

    >>> import dualgrad as dg
    >>> dg.diagonal(dg.tensor([[1., 2.], [3., 4.]]))
    tensor([1., 4.])
    """
    x = tensor_arg(x, "diagonal")
    a1, a2 = normalize_axis(dim1, x.ndim, "diagonal"), normalize_axis(dim2, x.ndim, "diagonal")
    if a1 == a2:
        raise RuntimeError(f"diagonal: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(DIAGONAL, x, offset=operator.index(offset), axis1=a1, axis2=a2)


@public(None, inplace=False)
def diag_embed(x: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals over ``dim1``, ``dim2`` hold the last dimension of ``x``.

    >>> import dualgrad as dg
    >>> dg.diag_embed(dg.tensor([1., 2.]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    x = tensor_arg(x, "diag_embed")
    if x.ndim == 0:
        raise RuntimeError("diag_embed: the input must have at least 1 dimension")
    ndim = x.ndim + 1
    a1, a2 = normalize_axis(dim1, ndim, "diag_embed"), normalize_axis(dim2, ndim, "diag_embed")
    if a1 == a2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(operator.index(offset))
    rest = iter(x.shape[:-1])
    shape = tuple(n if i in (a1, a2) else next(rest) for i in range(ndim))
    return apply(DIAG_EMBED, x, shape=shape, offset=operator.index(offset), axis1=a1, axis2=a2)


@public(None, inplace=False)
def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D ``x`` on the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal.

    >>> import dualgrad as dg
    >>> dg.diag(dg.tensor([1., 2.]), 1)
    tensor([[0., 1., 0.],
            [0., 0., 2.],
            [0., 0., 0.]])
    """
    x = tensor_arg(x, "diag")
    if x.ndim == 1:
        return diag_embed(x, diagonal, 0, 1)
    if x.ndim == 2:
        return apply(DIAGONAL, x, offset=operator.index(diagonal), axis1=0, axis2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D (shape {x.shape})")


def _triangle(op: Op, x: Any, diagonal: int) -> Tensor:
    x = as_operand(x)
    if x.ndim < 2:
        raise RuntimeError(f"{op.name}: input tensor must have at least 2 dimensions, got {x.shape}")
    return apply(op, x, k=int(diagonal))


@public(None)
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dimensions (on and above the ``diagonal``-th diagonal).

    >>> import dualgrad as dg
    >>> dg.triu(dg.ones(2, 2))
    tensor([[1., 1.],
            [0., 1.]])
    """
    x = tensor_arg(x, "triu")
    return _triangle(TRIU, x, diagonal)


@public(None)
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dimensions (on and below the ``diagonal``-th diagonal).

    >>> import dualgrad as dg
    >>> dg.tril(dg.ones(2, 2))
    tensor([[1., 0.],
            [1., 1.]])
    """
    x = tensor_arg(x, "tril")
    return _triangle(TRIL, x, diagonal)


# -- padding and slicing ---------------------------------------------------------------------------------
@public(None, method=False)
def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: Any = None) -> Tensor:
    """Pad with ``value`` (0 by default); ``pad`` = (before, after) pairs from the last dimension back.

    Negative amounts crop, as in ``torch.nn.functional.pad``.

    >>> import dualgrad as dg
    >>> dg.pad(dg.ones(1, 2), (1, 0, 0, 1))
    tensor([[0., 1., 1.],
            [0., 0., 0.]])
    """
    x = tensor_arg(x, "pad")
    if mode != "constant":
        raise NotImplementedError(f"pad: only mode='constant' is supported, got mode={mode!r}")
    amounts = tuple(int(p) for p in pad)
    if len(amounts) % 2:
        raise RuntimeError(f"pad: Padding length must be divisible by 2, got {len(amounts)}")
    if len(amounts) // 2 > x.ndim:
        raise RuntimeError(
            f"pad: Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(amounts)} and input of dimension {x.ndim}"
        )
    pairs = [(amounts[i], amounts[i + 1]) for i in range(0, len(amounts), 2)][::-1]
    widths = ((0, 0),) * (x.ndim - len(pairs)) + tuple(pairs)
    for axis, ((lo, hi), n) in enumerate(zip(widths, x.shape, strict=True)):
        if n + lo + hi < 0:
            raise RuntimeError(
                f"pad: The input size {n}, plus negative padding {lo} and {hi} resulted in a negative "
                f"output size, which is invalid. Check dimension {axis} of your input of shape {x.shape}."
            )
    return apply(PAD, x, widths=widths, value=0 if value is None else value)


@public(None, inplace=False)
def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start + length`` of ``dim`` (a view; ``start`` may be negative).

    >>> import dualgrad as dg
    >>> dg.narrow(dg.arange(5.), 0, 1, 3)
    tensor([1., 2., 3.])
    """
    x = _at_least_1d(tensor_arg(x, "narrow"), "narrow() cannot be applied to a 0-dim tensor.", "")
    axis = normalize_axis(dim, x.ndim, "narrow")
    n = x.shape[axis]
    begin = start + n if start < 0 and -n <= start else start
    if not 0 <= begin <= n:
        raise IndexError(f"narrow: start ({start}) out of range for dimension {axis} of size {n}")
    if length < 0 or begin + length > n:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return apply(NARROW, x, axis=axis, start=int(begin), length=int(length))


@public(None, inplace=False)
def t(x: Tensor) -> Tensor:
    """Transpose of a matrix; a tensor of fewer than two dimensions as it is (torch's ``t``).

    >>> import dualgrad as dg
    >>> dg.t(dg.zeros(2, 3)).shape
    (3, 2)
    """
    x = tensor_arg(x, "t")
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return apply(T, x, axes=(1, 0) if x.ndim == 2 else tuple(range(x.ndim)))


# (methods without a public function of their own; the others come from the declarations)
METHODS: dict[str, Any] = {
    "view_as": lambda self, other: view(self, tensor_arg(other, "view_as").shape),
    "reshape_as": lambda self, other: reshape(self, tensor_arg(other, "reshape_as").shape),
    "expand_as": lambda self, other: expand(self, tensor_arg(other, "expand_as").shape),
    "transpose": _transpose_method,
    "__reversed__": lambda self: self if self.ndim == 0 else flip(self, 0),
    "tile": lambda self, *dims: tile(self, dims[0] if len(dims) == 1 else dims),
}
PROPERTIES: dict[str, Any] = {
    "T": lambda self: permute(self, tuple(range(self.ndim - 1, -1, -1))),
    "mT": lambda self: transpose(self, -2, -1),
    "mH": lambda self: transpose(self, -2, -1).conj(),
    "H": lambda self: transpose(self, 0, 1).conj(),
}
__all__ = exported(__name__)
