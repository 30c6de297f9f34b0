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


class Program:
    """The replay of one trace: ``run(input_arrays)`` returns the output arrays or raises ``Miss``."""

    def __init__(self, tracer: Any, outputs: list, optimize: bool = True) -> None:
        self.effects = any(s.kind == "effect" for s in tracer.steps)
        merge = optimize and not tracer.mutable and not any(s.kind in ("write", "effect") for s in tracer.steps)
        self.reuse = merge  # buffer reuse through out=: only where no write can see the buffers
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

    @staticmethod
    def _reusable(tracer: Any, step: Step, index: int, last_use: dict, views: list) -> int | None:
        """The position of an argument whose buffer can take this ufunc's result (``out=``): a step's
        own array that dies here, of the result's shape, dtype and strides, that no other array views."""
        out = tracer.arrays[step.outs[0]]
        if out.size < 1024:
            return None
        for position, (kind, slot) in enumerate(step.args):
            if kind != "slot" or tracer.origin[slot] != "step" or last_use.get(slot) != index:
                continue
            array = tracer.arrays[slot]
            if (array.base is not None or not array.flags.owndata or not array.flags.writeable
                    or array.shape != out.shape or array.dtype != out.dtype or array.strides != out.strides):
                continue
            if any(np.may_share_memory(array, view) for view in views):
                continue
            return position
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
        views = [a for a in tracer.arrays if a.base is not None]
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
                elif self.reuse and step.how == "out=..." and not step.wrap and len(step.outs) == 1:
                    target = self._reusable(tracer, step, index, last_use, views)
                    if target is not None:
                        expr = expr.replace("out=...", f"out={{{target}}}")
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
            dead = sorted({v for k, v in step.args if k == "slot" and last_use.get(v) == index
                           and tracer.origin[v] == "step" and tracer.arrays[v].size >= 1024}
                          | {o for o in step.outs if o not in last_use and tracer.arrays[o].size >= 1024})
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
