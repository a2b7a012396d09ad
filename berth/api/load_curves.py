"""Load curves of inference services: requests per second over a repeating period, and the
HPA-like rule that turns them into a replica count.

A Deployment becomes an inference service by naming a curve in ``berth.io/load-curve``: a
built-in shape or a CSV file of ``time,requests_per_second`` rows. Its replica count then
follows ``ceil(rate × berth.io/load-scale / berth.io/requests-per-replica)``, clamped to
``berth.io/min-replicas``..``berth.io/max-replicas``, as a HorizontalPodAutoscaler on a
requests-per-second metric would set it. The simulator applies the rule (``berth.sim.autoscale``);
``berth.api.load_annotations`` reads and checks the annotations, so a bad curve is refused with
the manifest.

The built-in ``azure-llm-conv`` and ``azure-llm-code`` shapes are derived from the Azure LLM
inference trace (2023, CC-BY-4.0), which covers one hour per service: the hour's request
arrivals are counted in 24 equal bins over the span from the first to the last request, and
bin i's mean rate becomes hour i of the day (``berth.traces.daily_shape`` recomputes them from
the trace files). The public trace holds no day, so the shape is the hour's own rise and fall
stretched over one; the rates are the trace's, in requests per second.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LOAD_CURVE_ANNOTATION = "berth.io/load-curve"
REQUESTS_PER_REPLICA_ANNOTATION = "berth.io/requests-per-replica"
LOAD_SCALE_ANNOTATION = "berth.io/load-scale"
LOAD_PERIOD_ANNOTATION = "berth.io/load-period"
MIN_REPLICAS_ANNOTATION = "berth.io/min-replicas"
MAX_REPLICAS_ANNOTATION = "berth.io/max-replicas"
SCALE_INTERVAL_ANNOTATION = "berth.io/scale-interval"
SCALE_DOWN_WINDOW_ANNOTATION = "berth.io/scale-down-stabilization"

DAY = 86400.0
HOUR = 3600.0
#: HPA's defaults: the controller's sync period and the scale-down stabilisation window.
DEFAULT_SCALE_INTERVAL = 15.0
DEFAULT_SCALE_DOWN_WINDOW = 300.0

#: Requests per second for hour 0..23 of a day (``berth.traces.daily_shape``, 24 bins).
BUILTIN_SHAPES: dict[str, tuple[float, ...]] = {
    "azure-llm-conv": (
        4.016, 5.600, 4.455, 5.031, 5.099, 5.284, 4.709, 5.558, 5.812, 6.580, 6.785, 7.820,
        7.793, 7.231, 7.169, 5.833, 5.531, 5.654, 5.935, 4.366, 4.242, 4.496, 4.085, 3.646,
    ),
    "azure-llm-code": (
        0.440, 4.715, 1.607, 1.530, 5.441, 1.097, 5.406, 3.094, 3.248, 5.036, 2.340, 3.437,
        3.527, 3.269, 2.061, 3.681, 2.396, 1.579, 2.452, 0.224, 0.000, 1.418, 0.894, 2.710,
    ),
}  # fmt: skip


class CurveError(ValueError):
    """A load-curve CSV that cannot be read: ``FILE: row N: what (expected ...)``."""


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """Requests per second at ``times`` (seconds from 0, increasing, all below ``period``),
    linear in between and from the last point back round to the first: the curve repeats
    every ``period`` seconds of simulated time."""

    name: str
    times: tuple[float, ...]
    rates: tuple[float, ...]
    period: float

    def rate(self, at: float) -> float:
        phase = at % self.period
        times = np.array((*self.times, self.times[0] + self.period))
        rates = np.array((*self.rates, self.rates[0]))
        if phase < times[0]:
            phase += self.period
        return float(np.interp(phase, times, rates))


@dataclass(frozen=True, slots=True)
class LoadScaling:
    """How a Deployment's replicas follow its curve (HPA-like)."""

    curve: LoadCurve
    requests_per_replica: float
    scale: float = 1.0
    min_replicas: int = 1
    max_replicas: int | None = None
    interval: float = DEFAULT_SCALE_INTERVAL
    scale_down_window: float = DEFAULT_SCALE_DOWN_WINDOW

    def recommended(self, at: float) -> int:
        """Replicas the load at ``at`` needs, within min..max."""
        return self._replicas(self.curve.rate(at))

    def peak(self) -> int:
        """Replicas at the curve's highest rate (linear between points: the peak is one)."""
        return self._replicas(max(self.curve.rates))

    def _replicas(self, rate: float) -> int:
        wanted = math.ceil(rate * self.scale / self.requests_per_replica - 1e-9)
        wanted = max(wanted, self.min_replicas)
        return wanted if self.max_replicas is None else min(wanted, self.max_replicas)


def builtin_curve(name: str, period: float = DAY) -> LoadCurve:
    """A built-in day, stretched or squeezed to ``period`` seconds."""
    rates = BUILTIN_SHAPES[name]
    step = period / len(rates)
    return LoadCurve(name, tuple(h * step for h in range(len(rates))), rates, period)


def read_curve_csv(path: Path, period: float) -> LoadCurve:
    """A ``time,requests_per_second`` CSV (header required; more columns are ignored, so a
    curve written by ``berth trace convert`` reads as it is)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise CurveError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    expected = ["time", "requests_per_second"]
    if not rows or [c.strip().lower() for c in rows[0][:2]] != expected:
        raise CurveError(f"{path}: row 1: expected the header time,requests_per_second")
    times: list[float] = []
    rates: list[float] = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2:
            raise CurveError(f"{path}: row {number}: expected two columns, time and rate")
        time = _number(row[0], path, number, "seconds >= 0 in column time")
        rate = _number(row[1], path, number, "requests per second >= 0")
        if times and time <= times[-1]:
            raise CurveError(
                f"{path}: row {number}: time {row[0].strip()} is not after the previous row's "
                f"{times[-1]:g} (expected increasing times)"
            )
        if time >= period:
            raise CurveError(
                f"{path}: row {number}: time {row[0].strip()} is not within the period "
                f"(expected < {period:g} s, {LOAD_PERIOD_ANNOTATION})"
            )
        times.append(time)
        rates.append(rate)
    if not times:
        raise CurveError(f"{path}: no rows after the header (expected at least one point)")
    return LoadCurve(str(path), tuple(times), tuple(rates), period)


def _number(text: str, path: Path, row: int, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise CurveError(
            f"{path}: row {row}: {text.strip()!r} is not a number (expected {expected})"
        )
    return value
