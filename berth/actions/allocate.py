"""allocate: place the pending tasks of admitted jobs, queue by queue, job by job, as Volcano's
allocate does.

Queues take turns in queue order (the queue-order plugins', e.g. proportion's least share
first; without any, the queue served least this cycle goes next); a queue that is overused gets
no more turns this cycle. Within a queue jobs go in job order. A turn places the job's tasks,
in task order, through one Statement until the job is ready (gang: minMember placed), and keeps
them only if it is; a job that still has tasks goes back in line, and its later turns place one
task each. So shares are re-ranked after every placement, and three queues competing for one
node end up with a third each, not the whole node for the first. A task its queue refuses
(``allocatable``) or no node fits is dropped for this cycle.

Best-effort tasks are backfill's, once the job is ready; a gang that needs them to reach
minMember places them in its first turn, after its other tasks, so that it is never started
short of them (Volcano counts them as ready and leaves them to backfill). Nodes held for a
starving job (see the reservation plugin) take only the pods that will be gone before it
starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.actions.turns import by_queue, schedulable_jobs, take_turns
from berth.api.objects import Pod
from berth.framework.podclass import PodClass
from berth.framework.session import JobInfo, Session, Statement


@dataclass(slots=True)
class _Tasks:
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


def allocate_turn(job: JobInfo, session: Session, tasks: _Tasks, gated: bool = True) -> bool:
    """One turn: place tasks until the job is ready, and keep them only if it is. Returns
    whether the job has tasks left for another turn. With ``gated`` (a readiness plugin that
    wants minMember placed), readiness is not asked before that."""
    search = session.search
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


class Allocate:
    name = "allocate"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})

    def execute(self, session: Session) -> None:
        jobs = schedulable_jobs(session, "requesting")
        tasks: dict[str, _Tasks] = {}
        gated = any(p.ready_needs_min_member for p in session.framework.job_readies)

        def turn(job: JobInfo) -> bool:
            # Ordered at the job's first turn, and kept only for a job that gets another:
            # most jobs are served in one turn, and keeping what they leave costs the garbage
            # collector dearly on large clusters.
            left = tasks.pop(job.key, None) or _job_tasks(job, session)
            again = allocate_turn(job, session, left, gated)
            if again:
                tasks[job.key] = left
            return again

        take_turns(session, by_queue(jobs), turn)
        session.allocated()


def _job_tasks(job: JobInfo, session: Session) -> _Tasks:
    pending = job.pending
    if len(pending) == 1:  # most jobs are single pods: nothing to order
        return _Tasks(list(pending), job.requesting)
    ordered = sorted(pending, key=session.task_order_key)
    if job.requesting < len(ordered):  # best-effort pods go last
        ordered = [p for p in ordered if not p.best_effort] + [p for p in ordered if p.best_effort]
    return _Tasks(ordered, job.requesting)
