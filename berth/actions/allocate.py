"""allocate: place the pending tasks of admitted jobs, queue by queue, job by job.

Queues take turns in queue order (the queue-order plugins', e.g. proportion's least share
first; without any, the queue served least this cycle goes next); a queue that is overused gets
no more turns this cycle. Within a queue jobs go in job order. Each job's tasks are placed
through one Statement and kept only if the job is then ready (gang), so a job never holds a
partial set; the queue must be allocatable for each task. A job's best-effort tasks ride in the
same Statement, so a gang mixing both kinds is still all-or-nothing. Nodes held for a starving
job (see the reservation plugin) take only the pods that will be gone before it starts.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from berth.api.objects import GroupPhase
from berth.framework.session import JobInfo, Session

_ADMITTED = (GroupPhase.INQUEUE, GroupPhase.RUNNING)


def admitted(job: JobInfo, session: Session) -> bool:
    """Jobs the allocator may serve; without an enqueue action every valid job is admitted."""
    if job.group.phase == GroupPhase.PENDING and not session.framework_has_enqueue:
        job.group.phase = GroupPhase.INQUEUE
    return job.group.phase in _ADMITTED


def _admit_before_pods(job: JobInfo, session: Session) -> None:
    """A batch Job's group has no pods until it is admitted; without an enqueue action it is
    admitted as soon as its queue can take jobs."""
    if job.group.phase != GroupPhase.PENDING:
        return
    reason = session.queue_problem(job)
    if reason:
        session.job_reasons[job.key] = reason
    else:
        job.group.phase = GroupPhase.INQUEUE


def schedulable_jobs(session: Session, best_effort_only: bool) -> list[JobInfo]:
    """Admitted, valid jobs whose pending tasks are all best-effort (backfill's share) or
    include at least one task with requests (allocate's share)."""
    jobs = []
    for job in session.jobs.values():
        if not job.pending:
            if job.group.owned and not session.framework_has_enqueue:
                _admit_before_pods(job, session)
            continue
        if job.only_best_effort() != best_effort_only:
            continue
        if job.group.phase == GroupPhase.PENDING and session.framework_has_enqueue:
            continue  # not admitted: enqueue has already said why
        reason = session.job_valid(job) or session.queue_problem(job)
        if reason:
            session.job_reasons[job.key] = reason
            continue
        if admitted(job, session):
            jobs.append(job)
    return jobs


def by_queue(session: Session, jobs: list[JobInfo]) -> dict[str, list[JobInfo]]:
    """Jobs per queue, each list in reverse job order so that ``pop()`` takes the first."""
    queues: dict[str, list[JobInfo]] = {}
    for job in jobs:
        queues.setdefault(job.queue, []).append(job)
    for queued in queues.values():
        queued.sort(key=session.job_order_key, reverse=True)
    return queues


def allocate_job(job: JobInfo, session: Session) -> None:
    """Place as many of the job's pending tasks as fit; keep them only if the job is ready."""
    search = session.search
    statement = session.statement()
    tasks = sorted(job.pending, key=session.task_order_key)
    hopeless: set[tuple] = set()
    hold = session.hold
    left = len(tasks)
    for pod in tasks:
        left -= 1
        cls = search.compile(pod)
        # Under a hold, pods of one class differ in whether they may use the held nodes.
        mark = cls.key if hold is None else (cls.key, hold.lets(job, pod, session.now))
        if mark in hopeless:
            continue
        row = session.place(job, pod, cls)
        if row is None:
            hopeless.add(mark)
            if job.active + job.allocated + left < job.group.min_member:
                break  # the gang can no longer be completed this cycle
            continue
        # Asked only once a node fits, so that a full cluster is reported as such.
        over = session.allocatable(job, cls.request)
        if over:
            session.job_reasons[job.key] = over
            break
        statement.allocate(job, pod, row, cls)
    if statement.has_placements and session.job_ready(job):
        statement.commit()
        if hold is not None and hold.job == job.key:
            session.hold = None  # it has started: the jobs after it may use its nodes
    else:
        statement.discard()


def take_turns(
    session: Session,
    queues: dict[str, list[JobInfo]],
    serve: Callable[[JobInfo], None],
    skip_overused: bool = True,
) -> None:
    """Serve one job at a time from the queue that goes next in queue order (asked afresh
    after each job, since serving changes shares); with ``skip_overused`` a queue that holds
    its deserved share gets no further turn."""
    served = dict.fromkeys(queues, 0)
    heap = [(session.queue_order_key(name, 0), name) for name in queues]
    heapq.heapify(heap)
    while heap:
        _, name = heapq.heappop(heap)
        jobs = queues[name]
        if skip_overused and session.overused(name):
            for job in jobs:
                session.job_reasons[job.key] = f"queue {name} is overused"
            continue
        serve(jobs.pop())
        served[name] += 1
        if jobs:
            # A queue left alone goes next whatever its key, so skip asking the plugins.
            key = session.queue_order_key(name, served[name]) if heap else ()
            heapq.heappush(heap, (key, name))


class Allocate:
    name = "allocate"

    def execute(self, session: Session) -> None:
        queues = by_queue(session, schedulable_jobs(session, best_effort_only=False))
        take_turns(session, queues, lambda job: allocate_job(job, session))
        session.allocated()
