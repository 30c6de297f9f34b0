"""``profile``: torch.profiler's profiler, over the autograd profiler (``dualgrad.autograd.profiler``).

It runs one autograd profiler per recorded span of steps: ``schedule(step)`` says, at each ``prof.step()``,
whether the next step is idle, warm-up or recorded, and the last recorded step of a cycle hands the trace
to ``on_trace_ready``. Without a schedule it records everything inside its ``with`` block.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .events import EventList
from .profile import profile as _autograd_profile
from .profile import record_function
from .schedule import ProfilerAction, ProfilerActivity, supported_activities

__all__ = ["profile"]


def _record_always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_N, _W, _R, _S = ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE


class profile:  # noqa: N801 - torch's name
    """torch.profiler.profile: records the CPU time of ops and backward nodes, by schedule.

    ``activities`` defaults to ``supported_activities()`` (``{ProfilerActivity.CPU}``); without ``CPU``
    there is nothing to record (torch's AssertionError on entering). ``record_shapes``, ``profile_memory``,
    ``with_stack`` and ``with_flops`` are the autograd profiler's. ``with_modules``, ``experimental_config``,
    ``execution_trace_observer``, ``acc_events``, ``custom_trace_id_callback`` and
    ``post_processing_timeout_s`` are accepted and change nothing.

    >>> import dualgrad as dg
    >>> from dualgrad.profiler import ProfilerActivity, profile, schedule
    >>> traces = []
    >>> x = dg.ones(3, requires_grad=True)
    >>> with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
    ...              on_trace_ready=lambda p: traces.append(p.key_averages())) as prof:
    ...     for _ in range(8):
    ...         (x * 2).sum().backward()
    ...         prof.step()
    >>> len(traces), [e.count for e in traces[0] if e.key == "MulBackward0"]
    (2, [2])
    >>> [(e.key, e.count) for e in traces[0] if e.key.startswith("ProfilerStep")]
    [('ProfilerStep*', 2)]
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[Any], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None):
        chosen = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
            if use_cuda:
                chosen.add(ProfilerActivity.CUDA)
            else:
                chosen.discard(ProfilerActivity.CUDA)
        if not chosen:
            raise AssertionError("No valid profiler activities found")
        self.activities = chosen
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.schedule = schedule or _record_always
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.profiler: _autograd_profile | None = None
        self.step_rec_fn: record_function | None = None
        self._metadata: dict[str, str] = {}
        self._action_map: dict[tuple[ProfilerAction, ProfilerAction | None], list[Callable[[], None]]] = {
            (_N, _W): [self.prepare_trace], (_N, _R): [self.prepare_trace, self.start_trace],
            (_N, _S): [self.prepare_trace, self.start_trace],
            (_W, _N): [lambda: warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=4),
                       self.start_trace, self.stop_trace],
            (_W, _R): [self.start_trace], (_W, _S): [self.start_trace],
            (_R, _N): [lambda: warnings.warn("Incorrect schedule: RECORD followed by NONE", stacklevel=4),
                       self.stop_trace],
            (_R, _W): [lambda: warnings.warn("Incorrect schedule: RECORD followed by WARMUP", stacklevel=4),
                       self.stop_trace],
            (_S, _N): [self.stop_trace, self._trace_ready],
            (_S, _W): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (_S, _R): [self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (_S, _S): [self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (_W, None): [self.start_trace, self.stop_trace], (_R, None): [self.stop_trace, self._trace_ready],
            (_S, None): [self.stop_trace, self._trace_ready],
        }

    # -- the trace ---------------------------------------------------------------------------------
    def prepare_trace(self) -> None:
        """Make a fresh autograd profiler for the next trace (it records from ``start_trace``)."""
        if ProfilerActivity.CPU not in self.activities:
            raise AssertionError("No activities specified for the profiler (dualgrad records CPU activity only)")
        self.profiler = _autograd_profile(record_shapes=self.record_shapes, with_flops=self.with_flops,
                                          profile_memory=self.profile_memory, with_stack=self.with_stack)

    def start_trace(self) -> None:
        self._trace().__enter__()

    def stop_trace(self) -> None:
        if self.profiler is not None and self.profiler._running:
            self.profiler.__exit__(None, None, None)
            for event in self.profiler.function_events:
                if event.is_user_annotation and event.name.startswith("ProfilerStep#"):
                    event.name = event.key = "ProfilerStep*"  # as torch's, so that averages group the steps

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, previous: ProfilerAction, current: ProfilerAction | None) -> None:
        for action in self._action_map.get((previous, current), []):
            action()

    # -- control -----------------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Begin, as entering the ``with`` block does."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._enter_step_range()

    def stop(self) -> None:
        """End, as leaving the ``with`` block does (a recorded trace goes to ``on_trace_ready``)."""
        self._exit_step_range()
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides what the next step does."""
        self._exit_step_range()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(previous, self.current_action)
        if self.record_steps:
            self._enter_step_range()

    def _enter_step_range(self) -> None:
        self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
        self.step_rec_fn.__enter__()

    def _exit_step_range(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    # -- results (of the last trace) ---------------------------------------------------------------
    def _trace(self) -> _autograd_profile:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        return self.profiler

    def events(self) -> EventList:
        """The events of the last trace, in start order."""
        return self._trace().function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The last trace's events averaged per name (``.table(sort_by=..., row_limit=...)`` prints them)."""
        return self._trace().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the last trace as Trace Event JSON (chrome://tracing, Perfetto), with ``add_metadata``'s."""
        self._trace().export_chrome_trace(path, metadata=self._metadata or None)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the last trace's stacks for a flame graph (needs ``with_stack=True``)."""
        self._trace().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """A string entry for the exported trace's top level."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """A JSON entry (given as text) for the exported trace's top level."""
        import json

        self._metadata[key] = json.loads(value)
