"""gang: a job runs only when at least minMember of its pods can run at once, and, when the
group sets per-task minimums (minTaskMember) that minMember covers, that many of each task.

Allocation goes through a Statement; a job whose placed tasks do not reach minMember is rolled
back whole, so no gang ever holds a partial set of nodes. Jobs not yet running are served before
jobs that are (Volcano's order), so a gang is not starved by its own running peers.
"""

from __future__ import annotations

from berth.api.objects import GroupPhase, task_name
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
        for task, need in _task_minimums(job).items():
            count = sum(1 for pod in job.pending if task_name(pod) == task)
            count += _bound(job, task)
            if count < need:
                return f"gang: task {task} {count}/{need}: waiting for pods"
        return None

    def job_ready(self, job: JobInfo) -> bool:
        if job.active + job.allocated < job.group.min_member:
            return False
        return all(
            _bound(job, task) + job.task_allocated.get(task, 0) >= need
            for task, need in _task_minimums(job).items()
        )

    def job_order(self, job: JobInfo) -> int:
        return 1 if job.active >= job.group.min_member else 0


def _task_minimums(job: JobInfo) -> dict[str, int]:
    """Per-task minimums, when minMember covers their sum; otherwise Volcano ignores them (a
    job that needs fewer pods than its tasks' minimums add up to can start without each)."""
    minimums = job.group.min_task_member
    if not minimums or job.group.min_member < sum(minimums.values()):
        return {}
    return minimums


def _bound(job: JobInfo, task: str) -> int:
    return sum(1 for pod in job.bound.values() if task_name(pod) == task)
