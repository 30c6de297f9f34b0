"""``torch.backends``'s flags that device boilerplate touches: ``mps`` and ``cudnn`` report unavailable, and
``cudnn.benchmark`` / ``cudnn.deterministic`` may be set (they change nothing).

>>> import dualgrad as dg
>>> dg.backends.mps.is_available(), dg.backends.cudnn.is_available()
(False, False)
"""

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
