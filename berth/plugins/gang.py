"""gang: a job runs only when at least minMember of its pods can run at once.

Allocation goes through a Statement; a job whose placed tasks do not reach minMember is rolled
back whole, so no gang ever holds a partial set of nodes. Jobs not yet running are served before
jobs that are (Volcano's order), so a gang is not starved by its own running peers.
"""

from __future__ import annotations

from berth.api.objects import GroupPhase
from berth.framework.plugin import Plugin
from berth.framework.session import JobInfo


class Gang(Plugin):
    name = "gang"

    def job_valid(self, job: JobInfo) -> str | None:
        if job.group.owned and job.group.phase == GroupPhase.PENDING:
            return None  # a batch Job's pods are created only once its group is admitted
        have = job.active + len(job.pending)
        if have < job.group.min_member:
            return f"gang {have}/{job.group.min_member}: waiting for pods"
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return job.active + job.allocated >= job.group.min_member

    def job_order(self, job: JobInfo) -> int:
        return 1 if job.active >= job.group.min_member else 0
