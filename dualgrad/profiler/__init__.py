"""The ``torch.profiler`` namespace: ``profile`` (with ``activities``, ``schedule``, ``on_trace_ready``),
``schedule``, ``ProfilerActivity``, ``ProfilerAction``, ``tensorboard_trace_handler``, ``record_function``.

The autograd profiler it runs is ``dualgrad.autograd.profiler.profile`` (``autograd_profiler.py``).

>>> import dualgrad as dg
>>> with dg.profiler.profile(activities=[dg.profiler.ProfilerActivity.CPU]) as prof:
...     y = dg.ones(3) * 2
>>> [e.key for e in prof.key_averages()]
['mul']
"""

from .emitters import emit_itt, emit_nvtx
from .events import EventList, FunctionEvent, FunctionEventAvg
from .nvprof import load_nvprof
from .profile import record_function
from .schedule import ProfilerAction, ProfilerActivity, schedule, supported_activities, tensorboard_trace_handler
from .scheduled import profile

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity",
           "emit_itt", "emit_nvtx", "load_nvprof", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
