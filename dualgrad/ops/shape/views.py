"""torch's views of complex tensors as real pairs (``view_as_real``, ``view_as_complex``), sliding
windows (``Tensor.unfold``), and compositions of shape and index ops that torch offers under their
own names (``broadcast_tensors``, ``column_stack``, ``hsplit``, ``combinations``, ``isin``,
``narrow_copy``, ...).

``view_as_real``, ``view_as_complex`` and ``unfold`` are ops of their own (views sharing memory with
their input); the rest are built from existing ops, so gradients, tangents and vmap come from those.
dualgrad has no lazy conjugate or negative bits: ``conj`` computes (``conj_physical`` is the same), so
``is_conj``/``is_neg`` are always False and ``resolve_conj``/``resolve_neg`` return the tensor itself.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...base.checks import check_number_fits, is_number
from ...base.dtypes import torch_dtype_name
from ...factories import tensor as _tensor
from ...factories import zeros
from ...tensor import Tensor, int_arg
from ...vmap.batching import BatchedTensor
from .._axes import normalize_axis
from ..batch_rules import to_front
from ..dispatch import apply, tensor_arg
from ..elementwise.core import _where, conj, sub, to_dtype
from ..indexing import index_add, index_select, select
from ..registry import elementwise, linear, name_by_operands, nondifferentiable, sum_to_shape
from ..surface import exported, public
from .core import expand, hstack, moveaxis, narrow, reshape, tensor_split, transpose, vstack


# -- complex tensors as real pairs --------------------------------------------------------------------
def _view_as_real_impl(z: np.ndarray) -> np.ndarray:
    """The real and imaginary parts as a trailing axis of 2, sharing ``z``'s memory."""
    if z.dtype.kind != "c":
        raise ValueError("view_as_real needs a complex array")
    return z[..., np.newaxis].view(z.real.dtype)


def _view_as_complex_impl(x: np.ndarray) -> np.ndarray:
    """Pairs along the last axis as complex numbers, sharing ``x``'s memory when its layout allows
    (the public function checks torch's layout rules; rules may pass any layout, then a copy)."""
    if x.strides[-1] != x.itemsize:
        x = np.ascontiguousarray(x)
    return x.view(np.result_type(x.dtype, np.complex64))[..., 0]


def _view_as_complex_batch(args: tuple, bdims: tuple) -> tuple:
    x, b = args[0], bdims[0]
    if b == x.ndim - 1:  # (the pairs must stay last)
        return apply(VIEW_AS_COMPLEX, to_front(x, b)), 0
    return apply(VIEW_AS_COMPLEX, x), b


VIEW_AS_REAL = linear("view_as_real", _view_as_real_impl, (lambda g, out, z: apply(VIEW_AS_COMPLEX, g),),
                      family="shape", view=True, batch=lambda args, bdims: (apply(VIEW_AS_REAL, args[0]), bdims[0]))
VIEW_AS_COMPLEX = linear("view_as_complex", _view_as_complex_impl, (lambda g, out, x: apply(VIEW_AS_REAL, g),),
                         family="shape", view=True, batch=_view_as_complex_batch)


@public(None, method=False)
def view_as_real(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """A complex tensor as a real one with a trailing axis of 2 (real, imaginary): a view, so an
    in-place change of either shows in the other.

    >>> import dualgrad as dg
    >>> z = dg.tensor([1 + 2j, 3 - 4j])
    >>> r = dg.view_as_real(z)
    >>> r
    tensor([[ 1.,  2.],
            [ 3., -4.]])
    >>> r[0, 1] = 5.
    >>> z
    tensor([1.+5.j, 3.-4.j])
    """
    z = tensor_arg(input, "view_as_real")
    if z.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(VIEW_AS_REAL, z)


@public(None, method=False)
def real(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The real part: of a complex tensor a view (torch's ``view_as_real(z).select(-1, 0)``, so an
    in-place change of either shows in the other), a real tensor itself.

    >>> import dualgrad as dg
    >>> z = dg.tensor([1. + 2.j, 3. - 4.j])
    >>> dg.real(z)
    tensor([1., 3.])
    >>> z.real = dg.tensor([5., 6.])
    >>> z
    tensor([5.+2.j, 6.-4.j])
    """
    x = tensor_arg(input, "real")
    return select(view_as_real(x), -1, 0) if x.dtype.kind == "c" else x


@public(None, method=False)
def imag(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The imaginary part of a complex tensor, a view as ``real``'s; a real tensor has none.

    >>> import dualgrad as dg
    >>> z = dg.tensor([1. + 2.j, 3. - 4.j])
    >>> z.imag[1] = 0.
    >>> z
    tensor([1.+2.j, 3.+0.j])
    """
    x = tensor_arg(input, "imag")
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(view_as_real(x), -1, 1)


def _imag_attribute(self: Tensor) -> Tensor:
    """``t.imag``: torch's view of a complex tensor's imaginary part; of a real tensor, read-only zeros
    (NumPy's ``ndarray.imag``; torch raises), so that ``hasattr(t, "imag")`` is True, as duck-array
    libraries such as xarray check (``dualgrad.imag(t)`` keeps torch's error)."""
    if self.dtype.kind == "c":
        return imag(self)
    zeros = np.zeros(self.shape, self.dtype)
    zeros.flags.writeable = False
    return Tensor(zeros)


def _set_real(self: Tensor, value: Any) -> None:
    real(self).copy_(value)


def _set_imag(self: Tensor, value: Any) -> None:
    imag(self).copy_(value)


@public(None, method=False)
def view_as_complex(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """A real tensor whose last axis has size 2 and stride 1 as a complex tensor (a view, see
    ``view_as_real``); other strides and the storage offset must be even.

    >>> import dualgrad as dg
    >>> dg.view_as_complex(dg.tensor([[1., 2.], [3., -4.]]))
    tensor([1.+2.j, 3.-4.j])
    """
    x = tensor_arg(input, "view_as_complex")
    if x.dtype not in (np.float16, np.float32, np.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {torch_dtype_name(x.dtype)}")
    if x.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if isinstance(x, BatchedTensor):  # (its memory holds the whole batch: the layout rules are physical)
        return apply(VIEW_AS_COMPLEX, x)
    strides = x.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if storage_offset(x) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    if x.dtype == np.float16:
        raise RuntimeError("view_as_complex: NumPy has no complex32 (half-precision complex) dtype")
    return apply(VIEW_AS_COMPLEX, x)


@public(None, top_level=False, inplace=False)
def storage_offset(input: Any) -> int:  # noqa: A002 - torch's name
    """The position (in elements of ``input``'s dtype) of its first element in the memory of the
    tensor it is a view of (0 for a tensor that is not a view).

    >>> import dualgrad as dg
    >>> x = dg.arange(6.)
    >>> x[2:].storage_offset(), x.storage_offset()
    (2, 0)
    """
    x = tensor_arg(input, "storage_offset")
    root = x if x._view is None else x._view.base
    start = np.lib.array_utils.byte_bounds(root._data)[0]
    return (x._data.__array_interface__["data"][0] - start) // x.itemsize


@public(None, inplace=False)
def is_conj(input: Any) -> bool:  # noqa: A002 - torch's name
    """False: dualgrad has no lazy conjugate bit (``conj`` computes the conjugate).

    >>> import dualgrad as dg
    >>> dg.tensor([1j]).conj().is_conj()
    False
    """
    tensor_arg(input, "is_conj")
    return False


@public(None, inplace=False)
def is_neg(input: Any) -> bool:  # noqa: A002 - torch's name
    """False: dualgrad has no lazy negative bit.

    >>> import dualgrad as dg
    >>> dg.is_neg(dg.tensor([1.]))
    False
    """
    tensor_arg(input, "is_neg")
    return False


@public(None, inplace=False)
def resolve_conj(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The tensor itself: with no lazy conjugate bit there is nothing to resolve (see ``is_conj``).

    >>> import dualgrad as dg
    >>> z = dg.tensor([1j])
    >>> z.resolve_conj() is z
    True
    """
    return tensor_arg(input, "resolve_conj")


@public(None, inplace=False)
def resolve_neg(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The tensor itself: with no lazy negative bit there is nothing to resolve (see ``is_neg``).

    >>> import dualgrad as dg
    >>> x = dg.tensor([1.])
    >>> dg.resolve_neg(x) is x
    True
    """
    return tensor_arg(input, "resolve_neg")


@public(None, inplace=False)
def adjoint(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The conjugate transpose of the last two dimensions (``mH``).

    >>> import dualgrad as dg
    >>> dg.adjoint(dg.tensor([[1j, 2.]]))
    tensor([[0.-1.j],
            [2.-0.j]])
    """
    x = tensor_arg(input, "adjoint")
    if x.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{x.ndim}-D tensor.")
    return transpose(x, -2, -1).conj()


# -- sliding windows ---------------------------------------------------------------------------------
def _unfold_impl(x: np.ndarray, *, axis: int, size: int, step: int) -> np.ndarray:
    """Windows of ``size`` every ``step`` along ``axis`` (a new trailing axis), sharing ``x``'s memory."""
    count = (x.shape[axis] - size) // step + 1
    shape = x.shape[:axis] + (count,) + x.shape[axis + 1:] + (size,)
    strides = x.strides[:axis] + (x.strides[axis] * step,) + x.strides[axis + 1:] + (x.strides[axis],)
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=x.flags.writeable)


def _unfold_vjp(g: Tensor, out: Any, x: Any, *, axis: int, size: int, step: int) -> Tensor:
    """Each window's gradient added back at its positions (windows may overlap)."""
    count = g.shape[axis]
    g = reshape(moveaxis(g, -1, axis + 1), x.shape[:axis] + (count * size,) + x.shape[axis + 1:])
    positions = (np.arange(count)[:, None] * step + np.arange(size)).reshape(-1)
    return index_add(zeros(x.shape, dtype=g.dtype), axis, _tensor(positions), g)


def _unfold_batch(args: tuple, bdims: tuple, *, axis: int, size: int, step: int) -> tuple:
    b = bdims[0]
    return apply(UNFOLD, args[0], axis=axis + (b <= axis), size=size, step=step), b


UNFOLD = linear("unfold", _unfold_impl, (_unfold_vjp,), family="shape", view=True, batch=_unfold_batch)


@public(None, top_level=False, inplace=False)
def unfold(input: Any, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002 - torch's names
    """``Tensor.unfold``: the windows of ``size`` elements taken every ``step`` along ``dimension``,
    as a new last dimension (a view: windows may overlap and share elements).

    >>> import dualgrad as dg
    >>> dg.arange(5.).unfold(0, 2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    x = tensor_arg(input, "unfold")
    axis = normalize_axis(dimension, max(x.ndim, 1), "unfold")
    length = x.shape[axis] if x.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if x.ndim == 0:
        return reshape(x, (1,))[:size]
    return apply(UNFOLD, x, axis=axis, size=size, step=step)


@public(None, top_level=False, inplace=False)
def sum_to_size(input: Any, *size: Any) -> Tensor:  # noqa: A002 - torch's name
    """The sum of ``input`` down to ``size``, which must expand to ``input``'s shape (the inverse of
    ``expand``, as a gradient is summed back to an input's shape).

    >>> import dualgrad as dg
    >>> dg.arange(6.).reshape(2, 3).sum_to_size(1, 3)
    tensor([[3., 5., 7.]])
    """
    x = tensor_arg(input, "sum_to_size")
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = x.ndim - len(shape)
    if lead < 0 or any(n not in (1, m) for n, m in zip(shape, x.shape[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(x.shape)}}}.")
    return x if shape == x.shape else sum_to_shape(x, shape)


# -- broadcasting ------------------------------------------------------------------------------------
@public(None, method=False)
def broadcast_shapes(*shapes: Any) -> tuple:
    """The shape that tensors of the given shapes (tuples, or ints for 1-d shapes) broadcast to.

    >>> import dualgrad as dg
    >>> dg.broadcast_shapes((3, 1), (4,), 1)
    (3, 4)
    """
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    result: list = []
    for i, shape in enumerate(shapes):
        if any(n < 0 for n in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        result = [1] * (len(shape) - len(result)) + result
        for k in range(1, len(shape) + 1):
            n, m = shape[-k], result[-k]
            if n != m and n != 1 and m != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {-k}! Mismatching argument "
                                   f"at index {i} had {shape}; but expected shape should be broadcastable to {result}")
            if m == 1:
                result[-k] = n
    return tuple(result)


@public(None, method=False)
def broadcast_tensors(*tensors: Any) -> tuple:
    """The tensors expanded to their common broadcast shape (views, as ``expand``'s).

    >>> import dualgrad as dg
    >>> a, b = dg.broadcast_tensors(dg.tensor([[1.], [2.]]), dg.tensor([3., 4., 5.]))
    >>> a.shape, b
    ((2, 3), tensor([[3., 4., 5.],
            [3., 4., 5.]]))
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [tensor_arg(t, "broadcast_tensors") for t in tensors]
    shape: tuple = ()
    for t in ts:
        rank = max(len(shape), t.ndim)
        a, b = (1,) * (rank - len(shape)) + shape, (1,) * (rank - t.ndim) + t.shape
        for d, (n, m) in enumerate(zip(a, b)):
            if n != m and n != 1 and m != 1:
                raise RuntimeError(f"The size of tensor a ({n}) must match the size of tensor b ({m}) at "
                                   f"non-singleton dimension {d}")
        shape = tuple(m if n == 1 else n for n, m in zip(a, b))
    return tuple(t if t.shape == shape else expand(t, shape) for t in ts)


# -- stacking and splitting -------------------------------------------------------------------------
@public(None, method=False)
def column_stack(tensors: Any) -> Tensor:
    """The tensors side by side as columns: 0-d and 1-d tensors become columns, others are joined
    along dimension 1 (``hstack``).

    >>> import dualgrad as dg
    >>> dg.column_stack([dg.tensor([1, 2]), dg.tensor([[3], [4]])])
    tensor([[1, 3],
            [2, 4]])
    """
    ts = [tensor_arg(t, "column_stack") for t in tensors]
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return hstack([reshape(t, (-1, 1)) if t.ndim < 2 else t for t in ts])


@public(None, method=False)
def row_stack(tensors: Any) -> Tensor:
    """Alias of ``vstack``.

    >>> import dualgrad as dg
    >>> dg.row_stack([dg.tensor([1, 2]), dg.tensor([3, 4])])
    tensor([[1, 2],
            [3, 4]])
    """
    return vstack(tensors)


def _split_along(x: Any, spec: Any, dim: int, rank: int, fn: str) -> tuple:
    """``tensor_split`` along ``dim``, where an int ``spec`` must divide the size exactly (torch's rule
    for ``hsplit``, ``vsplit``, ``dsplit``); ``x`` needs ``rank`` dimensions."""
    x = tensor_arg(x, fn)
    if x.ndim < rank:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {rank} dimension, but got a tensor with "
                           f"{x.ndim} dimensions!")
    if isinstance(spec, int) and (spec == 0 or x.shape[dim] % spec):
        raise RuntimeError(f"torch.{fn} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{x.shape[dim]} is not divisible by the split_size {spec}!")
    return tensor_split(x, spec, dim)


@public(None, inplace=False)
def hsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002 - torch's name
    """Views of ``input`` split along dimension 1 (0 for a 1-d tensor): into equal sections, or at indices.

    >>> import dualgrad as dg
    >>> dg.hsplit(dg.arange(4.), 2)
    (tensor([0., 1.]), tensor([2., 3.]))
    """
    x = tensor_arg(input, "hsplit")
    if x.ndim == 0:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
                           "dimensions!")
    return _split_along(x, indices_or_sections, 1 if x.ndim > 1 else 0, 1, "hsplit")


@public(None, inplace=False)
def vsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002 - torch's name
    """Views of ``input`` (at least 2-d) split along dimension 0.

    >>> import dualgrad as dg
    >>> dg.vsplit(dg.arange(4.).reshape(2, 2), [1])
    (tensor([[0., 1.]]), tensor([[2., 3.]]))
    """
    return _split_along(input, indices_or_sections, 0, 2, "vsplit")


@public(None, inplace=False)
def dsplit(input: Any, indices_or_sections: Any) -> tuple:  # noqa: A002 - torch's name
    """Views of ``input`` (at least 3-d) split along dimension 2.

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.dsplit(dg.zeros(1, 2, 4), 2)]
    [(1, 2, 2), (1, 2, 2)]
    """
    return _split_along(input, indices_or_sections, 2, 3, "dsplit")


# -- index construction ------------------------------------------------------------------------------
def _triangle_indices(fn: str, pick: Any, row: int, col: int, offset: int, dtype: Any) -> Tensor:
    row, col, offset = int_arg(row, fn, "row", 1), int_arg(col, fn, "col", 2), int_arg(offset, fn, "offset", 3)
    for name, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{name} must be non-negative, got{n}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise NotImplementedError(f'"{fn}" not implemented for \'{torch_dtype_name(dtype)}\'')
    return _tensor(np.stack(pick(row, offset, col)).astype(dtype).reshape(2, -1))


@public(None, method=False)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = np.int64) -> Tensor:
    """The (row, column) indices of the lower triangle (on and below diagonal ``offset``) of a
    ``row x col`` matrix, as a ``2 x N`` tensor in row-major order.

    >>> import dualgrad as dg
    >>> dg.tril_indices(3, 3)
    tensor([[0, 1, 1, 2, 2, 2],
            [0, 0, 1, 0, 1, 2]])
    """
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


@public(None, method=False)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = np.int64) -> Tensor:
    """The (row, column) indices of the upper triangle (on and above diagonal ``offset``) of a
    ``row x col`` matrix, as a ``2 x N`` tensor in row-major order.

    >>> import dualgrad as dg
    >>> dg.triu_indices(2, 3, 1)
    tensor([[0, 0, 1],
            [1, 2, 2]])
    """
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


@public(None, method=False)
def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of the elements of a 1-d tensor, one per row, in the order of
    ``itertools.combinations`` (``combinations_with_replacement`` with ``with_replacement``);
    differentiable (an ``index_select``).

    >>> import dualgrad as dg
    >>> dg.combinations(dg.tensor([1., 2., 3.]))
    tensor([[1., 2.],
            [1., 3.],
            [2., 3.]])
    """
    x = tensor_arg(input, "combinations")
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return x[:0]
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    picks = np.array(list(choose(range(x.shape[0]), r)), dtype=np.int64).reshape(-1)
    return reshape(index_select(x, 0, _tensor(picks)), (-1, r))


@public(None, method=False)
def unravel_index(indices: Any, shape: Any) -> tuple:
    """The coordinates in an array of ``shape`` of flat (row-major) ``indices``, one integer tensor
    per dimension; indices outside ``[0, numel)`` wrap around (as Python's negative indices).

    >>> import dualgrad as dg
    >>> dg.unravel_index(dg.tensor([4, 1, -1]), (2, 3))
    (tensor([1, 0, 1]), tensor([1, 1, 2]))
    """
    i = tensor_arg(indices, "unravel_index")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if i.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{i.dtype.name}")
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if not shape:
        return ()
    total = int(np.prod(shape))
    i = i % total if total else i
    coords = []
    for n in reversed(shape):
        coords.append(i % n if n else i)
        i = i // n if n else i
    return tuple(reversed(coords))


ISIN = nondifferentiable("isin", lambda x, y, invert: np.isin(x, y, invert=invert), family="indexing",
                         batch=lambda args, bdims, invert: _isin_batch(args, bdims, invert))


def _isin_batch(args: tuple, bdims: tuple, invert: bool) -> tuple:
    """Elements batched only: one call. Test elements batched: compare each example's elements with
    its own test elements (an extra trailing axis)."""
    (x, y), (bx, by) = args, bdims
    if by is None:
        return apply(ISIN, x, y, invert=invert), bx
    y = to_front(y, by).flatten(1)
    x = to_front(x, bx) if bx is not None else x.unsqueeze(0)
    found = (x.unsqueeze(-1) == y.reshape(y.shape[:1] + (1,) * (x.ndim - 1) + y.shape[1:])).any(-1)
    return (~found if invert else found), 0


@public(None, method=False)
def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """For each element, whether it is among ``test_elements`` (compared in the promoted dtype);
    one of the two may be a number. ``invert`` gives the opposite; ``assume_unique`` is accepted for
    torch compatibility (the result does not depend on it).

    >>> import dualgrad as dg
    >>> dg.isin(dg.tensor([1, 2, 3]), dg.tensor([2., 3.5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__})")
    x, y = (a if isinstance(a, Tensor) else _tensor(a) for a in (elements, test_elements))
    for t in (x, y):
        if t.dtype.kind == "c":
            raise RuntimeError(f"Unsupported input type encountered for isin(): {torch_dtype_name(t.dtype)}")
    return apply(ISIN, x, y, invert=invert)


@public(None, method=False)
def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002 - torch's names
    """``other - alpha * input`` (``sub`` with its operands swapped).

    >>> import dualgrad as dg
    >>> dg.rsub(dg.tensor([1., 2.]), 5., alpha=2)
    tensor([3., 1.])
    """
    return sub(other, input, alpha=alpha)


@public(None, inplace=False)
def narrow_copy(input: Any, dim: int, start: int, length: int) -> Tensor:  # noqa: A002 - torch's name
    """``narrow``'s slice as a new tensor (not a view), with narrow's checks.

    >>> import dualgrad as dg
    >>> x = dg.arange(6.).reshape(2, 3)
    >>> y = dg.narrow_copy(x, 1, 1, 2)
    >>> y, y.storage_offset()
    (tensor([[1., 2.],
            [4., 5.]]), 0)
    """
    return narrow(input, dim, start, length).clone()


@public(None)
def conj_physical(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The complex conjugate, computed (as ``conj``: dualgrad has no lazy conjugate bit); a real or
    integer tensor is returned as it is.

    >>> import dualgrad as dg
    >>> z = dg.tensor([1 + 2j])
    >>> dg.conj_physical(z), dg.conj_physical(z).is_conj()
    (tensor([1.-2.j]), False)
    """
    return conj(tensor_arg(input, "conj_physical"))


@public(None, inplace=False)
def masked_fill(input: Any, mask: Any, value: Any) -> Tensor:  # noqa: A002 - torch's name
    """``value`` where ``mask`` is True, ``input`` elsewhere (``mask``, a bool tensor, broadcasts to
    ``input``); the result has ``input``'s dtype (``value``, a number or a 0-d tensor, is cast to it).

    >>> import dualgrad as dg
    >>> dg.masked_fill(dg.tensor([1., 2.]), dg.tensor([True, False]), 0.)
    tensor([0., 2.])
    >>> dg.tensor([1, 2]).masked_fill(dg.tensor([True, False]), 2.7)
    tensor([2, 2])
    """
    input = tensor_arg(input, "masked_fill")  # noqa: A001
    _check_masked_fill(input, mask, value)
    return to_dtype(apply(MASKED_FILL, input, mask, value), input.dtype)


def _masked_fill_jvp(tangents: tuple, out: Any, x: Any, mask: Any, value: Any) -> Tensor:
    """The tangent of ``x`` with that of ``value`` where ``mask`` is True (selected, not multiplied)."""
    tx, _, tv = tangents
    return _where(mask, 0.0 if tv is None else tv, 0.0 if tx is None else tx)


# ``where(mask, value, input)`` with torch's inputs and names: MaskedFillBackward0 for a number value
# (an attribute of the node), MaskedFillBackward1 for a tensor value
MASKED_FILL = elementwise(
    "masked_fill", lambda x, mask, value: np.where(mask, value, x),
    (lambda out, x, mask, value: ~mask, None, lambda out, x, mask, value: mask),
    vjp=(lambda g, out, x, mask, value: _where(mask, 0.0, g), None,
         lambda g, out, x, mask, value: _where(mask, g, 0.0)),
    jvp=_masked_fill_jvp, save_inputs=lambda needs: (False, True, False), arg_names=("self", "mask", "value"),
    grad_name_for=name_by_operands({(True, True, True): "MaskedFillBackward1"}),
)


def _check_masked_fill(input: Tensor, mask: Any, value: Any) -> None:  # noqa: A002 - torch's name
    """torch's errors of ``masked_fill`` (and ``masked_fill_``): a mask that is not a bool tensor, a value
    that is neither a number nor a 0-d tensor, a number the dtype of ``input`` cannot hold."""
    if isinstance(mask, Tensor) and mask.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
    elif not is_number(value):
        raise TypeError(f"masked_fill() received an invalid combination of arguments - got (Tensor, "
                        f"{type(value).__name__}), but expected one of: (Tensor mask, Tensor value), "
                        "(Tensor mask, Number value)")
    else:
        check_number_fits(value, input.dtype)


PROPERTIES: dict[str, Any] = {"real": property(real, _set_real), "imag": property(_imag_attribute, _set_imag)}
__all__ = exported(__name__)
