"""Sparsity detection: run ``f`` once on tracer Tensors that carry index sets beside their values.

A ``Tracer`` is a Tensor (so ``f`` may be dualgrad or plain NumPy code, through NumPy
dispatch) whose elements each carry the set of inputs they depend on and, for Hessians,
the set of input pairs that interact nonlinearly in them (``_rowsets.RowSets``, one row per
element in C order). The sets live in the ``Session``, keyed by tensor; an observer
(``dualgrad.base.state.install_observer``) sees every op call, lets the op compute its value, and
computes the output's sets with the op's propagation rule (``rules.py``). In-place writes
reach the session through the observer's ``note_write`` (called by ``ops.inplace.commit``).

Global mode ignores the values (the pattern holds for every input) and refuses anything
that reads a traced value in Python (``bool``, ``float``, ``item``, ``np.asarray``); local
mode uses the values at ``x`` for selections (``where``, ``maximum``, ``clamp``, ``relu``,
max/min reductions, indices computed from values) and allows Python branches.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.state import install_observer, remove_observer
from ..tensor import Tensor
from ._rowsets import RowSets, combine

BRANCH_MESSAGE = (
    "sparsity detection (global mode) cannot follow {what} of a traced value: the pattern would then "
    "depend on the input's values. Write the branch with dualgrad/NumPy ops (np.where, np.maximum, "
    "np.clip, ...), or detect the pattern at the given point with local=True."
)
ESCAPE_MESSAGE = (
    "sparsity detection: {what} turns a traced value into a plain NumPy array, which would lose the "
    "inputs it depends on (and so miss nonzeros). Keep the computation in dualgrad/NumPy functions on "
    "the traced array (create arrays with np.zeros_like(x) / np.empty_like(x) and write into them, or "
    "use np.concatenate, np.stack, np.pad, np.where)."
)


REVERSE_MESSAGE = (
    "sparsity detection cannot follow a reverse-mode derivative inside f (func.grad, func.vjp, "
    "func.jacrev, autograd.grad, .backward()): for the pattern of a gradient's Jacobian use "
    "hessian_sparsity on the scalar function; forward-mode derivatives (func.jvp, func.jacfwd) inside "
    "f are followed."
)


class SparsityDetectionError(RuntimeError):
    """``f`` does something sparsity detection cannot follow (a branch on a traced value in global mode,
    a traced value leaving for NumPy, an output shape that depends on values)."""


class Info:
    """The index sets of one traced array: ``g`` first order, ``h`` second order (or None)."""

    __slots__ = ("g", "h")

    def __init__(self, g: RowSets, h: RowSets | None):
        self.g = g
        self.h = h


# NumPy functions that dualgrad runs on the data of its arguments (``numpy_dispatch.RAW_FUNCTIONS``) and whose
# results depend on the values: in global mode, a traced argument must not reach them
VALUE_READERS = frozenset({
    "allclose", "argpartition", "argwhere", "array_equal", "array_equiv", "bincount", "digitize", "flatnonzero",
    "histogram", "histogram_bin_edges", "isclose", "iscomplex", "isneginf", "isposinf", "isreal", "lexsort",
    "nanargmax", "nanargmin", "nonzero", "searchsorted", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values"})


class Tracer(Tensor):
    """A Tensor whose value depends on the traced input (see the module docstring)."""

    __slots__ = ()

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        if getattr(func, "__name__", None) in VALUE_READERS:
            self._refuse(f"np.{func.__name__}()")
        return super().__array_function__(func, types, args, kwargs)

    def _refuse(self, what: str, escape: bool = False) -> None:
        session = active_session()
        if session is None:
            return
        if escape:
            info = session.current(self)
            if not session.local or (info is not None and len(info.g.keys)):
                raise SparsityDetectionError(ESCAPE_MESSAGE.format(what=what))
        elif not session.local:
            raise SparsityDetectionError(BRANCH_MESSAGE.format(what=what))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """A leaf for a reverse pass: refused while detecting (the pass would drop the index sets)."""
        if requires_grad and active_session() is not None:
            raise SparsityDetectionError(REVERSE_MESSAGE)
        return super().requires_grad_(requires_grad)

    # A detached traced value has no derivative, but its values still vary with the input: it stays a
    # tracer (with empty sets), so that global mode never uses its values at x (as a mask, or as zeros
    # of a product) as if they were constants.
    def detach(self) -> Tensor:
        return _untracked_tracer(super().detach())

    def detach_(self) -> Tensor:
        super().detach_()
        return _untracked_tracer(self)

    @property
    def data(self) -> Tensor:
        return _untracked_tracer(Tensor.data.fget(self))

    @data.setter
    def data(self, value: Any) -> None:
        Tensor.data.fset(self, value)

    def __bool__(self) -> bool:
        self._refuse("bool() (an if, while, and/or)")
        return super().__bool__()

    def __float__(self) -> float:
        self._refuse("float()")
        return super().__float__()

    def __int__(self) -> int:
        self._refuse("int()")
        return super().__int__()

    def __complex__(self) -> complex:
        self._refuse("complex()")
        return super().__complex__()

    def __index__(self) -> int:
        self._refuse("an index conversion (__index__)")
        return super().__index__()

    def item(self) -> Any:
        self._refuse(".item()")
        return super().item()

    def tolist(self) -> Any:
        self._refuse(".tolist()")
        return super().tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self._refuse("np.asarray() / NumPy's conversion", escape=True)
        return super().__array__(dtype, copy)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        self._refuse(".numpy()", escape=True)
        return super().numpy(force=force)


def _untracked_tracer(t: Tensor) -> Tensor:
    session = active_session()
    if session is not None:
        session.set(t, session.empty(t._data.size))
    return t


def index_array(shape: tuple) -> np.ndarray:
    """The flat (C order) position of each element of an array of ``shape``."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


_ACTIVE = threading.local()  # this thread's detection run (observers are per thread too)


def active_session() -> Session | None:
    return getattr(_ACTIVE, "session", None)


class Session:
    """One detection run: the index sets of every traced tensor, and the observer installing the rules."""

    def __init__(self, n_inputs: int, order: int, local: bool, propagate: Callable):
        self.propagate = propagate  # rules.propagate: the output sets of one op call
        self.n = n_inputs
        self.order = order
        self.local = local
        self.entries: dict[int, tuple[Tensor, int, Info]] = {}  # id -> (tensor kept alive, version, sets)
        self.traced_arrays: set[int] = set()  # ids of the traced tensors' arrays (kept alive by ``entries``)

    # -- the sets of a tensor ---------------------------------------------------------------
    def set(self, t: Tensor, info: Info) -> None:
        if type(t) is Tensor:
            t.__class__ = Tracer
        self.entries[id(t)] = (t, t._version, info)
        self.traced_arrays.add(id(t._data))

    def current(self, t: Any) -> Info | None:
        """The sets of ``t`` now (None for a constant), following writes into its base."""
        if not isinstance(t, Tensor):
            return None
        entry = self.entries.get(id(t))
        if entry is not None and entry[0] is t and entry[1] == t._version:
            return entry[2]
        view = t._view
        if view is not None:
            base_info = self.current(view.base)
            if base_info is not None:
                rows = _view_rows(view.base, view.chain)
                info = self.take(base_info, rows)
                self.set(t, info)
                return info
            if entry is None or entry[0] is not t:
                return None
        if entry is not None and entry[0] is t:
            raise RuntimeError(
                "sparsity detection: a traced tensor was changed in place in a way detection cannot follow "
                "(resize_, .data = ..., an in-place change of shape); write the function out of place")
        return None

    def empty(self, size: int) -> Info:
        return Info(RowSets.empty(size, self.n), RowSets.empty(size, self.n * self.n) if self.order == 2 else None)

    def take(self, info: Info, rows: np.ndarray) -> Info:
        return Info(info.g.take(rows), None if info.h is None else info.h.take(rows))

    # -- the observer protocol ----------------------------------------------------------------
    def wrap_op(self, run: Callable) -> Callable:
        propagate = self.propagate

        def observed(op: Any, args: tuple, params: dict) -> Any:
            infos = [self.current(a) for a in args]
            traced = any(isinstance(a, Tracer) for a in args) or any(i is not None for i in infos)
            out = run(op, args, params)
            if not traced:
                return out
            outs = out if isinstance(out, tuple) else (out,)
            results = propagate(self, op, args, params, infos, outs)
            for o, info in zip(outs, results):
                if isinstance(o, Tensor):
                    self.set(o, info if info is not None else self.empty(o._data.size))
            return out

        return observed

    def wrap_node(self, node: Any, run: Callable) -> Callable:
        return run

    def note_write(self, t: Tensor, result: Any) -> None:
        """``t`` (a tensor or a view) was just overwritten with ``result`` (same shape) in place."""
        base, chain = (t, ()) if t._view is None else (t._view.base, t._view.chain)
        entry = self.entries.get(id(base))
        base_info = entry[2] if entry is not None and entry[0] is base else None
        new_info = self.current(result) if isinstance(result, Tensor) else None
        if base_info is None and new_info is None:
            return
        size = base._data.size
        region = _view_rows(base, chain)
        keep = np.ones(size, bool)
        keep[region] = False
        kept = np.flatnonzero(keep)
        sources_g, sources_h = [], []
        if base_info is not None:
            sources_g.append((base_info.g, kept, kept))
            sources_h.append((base_info.h, kept, kept))
        if new_info is not None:  # (``result`` has ``t``'s shape: ``inplace.commit`` checked it)
            rows = np.arange(region.size, dtype=np.int64)
            sources_g.append((new_info.g, region, rows))
            sources_h.append((new_info.h, region, rows))
        g = combine(sources_g, size, self.n)
        h = combine(sources_h, size, self.n * self.n) if self.order == 2 else None
        self.set(base, Info(g, h))


def _view_rows(base: Tensor, chain: tuple) -> np.ndarray:
    """The flat positions in ``base`` of the elements of the view ``chain`` makes of it (C order)."""
    array = index_array(base.shape)
    for op, params in chain:
        array = op.impl(array, **params)
    return np.ascontiguousarray(array).ravel()


def as_input(x: Any, fn: str) -> np.ndarray:
    """``x`` as a 1-D floating array, or the documented errors."""
    if isinstance(x, Tensor):
        x = x.detach()._data
    if not isinstance(x, (np.ndarray, list, tuple, float, int)) or isinstance(x, bool):
        raise TypeError(f"{fn}(): x must be a 1-D array or Tensor, not {type(x).__name__}")
    array = np.asarray(x)
    if array.ndim != 1:
        raise ValueError(
            f"{fn}(): x must be 1-D, got shape {array.shape}; flatten it (x.ravel()) and reshape inside f "
            "(f(z) = g(z.reshape(shape))): rows and columns are then elements in C order")
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{fn}(): x must hold real numbers, got dtype {array.dtype}")
    return array.astype(np.float64) if array.dtype.kind != "f" else array


def trace(f: Callable, x: Any, *, local: bool, order: int, fn: str, propagate: Callable) -> tuple[Info, int]:
    """Run ``f`` on a tracer of ``x``, with ``propagate`` (``rules.propagate``) giving each op's output
    sets: ``(sets of the flattened output, output size)``."""
    x = as_input(x, fn)
    n = x.size
    session = Session(n, order, local, propagate)
    start = Tracer(x.copy())
    session.set(start, Info(RowSets.identity(n), RowSets.empty(n, n * n) if order == 2 else None))
    if active_session() is not None:
        raise RuntimeError(f"{fn}(): sparsity detection cannot run inside another detection")
    _ACTIVE.session = session
    install_observer(session)
    try:
        with warnings.catch_warnings():
            if not local:  # (dualgrad.tensor(t) / t.new_tensor(t) copy the numbers: constants for every input)
                warnings.filterwarnings("error", message="To copy construct from a tensor", category=UserWarning)
            try:
                y = f(start)
            except UserWarning as warning:
                if "To copy construct from a tensor" not in str(warning):
                    raise
                raise SparsityDetectionError(
                    "sparsity detection (global mode): dualgrad.tensor(t) / t.new_tensor(t) copies the values of "
                    "a tensor into a constant, which would then stand for every input. Use t.detach().clone(), "
                    "or local=True.") from None
        if isinstance(y, Tensor):
            info = session.current(y)
            size = y._data.size
        else:
            if isinstance(y, (tuple, list)):
                raise TypeError(f"{fn}(): f must return one array or Tensor, not a {type(y).__name__} "
                                "(Tensor.max(dim) returns (values, indices), as in torch: take .values)")
            array = np.asarray(y)
            if array.dtype == object:
                raise TypeError(f"{fn}(): f must return an array or Tensor, not {type(y).__name__}")
            info, size = None, array.size
    finally:
        remove_observer(session)
        _ACTIVE.session = None
    if order == 2 and size != 1:
        raise ValueError(f"{fn}(): f must return one value (a scalar) for a Hessian, got {size} values")
    return (info if info is not None else session.empty(size)), size
