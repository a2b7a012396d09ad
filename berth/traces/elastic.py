"""Trace jobs made elastic (``simulate --elastic-fraction F``): traces record rigid jobs, so an
experiment on elastic training marks a stated share of them elastic.

A job of identical workers is chosen when a hash of its name (CRC-32, so the choice is the
same on every run and machine) falls below F. It becomes an elastic Volcano Job
(``berth.api.elastic``) of workers ``<job>-worker-<i>``. Its range is the ``--elastic-range``
LOW:HIGH, multiples of the n workers it asked for: its gang is ceil(n × LOW), it grows to
floor(n × HIGH) (by default 0.5:1, half its workers up to what it asked for), and a job whose
range holds one size only stays rigid. Its trace duration is its run time at n workers, and its
speed follows the default model (linear, 0.9 per doubling).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

from berth.api.elastic import ELASTIC_ANNOTATION, ElasticSpec, Throughput
from berth.api.objects import BatchJob, TaskSpec
from berth.traces.model import TraceJob


@dataclass(frozen=True, slots=True)
class ElasticRange:
    """An elastic trace job's workers as multiples of those it asked for."""

    low: float = 0.5  # its gang: in (0, 1]
    high: float = 1.0  # its maximum: >= 1

    def __post_init__(self) -> None:
        if not 0 < self.low <= 1:
            raise ValueError(f"{self.low:g} is not in (0, 1] (the gang's share of the workers)")
        if self.high < 1:
            raise ValueError(f"{self.high:g} is below 1 (the maximum's multiple of the workers)")

    def of(self, workers: int) -> tuple[int, int]:
        return math.ceil(workers * self.low), max(math.floor(workers * self.high), workers)


def parse_range(text: str) -> ElasticRange:
    """``LOW:HIGH``; ValueError says what is wrong."""
    low, colon, high = text.partition(":")
    try:
        values = float(low), float(high)
    except ValueError:
        values = None
    if not colon or values is None or not all(map(math.isfinite, values)):
        raise ValueError(f"{text!r} is not LOW:HIGH (two numbers, e.g. 0.5:2)")
    return ElasticRange(*values)


def chosen(name: str, fraction: float) -> bool:
    return zlib.crc32(name.encode()) / 2**32 < fraction


def elastic_job(
    job: TraceJob, fraction: float, span: ElasticRange = ElasticRange()
) -> BatchJob | None:
    """``job`` as an elastic Volcano Job if it is chosen and can be one, else None."""
    pods, group = job.pods, job.group
    low, high = span.of(len(pods))
    if low >= high or not chosen(group.name, fraction):
        return None
    first = pods[0]
    if first.duration is None or any(
        p.requests != first.requests or p.duration != first.duration for p in pods[1:]
    ):
        return None
    workers = len(pods)
    template = replace(first, name=f"{group.name}-worker", duration=None, group=group.name)
    return BatchJob(
        name=group.name,
        namespace=group.namespace,
        tasks=[TaskSpec(name="worker", replicas=high, template=template)],
        min_available=low,
        min_success=low,
        queue=group.queue,
        priority_class_name=group.priority_class_name,
        priority=group.priority,
        submit_time=group.submit_time,
        network_topology=group.network_topology,
        # As a manifest's elastic Job says it: the scheduler sees it on the PodGroup.
        annotations={ELASTIC_ANNOTATION: "true"},
        elastic=ElasticSpec(low, high, first.duration, Throughput(), reference=workers),
    )
