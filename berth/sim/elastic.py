"""Progress of elastic jobs (``berth.api.elastic``), integrated exactly between events.

An elastic job holds its work in one-worker seconds. Between two changes of its running
workers it progresses at its throughput model's speed for that many workers; below its
minimum it does not progress (its gang is broken). Every change of a running job's workers
(a worker placed later, one evicted) costs the resize pause, during which it does not progress
either. After each change the job's end is worked out again: one end event per job, the
earlier one cancelled (the queue counts it out, so it neither keeps the run going nor marks
its end). Work done survives a restart of the job (a checkpoint), but every restart is a
resize.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from berth.api.elastic import ElasticSpec
from berth.api.objects import BatchJob, Pod
from berth.sim.events import Ev, EventQueue, MovableEnd

#: Up to this many elastic jobs, the time series has a column of workers for each.
PER_JOB_COLUMNS = 20


@dataclass(slots=True)
class JobProgress:
    """One elastic job's running workers, work left and standing end event."""

    spec: ElasticSpec
    job: BatchJob
    remaining: float  # one-worker seconds of work left
    workers: dict[str, Pod] = field(default_factory=dict)  # running, by pod key
    since: float = 0.0  # time the remaining work was last brought up to date
    paused_until: float = 0.0
    last_resize: float | None = None
    running_since: float | None = None  # when it last reached its minimum
    end: MovableEnd | None = None  # its standing end event
    done: bool = False

    def progressed(self, now: float) -> float:
        """One-worker seconds of work done since ``since``, at its running workers (none
        below its minimum or while paused)."""
        workers = len(self.workers)
        if workers < self.spec.min_workers:
            return 0.0
        start = max(self.since, self.paused_until)
        return self.spec.throughput.speed(workers) * max(now - start, 0.0)


class ElasticProgress:
    """The elastic jobs of a run: their running workers, work left and end."""

    def __init__(self, jobs: Iterable[BatchJob], queue: EventQueue) -> None:
        self.queue = queue
        self.jobs = {
            job.key: JobProgress(job.elastic, job, job.elastic.work)
            for job in jobs
            if job.elastic is not None
        }
        self.running = 0  # running workers of all elastic jobs, kept as they change

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def sample(self) -> dict[str, float]:
        """Time-series columns: running workers of all elastic jobs, and of each one when
        there are at most ``PER_JOB_COLUMNS`` of them."""
        columns = {"elastic_workers": float(self.running)}
        if len(self.jobs) <= PER_JOB_COLUMNS:
            for key, progress in self.jobs.items():
                job = progress.job
                name = job.name if job.namespace == "default" else key
                columns[f"workers_{name}"] = float(len(progress.workers))
        return columns

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

    def remaining(self, key: str, now: float) -> float:
        """One-worker seconds of work the job has left at ``now``."""
        progress = self.jobs[key]
        return max(progress.remaining - progress.progressed(now), 0.0)

    def ended(self, end: MovableEnd) -> list[Pod]:
        """At an end event: the workers that finish now (none for a cancelled event)."""
        if end.cancelled:
            return []
        self.queue.live -= 1
        progress = self.jobs[end.key]
        progress.done = True
        progress.remaining = 0.0
        progress.end = None
        workers, progress.workers = list(progress.workers.values()), {}
        self.running -= len(workers)
        return workers

    def _change(self, progress: JobProgress, now: float, workers: dict[str, Pod]) -> None:
        spec = progress.spec
        before, after = len(progress.workers), len(workers)
        running = before >= spec.min_workers
        if running:
            progress.remaining -= progress.progressed(now)
        elif after >= spec.min_workers:
            progress.running_since = now
        progress.since = now
        # Workers joining at the instant the job starts are part of its start, not a resize.
        if running and after != before and now != progress.running_since:
            progress.paused_until = now + spec.pause
            if progress.last_resize != now:
                progress.last_resize = now
                progress.job.resizes += 1
        self.running += after - before
        progress.workers = workers
        if progress.end is not None:
            progress.end.cancelled = True
            self.queue.live -= 1
            progress.end = None
        if after < spec.min_workers:
            return
        begin = max(now, progress.paused_until)
        progress.end = MovableEnd(progress.job.key)
        at = begin + max(progress.remaining, 0.0) / spec.throughput.speed(after)
        self.queue.push(at, Ev.ELASTIC_END, progress.end)
        self.queue.live += 1
