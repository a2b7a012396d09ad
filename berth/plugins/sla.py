"""sla: jobs that have waited longer than their SLA go first and are admitted regardless
(Volcano's sla).

The waiting time is the ``sla-waiting-time`` argument (a Go duration such as "1h"), or per job
the PodGroup annotation of the same name, which wins. Jobs with an SLA are ordered by their
deadline (submission plus waiting time), ahead of jobs without one; a job past its deadline is
admitted by enqueue whatever the idle capacity or overcommit says, as long as sla sits in an
earlier tier than the plugins that would refuse it (or in the same one, where any refusal
wins).
"""

from __future__ import annotations

import math
from contextlib import suppress
from typing import Any

from berth.api.keys import SLA_WAITING_TIME_ANNOTATION
from berth.durations import DurationError, parse_duration
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, PluginArgumentError, Vote
from berth.framework.session import Session


class Sla(Plugin):
    name = "sla"
    admission_depends_on_time = True
    per_job_admission = True  # each job's own deadline
    job_answers_own = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        raw = self.arguments.get(SLA_WAITING_TIME_ANNOTATION)
        self.waiting_time: float | None = None
        if raw is not None:
            try:
                self.waiting_time = parse_duration(str(raw))
            except DurationError as exc:
                raise PluginArgumentError(
                    f"plugin {self.name}: argument {SLA_WAITING_TIME_ANNOTATION}: {exc}"
                ) from exc
        self.now = 0.0

    def on_session_open(self, session: Session) -> None:
        self.now = session.now

    def deadline(self, job: JobInfo) -> float:
        """When the job's wait exceeds its SLA; infinity without one. An annotation that is
        not a duration (manifest validation reports it) leaves the plugin's waiting time, as
        in Volcano."""
        waiting_time = self.waiting_time
        text = job.group.annotations.get(SLA_WAITING_TIME_ANNOTATION)
        if text is not None:
            with suppress(DurationError):
                waiting_time = parse_duration(text)
        if waiting_time is None:
            return math.inf
        return job.group.submit_time + waiting_time

    def job_order(self, job: JobInfo) -> float:
        return self.deadline(job)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return True if self.now >= self.deadline(job) else None
