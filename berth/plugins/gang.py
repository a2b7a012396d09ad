"""gang: a job runs only when at least minMember of its pods can run at once, and, when the
group sets per-task minimums (minTaskMember) that minMember covers, that many of each task.

Allocation goes through a Statement; a job whose placed tasks do not reach minMember is rolled
back whole, so no gang ever holds a partial set of nodes. Only placed pods count: Volcano also
counts a gang's pending best-effort pods as ready and backfills them afterwards, which leaves
the gang short when one of them finds no pod slot; berth places them with the gang instead
(see allocate and backfill). Jobs not yet running are served before jobs that are (Volcano's
order), so a gang is not starved by its own running peers.

As a victim a job keeps minMember of its pods: gang lets preempt and reclaim take only what a
job holds above minMember (Volcano's vote). Where a tier without gang decides instead (gang
switched off, or finding no victim so that the next tier is asked), the eviction action still
keeps every gang whole: it takes surplus pods or all of a job's pods, never some of its
minMember (Volcano would take single pods there).
"""

from __future__ import annotations

from berth.api.objects import GroupPhase, Pod, task_name
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin
from berth.framework.session import Session


class Gang(Plugin):
    name = "gang"
    ready_needs_min_member = True
    orders_see_placements = True
    job_answers_own = True  # the job's own pods against its minMember

    def on_session_open(self, session: Session) -> None:
        self.session = session

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

    def job_pipelined(self, job: JobInfo) -> bool:
        return self.job_ready(job)

    def job_starving(self, job: JobInfo) -> bool:
        return job.active + job.allocated < job.group.min_member

    def job_order(self, job: JobInfo) -> int:
        # Placed pods count, as Volcano counts allocated tasks as ready.
        return 1 if job.active + job.allocated >= job.group.min_member else 0

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        return _keeping_gangs(self.session, candidates)

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        return _keeping_gangs(self.session, candidates)


def _keeping_gangs(session: Session, candidates: list[Pod]) -> list[Pod]:
    """The candidates (in order) each victim job can lose and still hold minMember pods."""
    left: dict[str, int] = {}
    victims = []
    for candidate in candidates:
        job = session.job_of(candidate)
        if job is None:
            continue
        surplus = left.setdefault(job.key, job.active - job.group.min_member)
        if surplus > 0:
            left[job.key] = surplus - 1
            victims.append(candidate)
    return victims


def _task_minimums(job: JobInfo) -> dict[str, int]:
    """Per-task minimums, when minMember covers their sum; otherwise Volcano ignores them (a
    job that needs fewer pods than its tasks' minimums add up to can start without each)."""
    minimums = job.group.min_task_member
    if not minimums or job.group.min_member < sum(minimums.values()):
        return {}
    return minimums


def _bound(job: JobInfo, task: str) -> int:
    return sum(1 for pod in job.bound.values() if task_name(pod) == task)
