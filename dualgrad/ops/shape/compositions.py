"""torch's compositions of shape ops: ``diff``, ``meshgrid``, ``atleast_1d``, ``block_diag``,
``cartesian_prod``, ``rot90``.

None is an op of its own: each is built from ``narrow``, ``cat``, ``expand``, ``flip``,
``transpose`` and arithmetic, so gradients, tangents and vmap come from those ops.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ...factories import zeros
from ...tensor import Tensor, check_tensor, int_arg
from .._axes import normalize_axis
from ..dispatch import tensor_arg
from ..elementwise.core import logical_xor
from ..promotion import _promote_types
from ..surface import declare, exported, public
from .core import cat, expand, flip, narrow, reshape, stack, transpose, with_rank_at_least


def _tensors(args: tuple, fn: str) -> list:
    """``f(a, b)`` and ``f([a, b])`` alike: the tensors as a list."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    return [tensor_arg(t, fn) for t in args]


def _difference(x: Tensor, dim: int) -> Tensor:
    """``x[1:] - x[:-1]`` along ``dim`` (``!=`` for bool, as torch's)."""
    n = x.shape[dim] - 1
    later, earlier = narrow(x, dim, 1, n), narrow(x, dim, 0, n)
    return logical_xor(later, earlier) if x.dtype == np.bool_ else later - earlier


@public(None, inplace=False)
def diff(input: Any, n: int = 1, dim: int = -1, prepend: Tensor | None = None,  # noqa: A002 - torch's names
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and ``append``
    (tensors of the same rank) there; an ``n`` at least the length gives an empty tensor.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 4., 9., 16.])
    >>> dg.diff(x), dg.diff(x, n=2), dg.diff(x, prepend=dg.tensor([0.]))
    (tensor([3., 5., 7.]), tensor([2., 2.]), tensor([1., 3., 5., 7.]))
    """
    x = tensor_arg(input, "diff")
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = normalize_axis(dim, x.ndim, "diff")
    for name, p in (("prepend", prepend), ("append", append)):
        if p is not None:
            check_tensor("diff", name, p)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        if any(p.ndim != x.ndim for p in parts):
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        x = cat(parts, dim)
    for _ in range(min(n, x.shape[dim])):
        x = _difference(x, dim)
    return x


@public(None, method=False)
def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple:
    """Coordinate grids of 0-d or 1-d tensors of one dtype: output ``i`` is tensor ``i`` expanded
    along its own dimension (a view). ``indexing="ij"`` (matrix order; the default, with torch's
    warning when not given) or ``"xy"`` (the first two dimensions swapped, as NumPy's default).

    >>> import dualgrad as dg
    >>> dg.meshgrid(dg.tensor([1, 2]), dg.tensor([3, 4, 5]), indexing="ij")
    (tensor([[1, 1, 1],
            [2, 2, 2]]), tensor([[3, 4, 5],
            [3, 4, 5]]))
    """
    ts = _tensors(tensors, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got shape "
                               f"{list(t.shape)}")
        if t.dtype != ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(ts) > 1  # "xy" is "ij" of the first two swapped
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = [expand(reshape(t, tuple(-1 if j == i else 1 for j in range(len(ts)))), shape)
             for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _atleast(rank: int, name: str, example: str, result: str) -> Any:
    """torch's ``atleast_<rank>d``: one tensor, or a tuple of them, of rank at least ``rank``
    (the layout of ``hstack``/``vstack``/``dstack``: ``with_rank_at_least``)."""

    def fn(*tensors: Any) -> Tensor | tuple:
        if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
            return with_rank_at_least(tensor_arg(tensors[0], name), rank)
        return tuple(with_rank_at_least(t, rank) for t in _tensors(tensors, name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Each tensor (a view) with at least {rank} dimension(s); one tensor for one argument, else a "
                  f"tuple.\n\n>>> import dualgrad as dg\n>>> dg.{name}({example})\n{result}\n")
    return fn


atleast_1d = declare(_atleast(1, "atleast_1d", "dg.tensor(1.)", "tensor([1.])"), None, method=False)
atleast_2d = declare(_atleast(2, "atleast_2d", "dg.tensor([1., 2.])", "tensor([[1., 2.]])"), None, method=False)
atleast_3d = declare(_atleast(3, "atleast_3d", "dg.tensor([1., 2.])", "tensor([[[1.],\n         [2.]]])"), None,
                     method=False)


@public(None, method=False)
def block_diag(*tensors: Any) -> Tensor:
    """The block-diagonal matrix of the tensors (0-d ones as 1x1, 1-d ones as one row), in their
    promoted dtype; differentiable.

    >>> import dualgrad as dg
    >>> dg.block_diag(dg.tensor([[1, 2], [3, 4]]), dg.tensor(5), dg.tensor([6, 7]))
    tensor([[1, 2, 0, 0, 0],
            [3, 4, 0, 0, 0],
            [0, 0, 5, 0, 0],
            [0, 0, 0, 6, 7]])
    """
    ts = _tensors(tensors, "block_diag")
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    if not ts:
        return zeros(1, 0)
    blocks = [reshape(t, (1, -1)) if t.ndim < 2 else t for t in ts]
    dtype = functools.reduce(_promote_types, (b.dtype for b in blocks[1:]), blocks[0].dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        rows.append(cat([zeros(b.shape[0], left, dtype=dtype), b.to(dtype), zeros(b.shape[0], right, dtype=dtype)], 1))
        left += b.shape[1]
    return cat(rows, 0)


@public(None, method=False)
def cartesian_prod(*tensors: Any) -> Tensor:
    """The rows of all combinations of elements of 1-d tensors of one dtype (in ``meshgrid`` "ij" order);
    one tensor is returned as it is.

    >>> import dualgrad as dg
    >>> dg.cartesian_prod(dg.tensor([1, 2]), dg.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    ts = _tensors(tensors, "cartesian_prod")
    for t in ts:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    return stack([reshape(g, (-1,)) for g in meshgrid(*ts, indexing="ij")], 1)


@public(None, inplace=False)
def rot90(input: Any, k: int = 1, dims: Any = (0, 1)) -> Tensor:  # noqa: A002 - torch's name
    """``input`` rotated by ``k`` quarter turns in the plane ``dims``, from the first axis towards the
    second (a view).

    >>> import dualgrad as dg
    >>> dg.rot90(dg.tensor([[0., 1., 2.], [3., 4., 5.]]))
    tensor([[2., 5.],
            [1., 4.],
            [0., 3.]])
    """
    x = tensor_arg(input, "rot90")
    k = int_arg(k, "rot90", "k", 2)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (normalize_axis(d, x.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(x, d1), d0, d1)
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return flip(transpose(x, d0, d1), d1)
    return x


__all__ = exported(__name__)
