"""The autograd profiler: ``profile``, ``record_function``, range emitters, ``load_nvprof``.

>>> import dualgrad as dg
>>> with dg.profiler.profile() as prof:
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
