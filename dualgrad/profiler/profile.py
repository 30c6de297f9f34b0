"""The CPU profiler (``profile``) and user ranges (``record_function``).

``profile`` is an observer (see ``docs/architecture.md``, "Observers"): while it is
active in a thread, every op call (named as in the op table: ``mul``, ``pow``)
and every backward node (``PowBackward0``, ``torch::autograd::AccumulateGrad``,
``torch::autograd::GraphRoot``) of that thread becomes a ``FunctionEvent``. Profilers nest: each active one records.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from ..base.state import STATE, install_observer, remove_observer
from ..tensor import Tensor
from .events import EventList, FunctionEvent, FunctionEventAvg, write_chrome_trace
from .flops import estimate_flops

__all__ = ["profile", "record_function"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ids = itertools.count()


def _shapes(values: Any) -> list:
    """``[[2, 3], []]``: the shape of each Tensor argument, ``[]`` for anything else."""
    return [list(v.shape) if isinstance(v, Tensor) else [] for v in values]


def _nbytes(values: Any) -> int:
    if isinstance(values, Tensor):
        return values.nbytes
    if isinstance(values, (tuple, list)):
        return sum(v.nbytes for v in values if isinstance(v, Tensor))
    return 0


def _user_stack() -> list:
    """``"file.py(12): fn"`` for each frame outside dualgrad, innermost first."""
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)]


class profile:  # noqa: N801 - torch's name
    """Context manager recording the CPU time of every op and backward node in this thread.

    ``record_shapes`` keeps input shapes (for ``key_averages(group_by_input_shape=True)``),
    ``with_flops`` estimates FLOPs of matrix products, ``profile_memory`` records
    the bytes each call's outputs take, ``with_stack`` the source location of each
    call (``with_flops`` implies ``record_shapes``, as in torch). dualgrad runs on
    CPU only, so it answers the device arguments as a CPU-only torch does:
    ``use_cuda=True`` warns that the argument is deprecated and, like
    ``use_device="cuda"``, that CUDA profiling is disabled; ``use_cpu=False``
    leaves nothing to record and raises ValueError. ``with_modules``,
    ``use_kineto``, ``experimental_config``, ``acc_events``,
    ``custom_trace_id_callback``, ``post_processing_timeout_s`` and
    ``activity_filters`` are accepted and change nothing.

    Unlike torch, a finished profiler can be entered again: it then records
    afresh. Entering it while it runs raises RuntimeError, as in torch.

    >>> import dualgrad as dg
    >>> x = dg.randn(1, 1, requires_grad=True)
    >>> with dg.profiler.profile() as prof:
    ...     for _ in range(3):
    ...         y = x ** 2
    ...         y.backward()
    >>> sorted({e.key for e in prof.key_averages()})
    ['PowBackward0', 'mul', 'pow', 'torch::autograd::AccumulateGrad', 'torch::autograd::GraphRoot']
    >>> [e.count for e in prof.key_averages() if e.key == "PowBackward0"]
    [3]
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Any = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None, post_processing_timeout_s: float | None = None,
                 activity_filters: Any = None):
        self.enabled = enabled
        if enabled:
            _check_devices(use_cuda, use_device, use_cpu, use_kineto)
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.function_events: EventList | None = None
        self._events: list = []
        self._open: list = []  # events not yet closed, innermost last
        self._t0 = 0
        self._running = False

    # -- context manager ---------------------------------------------------------
    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self._running:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._events, self._open, self.function_events = [], [], None
        self._t0 = time.perf_counter_ns()
        self._running = True
        install_observer(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.enabled:
            return
        remove_observer(self)
        self._running = False
        self.function_events = EventList(sorted(self._events, key=lambda e: e.start_us),
                                         with_flops=self.with_flops, profile_memory=self.profile_memory)

    # -- recording ---------------------------------------------------------------
    def _now(self) -> float:
        return (time.perf_counter_ns() - self._t0) / 1000.0

    def _begin(self, name: str, inputs: Any, is_backward: bool = False, seq: int = -1) -> FunctionEvent:
        event = FunctionEvent(next(_ids), name, threading.get_ident(), self._now(),
                              input_shapes=_shapes(inputs) if self.record_shapes else None,
                              stack=_user_stack() if self.with_stack else None,
                              sequence_nr=seq, is_backward=is_backward)
        if self._open:
            event.cpu_parent = self._open[-1]
            self._open[-1].cpu_children.append(event)
        self._open.append(event)
        self._events.append(event)
        return event

    def _end(self, event: FunctionEvent, outputs: Any) -> None:
        event.end_us = self._now()
        if self._open and self._open[-1] is event:
            self._open.pop()
        if self.profile_memory:
            event.cpu_memory_usage = _nbytes(outputs) + sum(c.cpu_memory_usage for c in event.cpu_children)

    def wrap_op(self, run: Callable) -> Callable:
        """Observer hook: time one op call."""

        def observed(op: Any, args: tuple, params: dict) -> Any:
            event = self._begin(op.name, args)
            out = None
            try:
                out = run(op, args, params)
            finally:
                self._end(event, out)
            first = out[0] if isinstance(out, tuple) and out else out
            if isinstance(first, Tensor) and first._node() is not None:
                event.sequence_nr = getattr(first._node(), "seq", -1)
            if self.with_flops:
                event.flops = estimate_flops(op.name, _shapes(args), params)
            return out

        return observed

    def wrap_node(self, node: Any, run: Callable) -> Callable:
        """Observer hook: time one backward node (``PowBackward0``, ``AccumulateGrad``, ...)."""

        def observed(node: Any, grads: Any) -> Any:
            values = grads if isinstance(grads, (list, tuple)) else (grads,)
            event = self._begin(node.name(), values, True, getattr(node, "seq", -1))
            result = None
            try:
                result = run(node, grads)
            finally:
                self._end(event, result)
            return result

        return observed

    def push_range(self, name: str) -> FunctionEvent:
        """Open a user range (``record_function``)."""
        event = self._begin(name, ())
        event.is_user_annotation = True
        return event

    def pop_range(self, event: FunctionEvent) -> None:
        """Close a user range opened by ``push_range``."""
        self._end(event, None)

    # -- results -----------------------------------------------------------------
    def _finished(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def events(self) -> EventList:
        """All recorded events, in start order."""
        return self._finished()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events averaged per name (and per input shapes / top stack frames when asked)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n,
                                             group_by_overload_name)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: str | None = None, top_level_events_only: bool = False) -> str:
        """The recorded events as a text table, one row per call, as torch's (see ``EventList.table``).

        ``prof.key_averages().table(...)`` gives one row per name instead.
        """
        return self._finished().table(sort_by, row_limit, max_src_column_width, max_name_column_width,
                                      max_shapes_column_width, header, top_level_events_only)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one average."""
        return self._finished().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Total self CPU time of all events, in microseconds."""
        return self._finished().self_cpu_time_total

    def export_chrome_trace(self, path: str, metadata: dict | None = None,
                            use_python_export: bool = False) -> None:
        """Write the events as Trace Event JSON (open in chrome://tracing or Perfetto).

        ``metadata`` entries become top-level keys of the JSON object;
        ``use_python_export`` changes nothing (there is only one exporter).
        """
        write_chrome_trace(self._finished(), path, metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the stacks of the events for a flame graph (see ``EventList.export_stacks``).

        >>> import dualgrad as dg, os, tempfile
        >>> with dg.profiler.profile(with_stack=True) as prof:
        ...     y = dg.ones(500, 500) * 2
        >>> path = os.path.join(tempfile.mkdtemp(), "stacks.txt")
        >>> prof.export_stacks(path)
        >>> [line.split()[-1].isdigit() for line in open(path)]  # "frames microseconds"
        [True]
        """
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        self._finished().export_stacks(path, metric)

    def __str__(self) -> str:
        if self.function_events is None:
            return "<unfinished dualgrad.profiler.profile>"
        return self.table()


_DEVICES = ("cuda", "xpu", "mtia", "hpu")


def _check_devices(use_cuda: bool, use_device: Any, use_cpu: bool, use_kineto: bool) -> None:
    """torch's checks of the device arguments, on a machine without devices."""
    if use_cuda:
        warnings.warn("The attribute `use_cuda` will be deprecated soon, "
                      "please use ``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=3)
        use_device = "cuda"
    if use_device in _DEVICES:
        warnings.warn(f"{use_device.upper()} is not available, disabling {use_device.upper()} profiling "
                      f"(dualgrad runs on CPU only)", stacklevel=3)
    elif use_device is not None:
        warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=3)
    if not use_cpu:
        raise ValueError("profile(use_cpu=False): no activities specified for the profiler "
                         "(dualgrad records CPU events only)" if use_kineto else
                         "profile(use_cpu=False): Device-only events supported only with Kineto "
                         "(use_kineto=True)")


class record_function:  # noqa: N801 - torch's name
    """A named user range, shown as its own row by active profilers and range emitters.

    Use it as a context manager or as a decorator. ``args``, as in torch, is kept
    (``self.args``) but not part of the range's name.

    >>> import dualgrad as dg
    >>> with dg.profiler.profile() as prof:
    ...     with dg.profiler.record_function("outer"):
    ...         with dg.profiler.record_function("inner"):
    ...             y = dg.ones(2) * 2
    >>> [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
    [('outer', None), ('inner', 'outer'), ('mul', 'inner')]
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._ranges: list = []

    def __enter__(self) -> record_function:
        for value, what in ((self.name, "name"), (self.args, "args")):
            if not isinstance(value, str) and not (what == "args" and value is None):
                raise RuntimeError(f"record_function: expected a value of type 'str' for argument '{what}' but "
                                   f"instead found type '{type(value).__name__}'.")
        opened = [(obs, obs.push_range(self.name)) for obs in STATE.observers
                  if hasattr(obs, "push_range")]
        self._ranges.append(opened)
        return self

    def __exit__(self, *exc: Any) -> None:
        for obs, token in reversed(self._ranges.pop()):
            obs.pop_range(token)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapped
