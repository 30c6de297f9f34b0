"""The one dispatch point: every op call goes through ``apply``.

Modes are handled in a fixed order:

1. batching: inside ``vmap``, arguments that are batched go to the op's batching rule;
2. primal: the op's NumPy implementation on the raw arrays;
3. tape: when grad mode is on and an input requires grad, a graph node;
4. tangents: for each active dual level where an input has a tangent, the op's jvp
   (after the tape, so that a rule reading the output differentiates through it);
5. observers: the profiler and anomaly mode wrap the whole call.

With no vmap, no dual level and no observer, steps 1, 4 and 5 cost one flag check each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import tensor as tensor_module
from ..base.dtypes import FLOATING_DTYPES, REAL_FLOATING_DTYPES, is_differentiable_dtype
from ..base.state import STATE
from ..forward_ad.engine import propagate_tangents
from ..reverse.node import new_node, new_node1, new_node2
from ..reverse.saved import SavedTensor, fold_input, fold_output, save_tensor
from ..tensor import (
    _METAS,
    Tensor,
    ViewInfo,
    _wrap,
    custom_function_view_error,
    inherit_inference,
    mark_inference,
    meta_of,
    shared_index_params,
    wrap_operand,
)
from ..vmap.batching import run as run_batched  # the batched result, or NotImplemented when no argument is batched
from .promotion import default_float_result, promote

_ndarray = np.ndarray
NO_EDGE = (None, 0)
_NO_METAS: dict = {}

# ``Op.pack_order`` of the binary ops whose torch nodes save ``other`` before ``self`` (most of them);
# recording and unpacking test for this very object
OTHER_FIRST = (1, 0)


def tensor_arg(x: Any, fn: str) -> Tensor:
    """``x`` as a Tensor: arrays and numbers are wrapped, anything else is a TypeError."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic, int, float, complex)):
        array = np.asarray(x)
        if array.dtype.kind == "O" and isinstance(x, int):  # (beyond NumPy's integers, as dualgrad.tensor)
            raise ValueError("Overflow when unpacking long long")
        return wrap_operand(array) if isinstance(x, np.ndarray) else _wrap(array)
    raise TypeError(f"{fn}(): argument 'input' must be a Tensor, not {type(x).__name__}")


def apply(op: Any, *args: Any, **params: Any) -> Any:
    """Run ``op`` on ``args`` (Tensors or constants) with keyword ``params``."""
    flags = STATE.__dict__  # this thread's modes: a dict read costs less than a thread-local attribute
    if flags["vmap_depth"]:
        result = run_batched(op, args, params)
        if result is not NotImplemented:
            return result
    if flags["observed"]:
        return _apply_observed(op, args, params)
    return _apply(op, args, params, flags)


def _apply(op: Any, args: tuple, params: dict, flags: dict) -> Any:
    """The call itself; ``flags`` is ``STATE.__dict__``."""
    n = len(args)
    try:  # (one and two arguments spelled out: a comprehension is a function call in Python 3.11)
        if n == 1:
            a = args[0]
            a = a._data if isinstance(a, Tensor) else a
            # a ufunc's 0-d result comes back as an array with out=..., not as a NumPy scalar to convert
            data = op.impl(a, out=...) if op.ufunc_out and not params else op.impl(a, **params)
            if type(a) is _ndarray and a.dtype not in FLOATING_DTYPES and op.family == "elementwise" and not params:
                data = default_float_result(data)
        elif n == 2:
            a, b = args
            # torch's type promotion (``promote``), except where NumPy's dtype is torch's: an array
            # of a floating dtype with a Python float or int (``x * 1.01``, ``1 - x``) or with an
            # array of its dtype (the common cases first, with the fewest tests)
            if isinstance(a, Tensor):
                a = a._data
                if type(b) is float:
                    if a.dtype not in FLOATING_DTYPES:
                        a, b = promote(op, (a, b))
                elif isinstance(b, Tensor):
                    b = b._data
                    if b.dtype is not a.dtype or a.dtype not in FLOATING_DTYPES:
                        a, b = promote(op, (a, b))
                elif type(b) is not int or a.dtype not in FLOATING_DTYPES:
                    a, b = promote(op, (a, b))
            else:
                b = b._data if isinstance(b, Tensor) else b
                if (type(b) is not _ndarray or b.dtype not in FLOATING_DTYPES
                        or type(a) is not float and type(a) is not int):
                    a, b = promote(op, (a, b))
            # one value of a real floating dtype with a number or another one: NumPy's scalar arithmetic
            # (see Op.scalar_impl)
            if (op.scalar_impl is not None and type(a) is _ndarray and not a.ndim
                    and a.dtype in REAL_FLOATING_DTYPES and not params
                    and (type(b) is float or type(b) is int
                         or type(b) is _ndarray and not b.ndim and b.dtype is a.dtype)):
                data = op.scalar_impl(a[()], b if type(b) is not _ndarray else b[()])
            elif params or not op.ufunc_out:
                data = op.impl(a, b, **params)
            elif type(a) is _ndarray and a.ndim:  # (the result is an array: ``out=...`` would only cost)
                data = op.impl(a, b)
            else:
                data = op.impl(a, b, out=...)
        else:
            arrays = [a._data if isinstance(a, Tensor) else a for a in args]
            data = op.impl(*(arrays if op.promotion is None else promote(op, arrays)), **params)
    except ValueError:
        _check_broadcast(op, args)
        raise
    except AttributeError as exc:  # NumPy calling a method of a non-numeric argument (None, str, ...)
        kinds = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"{op.name}(): unsupported argument types ({kinds})") from exc
    if op.plain:  # (most ops: one test instead of three)
        out = _wrap(data if type(data) is _ndarray else np.asarray(data))
    else:
        if op.multi_output:
            out = tuple(_wrap(d if type(d) is _ndarray else np.asarray(d)) for d in data)
        else:
            out = _wrap(data if type(data) is _ndarray else np.asarray(data))
        if not op.differentiable:
            return out
        if op.view:
            if len(params) == 1 and type(params.get("index")) is tuple:  # (``x[1:3]``: see shared_index_params)
                params = shared_index_params(params["index"]) or params
            _mark_view(args[0], params, out, op, flags["grad_enabled"])
    if flags["grad_enabled"]:
        # (_tracks is called only for views and constants other than floats: the fast tests
        # for the common tensor and the common constant, as in ``x * 1.01``)
        if n == 1:
            a = args[0]
            needs = (a._requires_grad if type(a) is Tensor and a._view is None else _tracks(a),)
        elif n == 2:
            a, b = args
            needs = (a._requires_grad if type(a) is Tensor and a._view is None else _tracks(a),
                     b._requires_grad if type(b) is Tensor and b._view is None
                     else type(b) is not float and _tracks(b))
        else:
            needs = tuple([_tracks(a) for a in args])
        if True in needs:
            _record(op, args, params, out, needs, flags)
    elif flags["inference_mode"]:  # (ops never record in it: the recording path pays nothing)
        for t in out if type(out) is tuple else (out,):
            if t._view is None:  # (a view is one when its base is: make_view)
                mark_inference(t)
    if flags["dual_levels"]:
        propagate_tangents(op, args, params, out)
    return out


def _tracks(a: Any) -> bool:
    """True if ``a`` is a Tensor that requires grad (a view whose family changed in place is rebuilt first)."""
    if not isinstance(a, Tensor):
        return False
    view = a._view
    if view is not None and view.version != a._counter.value:
        regenerate_view(a)
    return a._requires_grad


def _check_broadcast(op: Any, args: tuple) -> None:
    """Raise torch's error (naming the op and both shapes) if elementwise operands do not broadcast."""
    if op.family != "elementwise":
        return
    shapes = [np.shape(a._data if isinstance(a, Tensor) else a) for a in args]
    for i, first in enumerate(shapes):
        for second in shapes[i + 1:]:
            for dim in range(1, min(len(first), len(second)) + 1):
                a, b = first[-dim], second[-dim]
                if a != b and a != 1 and b != 1:
                    raise RuntimeError(
                        f"{op.name}: The size of tensor a ({a}) must match the size of tensor b ({b}) "
                        f"at non-singleton dimension {max(len(first), len(second)) - dim}: "
                        f"shapes {first} and {second} cannot be broadcast together"
                    )


def _mark_view(x: Any, params: dict, out: Tensor, op: Any, grad_mode: bool) -> None:
    """Make ``out`` a view of ``x``'s base if the op returned memory shared with ``x``."""
    if not isinstance(x, Tensor) or not is_view_of(out._data, x._data):
        return
    make_view(x, out, ((op, params),), grad_mode)


def _owner(a: np.ndarray) -> Any:
    while a.base is not None:
        a = a.base
    return a


def is_view_of(out: np.ndarray, x: np.ndarray) -> bool:
    """True if ``out`` is a view of ``x``'s memory. An empty one covers no bytes: it is a view
    when NumPy made it from the array that owns ``x``'s memory (``x[2:2]``, as torch's)."""
    if np.may_share_memory(out, x):
        return True
    return out.size == 0 and out.base is not None and _owner(out) is _owner(x)


def make_view(x: Tensor, view: Tensor, steps: tuple, grad_mode: bool) -> None:
    """Make ``view`` a view of ``x``'s base: its version counter, rebuilt from the base by ``steps``.

    ``steps`` are ``(op, params)`` pairs of one-output view ops, applied after ``x``'s own.
    A view made in inference mode (grad mode off) has ``grad_mode`` None; it is an
    inference tensor exactly when its base is one (as in torch).
    """
    view._counter = counter = x._version_counter()
    info = x._view
    if not grad_mode and STATE.inference_mode:
        grad_mode = None
    # (a view of a view keeps the ViewInfo of the view it was made from: its steps come first)
    base = x if info is None else info.base
    view._view = ViewInfo(base, steps, counter.value, grad_mode, info)
    inherit_inference(base, view)


def check_view_geometry(view: Tensor) -> None:
    """Raise unless the view's steps, replayed on its base, still give the view's memory.

    They do not once the base itself changed shape in place (``t_``, ``unsqueeze_``, ``resize_``, ...,
    or ``base.data = ...``): a graph rebuilt from the base would then be the wrong one.
    """
    info = view._view
    array = info.base._data
    for op, params in info.chain:
        array = op.impl(array, **params)
    data = view._data
    if (array.shape != data.shape or array.strides != data.strides
            or array.__array_interface__["data"][0] != data.__array_interface__["data"][0]):
        raise RuntimeError(
            f"a view of shape {list(data.shape)} cannot be rebuilt from its base of shape "
            f"{list(info.base.shape)}: the base changed shape or memory in place (t_, transpose_, "
            "unsqueeze_, squeeze_, resize_, .data = ...) after the view was made. Take the view again "
            "from the base, or change the shape out of place."
        )


def regenerate_view(view: Tensor) -> None:
    """Rebuild a view's ``grad_fn`` from its base after an in-place change of the family."""
    info = view._view
    base = info.base
    if not (info.grad_mode and base._requires_grad):
        info.version = view._counter.value
        return
    if info.grad_mode is not True:  # (an output of a custom Function: its backward would be bypassed)
        raise custom_function_view_error(info.grad_mode, base_changed=True)
    check_view_geometry(view)
    info.version = view._counter.value
    flags = STATE.__dict__
    grad_mode, flags["grad_enabled"] = flags["grad_enabled"], True
    try:
        current = base
        for op, params in info.chain:
            current = _apply(op, (current,), params, flags)
    finally:
        flags["grad_enabled"] = grad_mode
    view._grad_fn = current._grad_fn
    view._output_nr = current._output_nr
    view._requires_grad = current._requires_grad
    view._follow_retained_grad()


tensor_module.REGENERATE_VIEW[0] = regenerate_view


def _apply_observed(op: Any, args: tuple, params: dict) -> Any:
    """The same call, wrapped by every installed observer (profiler, anomaly mode)."""

    def run(op: Any, args: tuple, params: dict) -> Any:
        return _apply(op, args, params, STATE.__dict__)

    for observer in STATE.observers:
        run = observer.wrap_op(run)
    return run(op, args, params)


def _record(op: Any, args: tuple, params: dict, out: Any, needs: tuple, flags: dict | None = None) -> None:
    """Attach a graph node for this call to its output(s); ``needs[i]``: does argument i require grad?
    (``flags``: ``STATE.__dict__`` if the caller has it.)"""
    known = op.saves_by_needs  # None, or what to save by which inputs need a gradient (Op.saves_for)
    if known is None:
        save_inputs, save_out = op.save_inputs, op.save_out
    else:
        saves = known.get(needs)
        save_inputs, save_out = saves if saves is not None else op.saves_for(needs)
    n = len(args)
    if n > 2 or op.multi_output:
        _record_general(op, args, params, out, needs, save_inputs, save_out)
        return
    # The compact node (``Node.__slots__``): of each Tensor argument it keeps the Tensor itself when
    # saved ("folded", with its version), a SavedTensor under saved-tensor hooks, else its TensorMeta
    # (shape and dtype); a constant as it is, a NumPy array its rules read as a copy (no version
    # counter would see the caller change it before the backward pass). (One and two arguments
    # spelled out, as in _apply: the common calls build no tuple and call no helper per argument.)
    # (``fold_input`` spelled out for the common case, a plain Tensor without saved-tensor hooks)
    hooked = (STATE.__dict__ if flags is None else flags)["saved_tensor_hooks"]
    if n == 1:
        a = args[0]  # a Tensor that requires grad, or nothing would be recorded
        version = None
        if save_inputs is True or (save_inputs is not False and save_inputs[0]):
            if not hooked and type(a) is Tensor and a._extra is None:
                version = 0 if a._counter is None else a._counter.value
            else:
                version = fold_input(a)
            kept, saved = (a, ()) if version is not None else _saved_input(a)
        else:
            data = a._data
            kept, saved = _METAS.get(data.dtype, _NO_METAS).get(data.shape) or meta_of(data), ()
        node = new_node1(op, a._grad_fn or a, a._output_nr, kept, version, saved, params)
    else:
        a, b = args
        save_a, save_b = (save_inputs, save_inputs) if type(save_inputs) is bool else save_inputs
        if hooked and op.pack_order is not None and save_a and save_b:  # (hooks see the order: torch's)
            kept_a, kept_b = _kept_in_order(op, args, True)  # (under hooks every saved Tensor is a SavedTensor)
            saved = _saved_of((kept_a, kept_b))
            version_a = version_b = None
        else:
            version_a = version_b = None
            saved = ()
            if isinstance(a, Tensor):
                if save_a:
                    if not hooked and type(a) is Tensor and a._extra is None:
                        version_a = 0 if a._counter is None else a._counter.value
                    else:
                        version_a = fold_input(a)
                    kept_a, saved = (a, ()) if version_a is not None else _saved_input(a)
                else:
                    data = a._data  # (``meta_of`` spelled out for a shape it has seen)
                    kept_a = _METAS.get(data.dtype, _NO_METAS).get(data.shape) or meta_of(data)
            else:
                kept_a = a.copy() if save_a and type(a) is np.ndarray else a
            if isinstance(b, Tensor):
                if save_b:
                    if not hooked and type(b) is Tensor and b._extra is None:
                        version_b = 0 if b._counter is None else b._counter.value
                    else:
                        version_b = fold_input(b)
                    if version_b is not None:
                        kept_b = b
                    else:
                        kept_b, saved_b = _saved_input(b)
                        saved += saved_b
                else:
                    data = b._data
                    kept_b = _METAS.get(data.dtype, _NO_METAS).get(data.shape) or meta_of(data)
            else:
                kept_b = b.copy() if save_b and type(b) is np.ndarray else b
        node = new_node2(op, (a._grad_fn or a) if needs[0] else None, a._output_nr if needs[0] else 0,
                         kept_a, version_a, (b._grad_fn or b) if needs[1] else None,
                         b._output_nr if needs[1] else 0, kept_b, version_b, saved, params)
    dtype = out._data.dtype
    if dtype in FLOATING_DTYPES or is_differentiable_dtype(dtype):  # (the set first: no call)
        out._requires_grad = True
        out._grad_fn = node
    if save_out and not fold_output(node, out):  # (saved once it points at the node: a pack hook sees it)
        node.out = save_tensor(out, is_output=True)


def _saved_input(a: Tensor) -> tuple:
    """``(SavedTensor of a, (it,))``: an input saved as an object (under saved-tensor hooks)."""
    saved = save_tensor(a)
    return saved, (saved,)


def _record_general(op: Any, args: tuple, params: dict, out: Any, needs: tuple, save_inputs: Any,
                    save_out: Any) -> None:
    """``_record`` for calls of more than two arguments and multi-output ops: a node of tuples."""
    edges = tuple([(a._grad_fn or a, a._output_nr) if need else NO_EDGE for a, need in zip(args, needs)])
    if op.pack_order is not None and save_inputs is not False:
        inputs = _kept_in_order(op, args, save_inputs)
    else:
        inputs = tuple([_kept(a, save_inputs is True or (save_inputs is not False and save_inputs[i]))
                        for i, a in enumerate(args)])
    saved = _saved_of(inputs)
    if op.multi_output:
        _record_outputs(op, edges, inputs, saved, params, out, save_out)
        return
    node = new_node(op, edges, () if save_out else saved, params, inputs)  # (no saved output: built whole)
    dtype = out._data.dtype
    if dtype in FLOATING_DTYPES or is_differentiable_dtype(dtype):
        out._requires_grad = True
        out._grad_fn = node
    if save_out:  # (saved once it points at the node: a pack hook sees it)
        node.out = saved_out = save_tensor(out, is_output=True)
        node.saved = saved + (saved_out,)


def _kept_in_order(op: Any, args: tuple, save_inputs: Any) -> tuple:
    """What a node keeps of each argument (as ``_record``), the saved ones saved in ``op.pack_order``:
    torch's order, which saved-tensor hooks observe."""
    order = op.pack_order if type(op.pack_order) is tuple else op.pack_order(*args)
    kept = list(args)
    for i in order:
        kept[i] = _kept(args[i], save_inputs is True or save_inputs[i])
    return tuple(kept)


def _kept(a: Any, save: bool) -> Any:
    """What a node keeps of argument ``a``: a SavedTensor or TensorMeta of a Tensor; a copy of a NumPy
    array its rules read (the caller may change the array before backward); anything else as it is."""
    if isinstance(a, Tensor):
        return save_tensor(a) if save else meta_of(a._data)
    return a.copy() if save and type(a) is np.ndarray else a


def _saved_of(inputs: tuple) -> tuple:
    """The SavedTensor objects among what a node keeps of its inputs (released after backward)."""
    return tuple([x for x in inputs if type(x) is SavedTensor])


def _record_outputs(op: Any, edges: tuple, inputs: tuple, saved: tuple, params: dict, out: tuple,
                    save_out: bool) -> None:
    """The node of a multi-output op: attached to each output of a differentiable dtype."""
    node = new_node(op, edges, (), params, inputs, None, len(out))
    nr = 0
    for o in out:
        if is_differentiable_dtype(o._data.dtype):
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = nr
        nr += 1
    node.out_metas = tuple((o._data.shape, o._data.dtype) for o in out)
    if save_out:  # (outputs are saved once they point at the node)
        node.out = saved_out = tuple(save_tensor(o, is_output=True) for o in out)
        saved += saved_out
    node.saved = saved
