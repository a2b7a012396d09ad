"""Progress of elastic jobs (``berth.api.elastic``), integrated exactly between events.

An elastic job holds its work in one-worker seconds. Between two changes of its running
workers it progresses at its throughput model's speed for that many workers; below its
minimum it does not progress (its gang is broken). Every change of a running job's workers
(a worker placed later, one evicted) costs the resize pause, during which it does not progress
either. After each change the job's end is worked out again and its workers' finish events
are set for it; a finish event that is no longer the job's end is ignored. Work done survives
a restart of the job (a checkpoint), but every restart is a resize.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from berth.api.elastic import ElasticSpec
from berth.api.objects import BatchJob, Pod
from berth.sim.events import Ev, EventQueue


@dataclass(slots=True)
class _Progress:
    spec: ElasticSpec
    job: BatchJob
    remaining: float  # one-worker seconds of work left
    workers: dict[str, Pod] = field(default_factory=dict)  # running, by pod key
    since: float = 0.0  # time the remaining work was last brought up to date
    paused_until: float = 0.0
    last_resize: float | None = None
    running_since: float | None = None  # when it last reached its minimum
    end: float | None = None  # when its work will be done at the current pace
    done: bool = False


class ElasticProgress:
    """The elastic jobs of a run: their running workers, work left and end."""

    def __init__(self, jobs: Iterable[BatchJob], queue: EventQueue) -> None:
        self.queue = queue
        self.jobs = {
            job.key: _Progress(job.elastic, job, job.elastic.work)
            for job in jobs
            if job.elastic is not None
        }

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def started(self, pod: Pod, now: float) -> None:
        progress = self.jobs.get(pod.owner)
        if progress is not None and not progress.done:
            self._change(progress, now, {**progress.workers, pod.key: pod})

    def stopped(self, pod: Pod, now: float) -> None:
        progress = self.jobs.get(pod.owner)
        if progress is not None and pod.key in progress.workers and not progress.done:
            workers = dict(progress.workers)
            del workers[pod.key]
            self._change(progress, now, workers)

    def above_minimum(self, pod: Pod) -> bool:
        """Whether ``pod`` is a running worker of an elastic job with more workers than its
        minimum: it can leave without the job losing its work (loaning's free to remove)."""
        progress = self.jobs.get(pod.owner)
        return (
            progress is not None
            and not progress.done
            and pod.key in progress.workers
            and len(progress.workers) > progress.spec.min_workers
        )

    def finishing(self, pod: Pod, now: float) -> list[Pod] | None:
        """At a finish event of ``pod``: None if it is not an elastic worker; else the workers
        that finish now (all of them when the job's work is done, none for a stale event)."""
        progress = self.jobs.get(pod.owner)
        if progress is None:
            return None
        if progress.done or progress.end != now or pod.key not in progress.workers:
            return []
        progress.done = True
        progress.remaining = 0.0
        return list(progress.workers.values())

    def _change(self, progress: _Progress, now: float, workers: dict[str, Pod]) -> None:
        spec = progress.spec
        before, after = len(progress.workers), len(workers)
        running = before >= spec.min_workers
        if running:
            start = max(progress.since, progress.paused_until)
            if now > start:
                progress.remaining -= spec.throughput.speed(before) * (now - start)
        elif after >= spec.min_workers:
            progress.running_since = now
        progress.since = now
        # Workers joining at the instant the job starts are part of its start, not a resize.
        if running and after != before and now != progress.running_since:
            progress.paused_until = now + spec.pause
            if progress.last_resize != now:
                progress.last_resize = now
                progress.job.resizes += 1
        progress.workers = workers
        if after < spec.min_workers:
            progress.end = None
            return
        begin = max(now, progress.paused_until)
        progress.end = begin + max(progress.remaining, 0.0) / spec.throughput.speed(after)
        for pod in workers.values():
            self.queue.push(progress.end, Ev.FINISH, pod)
