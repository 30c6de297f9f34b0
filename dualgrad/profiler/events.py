"""Profiler results: ``FunctionEvent``, ``FunctionEventAvg`` and ``EventList``.

Times are in microseconds, as torch's. An event's *self* time is its total time
minus the total time of the events nested directly inside it; its *self* memory
likewise.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable
from typing import Any

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]

SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
             "self_cpu_memory_usage", "count", "flops", "device_time", "device_time_total",
             "self_device_time_total", "device_memory_usage", "self_device_memory_usage")
STACK_METRICS = ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                 "self_privateuse1_time_total"]
TIME_UNITS = ("s", "ms", "us")


def _device_name(key: str) -> str:
    """torch's spelling of device columns: ``cuda_time_total`` -> ``device_time_total``."""
    return key.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")


class _Times:
    """What events and averages share: formatted times and torch's device columns (always 0 on CPU)."""

    device_time = device_time_total = self_device_time_total = 0.0
    device_memory_usage = self_device_memory_usage = 0

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)


class Interval:
    """An event's ``time_range``: ``start`` and ``end`` in microseconds."""

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


class FunctionEvent(_Times):
    """One recorded call: an op (``mul``), a backward node (``MulBackward0``) or a user range.

    ``is_user_annotation`` is true for ``record_function`` ranges; the ``device_*``
    times and memory are 0 (dualgrad runs on CPU), as in a CPU-only torch.
    """

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float = 0.0, *,
                 input_shapes: list | None = None, stack: list | None = None,
                 sequence_nr: int = -1, is_backward: bool = False, is_user_annotation: bool = False):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes
        self.stack = stack or []
        self.sequence_nr = sequence_nr
        self.is_backward = is_backward
        self.is_user_annotation = is_user_annotation
        self.cpu_memory_usage = 0
        self.flops = 0
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.kernels: list[tuple[str, float]] = []  # (name, duration in us), from nvprof traces

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_us, self.end_us)

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Times):
    """Events with the same key (name, and shapes / stack when grouped by them), summed."""

    def __init__(self, key: str | None = None):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.flops = 0
        self.input_shapes: list | None = None
        self.stack: list = []
        self.is_backward = False
        self.is_user_annotation = False
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Add an event (or another average) into this one; returns self.

        The first event added gives its key, ``is_backward``, ``is_user_annotation``,
        ``cpu_parent`` and ``cpu_children`` (as in torch, so that
        ``table(top_level_events_only=True)`` works on averages too).
        """
        if self.key is None:
            self.key = other.key
            self.is_backward = other.is_backward
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.flops += other.flops
        return self

    @property
    def cpu_time(self) -> float:
        """Average total time per call."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (or averages) with summaries: ``table``, ``key_averages``, ..."""

    def __init__(self, events: Iterable = (), *, with_flops: bool = False,
                 profile_memory: bool = False):
        super().__init__(events)
        self._with_flops = with_flops
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        """Total self CPU time of all events, in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / top stack frames if asked).

        As in torch, a ``record_function`` range and an op of the same name are kept
        apart. ``group_by_overload_name`` changes nothing: dualgrad's ops have no overloads.
        """
        groups: dict = {}
        for event in self:
            key = (event.key, event.is_user_annotation)
            if group_by_input_shapes:
                key += (str(event.input_shapes),)
            if group_by_stack_n:
                key += tuple(event.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
                if group_by_input_shapes:
                    avg.input_shapes = event.input_shapes
                if group_by_stack_n:
                    avg.stack = event.stack[:group_by_stack_n]
            avg.add(event)
        return EventList(groups.values(), with_flops=self._with_flops,
                         profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one average with key ``"Total"``."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: str | None = None, top_level_events_only: bool = False,
              time_unit: str | None = None) -> str:
        """The events as a text table, sorted by ``sort_by`` (descending), first ``row_limit`` rows.

        ``sort_by`` is one of ``cpu_time``, ``cpu_time_total``, ``self_cpu_time_total``,
        ``cpu_memory_usage``, ``self_cpu_memory_usage``, ``count``, ``flops`` or a
        device key (``device_time_total``, ``cuda_time_total``, ...: all 0, so the
        order is kept). Names, input shapes and source locations are cut to their
        ``max_*_column_width``; ``time_unit`` (``"s"``, ``"ms"``, ``"us"``) fixes the
        unit of every time.
        """
        if time_unit not in (None, *TIME_UNITS):
            raise ValueError(f"table(time_unit={time_unit!r}): expected one of {', '.join(TIME_UNITS)}")
        widths = {"name": max_name_column_width, "shapes": max_shapes_column_width,
                  "src": max_src_column_width}
        return build_table(self, sort_by, row_limit, widths, header, top_level_events_only,
                           self._with_flops, self._profile_memory, time_unit)

    def __str__(self) -> str:
        return self.table()

    @staticmethod
    def supported_export_stacks_metrics() -> list:
        """The metrics ``export_stacks`` accepts."""
        return list(STACK_METRICS)

    def export_stacks(self, path: str, metric: str) -> None:
        """Write one ``outer;...;inner value`` line per event with a stack (flame graph input).

        Needs events recorded ``with_stack=True``; events whose ``metric`` is 0
        (every device metric, on CPU) are left out.
        """
        if metric not in STACK_METRICS:
            raise ValueError(f"metric should be one of: {STACK_METRICS}")
        spaces = str.maketrans(" ;\t\n", "____")
        with open(path, "w", encoding="utf-8") as f:
            for event in self:
                value = int(getattr(event, _device_name(metric)))
                if event.stack and value > 0:
                    frames = ";".join(frame.translate(spaces) for frame in reversed(event.stack))
                    f.write(f"{frames} {value}\n")

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Trace Event JSON (chrome://tracing, Perfetto)."""
        write_chrome_trace(self, path)


def write_chrome_trace(events: EventList, path: str, metadata: dict | None = None) -> None:
    """Write ``events`` as Trace Event JSON, with ``metadata`` as extra top-level keys.

    As in torch, ``record_function`` ranges have the category ``user_annotation`` and
    ops and backward nodes ``cpu_op``.
    """
    pid = os.getpid()
    trace = []
    for e in events:
        if not isinstance(e, FunctionEvent):
            raise TypeError("export_chrome_trace needs the recorded events, not key averages")
        args: dict[str, Any] = {}
        if e.input_shapes is not None:
            args["Input Dims"] = e.input_shapes
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.flops:
            args["FLOPs"] = e.flops
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        trace.append({"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total,
                      "pid": pid, "tid": e.thread,
                      "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "args": args})
    text = json.dumps({**(metadata or {}), "traceEvents": trace, "displayTimeUnit": "ms"}, indent=1)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as error:
        raise OSError(error.errno, f"export_chrome_trace could not write the trace to {path!r}: "
                                   f"{error.strerror}") from error


def build_table(events: list, sort_by: str | None, row_limit: int, max_widths: dict,
                header: str | None, top_level_only: bool, with_flops: bool, profile_memory: bool,
                time_unit: str | None = None) -> str:
    """Format events as torch's profiler table ("" for no events).

    As in torch, column widths come from all ``events`` (not only the rows shown), every
    cell is followed by two spaces, and each row with a stack is followed by its other
    frames, one per line, and an empty line.
    """
    if sort_by is not None and _device_name(sort_by) not in SORT_KEYS:
        raise ValueError(f"table(sort_by={sort_by!r}): unknown key; valid keys are "
                         f"{', '.join(SORT_KEYS)} (cuda_/xpu_ spellings of the device keys too)")
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, _device_name(sort_by)), reverse=True)
    rows = [e for e in events if not (top_level_only and getattr(e, "cpu_parent", None) is not None)]
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    fmt = functools.partial(_format_time, unit=time_unit)
    columns = _columns(events, max_widths, with_flops, profile_memory, fmt)
    line = "".join("-" * abs(width) + "  " for _, width, _ in columns)
    lines = []
    if header is not None:
        lines += ["=" * (len(line) - 2), header]
    if top_level_only:
        lines += ["=" * (len(line) - 2), "This report only display top-level ops statistics"]
    lines += [line, _row([title for title, _, _ in columns], columns), line]
    has_stack = any(title == "Source Location" for title, _, _ in columns)
    for e in rows:
        lines.append(_row([render(e) for _, _, render in columns], columns))
        if has_stack:
            lines += [_row([_trim_path(frame, -width) if title == "Source Location" else ""
                            for title, width, _ in columns], columns) for frame in e.stack[1:]]
            lines.append(_row([""] * len(columns), columns))
    lines += [line, f"Self CPU time total: {fmt(sum(e.self_cpu_time_total for e in events))}", ""]
    return "\n".join(lines)


_FLOPS_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _columns(events: list, max_widths: dict, with_flops: bool, profile_memory: bool,
             fmt: Any) -> list:
    """``(title, width, render)`` for each column torch's table has for ``events``."""
    total_self = sum(e.self_cpu_time_total for e in events)
    name_width = min(max(len(e.key) for e in events) + 4, max_widths["name"])
    cut = max_widths["name"] - 3

    def share(us: float) -> str:
        return f"{100 * us / total_self:.2f}%" if total_self else "NaN"

    columns = [("Name", name_width, lambda e: e.key if len(e.key) < cut else e.key[:cut] + "..."),
               ("Self CPU %", 12, lambda e: share(e.self_cpu_time_total)),
               ("Self CPU", 12, lambda e: fmt(e.self_cpu_time_total)),
               ("CPU total %", 12, lambda e: share(e.cpu_time_total)),
               ("CPU total", 12, lambda e: fmt(e.cpu_time_total)),
               ("CPU time avg", 12, lambda e: fmt(e.cpu_time))]
    if profile_memory:
        columns += [("CPU Mem", 12, lambda e: _format_memory(e.cpu_memory_usage)),
                    ("Self CPU Mem", 12, lambda e: _format_memory(e.self_cpu_memory_usage))]
    columns.append(("# of Calls", 12, lambda e: str(e.count)))
    if any(e.input_shapes for e in events):
        width = min(max(len(str(e.input_shapes or [])) for e in events) + 4, max_widths["shapes"])
        columns.append(("Input Shapes", width, lambda e: str(e.input_shapes or [])[:width]))
    stacks = [e.stack for e in events if e.stack]
    if stacks:
        src_width = min(max(len(frame) for stack in stacks for frame in stack) + 4, max_widths["src"])
        columns.append(("Source Location", -src_width,
                        lambda e: _trim_path(e.stack[0], src_width) if e.stack else ""))
    flops = [e.flops for e in events if e.flops > 0]
    if with_flops and flops:
        scale = min(max(int(math.log10(min(flops)) // 3), 0), len(_FLOPS_UNITS) - 1)
        columns.append((f"Total {_FLOPS_UNITS[scale]}", 12,
                        lambda e: f"{e.flops / 1000 ** scale:8.3f}" if e.flops > 0 else "--"))
    return columns


def _row(cells: list, columns: list) -> str:
    """One line of the table: right-aligned cells (left-aligned for a negative width)."""
    return "".join(f"{cell:<{-width}}  " if width < 0 else f"{cell:>{width}}  "
                   for cell, (_, width, _) in zip(cells, columns, strict=True))


def _trim_path(path: str, width: int) -> str:
    """The last ``width`` characters of ``path``, starting with ``...`` when cut (torch's)."""
    if len(path) <= width:
        return path
    return "..." + path[len(path) - width + 3:]


def _format_time(us: float, unit: str | None = None) -> str:
    """``1.500ms``: in ``unit`` (``"s"``, ``"ms"``, ``"us"``), else the largest that fits."""
    if unit is None:
        unit = "s" if us >= 1e6 else "ms" if us >= 1e3 else "us"
    return f"{us / {'s': 1e6, 'ms': 1e3, 'us': 1.0}[unit]:.3f}{unit}"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"
