"""A daily usage shape from machine utilisation samples (Alibaba 2018 ``machine_usage``).

The 2018 trace measures machines, not containers: what a colocated machine's online services
and batch work used together. Its shape over the day is what online services follow (batch
fills in around it), so berth takes the shape and leaves the level to each workload: samples
are averaged per hour of the day (over machines and days), and each hour's mean is divided by
the mean over the day. ``DiurnalShape.curve(cpu, memory)`` then gives a usage profile with that
shape around a workload's own mean fractions, repeating every day.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from berth.api.usage import MAX_FRACTION, UsageProfile
from berth.traces.formats.alibaba2018 import UsageSample

DAY = 86400.0
HOURS = 24


class ShapeError(ValueError):
    """Samples that cannot make a daily shape."""


@dataclass(slots=True, frozen=True)
class DiurnalShape:
    """Per hour of the day, cpu and memory utilisation ÷ their daily mean (mean 1)."""

    cpu: tuple[float, ...]
    memory: tuple[float, ...]
    samples: int

    def curve(self, cpu: float, memory: float) -> UsageProfile:
        """A daily profile with this shape whose hourly points average ``cpu`` and ``memory``."""
        times = tuple(float(h * 3600) for h in range(HOURS))
        return UsageProfile(
            times,
            tuple(round(min(cpu * f, MAX_FRACTION), 4) for f in self.cpu),
            tuple(round(min(memory * f, MAX_FRACTION), 4) for f in self.memory),
            DAY,
        )


def diurnal_shape(samples: Iterable[UsageSample]) -> DiurnalShape:
    """The hourly shape of ``samples``; every hour of the day must have some."""
    rows = [(s.time, s.cpu_util, s.mem_util) for s in samples]
    if not rows:
        raise ShapeError("no usage samples")
    data = np.array(rows, dtype=np.float64)
    hours = ((data[:, 0] % DAY) // 3600).astype(np.int64)
    counts = np.bincount(hours, minlength=HOURS)
    if (counts == 0).any():
        missing = int(np.flatnonzero(counts == 0)[0])
        raise ShapeError(f"no usage samples in hour {missing} of the day")
    shapes = []
    for col in (1, 2):
        hourly = np.bincount(hours, weights=data[:, col], minlength=HOURS) / counts
        mean = hourly.mean()
        if mean <= 0:
            raise ShapeError("usage samples are all zero")
        shapes.append(tuple(round(float(v), 4) for v in hourly / mean))
    return DiurnalShape(shapes[0], shapes[1], len(rows))
