"""``torch.utils.benchmark``: ``Timer``, the ``Measurement`` it returns and ``Compare``, printed as torch's."""

from .common import Measurement, TaskSpec, select_unit
from .compare import Colorize, Compare
from .timer import Timer

__all__ = ["Colorize", "Compare", "Measurement", "TaskSpec", "Timer", "select_unit"]
