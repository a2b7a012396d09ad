"""sjf and srtf: shortest job first, and shortest remaining time first, by a job's duration.

``sjf`` orders waiting jobs by their duration (shortest first) and never preempts. ``srtf``
orders them by the time they have left and lets a job evict running jobs with more time left
than it has (``preemptable``), so a short arrival takes the GPUs of a long job.

Durations come from ``durations``:

- ``oracle`` (the default): the trace's own, a pod's ``berth.io/duration`` (a job's is its
  longest pod's). A pod that a ``simulation.preemption`` section brought back carries what its
  job had left, so the remaining time of a waiting job is its pods' duration, and of a running
  one, that minus the time since it started;
- ``estimate``: what the scheduler could know without being told: the mean time from first
  start to end of the jobs of the same queue that have completed so far (``prior`` seconds,
  default 3,600, before any has); a running job's remaining time is that minus what it has run,
  never below 0 (what it ran before a preemption is not counted).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, PluginArgumentError, RankingPlugin
from berth.framework.session import Session

MODES = ("oracle", "estimate")


class Sjf(Plugin):
    name = "sjf"
    per_job_admission = True  # the duration tells alike jobs apart
    #: Whether the order counts only what a job has left (srtf) and preempts by it.
    remaining_time: ClassVar[bool] = False

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.mode = self.arguments.get("durations", "oracle")
        if self.mode not in MODES:
            raise PluginArgumentError(
                f"plugin {self.name}: argument durations: expected oracle or estimate "
                f"(got {self.mode!r})"
            )
        self.prior = self.float_arg("prior", 3600.0)
        if self.prior < 0:
            raise PluginArgumentError(f"plugin {self.name}: argument prior: expected >= 0")
        self.now = 0.0
        self.session: Session | None = None
        #: estimate: per queue, the completed jobs' count and summed run time; the jobs seen
        #: placed (key → queue, first start) until they go.
        self.history: dict[str, tuple[int, float]] = {}
        self._placed: dict[str, tuple[str, float | None]] = {}
        self._keys: dict[str, float] = {}

    def on_session_open(self, session: Session) -> None:
        self.session = session
        self.now = session.now
        self._keys = {}
        if self.mode == "estimate" and self._placed:
            self._learn(session)

    def _learn(self, session: Session) -> None:
        """Jobs placed earlier that have no pod left, bound or pending, have completed: their
        first start to now (the session after their end) joins their queue's history."""
        jobs = session.all_jobs
        for key in list(self._placed):
            queue, first = self._placed[key]
            job = jobs.get(key)
            if job is None or not (job.bound or job.pending):
                del self._placed[key]
                if first is not None:
                    count, total = self.history.get(queue, (0, 0.0))
                    self.history[queue] = (count + 1, total + self.now - first)
            elif first is None:
                starts = [p.start_time for p in job.bound.values() if p.start_time is not None]
                if starts:
                    self._placed[key] = (queue, min(starts))

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        if self.mode == "estimate" and job.key not in self._placed:
            self._placed[job.key] = (job.queue, None)

    # -- what a job has left ------------------------------------------------------------

    def ran(self, job: JobInfo) -> float:
        """Seconds its running pods have run (0 for a waiting job)."""
        starts = [p.start_time for p in job.bound.values() if p.start_time is not None]
        return max(self.now - min(starts), 0.0) if starts else 0.0

    def length(self, job: JobInfo) -> float:
        """The job's whole duration (oracle: its pods', which for a job brought back after a
        preemption is what it had left then), or its queue's mean (estimate)."""
        if self.mode == "estimate":
            count, total = self.history.get(job.queue, (0, 0.0))
            return total / count if count else self.prior
        durations = [p.duration for p in job.pending if p.duration is not None]
        durations += [p.duration for p in job.bound.values() if p.duration is not None]
        return max(durations, default=float("inf"))

    def key(self, job: JobInfo) -> float:
        cached = self._keys.get(job.key)
        if cached is None:
            value = self.length(job)
            if self.remaining_time:
                value = max(value - self.ran(job), 0.0)
            cached = self._keys[job.key] = value
        return cached

    def job_order(self, job: JobInfo) -> float:
        return self.key(job)


class Srtf(Sjf, RankingPlugin):
    name = "srtf"
    remaining_time = True

    def victim_rank(self, job: JobInfo) -> float:
        """The running job with the most time left gives way first."""
        return self.key(job)
