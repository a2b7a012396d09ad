"""edf: earliest deadline first, as the ElasticFlow artifact's ``edf`` schedule runs it.

A job's deadline is its ``berth.io/deadline`` annotation (``berth.api.deadline``; trace jobs
get one with ``simulate --deadlines``). Waiting jobs go by deadline, earliest first, jobs past
their deadline included (they are the earliest); jobs without one go after every job with
one, by arrival. Every job is admitted: a job that cannot meet its deadline still runs and is
counted as missed (the artifact's ``edf`` moves it to its declined list when it ends late).

With ``preempt`` (the default, true) a job may evict running jobs whose deadline is later
than its own, latest first (the artifact recomputes every job's GPUs in deadline order at
each event, so a job with an earlier deadline takes GPUs from later ones); jobs of equal
deadline never evict each other.
"""

from __future__ import annotations

import math
from typing import Any

from berth.api.deadline import Deadlines
from berth.framework.job_info import JobInfo
from berth.framework.plugin import RankingPlugin
from berth.framework.session import Session


class Edf(RankingPlugin):
    name = "edf"
    per_job_admission = True  # each job's own deadline
    job_answers_own = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.preempts = self.bool_arg("preempt", True)
        self.session: Session | None = None
        self._deadlines = Deadlines()
        self._latest: float | None = None

    def serves(self, point: str) -> bool:
        return self.preempts or point not in ("preemptable", "job_starving")

    def deadline(self, job: JobInfo) -> float:
        """The job's deadline; infinity without one (annotations do not change, so it is read
        once per job)."""
        return self._deadlines.of(job.key, job.group.annotations)

    def on_session_open(self, session: Session) -> None:
        self.session = session
        self._latest = None

    def job_order(self, job: JobInfo) -> float:
        return self.deadline(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Only a job with an earlier deadline than some running job's may preempt (gang, in
        the same tier, adds: short of its minMember)."""
        return self.preempts and self.deadline(job) < self._latest_running()

    def _latest_running(self) -> float:
        """The latest deadline among the jobs running as the session opened (−inf: none)."""
        if self._latest is None:
            latest = -math.inf
            session = self.session
            if session is not None:
                latest = max(map(self.deadline, session.holders()), default=latest)
            self._latest = latest
        return self._latest

    def victim_rank(self, job: JobInfo) -> float:
        """The running job with the latest deadline gives way first (``preempt: false``
        serves no preemptable at all)."""
        return self.deadline(job)
