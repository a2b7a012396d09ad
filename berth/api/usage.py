"""What a pod actually uses over time, as a fraction of what it requested.

A pod's usage is one of: a constant fraction (``berth.io/utilization``, 1.0 by default), or a
curve (``berth.io/usage-curve``: ``time=cpu[/memory]`` points, comma-separated, interpolated
linearly in between; memory follows cpu when left out), optionally repeated every
``berth.io/usage-period`` seconds (a diurnal shape repeats every 86400). Curve times are the
simulation clock, not the pod's age: online services follow the time of day together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from berth.api.numbers import to_float

USAGE_CURVE_ANNOTATION = "berth.io/usage-curve"
USAGE_PERIOD_ANNOTATION = "berth.io/usage-period"

#: A pod may use more than it requests (up to its limit); this bounds a curve's values.
MAX_FRACTION = 10.0


class UsageCurveError(ValueError):
    """A usage curve that cannot be read."""


@dataclass(slots=True, frozen=True)
class UsageProfile:
    """Used ÷ requested for cpu and memory at points of the simulation clock."""

    times: tuple[float, ...]
    cpu: tuple[float, ...]
    memory: tuple[float, ...]
    period: float | None = None

    @classmethod
    def constant(cls, cpu: float, memory: float | None = None) -> UsageProfile:
        return cls((0.0,), (cpu,), (cpu if memory is None else memory,))

    def at(self, t: float) -> tuple[float, float]:
        """(cpu, memory) fractions at time ``t`` (before the first point: the first value,
        after the last: the last, unless the curve repeats)."""
        if len(self.times) == 1:
            return self.cpu[0], self.memory[0]
        if self.period is not None:
            return (
                float(np.interp(t, self.times, self.cpu, period=self.period)),
                float(np.interp(t, self.times, self.memory, period=self.period)),
            )
        return float(np.interp(t, self.times, self.cpu)), float(
            np.interp(t, self.times, self.memory)
        )

    def mean(self) -> tuple[float, float]:
        """Time-averaged (cpu, memory) over the curve's span (a constant's value)."""
        if len(self.times) == 1:
            return self.cpu[0], self.memory[0]
        span = self.period or (self.times[-1] - self.times[0])
        grid = np.linspace(self.times[0], self.times[0] + span, 1441)
        samples = [self.at(float(t)) for t in grid[:-1]]
        return float(np.mean([s[0] for s in samples])), float(np.mean([s[1] for s in samples]))

    def render(self) -> str:
        """The annotation text that reads back as this curve."""
        parts = []
        for t, c, m in zip(self.times, self.cpu, self.memory, strict=True):
            parts.append(f"{t:g}={c:g}" if c == m else f"{t:g}={c:g}/{m:g}")
        return ",".join(parts)


def parse_usage_curve(text: str, period: float | None = None) -> UsageProfile:
    """``"0=0.3,43200=0.7/0.5"`` → a profile; raises UsageCurveError saying what is wrong."""
    times: list[float] = []
    cpu: list[float] = []
    memory: list[float] = []
    for index, part in enumerate(p.strip() for p in text.split(",")):
        at, sep, values = part.partition("=")
        if not sep:
            raise UsageCurveError(f"point {index + 1} {part!r}: expected time=cpu[/memory]")
        try:
            t = to_float(at)
            fractions = [to_float(v) for v in values.split("/")]
        except ValueError:
            raise UsageCurveError(f"point {index + 1} {part!r}: expected numbers") from None
        if len(fractions) > 2:
            raise UsageCurveError(f"point {index + 1} {part!r}: expected time=cpu[/memory]")
        if not math.isfinite(t) or not all(0 <= v <= MAX_FRACTION for v in fractions):
            raise UsageCurveError(
                f"point {index + 1} {part!r}: fractions must be from 0 to {MAX_FRACTION:g}"
            )
        if t < 0 or (times and t <= times[-1]):
            raise UsageCurveError(f"point {index + 1} {part!r}: times must be >= 0 and increase")
        if period is not None and t >= period:
            raise UsageCurveError(
                f"point {index + 1} {part!r}: time must be below the period ({period:g}s)"
            )
        times.append(t)
        cpu.append(fractions[0])
        memory.append(fractions[-1])
    return UsageProfile(tuple(times), tuple(cpu), tuple(memory), period)
