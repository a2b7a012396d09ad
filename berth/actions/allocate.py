"""allocate: place the pending tasks of admitted jobs, queue by queue, job by job.

Queues take turns (the queue that has been served least this cycle goes next); within a queue
jobs go in job order. Each job's tasks are placed through one Statement and kept only if the job
is then ready (gang), so a job never holds a partial set. A job's best-effort tasks ride in the
same Statement, so a gang mixing both kinds is still all-or-nothing.
"""

from __future__ import annotations

import heapq

from berth.api.objects import GroupPhase
from berth.framework.session import JobInfo, Session

_ADMITTED = (GroupPhase.INQUEUE, GroupPhase.RUNNING)


def admitted(job: JobInfo, session: Session) -> bool:
    """Jobs the allocator may serve; without an enqueue action every valid job is admitted."""
    if job.group.phase == GroupPhase.PENDING and not session.framework_has_enqueue:
        job.group.phase = GroupPhase.INQUEUE
    return job.group.phase in _ADMITTED


def schedulable_jobs(session: Session, best_effort_only: bool) -> list[JobInfo]:
    """Admitted, valid jobs whose pending tasks are all best-effort (backfill's share) or
    include at least one task with requests (allocate's share)."""
    jobs = []
    for job in session.jobs.values():
        if not job.pending:
            continue
        if all(p.best_effort for p in job.pending) != best_effort_only:
            continue
        reason = session.job_valid(job) or session.queue_problem(job)
        if reason:
            session.job_reasons[job.key] = reason
            continue
        if admitted(job, session):
            jobs.append(job)
    return jobs


def allocate_job(job: JobInfo, session: Session) -> None:
    """Place as many of the job's pending tasks as fit; keep them only if the job is ready."""
    search = session.search
    statement = session.statement()
    tasks = sorted(job.pending, key=session.task_order_key)
    hopeless: set[tuple] = set()
    left = len(tasks)
    for pod in tasks:
        left -= 1
        cls = search.compile(pod)
        if cls.key in hopeless:
            continue
        over = session.queue_overflow(job, cls.request)
        if over:
            session.job_reasons[job.key] = over
            break
        row = search.place(cls)
        if row is None:
            hopeless.add(cls.key)
            if job.active + job.allocated + left < job.group.min_member:
                break  # the gang can no longer be completed this cycle
            continue
        statement.allocate(job, pod, row, cls)
    if statement.ops and session.job_ready(job):
        statement.commit()
    else:
        statement.discard()


class Allocate:
    name = "allocate"

    def execute(self, session: Session) -> None:
        by_queue: dict[str, list[JobInfo]] = {}
        for job in schedulable_jobs(session, best_effort_only=False):
            by_queue.setdefault(job.queue, []).append(job)
        heap = []
        for name, jobs in by_queue.items():
            jobs.sort(key=session.job_order_key, reverse=True)  # pop() takes the first
            heap.append((0, name))
        heapq.heapify(heap)
        while heap:
            served, name = heapq.heappop(heap)
            jobs = by_queue[name]
            allocate_job(jobs.pop(), session)
            if jobs:
                heapq.heappush(heap, (served + 1, name))
