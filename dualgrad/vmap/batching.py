"""vmap: batched tensors and the batching engine. It knows no op.

A ``BatchedTensor`` is what a function sees inside ``vmap``: a *logical* tensor
(its ``shape`` excludes the batch dimension) wrapping a *physical* Tensor
``value`` whose dimension ``bdim`` runs over the batch of vmap level ``level``.
Every op call with a batched argument reaches ``run`` (installed as the
dispatcher's batching hook): it unwraps the arguments of the innermost level
and calls the op's batching rule ``batch(args, bdims, **params) -> (out,
out_bdim)`` (the op's own, or its family's from ``family_rules``), which runs
the op once for the whole batch on the physical values.

Nested vmaps nest wrappers: the value of a level-``L`` tensor may be batched at
outer levels, and wrappers are kept ordered (higher levels outside). Reverse
and forward mode act on the physical tensors, so ``grad(vmap(f))`` differentiates
through the batching and ``vmap(grad(f))`` below it (see ``dualgrad.func``).

>>> import dualgrad as dg
>>> x = dg.tensor([[1., 2.], [3., 4.]])
>>> dg.vmap(lambda row: (row * row).sum())(x)
tensor([ 5., 25.])
"""

from __future__ import annotations

import functools
import itertools
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import pytree
from ..base.checks import as_size
from ..base.random import _generator
from ..base.state import STATE
from ..forward_ad.engine import set_tangent, tangent_at
from ..reverse import api as reverse_api
from ..reverse.engine import run_backward
from ..tensor import Tensor, _new, _new_size

RANDOMNESS = ("error", "different", "same")
RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap"
)
SAME_SIZE = ("vmap: Expected all tensors to have the same size in the mapped dimension, "
             "got sizes {sizes} for the mapped dimension")
_level_ids = itertools.count(1)

# family name -> ``rule(op, args, bdims, **params)``, filled by ``dualgrad.ops.batch_rules``
# (ops register into engines).
family_rules: dict[str, Callable] = {}
# ``cat``, set by ``dualgrad.ops.shape.core``: joins the outputs of ``vmap``'s chunks (``chunk_size``).
concatenate: list = [None]


def rule_for(op: Any) -> Callable | None:
    """The batching rule vmap uses for ``op``: its own ``batch``, else its family's, else None.

    A family rule is ``rule(op, args, bdims, **params)``; it is returned bound to ``op``.
    """
    rule = getattr(op, "batch", None)
    if rule is not None:
        return rule
    family = family_rules.get(op.family)
    return None if family is None else functools.partial(family, op)


class VmapLevel:
    """One active ``vmap`` call: its unique id (increasing with nesting), batch size, randomness."""

    __slots__ = ("id", "size", "randomness")

    def __init__(self, size: int, randomness: str):
        self.id = next(_level_ids)
        self.size = size
        self.randomness = randomness


class vmap_level:  # noqa: N801 - used as a function: ``with vmap_level(size) as level``
    """Make a new innermost vmap level active for the duration of the block (``as``: the VmapLevel).

    A class rather than a ``@contextmanager`` generator: every vmap call enters one, and a
    generator-based context manager costs several more Python calls.
    """

    __slots__ = ("level", "previous")

    def __init__(self, size: int, randomness: str = "error"):
        self.level = VmapLevel(size, randomness)

    def __enter__(self) -> VmapLevel:
        state = STATE
        self.previous = previous = state.vmap_levels
        state.vmap_levels = previous + (self.level,)
        state.vmap_depth = len(previous) + 1
        return self.level

    def __exit__(self, *exc_info: Any) -> None:
        state = STATE
        state.vmap_levels = previous = self.previous
        state.vmap_depth = len(previous)


class only_vmap_levels:  # noqa: N801 - used as a function: ``with only_vmap_levels(levels)``
    """Make ``levels`` (some of the active vmap levels, in their order) the only active ones for the
    block: for a computation whose values the other levels do not batch (a custom Function's generated
    rule, a compiled replay, a solver's derivative), which transforms inside would otherwise batch at
    every active level."""

    __slots__ = ("levels", "previous")

    def __init__(self, levels: tuple):
        self.levels = levels

    def __enter__(self) -> None:
        state = STATE
        self.previous = state.vmap_levels
        state.vmap_levels = self.levels
        state.vmap_depth = len(self.levels)

    def __exit__(self, *exc_info: Any) -> None:
        state = STATE
        state.vmap_levels = previous = self.previous
        state.vmap_depth = len(previous)


class BatchedTensor(Tensor):
    """A logical tensor inside ``vmap``: ``value`` with the batch of ``level`` along ``bdim``.

    Shape, dtype and autograd flags are those of the logical tensor; its values
    cannot be read (no ``item()``, ``numpy()`` or Python control flow on them).
    """

    __slots__ = ("value", "bdim", "level")

    @property
    def _data(self) -> np.ndarray:
        raise RuntimeError(
            f"vmap: cannot read the values of a batched tensor (logical shape {self.shape}): "
            ".item(), .numpy(), .tolist(), conversion to NumPy and data-dependent Python control "
            "flow are not supported inside vmap; write the computation with dualgrad ops "
            "(e.g. dualgrad.where instead of if/else)"
        )

    def item(self) -> Any:
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
            ".item() on a Tensor, please try to rewrite what you're doing with other operations."
        )

    _scalar = item  # float(), int() and complex() of a batched tensor: torch's .item() message

    def __bool__(self) -> bool:
        raise RuntimeError(
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
            "We don't support that: write it with dualgrad ops (e.g. dualgrad.where instead of if/else)"
        )

    @property
    def shape(self) -> tuple:
        shape, bdim = self.value.shape, self.bdim
        return shape[1:] if bdim == 0 else shape[:bdim] + shape[bdim + 1:]

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return self.value.ndim - 1

    @property
    def itemsize(self) -> int:
        return self.value.itemsize

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def _requires_grad(self) -> bool:
        return self.value._requires_grad

    @property
    def requires_grad(self) -> bool:
        return self.value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        raise RuntimeError(
            "vmap: cannot set requires_grad on a batched tensor inside vmap; differentiate "
            "inside vmap with the transforms of dualgrad.func (e.g. vmap(grad(f)))"
        )

    @property
    def grad_fn(self) -> Any:
        return self.value.grad_fn

    def _node(self) -> Any:
        return self.value._node()

    def detach(self) -> BatchedTensor:
        return make_batched(self.value.detach(), self.bdim, self.level)

    # ``new_full`` and its kin (``new_zeros``, ``new_ones`` call ``new_full``): one new tensor of ``size``
    # per batch member, batched wherever this tensor is (torch.func's), so that in-place writes of
    # batched values into it work (``r = v.new_zeros(n, n); r.diagonal().copy_(v)``).
    def new_full(self, size: Any, fill_value: Any, **kwargs: Any) -> BatchedTensor:
        if not isinstance(size, (tuple, list)):
            return Tensor.new_full(self, size, fill_value, **kwargs)  # (its TypeError)
        size = as_size((size,), fn="new_full")
        batch = self.value.shape[self.bdim]
        return _batched(self.value.new_full((batch, *size), fill_value, **kwargs), 0, self.level)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> BatchedTensor:
        size = _new_size("new_empty", size, kwargs)
        batch = self.value.shape[self.bdim]
        return _batched(self.value.new_empty(batch, *size, dtype=dtype, requires_grad=requires_grad), 0, self.level)

    def __repr__(self) -> str:
        value = textwrap.indent(repr(self.value), "    ")
        return f"BatchedTensor(lvl={self.level}, bdim={self.bdim}, value=\n{value}\n)"


def _batched(value: Tensor, bdim: int, level: int) -> BatchedTensor:
    t = _new(BatchedTensor)
    t.value = value
    t.bdim = bdim
    t.level = level
    t._output_nr = 0
    t._fw = t._counter = t._view = t._grad = t._extra = None
    return t


def make_batched(value: Any, bdim: int | None, level: int) -> Any:
    """``value`` batched at ``level`` along ``bdim`` (unchanged for bdim None or a non-Tensor).

    Wrappers stay ordered: when ``value`` is batched at a higher level, the new
    wrapper goes inside it.
    """
    if bdim is None or not isinstance(value, Tensor):
        return value
    if type(value) is BatchedTensor and value.level > level:
        inner = bdim if bdim < value.bdim else bdim + 1  # position of the new batch dim in value.value
        outer = value.bdim if value.bdim < inner else value.bdim - 1
        return _batched(make_batched(value.value, inner, level), outer, value.level)
    return _batched(value, bdim, level)


def movedim(x: Tensor, source: int, destination: int) -> Tensor:
    """``x`` with dimension ``source`` moved to position ``destination``."""
    if source == destination:
        return x
    axes = [i for i in range(x.ndim) if i != source]
    axes.insert(destination, source)
    return x.permute(tuple(axes))


def _broadcast_at(x: Tensor, dim: int, size: int) -> Tensor:
    """``x`` with a new dimension of ``size`` at ``dim`` (a broadcast, no copy)."""
    if dim == 0:
        return x.expand((size,) + tuple(x.shape))
    x = x.unsqueeze(dim)
    shape = list(x.shape)
    shape[dim] = size
    return x.expand(tuple(shape))


def level_to_front(x: Tensor, level: VmapLevel) -> Tensor:
    """The tensor, no longer batched at ``level``, whose dim 0 runs over that level's batch.

    An ``x`` that is not batched at ``level`` is broadcast along the new dim.
    """
    if type(x) is BatchedTensor:
        if x.level == level.id:
            return movedim(x.value, x.bdim, 0)
        return _batched(level_to_front(x.value, level), x.bdim + 1, x.level)
    return _broadcast_level(x, level)


def _broadcast_level(x: Tensor, level: VmapLevel) -> Tensor:
    """A plain ``x`` broadcast along a new dim 0 for ``level``.

    A forward-mode tangent of ``x`` that is batched at ``level`` (a dual number
    that varies over the batch although its primal does not) has its batch
    moved to that dim instead of being broadcast, so each batch member keeps
    its own tangent.
    """
    duals = STATE.dual_levels
    tangents = [tangent_at(x, d) for d in duals]
    if not any(t is not None and is_batched_at(t, level) for t in tangents):
        return _broadcast_at(x, 0, level.size)
    STATE.dual_levels = ()
    try:
        out = _broadcast_at(x, 0, level.size)
        for i, (dual, t) in enumerate(zip(duals, tangents, strict=True)):
            if t is not None:
                STATE.dual_levels = duals[:i]  # the tangent keeps its own outer tangents
                set_tangent(out, dual, level_to_front(t, level))
    finally:
        STATE.dual_levels = duals
    return out


def to_physical(x: Tensor, levels: tuple) -> Tensor:
    """``x`` unbatched at ``levels`` (outermost first), with one leading dim per level in that order."""
    for level in reversed(levels):
        x = level_to_front(x, level)
    return x


def from_physical(x: Tensor, levels: tuple) -> Tensor:
    """The inverse of ``to_physical``: leading dims of ``x`` become the batches of ``levels``."""
    for level in levels:
        x = make_batched(x, 0, level.id)
    return x


def _check_active(level: int) -> None:
    for active in reversed(STATE.vmap_levels):
        if active.id == level:
            return
    raise RuntimeError(
        "vmap: a batched tensor was used outside the vmap call that created it; return it from "
        "the vmapped function instead of storing it"
    )


def run(op: Any, args: tuple, params: dict) -> Any:
    """The batching hook: run ``op`` on ``args`` via its batching rule for the innermost level.

    Returns NotImplemented when no argument is batched.
    """
    top = 0
    for a in args:
        if type(a) is BatchedTensor and a.level > top:
            top = a.level
    if not top:
        return NotImplemented
    if STATE.vmap_levels[-1].id != top:  # (the innermost level is active: no search)
        _check_active(top)
    values, bdims = [], []
    for a in args:
        if type(a) is BatchedTensor and a.level == top:
            values.append(a.value)
            bdims.append(a.bdim)
        else:
            values.append(a)
            bdims.append(None)
    if STATE.dual_levels:
        _front_tangent_batches(args, top, values, bdims)
    rule = getattr(op, "batch", None)
    if rule is not None:
        out, out_bdim = rule(values, bdims, **params)
    else:
        family = family_rules.get(op.family)
        if family is None:
            raise RuntimeError(
                f"vmap: the op '{op.name}' (family '{op.family}') has no batching rule; give its "
                "op-table entry a batch= rule"
            )
        out, out_bdim = family(op, values, bdims, **params)
    if isinstance(out, tuple):
        if not isinstance(out_bdim, tuple):
            out_bdim = (out_bdim,) * len(out)
        return tuple(make_batched(o, b, top) for o, b in zip(out, out_bdim, strict=True))
    return make_batched(out, out_bdim, top)


def _front_tangent_batches(args: tuple, top: int, values: list, bdims: list) -> None:
    """Give the rule for level ``top`` a leading batch dim for each argument not batched there
    whose forward-mode tangent is (a dual number varying over the batch although its primal does
    not: a vmap over data of a vmap over tangents). Passed as is, its tangent would meet the
    rule's physical batch dim and stay batched at ``top`` as well: batched twice."""
    level = next(v for v in reversed(STATE.vmap_levels) if v.id == top)
    for i, a in enumerate(args):
        if bdims[i] is None and tangent_batched_at(a, level):
            values[i] = level_to_front(a, level)
            bdims[i] = 0


# -- vmap ---------------------------------------------------------------------------------
def _name(func: Any) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _check_vmap_args(func: Any, in_dims: Any, out_dims: Any, randomness: str,
                     chunk_size: int | None) -> None:
    name = _name(func)
    if randomness not in RANDOMNESS:
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if type(in_dims) is not int and not isinstance(in_dims, tuple):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    dims, _ = pytree.flatten(out_dims)
    if not all(d is None or type(d) is int for d in dims):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
            "collection of ints representing where in the outputs the vmapped dimension should appear."
        )


def _batch_dims_of_inputs(name: str, in_dims: Any, args: tuple) -> tuple[list, Any, list, int]:
    """Flat args, their spec, their normalized in_dims, and the batch size; ValueError on bad in_dims."""
    flat_args, spec = pytree.flatten(args)
    flat_dims = pytree.broadcast_prefix(in_dims, args)
    if flat_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {pytree.describe(pytree.flatten(in_dims)[1])} "
            f"but inputs has structure {pytree.describe(spec)}."
        )
    dims, sizes = [], []
    for arg, dim in zip(flat_args, flat_dims, strict=True):
        if dim is not None and type(dim) is not int:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but "
                "in_dim must be either an integer dimension or None."
            )
        if dim is not None and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but "
                f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                "use None as the respective in_dim"
            )
        if dim is not None:
            if not -arg.ndim <= dim < arg.ndim:
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some "
                    f"input, but that input is a Tensor of dimensionality {arg.ndim} so expected "
                    f"in_dim to satisfy -{arg.ndim} <= in_dim < {arg.ndim}."
                )
            dim %= arg.ndim
            sizes.append(arg.shape[dim])
        dims.append(dim)
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(SAME_SIZE.format(sizes=sizes))
    return flat_args, spec, dims, sizes[0]


def output_at(name: str, out: Any, out_dim: int | None, level: VmapLevel, index: Any = None) -> Any:
    """One output of the vmapped function, its batch of ``level`` moved to ``out_dim``."""
    batched = type(out) is BatchedTensor and out.level == level.id
    if out_dim is None:
        if isinstance(out, BatchedTensor) and is_batched_at(out, level):
            raise ValueError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
        return out
    if not isinstance(out, Tensor):
        where = "" if index is None else f" for return {index}"
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}{where}. "
            "Did you mean to set out_dims= to None for output?"
        )
    ndim = out.ndim + 1
    if not -ndim <= out_dim < ndim:
        raise IndexError(
            f"vmap({name}, ..., out_dims={out_dim}): Dimension out of range (expected to be in "
            f"range of [{-ndim}, {ndim - 1}], but got {out_dim})"
        )
    out_dim %= ndim
    if batched:
        return movedim(out.value, out.bdim, out_dim)
    if type(out) is BatchedTensor and out.level > level.id:
        return movedim(level_to_front(out, level), 0, out_dim)
    return _broadcast_at(out, out_dim, level.size)


def physical_value(x: Any) -> Any:
    """The plain tensor under the batch wrappers of ``x``: the values of its whole batch (the
    tensor autograd records); ``x`` itself when it is not batched."""
    while type(x) is BatchedTensor:
        x = x.value
    return x


def tangent_batched_at(x: Any, level: VmapLevel) -> bool:
    """True if ``x`` is a Tensor with a forward-mode tangent batched at ``level``, on itself or on the value
    inside one of its batch wrappers (a dual number batched at an outer level keeps its tangent inside)."""
    while isinstance(x, Tensor):
        if any(is_batched_at(tangent_at(x, dual), level) for dual in STATE.dual_levels):
            return True
        if type(x) is not BatchedTensor:
            return False
        x = x.value
    return False


def is_batched_at(x: Any, level: VmapLevel) -> bool:
    """True if ``x`` is a batched tensor with a batch dimension of ``level`` (at any depth)."""
    while type(x) is BatchedTensor:
        if x.level == level.id:
            return True
        if x.level < level.id:
            return False
        x = x.value
    return False


def _flat_out_dims(out_dims: Any, outputs: Any) -> list | None:
    """One out_dim per output (None if ``out_dims`` does not match the outputs' structure).

    As in torch, a one-element tuple also serves a function returning a single tensor.
    """
    if type(out_dims) is tuple and len(out_dims) == 1 and isinstance(outputs, Tensor):
        out_dims = out_dims[0]
    return pytree.broadcast_prefix(out_dims, outputs)


def _unwrap_outputs(name: str, outputs: Any, out_dims: Any, level: VmapLevel) -> Any:
    flat_out, spec = pytree.flatten(outputs)
    flat_dims = _flat_out_dims(out_dims, outputs)
    if flat_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
            f"structure of `outputs`. out_dims has structure {pytree.describe(pytree.flatten(out_dims)[1])} "
            f"but outputs has structure {pytree.describe(spec)}."
        )
    single = spec is None
    results = [output_at(name, o, d, level, None if single else i)
               for i, (o, d) in enumerate(zip(flat_out, flat_dims, strict=True))]
    return pytree.unflatten(results, spec)


def _vmap_once(func: Callable, flat_args: list, dims: list, spec: Any, size: int,
               out_dims: Any, randomness: str, kwargs: dict) -> Any:
    with vmap_level(size, randomness) as level:
        batched = [make_batched(a, d, level.id) for a, d in zip(flat_args, dims, strict=True)]
        outputs = func(*pytree.unflatten(batched, spec), **kwargs)
    return _unwrap_outputs(_name(func), outputs, out_dims, level)


def _vmap_chunked(func: Callable, flat_args: list, dims: list, spec: Any, size: int,
                  out_dims: Any, randomness: str, kwargs: dict, chunk_size: int) -> Any:
    """vmap over batches of at most ``chunk_size``, outputs concatenated along ``out_dims``.

    With randomness 'same', every chunk draws the same samples (as one vmap would).
    """
    state = _generator[0].bit_generator.state if randomness == "same" else None
    pieces = []
    for start in range(0, size, chunk_size):
        if state is not None:
            _generator[0].bit_generator.state = state
        stop = min(start + chunk_size, size)
        chunk = [a if d is None else a[(slice(None),) * d + (slice(start, stop),)]
                 for a, d in zip(flat_args, dims, strict=True)]
        pieces.append(_vmap_once(func, chunk, dims, spec, stop - start, out_dims, randomness, kwargs))
    flat_pieces = [pytree.flatten(p)[0] for p in pieces]
    out_spec = pytree.flatten(pieces[0])[1]
    flat_dims = _flat_out_dims(out_dims, pieces[0])
    joined = []
    for i, dim in enumerate(flat_dims):
        parts = [p[i] for p in flat_pieces]
        joined.append(parts[0] if dim is None else concatenate[0](parts, dim=dim))
    return pytree.unflatten(joined, out_spec)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """Vectorize ``func`` over a dimension of its inputs: ``vmap(f)(x)[i] == f(x[i])``.

    ``in_dims`` (an int, or a tuple matching the positional arguments, nested
    like them; ``None`` for arguments not mapped over) says which dimension of
    each input is the batch; ``out_dims`` where the batch goes in each output
    (a one-element tuple also serves a single tensor output, as in torch).
    Keyword arguments are passed through unmapped. ``randomness`` ('error',
    'different' or 'same') says what random factories do inside; ``chunk_size``
    bounds how many batch members are computed at once.

    >>> import dualgrad as dg
    >>> x, y = dg.ones(3, 2), dg.tensor([1., 2.])
    >>> dg.vmap(lambda a, b: a @ b, in_dims=(0, None))(x, y)
    tensor([3., 3., 3.])
    >>> dg.vmap(lambda a: a * 2, in_dims=1, out_dims=1)(x).shape
    (3, 2)
    """
    _check_vmap_args(func, in_dims, out_dims, randomness, chunk_size)

    @functools.wraps(func)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if not args:
            raise ValueError(
                f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or "
                "you are trying to vmap over a function with no inputs. The latter is unsupported."
            )
        flat_args, spec, dims, size = _batch_dims_of_inputs(_name(func), in_dims, args)
        if chunk_size is None or chunk_size >= size:
            return _vmap_once(func, flat_args, dims, spec, size, out_dims, randomness, kwargs)
        return _vmap_chunked(func, flat_args, dims, spec, size, out_dims, randomness, kwargs,
                             chunk_size)

    return vmapped


# -- randomness ----------------------------------------------------------------------------
def random_under_vmap(draw: Callable[[tuple], Tensor], shape: tuple) -> Tensor:
    """A random tensor of logical ``shape`` drawn inside vmap, following each level's randomness.

    ``draw(shape)`` samples a plain tensor. Levels with 'different' get their own
    samples per batch member, levels with 'same' share one; 'error' raises.
    """
    levels = STATE.vmap_levels
    if any(level.randomness == "error" for level in levels):
        raise RuntimeError(RANDOM_ERROR)
    different = tuple(level for level in levels if level.randomness == "different")
    return from_physical(draw(tuple(level.size for level in different) + tuple(shape)), different)


# -- is_grads_batched ------------------------------------------------------------------------
def batched_grad(outputs: tuple, inputs: tuple, grad_outputs: Any, retain_graph: bool,
                 create_graph: bool) -> list:
    """``dualgrad.grad(..., is_grads_batched=True)``: one backward pass for a batch of cotangents.

    The first dimension of every ``grad_outputs`` entry is the batch; the results
    have it first too (``None`` for inputs the graph does not reach).
    """
    grads = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs or ())
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"got {len(grads)} gradients for {len(outputs)} outputs: pass one batched gradient per "
            "output with is_grads_batched=True"
        )
    for i, (g, out) in enumerate(zip(grads, outputs, strict=True)):
        if not isinstance(g, Tensor) or g.ndim == 0 or g.shape[1:] != out.shape:
            got = g.shape if isinstance(g, Tensor) else type(g).__name__
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
                f"shape of {got} and output[{i}] has a shape of {out.shape}."
            )
    sizes = [g.shape[0] for g in grads]
    if any(s != sizes[0] for s in sizes):
        raise RuntimeError(SAME_SIZE.format(sizes=sizes))
    with vmap_level(sizes[0]) as level:
        cotangents = [make_batched(g if g.dtype == out.dtype else g.to(out.dtype), 0, level.id)
                      for g, out in zip(grads, outputs, strict=True)]
        result = run_backward(outputs, cotangents, retain_graph=retain_graph,
                              create_graph=create_graph, inputs=inputs, accumulate=False)
    return [None if g is None else output_at("grad", g, 0, level, None) for g in result]


reverse_api.BATCHED_GRAD[0] = batched_grad
