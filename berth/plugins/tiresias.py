"""tiresias: discretized two-dimensional least attained service (Tiresias, NSDI'19), as the
ElasticFlow artifact's ``dlas-gpu`` schedule runs it.

A job's attained service is GPUs × seconds run, summed over every run it had (a preempted job
keeps what it attained). Jobs are ranked by level: level 0 until their service reaches the first
threshold, level 1 until the second, and so on; within a level, by arrival (the framework's
tie-break on submission). A job of a higher level (a smaller number) may evict running jobs of
lower levels (``preemptable``); jobs of one level never evict each other.

With ``promoteKnob`` k > 0 the starvation guard is on: a job waiting in a level below the top
that has waited, since it was last put in level 0 (counted from its first run after that), at
least k times as long as it ran in that time goes back to level 0, its service counted afresh
from then (the artifact's ``solve_starvation``). ``dlas-gpu`` runs with the guard off (k = 0).

Only evictions made through a scheduling statement (preempt, reclaim) move a pod's run into the
job's banked service; pods that finish take theirs with them (their job is done).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import PluginArgumentError, RankingPlugin
from berth.framework.session import Session
from berth.resources import GPU

#: ``dlas-gpu``'s levels: three queues, demoted at 3,250 and 7,200 GPU-seconds (the artifact's
#: ``queue_limit``; its third limit, 18,000, belongs to no queue since there are only three).
DEFAULT_THRESHOLDS = (3250.0, 7200.0)


def gpus(pod: Pod) -> float:
    return pod.requests.get(GPU, 0) / 1000


@dataclass(slots=True)
class Service:
    """What a job has attained, in GPU-seconds, outside its running pods."""

    banked: float = 0.0  # runs that ended by eviction
    reset: float = 0.0  # service at its last promotion to level 0 (the guard)
    #: When the job's first run since its last promotion (or its arrival) began, once known;
    #: the guard counts waiting from here.
    first_run: float | None = None
    promotions: int = 0


class Tiresias(RankingPlugin):
    name = "tiresias"
    per_job_admission = True  # the level tells alike jobs apart

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.thresholds = _thresholds(self.arguments.get("queueThresholds"), self.name)
        self.promote_knob = self.float_arg("promoteKnob", 0.0)
        if self.promote_knob < 0:
            raise PluginArgumentError(
                f"plugin {self.name}: argument promoteKnob: expected >= 0 (0: no promotion), "
                f"got {self.promote_knob:g}"
            )
        self.services: dict[str, Service] = {}
        #: Keys of jobs waiting after an eviction: the ones the guard looks at.
        self.waiting: set[str] = set()
        self._lowest: int | None = None
        self.now = 0.0
        self.session: Session | None = None
        self._levels: dict[str, int] = {}

    # -- service ------------------------------------------------------------------------

    def service(self, job: JobInfo, now: float) -> float:
        """GPU-seconds attained since its last promotion (all of them without a guard)."""
        record = self.services.get(job.key)
        total = 0.0 if record is None else record.banked - record.reset
        for pod in job.bound.values():
            if pod.start_time is not None and pod.start_time < now:
                total += (now - pod.start_time) * gpus(pod)
        return total

    def level_of(self, service: float) -> int:
        return bisect.bisect_right(self.thresholds, service)

    def level(self, job: JobInfo) -> int:
        """The job's level now (cached for the session: evictions move service from running
        pods to the bank, which leaves it unchanged)."""
        cached = self._levels.get(job.key)
        if cached is None:
            cached = self._levels[job.key] = self.level_of(self.service(job, self.now))
        return cached

    # -- extension points -----------------------------------------------------------------

    def on_session_open(self, session: Session) -> None:
        self.session = session
        self.now = session.now
        self._levels = {}
        self._lowest = None
        if self.promote_knob > 0 and self.waiting:
            self._promote(session)

    def job_order(self, job: JobInfo) -> int:
        return self.level(job)

    def job_starving(self, job: JobInfo) -> bool:
        """A job can take GPUs by preemption only while some job of a lower level runs (gang,
        in the same tier, adds: short of its minMember); the others are not asked to try."""
        return self.level(job) < self._lowest_running()

    def _lowest_running(self) -> int:
        """The largest level among the running jobs as the session opened."""
        if self._lowest is None:
            session, lowest, last = self.session, -1, len(self.thresholds)
            if session is not None:
                for job in session.holders():
                    lowest = max(lowest, self.level(job))
                    if lowest == last:  # no level is lower
                        break
            self._lowest = lowest
        return self._lowest

    def victim_rank(self, job: JobInfo) -> float:
        """The lowest level gives way first, wherever it runs."""
        return self.level(job)

    def on_deallocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        """An eviction (or a placement undone): a started pod's run joins the bank."""
        if pod.start_time is None:
            return
        record = self.services.setdefault(job.key, Service())
        record.banked += max(self.now - pod.start_time, 0.0) * gpus(pod)
        if record.first_run is None:
            record.first_run = pod.start_time
        self.waiting.add(job.key)

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        """A placement (the job may run from now on), or an eviction undone, which gives its
        run back."""
        if pod.start_time is None:
            return
        record = self.services.get(job.key)
        if record is not None:
            record.banked -= max(self.now - pod.start_time, 0.0) * gpus(pod)

    def _promote(self, session: Session) -> None:
        """The starvation guard: waiting ≥ knob × running since the last promotion puts a
        job back in level 0."""
        jobs = session.all_jobs
        for key in sorted(self.waiting):
            job = jobs.get(key)
            if job is None:
                self.waiting.discard(key)
                continue
            if job.bound:
                continue  # running again: it is judged when it next waits
            record = self.services[key]
            service = record.banked - record.reset
            if record.first_run is None or service <= 0 or self.level_of(service) == 0:
                continue
            size = sum(gpus(p) for p in job.pending) or 1.0
            ran = service / size
            waited = (self.now - record.first_run) - ran
            if waited >= self.promote_knob * ran:
                record.reset = record.banked
                record.first_run = None
                record.promotions += 1

    def next_change(self, session: Session) -> float | None:
        """The next demotion that could let a waiting job evict a running one (a running job
        reaching the next threshold while some job waits at its level or above), or the next
        promotion of a waiting job by the guard; in whole seconds, at least one ahead (the
        artifact rounds its jumps up too)."""
        now = self.now
        waiting = [j for j in session.jobs.values() if j.pending and not j.bound]
        if not waiting:
            return None
        top = min(self.level(j) for j in waiting)
        last = len(self.thresholds)
        soonest = math.inf
        for job in session.holders():
            level = self.level(job)
            if level >= last or level < top:
                continue
            size = sum(gpus(p) for p in job.bound.values())
            if size > 0:
                ahead = (self.thresholds[level] - self.service(job, now)) / size
                soonest = min(soonest, now + max(math.ceil(ahead), 1))
        if self.promote_knob > 0:
            for key in self.waiting:
                record = self.services[key]
                service = record.banked - record.reset
                waiter = session.all_jobs.get(key)
                if waiter is None or waiter.bound or record.first_run is None or service <= 0:
                    continue
                size = sum(gpus(p) for p in waiter.pending) or 1.0
                due = record.first_run + (1 + self.promote_knob) * service / size
                soonest = min(soonest, max(math.ceil(due), now + 1))
        return None if soonest == math.inf else soonest

    def promotions(self, key: str) -> int:
        record = self.services.get(key)
        return 0 if record is None else record.promotions


def _thresholds(raw: Any, name: str) -> tuple[float, ...]:
    if raw is None:
        return DEFAULT_THRESHOLDS
    if not isinstance(raw, list | tuple) or not raw:
        raise PluginArgumentError(
            f"plugin {name}: argument queueThresholds: expected a list of GPU-seconds (got {raw!r})"
        )
    values = []
    for item in raw:
        try:
            value = float(item)
        except (TypeError, ValueError):
            raise PluginArgumentError(
                f"plugin {name}: argument queueThresholds: {item!r} is not a number"
            ) from None
        if not value > 0 or value == float("inf"):
            raise PluginArgumentError(
                f"plugin {name}: argument queueThresholds: expected finite GPU-seconds > 0 "
                f"(got {item!r})"
            )
        values.append(value)
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise PluginArgumentError(
            f"plugin {name}: argument queueThresholds: expected increasing values (got {raw!r})"
        )
    return tuple(values)
