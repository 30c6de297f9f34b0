"""torch.profiler's schedule vocabulary: ``ProfilerActivity``, ``ProfilerAction``, ``schedule`` and the
``tensorboard_trace_handler`` that ``on_trace_ready`` takes."""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import time
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any

__all__ = ["ProfilerAction", "ProfilerActivity", "schedule", "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    """What a profiler records; dualgrad records ``CPU`` activity only."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What a scheduled profiler does during a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """``{ProfilerActivity.CPU}``: the activities dualgrad records."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch's profiler schedule: after ``skip_first`` steps, cycles of ``wait`` idle steps, ``warmup`` steps
    and ``active`` recorded steps (the last one ``RECORD_AND_SAVE``, which hands the trace to
    ``on_trace_ready``), ``repeat`` times (0: forever); ``skip_first_wait`` skips the first cycle's wait.

    >>> from dualgrad.profiler import schedule
    >>> steps = schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [steps(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` handler writing each trace to
    ``dir_name/<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` with ``use_gzip``), as torch's; the
    worker name defaults to ``<hostname>_<pid>``."""

    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as error:
                raise RuntimeError("Can't create directory: " + dir_name) from error
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker_name}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as source, gzip.open(path + ".gz", "wb") as target:
                shutil.copyfileobj(source, target)
            os.remove(path)

    return handler_fn
