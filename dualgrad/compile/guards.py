"""What a trace assumed about its call, checked before a replay.

* ``call_key``: the hashable part (modes, argument structure, shapes, dtypes, strides
  class, ``requires_grad``, Python argument values, which arguments are the same object);
* ``HeldGuard``: closed-over tensors (identity, array, version counter, ``requires_grad``);
* ``closure_guards``: Python values the function reads from its closure cells, defaults and
  globals (by value for numbers and strings, by identity for anything else), followed into
  the functions it calls.
"""

from __future__ import annotations

import dis
import random
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.pytree import flatten
from ..base.state import STATE
from ..factories import get_default_dtype
from ..tensor import Tensor

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


class NotGuardable(TypeError):
    """An argument of a type whose value a guard cannot check."""


def _strides_class(array: np.ndarray) -> Any:
    """"C", "F", or the exact strides in elements (whether a reshape copies or views depends on them)."""
    if array.flags.c_contiguous:
        return "C"
    if array.flags.f_contiguous:
        return "F"
    return tuple(s // array.itemsize for s in array.strides)


def _leaf_key(leaf: Any) -> Any:
    if type(leaf) is Tensor:
        a = leaf._data
        return ("Tensor", a.shape, a.dtype.str, _strides_class(a), leaf._requires_grad, a.flags.writeable,
                leaf._extra is not None and leaf.is_inference())
    if type(leaf) is np.ndarray:  # (by value too: NumPy and Python code read it unseen, np.sqrt(a), float(a[0]))
        return ("ndarray", leaf.shape, leaf.dtype.str, _strides_class(leaf), leaf.flags.writeable, leaf.tobytes())
    if type(leaf) in _SCALARS:
        return (type(leaf).__name__, repr(leaf))
    if isinstance(leaf, slice):
        return ("slice", repr(leaf))
    if isinstance(leaf, np.dtype):
        return ("dtype", leaf.str)
    if isinstance(leaf, np.generic) and leaf.dtype.kind in "biufc":
        return (type(leaf).__name__, repr(leaf))
    raise NotGuardable(f"an argument of type {type(leaf).__name__} cannot be guarded")


MODE_NAMES = ("grad mode", "inference mode", "default dtype")


def flat_arguments(args: tuple, kwargs: dict) -> tuple:
    """``(leaves, spec)`` of a call's arguments (positional Tensors only, the common call, without a walk)."""
    if not kwargs and all(type(a) is Tensor for a in args):
        return list(args), len(args)
    return flatten((args, kwargs))


def call_key(leaves: list, spec: Any) -> tuple:
    """The guard key of a call, from its flattened arguments."""
    keys = tuple(_leaf_key(leaf) for leaf in leaves)
    first: dict = {}
    same = tuple(first.setdefault(id(leaf), i) if isinstance(leaf, (Tensor, np.ndarray)) else i
                 for i, leaf in enumerate(leaves))
    modes = (STATE.grad_enabled, STATE.inference_mode, get_default_dtype().str)
    return (modes, repr(spec), keys, same)


def dynamic_key(leaves: list, spec: Any) -> tuple:
    """The guard key of a call for ``dynamic=True``: ``call_key`` with each tensor's sizes replaced by its rank,
    which of its dimensions are 1, and which dimensions of all tensor arguments have equal sizes (the
    broadcasting pattern: it decides whether an elementwise op broadcasts, and so its gradient's reductions)."""
    modes, spec_text, keys, same = call_key(leaves, spec)
    sizes: dict = {}
    pattern = []
    dynamic_keys = []
    for leaf, key in zip(leaves, keys):
        if type(leaf) is Tensor and type(key[3]) is str:  # (C or F order: the strides follow from the sizes)
            shape = key[1]
            pattern.append(tuple(sizes.setdefault(n, len(sizes)) for n in shape))
            key = (key[0], (len(shape), tuple(n == 1 for n in shape))) + key[2:]
        dynamic_keys.append(key)
    return (modes, spec_text, tuple(dynamic_keys), same, tuple(pattern))


def describe_difference(old: tuple, new: tuple) -> str:
    """Which guard of ``old`` the key ``new`` fails, in words."""
    reasons = []
    for name, a, b in zip(MODE_NAMES, old[0], new[0]):
        if a != b:
            reasons.append(f"{name} {a} -> {b}")
    if old[1] != new[1]:
        reasons.append("argument structure changed")
    elif old[2] != new[2]:
        fields = ("kind", "shape", "dtype", "strides", "requires_grad", "writeable", "inference")
        for i, (a, b) in enumerate(zip(old[2], new[2])):
            if a == b:
                continue
            if a[0] != b[0] or a[0] not in ("Tensor", "ndarray"):
                reasons.append(f"argument {i}: {a[1] if a[0] not in ('Tensor', 'ndarray') else a[0]} -> "
                               f"{b[1] if b[0] not in ('Tensor', 'ndarray') else b[0]}")
                continue
            names = fields if a[0] == "Tensor" else fields[:4] + fields[5:6] + ("values",)
            for field, x, y in zip(names, a, b):
                if x != y:
                    reasons.append(f"argument {i} values changed" if field == "values"
                                   else f"argument {i} {field} {x} -> {y}")
    elif old[3] != new[3]:
        reasons.append("which arguments are the same tensor changed")
    return "; ".join(reasons) or "a new guard set"


class HeldGuard:
    """A tensor the call read but did not receive: it must be the same, unchanged, and its ``.grad`` None or
    not as when traced (``grad_none``: None for a trace that does not care).

    A trace that changes it itself (a training step: in-place updates, version bumps) ``refresh``es the
    expected version after each call: only a change made between calls makes it fail.
    """

    __slots__ = ("tensor", "array", "version", "requires_grad", "grad_none", "grad_is")

    def __init__(self, tensor: Tensor, array: np.ndarray, version: int, requires_grad: bool,
                 grad_none: bool | None = None, grad_is: Tensor | None = None) -> None:
        self.tensor, self.array, self.version, self.requires_grad = tensor, array, version, requires_grad
        self.grad_none = grad_none
        self.grad_is = grad_is  # (the .grad the trace read or accumulated into: the same tensor, or retrace)

    def refresh(self) -> None:
        counter = self.tensor._counter
        self.version = 0 if counter is None else counter.value

    def failure(self) -> str | None:
        t = self.tensor
        if t._data is not self.array:
            return f"closed-over tensor of shape {tuple(self.array.shape)} got new data"
        counter = t._counter
        version = 0 if counter is None else counter.value
        if version != self.version:
            return (f"closed-over tensor of shape {tuple(self.array.shape)} changed in place "
                    f"(version {self.version} -> {version})")
        if t._requires_grad != self.requires_grad:
            return f"closed-over tensor of shape {tuple(self.array.shape)} requires_grad changed"
        if self.grad_none is not None and (t._grad is None) != self.grad_none:
            now = "not None" if self.grad_none else "None"
            return f"closed-over tensor of shape {tuple(self.array.shape)}: .grad is {now} now"
        if self.grad_is is not None and t._grad is not self.grad_is:
            return f"closed-over tensor of shape {tuple(self.array.shape)}: .grad is another tensor now"
        return None


def _is_dualgrad(fn: Any) -> bool:
    """Whether ``fn`` is dualgrad's code: by the module its globals are (``functools.wraps`` copies the wrapped
    function's ``__module__`` onto a dualgrad wrapper)."""
    namespace = getattr(fn, "__globals__", None)
    name = namespace.get("__name__") if type(namespace) is dict else getattr(fn, "__module__", None)
    return isinstance(name, str) and name.startswith("dualgrad")


# ``reached`` holds this marker when the walk met something whose contents it does not follow completely (an
# object's attributes other than those the code names, a partial's arguments, a user class, a cut-off depth,
# dynamic lookups): the function may then reach objects the walk did not note (``api._reachable`` asks the
# garbage collector instead).
INCOMPLETE = "incomplete walk"
# Names whose use reaches objects by a computed name or by import, unseen by a walk over named globals.
_DYNAMIC_NAMES = frozenset({"getattr", "vars", "globals", "locals", "eval", "exec", "__dict__", "__import__",
                            "import_module", "_getframe", "f_locals", "f_globals", "modules", "get_referents",
                            "__closure__", "cell_contents", "__self__", "__func__", "__kwdefaults__", "__defaults__"})
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_KNOWN_MODULES = ("builtins", "numpy", "dualgrad", "math", "cmath", "typing", "collections", "functools",
                  "operator", "itertools", "abc", "enum")


def _library_type(klass: type) -> bool:
    """A class of Python, NumPy or dualgrad (no user state in its class attributes)."""
    module = getattr(klass, "__module__", None) or ""
    return module.split(".")[0] in _KNOWN_MODULES


def _holds_attributes(obj: Any, library: bool = False) -> bool:
    """Whether ``obj`` holds Python attributes (an instance ``__dict__`` or slots) that the walk follows only by
    the names the code uses: anything but compile's own wrappers of the function (``compose``), whose attributes
    their ``__call__`` names in full, and (``library``: met in a dualgrad function's closure) dualgrad's own
    objects (an op's table entry). A user object, or a dualgrad one the user's code reaches (a module holds its
    parameters)."""
    klass = type(obj)
    module = getattr(klass, "__module__", None) or ""
    if module.startswith("dualgrad.compile") or library and module.startswith("dualgrad") and not _user_state(obj):
        return False
    return isinstance(getattr(obj, "__dict__", None), dict) or any("__slots__" in k.__dict__ for k in klass.__mro__)


def _user_state(obj: Any) -> bool:
    """A dualgrad object that holds the user's tensors: a module (its parameters) or an optimizer."""
    for module_name, class_name in (("dualgrad.nn.module", "Module"), ("dualgrad.optim.optimizer", "Optimizer")):
        module = sys.modules.get(module_name)
        if module is not None and isinstance(obj, getattr(module, class_name)):
            return True
    return False


def _imports(code: types.CodeType) -> bool:
    raw = code.co_code
    if any(raw[i] == _IMPORT_NAME for i in range(0, len(raw), 2)):
        return True
    return any(isinstance(c, types.CodeType) and _imports(c) for c in code.co_consts)


def _names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def closure_guards(fn: Any, reached: set | None = None) -> list:
    """``[(describe, read, expected)]`` for the Python values ``fn`` reads from outside its arguments.

    ``reached`` collects ``id(cell)`` of each closure cell and ``(id(globals), name)`` of each global read.
    """
    guards: list = []
    _visit(fn, guards, set(), 0, set() if reached is None else reached)
    return guards


def _expected(value: Any) -> tuple:
    """What a guard expects of a value: numbers and strings by value; NumPy arrays (changed in place by
    NumPy, which no version counter sees) and small lists, tuples, dicts and sets by identity and contents; any
    other object by identity (a tensor's contents have its version counter: ``HeldGuard``)."""
    if type(value) in _SCALARS:
        return ("value", type(value), repr(value))
    if type(value) is np.ndarray:
        return ("contents", value, _frozen(value, 0))
    if type(value) in (list, tuple, dict, set) and len(value) <= 1000:  # (a tuple's lists can change)
        return ("contents", value, _frozen(value, 0))
    return ("object", value)


def _frozen(value: Any, depth: int) -> Any:
    """A comparable copy of ``value``'s contents (``_matches``): scalars by value, arrays by bytes, nested
    lists, tuples, dicts and sets to depth 3, anything else by identity."""
    if type(value) in _SCALARS:
        return ("value", type(value), repr(value))
    if type(value) is np.ndarray:
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if depth < 3 and type(value) in (list, tuple):
        return (type(value), tuple(_frozen(v, depth + 1) for v in value))
    if depth < 3 and type(value) is dict:
        return (dict, tuple((repr(k), _frozen(v, depth + 1)) for k, v in value.items()))
    if depth < 3 and type(value) is set:
        return (set, frozenset(repr(v) for v in value))
    return ("object", id(value))


def _matches(value: Any, expected: tuple) -> bool:
    if expected[0] == "value":
        return type(value) is expected[1] and repr(value) == expected[2]
    if expected[0] == "contents":
        return value is expected[1] and _frozen(value, 0) == expected[2]
    return value is expected[1]


def _guard(guards: list, describe: str, read: Any, value: Any, seen: set, depth: int, reached: set,
           names: frozenset = frozenset(), library: bool = False) -> None:
    _collect(value, reached, 0, library)
    if isinstance(value, type):
        if not _library_type(value):  # (class attributes and methods the walk does not follow)
            reached.add(INCOMPLETE)
        return
    if isinstance(value, types.ModuleType):  # (``np.pi``, ``mymodule.k``: the attributes the code names)
        _attributes(value, describe, names, guards, seen, depth, reached)
        return
    guards.append((describe, read, _expected(value)))
    if callable(value):
        _visit(value, guards, seen, depth + 1, reached)
    _attributes(value, describe, names, guards, seen, depth, reached, library)


def _collect(value: Any, reached: set, depth: int, library: bool = False) -> None:
    """Note ``("object", id)`` of ``value`` and of what its lists, tuples, dicts and sets hold: the objects
    the function can reach (an argument among them is guarded by identity)."""
    reached.add(("object", id(value)))
    if type(value) in (list, tuple, set, frozenset, dict):
        if depth >= 4 or len(value) > 10_000:
            reached.add(INCOMPLETE)
            return
        for child in value.values() if type(value) is dict else value:
            _collect(child, reached, depth + 1, library)
    elif depth and not (type(value) in _SCALARS or type(value) in (Tensor, np.ndarray, slice)
                        or isinstance(value, (np.generic, np.dtype, types.ModuleType))
                        or library and not callable(value) and not _holds_attributes(value, True)):
        reached.add(INCOMPLETE)  # (an object, a function, a class inside a container: not followed)


def _attributes(obj: Any, describe: str, names: frozenset, guards: list, seen: set, depth: int,
                reached: set, library: bool = False) -> None:
    """Guards on the attributes of a plain object that the function's code names (``self.w``, ``model.k``)."""
    if isinstance(obj, types.FunctionType) and not _is_dualgrad(obj) and any(k[:2] != "__" for k in obj.__dict__):
        reached.add(INCOMPLETE)  # (a function's own attributes: not followed)
    if (type(obj) in _SCALARS or type(obj) in (list, tuple, dict, set, frozenset)
            or isinstance(obj, (Tensor, np.ndarray, types.FunctionType, types.ModuleType, np.generic, np.dtype))):
        if isinstance(obj, types.ModuleType) and depth > 6:
            reached.add(INCOMPLETE)
        if not isinstance(obj, types.ModuleType) or depth > 6 or not names or id(obj) in seen:
            return
    elif id(obj) in seen:
        return
    elif depth > 6 or _holds_attributes(obj, library):  # (only the attributes the code names are followed)
        reached.add(INCOMPLETE)
        if depth > 6 or not names:
            return
    elif not names:
        return
    namespace = getattr(obj, "__dict__", None)
    if type(namespace) is not dict:
        return
    seen.add(id(obj))
    if not isinstance(obj, types.ModuleType):
        names = _with_method_names(type(obj), names)
    for name in sorted(names & namespace.keys()):
        _guard(guards, f"attribute {name!r} of {describe}", lambda ns=namespace, name=name: ns.get(name),
               namespace[name], seen, depth + 1, reached, names, library)
    if isinstance(obj, types.ModuleType):
        return
    for name in sorted(names - namespace.keys()):  # class attributes the code names (not methods: code)
        for klass in type(obj).__mro__:
            value = klass.__dict__.get(name)
            if value is None:
                continue
            if type(value) in _SCALARS or type(value) in (list, dict, set, tuple) or type(value) is np.ndarray:
                # (read through the instance: an instance attribute set later shadows the class's)
                _guard(guards, f"class attribute {name!r} of {describe}",
                       lambda ns=namespace, kd=klass.__dict__, name=name: ns[name] if name in ns else kd.get(name),
                       value, seen, depth + 1, reached, names)
            break


def _with_method_names(klass: type, names: frozenset) -> frozenset:
    """``names`` and the names in the code of the methods and properties of ``klass`` they name, until
    nothing new (``self.helper()`` reads what helper's code names)."""
    while True:
        more = set(names)
        for name in names:
            for base in klass.__mro__:
                value = base.__dict__.get(name)
                if value is None:
                    continue
                if isinstance(value, property):
                    value = value.fget
                elif isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                code = getattr(value, "__code__", None)
                if code is not None and not _is_dualgrad(value):
                    more |= _names(code)
                break
        if more == names:
            return frozenset(names)
        names = frozenset(more)


def _visit(fn: Any, guards: list, seen: set, depth: int, reached: set) -> None:
    if id(fn) in seen:
        return
    if depth > 6:
        reached.add(INCOMPLETE)
        return
    seen.add(id(fn))
    if isinstance(fn, types.MethodType):
        _visit(fn.__func__, guards, seen, depth, reached)
        code = getattr(fn.__func__, "__code__", None)
        if code is not None:
            _attributes(fn.__self__, f"{fn.__func__.__qualname__}'s self", frozenset(_names(code)), guards, seen,
                        depth, reached)
        return
    inner = getattr(fn, "func", None)  # functools.partial
    if inner is not None and hasattr(fn, "keywords"):
        reached.add(INCOMPLETE)  # (its bound arguments are not noted)
        _visit(inner, guards, seen, depth + 1, reached)
        return
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None:
        _visit(wrapped, guards, seen, depth + 1, reached)
    if not isinstance(fn, types.FunctionType):
        owner = getattr(fn, "__self__", None)  # (a builtin method bound to an object: list.append)
        if owner is not None and not isinstance(owner, types.ModuleType):
            reached.add(INCOMPLETE)
        call = next((k.__dict__["__call__"] for k in type(fn).__mro__ if "__call__" in k.__dict__), None)
        if isinstance(call, types.FunctionType):  # a callable object: its __call__ and its attributes
            seen.discard(id(fn))  # (seen as a function above; its attributes are still to guard)
            _visit(types.MethodType(call, fn), guards, seen, depth + 1, reached)
        return
    names = frozenset(_names(fn.__code__))
    if fn.__kwdefaults__:
        _collect(fn.__kwdefaults__, reached, 0)
    if not _is_dualgrad(fn) and (names & _DYNAMIC_NAMES or _imports(fn.__code__)):
        reached.add(INCOMPLETE)
    for i, cell in enumerate(fn.__closure__ or ()):
        reached.add(id(cell))
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        _guard(guards, f"closure variable {fn.__code__.co_freevars[i]!r} of {fn.__qualname__}",
               lambda cell=cell: cell.cell_contents, value, seen, depth, reached, names, _is_dualgrad(fn))
    if fn.__defaults__:
        _guard(guards, f"defaults of {fn.__qualname__}", lambda fn=fn: fn.__defaults__, fn.__defaults__, seen, depth,
               reached)
        reached.add(id(fn.__defaults__))
        for value in fn.__defaults__:
            if callable(value):
                _visit(value, guards, seen, depth + 1, reached)
    if _is_dualgrad(fn):
        return
    namespace = fn.__globals__
    for name in sorted(names):
        reached.add((id(namespace), name))
        if name in namespace:
            _guard(guards, f"global {name!r} of {fn.__qualname__}",
                   lambda ns=namespace, name=name: ns.get(name), namespace[name], seen, depth, reached, names)


def _state_reader(source: Any) -> Callable | None:
    """A function reading the state of a random number generator outside dualgrad (None for other objects)."""
    if isinstance(source, np.random.Generator):
        return lambda: source.bit_generator.state
    if isinstance(source, np.random.RandomState):
        return lambda: source.get_state(legacy=False)
    if isinstance(source, random.Random):
        return source.getstate
    return None


def random_sources(guards: list) -> list:
    """``[(describe, read, state)]`` for the generators a call may draw from that dualgrad does not see:
    NumPy's global one (``np.random.rand``), Python's ``random`` module, and any generator the function
    reads from outside its arguments. A trace whose call moved one of them drew numbers that a replay
    would repeat (``drawn_at_random``)."""
    sources = [("NumPy's global random generator (np.random.*)", lambda: np.random.get_state(legacy=False)),
               ("Python's random module", random.getstate)]
    for describe, _, expected in guards:
        read = _state_reader(expected[1]) if expected[0] == "object" else None
        if read is not None:
            sources.append((f"the random generator {describe}", read))
    return [(describe, read, read()) for describe, read in sources]


def drawn_at_random(sources: list) -> str | None:
    """The first of ``random_sources``' generators whose state has moved since, or None."""
    for describe, read, state in sources:
        if not _same_state(read(), state):
            return describe
    return None


def _same_state(a: Any, b: Any) -> bool:
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if type(a) is np.ndarray:
        return type(b) is np.ndarray and np.array_equal(a, b)
    return a == b


def closure_failure(guards: list) -> str | None:
    for describe, read, expected in guards:
        try:
            value = read()
        except Exception:  # noqa: BLE001 - a value that cannot be read any more has changed
            return f"{describe} cannot be read"
        if value is not expected[1] if expected[0] == "object" else not _matches(value, expected):
            return f"{describe} changed"
    return None
