"""``torch.utils.benchmark``: ``Timer`` and the ``Measurement`` it returns, printed as torch prints them."""

from .common import Measurement, TaskSpec, select_unit
from .timer import Timer

__all__ = ["Measurement", "TaskSpec", "Timer", "select_unit"]
