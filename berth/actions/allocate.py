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
starts. A job with a ``networkTopology`` takes its turn within one HyperNode
(``berth.actions.network_topology``).
"""

from __future__ import annotations

from typing import ClassVar

from berth.actions.gang_turn import Tasks, allocate_turn
from berth.actions.network_topology import topology_turn
from berth.actions.parking import Parking
from berth.actions.ruled_out import BeyondEveryNode
from berth.actions.turns import NextTurn, by_queue, schedulable_jobs, take_turns
from berth.api.objects import Pod
from berth.framework.job_info import JobInfo, TaskOrder
from berth.framework.session import Session


class Allocate:
    name: ClassVar[str] = "allocate"
    reads_touched: ClassVar[bool] = True  # (Scheduler.touched, for the parking)

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})
        #: Jobs found to fit on no node, left out of the line while that holds.
        self.parking = Parking()

    def execute(self, session: Session) -> None:
        beyond = BeyondEveryNode.of(session)
        parking = self.parking
        parking.open(session, beyond if session.hold is None else None)
        jobs = schedulable_jobs(session, "requesting", skip=parking.where)
        queues = by_queue(jobs)
        parked = parking.line_up(queues)
        tasks: dict[str, Tasks] = {}
        gated = any(p.ready_needs_min_member for p in session.framework.job_readies)
        state = session.state

        def turn(job: JobInfo, next_turn: NextTurn | None = None) -> bool:
            # Ordered at the job's first turn, and kept only for a job that gets another:
            # most jobs are served in one turn, and keeping what they leave costs the garbage
            # collector dearly on large clusters.
            left = tasks.pop(job.key, None)
            if left is None:
                left = _job_tasks(job, session)
            if job.group.network_topology is not None and state.hypernodes:
                again = topology_turn(job, session, left, gated)
            else:
                again = allocate_turn(job, session, left, gated, next_turn=next_turn)
            if again:
                tasks[job.key] = left
            return again

        def passes(job: JobInfo) -> bool:  # (a job back for another turn is never ruled out)
            return job.key not in tasks and beyond is not None and beyond.rules_out(job)

        session.nodeless = set()
        try:
            take_turns(
                session,
                queues,
                turn,
                go_on=turn,
                passes=None if beyond is None else passes,
                parked=parked,
            )
        finally:
            session.nodeless = None
        if parked is not None and parked.session is not None:
            parking.park()
        session.allocated()


#: Jobs with at least this many pending pods keep their task order from their first turn on;
#: others from their second session on (most are placed in their first).
KEPT_ORDER = 64


def _job_tasks(job: JobInfo, session: Session) -> Tasks:
    pending = job.pending
    search = session.search
    flags = search.key_flags()
    kept = job.kept_order(flags)
    if kept is None:
        if len(pending) < KEPT_ORDER and not job.waited:
            job.waited = True
            job.task_order = None
            if len(pending) == 1:  # most jobs are single pods: nothing to order
                return Tasks(list(pending), job.requesting)
            return Tasks(_ordered(job, session), job.requesting)
        kept = job.task_order = _keep_order(job, session, flags)
    kept.advance(pending)
    return Tasks(
        kept.pods,
        kept.requesting,
        kept.head,
        keys=kept.keys,
        run_end=kept.run_end,
        pending=pending,
    )


def _ordered(job: JobInfo, session: Session) -> list[Pod]:
    """The job's pending pods in task order, best-effort ones last."""
    ordered = sorted(job.pending, key=session.task_order_key)
    if job.requesting < len(ordered):
        ordered = [p for p in ordered if not p.best_effort] + [p for p in ordered if p.best_effort]
    return ordered


def _keep_order(job: JobInfo, session: Session, flags: bool) -> TaskOrder:
    pods = _ordered(job, session)
    search = session.search
    canonical: dict[tuple, tuple] = {}
    keys = [canonical.setdefault(key, key) for key in map(search.key, pods)]
    requesting, count = job.requesting, len(pods)
    run_end = [0] * count
    end = count
    for at in range(count - 1, -1, -1):  # a run never crosses into the best-effort pods
        if at + 1 == count or at + 1 == requesting or keys[at] is not keys[at + 1]:
            end = at + 1
        run_end[at] = end
    return TaskOrder(pods, keys, run_end, requesting, job.pending.appended, flags)
