"""Which queue a trace job lands in.

Most traces have no queues worth keeping (or none at all), but fair-share experiments need jobs
spread over queues. A rule decides per job; it must be deterministic per job name so that a
sample, a window or a rerun puts the same job in the same queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from berth.api.keys import DEFAULT_QUEUE
from berth.api.objects import Queue
from berth.traces.names import dns_name, stable_hash

#: Upper bounds (milli-GPU, inclusive) of the ``by-size`` queues; larger jobs go to "large".
SIZE_QUEUES = (("small", 1000), ("medium", 8000))
LARGE_QUEUE = "large"


class QueueRule(Protocol):
    def queue_for(self, job: str, trace_queue: str, gpu: int) -> str:
        """The queue of job ``job``; ``trace_queue`` is the trace's own ("" if none), ``gpu``
        the job's total GPU request in milli-GPU."""
        ...

    def queues(self) -> list[Queue]:
        """The queues the rule defines up front (written before the jobs)."""
        ...


class TraceQueues:
    """The default: the trace's own queue (Philly and Helios virtual clusters), else default."""

    def queue_for(self, job: str, trace_queue: str, gpu: int) -> str:
        return trace_queue or DEFAULT_QUEUE

    def queues(self) -> list[Queue]:
        return []


@dataclass(frozen=True)
class WeightedQueues:
    """Each job to one queue, with probability proportional to the weights, decided by a hash of
    the job name — so the split is random-looking yet the same job always gets the same queue."""

    weights: tuple[tuple[str, int], ...]

    def queue_for(self, job: str, trace_queue: str, gpu: int) -> str:
        total = sum(weight for _, weight in self.weights)
        point = stable_hash(job) % total
        for name, weight in self.weights:
            if point < weight:
                return name
            point -= weight
        raise AssertionError("unreachable: point < total")

    def queues(self) -> list[Queue]:
        return [Queue(name, weight) for name, weight in self.weights]


class SizeQueues:
    """small (at most 1 GPU, CPU-only jobs included), medium (at most 8), large (more)."""

    def queue_for(self, job: str, trace_queue: str, gpu: int) -> str:
        for name, bound in SIZE_QUEUES:
            if gpu <= bound:
                return name
        return LARGE_QUEUE

    def queues(self) -> list[Queue]:
        return [Queue(name) for name, _ in SIZE_QUEUES] + [Queue(LARGE_QUEUE)]


def parse_queue_rule(spec: str) -> QueueRule:
    """``by-size``, ``trace``, or ``name:weight,name:weight,...`` (weights positive integers)."""
    text = spec.strip()
    if text == "by-size":
        return SizeQueues()
    if text == "trace":
        return TraceQueues()
    weights: list[tuple[str, int]] = []
    for part in text.split(","):
        name, sep, weight = part.strip().partition(":")
        if not sep or not name.strip() or not weight.strip().isdigit() or int(weight) < 1:
            raise ValueError(
                f"{part.strip()!r} is not name:weight (expected e.g. "
                "'research:3,prod:1' with positive integer weights, 'by-size' or 'trace')"
            )
        queue = dns_name(name.strip())
        if any(queue == seen for seen, _ in weights):
            raise ValueError(f"queue {queue!r} is given twice")
        weights.append((queue, int(weight)))
    return WeightedQueues(tuple(weights))
