"""One allocate turn of a job: place its tasks through one Statement until the job is ready
(gang: minMember placed) and keep them only if it is. Shared by allocate (plain, or within a
HyperNode for a job with a network topology) and backfill.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.podclass import PodClass
from berth.framework.session import Session
from berth.framework.statement import Statement


@dataclass(slots=True)
class Tasks:
    """What a job has left to try this cycle: its pods, requesting ones first, each part in
    task order, from ``next`` on; ``requesting`` of them request something. And the pod
    classes already known not to fit."""

    pods: list[Pod]
    requesting: int
    next: int = 0
    hopeless: set[tuple] = field(default_factory=set)


def placement_mark(session: Session, job: JobInfo, pod: Pod, cls: PodClass) -> tuple:
    """What makes two pods of a job equally placeable: their class and, under a hold,
    whether they may use the held nodes."""
    hold = session.hold
    return cls.key if hold is None else (cls.key, hold.lets(job, pod, session.now))


def allocate_turn(
    job: JobInfo,
    session: Session,
    tasks: Tasks,
    gated: bool = True,
    statement: Statement | None = None,
) -> bool:
    """One turn: place tasks until the job is ready, and keep them only if it is. Returns
    whether the job has tasks left for another turn. With ``gated`` (a readiness plugin that
    wants minMember placed), readiness is not asked before that. ``statement``: one the
    caller opened (empty), else a new one."""
    search = session.search
    if statement is None:
        statement = session.statement()
    pods = tasks.pods
    hopeless = tasks.hopeless
    hold = session.hold
    end = len(pods)
    if tasks.requesting < end and session.job_ready(job):
        end = tasks.requesting  # a job already ready leaves its best-effort pods to backfill
    min_member = job.group.min_member
    floor = min_member if gated else 0
    ready = False
    while tasks.next < end:
        pod = pods[tasks.next]
        tasks.next += 1
        cls = search.compile(pod)
        mark = cls.key if hold is None else placement_mark(session, job, pod, cls)
        if mark in hopeless:
            continue
        row = session.place(job, pod, cls)
        if row is None:
            hopeless.add(mark)
            session.unplaced[job.key] = cls
            if job.active + job.allocated + end - tasks.next < min_member:
                break  # the gang can no longer be completed this cycle
            continue
        # Asked only once a node fits, so that a full cluster is reported as such. The queue's
        # room only shrinks during allocate, so the class stays refused this cycle.
        over = session.allocatable(job, cls.request)
        if over:
            session.job_reasons[job.key] = over
            hopeless.add(mark)
            continue
        statement.allocate(job, pod, row, cls)
        if len(job.bound) + job.allocated >= floor:
            ready = session.job_ready(job)
            if ready:
                break
    if ready and keep_if_ready(statement, session, job, ready):
        return tasks.next < tasks.requesting
    statement.discard()
    return False


def keep_if_ready(
    statement: Statement, session: Session, job: JobInfo, ready: bool | None = None
) -> bool:
    """Commit what ``statement`` placed for ``job`` if the job is ready (``ready``, when the
    caller already knows), else undo it. A held job that starts releases its nodes to the jobs
    after it."""
    if ready is None:
        ready = session.job_ready(job)
    if not (ready and statement.has_placements):
        statement.discard()
        return False
    statement.commit()
    hold = session.hold
    if hold is not None and hold.job == job.key:
        session.hold = None
    return True
