"""The ``torch.autograd.profiler`` namespace (``dualgrad.autograd.profiler``): the autograd profiler
``profile`` with its ``enabled``/``use_cuda``/``use_device`` arguments, ``record_function``, the range
emitters and ``load_nvprof``. ``dualgrad.profiler`` is the ``torch.profiler`` namespace, whose ``profile``
(with ``activities``, ``schedule`` and ``on_trace_ready``) runs this one.

>>> import dualgrad as dg
>>> with dg.autograd.profiler.profile() as prof:
...     y = dg.ones(3) * 2
>>> [e.key for e in prof.key_averages()]
['mul']
"""

from .emitters import emit_itt, emit_nvtx
from .events import EventList, FunctionEvent, FunctionEventAvg
from .nvprof import load_nvprof
from .profile import profile, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_itt", "emit_nvtx", "load_nvprof",
           "profile", "record_function"]
