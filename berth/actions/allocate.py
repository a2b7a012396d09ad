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

import itertools

import numpy as np

from berth.actions.gang_turn import Tasks, allocate_turn
from berth.actions.network_topology import topology_turn
from berth.actions.turns import NextTurn, by_queue, schedulable_jobs, take_turns
from berth.api.objects import Pod
from berth.framework.job_info import JobInfo, PendingPods, TaskOrder
from berth.framework.session import Session


class Allocate:
    name = "allocate"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})

    def execute(self, session: Session) -> None:
        jobs = schedulable_jobs(session, "requesting")
        tasks: dict[str, Tasks] = {}
        gated = any(p.ready_needs_min_member for p in session.framework.job_readies)
        state = session.state
        beyond = BeyondEveryNode.of(session)

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
            return job.key not in tasks and beyond.rules_out(job)

        session.nodeless = set()
        try:
            take_turns(
                session,
                by_queue(jobs),
                turn,
                go_on=turn,
                passes=None if beyond is None else passes,
            )
        finally:
            session.nodeless = None
        session.allocated()


class BeyondEveryNode:
    """Turns that would find no node, told before they are taken: every class a job has left
    to try asks more of some resource than any node has free (``NodeSearch.fits_nowhere``).
    On a full cluster most admitted jobs are such in most sessions, and their turns were
    most of a session's cost.

    Such a turn places nothing and leaves no reason but the class that found no node
    (``Session.unplaced``), which is read only for a job whose wait for nodes is not yet
    explained: only explained jobs are ruled out, so that the skipped turn changes nothing.
    Between turns the nodes change only by committed placements, so the most free per
    resource only falls while allocate runs; it is taken again when the nodes changed, to
    stay tight, and only when an explained job asks (where none waits, nothing is paid).
    Not under a hold, in sampled search (each search moves the sample on) or while
    decisions are explained."""

    __slots__ = ("session", "ceiling", "position", "nowhere", "somewhere")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ceiling = Ceiling(np.zeros(0, dtype=np.int64))
        self.position = -1  # the state's log position the ceiling was taken at
        # Class keys found to fit nowhere (so they stay, the ceiling only falling) and to
        # maybe fit somewhere (until the nodes change).
        self.nowhere: set[tuple] = set()
        self.somewhere: set[tuple] = set()

    @classmethod
    def of(cls, session: Session) -> BeyondEveryNode | None:
        if (
            not session.explained
            or not session.state.n
            or session.explainer is not None
            or session.search.config.mode != "full"
        ):
            return None
        return cls(session)

    def rules_out(self, job: JobInfo) -> bool:
        """Whether ``job``'s first turn this cycle would find no node for any of its pods (all
        of them weighed, best-effort ones too, whether or not the turn reaches them), told
        from its kept task order.

        A job found so keeps the finding with its kept order (made again when a pod joins the
        job; one that leaves takes no class with it that the others lack), and it holds while
        the nodes' structure stays and no node has more free than then in any resource. Once
        the pod whose end opened a session is replaced, the most free is usually back at most
        where it was, and the backlog is not walked class by class again."""
        session = self.session
        if job.key not in session.explained or session.hold is not None:
            return False
        state, search = session.state, session.search
        kept = job.kept_order(search.key_flags())
        if kept is None or job.group.network_topology is not None:
            return False
        if state.log_position != self.position:
            n = state.n  # (a node that is not schedulable passes no filter)
            free = state.free[:n][state.schedulable[:n]].max(axis=0, initial=_NONE_FREE)
            self.ceiling = Ceiling(free)
            self.position = state.log_position
            self.somewhere.clear()
        epoch = state.structure_epoch
        found = kept.ruled_out
        if found is not None and found[0] == epoch and self.ceiling.at_most(found[1]):
            return True
        if not self._walk(kept, job.pending):
            return False
        kept.ruled_out = (epoch, self.ceiling)
        return True

    def _walk(self, kept: TaskOrder, pending: PendingPods) -> bool:
        """Whether each class of the kept order's runs left fits nowhere, judged by a pod of
        the run still waiting (the class compiled from it, as a turn would)."""
        search, ceiling = self.session.search, self.ceiling.free
        kept.advance(pending)
        pods, keys, run_end = kept.pods, kept.keys, kept.run_end
        nowhere, somewhere = self.nowhere, self.somewhere
        at = kept.head
        while at < len(pods):  # each run of a class
            key, end = keys[at], run_end[at]
            if key not in nowhere:
                if key in somewhere:
                    return False
                waiting = at
                while waiting < end and pods[waiting] not in pending:
                    waiting += 1
                if waiting < end:
                    if not search.fits_nowhere(search.compile(pods[waiting], key), ceiling):
                        somewhere.add(key)
                        return False
                    nowhere.add(key)
            at = end
        return at > kept.head


class Ceiling:
    """The most any schedulable node has free per resource, at one point of a run; and which
    earlier ceilings it is at most, asked once each (a class found to fit nowhere under one
    fits nowhere under any ceiling at most it)."""

    __slots__ = ("free", "serial", "below")

    _serials = itertools.count()

    def __init__(self, free: np.ndarray) -> None:
        self.free = free
        self.serial = next(Ceiling._serials)
        self.below: dict[int, bool] = {}

    def at_most(self, other: Ceiling) -> bool:
        if other is self:
            return True
        known = self.below.get(other.serial)
        if known is None:
            free = other.free
            known = len(free) == len(self.free) and bool((self.free <= free).all())
            self.below[other.serial] = known
        return known


#: The most free where no node is schedulable: every ask is above it.
_NONE_FREE = np.iinfo(np.int64).min

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
