"""The numbers ``berth trace info`` shows: what a trace would ask of a cluster, at a glance.

Job statistics are taken over ``JobSpec``s (before pods exist), so summarising a trace of
millions of pods is one pass over its rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from berth.api.objects import Node
from berth.resources import CPU, GPU, MEMORY
from berth.traces.formats.alibaba2018 import UsageSample
from berth.traces.model import GPU_PRODUCT_LABEL, MILLI, JobSpec

#: Upper bounds of the size buckets, in whole GPUs and whole cores (totals are rounded up).
GPU_BOUNDS = (1, 2, 4, 8, 16, 32, 64)
CPU_BOUNDS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PERCENTILES = (50, 90, 99)

Buckets = list[tuple[str, int]]


def percentiles(values: Iterable[float]) -> dict[str, float]:
    """p50, p90, p99 and max; empty when there are no values."""
    data = np.fromiter(values, dtype=np.float64)
    if data.size == 0:
        return {}
    points = np.percentile(data, PERCENTILES)
    stats = {f"p{p}": float(v) for p, v in zip(PERCENTILES, points, strict=True)}
    stats["max"] = float(data.max())
    return stats


def buckets(values: np.ndarray, bounds: tuple[int, ...], first: str) -> Buckets:
    """Counts per bucket ``(previous bound, bound]`` (the first labelled ``first``), then
    ``>last bound``; empty buckets are left out."""
    counts = np.bincount(np.searchsorted(bounds, values, side="left"), minlength=len(bounds) + 1)
    result = []
    for i, count in enumerate(counts):
        if count:
            if i == 0:
                label = first
            elif i == len(bounds):
                label = f">{bounds[-1]}"
            elif bounds[i - 1] + 1 == bounds[i]:
                label = str(bounds[i])
            else:
                label = f"{bounds[i - 1] + 1}–{bounds[i]}"
            result.append((label, int(count)))
    return result


def gpu_buckets(milli: np.ndarray) -> Buckets:
    """Jobs by total GPUs: none, a fraction of one, then whole GPUs (fractions rounded up)."""
    result = []
    none = int(np.count_nonzero(milli == 0))
    fraction = int(np.count_nonzero((milli > 0) & (milli < MILLI)))
    if none:
        result.append(("0", none))
    if fraction:
        result.append(("<1", fraction))
    return result + buckets(np.ceil(milli[milli >= MILLI] / MILLI), GPU_BOUNDS, "1")


@dataclass
class JobStats:
    jobs: int = 0
    pods: int = 0
    first: float | None = None  # earliest submit (trace seconds)
    last: float | None = None
    gpus: Buckets = field(default_factory=list)
    cpus: Buckets = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    open_ended: int = 0  # jobs that run to the end (no duration)

    @property
    def span(self) -> float:
        return 0.0 if self.first is None or self.last is None else self.last - self.first

    @property
    def rate_per_hour(self) -> float | None:
        return self.jobs / (self.span / 3600) if self.span > 0 else None


def job_stats(specs: Iterable[JobSpec]) -> JobStats:
    submits: list[float] = []
    gpus: list[int] = []
    cpus: list[int] = []
    durations: list[float] = []
    stats = JobStats()
    for spec in specs:
        submits.append(spec.submit)
        gpus.append(spec.gpu)
        cpus.append(spec.cpu)
        stats.pods += spec.pods
        duration = spec.duration
        if duration is None:
            stats.open_ended += 1
        else:
            durations.append(duration)
    stats.jobs = len(submits)
    if submits:
        stats.first, stats.last = min(submits), max(submits)
        stats.gpus = gpu_buckets(np.asarray(gpus, dtype=np.int64))
        stats.cpus = buckets(np.ceil(np.asarray(cpus, dtype=np.float64) / MILLI), CPU_BOUNDS, "≤1")
        stats.durations = percentiles(durations)
    return stats


@dataclass
class NodeStats:
    nodes: int
    totals: dict[str, int]  # canonical units
    models: list[tuple[str, int, int]]  # GPU model ("" for none), nodes, GPUs (milli)


def node_stats(nodes: Iterable[Node]) -> NodeStats:
    count = 0
    totals: Counter[str] = Counter()
    per_model: dict[str, list[int]] = {}
    for node in nodes:
        count += 1
        totals.update({r: node.allocatable.get(r, 0) for r in (CPU, MEMORY, GPU)})
        entry = per_model.setdefault(node.labels.get(GPU_PRODUCT_LABEL, ""), [0, 0])
        entry[0] += 1
        entry[1] += node.allocatable.get(GPU, 0)
    models = sorted(((m, n, g) for m, (n, g) in per_model.items()), key=lambda x: (-x[1], x[0]))
    return NodeStats(count, dict(totals), models)


@dataclass
class UsageStats:
    samples: int
    machines: int
    first: float | None
    last: float | None
    cpu: dict[str, float]  # percent: p50, p90, p99, max
    memory: dict[str, float]


def usage_stats(samples: Iterable[UsageSample]) -> UsageStats:
    machines: set[str] = set()
    times: list[float] = []
    cpu: list[float] = []
    memory: list[float] = []
    for sample in samples:
        machines.add(sample.machine)
        times.append(sample.time)
        cpu.append(sample.cpu_util)
        memory.append(sample.mem_util)
    return UsageStats(
        samples=len(times),
        machines=len(machines),
        first=min(times, default=None),
        last=max(times, default=None),
        cpu=percentiles(cpu),
        memory=percentiles(memory),
    )
