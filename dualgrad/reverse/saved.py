"""Saved tensors: what a graph node keeps for its backward rule.

A node never holds its own output Tensor (that would be a reference cycle
node -> output -> node); it keeps the output's raw data and version counter,
and rebuilds a Tensor pointing back at the node when unpacked. Nor does it hold
the output's forward-mode tangents when their graph leads back to the node (a
tangent rule reading the output, as exp's ``t * out``): forward mode gives it a
``forward_ad.engine.TangentRecipe`` instead, which gives the tangents back when
a backward rule unpacks the output inside a dual level (forward-over-reverse).
Nothing a node holds leads back to it, so memory comes back by reference
counting alone.

Every unpack checks the version counter, so an in-place change after the save
raises instead of silently giving a wrong gradient (except for tensors packed by
saved-tensor hooks, which own the value they return, as in torch).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import tensor as tensor_module
from ..base.state import STATE
from ..tensor import INFERENCE_SAVE_MESSAGE, Tensor, VersionCounter, _wrap
from .grad_mode import no_grad
from .node import UNFOLD, NodeOp, new_node

PACK_HOOK_INPLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects."
)
FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the graph "
    "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward."
)


class SavedTensor:
    """One tensor saved for backward (an input by reference, an output by data), made by ``save_tensor``."""

    __slots__ = ("_tensor", "_data", "_counter", "_version", "_fw", "_tangents", "_is_output",
                 "_requires_grad", "_hooks", "_packed", "shape", "dtype", "_origin", "_freed")

    def unpack(self, node: Any = None, output_nr: int = 0) -> Tensor:
        """The saved tensor, after checking it was neither freed nor modified.

        Inside dual levels an unpacked tensor has its tangents (an output's from
        its recipe), so a backward rule reading it is differentiated in forward mode too.
        """
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        tensor = self._tensor
        if tensor is not None:  # an input, kept by reference
            counter = tensor._counter
            if counter is not None and counter.value != self._version:
                raise modified_error(f"{self.dtype} {tuple(self.shape)}", node, counter.value, self._version)
            return tensor
        if self._hooks is not None:
            out = self._reattach(self._call_unpack_hook(), node, output_nr)
        else:
            counter = self._counter  # (None: never changed, see ``counter_of_saved_output``)
            if counter is not None and counter.value != self._version:
                raise modified_error(f"{self.dtype} {tuple(self.shape)}", node, counter.value, self._version)
            out = _wrap(self._data)
            out._counter = self._counter
            if self._requires_grad:
                out._requires_grad = True
                out.grad_fn = node
                out._output_nr = output_nr
        if self._tangents is not None and STATE.dual_levels:
            self._tangents.attach(out, node, output_nr)
        return out

    def register_hooks(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        """Give this saved tensor its own pair of saved-tensor hooks (torch's ``_raw_saved_*`` API).

        ``pack_hook`` runs at once, on a detached alias of the saved value; what it returns is
        kept instead of the value, and ``unpack_hook`` turns it back into a tensor at every use
        (each ``_saved_*`` read and the backward pass). One pair per saved tensor: a tensor
        saved under ``saved_tensors_hooks`` already has its pair.

        >>> import dualgrad as dg
        >>> a = dg.tensor([1., 2.], requires_grad=True)
        >>> b = dg.tensor([3., 4.], requires_grad=True)
        >>> y = a * b
        >>> y.grad_fn._raw_saved_self.register_hooks(lambda t: t.numpy().copy(), dg.from_numpy)
        >>> y.grad_fn._saved_self.tolist()
        [1.0, 2.0]
        >>> y.sum().backward()
        >>> b.grad
        tensor([1., 2.])
        """
        if not (callable(pack_hook) and callable(unpack_hook)):
            bad = unpack_hook if callable(pack_hook) else pack_hook
            raise TypeError(f"register_hooks(): pack_hook and unpack_hook must be callable, got {type(bad).__name__}")
        if self._freed:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. " + FREED_MESSAGE
            )
        if self._hooks is not None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time."
            )
        tensor = self._tensor
        if tensor is None:  # an output, kept as data and counter
            tensor = _wrap(self._data)
            tensor._counter = self._counter
            tensor._requires_grad = self._requires_grad
        _pack(self, (pack_hook, unpack_hook), tensor, tensor.detach())

    @property
    def unpack_hook(self) -> Callable | None:
        """The unpack hook of this saved tensor (None without saved-tensor hooks)."""
        return None if self._hooks is None else self._hooks[1]

    def _call_unpack_hook(self) -> Tensor:
        tensor = self._hooks[1](self._packed)
        if not isinstance(tensor, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(tensor).__name__}"
            )
        if tensor.shape != self.shape or tensor.dtype != self.dtype:
            raise RuntimeError(
                f"unpack hook returned a tensor of shape {tensor.shape} and dtype {tensor.dtype}, but "
                f"a tensor of shape {self.shape} and dtype {self.dtype} was packed: "
                "unpack_hook(pack_hook(t)) must have the shape and dtype of t"
            )
        return tensor

    def _reattach(self, value: Tensor, node: Any, output_nr: int) -> Tensor:
        """The unpacked value, differentiable like the tensor that was packed (as in torch)."""
        out = _wrap(value._data)
        if self._fw is not None:
            out._fw = dict(self._fw)
        if not self._requires_grad:
            return out
        out._requires_grad = True
        origin = self._origin
        if origin is None:  # an output of ``node``
            out.grad_fn, out._output_nr = node, output_nr
        elif type(origin) is tuple:
            out.grad_fn, out._output_nr = origin
        else:
            leaf = origin()
            if leaf is not None:
                out.grad_fn = new_node(_ALIAS, ((leaf, 0),))
        return out

    def release(self) -> None:
        """Drop the saved value (after a backward without ``retain_graph``)."""
        self._freed = True
        self._tensor = self._data = self._fw = self._tangents = self._packed = self._origin = None


def push_saved_tensor_hooks(hooks: tuple) -> None:
    """Make the ``(pack_hook, unpack_hook)`` pair the innermost active one.

    Inside ``disable_saved_tensors_hooks`` this raises its RuntimeError instead.
    """
    message = STATE.saved_hooks_disabled
    if message is not None:
        raise RuntimeError(message)
    STATE.saved_tensor_hooks = STATE.saved_tensor_hooks + (hooks,)


def save_tensor(tensor: Tensor, is_output: bool = False) -> SavedTensor:
    """``tensor`` saved for backward (a plain function, as ``new_node``: no ``__init__`` dispatch,
    which the recording of every op that saves a tensor would pay for)."""
    if tensor._extra is not None and tensor.is_inference():  # (rare metadata: one test on the common path)
        raise RuntimeError(INFERENCE_SAVE_MESSAGE)
    saved = SavedTensor()  # (a class without ``__init__``: calling it costs less than ``object.__new__``)
    saved._is_output = is_output
    counter = tensor._counter  # None until the tensor's first in-place change: version 0
    saved._version = 0 if counter is None else counter.value
    saved._counter = None  # an input's counter is read from the tensor itself when unpacked
    data = tensor._data
    saved.shape = data.shape  # (known even after the value is freed)
    saved.dtype = data.dtype
    saved._freed = False
    saved._tangents = None  # for an output: its TangentRecipe, set by forward mode
    hooks = STATE.saved_tensor_hooks  # (one read of the thread-local state: each read costs a lookup)
    saved._hooks = hooks = hooks[-1] if hooks else None
    if hooks is not None:
        _pack(saved, hooks, tensor, tensor)
    elif is_output:
        saved._tensor = None
        saved._data = data
        saved._counter = tensor._version_counter()  # shared with the Tensor rebuilt on unpack
        saved._requires_grad = tensor._requires_grad
    else:
        saved._tensor = tensor
    return saved


def fold_input(tensor: Tensor) -> int | None:
    """The version to keep with ``tensor``, an input a compact node saves by holding it in its own
    slots ("folded", see ``Node.__slots__``); None when it must be a SavedTensor instead (saved-tensor
    hooks are active, or ``tensor`` is not a plain Tensor). Checks as ``save_tensor`` does."""
    if tensor._extra is not None and tensor.is_inference():
        raise RuntimeError(INFERENCE_SAVE_MESSAGE)
    if STATE.saved_tensor_hooks or type(tensor) is not Tensor:
        return None
    counter = tensor._counter
    return 0 if counter is None else counter.value


def unpack_folded(node: Any, kept: Any, version: int) -> Tensor:
    """A folded input of ``node`` (``kept``, saved at ``version``), checked as ``SavedTensor.unpack``
    checks an input: freed (``kept`` is its TensorMeta after the release) or modified in place."""
    if type(kept) is not Tensor:
        raise RuntimeError(FREED_MESSAGE)
    counter = kept._counter
    if counter is not None and counter.value != version:
        raise modified_error(f"{kept.dtype} {tuple(kept.shape)}", node, counter.value, version)
    return kept


def fold_output(node: Any, out: Tensor) -> bool:
    """Keep ``out``, the output ``node`` saves, in the node's own slots (its array, version counter,
    version and requires_grad flag, as a SavedTensor of an output keeps them); False (nothing done)
    when it must be a SavedTensor instead: under saved-tensor hooks, for an inference tensor (which
    ``save_tensor`` refuses) or another kind of Tensor."""
    if STATE.saved_tensor_hooks or out._extra is not None or type(out) is not Tensor:
        return False
    counter = out._counter
    if counter is None and out._grad_fn is not node:
        counter = out._version_counter()
    # (a new output has no version counter yet: the node gets one when the output, or a Tensor
    # rebuilt on unpack, first needs one (``counter_of_saved_output``), shared by both; until then
    # it was never changed: version 0. One object less per op that saves its output.)
    node._oc = counter
    node._ov = 0 if counter is None else counter.value
    node._org = out._requires_grad
    node.out = out._data
    return True


def counter_of_saved_output(tensor: Tensor) -> VersionCounter | None:
    """The version counter that ``tensor``'s node keeps for its array, if the node saved it as its output
    (made now if the node has none yet: ``fold_output``); None for any other Tensor."""
    node = tensor._grad_fn
    data = tensor._data
    if not getattr(node, "_arity", 0):  # (only compact nodes save an output without its counter)
        return None
    saved = node.out
    if saved is data and node._ov is not None:  # folded
        if node._oc is None:
            node._oc = VersionCounter()
        return node._oc
    if type(saved) is SavedTensor and saved._data is data and saved._is_output:  # unfolded (``unfold``)
        if saved._counter is None:
            saved._counter = VersionCounter()
        return saved._counter
    return None


tensor_module.SAVED_OUTPUT_COUNTER[0] = counter_of_saved_output


def unpack_folded_output(node: Any) -> Tensor:
    """The folded output of ``node`` (see ``fold_output``) as ``SavedTensor.unpack`` gives an output:
    a new Tensor on its array, with its version counter and its place in the graph (the node)."""
    data = node.out
    if type(data) is not np.ndarray:  # (its TensorMeta after the release)
        raise RuntimeError(FREED_MESSAGE)
    counter = node._oc  # (None: the output was never changed, and gets its counter on first need)
    if counter is not None and counter.value != node._ov:
        raise modified_error(f"{data.dtype} {data.shape}", node, counter.value, node._ov)
    out = _wrap(data)
    out._counter = counter
    if node._org:
        out._requires_grad = True
        out.grad_fn = node
        out._output_nr = 0
    return out


def _as_saved_output(node: Any) -> SavedTensor:
    """The SavedTensor of a folded output (a freed one after the node's release)."""
    kept = node.out
    saved = SavedTensor()
    saved._is_output = True
    saved._version = node._ov
    saved._counter = node._oc
    saved._hooks = saved._tangents = None
    saved.shape = kept.shape
    saved.dtype = kept.dtype
    saved._tensor = None
    saved._requires_grad = node._org
    if type(kept) is np.ndarray:
        saved._data = kept
        saved._freed = False
    else:
        saved._data = saved._fw = saved._packed = saved._origin = None
        saved._freed = True
    return saved


def _as_saved_tensor(kept: Any, version: int) -> SavedTensor:
    """The SavedTensor of a folded input (a freed one after the node's release)."""
    saved = SavedTensor()
    saved._is_output = False
    saved._version = version
    saved._counter = saved._hooks = saved._tangents = None
    saved.shape = kept.shape
    saved.dtype = kept.dtype
    if type(kept) is Tensor:
        saved._tensor = kept
        saved._freed = False
    else:
        saved._tensor = saved._data = saved._fw = saved._packed = saved._origin = None
        saved._freed = True
    return saved


def unfold(node: Any) -> None:
    """Turn the folded inputs and output of a compact node into SavedTensor objects, as a node whose
    values were saved with ``save_tensor`` holds them: for readers of ``node.inputs`` / ``node.saved``,
    ``_raw_saved_*`` (whose ``register_hooks`` needs the object) and forward mode (which gives a saved
    output its ``TangentRecipe``). Once done for a node, it always gives the same objects."""
    if node._v0 is not None:
        node._k0 = _as_saved_tensor(node._k0, node._v0)
        node._v0 = None
    if node._v1 is not None:
        node._k1 = _as_saved_tensor(node._k1, node._v1)
        node._v1 = None
    if node._ov is not None:
        node.out = _as_saved_output(node)
        node._ov = None
    kept = (node._k0,) if node._arity == 1 else (node._k0, node._k1)
    node._saved = tuple([k for k in kept if type(k) is SavedTensor])


UNFOLD[0] = unfold


def _pack(saved: SavedTensor, hooks: tuple, tensor: Tensor, given: Tensor) -> None:
    """Keep ``pack_hook(given)`` instead of ``tensor`` (``given`` is ``tensor`` or a detached alias).

    As in torch, the hook runs in no-grad mode (what it computes is not recorded) and must
    not modify its input in place (the op being recorded reads that value)."""
    saved._hooks = hooks
    version = given._version
    with no_grad():
        saved._packed = hooks[0](given)
    if given._version != version:
        raise RuntimeError(PACK_HOOK_INPLACE_MESSAGE)
    saved._tensor = saved._data = None
    # a packed input's tangents (older than the node: no cycle), given back on unpack
    saved._fw = None if saved._is_output or tensor._fw is None else dict(tensor._fw)
    saved._requires_grad = tensor._requires_grad
    saved._origin = None if saved._is_output or not tensor._requires_grad else _origin_of(tensor)


def modified_error(what: str, node: Any, version: int, expected: int) -> RuntimeError:
    """Torch's error for a value needed by ``node``'s backward that an in-place op changed."""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{what}], needed by "
        f"{node.name() if node is not None else 'a backward function'}, is at version "
        f"{version}; expected version {expected} instead. Hint: enable "
        "anomaly detection to find the operation that failed to compute its gradient, "
        "with dualgrad.autograd.set_detect_anomaly(True)."
    )


def _origin_of(tensor: Tensor) -> Any:
    """Where gradients of a packed input go: its node and output index, or its leaf (weakly)."""
    node = tensor._node()
    if node is not None:
        return (node, tensor._output_nr)
    return weakref.ref(tensor)


class _Alias(NodeOp):
    """Node op that passes gradients through unchanged: links an unpacked leaf to the leaf (whose
    stand-in the unpacked tensor is: a leaf to the user, ``grad_fn`` None, as in torch)."""

    grad_name = "AliasBackward0"
    scatter_index = None
    runs_on_undefined = False
    leaf_stand_in = True

    @staticmethod
    def backward(node: Any, grads: list) -> list:
        return list(grads)


_ALIAS = _Alias()
