"""The remaining work of elastic jobs on a cluster, for ``berth serve --scaling aryl``.

Aryl values an extra worker by the completion time it saves, which needs each job's remaining
work. A simulated job's is integrated exactly; a cluster's job has it from one of three
sources, in this order (docs/elastic.md):

- ``progress``: the trainer writes ``berth.io/progress`` on its Job (Volcano Job or
  PyTorchJob), the fraction of its work done, a number in [0, 1]. With ``berth.io/duration``
  (the run time at the reference workers) the work is known and the rest is
  ``work × (1 − progress)``; without it the work done so far (estimated as below) is
  extrapolated, ``done × (1 − progress) / progress``.
- ``estimate``: no report, but a declared ``berth.io/duration``: the rest is the work less what
  the job has done at the workers berth saw running, speed(n) per second while it held at
  least its minimum (resize pauses are not subtracted). A job met for the first time (berth
  restarted) is credited with its current workers since its earliest running worker started.
- ``unknown``: neither. Aryl then values no extra worker for it, so it runs at its minimum, and
  phase 1 serves it after every job whose run time is known.

Rounds run when the cluster changed, as in the simulator; a new ``berth.io/progress`` value
counts as a change.

Which source each job had in the last round is logged when it changes and counted in the
``berth_aryl_jobs{source=...}`` gauge.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from berth.api.numbers import to_float
from berth.api.objects import BatchJob, PodPhase
from berth.framework.scheduler import Scheduler
from berth.k8s.cache import KubeStore

log = logging.getLogger("berth.k8s")

PROGRESS_ANNOTATION = "berth.io/progress"
SOURCES = ("progress", "estimate", "unknown")
#: The kinds whose objects carry an elastic job's annotations (the Job controllers' inputs).
JOB_KINDS = ("Job", "PyTorchJob", "TrainingJob")


@dataclass(slots=True)
class _Done:
    work: float  # one-worker seconds done, as far as berth saw
    at: float  # when ``work`` was brought up to date
    workers: int  # running workers then


class RemainingWork:
    """Each elastic job's remaining one-worker seconds and where the figure came from."""

    def __init__(self, store: KubeStore, scheduler: Scheduler) -> None:
        self.store = store
        self.scheduler = scheduler
        self._done: dict[str, _Done] = {}
        #: The source each job's figure came from in the last round.
        self.sources: dict[str, str] = {}
        self._bad: set[tuple[str, str]] = set()  # (job, value) reported as unreadable

    def observe(self, jobs: list[BatchJob], now: float) -> None:
        """Bring each job's work done up to ``now`` (called every round's interval, whether
        the round runs or not), and forget the jobs that ended."""
        live = {job.key for job in jobs}
        for key in [k for k in self._done if k not in live]:
            del self._done[key]
            self.sources.pop(key, None)
        for job in jobs:
            spec = job.elastic
            assert spec is not None
            running, since = self._running(job.key)
            done = self._done.get(job.key)
            if done is None:
                speed = spec.throughput.speed(running) if running >= spec.min_workers else 0.0
                start = now if since is None else min(since, now)
                self._done[job.key] = _Done(speed * (now - start), now, running)
                continue
            if done.workers >= spec.min_workers:
                done.work += spec.throughput.speed(done.workers) * max(now - done.at, 0.0)
            done.at, done.workers = now, running

    def remaining(self, job: BatchJob) -> float | None:
        """The job's remaining one-worker seconds (None: unknown), its source recorded."""
        spec = job.elastic
        assert spec is not None
        done = self._done[job.key].work if job.key in self._done else 0.0
        work = spec.work if spec.duration is not None else None
        progress = self.reported(job.key)
        if progress is not None and work is not None:
            source, left = "progress", work * (1.0 - progress)
        elif progress is not None and progress > 0 and done > 0:
            source, left = "progress", done * (1.0 - progress) / progress
        elif work is not None:
            source, left = "estimate", max(work - done, 0.0)
        else:
            source, left = "unknown", None
        if self.sources.get(job.key) != source:
            log.info(
                "aryl remaining work",
                extra={"job": job.key, "source": source, "remaining": left},
            )
        self.sources[job.key] = source
        return left

    def counts(self) -> dict[str, int]:
        """Jobs by the source of their figure in the last round."""
        values = list(self.sources.values())
        return {source: values.count(source) for source in SOURCES}

    def _running(self, key: str) -> tuple[int, float | None]:
        """The job's running workers, and when the earliest of them started."""
        job = self.scheduler.jobs.get(key)
        if job is None:
            return 0, None
        running = [p for p in job.bound.values() if p.phase == PodPhase.RUNNING]
        starts = [p.start_time for p in running if p.start_time is not None]
        return len(running), min(starts) if starts else None

    def reported(self, key: str) -> float | None:
        """The trainer's ``berth.io/progress`` on the job's object; None when absent or
        unreadable (reported once per value)."""
        for kind in JOB_KINDS:
            raw = self.store.raw(kind, key)
            if raw is None:
                continue
            text = ((raw.get("metadata") or {}).get("annotations") or {}).get(PROGRESS_ANNOTATION)
            if text is None:
                return None
            try:
                value = to_float(str(text))
            except ValueError:
                value = math.nan
            if math.isfinite(value) and 0.0 <= value <= 1.0:
                return value
            if (key, str(text)) not in self._bad:
                self._bad.add((key, str(text)))
                log.warning(
                    "progress not read",
                    extra={
                        "job": f"{kind}/{key}",
                        "field": f"metadata.annotations.{PROGRESS_ANNOTATION}",
                        "value": str(text),
                        "expected": "the fraction of the work done, a number in [0, 1]",
                    },
                )
            return None
        return None
