"""A starving job's turn in preempt and reclaim: its tasks placed on idle room where they fit,
and on room an ``Evictor`` frees where they do not, in one statement kept only if the job is
then pipelined."""

from __future__ import annotations

from collections.abc import Callable

from berth.actions.eviction import Evictor
from berth.actions.network_topology import eviction_limit
from berth.framework.job_info import JobInfo
from berth.framework.podclass import PodClass
from berth.framework.session import Session


def running_by_queue(session: Session) -> dict[str, list[JobInfo]]:
    """Jobs holding nodes, per queue: where victims come from."""
    running: dict[str, list[JobInfo]] = {}
    for job in session.running_jobs():
        running.setdefault(job.queue, []).append(job)
    return running


def evict_for(
    session: Session,
    job: JobInfo,
    evictor: Evictor,
    victim_jobs: list[JobInfo],
    reason: str,
    may_evict: Callable[[PodClass], bool],
) -> None:
    """Place a starving job's tasks, on idle room where a task fits and by evicting where it
    does not, or where its queue would not take it (evicting within the queue frees share
    too), as long as ``may_evict`` agrees; while the job is still starving. A pod whose
    ``preemptionPolicy`` is Never takes no part. One statement covers it all: a job that is
    not then pipelined (gang: minMember placed) gets nothing and evicts nobody. A job with a
    hard network topology stays within its HyperNode (see ``eviction_limit``). Once a job did
    nothing, the jobs alike to it (``Evictor.alike``) are passed over while nothing changes:
    ``may_evict`` answers by the job's queue and the class alone."""
    allowed, region = eviction_limit(session, job)
    if not allowed:
        return
    alike = evictor.alike(job)
    before = None
    if alike is not None:
        victims = evictor.kept(victim_jobs, alike[-1])
        if victims is not None and alike in victims.futile:
            return
        before = evictor.table_key(alike[-1])
    session.region = region
    try:
        _evict_for(session, job, evictor, victim_jobs, reason, may_evict)
    finally:
        session.region = None
    if alike is not None and evictor.table_key(alike[-1]) == before:  # the job changed nothing
        victims = evictor.kept(victim_jobs, alike[-1])  # (made while the job was asked)
        if victims is not None:
            victims.futile.add(alike)


def _evict_for(
    session: Session,
    job: JobInfo,
    evictor: Evictor,
    victim_jobs: list[JobInfo],
    reason: str,
    may_evict: Callable[[PodClass], bool],
) -> None:
    search = session.search
    statement = session.statement()
    hopeless: set[tuple] = set()
    tasks = sorted(job.pending, key=session.task_order_key)
    left = len(tasks)
    for pod in tasks:
        left -= 1
        if not session.job_starving(job):
            break
        if not pod.may_preempt:
            continue
        cls = search.compile(pod)
        if cls.key in hopeless:
            continue
        row = search.place(cls) if session.region is None else session.place(job, pod, cls)
        if row is not None and session.allocatable(job, cls.request) is None:
            statement.allocate(job, pod, row, cls)
        elif not may_evict(cls) or not evictor.place(statement, job, pod, cls, victim_jobs, reason):
            hopeless.add(cls.key)
            if job.active + job.allocated + left < job.group.min_member:
                break  # the gang can no longer be completed this cycle
    if statement.has_placements and session.job_pipelined(job):
        statement.commit()
    else:
        statement.discard()
