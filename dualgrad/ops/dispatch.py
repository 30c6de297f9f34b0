"""The one dispatch point: every op call goes through ``apply``.

Modes are handled in a fixed order:

1. batching: inside ``vmap``, arguments that are batched go to the op's batching rule;
2. primal: the op's NumPy implementation on the raw arrays;
3. tangents: for each active dual level where an input has a tangent, the op's jvp;
4. tape: when grad mode is on and an input requires grad, a graph node;
5. observers: the profiler and anomaly mode wrap the whole call.

With no vmap, no dual level and no observer, steps 1, 3 and 5 cost one flag check each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._state import STATE
from ..forward_ad.engine import propagate_tangents
from ..reverse.node import Node
from ..reverse.saved import SavedTensor
from ..tensor import Tensor, _wrap

_ndarray = np.ndarray
NO_EDGE = (None, 0)

# Set by ``dualgrad.batching`` when it is imported: ``run(op, args, params)``
# returns the batched result, or NotImplemented when no argument is batched.
batching_hook: list = [None]


class TensorMeta:
    """Shape and dtype of an input whose data the backward rule does not need."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"TensorMeta(shape={self.shape}, dtype={self.dtype})"


class OpCtx:
    """What a recorded op keeps for its backward: params, inputs, input metadata, output."""

    __slots__ = ("params", "inputs", "metas", "out", "out_metas")

    def __init__(self, params: dict, inputs: tuple, metas: tuple, out: Any, out_metas: Any):
        self.params = params
        self.inputs = inputs  # SavedTensor | TensorMeta | constant, per input
        self.metas = metas  # (shape, dtype) per input, None for constants
        self.out = out  # SavedTensor, tuple of them (multi-output), or None
        self.out_metas = out_metas  # ((shape, dtype), ...) for multi-output ops


def apply(op: Any, *args: Any, **params: Any) -> Any:
    """Run ``op`` on ``args`` (Tensors or constants) with keyword ``params``."""
    state = STATE
    if state.vmap_depth:
        result = batching_hook[0](op, args, params)
        if result is not NotImplemented:
            return result
    if state.observed:
        return _apply_observed(op, args, params)
    return _apply(op, args, params, state)


def _apply(op: Any, args: tuple, params: dict, state: Any) -> Any:
    data = op.impl(*[a._data if isinstance(a, Tensor) else a for a in args], **params)
    if op.multi_output:
        out = tuple(_wrap(d if type(d) is _ndarray else np.asarray(d)) for d in data)
    else:
        out = _wrap(data if type(data) is _ndarray else np.asarray(data))
    if not op.differentiable:
        return out
    if state.dual_levels:
        propagate_tangents(op, args, params, out)
    if state.grad_enabled:
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad:
                _record(op, args, params, out)
                break
    return out


def _apply_observed(op: Any, args: tuple, params: dict) -> Any:
    """The same call, wrapped by every installed observer (profiler, anomaly mode)."""

    def run(op: Any, args: tuple, params: dict) -> Any:
        return _apply(op, args, params, STATE)

    for observer in STATE.observers:
        run = observer.wrap_op(run)
    return run(op, args, params)


def _record(op: Any, args: tuple, params: dict, out: Any) -> None:
    """Attach a graph node for this call to its output(s)."""
    edges = []
    inputs = []
    metas = []
    saved = []
    save_inputs = op.save_inputs
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                fn = a.grad_fn
                edges.append((a if fn is None else fn, a._output_nr))
            else:
                edges.append(NO_EDGE)
            metas.append((a._data.shape, a._data.dtype))
            if save_inputs:
                s = SavedTensor(a)
                saved.append(s)
                inputs.append(s)
            else:
                inputs.append(TensorMeta(a._data.shape, a._data.dtype))
        else:
            edges.append(NO_EDGE)
            metas.append(None)
            inputs.append(a)
    outs = out if op.multi_output else (out,)
    ctx = OpCtx(params, tuple(inputs), tuple(metas), None,
                tuple((o._data.shape, o._data.dtype) for o in outs) if op.multi_output else None)
    node = Node(op, tuple(edges), (), ctx, len(outs))
    for i, o in enumerate(outs):
        if o._data.dtype.kind in "fc":
            o._requires_grad = True
            o.grad_fn = node
            o._output_nr = i
    if op.save_out:
        saved_out = tuple(SavedTensor(o, is_output=True) for o in outs)
        saved.extend(saved_out)
        ctx.out = saved_out if op.multi_output else saved_out[0]
    node.saved = tuple(saved)
