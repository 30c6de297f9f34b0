"""Recording one eager call as a flat list of steps on raw arrays.

The tracer is an observer (``_state.install_observer``): dispatch shows it every
primitive op call after vmap, grad and jvp have expanded into primitive calls. Installing
an observer also turns off every shortcut that computes outside dispatch (``registry.unseen``,
``is_scratch``, the engine's in-place accumulation: they all test ``STATE.observed``).

Each array the call touches gets a *slot*: an input's array, a step's output, or a constant.
A constant is the array of a tensor that existed before the call (a closed-over tensor,
guarded by identity and version), of a tensor made during the call by a factory from Python
values only, or a raw array the user passed to a dualgrad function. Any other array, one
that appears from nowhere while the call runs, may have been computed from traced values
outside dispatch: the trace is then unsupported, never a constant.

Python-level looks at traced values (``bool``, ``int``, ``float``, ``item``, ``tolist``...)
become guard steps: the replay recomputes the value and gives up if it differs. Raw escapes
(``numpy()``, ``__array__``, printing) make the call unsupported.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.state import STATE
from ..forward_ad import engine as forward_engine
from ..ops import dispatch, inplace
from ..ops.registry import Op
from ..reverse import engine
from ..reverse import node as node_module
from ..tensor import Tensor, _wrap
from .primal import as_outputs, primal_callable

tensor_module = sys.modules["dualgrad.tensor"]  # (the package's name ``tensor`` is the factory)

_DUALGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_ndarray = np.ndarray

# Functions that make tensors out of Python values, shapes and dtypes only: (module, function), "*" for every
# function of the module, "Class.method" for the expressions nested in a method. Resolved to the functions' code
# objects (``constant_creator_codes``): a name that no longer resolves raises instead of matching nothing. A
# tensor they make while tracing is a constant of the trace.
CONSTANT_CREATORS = (
    ("dualgrad.factories", "*"),
    ("dualgrad.reverse.api", "implicit_grad"),
    ("dualgrad.ops.dispatch", "tensor_arg"),
    ("dualgrad.tensor", "wrap_operand"),
    ("dualgrad.ops.registry", "_zeros_for"),
    ("dualgrad.ops.inplace", "_widen_tangents"),  # (zeros of the missing batch sizes)
    ("dualgrad.ops.registry", "Op._backward_general"),  # (zeros for the outputs given no gradient)
    ("dualgrad.vmap.identity_basis", "*"),
    ("dualgrad.ops.einsum", "_operand_gradient"),  # (eye and ones of the operand sizes)
    ("dualgrad.ops.linalg.matrix_functions", "identities"),  # (identity matrices of a shape)
    ("dualgrad.ops.linalg.norms", "matrix_power"),  # (its power 0: the identity)
)
# Functions that pass ops index arrays computed from shapes alone.
SHAPE_ONLY_INDEX_MAKERS = (("dualgrad.ops.inplace", "_copy_slices_batch"),)
# ... except these, which draw random numbers (a replay would repeat the same draw).
RANDOM_CREATORS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "_random",
                   "bernoulli", "multinomial", "randperm", "poisson", "uniform_", "normal_", "get_rng_state"}


# Families whose output shapes follow from the input shapes and params alone (no shape guard).
STATIC_SHAPE_FAMILIES = {"elementwise", "reduction", "linalg", "fft", "shape", "linear"}


class Unsupported(Exception):
    """The call did something a replay cannot repeat exactly (``what``), at ``where``."""

    def __init__(self, what: str, where: str = "", quiet: bool = False) -> None:
        super().__init__(what + (f" (at {where})" if where else ""))
        self.what = what
        self.where = where
        self.quiet = quiet  # a documented v1 limit (eager without a warning), not a construct to report


class Step:
    """One replay step.

    ``kind`` is "op" (``outs = fn(*args)``), "guard" (``fn(args[0])`` must give ``expected``),
    "equal" (an integer array must equal ``expected``) or "write" (copy ``args[1]`` into ``args[0]``).
    An argument is ``("slot", n)`` or ``("const", value)``.
    """

    __slots__ = ("kind", "fn", "name", "how", "args", "outs", "shape", "expected", "where", "key", "params", "wrap",
                 "expr", "objects", "family", "symbolic")

    def __init__(self, kind: str, fn: Any, name: str, args: list, outs: tuple = (), how: str = "",
                 shape: tuple | None = None, expected: Any = None, where: str = "", key: Any = None,
                 params: dict | None = None, wrap: bool = False, expr: str = "", objects: dict | None = None,
                 family: str = "", symbolic: bool = False) -> None:
        self.kind = kind
        self.fn = fn
        self.name = name
        self.args = args
        self.outs = outs
        self.how = how
        self.shape = shape
        self.expected = expected
        self.where = where
        self.key = key
        self.params = {} if params is None else params
        self.wrap = wrap
        self.expr = expr
        self.objects = {} if objects is None else objects
        self.family = family
        self.symbolic = symbolic  # (dynamic) its shape parameter follows the input sizes


class _Local(threading.local):
    tracer: Tracer | None = None


LOCAL = _Local()
_PATCH_LOCK = threading.Lock()
_PATCH_COUNT = [0]
_ORIGINALS: dict = {}


def user_location() -> str:
    """``file:line`` of the innermost frame outside dualgrad (the user's code that did it)."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith(_DUALGRAD_DIR)
                             or f.f_code.co_filename.startswith(_NUMPY_DIR)):
        f = f.f_back
    return "" if f is None else f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


def _contains(value: Any, target: Any, depth: int = 3) -> bool:
    if value is target:
        return True
    if depth and isinstance(value, (tuple, list)):
        return any(_contains(v, target, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return any(_contains(v, target, depth - 1) for v in value.values())
    return False


def _user_supplied(value: Any) -> bool:
    """True if ``value`` is an argument the user's code passed to the dualgrad function it called.

    The frames are walked outwards to the first one outside dualgrad (and NumPy); the dualgrad
    frame just inside it is the function the user called. Only its arguments count: a value
    computed inside dualgrad from traced data is not one of them.
    """
    f = sys._getframe(1)
    entry = None
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(_DUALGRAD_DIR):
            entry = f
        elif not name.startswith(_NUMPY_DIR):
            break
        f = f.f_back
    if entry is None:
        return False
    code = entry.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
    local = entry.f_locals
    return any(_contains(local.get(name), value) for name in code.co_varnames[:count])



def _in_shape_only_index_maker() -> bool:
    """Whether the op call comes from a function of ``SHAPE_ONLY_INDEX_MAKERS`` (a few frames up)."""
    makers = _codes()[2]
    f = sys._getframe(2)
    for _ in range(12):
        if f is None:
            return False
        if f.f_code in makers:
            return True
        f = f.f_back
    return False


def _creator(frame: Any) -> Any:
    """The first frame outside tensor.py (who asked for the new tensor)."""
    tensor_file = tensor_module.__file__
    while frame is not None and frame.f_code.co_filename == tensor_file:
        frame = frame.f_back
    return frame


def _has_tensor(value: Any, depth: int = 4) -> bool:
    if isinstance(value, Tensor):
        return True
    if depth and isinstance(value, (tuple, list)):
        return any(_has_tensor(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return any(_has_tensor(v, depth - 1) for v in value.values())
    return False


def _arguments(frame: Any) -> list:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
    local = frame.f_locals
    return [local.get(name) for name in code.co_varnames[:count]]


def _constant_creation(frame: Any) -> bool:
    """Whether the tensor ``frame``'s function makes is a constant: made by a factory from Python
    values (a ``*_like`` factory reads only the shape and dtype of its Tensor argument)."""
    if frame is None or not _is_constant_creator(frame.f_code) or _drawn_at_random(frame):
        return False
    if frame.f_code in _codes()[1] and not frame.f_code.co_name.endswith("like"):
        return not _has_tensor(_arguments(frame))
    return True


def _drawn_at_random(frame: Any) -> bool:
    """Whether a random factory is among the dualgrad frames around ``frame`` (a factory's helper, or the
    lambda that draws a random tensor under vmap: ``batching.random_under_vmap``)."""
    for _ in range(8):
        if frame is None or not frame.f_code.co_filename.startswith(_DUALGRAD_DIR):
            return False
        name = frame.f_code.co_name
        if name in RANDOM_CREATORS or name == "random_under_vmap":
            return True
        frame = frame.f_back
    return False


def _nested(code: Any) -> list:
    """``code`` and the code objects nested in it (its lambdas, comprehensions and inner functions)."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _nested(const)
    return found


def _resolve(module_name: str, name: str) -> list:
    """The code objects of ``name`` in the module (nested ones included); every function's for "*"."""
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    if name == "*":
        functions = [f for f in vars(module).values()
                     if isinstance(f, types.FunctionType) and f.__module__ == module_name]
    else:
        owner = module
        for part in name.split("."):
            owner = getattr(owner, part)  # (AttributeError: the table names a function that does not exist)
        functions = [owner]
    return [c for f in functions for c in _nested(f.__code__)]


_CODES: list = []


class _CodeSet:
    """Code objects, looked up by identity (hashing a code object hashes its bytecode and constants)."""

    def __init__(self, codes: list) -> None:
        self._by_id = {id(c): c for c in codes}  # (holds them: their ids stay theirs)

    def __contains__(self, code: Any) -> bool:
        return self._by_id.get(id(code)) is code


def _codes() -> tuple:
    """``(constant creators, factories, shape-only index makers)``: ``_CodeSet``s, resolved at the first trace."""
    if not _CODES:
        _CODES.append((_CodeSet([c for module, name in CONSTANT_CREATORS for c in _resolve(module, name)]),
                       _CodeSet(_resolve("dualgrad.factories", "*")),
                       _CodeSet([c for module, name in SHAPE_ONLY_INDEX_MAKERS for c in _resolve(module, name)])))
    return _CODES[0]


def _is_constant_creator(code: Any) -> bool:
    return code is not None and code in _codes()[0] and code.co_name not in RANDOM_CREATORS


def _describe(code: Any) -> str:
    if code is None:
        return "unknown code"
    return f"{code.co_name}() in {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


class Tracer:
    """Observer that records one call (see the module docstring)."""

    def __init__(self, inputs: list, dynamic: bool = False) -> None:
        # dynamic=True: why the trace holds only for its input sizes (None: for any sizes of the same ranks)
        self.dynamic = dynamic
        self.size_dependent: str | None = None
        self.arrays: list = []  # slot -> array (kept alive: ids stay unique while tracing)
        # slot -> "input", "step", "fresh" (a constant made in the call, in memory of its own), "external" (a
        # constant in the caller's memory: a raw array, ``from_numpy``) or "held" (a tensor that existed before)
        self.origin: list = []
        self.slot_of: dict = {}
        self.steps: list[Step] = []
        self.created: dict = {}  # id(tensor) -> (weakref, code of its creator)
        self.held: list = []  # (tensor, array, version, requires_grad, grad): pre-existing tensors used
        self.mutable: set = set()  # constant slots a write changes: copied fresh for every replay
        self.initial: dict = {}  # mutable constant slot -> its value before the call wrote into it
        self.inputs = []
        self.failure: Unsupported | None = None
        self.pending: dict = {}  # id(out) -> True once the op call making it was recorded
        self.primals: dict = {}  # (op, params, argument kinds) -> primal_callable's result
        self.sources: list = []  # (array or list, snapshot) a constant was copied from
        self.foreign: dict = {}  # id(tensor) -> weakref: tensors other threads made during the call
        # Training steps: effects on tensors the caller holds, repeated by every replay in order.
        self.paused = False  # inside an opaque call (an optimizer's step): nothing is recorded
        # id(held tensor) -> the .grad it had before the call, read or accumulated into by the call: every replay
        # needs that same tensor there (a guard), whose values it reads live
        self.grad_identity: dict = {}
        self.installed: set = set()  # id of each tensor made in the call that became a held tensor's .grad
        self.grad_set: set = set()  # id of each held tensor whose .grad the call set
        self.written: set = set()  # id of each held tensor the call wrote into (in place)
        self.opaque = False  # an opaque call ran (it may change held tensors' versions and grads)
        self.grad_before: dict = {}  # id(parameter) -> whether its .grad was None when an opaque call began
        self.input_ids = {id(t) for t in inputs}
        self.input_dims: dict = {}  # (dynamic) size -> (input position, axis) of a tensor input's dimension
        for position, t in enumerate(inputs):
            array = t._data if isinstance(t, Tensor) else t
            self.inputs.append(self._new_slot(array, "input"))
            if isinstance(t, Tensor):
                for axis, n in enumerate(array.shape):
                    self.input_dims.setdefault(n, (position, axis))

    def size_products(self) -> set | None:
        """(dynamic) Every product of two or more input dimensions' sizes, and each size above 1 (None if too
        many dimensions to enumerate: every computed number then counts as a possible size)."""
        products = self.__dict__.get("_products")
        if products is None and "_products" not in self.__dict__:
            sizes = [n for a in (self.arrays[s] for s in self.inputs) for n in a.shape]
            if len(sizes) > 12:
                products = None
            else:
                products = set()
                for mask in range(1, 1 << len(sizes)):
                    product = 1
                    for i, n in enumerate(sizes):
                        if mask >> i & 1:
                            product *= n
                    if product > 1:
                        products.add(float(product))
            self.__dict__["_products"] = products
        return products

    # -- slots ----------------------------------------------------------------------
    def _new_slot(self, array: np.ndarray, origin: str) -> int:
        slot = len(self.arrays)
        self.arrays.append(array)
        self.origin.append(origin)
        self.slot_of[id(array)] = slot
        return slot

    def _known(self, array: Any) -> int | None:
        slot = self.slot_of.get(id(array))
        return slot if slot is not None and self.arrays[slot] is array else None

    def slot_of_tensor(self, t: Tensor) -> int:
        """The slot of ``t``'s array, classifying an array seen for the first time."""
        array = t._data
        slot = self._known(array)
        entry = self.created.get(id(t))
        if slot is not None:
            if (self.origin[slot] == "input" and id(t) not in self.input_ids
                    and (entry is None or entry[0]() is not t)):
                raise Unsupported("a tensor the function holds (closed over, global) shares its data with an "
                                  "argument", user_location())
            return slot
        if entry is not None and entry[0]() is t:
            if not entry[2]:
                raise Unsupported(f"{_describe(entry[1])} computes a tensor outside dispatch", user_location())
            self._check_no_alias(array, "a constant")
            copied = self._copied_argument(array, entry[3])
            if copied is not None:
                return copied
            if any(isinstance(v, _ndarray) and np.may_share_memory(array, v) for v, _ in entry[3]):
                return self._new_slot(array, "external")  # (the caller's memory: read live by the replay)
            self.sources.extend(entry[3])  # (the values a factory copied: guarded, they may change)
            return self._new_slot(array, "fresh")
        made_elsewhere = self.foreign.get(id(t))
        if made_elsewhere is not None and made_elsewhere() is t:
            raise Unsupported("a tensor made by another thread (or by an optimizer's step) during the call",
                              user_location())
        self._check_no_alias(array, "a tensor held by the caller")
        counter = t._counter
        self.held.append((t, array, 0 if counter is None else counter.value, t._requires_grad, t._grad))
        return self._new_slot(array, "held")

    def _copied_argument(self, array: np.ndarray, sources: tuple) -> int | None:
        """A factory's copy of an argument's array (``dg.tensor(a)``, ``a`` an argument): a copy step, since
        the argument is another array on the next call; None if the factory read no argument."""
        inputs = [self.arrays[s] for s in self.inputs]
        found = [a for value, _ in sources for a in _arrays_in(value) if any(np.may_share_memory(a, i) for i in inputs)]
        if not found:
            return None
        source = found[0]
        slot = self._known(source)
        holders = [value for value, _ in sources if _arrays_in(value)]
        if len(holders) == 1 and holders[0] is source and slot is not None and self.origin[slot] == "input":
            copy = np.array(source, dtype=array.dtype, copy=True, order="K")
            if _same_array(copy, array):
                out = self._new_slot(array, "step")
                self.steps.append(Step("op", None, "copy", [("slot", slot)], (out,), how="copy",
                                       expr="{array}({0}, dtype={dtype}, copy=True, order='K')",
                                       objects={"array": np.array, "dtype": array.dtype}))
                return out
        raise Unsupported("a factory copies an argument's array into a tensor (use dg.as_tensor, which shares it)",
                          user_location())

    def _check_no_alias(self, array: np.ndarray, what: str) -> None:
        for slot, known in enumerate(self.arrays):
            if self.origin[slot] != "fresh" and np.may_share_memory(array, known):
                raise Unsupported(f"{what} shares memory with a traced array", user_location())

    def raw_slot(self, array: np.ndarray) -> int:
        """The slot of a raw ndarray given to an op (not a Tensor's array)."""
        slot = self._known(array)
        if slot is not None:
            return slot
        if not _user_supplied(array):
            raise Unsupported("an array computed outside dispatch is given to an op", user_location())
        self._check_no_alias(array, "a raw array")
        return self._new_slot(array, "external")

    # -- recording ------------------------------------------------------------------
    def fail(self, failure: Unsupported) -> None:
        if self.failure is None:
            self.failure = failure

    def note_created(self, t: Tensor, frame: Any, constant: bool | None = None, data: tuple = ()) -> None:
        creator = _creator(frame)
        code = None if creator is None else creator.f_code
        if constant is None:
            constant = _constant_creation(creator)
            if constant:
                data = tuple(_arguments(creator))
        sources = tuple((v, snapshot(v)) for v in data if _mutable(v)) if data else ()
        self.created[id(t)] = (weakref.ref(t), code, constant, sources)

    def _arg(self, a: Any, guard_values: bool) -> tuple:
        if type(a) is Tensor:  # (the common case first: a value an earlier step computed)
            array = a._data
            slot = self.slot_of.get(id(array))
            if slot is not None and self.origin[slot] == "step" and self.arrays[slot] is array:
                if guard_values and array.dtype.kind in "biu":
                    self._maybe_guard_index(slot, True)
                return ("slot", slot)
        if isinstance(a, Tensor):
            if type(a) is not Tensor and not isinstance(a, Tensor):
                raise Unsupported(f"an op argument of type {type(a).__name__}")
            slot = self.slot_of_tensor(a)
            self._maybe_guard_index(slot, guard_values)
            return ("slot", slot)
        if type(a) is _ndarray:
            slot = self.raw_slot(a)
            self._maybe_guard_index(slot, guard_values)
            return ("slot", slot)
        if isinstance(a, np.generic):
            if not _user_supplied(a):
                raise Unsupported("a NumPy scalar computed outside dispatch is given to an op", user_location())
            return ("const", a)
        if a is None or type(a) in (int, float, complex, bool, str, slice, type(Ellipsis)) or isinstance(a, np.dtype):
            return ("const", a)
        if isinstance(a, (tuple, list)) and not any(isinstance(v, (Tensor, _ndarray)) for v in a):
            return ("const", _own_copy(a))
        raise Unsupported(f"an op argument of type {type(a).__name__}", user_location())

    def _maybe_guard_index(self, slot: int, guard_values: bool) -> None:
        """An integer or boolean array of the trace read by a non-elementwise op: code around the op
        may have branched on its values (index normalisation): the replay checks them."""
        array = self.arrays[slot]
        if guard_values and self.origin[slot] != "fresh" and array.dtype.kind in "biu":
            self.steps.append(Step("equal", None, "index values", [("slot", slot)], expected=array.copy(),
                                   where=user_location()))

    def _scan_params(self, value: Any, op: str, depth: int = 0) -> None:
        """Arrays inside params are baked into the replay: traced ones get an equality guard."""
        if depth == 0 and not value:  # (no params: the common case)
            return
        if isinstance(value, Tensor):
            raise Unsupported(f"{op}: a Tensor inside the op's parameters", user_location())
        if isinstance(value, _ndarray):
            slot = self._known(value)
            if slot is None:
                if not _user_supplied(value) and value.size and not _in_shape_only_index_maker():
                    raise Unsupported(f"{op}: an array computed outside dispatch is a parameter", user_location())
                return
            if value.dtype.kind not in "biu":
                raise Unsupported(f"{op}: a traced floating array is a parameter", user_location())
            self.steps.append(Step("equal", None, "index values", [("slot", slot)], expected=value.copy(),
                                   where=user_location()))
            return
        if depth < 4 and isinstance(value, (tuple, list)):
            for v in value:
                self._scan_params(v, op, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            for v in value.values():
                self._scan_params(v, op, depth + 1)

    def record_op(self, op: Any, args: tuple, params: dict, out: Any) -> None:
        """Record one primitive call whose result ``out`` dispatch just computed.

        The replay's function for the call (``primal_callable``) is checked against dispatch's result, bit for
        bit, at the first call of each signature (op, parameters, argument types, dtypes and ranks) in the
        trace: dispatch picks its path by exactly these, and an op's implementation is a function of its
        arguments (random draws come from the factories, whose tensors are no constants of a trace)."""
        if not isinstance(op, Op):  # a custom Function: its forward's ops are recorded one by one
            return
        if STATE.saved_tensor_hooks:
            raise Unsupported("saved-tensor hooks (pack/unpack run Python code on traced values)", user_location())
        guard_values = op.family != "elementwise"
        slots = []
        kinds = []
        slot_of, origin, known_arrays = self.slot_of, self.origin, self.arrays
        for a in args:
            if type(a) is Tensor:
                array = a._data
                # (a dtype by id: hashing one costs more; the arrays of the trace keep theirs alive)
                kinds.append((Tensor, id(array.dtype), array.ndim))
                slot = slot_of.get(id(array))  # (the common case inline: a value an earlier step computed)
                if (slot is not None and origin[slot] == "step" and known_arrays[slot] is array
                        and not (guard_values and array.dtype.kind in "biu")):
                    slots.append(("slot", slot))
                    continue
            elif isinstance(a, Tensor):
                kinds.append((type(a), a._data.dtype, a._data.ndim))
            else:
                kinds.append((type(a), a.dtype, a.ndim) if type(a) is _ndarray else (type(a),))
            slots.append(self._arg(a, guard_values))
        if params:
            self._scan_params(params, op.name)
            params = _own_copy(params)  # (a list the caller changes later must not change the replay)
            key = _params_key(op, "", params)
        else:
            params = {}
            key = (id(op), "", ())
        # (params holding an array: checked at every call, the array may have changed in place since)
        signature = None if key is None or params and _holds_array(params) else (key, tuple(kinds))
        known = None if signature is None else self.primals.get(signature)
        outs = out if isinstance(out, tuple) else (out,)
        arrays = [o._data for o in outs]
        if known is None:  # (the first call of its signature: made and checked)
            made = primal_callable(op, args, params)
            raw = [self.arrays[v] if kind == "slot" else v for kind, v in slots]
            try:
                with np.errstate(all="ignore"):  # (the eager call gave its warnings already)
                    result = made[0](*raw)
                again = as_outputs(op, result)
            except Exception as exc:  # noqa: BLE001 - any difference from dispatch means: not replayable
                raise Unsupported(f"{op.name}: its replay raises {type(exc).__name__}: {exc}") from exc
            if len(again) != len(arrays) or not all(_same_array(x, y) for x, y in zip(again, arrays)):
                raise Unsupported(f"{op.name}: a replay of the call does not give dispatch's result "
                                  "(random, or computed differently)", user_location())
            known = (made, op.multi_output or type(result) is not _ndarray)
            if signature is not None:
                self.primals[signature] = known
        (fn, how, expr, objects), wrap = known
        symbolic = None
        if self.dynamic and op.name in _SIZED_SHAPE_OPS and how == "impl":
            symbolic = symbolic_shape(self, op, slots, params)
            if symbolic is not None:  # (the call with its shape written in terms of the inputs' sizes)
                expr, objects = "{impl}({0}, shape=" + symbolic + ")", {"impl": op.impl}
        out_slots = (self._new_slot(arrays[0], "step"),) if len(arrays) == 1 else tuple(
            self._new_slot(a, "step") for a in arrays)
        # (basic indexing, ``x[1:, None]``: the shape follows from x's; an index array may not)
        basic_index = op.name == "getitem" and len(args) == 1 and not _holds_array(params)
        check_shape = op.family not in STATIC_SHAPE_FAMILIES and not basic_index
        self.steps.append(Step("op", fn, op.name, slots, out_slots, how,
                               tuple(a.shape for a in arrays) if check_shape else None, None, "",
                               None if key is None else key + (how,), params, wrap, expr, objects,
                               op.family, symbolic is not None))
        if self.dynamic and self.size_dependent is None:
            self.size_dependent = _size_dependence(self, op, slots, params)

    def record_copy(self, t: Tensor, copy: Tensor) -> None:
        """``copy``'s array is a fresh copy of ``t``'s (``inplace._snapshot``): a copy step."""
        slot = self.slot_of_tensor(t)
        self.steps.append(Step("op", np.ndarray.copy, "copy", [("slot", slot)],
                               (self._new_slot(copy._data, "step"),), how="copy", expr="{0}.copy()"))

    def record_look(self, kind: str, original: Callable, t: Tensor, value: Any) -> None:
        """A Python-level look at a value (``bool(t)``...): a guard step unless the value is constant."""
        slot = self.slot_of_tensor(t)
        if self.origin[slot] == "fresh":  # (a constant's value; any other may differ on the next call)
            return
        self.steps.append(Step("guard", original, kind, [("slot", slot)], expected=_value_key(value),
                               where=user_location()))

    def record_write(self, t: Tensor, result: Tensor) -> None:
        """An in-place write of ``result`` into ``t`` (``inplace.commit``)."""
        dest = t._data
        if not dest.flags.writeable:
            raise Unsupported("an in-place write through a read-only (expanded) view", user_location())
        slot = self.slot_of_tensor(t)
        held = self.origin[slot] == "held" and t._view is None and dest is self.arrays[slot] and any(
            h[0] is t for h in self.held)
        if self.origin[slot] in ("input", "external") or self.origin[slot] == "held" and not held:
            raise Unsupported("an in-place write into a tensor the caller holds (an input, or a view of a "
                              "closed-over tensor)", user_location())
        for other, known in enumerate(self.arrays):
            if other != slot and np.may_share_memory(dest, known):
                if self.origin[other] in ("input", "held", "external"):
                    raise Unsupported("an in-place write into memory the caller holds", user_location())
                if self.origin[other] == "fresh" and other not in self.mutable:
                    # (its value before the first write: every replay starts from a copy of it)
                    self.initial[other] = np.array(known, copy=True, order="K")
                    self.mutable.add(other)
        source = self.slot_of_tensor(result)
        self.steps.append(Step("write", None, "copyto", [("slot", slot), ("slot", source)]))
        if held:  # (a closed-over tensor written in place, a parameter's update: its version moves as eagerly)
            self.written.add(id(t))
            self.steps.append(Step("effect", t._bump_version, "version bump", []))

    def record_new_grad(self, leaf: Tensor, grad: Tensor, new: Tensor) -> None:
        """``backward()`` gave ``leaf`` (whose .grad was None) the new .grad ``new``, a copy of ``grad``
        (``engine._accumulate_into_leaf``): a copy step, and for a held leaf the effect setting its .grad."""
        leaf_slot = self.slot_of_tensor(leaf)
        origin = self.origin[leaf_slot]
        if origin == "input":
            raise Unsupported("backward() sets .grad of an argument", user_location())
        source = self.slot_of_tensor(grad)
        out = self._new_slot(new._data, "step")
        self.steps.append(Step("op", _new_grad_array, "new .grad", [("slot", leaf_slot), ("slot", source)], (out,),
                               how="copy", expr="{new_grad}({0}, {1})", objects={"new_grad": _new_grad_array}))
        if origin == "held":
            self._set_grad(leaf, ("slot", out), new)

    def record_accumulate(self, leaf: Tensor, grad: Tensor, current: Tensor) -> None:
        """``backward()`` adds ``grad`` into ``leaf``'s existing .grad ``current`` in place
        (``engine._accumulate_into_leaf``): an effect of every replay on the .grad the leaf has then (the same
        tensor: guarded if it existed before the call, set earlier in the replay if made in the call)."""
        if self.origin[self.slot_of_tensor(leaf)] == "input":
            raise Unsupported("backward() accumulates into .grad of an argument", user_location())
        if type(current) is not Tensor or current._view is not None or not current._data.flags.writeable:
            raise Unsupported("backward() accumulates into a .grad that is a view or read-only", user_location())
        if not _is_fresh(self, current) and id(current) not in self.installed:
            self.grad_identity.setdefault(id(leaf), current)
            self.slot_of_tensor(current)  # (held: its array, version and requires_grad guarded)
            self.written.add(id(current))
        elif not any(h[0] is leaf for h in self.held):
            raise Unsupported("backward() accumulates into .grad of a tensor made in the call", user_location())
        source = self.slot_of_tensor(grad)
        self.steps.append(Step("effect", _accumulator(leaf), "accumulate into .grad", [("slot", source)]))

    def record_set_grad(self, t: Tensor, value: Any) -> None:
        """``t.grad = value`` for a tensor the caller holds: None, or a tensor made in the call."""
        if value is None:
            self.slot_of_tensor(t)
            self._set_grad(t, ("const", None), None)
            return
        if not isinstance(value, Tensor) or type(value) is not Tensor or not _is_fresh(self, value):
            raise Unsupported("assigns .grad of a tensor the caller holds a tensor that existed before the call",
                              user_location())
        self.slot_of_tensor(t)
        self._set_grad(t, ("slot", self.slot_of_tensor(value)), value)

    def _set_grad(self, t: Tensor, arg: tuple, value: Tensor | None) -> None:
        if not any(h[0] is t for h in self.held):
            raise Unsupported("sets .grad of a tensor made in the call from outside it", user_location())
        self.grad_set.add(id(t))
        if value is not None:
            self.installed.add(id(value))
        self.steps.append(Step("effect", _grad_setter(t), "set .grad", [arg]))

    def record_opaque(self, call: Callable, name: str) -> None:
        """An opaque call (an optimizer's ``step``, a ``zero_grad``): run again, as it is, by every replay."""
        self.opaque = True
        self.steps.append(Step("effect", call, name, []))


# Parameters of a reduction that name axes (rank-based, so they hold for any sizes).
_AXIS_PARAMS = {"axis", "dim", "keepdims", "keepdim", "dtype", "correction", "ddof"}


def _numbers(value: Any, depth: int = 0) -> list:
    if type(value) in (int, float, complex) or isinstance(value, np.generic):
        return [value]
    if depth < 3 and isinstance(value, (tuple, list)):
        return [n for v in value for n in _numbers(v, depth + 1)]
    if depth < 3 and isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v, depth + 1)]
    return []


# Shape ops whose parameters name axes (rank-based): they hold for any sizes.
# (Not cat or stack: their output sizes are sums or counts, which another size could equal by chance, and
# ``symbolic_shape`` relies on every size in the trace being an input's or 1.)
_RANK_SHAPE_OPS = {"permute", "squeeze", "unsqueeze", "flip", "triu", "tril", "transpose", "movedim"}
# Shape ops whose ``shape`` parameter a dynamic trace writes in terms of the input sizes (``symbolic_shape``).
_SIZED_SHAPE_OPS = {"reshape", "expand", "broadcast_to"}


def _size_dependence(tracer: Tracer, op: Any, slots: list, params: dict) -> str | None:
    """Why the op call just recorded may hold only for the traced input sizes (None if it holds for any):
    an op whose parameters or output hold sizes (other than a reshape or expand whose target shape is
    written in terms of the input sizes), numbers not given by the user's code (dualgrad may have computed
    them from sizes: a mean's count), constants of more than one element (their shapes are fixed)."""
    family = op.family
    if family == "reduction":
        if not set(params) <= _AXIS_PARAMS:
            return f"{op.name}: parameters {sorted(params)}"
    elif family == "shape":
        if op.name not in _RANK_SHAPE_OPS and not (op.name in _SIZED_SHAPE_OPS and tracer.steps[-1].symbolic):
            return f"{op.name} (its parameters or result hold sizes)"
    elif family == "linear" and params or family not in ("elementwise", "linear"):
        return f"{op.name} (a {family} op: sizes in its parameters or result)"
    elif any(_size_like(tracer, v) and not _user_supplied(v) for v in _numbers(params)):
        return f"{op.name}: parameters computed inside dualgrad"
    for kind, value in slots:
        if kind == "const":
            if any(_size_like(tracer, v) for v in _numbers(value)) and not _user_supplied(value):
                return f"{op.name}: a number computed inside dualgrad that may be a size ({value!r})"
        elif tracer.origin[value] not in ("input", "step") and tracer.arrays[value].size > 1:
            return f"{op.name}: a constant of shape {tracer.arrays[value].shape}"
    return None


def _size_like(tracer: Tracer, value: Any) -> bool:
    """Whether a number dualgrad computed may come from the input sizes: it (or its reciprocal), or it plus or
    minus one, is a product of input dimensions (a mean's count, a variance's n - 1), or it is not a real
    number of an exact integer kind. Other numbers (a power's exponent) are size-free."""
    products = tracer.size_products()
    if products is None:
        return True
    try:
        real = float(value)
    except (TypeError, ValueError):
        return True
    candidates = {real, real + 1, real - 1}
    if real:
        candidates |= {1.0 / real, 1.0 / real + 1, 1.0 / real - 1}
    return any(c in products for c in candidates)


def symbolic_shape(tracer: Tracer, op: Any, slots: list, params: dict) -> str | None:
    """For a dynamic trace, the source text of a reshape's or expand's target ``shape`` in terms of the replay's
    inputs (``x0.shape[1]``), or None. Only a shape dualgrad computed (not the user's literal) whose sizes
    other than 1 are, in order, those of an array of the trace so far (a gradient reshaped back or expanded to
    a shape met in the forward pass), each of them the size of some input dimension. Until the trace is found
    size-dependent, every size in it is an input's or 1 (its ops are elementwise, reductions, rank-based shape
    ops and such reshapes), and the broadcasting pattern guard keeps equal input sizes equal: that input size
    is the same one at replay."""
    shape = params.get("shape")
    if type(shape) is not tuple or len(params) != 1 or _user_supplied(shape):
        return None
    wanted = tuple(n for n in shape if n != 1)
    if tracer.size_dependent is not None or not any(
            tuple(n for n in a.shape if n != 1) == wanted for a in tracer.arrays):
        return None
    parts = []
    for n in shape:
        if type(n) is not int:
            return None
        if n == 1:
            parts.append("1")
            continue
        where = tracer.input_dims.get(n)
        if where is None:
            return None
        parts.append(f"x{where[0]}.shape[{where[1]}]")
    return "(" + "".join(p + ", " for p in parts) + ")"


def _new_grad_array(data: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The array of a new .grad as the engine makes it (``engine._accumulate_into_leaf``): the layout of the
    parameter's ``data`` when dense, C order otherwise, holding ``grad``."""
    dense = data.flags.c_contiguous or data.flags.f_contiguous or engine._is_dense(data)
    new = np.empty_like(data) if dense else np.empty(data.shape, data.dtype)
    np.copyto(new, grad)
    return new


def _accumulator(leaf: Tensor) -> Callable:
    def accumulate(grad: np.ndarray) -> None:  # (engine._accumulate_into_leaf's in-place case)
        current = leaf._grad
        np.add(current._data, grad, out=current._data, casting="unsafe")
        current._bump_version()
    return accumulate


def _grad_setter(t: Tensor) -> Callable:
    def set_grad(array: Any) -> None:
        t._grad = None if array is None else _wrap(array)
    return set_grad


def _arrays_in(value: Any, depth: int = 4) -> list:
    if isinstance(value, _ndarray):
        return [value]
    if depth and isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays_in(v, depth - 1)]
    if depth and isinstance(value, dict):
        return [a for v in value.values() for a in _arrays_in(v, depth - 1)]
    return []


def _mutable(value: Any, depth: int = 4) -> bool:
    """An ndarray, list or dict, or a tuple holding one: a value that may change in place between calls."""
    if isinstance(value, (_ndarray, list, dict)):
        return True
    return depth > 0 and type(value) is tuple and any(_mutable(v, depth - 1) for v in value)


def snapshot(value: Any) -> Any:
    """A copy of a (nested) list, tuple, dict or ndarray a factory reads, for ``unchanged``."""
    if isinstance(value, _ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return [snapshot(v) for v in value]
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return ("value", type(value), repr(value))


def unchanged(value: Any, copy: Any) -> bool:
    """True if ``value`` still equals its ``snapshot`` (same types, shapes, dtypes, values bit for bit)."""
    if isinstance(value, _ndarray):
        return (isinstance(copy, _ndarray) and value.shape == copy.shape and value.dtype == copy.dtype
                and value.tobytes() == copy.tobytes())
    if isinstance(value, (list, tuple)):
        return (isinstance(copy, list) and len(value) == len(copy)
                and all(unchanged(v, c) for v, c in zip(value, copy)))
    if isinstance(value, dict):
        return isinstance(copy, dict) and value.keys() == copy.keys() and all(
            unchanged(value[k], copy[k]) for k in value)
    return copy == ("value", type(value), repr(value))


def _own_copy(value: Any, depth: int = 0) -> Any:
    """``value`` with its lists and dicts copied (tuples rebuilt only if they hold one)."""
    if depth > 6:
        return value
    if type(value) is dict:
        return {k: _own_copy(v, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [_own_copy(v, depth + 1) for v in value]
    if type(value) is tuple and any(type(v) in (list, dict, tuple) for v in value):
        return tuple(_own_copy(v, depth + 1) for v in value)
    return value


def _holds_array(value: Any, depth: int = 4) -> bool:
    if isinstance(value, (_ndarray, Tensor)):
        return True
    if depth and isinstance(value, (tuple, list)):
        return any(_holds_array(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return any(_holds_array(v, depth - 1) for v in value.values())
    return False


def _same_array(x: np.ndarray, y: np.ndarray) -> bool:
    """Same shape, dtype, strides and values (bit for bit when small; NaN equal to NaN)."""
    if x.shape != y.shape or x.dtype != y.dtype or x.strides != y.strides:
        return False
    if x.size <= 16 and x.dtype.kind in "fciub":
        return x.tobytes() == y.tobytes() or bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    try:
        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(x, y))


def _value_key(value: Any) -> str:
    """Exact comparison key of a Python value (repr: keeps -0.0, nan, True vs 1 apart)."""
    return f"{type(value).__name__}:{value!r}"


def _hashable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, _ndarray):
        return ("array", id(value))
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return (type(value).__name__, repr(value))  # (0.0 and -0.0 are equal and hash alike: not the same)
    hash(value)
    return (type(value).__name__, value)


def _params_key(op: Any, how: str, params: dict) -> Any:
    """A key equal for two calls that compute the same thing from the same inputs (CSE), or None."""
    try:
        return (id(op), how, _hashable(params))
    except TypeError:
        return None


# -- hooks active while any thread traces ------------------------------------------------
# Tracers running in any thread: a tensor another thread makes meanwhile is no constant of theirs.
ACTIVE: set = set()


def _foreign(t: Tensor) -> None:
    for tracer in list(ACTIVE):
        tracer.foreign[id(t)] = weakref.ref(t)


_WRAP_CODE = tensor_module._wrap.__code__
_APPLY_CODE = dispatch._apply.__code__


def _recording_new(cls: type) -> Any:
    t = object.__new__(cls)
    tracer = LOCAL.tracer
    if tracer is not None:
        frame = sys._getframe(1)
        if frame.f_code is _WRAP_CODE and frame.f_back.f_code is _APPLY_CODE:  # (an op's result: the common case)
            tracer.created[id(t)] = (weakref.ref(t), _APPLY_CODE, False, ())
        else:
            tracer.note_created(t, frame)
    elif ACTIVE:
        _foreign(t)
    return t


def _recording_init(self: Tensor, *args: Any, **kwargs: Any) -> None:
    _ORIGINALS["__init__"](self, *args, **kwargs)
    tracer = LOCAL.tracer
    if tracer is not None:  # Tensor(data): a constant unless made from a Tensor
        tracer.note_created(self, sys._getframe(1), not _has_tensor((args, kwargs)), args)
    elif ACTIVE:
        _foreign(self)


def _propagate_tangents(op: Any, args: tuple, params: dict, out: Any) -> None:
    """Dispatch's tangent step: the call is recorded first, so that its jvp's ops come after it."""
    tracer = LOCAL.tracer
    if tracer is not None and tracer.failure is None and id(out) not in tracer.pending:
        tracer.pending[id(out)] = out
        try:
            tracer.record_op(op, args, params, out)
        except Unsupported as failure:
            tracer.fail(failure)
    _ORIGINALS["propagate_tangents"](op, args, params, out)


def _commit(t: Tensor, result: Tensor) -> None:
    tracer = LOCAL.tracer
    if tracer is not None and tracer.failure is None:
        try:
            tracer.record_write(t, result)
        except Unsupported as failure:
            tracer.fail(failure)
    _ORIGINALS["commit"](t, result)


def _snapshot(t: Tensor) -> Tensor:
    s = _ORIGINALS["_snapshot"](t)
    tracer = LOCAL.tracer
    if tracer is not None and tracer.failure is None:
        try:
            tracer.record_copy(t, s)
        except Unsupported as failure:
            tracer.fail(failure)
    return s


def _copy_tangent(t: Tensor) -> Tensor:
    """The forward engine's copy of a tangent (``forward_ad.engine._copy``): a copy step when it copies
    the array outside dispatch (a ``clone`` is recorded by dispatch)."""
    s = _ORIGINALS["_copy_tangent"](t)
    tracer = LOCAL.tracer
    if tracer is not None and tracer.failure is None and type(s) is Tensor and tracer._known(s._data) is None:
        try:
            tracer.record_copy(t, s)
        except Unsupported as failure:
            tracer.fail(failure)
    return s


def _accumulate_into_leaf(leaf: Tensor, grad: Tensor, create_graph: bool) -> None:
    tracer = LOCAL.tracer
    if tracer is None:
        _ORIGINALS["_accumulate_into_leaf"](leaf, grad, create_graph)
        return
    if create_graph:
        tracer.fail(Unsupported("backward(create_graph=True) sets .grad to a tensor with a graph (a replay has "
                                "no graph to give it)", user_location()))
        _ORIGINALS["_accumulate_into_leaf"](leaf, grad, create_graph)
        return
    if leaf._grad is not None:
        if tracer.failure is None:
            try:
                tracer.record_accumulate(leaf, grad, leaf._grad)
            except Unsupported as failure:
                tracer.fail(failure)
        _ORIGINALS["_accumulate_into_leaf"](leaf, grad, create_graph)
        return
    if tracer.failure is None:
        try:  # (a leaf first seen here: noted with its .grad before this call gives it one)
            tracer.slot_of_tensor(leaf)
        except Unsupported as failure:
            tracer.fail(failure)
    _ORIGINALS["_accumulate_into_leaf"](leaf, grad, create_graph)
    if tracer.failure is None:
        try:
            tracer.record_new_grad(leaf, grad, leaf._grad)
        except Unsupported as failure:
            tracer.fail(failure)


def _parameters(owner: Any) -> list:
    """The tensors an optimizer or a module updates (its parameters)."""
    groups = getattr(owner, "param_groups", None)
    if groups is not None:
        return [p for group in groups for p in group["params"]]
    return list(owner.parameters())


def _opaque(name: str, original: Callable) -> Callable:
    """An optimizer's ``step``/``zero_grad`` or a module's ``zero_grad`` while tracing: run as it is (on raw
    arrays, unseen by dispatch), and again by every replay at the same point (``Tracer.record_opaque``)."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = LOCAL.tracer
        if tracer is None:
            return original(self, *args, **kwargs)
        if not all(v is None or type(v) in (bool, int, float) for v in (*args, *kwargs.values())):
            tracer.fail(Unsupported(_opaque_refusal(type(self).__name__, name, (*args, *kwargs.values())),
                                    user_location()))
            return original(self, *args, **kwargs)
        seen = {id(h[0]) for h in tracer.held}  # (their .grad was noted when first seen, before this call)
        for p in _parameters(self):  # (their .grad before the call, for the guards: the call may change it)
            if id(p) not in seen:
                tracer.grad_before.setdefault(id(p), p._grad is None)
        LOCAL.tracer = None
        tracer.paused = True
        try:
            result = original(self, *args, **kwargs)
        finally:
            LOCAL.tracer = tracer
            tracer.paused = False
        if tracer.failure is None:
            tracer.record_opaque(lambda: original(self, *args, **kwargs), f"{type(self).__name__}.{name}()")
        return result

    call.__name__ = name
    call.__wrapped__ = original
    return call


def _opaque_refusal(owner: str, name: str, values: tuple) -> str:
    """Why ``owner.name(*values)`` cannot be an effect of a replay (it has a closure or a tensor argument)."""
    if not any(callable(v) for v in values):
        return f"{owner}.{name}() with a tensor argument (the replay would pass the traced call's tensor)"
    if owner == "LBFGS":
        return ("LBFGS.step(closure) cannot be replayed: it calls the closure a number of times that depends on "
                "the loss values (line search, tolerance tests), with Python decisions on them, and keeps tensors "
                "of every step in its state; and it changes the parameters in place between closure calls, so a "
                "compiled closure retraces at every call")
    return (f"{owner}.{name}(closure): a replay would call the closure object of the traced call, which holds "
            "that call's tensors (call the closure in the function, then step() without it)")


def _add_hook(hooks: dict, fn: Callable) -> Any:
    tracer = LOCAL.tracer
    if tracer is not None:
        tracer.fail(Unsupported("a hook registered during the call (it would run only when traced)", user_location()))
    return _ORIGINALS["add_hook"](hooks, fn)


def _is_fresh(tracer: Tracer, t: Tensor) -> bool:
    entry = tracer.created.get(id(t))
    return entry is not None and entry[0]() is t


def _grad_property() -> property:
    """``.grad`` of a tensor the caller holds, while tracing: reading it gives a Python decision (``is None``,
    guarded) and, if it existed before the call, a tensor whose values the trace may not read; assigning None
    or a tensor made in the call is an effect every replay repeats."""
    original = Tensor.__dict__["grad"]

    def get(self: Tensor) -> Any:
        value = original.fget(self)
        tracer = LOCAL.tracer
        if tracer is None or _is_fresh(tracer, self):
            return value
        if id(self) in tracer.input_ids:  # (no guard sees an argument's .grad)
            tracer.fail(Unsupported("reads .grad of an argument", user_location()))
            return value
        if tracer.failure is None:
            try:  # (held from now: its guard checks that .grad is None, or not, as now)
                tracer.slot_of_tensor(self)
            except Unsupported as failure:
                tracer.fail(failure)
        if value is not None and not _is_fresh(tracer, value) and id(value) not in tracer.installed:
            tracer.grad_identity.setdefault(id(self), value)
        return value

    def set_(self: Tensor, value: Any) -> None:
        tracer = LOCAL.tracer
        if tracer is not None and not _is_fresh(tracer, self) and tracer.failure is None:
            try:
                tracer.record_set_grad(self, value)
            except Unsupported as failure:
                tracer.fail(failure)
        original.fset(self, value)

    def delete(self: Tensor) -> None:
        tracer = LOCAL.tracer
        if tracer is not None and not _is_fresh(tracer, self):
            tracer.fail(Unsupported("deletes .grad of a tensor the caller holds", user_location()))
        original.fdel(self)

    return property(get, set_, delete, original.__doc__)


def _look(name: str) -> Callable:
    original = getattr(Tensor, name)

    def look(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        value = original(self, *args, **kwargs)
        tracer = LOCAL.tracer
        if tracer is not None and tracer.failure is None and not args and not kwargs:
            try:
                tracer.record_look(name, original, self, value)
            except Unsupported as failure:
                tracer.fail(failure)
        elif tracer is not None and (args or kwargs):
            tracer.fail(Unsupported(f"Tensor.{name} with arguments", user_location()))
        return value

    look.__name__ = name
    return look


def _escape(name: str) -> Callable:
    original = getattr(Tensor, name)

    def escape(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        tracer = LOCAL.tracer
        if tracer is not None:
            tracer.fail(Unsupported(f"Tensor.{name}() takes the raw values out of the trace", user_location()))
        return original(self, *args, **kwargs)

    escape.__name__ = name
    return escape


LOOKS = ("__bool__", "__float__", "__int__", "__index__", "__complex__", "item", "tolist")
ESCAPES = ("numpy", "__array__", "__repr__", "__str__", "__format__", "__dlpack__", "register_hook",
           "resize_", "resize_as_", "storage", "data_ptr", "untyped_storage",
           # Python values computed from the raw data (not through a look at one value)
           "equal", "allclose", "__contains__")


def install_hooks() -> None:
    """Route tensor creation, value looks, escapes, writes and tangents through the tracer (refcounted)."""
    with _PATCH_LOCK:
        _PATCH_COUNT[0] += 1
        if _PATCH_COUNT[0] > 1:
            return
        _ORIGINALS["class"] = {name: Tensor.__dict__.get(name) for name in LOOKS + ESCAPES + ("__init__", "grad")}
        _ORIGINALS["__init__"] = Tensor.__init__
        _ORIGINALS["propagate_tangents"] = dispatch.propagate_tangents
        _ORIGINALS["commit"] = inplace.commit
        _ORIGINALS["_new"] = tensor_module._new
        _ORIGINALS["_snapshot"] = inplace._snapshot
        _ORIGINALS["_accumulate_into_leaf"] = engine._accumulate_into_leaf
        inplace._snapshot = _snapshot
        _ORIGINALS["_copy_tangent"] = forward_engine._copy
        forward_engine._copy = _copy_tangent
        engine._accumulate_into_leaf = _accumulate_into_leaf
        _ORIGINALS["add_hook"] = tensor_module.add_hook
        _ORIGINALS["opaque"] = [(klass, name, klass.__dict__[name]) for klass, name in _opaque_methods()]
        for klass, name, method in _ORIGINALS["opaque"]:
            setattr(klass, name, _opaque(name, method))
        tensor_module.add_hook = node_module.add_hook = _add_hook
        for name in LOOKS:
            setattr(Tensor, name, _look(name))
        for name in ESCAPES:
            if hasattr(Tensor, name):
                setattr(Tensor, name, _escape(name))
        Tensor.__init__ = _recording_init
        Tensor.grad = _grad_property()
        dispatch.propagate_tangents = _propagate_tangents
        inplace.commit = _commit
        tensor_module._new = _recording_new


def remove_hooks() -> None:
    with _PATCH_LOCK:
        _PATCH_COUNT[0] -= 1
        if _PATCH_COUNT[0]:
            return
        for name, value in _ORIGINALS["class"].items():
            if value is None:
                if name in Tensor.__dict__:
                    delattr(Tensor, name)
            else:
                setattr(Tensor, name, value)
        dispatch.propagate_tangents = _ORIGINALS["propagate_tangents"]
        inplace.commit = _ORIGINALS["commit"]
        tensor_module._new = _ORIGINALS["_new"]
        inplace._snapshot = _ORIGINALS["_snapshot"]
        forward_engine._copy = _ORIGINALS["_copy_tangent"]
        tensor_module.add_hook = node_module.add_hook = _ORIGINALS["add_hook"]
        engine._accumulate_into_leaf = _ORIGINALS["_accumulate_into_leaf"]
        for klass, name, method in _ORIGINALS["opaque"]:
            setattr(klass, name, method)


SIZE_READS = ("shape", "size", "__len__", "numel", "nelement", "__iter__")
_SIZE_COUNT = [0]


def _size_read(name: str, original: Any) -> Any:
    """``Tensor.<name>`` while a ``dynamic=True`` trace runs: a read by the user's code (not dualgrad's) makes
    the trace hold only for the traced sizes (the code may branch on them or compute with them)."""
    getter = original.fget if isinstance(original, property) else original

    def read(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        tracer = LOCAL.tracer
        if tracer is not None and tracer.dynamic and tracer.size_dependent is None:
            caller = sys._getframe(1).f_code.co_filename
            if not caller.startswith(_DUALGRAD_DIR) and not caller.startswith(_NUMPY_DIR):
                tracer.size_dependent = f"Tensor.{name} read at {user_location()}"
        return getter(self, *args, **kwargs)

    read.__name__ = name
    return property(read, None, None, original.__doc__) if isinstance(original, property) else read


def install_size_hooks() -> None:
    """Report the user's reads of tensor sizes to ``dynamic=True`` traces (refcounted)."""
    with _PATCH_LOCK:
        _SIZE_COUNT[0] += 1
        if _SIZE_COUNT[0] > 1:
            return
        _ORIGINALS["sizes"] = {name: Tensor.__dict__[name] for name in SIZE_READS if name in Tensor.__dict__}
        for name, value in _ORIGINALS["sizes"].items():
            setattr(Tensor, name, _size_read(name, value))


def remove_size_hooks() -> None:
    with _PATCH_LOCK:
        _SIZE_COUNT[0] -= 1
        if _SIZE_COUNT[0]:
            return
        for name, value in _ORIGINALS["sizes"].items():
            setattr(Tensor, name, value)


def _opaque_methods() -> list:
    """``(class, name)`` of the methods a replay calls as they are (``_opaque``): an optimizer's ``step`` and
    ``zero_grad``, a module's ``zero_grad``. Found among the loaded modules (compile is a lower layer than
    ``optim``: if it is not loaded, no optimizer can be in the call)."""
    found = []
    optimizer = sys.modules.get("dualgrad.optim.optimizer")
    if optimizer is not None:
        pending = [optimizer.Optimizer]
        while pending:  # (a subclass's own step, LBFGS's, replaces the base class's)
            klass = pending.pop()
            found += [(klass, name) for name in ("step", "zero_grad") if name in klass.__dict__]
            pending += klass.__subclasses__()
    module = sys.modules.get("dualgrad.nn.module")
    if module is not None:
        found.append((module.Module, "zero_grad"))
    return found


class TraceObserver:
    """The observer installed for one traced call: records each op call when it returns."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def wrap_op(self, run: Callable) -> Callable:
        tracer = self.tracer

        def traced(op: Any, args: tuple, params: dict) -> Any:
            out = run(op, args, params)
            if tracer.paused:
                return out
            pending = tracer.pending  # (calls _propagate_tangents recorded already: empty without dual levels)
            if pending and id(out) in pending:
                del pending[id(out)]
            elif tracer.failure is None:
                try:
                    tracer.record_op(op, args, params, out)
                except Unsupported as failure:
                    tracer.fail(failure)
            return out

        return traced

    def wrap_node(self, node: Any, run: Callable) -> Callable:
        return run


__all__ = ["Tracer", "TraceObserver", "Unsupported", "install_hooks", "remove_hooks", "LOCAL"]
