"""themis: finish-time fairness in leases (Themis, NSDI'20), as the ElasticFlow artifact's
``themis`` schedule runs it (``themis_sim_jobs``, after Gavel's implementation).

At every lease (``lease`` seconds, the artifact's 60 s slot) each job j of g_j GPUs gets a
share x_j in [0, 1] of its GPUs that minimizes the largest finish-time fairness

    rho_j = (age_j + remaining_j / x_j) / isolated_j,   subject to  sum g_j x_j <= GPUs,

where age_j is the time since its submission, remaining_j its run time left at full speed and
isolated_j its run time on a 1/N share of the cluster (N the jobs there are: its duration over
min(ceil(GPUs / N) / g_j, 1)). The problem is solved exactly by bisection on rho (at a given
rho every job's x_j is the least that reaches it). Jobs then go by x_j, largest first (the
artifact divides x_j by the leases a job has received, a count it never increases, so its
order is x_j's), and fill the GPUs greedily; a job ranked above a running one evicts it
(``preemptable``) at the next lease, so a job keeps its GPUs for a lease at least.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import PluginArgumentError, RankingPlugin
from berth.framework.session import Session
from berth.resources import GPU

#: Bisection steps on rho: the interval shrinks 2^-60, below float precision.
STEPS = 60


def fair_shares(
    gpus: np.ndarray, age: np.ndarray, remaining: np.ndarray, isolated: np.ndarray, total: float
) -> np.ndarray:
    """Each job's x in [0, 1] minimizing max (age + remaining / x) / isolated within ``total``
    GPUs (jobs with nothing left get 0)."""
    x = np.zeros(len(gpus))
    live = remaining > 0
    if not live.any():
        return x
    g, a, r, iso = gpus[live], age[live], remaining[live], isolated[live]

    def need(rho: float) -> np.ndarray:
        slack = rho * iso - a
        with np.errstate(divide="ignore"):
            return np.where(slack > 0, r / np.maximum(slack, 1e-300), np.inf)

    low = float(((a + r) / iso).max())  # every job at x = 1
    if float((g * np.minimum(need(low), 1.0)).sum()) <= total:
        x[live] = np.minimum(need(low), 1.0)
        return x
    high = low * 2
    while float((g * need(high)).sum()) > total:
        high *= 2
    for _ in range(STEPS):
        middle = (low + high) / 2
        if float((g * need(middle)).sum()) > total:
            low = middle
        else:
            high = middle
    x[live] = np.minimum(need(high), 1.0)
    return x


def job_gpus(job: JobInfo) -> float:
    pods = [*job.pending, *job.bound.values()]
    return sum(p.requests.get(GPU, 0) for p in pods) / 1000


class Themis(RankingPlugin):
    name = "themis"
    per_job_admission = True  # each job's own share

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.lease = self.float_arg("lease", 60.0)
        if self.lease <= 0:
            raise PluginArgumentError(f"plugin {self.name}: argument lease: expected seconds > 0")
        self.session: Session | None = None
        self.now = 0.0
        self.shares: dict[str, float] = {}
        self.placed: set[str] = set()
        self._seeded = False
        self._smallest_running = 0.0

    def on_session_open(self, session: Session) -> None:
        self.session = session
        self.now = session.now
        if not self._seeded:
            self._seeded = True
            self.placed.update(key for key, job in session.all_jobs.items() if job.bound)
        jobs = dict(session.jobs)
        for key in list(self.placed):
            job = session.all_jobs.get(key)
            if job is None or not job.bound:
                self.placed.discard(key)
            else:
                jobs[key] = job
        self.shares = self._solve(session, list(jobs.values()))
        running = [self.shares.get(k, 0.0) for k in self.placed]
        self._smallest_running = min(running, default=math.inf)

    def _solve(self, session: Session, jobs: list[JobInfo]) -> dict[str, float]:
        known = [(j, d) for j in jobs if (d := self._duration(j)) is not None]
        if not known:
            return {}
        jobs = [j for j, _ in known]
        state = session.state
        total = 0.0
        if state.gpu_column < state.width:
            rows = state.schedulable[: state.n]
            total = float(state.allocatable[: state.n][rows, state.gpu_column].sum() / 1000)
        gpus = np.array([max(job_gpus(j), 1e-3) for j in jobs])
        duration = np.array([d for _, d in known], dtype=np.float64)
        remaining = np.array([self._remaining(j, d) for j, d in known], dtype=np.float64)
        age = np.array([max(self.now - j.group.submit_time, 0.0) for j in jobs])
        fair = np.minimum(math.ceil(total / len(jobs)) / gpus, 1.0)
        isolated = np.maximum(duration, 1e-9) / fair
        x = fair_shares(gpus, age, remaining, isolated, total)
        return {j.key: float(v) for j, v in zip(jobs, x.tolist(), strict=True)}

    @staticmethod
    def _duration(job: JobInfo) -> float | None:
        durations = [p.duration for p in (*job.pending, *job.bound.values())]
        return None if not durations or None in durations else max(durations)

    def _remaining(self, job: JobInfo, duration: float) -> float:
        """Run time left: a waiting job's ``duration`` (a job brought back after a preemption
        carries what it had left), a running one's less what it has run."""
        starts = [p.start_time for p in job.bound.values() if p.start_time is not None]
        ran = max(self.now - min(starts), 0.0) if starts else 0.0
        return max(duration - ran, 0.0)

    def share(self, job: JobInfo) -> float:
        return self.shares.get(job.key, 0.0)

    def job_order(self, job: JobInfo) -> float:
        return -self.share(job)

    def job_starving(self, job: JobInfo) -> bool:
        return self.share(job) > self._smallest_running

    def victim_rank(self, job: JobInfo) -> float:
        """The job with the smallest share gives way first."""
        return -self.share(job)

    def gives_way(self, job: JobInfo) -> bool:
        """Once its lease is over: it has run a whole lease since it started."""
        starts = [p.start_time for p in job.bound.values() if p.start_time is not None]
        return bool(starts) and self.now - min(starts) >= self.lease

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        self.placed.add(job.key)

    def next_change(self, session: Session) -> float | None:
        """The next lease's end, while that can change something: a job with a share waits
        (a job without a known run time has none, and gains nothing by waiting), and a
        running job's lease is still to run out, or its share is not yet below the waiting
        job's (a waiting job's share grows with time). Otherwise a job that can never be
        placed would have the run wake at every lease for ever."""
        waiting = [self.share(j) for j in session.jobs.values() if j.pending and not j.bound]
        waiting = [share for share in waiting if share > 0]
        if not waiting:
            return None
        jobs = session.all_jobs
        running = [jobs[k] for k in self.placed if k in jobs]
        lowest = min(waiting)
        if not any(not self.gives_way(j) or self.share(j) >= lowest for j in running):
            return None
        return math.floor(self.now / self.lease) * self.lease + self.lease
