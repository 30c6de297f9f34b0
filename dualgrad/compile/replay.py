"""A trace as a replay: plain Python over NumPy calls, generated as source and compiled.

``Program`` takes the tracer's steps, drops the dead ones, merges common subexpressions
(only in traces without in-place writes, where two equal calls on the same arrays give equal
values), and writes the rest out as one Python function. Guards are statements of that
function: a failing one raises ``Miss`` before anything outside the replay was touched.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..tensor import _wrap
from .trace import Step, _value_key


class Miss(Exception):
    """A guard of the replay failed: the call must be traced again (``step`` names the guard)."""

    def __init__(self, step: Step) -> None:
        super().__init__(step.name)
        self.step = step


def _equal(a: np.ndarray, expected: np.ndarray) -> bool:
    return a.shape == expected.shape and a.dtype == expected.dtype and bool(np.array_equal(a, expected))


def _outputs(data: Any) -> tuple:
    return tuple(d if type(d) is np.ndarray else np.asarray(d) for d in data)


def _look(original: Any) -> Any:
    def look(array: np.ndarray) -> str:
        return _value_key(original(_wrap(array)))
    return look


def _literal(value: Any) -> str | None:
    """Source text for a constant argument when it is exact and readable, else None."""
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return None


def _scalar_call_exact(tracer: Any, step: Step) -> bool:
    """Whether the step's ufunc, called on its input as a NumPy scalar, gives a NumPy scalar with the bits
    of the traced result (checked on the traced values)."""
    impl = step.objects.get("impl")
    source, out = tracer.arrays[step.args[0][1]], tracer.arrays[step.outs[0]]
    if impl is None or source.ndim or out.ndim:
        return False
    with np.errstate(all="ignore"):
        result = impl(source[()])
    return (isinstance(result, np.generic) and result.dtype == out.dtype
            and np.asarray(result).tobytes() == out.tobytes())


def _fold_constants(steps: list, tracer: Any, outputs: set) -> list:
    """Op steps that read only constants give the same arrays every call: their traced results become
    constants (in traces without writes; not for outputs, which are fresh arrays for every call)."""
    # (only constants in memory of their own: a held tensor or the caller's array may be changed in place
    # without a version bump, through ``.data`` or NumPy, and the replay reads those live)
    constant = {slot for slot, origin in enumerate(tracer.origin) if origin == "fresh"}
    kept = []
    for step in steps:
        if (step.kind == "op" and not step.symbolic  # (a dynamic trace's shape follows the inputs: not constant)
                and all(kind != "slot" or value in constant for kind, value in step.args)
                and not any(o in outputs for o in step.outs)):
            for o in step.outs:
                tracer.origin[o] = "fresh"
                constant.add(o)
            continue
        kept.append(step)
    return kept


def _resolve(arg: tuple, alias: dict) -> tuple:
    return ("slot", alias.get(arg[1], arg[1])) if arg[0] == "slot" else arg


def prune_and_merge(steps: list, outputs: list, merge: bool) -> list:
    """The steps still needed for ``outputs`` (slots) and every guard and write; equal op calls merged."""
    alias: dict = {}
    if merge:
        seen: dict = {}
        kept = []
        for step in steps:
            step.args = [_resolve(a, alias) for a in step.args]
            if step.kind == "op" and step.key is not None:
                try:
                    key = (step.key, tuple((k, v) if k == "slot" else (k, type(v).__name__, repr(v))
                                           for k, v in step.args))
                    hash(key)
                except TypeError:
                    key = None
                if key is not None:
                    first = seen.get(key)
                    if first is not None and len(first.outs) == len(step.outs):
                        for mine, theirs in zip(step.outs, first.outs):
                            alias[mine] = theirs
                        continue
                    seen[key] = step
            kept.append(step)
        steps = kept
        outputs[:] = [alias.get(s, s) for s in outputs]
    live = set(outputs)
    result = []
    for step in reversed(steps):
        if step.kind == "op" and not any(o in live for o in step.outs):
            continue
        result.append(step)
        live.update(v for k, v in step.args if k == "slot")
    result.reverse()
    return result


# Buffer reuse in replays (tests switch it off to compare the replays with and without, bit for bit).
BUFFER_REUSE = [True]
_REUSE_MIN_SIZE = 1024  # (smaller arrays: NumPy's small-block cache makes a new one as cheap)


def _matmul_into(tracer: Any, step: Step) -> bool:
    """Whether the step is ``matmul`` of two matrices that its implementation hands to ``np.matmul`` as they
    are (``products._matmul_impl``'s first case): the same call with ``out=`` gives the same bits."""
    if step.name != "matmul" or step.how != "impl" or step.params or len(step.args) != 2 or step.wrap:
        return False
    if any(kind != "slot" for kind, _ in step.args):
        return False
    x, y = (tracer.arrays[slot] for _, slot in step.args)
    return (type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 == y.ndim
            and x.shape[1] == y.shape[0] != 1)


def plan_reuse(tracer: Any, steps: list, outputs: list) -> tuple:
    """``(targets, kept)``: ``targets[i]`` is the slot whose buffer step ``i`` writes its result into
    (``out=``); ``kept`` the slots whose buffers outlive their last use to be reused by a later step.

    A buffer is reusable if it is a step's own array (not an input, a constant, a closed-over tensor or an
    output of the replay), no other array of the trace is it or views it, and its value is dead: its last
    reader ran before (or, for an elementwise ufunc, is) the step that takes it. The step must give a result
    of the buffer's shape, dtype and strides: a ufunc (``out=...``) or a matrix product (``np.matmul``)."""
    last_use: dict = {}
    for index, step in enumerate(steps):
        for kind, value in step.args:
            if kind == "slot":
                last_use[value] = index
    for slot in outputs:
        last_use[slot] = len(steps)
    arrays, origin = tracer.arrays, tracer.origin
    count: dict = {}
    for a in arrays:
        count[id(a)] = count.get(id(a), 0) + 1
    viewed = set()  # (ids of arrays that another array of the trace views)
    for a in arrays:
        while a.base is not None:
            a = a.base
            viewed.add(id(a))

    def own(slot: int) -> bool:
        a = arrays[slot]
        return (origin[slot] == "step" and type(a) is np.ndarray and a.base is None and a.flags.owndata
                and a.flags.writeable and a.size >= _REUSE_MIN_SIZE and count[id(a)] == 1 and id(a) not in viewed)

    def layout(a: np.ndarray) -> tuple:
        return (a.shape, a.dtype.str, a.strides)

    free: dict = {}  # layout -> slots whose buffers are dead and not taken yet
    targets: dict = {}
    kept: set = set()
    for index, step in enumerate(steps):
        if step.kind == "op" and len(step.outs) == 1 and not step.wrap:
            result = arrays[step.outs[0]]
            ufunc = step.how == "out=..."
            if (ufunc or not tracer.dynamic and _matmul_into(tracer, step)) and type(result) is np.ndarray:
                wanted = layout(result)
                target = None
                if ufunc:  # (an argument dying here: elementwise, so written after it is read)
                    target = next((slot for kind, slot in step.args if kind == "slot" and last_use.get(slot) == index
                                   and own(slot) and layout(arrays[slot]) == wanted), None)
                if target is None and free.get(wanted) and not tracer.dynamic:  # (sizes may differ at replay)
                    target = free[wanted].pop()
                    kept.add(target)
                if target is not None:
                    targets[index] = target
        for slot in {v for k, v in step.args if k == "slot" and last_use.get(v) == index} | {
                o for o in step.outs if o not in last_use}:
            if own(slot) and slot not in targets.values():
                free.setdefault(layout(arrays[slot]), []).append(slot)
        taken = targets.get(index)
        if taken is not None:  # (the result now lives in the buffer: it is free again when the result dies)
            for group in free.values():
                if taken in group:
                    group.remove(taken)
    return targets, kept


class Program:
    """The replay of one trace: ``run(input_arrays)`` returns the output arrays or raises ``Miss``."""

    def __init__(self, tracer: Any, outputs: list, optimize: bool = True) -> None:
        self.effects = any(s.kind == "effect" for s in tracer.steps)
        merge = optimize and not tracer.mutable and not any(s.kind in ("write", "effect") for s in tracer.steps)
        self.reuse = merge and BUFFER_REUSE[0]  # buffer reuse through out=: only where no write can see the buffers
        outs = list(outputs)
        self.steps = prune_and_merge(list(tracer.steps), outs, merge) if optimize else list(tracer.steps)
        if merge:
            self.steps = _fold_constants(self.steps, tracer, set(outs))
        self.outputs = outs
        self.namespace: dict = {"np": np, "Miss": Miss, "_equal": _equal, "_outputs": _outputs,
                                "copyto": np.copyto, "asarray": np.asarray}
        self.source_text = self._generate(tracer)
        code = compile(self.source_text, "<dualgrad.compile replay>", "exec")
        exec(code, self.namespace)  # noqa: S102 - source generated above from the trace
        self.run = self.namespace["replay"]

    def size_dependence(self) -> str | None:
        """Why this replay holds only for the traced input sizes (None: for any sizes of the same ranks and
        broadcasting pattern): shape checks of ops whose result shapes vary, index-value checks, writes and
        effects (into arrays of fixed sizes)."""
        for step in self.steps:
            if step.kind == "op" and step.shape is not None:
                return f"{step.name}'s result shape is checked"
            if step.kind in ("equal", "write", "effect"):
                return f"a {step.kind} step ({step.name})"
        return None

    def _name(self, tracer: Any, slot: int) -> str:
        origin = tracer.origin[slot]
        if origin == "input":
            return f"x{tracer.inputs.index(slot)}"
        if origin == "step":
            return f"v{slot}"
        name = f"c{slot}"
        if slot not in tracer.mutable:  # (a mutable one is a local copy of tracer.initial[slot]: _generate)
            self.namespace.setdefault(name, tracer.arrays[slot])
        return name

    def _generate(self, tracer: Any) -> str:
        ns = self.namespace
        params = ", ".join(f"x{i}" for i in range(len(tracer.inputs)))
        lines = [f"def replay({params}):"]
        for slot in sorted(tracer.mutable):  # constants a write changes: a fresh copy per replay
            lines.append(f"    c{slot} = np.array(_c{slot}, copy=True, order='K')")
            ns[f"_c{slot}"] = tracer.initial[slot]
        last_use: dict = {}
        for index, step in enumerate(self.steps):
            for kind, value in step.args:
                if kind == "slot":
                    last_use[value] = index
        for slot in self.outputs:
            last_use[slot] = len(self.steps)
        reuse_targets, kept = plan_reuse(tracer, self.steps, self.outputs) if self.reuse else ({}, set())
        object_names: dict = {}
        # A value of NumPy's scalar arithmetic read only by scalar arithmetic (``a[()]``) or by ufuncs called
        # with ``out=...`` (which return arrays) stays a NumPy scalar: same bits, no ``asarray``.
        scalar_safe: dict = {}
        for step in self.steps:
            for kind, value in step.args:
                if kind == "slot":
                    safe = step.kind == "op" and step.how in ("scalar", "out=...") and not step.wrap or (
                        step.kind == "op" and step.how == "scalar")
                    scalar_safe[value] = scalar_safe.get(value, True) and safe
        for slot in self.outputs:
            scalar_safe[slot] = False
        scalars: set = set()  # slots whose replay value is a NumPy scalar (read without ``[()]``)
        bases: dict = {}
        for index, step in enumerate(self.steps):
            args = []
            for j, (kind, value) in enumerate(step.args):
                if kind == "slot":
                    args.append(self._name(tracer, value))
                else:
                    text = _literal(value)
                    if text is None:
                        text = f"k{index}_{j}"
                        ns[text] = value
                    args.append(text)
            if step.kind == "op":
                base = bases.get(step.name)
                if base is None:
                    base = bases[step.name] = re.sub(r"\W", "_", step.name) or "op"
                names = {}
                for placeholder, obj in step.objects.items():
                    name = object_names.get(id(obj))
                    if name is None:  # (one name per object: the same ufunc is one global of the replay)
                        name = object_names[id(obj)] = f"{base}_{placeholder}_{index}"
                        ns[name] = obj
                    names[placeholder] = name
                expr = step.expr
                for position, (kind, value) in enumerate(step.args):
                    if kind == "slot" and value in scalars:
                        expr = expr.replace(f"{{{position}}}[()]", f"{{{position}}}")
                scalar_call = (step.how == "out=..." and len(step.args) == 1 and step.args[0][0] == "slot"
                               and step.args[0][1] in scalars and len(step.outs) == 1
                               and scalar_safe.get(step.outs[0], True) and _scalar_call_exact(tracer, step))
                if scalar_call:  # (a ufunc on a NumPy scalar returns one, with the same bits)
                    expr = expr.replace(", out=...", "")
                elif index in reuse_targets:
                    buffer = f"v{reuse_targets[index]}"
                    if step.how == "out=...":
                        expr = expr.replace("out=...", "out=" + buffer)
                    else:  # (a matrix product: _matmul_into)
                        expr = "np.matmul({0}, {1}, out=" + buffer + ")"
                call = expr.format(*args, **names)
                targets = ", ".join(f"v{o}" for o in step.outs)
                how = "on a NumPy scalar" if scalar_call else step.how
                note = f"  # {step.name}: {how}" + (f" {step.params}" if step.params else "")
                if len(step.outs) > 1:
                    lines.append(f"    {targets} = _outputs({call}){note}")
                elif step.wrap and not (step.how == "scalar" and scalar_safe.get(step.outs[0], True)):
                    lines.append(f"    {targets} = asarray({call}){note}")
                else:
                    lines.append(f"    {targets} = {call}{note}")
                    if scalar_call or step.wrap and step.how == "scalar":
                        scalars.add(step.outs[0])
                if step.shape is not None:
                    for o, shape in zip(step.outs, step.shape):
                        ns[f"step{index}"] = step
                        lines.append(f"    if v{o}.shape != {shape!r}:")
                        lines.append(f"        raise Miss(step{index})")
            elif step.kind == "guard":
                ns[f"step{index}"] = step
                ns[f"look{index}"] = _look(step.fn)
                ns[f"e{index}"] = step.expected
                lines.append(f"    if look{index}({args[0]}) != e{index}:  # {step.name}() at {step.where}")
                lines.append(f"        raise Miss(step{index})")
            elif step.kind == "equal":
                ns[f"step{index}"] = step
                ns[f"e{index}"] = step.expected
                lines.append(f"    if not _equal({args[0]}, e{index}):  # values read at {step.where}")
                lines.append(f"        raise Miss(step{index})")
            elif step.kind == "effect":  # (a training step's effect on state the caller holds)
                ns[f"effect{index}"] = step.fn
                lines.append(f"    effect{index}({', '.join(args)})  # {step.name}")
            else:
                lines.append(f"    copyto({args[0]}, {args[1]})  # in-place write")
            dead = {v for k, v in step.args if k == "slot" and last_use.get(v) == index
                    and tracer.origin[v] == "step" and tracer.arrays[v].size >= 1024}
            dead |= {o for o in step.outs if o not in last_use and tracer.arrays[o].size >= 1024}
            dead -= kept  # (a buffer a later step writes into: its name is deleted after that step)
            if index in reuse_targets and reuse_targets[index] in kept:
                dead.add(reuse_targets[index])
            dead = sorted(dead)
            if dead:  # (large arrays freed now: the allocator hands their memory to the next step)
                lines.append(f"    del {', '.join(f'v{v}' for v in dead)}")
        # A result in a constant's memory (a constant, a view of one) is copied: every call returns new memory.
        constants = [tracer.arrays[c] for c, origin in enumerate(tracer.origin) if origin == "fresh"]
        names = [f"np.array({self._name(tracer, s)}, copy=True, order='K')"
                 if tracer.origin[s] == "fresh" or any(np.may_share_memory(tracer.arrays[s], c) for c in constants)
                 else self._name(tracer, s) for s in self.outputs]
        lines.append(f"    return ({', '.join(names)}{',' if len(names) == 1 else ''})")
        return "\n".join(lines) + "\n"


class LazyProgram:
    """A ``Program`` built at its first replay, not when traced: a function called once pays for the recording
    only (the source is generated and compiled when a second call needs it)."""

    def __init__(self, tracer: Any, outputs: list) -> None:
        self._parts: tuple | None = (tracer, outputs)
        self._built: Program | None = None
        self.effects = any(s.kind == "effect" for s in tracer.steps)

    def program(self) -> Program:
        if self._built is None:
            tracer, outputs = self._parts
            self._built = Program(tracer, outputs)
            self._parts = None  # (the trace's arrays are not needed any more)
            self.run = self._built.run  # (later replays call the generated function directly)
        return self._built

    def run(self, *arrays: Any) -> tuple:
        return self.program().run(*arrays)

    @property
    def source_text(self) -> str:
        return self.program().source_text

    @property
    def steps(self) -> list:
        return self.program().steps

    @property
    def namespace(self) -> dict:
        return self.program().namespace

    def size_dependence(self) -> str | None:
        """``Program.size_dependence`` of the recorded steps (before pruning: the same or more reasons)."""
        steps = self._parts[0].steps if self._built is None else self._built.steps
        for step in steps:
            if step.kind == "op" and step.shape is not None:
                return f"{step.name}'s result shape is checked"
            if step.kind in ("equal", "write", "effect"):
                return f"a {step.kind} step ({step.name})"
        return None
