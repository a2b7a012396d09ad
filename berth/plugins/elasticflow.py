"""elasticflow: ElasticFlow's deadline-aware admission control (ASPLOS'23), as its artifact's
``ef-accessctrl`` schedule runs it, over berth's jobs.

A job with a deadline (``berth.api.deadline``) is admitted when it arrives only if it and
every admitted job still waiting can meet their deadlines; otherwise it is dropped: it never
runs, and jobs.csv says ``dropped``. The test (the artifact's ``estimate_all_jobs`` and
``ef_sim_allocation``) plans over the cluster's GPUs as a count changing in time:

- the running jobs hold their GPUs until their expected end (their duration from their start);
- the waiting admitted jobs and the new one, earliest deadline first, each take their
  *minimum satisfactory share*: the smallest size (GPUs) at which, filling backwards from its
  deadline, each stretch of time giving it that size or the largest allowed size that the
  free GPUs hold there, its work is done by its deadline. What it takes is no longer free for
  the jobs after it. A job that no size satisfies fails the test.

berth's rigid jobs have one size (their GPUs; the artifact lets every job take any size its
throughput table lists); their work is their duration at that size. Jobs without a deadline
or a duration are best effort: admitted without a test, planned for nobody, served after
every job with a deadline.

Admitted jobs are served earliest deadline first; free GPUs go to whichever admitted job fits
next in that order (the artifact hands GPUs left over to the jobs that save the most
GPU-time with them, which for rigid jobs is the same thing: starting one). No preemption.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.api.deadline import DROPPED_REASON, Deadlines
from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin
from berth.framework.session import Session
from berth.resources import GPU

#: Work below this many GPU-seconds counts as done (float noise of the backward fill).
EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class Demand:
    """What a job asks of the plan: ``work`` seconds at speed 1 before ``deadline``, at one of
    ``sizes`` (GPUs, increasing), running at ``speeds`` (same order) at each."""

    key: str
    deadline: float
    work: float
    sizes: tuple[int, ...]
    speeds: tuple[float, ...]

    def largest_within(self, limit: float) -> int:
        """The index of the largest size <= ``limit``, or −1."""
        return bisect.bisect_right(self.sizes, limit) - 1


class Plan:
    """Free GPUs from ``now`` on, as a step function: ``free[i]`` GPUs from ``times[i]`` up to
    ``times[i + 1]`` (the last one for ever)."""

    def __init__(self, now: float, total: int, holds: list[tuple[float, int]] = ()) -> None:
        """``holds``: (end, GPUs) of running jobs, which hold their GPUs from now to their end."""
        ends = sorted((end, gpus) for end, gpus in holds if end > now)
        times, free = [now], [total - sum(g for _, g in ends)]
        for end, gpus in ends:
            if end == times[-1]:
                free[-1] += gpus
            else:
                times.append(end)
                free.append(free[-1] + gpus)
        self.times, self.free = times, free

    def _cut(self, t: float) -> int:
        """The index of the step starting at ``t``, made if needed."""
        i = bisect.bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.free.insert(i, self.free[i - 1])
        return i

    def take(self, segments: list[tuple[float, float, int]]) -> None:
        for start, end, gpus in segments:
            first, last = self._cut(start), self._cut(end)
            for i in range(first, last):
                self.free[i] -= gpus

    def fill(self, demand: Demand, quota: int) -> list[tuple[float, float, int]] | None:
        """Backwards from the deadline at most ``quota`` GPUs a stretch: the (start, end,
        GPUs) stretches that do the work, latest first, or None when they cannot by the
        deadline."""
        need = demand.work
        end = demand.deadline
        i = bisect.bisect_left(self.times, end) - 1
        taken = []
        while i >= 0 and need > EPSILON:
            start = self.times[i]
            k = demand.largest_within(min(quota, self.free[i]))
            if k >= 0:
                rate = demand.speeds[k]
                if (end - start) * rate >= need:
                    start, need = end - need / rate, 0.0
                else:
                    need -= (end - start) * rate
                taken.append((start, end, demand.sizes[k]))
            end = self.times[i]
            i -= 1
        return taken if need <= EPSILON else None

    def admit(self, demand: Demand) -> list[tuple[float, float, int]] | None:
        """The job's minimum satisfactory share, taken from the plan; None (the plan left as
        it was) when no size meets its deadline."""
        if demand.deadline <= self.times[0]:
            return None
        for quota in demand.sizes:
            taken = self.fill(demand, quota)
            if taken is not None:
                self.take(taken)
                return taken
        return None


def feasible(plan: Plan, demands: list[Demand]) -> bool:
    """Whether every demand, earliest deadline first, gets its minimum satisfactory share."""
    return all(
        plan.admit(d) is not None for d in sorted(demands, key=lambda d: (d.deadline, d.key))
    )


def gpus(pods: Any) -> int:
    return math.ceil(sum(p.requests.get(GPU, 0) for p in pods) / 1000)


class ElasticFlow(Plugin):
    name = "elasticflow"
    per_job_admission = True  # each job's own deadline

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.session: Session | None = None
        self._deadlines = Deadlines()
        #: Verdict by job key: True admitted, False dropped (jobs never judged are absent).
        self.verdicts: dict[str, bool] = {}
        #: Admitted jobs with a deadline that have not finished (key → GPUs, duration).
        self.admitted: dict[str, tuple[int, float]] = {}
        self.dropped = 0

    def deadline(self, job: JobInfo) -> float:
        return self._deadlines.of(job.key, job.group.annotations)

    def job_order(self, job: JobInfo) -> float:
        return self.deadline(job)

    def job_valid(self, job: JobInfo) -> str | None:
        return DROPPED_REASON if self.verdicts.get(job.key) is False else None

    def on_session_open(self, session: Session) -> None:
        self.session = session
        arrivals = [j for j in session.jobs.values() if j.key not in self.verdicts]
        if arrivals:
            self._judge(session, arrivals)

    # -- admission ------------------------------------------------------------------------

    def _judge(self, session: Session, arrivals: list[JobInfo]) -> None:
        """Each arrival, in arrival order, is admitted or dropped by the test."""
        now = session.now
        state = session.state
        column = state.gpu_column
        total = 0
        if column < state.width:
            rows = state.schedulable[: state.n]
            total = int(state.allocatable[: state.n][rows, column].sum() // 1000)
        holds, waiting = self._running_and_waiting(session, now)
        for job in arrivals:
            if job.bound:
                self.verdicts[job.key] = True  # running already (placed before we saw it)
                continue
            demand = self._demand(job, now)
            if demand is None:
                self.verdicts[job.key] = True  # best effort
                continue
            if feasible(Plan(now, total, holds), [*waiting, demand]):
                self.verdicts[job.key] = True
                self.admitted[job.key] = (demand.sizes[0], demand.work)
                waiting.append(demand)
            else:
                self.verdicts[job.key] = False
                self.dropped += 1

    def _running_and_waiting(
        self, session: Session, now: float
    ) -> tuple[list[tuple[float, int]], list[Demand]]:
        """(end, GPUs) of the admitted jobs that run, and the demands of those that wait."""
        holds, waiting = [], []
        jobs = session.all_jobs
        for key in list(self.admitted):
            job = jobs.get(key)
            if job is None or not (job.bound or job.pending):
                del self.admitted[key]  # finished
                continue
            size, work = self.admitted[key]
            starts = [p.start_time for p in job.bound.values() if p.start_time is not None]
            if job.bound:
                start = min(starts) if starts else now
                holds.append((start + self._duration(job, work), size))
            else:
                demand = self._demand(job, now)
                if demand is not None:
                    waiting.append(demand)
        return holds, waiting

    @staticmethod
    def _duration(job: JobInfo, fallback: float) -> float:
        durations = [p.duration for p in job.bound.values() if p.duration is not None]
        return max(durations, default=fallback)

    def _demand(self, job: JobInfo, now: float) -> Demand | None:
        """A waiting job's demand (None: best effort, no deadline or no duration). A job
        brought back after a preemption carries what it had left as its pods' duration."""
        deadline = self.deadline(job)
        pods = list(job.pending)
        durations = [p.duration for p in pods]
        if deadline == math.inf or not durations or None in durations:
            return None
        size = gpus(pods)
        return Demand(job.key, deadline, max(durations), (size,), (1.0,))

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        """A job placed that was never judged (its pods were placed in the session it
        arrived in, before the test saw it) counts as admitted."""
        self.verdicts.setdefault(job.key, True)
