"""torch's reducing scatters (``scatter_reduce``, ``index_reduce``), the scatters of a slice, a
selection or a diagonal (``slice_scatter``, ``select_scatter``, ``diagonal_scatter``) and
``fill_diagonal_``.

All are compositions of existing ops. ``scatter_reduce`` lays the values that land on each target
in one row of a table (``index_put``, padded with the reduction's identity, the target's own value
first with ``include_self``) and reduces the rows with ``sum``, ``prod``, ``amax``, ``amin`` or a
mean: the gradients are those ops' (ties of ``amax``/``amin`` share the gradient evenly, a product
with zeros differentiates exactly), as torch's, and they are differentiable again. The grouping
reads the index, so under ``vmap`` the index must not be batched (the values may be).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..factories import full
from ..factories import tensor as _tensor
from ..tensor import Tensor
from ..vmap.batching import BatchedTensor
from ._axes import normalize_axis
from .dispatch import apply, tensor_arg
from .elementwise.core import floor_divide, where
from .indexing import (
    INDEX_PUT_TENSOR,
    TENSOR,
    _as_index,
    _gather_index,
    _put_along,
    _source_along,
    _spread,
    check_scatter_bounds,
    index_put,
)
from .inplace import _inplace
from .shape.core import cat, diagonal, moveaxis
from .surface import exported, public

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dtype: np.dtype) -> Any:
    """The padding that does not change ``reduce``."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind in "fc" else np.iinfo(dtype)
    low, high = (-np.inf, np.inf) if dtype.kind in "fc" else (info.min, info.max)
    return low if reduce == "amax" else high


def _groups(index: np.ndarray, dim: int, shape: tuple) -> tuple:
    """For each element of ``index``: its flat target in ``shape`` and its rank among the elements
    with that target (in row-major order); and the number of elements per target."""
    targets = np.ravel_multi_index(_gather_index(index, dim), shape).ravel()
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    rank = np.empty_like(targets)
    rank[order] = np.arange(targets.size) - np.searchsorted(ordered, ordered)
    return targets, rank, np.bincount(targets, minlength=int(np.prod(shape)))


def _check_scatter(x: Tensor, dim: int, index: Tensor, src: Tensor, op: str) -> None:
    """torch's checks of ``scatter``-like arguments (dtypes, ranks, sizes, index bounds)."""
    if src.dtype != x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if isinstance(index, BatchedTensor):
        raise RuntimeError(f"{op}: vmap over the index is not supported (the grouping reads its values); "
                           "batch the values instead")
    if not index.ndim == x.ndim == src.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if any(n > m for d, (n, m) in enumerate(zip(index.shape, x.shape)) if d != dim) or \
            any(n > m for n, m in zip(index.shape, src.shape)):
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart from "
                           f"dimension {dim} and to be no larger size than src {list(src.shape)}")
    check_scatter_bounds(index, dim, x.shape[dim])


def _reduce_into(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    """``x`` with the values of ``src`` reduced into the targets ``index`` gives along ``dim``."""
    targets, rank, counts = _groups(index._data, dim, x.shape)
    width = int(counts.max(initial=0)) + include_self
    flat = x.reshape(-1, 1)
    table = full((flat.shape[0], width - include_self), _identity(reduce, x.dtype), dtype=x.dtype)
    if include_self:
        table = cat([flat, table], 1)
    table = index_put(table, (_tensor(targets), _tensor(rank + include_self)), src.reshape(-1))
    if reduce == "mean":
        total, n = table.sum(-1), _tensor(np.maximum(counts + include_self, 1), dtype=x.dtype)
        reduced = floor_divide(total, n) if x.dtype.kind in "iub" else total / n
    else:
        reduced = getattr(table, reduce)(-1)
    if not include_self:
        reduced = where(_tensor(counts > 0), reduced, flat.reshape(-1))
    return reduced.reshape(x.shape)


@public(None)
def scatter_reduce(input: Any, dim: int, index: Any, src: Any, reduce: str, *,  # noqa: A002 - torch's names
                   include_self: bool = True) -> Tensor:
    """``input`` with the elements of ``src`` reduced into the positions ``index`` gives along
    ``dim`` (``out[index[i][j]][j] = reduce(out[...], src[i][j])`` for ``dim=0``): ``reduce`` is
    ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``; without ``include_self`` the
    original values of the positions written to take no part. An integer mean rounds down.
    Differentiable in ``input`` and ``src``: tied extremes share the gradient evenly, as torch's
    (without ``include_self``, torch also counts the target's own value among the ties although it
    gets no gradient; here only the values taking part count, so the shares add up to the gradient).

    >>> import dualgrad as dg
    >>> x, index = dg.tensor([1., 2., 3., 4.]), dg.tensor([0, 1, 0, 1, 3])
    >>> src = dg.tensor([5., -1., 2., 7., 2.])
    >>> x.scatter_reduce(0, index, src, "amax"), x.scatter_reduce(0, index, src, "sum", include_self=False)
    (tensor([5., 7., 3., 4.]), tensor([7., 6., 3., 2.]))
    """
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(include_self, bool):
        raise TypeError(f"scatter_reduce(): argument 'include_self' must be bool, not {type(include_self).__name__}")
    x, src = tensor_arg(input, "scatter_reduce"), tensor_arg(src, "scatter_reduce")
    if isinstance(index, Tensor) and index.dtype.kind not in "iu":
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    index = _as_index(index, "scatter")
    dim = normalize_axis(dim, max(x.ndim, 1), "scatter_reduce")
    if x.ndim == 0:
        return _reduce_vector(x, index, src, reduce, include_self)
    _check_scatter(x, dim, index, src, "scatter_reduce")
    src = src[tuple(slice(0, n) for n in index.shape)]
    return _reduce_into(x, dim, index, src, reduce, include_self)


def _reduce_vector(x: Tensor, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    """A 0-d ``x`` as a vector of one element."""
    args = (x.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce)
    return scatter_reduce(*args, include_self=include_self).reshape(())


@public(None)
def index_reduce(input: Any, dim: int, index: Any, source: Any, reduce: str, *,  # noqa: A002 - torch's names
                 include_self: bool = True) -> Tensor:
    """``input`` with the slices of ``source`` reduced into the slices ``index`` gives along ``dim``
    (``out[index[i]] = reduce(out[index[i]], source[i])`` for ``dim=0``): ``reduce`` is ``"prod"``,
    ``"mean"``, ``"amax"`` or ``"amin"`` (see ``scatter_reduce``).

    >>> import dualgrad as dg
    >>> dg.index_reduce(dg.ones(3, 2), 0, dg.tensor([0, 2, 0]), dg.tensor([[2., 3.], [4., 5.], [6., 7.]]), "prod")
    tensor([[12., 21.],
            [ 1.,  1.],
            [ 4.,  5.]])
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    x = tensor_arg(input, "index_reduce")
    index = _as_index(index, "index_reduce")
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim}")
    index = index.reshape(-1)
    dim = normalize_axis(dim, max(x.ndim, 1), "index_reduce")
    size = x.shape[dim] if x.ndim else 1
    if ((index._data < 0) | (index._data >= size)).any():
        raise IndexError("index out of range in self")
    vector = x.reshape(1) if x.ndim == 0 else x
    source = _source_along(vector, dim, index, source, "index_reduce_")
    out = scatter_reduce(vector, dim, _spread(index, dim, source.shape), source, reduce, include_self=include_self)
    return out.reshape(x.shape)


def _checked_src(x: Tensor, src: Any, expected: tuple, fn: str) -> Tensor:
    """``src`` (cast to ``x``'s dtype) if its shape is ``expected``, else torch's error."""
    src = tensor_arg(src, fn)
    if src.shape != expected:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(expected)}")
    return src if src.dtype == x.dtype else src.to(x.dtype)


def _scatter_positions(x: Tensor, src: Tensor, dim: int, positions: np.ndarray) -> Tensor:
    """``x`` with ``src`` written at ``positions`` along ``dim`` (``src`` has those slices' shape)."""
    return _put_along(x, dim, _tensor(positions.astype(np.int64)), src)


@public(None, inplace=False)
def select_scatter(input: Any, src: Any, dim: int, index: int) -> Tensor:  # noqa: A002 - torch's names
    """``input`` with ``input.select(dim, index)`` replaced by ``src`` (out of place); differentiable in both.

    >>> import dualgrad as dg
    >>> dg.select_scatter(dg.zeros(2, 3), dg.tensor([7., 8.]), 1, 1)
    tensor([[0., 7., 0.],
            [0., 8., 0.]])
    """
    x = tensor_arg(input, "select_scatter")
    dim = normalize_axis(dim, x.ndim, "select_scatter")
    n = x.shape[dim]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {dim}")
    src = _checked_src(x, src, x.shape[:dim] + x.shape[dim + 1:], "select_scatter")
    return _scatter_positions(x, src.unsqueeze(dim), dim, np.array([index % n]))


@public(None, inplace=False)
def slice_scatter(input: Any, src: Any, dim: int = 0, start: int | None = None,  # noqa: A002 - torch's names
                  end: int | None = None, step: int = 1) -> Tensor:
    """``input`` with the slice ``start:end:step`` of ``dim`` replaced by ``src`` (out of place).

    >>> import dualgrad as dg
    >>> dg.slice_scatter(dg.ones(2, 3), dg.zeros(2, 2), 1, 0, 3, 2)
    tensor([[0., 1., 0.],
            [0., 1., 0.]])
    """
    x = tensor_arg(input, "slice_scatter")
    dim = normalize_axis(dim, x.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    positions = np.arange(x.shape[dim])[start:end:step]
    src = _checked_src(x, src, x.shape[:dim] + (positions.size,) + x.shape[dim + 1:], "slice_scatter")
    return _scatter_positions(x, src, dim, positions)


@public(None, inplace=False)
def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src`` (out of place).

    >>> import dualgrad as dg
    >>> dg.diagonal_scatter(dg.zeros(2, 3), dg.ones(2), 1)
    tensor([[0., 1., 0.],
            [0., 0., 1.]])
    """
    x = tensor_arg(input, "diagonal_scatter")
    expected = diagonal(x, offset, dim1, dim2).shape
    src = _checked_src(x, src, expected, "diagonal_scatter")
    d1, d2 = normalize_axis(dim1, x.ndim, "diagonal_scatter"), normalize_axis(dim2, x.ndim, "diagonal_scatter")
    y = moveaxis(x, (d1, d2), (-2, -1))
    steps = np.arange(expected[-1])
    rows, cols = _tensor(steps + max(-offset, 0)), _tensor(steps + max(offset, 0))
    out = apply(INDEX_PUT_TENSOR, y, src, rows, cols, spec=(slice(None),) * (x.ndim - 2) + (TENSOR, TENSOR))
    return moveaxis(out, (-2, -1), (d1, d2))


def _fill_diagonal(x: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """``x`` with ``fill_value`` on its main diagonal (all dimensions equal beyond 2-d; a tall matrix
    starts again below a gap row with ``wrap``)."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) > 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(x.shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return where(_tensor(mask), fill_value, x)


fill_diagonal_ = _inplace("fill_diagonal_", _fill_diagonal, """In place: ``fill_value`` on the main diagonal
(all dimensions must be equal beyond 2-d; with ``wrap``, a tall matrix's diagonal starts again
after a gap row, as torch's and NumPy's).

>>> import dualgrad as dg
>>> dg.zeros(2, 3).fill_diagonal_(5.)
tensor([[5., 0., 0.],
        [0., 5., 0.]])
""")

# (an in-place method without a public function; the others come from the declarations)
METHODS: dict[str, Any] = {"fill_diagonal_": fill_diagonal_}
__all__ = exported(__name__)
