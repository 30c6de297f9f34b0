"""Fast paths: every shortcut of the plain rules, behind named entry points and one switch.

A fast path is an optimisation of one rule under stated conditions: it computes
the same values as the plain rule (the rule written with ops, dispatched) but
skips work nobody can observe, most often by writing into a temporary that only
the caller holds, or by calling NumPy directly where dispatch would only wrap it.
Everything that decides whether such a shortcut is safe is in this module; the
callers (the op families in ``ops/registry.py``, the rules of ``ops/elementwise/core.py``,
``ops/linalg/products.py`` and ``ops/reductions.py``, ``Tensor.__getitem__`` in ``ops/indexing.py``, the
reverse and forward engines) ask
an entry point and run the plain rule when it declines. Two shortcuts keep their
bookkeeping where it lives and only read the switch: forward mode's deferred
tangents (``forward_ad.engine._defer``: ``hvp`` computes every tangent when off) and
the identity bases of Jacobians (``vmap.identity_basis.identity_block_start``: ``matmul``'s
batching rule then multiplies by the basis; the values differ only where the
other operand holds ``inf`` or ``nan``, which the product spreads as NaN).

The switch
----------
``ENABLED`` is read once, when dualgrad is imported, from the environment variable
``DUALGRAD_FASTPATH``: ``0`` turns every fast path off (each entry point declines,
so every rule takes its plain form). CI runs the op-table tests both ways, which
proves each fast path equal to its plain rule::

    DUALGRAD_FASTPATH=0 python -m pytest tests/ops/test_op_table.py

Reference counts: when may a temporary be written?
--------------------------------------------------
Writing into an array changes every tensor, view, saved value or user variable
that reaches it. A write is invisible only when the writer holds the *only*
reference: to the Tensor (so no other name sees the change) and, through it, to
its array (``owns_array``: the Tensor's slot is the array's one reference, and
the array is no view of another). CPython's ``sys.getrefcount(x)`` counts every
strong reference, including the ones the check itself makes. The predicates
below therefore count, for the frame that calls them:

* getrefcount's own argument: 1;
* this module's parameter holding ``x`` (the caller's stack slot is moved into
  it on a Python-to-Python call, not copied): 1;
* the caller's name for ``x``: 1.

So ``sole_reference(x)`` (the caller's name is all) expects 3;
``add_into_buffer(buffer, grad)`` (the caller's name and one dict or list entry:
the backward engine's gradient buffers) expects 4; ``engine_only(g)`` (a gradient
inside a vjp rule that ``Op.backward`` called as ``vjp[i](g, out, *inputs)``:
the engine's list of gradients, the name ``g`` there, the call's argument tuple,
the rule's name ``g``) expects 6. A count that is higher only makes the shortcut
decline (the plain rule runs); the counts are CPython's (3.11 to 3.13), which
the fast-path tests check by spying that each shortcut is taken.

Besides the counts, a temporary must be outside any graph (no ``requires_grad``,
no version counter, no view family, not saved), carry no tangent that could be
seen, and no observer (profiler, anomaly mode) may be watching ops: those see
every op call, so a shortcut that skips dispatch would hide one from them.
"""

from __future__ import annotations

import math
import operator
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .base.dtypes import FLOATING_DTYPES, REAL_FLOATING_DTYPES
from .base.state import STATE
from .tensor import Tensor, _wrap, is_untracked_like, shared_index_params

# The params of the operators' nodes: one empty dict for all (nothing changes an op's params after the call)
_NO_PARAMS: dict = {}

# The one switch (read once): DUALGRAD_FASTPATH=0 turns every fast path off.
ENABLED: bool = os.environ.get("DUALGRAD_FASTPATH", "1").strip() != "0"

# ``tangent_at``, set by ``dualgrad.forward_ad.engine`` (the forward engine sits above this module).
TANGENT_AT: list = [None]


def _ufuncs_take_array_out() -> bool:
    """True if ufuncs accept ``out=...`` (NumPy >= 2.3): then they return 0-d results as arrays."""
    try:
        return type(np.negative(1.0, out=...)) is np.ndarray
    except TypeError:
        return False


UFUNC_ARRAY_OUT = _ufuncs_take_array_out()

# Python's operators on NumPy's real floating scalars: the same IEEE operation as the ufunc, but
# NumPy's scalar arithmetic runs it several times faster than a ufunc call on a 0-d array
# (0.25 against 0.7 microseconds for ``x * 1.01``: the per-op cost of scalar code such as W1)
_SCALAR_OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
                     np.true_divide: operator.truediv}


def scalar_operator(impl: Any) -> Any:
    """The Python operator that dispatch may run instead of the ufunc ``impl`` on two real floating
    scalars (``Op.scalar_impl``), or None."""
    return _SCALAR_OPERATORS.get(impl) if ENABLED else None


# -- selecting without branches -----------------------------------------------------------------------
# The integer dtype of each real floating dtype's width: its bit patterns, for ``select_or_zero``
_BITS = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32, np.dtype(np.float16): np.int16}


def select_or_zero(condition: Any, x: Any, y: Any) -> np.ndarray | None:
    """``np.where(condition, x, y)`` when one of ``x``, ``y`` is the number 0 (``+0.0``) and the other a
    native real floating array: the other's bit patterns ANDed with an all-ones or all-zeros mask
    (the same bits, including NaN payloads and signed zeros, where it is selected; ``+0.0`` elsewhere);
    None otherwise (the caller runs ``np.where``).

    NumPy's ``where`` branches per element, which costs about four times a product when the
    condition has no pattern (``relu``'s gradient ``where(out > 0, g, 0)``); the mask has none.
    """
    if not ENABLED or type(condition) is not np.ndarray or condition.dtype.kind != "b":
        return None
    if type(x) is np.ndarray and type(y) in (float, int) and y == 0 and math.copysign(1.0, y) > 0:
        values, keep = x, True
    elif type(y) is np.ndarray and type(x) in (float, int) and x == 0 and math.copysign(1.0, x) > 0:
        values, keep = y, False
    else:
        return None
    bits = _BITS.get(values.dtype)
    if bits is None or not values.ndim or not values.dtype.isnative:
        return None
    # all ones (-1) where ``values`` is kept, 0 elsewhere
    mask = np.subtract(0, condition, dtype=bits) if keep else np.subtract(condition, 1, dtype=bits)
    shape = np.broadcast_shapes(condition.shape, values.shape)
    out = mask if mask.shape == shape else None
    return np.bitwise_and(values.view(bits), mask, out=out).view(values.dtype)


# -- operators that no mode can see ---------------------------------------------------------------------
def quiet_operator(op: Any, plain: Callable, call: Callable, record: Callable) -> Callable:
    """The Tensor operator ``self <op> other`` (``__mul__``, ...): ``plain``, the public function whose
    ``plain(self, other)`` is ``apply(op, self, other)`` (dispatch; ``op`` a binary elementwise ufunc of
    the op table), or, with the fast paths on, an operator that takes dispatch's common path itself.

    That path, when no vmap, observer, dual level or inference mode is active, ``self`` is a Tensor
    (no view, or a view whose graph is up to date: nothing to rebuild) of a floating or complex dtype,
    and ``other`` such a Tensor of the same dtype or a Python float or int (no type promotion), is:
    ``op.impl(a, b)`` on the arrays (or, when both are single real values, ``op.scalar_impl``, NumPy's
    scalar arithmetic, as dispatch does; other 0-d operands go to dispatch), wrapped in a new Tensor,
    and, if grad mode is on and an operand requires grad, dispatch's ``record(op, (self, other), {},
    out, needs, flags)`` (``dispatch._record``). That is what dispatch does then, after about twenty
    tests that these few replace. Otherwise the operator is ``plain`` (which, for a forward operator,
    also defers to array types that take precedence under NumPy's rules: the operator then does, as
    its ``defers`` attribute says). A broadcast error goes to dispatch (``call``: ``dispatch._apply``),
    which raises torch's. Benchmarks M1 and M2
    (a recorded and an unrecorded ``y * w`` on 16 elements) measure what this saves.
    """
    if not ENABLED or not isinstance(op.impl, np.ufunc) or not op.plain:
        return plain
    state = STATE
    scalar = op.scalar_impl  # (Python's operator on two real floating values: see ``scalar_operator``)

    def operator(self: Any, other: Any) -> Any:
        flags = state.__dict__
        if (flags["vmap_depth"] or flags["observed"] or flags["dual_levels"] or flags["inference_mode"]
                or type(self) is not Tensor):
            return plain(self, other)
        a = self._data
        dtype = a.dtype
        view = self._view
        if dtype not in FLOATING_DTYPES or view is not None and view.version != self._counter.value:
            return plain(self, other)
        kind = type(other)
        if kind is Tensor:
            b = other._data
            view = other._view
            if b.dtype is not dtype or view is not None and view.version != other._counter.value:
                return plain(self, other)
            if a.ndim:
                try:
                    data = op.impl(a, b)
                except ValueError:  # (shapes that do not broadcast: dispatch raises torch's error)
                    return call(op, (self, other), {}, flags)
            elif b.ndim:
                data = op.impl(a, b)
            elif scalar is not None and dtype in REAL_FLOATING_DTYPES:
                data = np.asarray(scalar(a[()], b[()]))
            else:
                return plain(self, other)
        elif kind is float or kind is int:
            if a.ndim:
                data = op.impl(a, other)
            elif scalar is not None and dtype in REAL_FLOATING_DTYPES:
                data = np.asarray(scalar(a[()], other))
            else:
                return plain(self, other)
        else:
            return plain(self, other)
        out = _wrap(data)  # (through ``tensor._new``, which dualgrad.compile watches for other threads' tensors)
        if flags["grad_enabled"]:
            if kind is Tensor:
                if self._requires_grad or other._requires_grad:
                    record(op, (self, other), _NO_PARAMS, out, (self._requires_grad, other._requires_grad), flags)
            elif self._requires_grad:
                record(op, (self, other), _NO_PARAMS, out, (True, False), flags)
        return out

    operator.__name__ = operator.__qualname__ = plain.__name__
    operator.__doc__ = plain.__doc__
    operator.defers = getattr(plain, "defers", False)
    return operator


def quiet_getitem(op: Any, plain: Callable, make_view: Callable, record: Callable) -> Callable:
    """``Tensor.__getitem__``: ``plain(self, index)`` (``indexing.getitem``, which dispatches ``op``,
    the op table's ``getitem``), or, with the fast paths on, a method that takes dispatch's path for
    the common basic index itself.

    That path, when no vmap, observer, dual level or inference mode is active, ``self`` is a Tensor
    (no view, or a view whose graph is up to date) and ``index`` an int, a slice or a tuple of them
    (``x[3]``, ``x[1:4]``, ``x[2, 0:3]``), is what dispatch does for a view op then: the view
    ``data[index + (...,)]`` (always a view of ``self``'s memory, 0-d for an all-integer index),
    wrapped in a new Tensor, made a view of ``self``'s base (``make_view``: ``dispatch.make_view``)
    and, if grad mode is on and ``self`` requires grad, recorded (``record``: ``dispatch._record``),
    with the parameters ``{"index": index as a tuple}`` that ``getitem`` would pass (the dict dispatch
    shares among all calls with that index: ``tensor.shared_index_params``). Without the
    checks of ``getitem`` (``normalize_index``, batched entries) and of dispatch (shared memory, the
    operands' kinds). An index out of range goes to ``plain``, which raises the documented error.
    """
    if not ENABLED:
        return plain
    state = STATE

    def getitem(self: Any, index: Any) -> Any:
        flags = state.__dict__
        if (flags["vmap_depth"] or flags["observed"] or flags["dual_levels"] or flags["inference_mode"]
                or type(self) is not Tensor):
            return plain(self, index)
        kind = type(index)
        if kind is int or kind is slice:
            index = (index,)
        elif kind is not tuple:
            return plain(self, index)
        params = shared_index_params(index)  # (None unless ints and slices)
        if params is None:
            return plain(self, index)
        view = self._view
        if view is not None and view.version != self._counter.value:  # (a stale view: rebuilt by dispatch)
            return plain(self, index)
        try:
            out = _wrap(self._data[index + (Ellipsis,)])
        except IndexError:
            return plain(self, index)
        grad_mode = flags["grad_enabled"]
        make_view(self, out, ((op, params),), grad_mode)
        if grad_mode and self._requires_grad:
            record(op, (self,), params, out, (True,), flags)
        return out

    getitem.__name__ = getitem.__qualname__ = "__getitem__"
    getitem.__doc__ = plain.__doc__
    return getitem


# -- reference counts (see the module docstring) ---------------------------------------------------
def sole_reference(x: Any) -> bool:
    """True if the caller's name is the only reference to ``x``."""
    return ENABLED and sys.getrefcount(x) == 3  # the caller's name, this parameter, getrefcount's argument


# The references to a gradient ``g`` inside a vjp rule that the backward engine called (see the
# module docstring), plus this module's parameter and getrefcount's argument.
_ENGINE_ONLY = 6


def engine_only(g: Any) -> bool:
    """True if ``g``, the gradient a vjp rule received, is held by nothing but the backward engine and the rule.

    The rule may then write into it (``scale_into``, ``multiply_into``). Ask before passing ``g`` on.
    """
    return ENABLED and sys.getrefcount(g) == _ENGINE_ONLY


def owns_array(x: Tensor) -> bool:
    """True if ``x``'s array is no view and ``x``'s slot is its only reference."""
    return ENABLED and x._data.base is None and sys.getrefcount(x._data) == 2  # x's slot and the argument


def is_private_temporary(x: Any) -> bool:
    """True if ``x`` is a plain Tensor outside any graph, view family or saved value, owning an
    array that nothing else references: writing into it cannot be seen, provided that the
    caller also holds the only reference to ``x`` (and checks its tangents)."""
    return (type(x) is Tensor and not x._requires_grad and x._counter is None and x._view is None
            and owns_array(x))


def private_tangent(x: Tensor, level: Any) -> Tensor | None:
    """``x``'s tangent at ``level`` if writing into it cannot be seen, else None.

    That is a private temporary (``is_private_temporary``) that only ``x``'s tangent
    dict references, untracked and of ``x``'s shape and dtype (``is_untracked_like``).
    The caller must not hold a reference to the tangent before asking.
    """
    tangent = x._fw.get(level)
    # references to tangent: x's tangent dict, this name and getrefcount's argument
    if (tangent is None or not ENABLED or sys.getrefcount(tangent) != 3 or not is_untracked_like(tangent, x)
            or not is_private_temporary(tangent)):
        return None
    return tangent


# -- computing where nothing can see it -------------------------------------------------------------
def may_have_tangent(x: Tensor) -> bool:
    """True if ``x`` has tangents, its own or (a view) its base's."""
    return bool(x._fw) or (x._view is not None and bool(x._view.base._fw))


def unseen(a: Any) -> bool:
    """True if an op on ``a`` (a plain Tensor) would only compute: no mode can see it.

    That is no observer, no inference mode, no node to record (grad mode off, or ``a``
    does not require grad) and no tangent to propagate. A rule whose operands are all
    unseen may then call NumPy directly and wrap the result, as dispatch would
    (``linalg``'s matmul rules, ``reductions.expand_reduced``).
    """
    flags = STATE.__dict__
    return (ENABLED and type(a) is Tensor and not flags["observed"] and not flags["inference_mode"]
            and not (flags["grad_enabled"] and a._requires_grad)
            and not (flags["dual_levels"] and may_have_tangent(a)))


def unseen_real_arrays(*tensors: Any) -> tuple | None:
    """The arrays of ``tensors`` if no mode can see any of them (``unseen``) and all are of one real
    floating dtype, else None: a rule may then compute with NumPy directly, as dispatch would."""
    for t in tensors:
        if not unseen(t):
            return None
    arrays = tuple(t._data for t in tensors)
    dtype = arrays[0].dtype
    if dtype not in REAL_FLOATING_DTYPES or any(a.dtype is not dtype for a in arrays):
        return None
    return arrays


def unseen_product(g: Any, d: Any, keep_broadcast: bool = True) -> Tensor | None:
    """``g * d`` computed by NumPy directly when no mode can see the product, else None.

    That is when ``g`` and ``d`` (a Tensor or a real number) are plain Tensors that
    do not require grad and carry no tangents, and no observer is active: then
    dispatching ``mul`` would only run ``np.multiply`` and wrap the result. On small
    arrays the dispatch costs several times the product (the scalar chain of W1).
    A ``g`` that is a broadcast of one value times a number stays a broadcast
    (``broadcast_product``) if ``keep_broadcast``: a gradient, which the backward
    engine makes dense before returning it. Not a tangent, which users receive as
    it is (``unpack_dual``) and may write into, as torch's.
    """
    flags = STATE.__dict__  # (a dict read costs less than a thread-local attribute)
    number = type(d) is float or type(d) is int
    if (not ENABLED or type(g) is not Tensor or g._requires_grad or flags["observed"]
            or not (number or (type(d) is Tensor and not d._requires_grad))):
        return None
    if flags["dual_levels"] and (may_have_tangent(g) or (not number and may_have_tangent(d))):
        return None
    data = g._data
    other = d if number else d._data
    if not data.ndim and data.dtype in REAL_FLOATING_DTYPES and (
            number or not other.ndim and other.dtype is data.dtype):  # (one value: see Op.scalar_impl)
        return _wrap(np.asarray(data[()] * (other if number else other[()])))
    if number and keep_broadcast and data.strides and not any(data.strides):  # (a 0-d array has no strides)
        return _broadcast_of_product(data, d)
    if UFUNC_ARRAY_OUT:
        return _wrap(np.multiply(data, other, out=...))
    return _wrap(np.asarray(np.multiply(data, other)))


def broadcast_product(g: Any, c: float) -> Tensor | None:
    """``g * c`` as a broadcast of one value, if ``g`` is one (all strides 0, as ``sum``'s gradient)
    that does not require grad and carries no tangents (a number ``c``); else None.

    One multiplication instead of a full-size pass. The result is read-only, as
    ``expand``'s are; ``dualgrad.grad`` (any returned gradient) makes it a dense array.

    >>> import dualgrad as dg
    >>> product = broadcast_product(dg.tensor(1.0).expand(3), 2.0)  # (None with DUALGRAD_FASTPATH=0)
    >>> product.tolist() if ENABLED else [2.0, 2.0, 2.0]
    [2.0, 2.0, 2.0]
    >>> broadcast_product(dg.ones(3), 2.0) is None
    True
    """
    if (not ENABLED or type(g) is not Tensor or g._requires_grad or STATE.observed
            or (STATE.dual_levels and may_have_tangent(g))):
        return None
    data = g._data
    if data.size <= 1 or any(data.strides):
        return None
    return _broadcast_of_product(data, c)


def _broadcast_of_product(data: np.ndarray, c: Any) -> Tensor:
    """``data * c`` for an array of one value broadcast (all strides 0): one element multiplied."""
    element = data[(slice(0, 1),) * data.ndim]  # (a view of shape (1, ..., 1): NumPy's dtype rules apply)
    return _wrap(np.broadcast_to(np.multiply(element, c), data.shape))


# -- writing into temporaries -----------------------------------------------------------------------
def is_scratch(x: Any, other: Any) -> bool:
    """True if ``x`` is an untracked temporary that can take ``x <op> other`` in place.

    ``x`` must be a private temporary (``is_private_temporary``: outside any graph,
    view family or saved value, owning an array that nothing else references)
    without tangents, with the shape and dtype of the result (those of ``other``);
    ``other`` must be untracked (or grad mode off) and without tangents too, or the op
    would have to record a node or a tangent. The caller checks that it holds the only reference
    to ``x`` itself.
    """
    return (type(other) is Tensor and not (other._requires_grad and STATE.grad_enabled) and not other._fw
            and (other._view is None or not other._view.base._fw)  # (a view may take its base's tangent)
            and is_private_temporary(x) and not x._fw
            and x._data.shape == other._data.shape and x._data.dtype == other._data.dtype)


def scale_into(g: Any, c: float) -> bool:
    """Write ``g * c`` into ``g`` (and its tangent) if it is a private temporary; False if not done.

    The caller checks that it holds the only reference to ``g`` itself (``engine_only``).
    """
    if type(g) is not Tensor or g._requires_grad or STATE.observed or not is_private_temporary(g):
        return False
    if g._fw:  # forward over reverse: one level, with a private tangent
        levels = STATE.dual_levels
        tangent = private_tangent(g, levels[0]) if len(levels) == 1 and len(g._fw) == 1 else None
        if tangent is None:
            return False
        np.multiply(tangent._data, c, out=tangent._data)
    np.multiply(g._data, c, out=g._data)
    return True


def multiply_into(x: Tensor, other: Any) -> bool:
    """Write ``x * other`` into ``x``, a temporary its caller holds the only reference to; False if not done.

    Done when ``x`` is scratch (``is_scratch``) or a scratch dual temporary
    (``_scratch_dual_level``, forward over reverse): then ``x``'s tangent takes the
    product rule ``t_other * x + other * t_x``, as ``mul``'s jvp would compute it.
    An ``other`` that is a broadcast 1 without tangent (a ``sum``'s gradient seeded
    with 1) leaves ``x`` as it is: ``x * 1 == x`` exactly.
    """
    if is_scratch(x, other):
        if not _is_broadcast_one(other._data):
            np.multiply(x._data, other._data, out=x._data)
        return True
    level = _scratch_dual_level(x, other)
    if level is None:
        return False
    tangent, other_tangent = x._fw[level]._data, TANGENT_AT[0](other, level)
    if other_tangent is None:
        if not _is_broadcast_one(other._data):
            np.multiply(tangent, other._data, out=tangent)
            np.multiply(x._data, other._data, out=x._data)
    else:
        _product_rule_into(x._data, tangent, other._data, other_tangent._data)
    return True


def _is_broadcast_one(a: np.ndarray) -> bool:
    """True if every element of ``a`` is the one value 1 in memory (all strides 0: a broadcast).

    (Only arrays of several elements: for one element the check would cost more than the product.)
    """
    return a.size > 1 and not any(a.strides) and a.flat[0] == 1


_BLOCK = 1 << 15  # elements per block of _product_rule_into: its temporary stays small (and in cache)


def _product_rule_into(x: np.ndarray, t_x: np.ndarray, y: np.ndarray, t_y: np.ndarray) -> None:
    """``t_x <- t_x * y + t_y * x``, then ``x <- x * y`` (arrays of one shape), a block of rows at a time.

    The term ``t_y * x`` needs the old ``x``: taken block by block, its temporary
    is one block instead of one more full-size array.
    """
    if x.ndim == 0:
        x, t_x, y, t_y = (a.reshape(1) for a in (x, t_x, y, t_y))  # (views)
    rows = x.shape[0]
    step = max(1, _BLOCK * rows // max(x.size, 1))
    cross = np.empty((min(step, rows),) + x.shape[1:], x.dtype)
    for start in range(0, rows, step):
        xb, yb, tb = x[start:start + step], y[start:start + step], t_x[start:start + step]
        term = np.multiply(t_y[start:start + step], xb, out=cross[:len(xb)])
        np.multiply(tb, yb, out=tb)
        np.add(tb, term, out=tb)
        np.multiply(xb, yb, out=xb)


def _scratch_dual_level(x: Any, other: Any) -> Any:
    """The one active dual level if ``x`` is a dual temporary that can take ``x <op> other`` in place, else None.

    As ``is_scratch``, except that ``x`` has a tangent at that level (and no
    other), itself a private temporary that only ``x`` holds, and that ``other``
    may have an untracked tangent there; no tangent may have tangents of its own.
    """
    levels = STATE.dual_levels
    fw = x._fw
    if (len(levels) != 1 or not fw or len(fw) != 1 or type(other) is not Tensor
            or (other._requires_grad and STATE.grad_enabled) or not is_private_temporary(x)
            or x._data.shape != other._data.shape or x._data.dtype != other._data.dtype):
        return None
    level = levels[0]
    if private_tangent(x, level) is None:
        return None
    other_tangent = TANGENT_AT[0](other, level)
    if other_tangent is not None and not is_untracked_like(other_tangent, x):
        return None
    return level


# -- the backward engine's gradient buffers ---------------------------------------------------------
def add_into_buffer(buffer: Any, grad: Tensor) -> bool:
    """Write ``buffer + grad`` into ``buffer``, a gradient that only the caller and its container hold.

    False (nothing done) when another reference, an observer or the checks of ``add_in_place`` forbid it.
    """
    # references to buffer: the engine's dict or list, the engine's name, this parameter and getrefcount's argument
    return ENABLED and sys.getrefcount(buffer) == 4 and not STATE.observed and add_in_place(buffer, grad)


def add_in_place(buffer: Tensor, grad: Any, index: tuple | None = None) -> bool:
    """Write ``buffer + grad`` into ``buffer`` (a temporary nobody else sees); False if that would show.

    ``grad`` must be untracked, of ``buffer``'s shape and dtype. Tangents (forward over
    reverse, one active dual level): ``buffer``'s tangent must be private too and takes
    ``grad``'s in place; a ``buffer`` without tangent takes ``grad``'s tangent as it is
    (as ``add``'s jvp does). With a view ``index`` (see ``scatter_into_buffer``), ``grad``
    is added to ``buffer[index]`` only, and has that block's shape.
    """
    if type(grad) is not Tensor or grad._requires_grad or not is_private_temporary(buffer):
        return False
    data = buffer._data if index is None else buffer._data[index]
    if data.shape != grad._data.shape or data.dtype != grad._data.dtype:
        return False
    levels = STATE.dual_levels
    if not (buffer._fw or grad._fw or (grad._view is not None and grad._view.base._fw)):
        np.add(data, grad._data, out=data)
        return True
    if len(levels) != 1 or not _only_level(buffer, levels[0]) or not _only_level(grad, levels[0]):
        return False
    level = levels[0]
    grad_tangent = grad._fw[level] if grad._fw else None
    if grad_tangent is not None and not is_untracked_like(grad_tangent, grad):
        return False
    if buffer._fw:
        tangent = private_tangent(buffer, level)
        if tangent is None:
            return False
        if grad_tangent is not None:
            block = tangent._data if index is None else tangent._data[index]
            np.add(block, grad_tangent._data, out=block)
    elif grad_tangent is not None:
        if index is not None:  # (the tangent outside the block would have to be made of zeros)
            return False
        buffer._fw = {level: grad_tangent}
    np.add(data, grad._data, out=data)
    return True


def scatter_into_buffer(node: Any, grad: Tensor | None, buffers: dict) -> bool:
    """Add ``grad`` into the gradient that the node's input has already received, at the op's
    ``scatter_index``; False (nothing done) unless that gradient is a private temporary.

    For ops whose vjp is "zeros of the input's shape with ``grad`` at a basic index"
    (``x[1:]``): a tensor used through several slices then gets one full-size gradient and
    an in-place add per further slice, instead of a full-size scatter and sum for each.
    """
    hooks = node._hooks
    if not ENABLED or grad is None or (hooks is not None and hooks.post):
        return False
    index = node.op.scatter_index(node)
    if index is None:
        return False
    ((target, nr),) = node.edges
    if type(target) is Tensor:
        buffer = buffers.get(target)
    else:
        held = buffers.get(target)
        buffer = None if held is None else held[nr]
    # references to buffer: the dict or list in buffers, this name and getrefcount's argument
    return buffer is not None and sys.getrefcount(buffer) == 3 and add_in_place(buffer, grad, index)


def _only_level(x: Tensor, level: Any) -> bool:
    """True if ``x``'s tangents are at most one, at ``level``, and held by ``x`` itself (not a view's)."""
    fw = x._fw
    if fw:
        return len(fw) == 1 and level in fw
    return x._view is None or not x._view.base._fw
