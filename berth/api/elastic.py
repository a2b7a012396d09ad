"""Elastic Volcano Jobs: a gang of ``minAvailable`` workers that runs faster with more.

A Volcano Job annotated ``berth.io/elastic: "true"`` whose ``minAvailable`` is below its
replicas starts once its minimum is placed; further workers join as room appears (Volcano
places them as it always does) and leave when evicted, without restarting the job. Its
``berth.io/duration`` (on the Job, else on a task template) is its run time at its full
``replicas``; how fast it runs with n workers is its throughput model,
``berth.io/throughput``:

- ``linear`` or ``linear:<efficiency>``: n · e^log2(n), e per doubling (default 0.9);
- ``amdahl:<serial fraction>``: 1 / (s + (1 − s) / n);
- ``table:1=1,2=1.8,4=3.2``: measured speedups, linear in between, flat past the last.

Each change in its workers costs ``berth.io/resize-pause`` seconds without progress (default
30: checkpoint and restart). The job completes when its work is done: its workers finish
together (``minSuccess`` defaults to ``minAvailable`` so the job then ends, and workers that
never started are removed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from berth.api.numbers import to_float

ELASTIC_ANNOTATION = "berth.io/elastic"
THROUGHPUT_ANNOTATION = "berth.io/throughput"
RESIZE_PAUSE_ANNOTATION = "berth.io/resize-pause"
DEFAULT_EFFICIENCY = 0.9
DEFAULT_RESIZE_PAUSE = 30.0


@dataclass(slots=True, frozen=True)
class Throughput:
    """Speed with n workers, relative to one worker."""

    kind: str = "linear"
    value: float = DEFAULT_EFFICIENCY  # efficiency per doubling, or serial fraction
    table: tuple[tuple[int, float], ...] = ()

    def speed(self, workers: int) -> float:
        if workers <= 0:
            return 0.0
        if self.kind == "linear":
            return workers * self.value ** math.log2(workers)
        if self.kind == "amdahl":
            return 1.0 / (self.value + (1.0 - self.value) / workers)
        points = self.table
        if workers >= points[-1][0]:
            return points[-1][1]
        if workers <= points[0][0]:
            return points[0][1] * workers / points[0][0]
        for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
            if n0 <= workers <= n1:
                return s0 + (s1 - s0) * (workers - n0) / (n1 - n0)
        raise AssertionError("unreachable: the table covers every worker count")

    def speeds(self, workers: np.ndarray) -> np.ndarray:
        """``speed`` of each count (all >= 1) at once."""
        n = workers.astype(np.float64)
        if self.kind == "linear":
            return n * self.value ** np.log2(n)
        if self.kind == "amdahl":
            return 1.0 / (self.value + (1.0 - self.value) / n)
        return np.array([self.speed(int(count)) for count in workers])


def parse_throughput(text: str) -> Throughput:
    """``linear[:e]``, ``amdahl:s`` or ``table:n=speed,...``; ValueError says what is wrong."""
    kind, _, rest = text.strip().partition(":")
    if kind == "linear":
        value = _number(rest, "an efficiency per doubling") if rest else DEFAULT_EFFICIENCY
        if not 0 < value <= 1:
            raise ValueError(f"efficiency {rest} is not in (0, 1]")
        return Throughput("linear", value)
    if kind == "amdahl":
        value = _number(rest, "a serial fraction")
        if not 0 <= value < 1:
            raise ValueError(f"serial fraction {rest} is not in [0, 1)")
        return Throughput("amdahl", value)
    if kind == "table":
        points = []
        for item in filter(None, rest.split(",")):
            n, eq, speed = item.partition("=")
            if not eq or not n.strip().isdigit() or int(n) < 1:
                raise ValueError(f"{item!r} is not workers=speed (workers a whole number >= 1)")
            value = _number(speed, "a speedup")
            if value <= 0:
                raise ValueError(f"speedup {speed} is not above 0")
            points.append((int(n), value))
        if not points:
            raise ValueError("an empty table (expected e.g. table:1=1,2=1.8,4=3.2)")
        points.sort()
        if len({n for n, _ in points}) != len(points):
            raise ValueError("a worker count appears twice")
        return Throughput("table", 0.0, tuple(points))
    raise ValueError(f"{text!r} is not linear[:e], amdahl:s or table:n=speed,...")


def _number(text: str, expected: str) -> float:
    try:
        value = to_float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number (expected {expected})") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a number (expected {expected})")
    return value


@dataclass(slots=True, frozen=True)
class ElasticSpec:
    """An elastic job's worker range, run time at ``reference`` workers, speed and resize
    cost."""

    min_workers: int
    max_workers: int
    duration: float | None  # None: read from a cluster, where the job runs as long as it runs
    throughput: Throughput
    pause: float = DEFAULT_RESIZE_PAUSE
    reference: int = 0  # the workers ``duration`` is measured at (0: max_workers)

    @property
    def work(self) -> float:
        """The job's work in one-worker seconds (a simulated job's: it has a duration)."""
        assert self.duration is not None
        return self.duration * self.throughput.speed(self.reference or self.max_workers)


def is_elastic(annotations: Mapping[str, str]) -> bool:
    return annotations.get(ELASTIC_ANNOTATION, "").strip().lower() == "true"
