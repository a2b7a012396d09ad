"""Trace jobs made elastic (``simulate --elastic-fraction F``): traces record rigid jobs, so an
experiment on elastic training marks a stated share of them elastic.

A job of two or more identical workers is chosen when a hash of its name (CRC-32, so the
choice is the same on every run and machine) falls below F. It becomes an elastic Volcano Job
(``berth.api.elastic``) of workers ``<job>-worker-<i>``: its gang is half its workers
(rounded up), it grows back to the size it asked for, its trace duration is its run time at
that size, and its speed follows the default model (linear, 0.9 per doubling).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import replace

from berth.api.elastic import ElasticSpec, Throughput
from berth.api.objects import BatchJob, TaskSpec
from berth.traces.model import TraceJob


def chosen(name: str, fraction: float) -> bool:
    return zlib.crc32(name.encode()) / 2**32 < fraction


def elastic_job(job: TraceJob, fraction: float) -> BatchJob | None:
    """``job`` as an elastic Volcano Job if it is chosen and can be one, else None."""
    pods, group = job.pods, job.group
    if len(pods) < 2 or not chosen(group.name, fraction):
        return None
    first = pods[0]
    if first.duration is None or any(
        p.requests != first.requests or p.duration != first.duration for p in pods[1:]
    ):
        return None
    workers = len(pods)
    low, high = math.ceil(workers / 2), workers
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
        elastic=ElasticSpec(low, high, first.duration, Throughput(), reference=workers),
    )
