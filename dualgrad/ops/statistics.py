"""torch's statistics and distances (``cov``, ``corrcoef``, ``quantile``, ``nanquantile``, ``nanmedian``,
``mode``, ``aminmax``, ``dist``, ``cdist``, ``pdist``, ``pairwise_distance``, ``cosine_similarity``,
``renorm``).

All are compositions of existing ops (sort, gather, norms, arithmetic), so their gradients, tangents
and vmap rules come from those. ``mode`` finds its indices from the values (not under vmap); its
values are differentiable.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from ..base.dtypes import torch_dtype_name
from ..factories import full
from ..factories import tensor as _tensor
from ..tensor import Tensor
from ._axes import normalize_axis
from .dispatch import tensor_arg
from .elementwise.core import clamp, isnan, where
from .elementwise.functions import lerp
from .indexing import take_along_dim
from .reductions import ValuesIndices, amax, amin
from .shape.core import broadcast_to, diagonal, moveaxis, reshape, unsqueeze
from .shape.views import broadcast_shapes, triu_indices
from .sorting import sort
from .surface import exported, public


class MinMax(NamedTuple):
    min: Tensor
    max: Tensor


@public(None, inplace=False)
def aminmax(input: Any, *, dim: int | None = None, keepdim: bool = False) -> MinMax:  # noqa: A002
    """The minimum and maximum (``amin`` and ``amax``: ties share the gradient) over ``dim`` or all elements.

    >>> import dualgrad as dg
    >>> dg.aminmax(dg.tensor([[1., 5.], [3., -2.]]))
    MinMax(min=tensor(-2.), max=tensor(5.))
    """
    x = tensor_arg(input, "aminmax")
    if x.numel() == 0 and (dim is None or x.shape[normalize_axis(dim, max(x.ndim, 1), "aminmax")] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    return MinMax(amin(x, dim, keepdim), amax(x, dim, keepdim))


# -- distances -------------------------------------------------------------------------------------
def _norm(x: Tensor, p: float, dim: int = -1, keepdim: bool = False) -> Tensor:
    return x.norm(p, dim, keepdim)


@public(None, inplace=False)
def dist(input: Any, other: Any, p: float = 2) -> Tensor:  # noqa: A002 - torch's names
    """The ``p``-norm of ``input - other`` over all elements (``p`` 0 counts the nonzero differences).

    >>> import dualgrad as dg
    >>> dg.dist(dg.tensor([1., 2.]), dg.tensor([4., 6.]))
    tensor(5.)
    """
    return _norm(reshape(tensor_arg(input, "dist") - other, (-1,)), p, 0)


@public(None, method=False)
def pairwise_distance(x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension (broadcasting).

    >>> import dualgrad as dg
    >>> dg.pairwise_distance(dg.tensor([[3., 4.]]), dg.zeros(1, 2), eps=0.)
    tensor([5.])
    """
    return _norm(tensor_arg(x1, "pairwise_distance") - x2 + eps, p, -1, keepdim)


@public(None, method=False)
def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcasting), each norm
    at least ``eps`` (a norm raised to ``eps`` keeps its own gradient, as torch's).

    >>> import dualgrad as dg
    >>> dg.cosine_similarity(dg.tensor([[1., 0.], [1., 1.]]), dg.tensor([[1., 0.], [0., 1.]]))
    tensor([1.0000, 0.7071])
    """
    x1, x2 = tensor_arg(x1, "cosine_similarity"), tensor_arg(x2, "cosine_similarity")
    shape = broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    dim = normalize_axis(dim, max(len(shape), 1), "cosine_similarity")

    def unit(x: Tensor) -> Tensor:
        n = _norm(x, 2, dim, True)
        floor = clamp(n.detach(), min=eps) - n.detach()  # (the clamp without a gradient of its own)
        return x / (n + floor)

    return (unit(x1) * unit(x2)).sum(dim)


def _check_p(p: float, fn: str) -> None:
    if p < 0:
        raise RuntimeError(f"{fn} only supports non-negative p values")


@public(None, method=False)
def cdist(x1: Any, x2: Any, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (``... x P x M``) and of ``x2``
    (``... x R x M``), a ``... x P x R`` tensor (leading dimensions broadcast). ``compute_mode`` is
    accepted for torch compatibility: distances are computed directly (no matrix-product shortcut).

    >>> import dualgrad as dg
    >>> dg.cdist(dg.tensor([[0., 0.], [1., 1.]]), dg.tensor([[3., 4.]]))
    tensor([[5.0000],
            [3.6056]])
    """
    x1, x2 = tensor_arg(x1, "cdist"), tensor_arg(x2, "cdist")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    _check_p(p, "cdist")
    return _norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p)


@public(None, method=False)
def pdist(input: Any, p: float = 2) -> Tensor:  # noqa: A002 - torch's name
    """The ``p``-norm distances between the rows of a 2-d tensor, for each pair ``i < j`` in row-major order.

    >>> import dualgrad as dg
    >>> dg.pdist(dg.tensor([[0., 0.], [1., 1.], [2., 0.]]))
    tensor([1.4142, 2.0000, 1.4142])
    """
    x = tensor_arg(input, "pdist")
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    _check_p(p, "pdist")
    rows, cols = triu_indices(x.shape[0], x.shape[0], 1)
    return _norm(x[rows] - x[cols], p)


@public(None)
def renorm(input: Any, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002 - torch's names
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to
    norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as torch).

    >>> import dualgrad as dg
    >>> dg.renorm(dg.tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1.)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    x = tensor_arg(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    dim = normalize_axis(dim, x.ndim, "renorm")
    others = tuple(d for d in range(x.ndim) if d != dim)
    norms = _norm(x, p, others, True)
    return x * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


# -- covariance ------------------------------------------------------------------------------------
def _check_weights(w: Any, name: str, n: int, integral: bool) -> Tensor:
    w = tensor_arg(w, "cov")
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                           "dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input but "
                           f"got {w.numel()} != {n}")
    if integral != (w.dtype.kind in "iu"):
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{torch_dtype_name(w.dtype)} dtype")
    if (w.detach().numpy() < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


@public(None, inplace=False)
def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Tensor:  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (a 1-d tensor: one variable),
    observations in the columns, optionally weighted by integer frequencies ``fweights`` and
    ``aweights``; ``correction`` 1 gives the unbiased estimate (torch's and NumPy's formula).

    >>> import dualgrad as dg
    >>> dg.cov(dg.tensor([[1., 2., 4.], [2., 1., 0.]]))
    tensor([[ 2.3333, -1.5000],
            [-1.5000,  1.0000]])
    """
    x = tensor_arg(input, "cov")
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {x.ndim} "
                           "dimensions")
    if x.dtype.kind in "iub":
        x = x.to(np.float64)
    obs = reshape(x, (1, -1)) if x.ndim < 2 else x
    n = obs.shape[1]
    w = None if fweights is None else _check_weights(fweights, "fweights", n, True)
    if aweights is not None:
        a = _check_weights(aweights, "aweights", n, False)
        w = a if w is None else w * a
    if w is None:
        avg, total = obs.mean(1), n
        dof = total - correction
    else:
        total = w.sum()
        avg = (obs * w).sum(1) / total
        dof = total - (correction if aweights is None else correction * (w * a).sum() / total)
    if (dof.detach().numpy() if isinstance(dof, Tensor) else np.asarray(dof)) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        dof = dof * 0 if isinstance(dof, Tensor) else 0
    centered = obs - unsqueeze(avg, 1)
    weighted = centered if w is None else centered * w
    with np.errstate(divide="ignore", invalid="ignore"):
        c = (weighted @ centered.mH) / dof
    return reshape(c, ()) if x.ndim < 2 else c


@public(None, inplace=False)
def corrcoef(input: Any) -> Tensor:  # noqa: A002 - torch's name
    """The correlation coefficients of the variables in the rows of ``input`` (``cov`` normalized by
    the standard deviations, clipped to ``[-1, 1]``).

    >>> import dualgrad as dg
    >>> dg.corrcoef(dg.tensor([[1., 2., 4.], [2., 1., 0.]]))
    tensor([[ 1.0000, -0.9820],
            [-0.9820,  1.0000]])
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = diagonal(c).real.sqrt()
    c = c / unsqueeze(std, 1) / unsqueeze(std, 0)
    if c.dtype.kind == "c":
        return c
    return clamp(c, -1, 1)


# -- order statistics --------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Any, q: Any, dim: int | None, keepdim: bool, interpolation: str, fn: str,
              ignore_nan: bool) -> Tensor:
    """``quantile`` (a NaN in a slice gives NaN) or ``nanquantile`` (NaNs left out)."""
    x = tensor_arg(input, fn)
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
        if q.dtype != x.dtype:
            raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
        qs = q.detach().numpy()
        if ((qs < 0) | (qs > 1)).any():
            raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"{fn}() q must be in the range [0, 1] but got {q}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fn}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                           f"{interpolation}")
    if x.numel() == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    qs = np.asarray(q.detach().numpy() if isinstance(q, Tensor) else q, dtype=x.dtype)
    if dim is None:
        s, axis = sort(reshape(x, (-1,)), 0).values, None
    else:
        axis = normalize_axis(dim, max(x.ndim, 1), fn)
        s = moveaxis(sort(x, axis).values, axis, -1) if x.ndim else reshape(x, (1,))
    n = s.shape[-1]
    count = (~isnan(s)).sum(-1, keepdim=True) if ignore_nan else full(s.shape[:-1] + (1,), n)
    # (a Tensor q stays in the graph: a linear quantile's derivative in q is (count - 1) (above - below))
    fractions = reshape(q, (-1,)) if isinstance(q, Tensor) else _tensor(qs.reshape(-1))
    ranks = clamp((count - 1) * fractions, min=0)  # (..., Q); NaN last: the valid ones first
    low = ranks.floor()
    if interpolation == "nearest":
        low = ranks.round()
    elif interpolation == "higher":
        low = ranks.ceil()
    high = ranks.ceil() if interpolation in ("linear", "midpoint") else low
    below = take_along_dim(s, low.to(np.int64), -1)
    above = take_along_dim(s, high.to(np.int64), -1)
    weight = (ranks - low) if interpolation == "linear" else 0.5
    out = lerp(below, above, weight) if interpolation in ("linear", "midpoint") else below
    if not ignore_nan:
        out = where(isnan(s[..., -1:]), math.nan, out)
    out = moveaxis(out, -1, 0)
    if keepdim:
        kept = (1,) * x.ndim if axis is None or x.ndim == 0 else x.shape[:axis] + (1,) + x.shape[axis + 1:]
        out = reshape(out, out.shape[:1] + kept)
    return out[0] if qs.ndim == 0 else out


@public(None, inplace=False)
def quantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,  # noqa: A002 - torch's names
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (``q`` a number or a 1-d tensor in ``[0, 1]``; a 1-d ``q`` gives its
    own leading dimension) along ``dim`` or of all elements. Between two values, ``interpolation``
    picks ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"`` or ``"nearest"`` (half to even).
    A NaN in a slice gives NaN. Differentiable: the gradient goes to the values interpolated.

    >>> import dualgrad as dg
    >>> x = dg.tensor([3., 1., 4., 1.5])
    >>> dg.quantile(x, 0.3), dg.quantile(x, dg.tensor([0.5, 1.]), interpolation="lower")
    (tensor(1.4500), tensor([1.5000, 4.0000]))
    """
    return _quantile(input, q, dim, keepdim, interpolation, "quantile", False)


@public(None, inplace=False)
def nanquantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,  # noqa: A002
                interpolation: str = "linear") -> Tensor:
    """``quantile`` leaving NaNs out (an all-NaN slice gives NaN).

    >>> import dualgrad as dg
    >>> dg.nanquantile(dg.tensor([1., float("nan"), 3.]), 0.5)
    tensor(2.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, "nanquantile", True)


@public(None, inplace=False)
def nanmedian(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A002 - torch's names
    """The median leaving NaNs out (the lower of the two middle values; NaN for all-NaN): of all
    elements, or along ``dim`` as ``(values, indices)``.

    >>> import dualgrad as dg
    >>> x = dg.tensor([[1., float("nan"), 3., 2.], [4., 1., 2., 3.]])
    >>> dg.nanmedian(x), dg.nanmedian(x, 1)
    (tensor(2.), ValuesIndices(values=tensor([2., 2.]), indices=tensor([3, 2])))
    """
    x = tensor_arg(input, "nanmedian")
    if dim is None:
        if x.numel() == 0:
            return _tensor(math.nan, dtype=x.dtype)
        return _middle(reshape(x, (-1,)))[0].reshape(())
    axis = normalize_axis(dim, max(x.ndim, 1), "nanmedian")
    if x.ndim == 0:
        return ValuesIndices(x, _tensor(0))
    values, indices = _middle(moveaxis(x, axis, -1))
    if keepdim:
        return ValuesIndices(moveaxis(values, -1, axis), moveaxis(indices, -1, axis))
    return ValuesIndices(values[..., 0], indices[..., 0])


def _middle(x: Tensor) -> tuple:
    """The lower middle non-NaN value along the last dimension and its index (size-1 last dimension)."""
    s, order = sort(x, -1)
    k = clamp(((~isnan(s)).sum(-1, keepdim=True) - 1) // 2, min=0)
    return take_along_dim(s, k, -1), take_along_dim(order, k, -1)


@public(None, inplace=False)
def mode(input: Any, dim: int = -1, keepdim: bool = False) -> ValuesIndices:  # noqa: A002 - torch's names
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the index of
    its last occurrence (as torch's); the values are differentiable. Not under ``vmap`` (the
    indices are found from the values).

    >>> import dualgrad as dg
    >>> dg.mode(dg.tensor([[1., 2., 2., 1., 3.], [5., 4., 4., 5., 5.]]))
    ValuesIndices(values=tensor([1., 5.]), indices=tensor([3, 4]))
    """
    x = tensor_arg(input, "mode")
    axis = normalize_axis(dim, max(x.ndim, 1), "mode")
    if x.ndim and not x.shape[axis]:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    data = np.moveaxis(x.detach().numpy(), axis, -1) if x.ndim else x.detach().numpy().reshape(1)
    order = np.argsort(data, axis=-1, kind="stable")
    s = np.take_along_axis(data, order, -1)
    n = s.shape[-1]
    steps = np.broadcast_to(np.arange(n), s.shape)
    new = np.concatenate([np.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]], -1)
    start = np.maximum.accumulate(np.where(new, steps, 0), axis=-1)
    last = np.concatenate([new[..., 1:], np.ones(s.shape[:-1] + (1,), bool)], -1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, steps, n), -1), axis=-1), -1)
    best = np.argmax(end - start, axis=-1)[..., None]  # (the first longest run: the smallest value)
    index = _tensor(np.take_along_axis(order, np.take_along_axis(end, best, -1), -1))
    source = moveaxis(x, axis, -1) if x.ndim else reshape(x, (1,))
    values = take_along_dim(source, index, -1)
    if x.ndim == 0:
        return ValuesIndices(reshape(values, ()), reshape(index, ()))
    if keepdim:
        return ValuesIndices(moveaxis(values, -1, axis), moveaxis(index, -1, axis))
    return ValuesIndices(values[..., 0], index[..., 0])


__all__ = exported(__name__)
