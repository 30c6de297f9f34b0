"""``TaskSpec`` (what was timed) and ``Measurement`` (the times), with torch's statistics and printout."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from typing import Any

import numpy as np

__all__ = ["Measurement", "TaskSpec", "select_unit"]

IQR_WARN_THRESHOLD = 0.1
IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """The statement timed, its setup and the labels a ``Measurement`` prints."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (and sub-label), else the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        return f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of ``raw_times`` blocks of ``number_per_run`` runs each, with their median, mean and
    interquartile range per run (quantiles interpolated linearly, as torch's), printed as torch prints it.

    >>> from dualgrad.utils.benchmark import Measurement, TaskSpec
    >>> m = Measurement(100, [2e-4, 3e-4, 2.5e-4, 2.2e-4], TaskSpec("f(x)", "pass"))
    >>> print(repr(m).split("\\n", 1)[1])
    f(x)
      Median: 2.35 us
      IQR:    0.48 us (2.15 to 2.63)
      4 measurements, 100 runs per measurement, 1 thread
      WARNING: Interquartile range is 20.2% of the median measurement.
               This could indicate system fluctuation.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in {f.name for f in dataclasses.fields(TaskSpec)}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        """The time of one run in each block, in seconds."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        """True if the interquartile range is below ``threshold`` times the median."""
        return self.iqr / self.median < threshold

    @property
    def _warnings(self) -> list[str]:
        if self.meets_confidence(IQR_WARN_THRESHOLD):
            return []
        why = ("This suggests significant environmental influence."
               if not self.meets_confidence(IQR_GROSS_WARN_THRESHOLD) else "This could indicate system fluctuation.")
        return [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the median "
                f"measurement.\n           {why}"]

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings)

    def __repr__(self) -> str:
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._quantile(0.25) / scale:.2f} to "
                         f"{self._quantile(0.75) / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads}")
        lines.extend(self._warnings)
        return "\n".join(lines)

    @staticmethod
    def merge(measurements: list[Measurement]) -> list[Measurement]:
        """One measurement per task: the per-run times of all measurements of that task."""
        grouped: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in grouped.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit (``ns``, ``us``, ``ms``, ``s``) that shows ``t`` seconds with 1 to 3 digits before the point."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s") if t > 0 else "s"
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]
