"""One allocate turn of a job: place its tasks through one Statement until the job is ready
(gang: minMember placed) and keep them only if it is. Shared by allocate (plain, or within a
HyperNode for a job with a network topology) and backfill.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.actions import runs
from berth.actions.turns import NextTurn
from berth.api.objects import Pod
from berth.framework.job_info import JobInfo, PendingPods
from berth.framework.plugin import Reason
from berth.framework.podclass import PodClass
from berth.framework.search import NodeSearch
from berth.framework.session import Session
from berth.framework.statement import Statement


@dataclass(slots=True)
class Tasks:
    """What a job has left to try this cycle: its pods, requesting ones first, each part in
    task order, from ``next`` on; those before index ``requesting`` request something. And the
    pod classes already known not to fit.

    From a kept ``TaskOrder`` (``keys`` set), the lists may still hold pods that left the job
    (``pending`` tells), and a hopeless class skips its run of pods at once."""

    pods: list[Pod]
    requesting: int
    next: int = 0
    hopeless: set[tuple] = field(default_factory=set)
    keys: list[tuple] | None = None
    run_end: list[int] | None = None
    pending: PendingPods | None = None

    def more(self) -> bool:
        """Whether requesting pods are left to try this cycle."""
        pending = self.pending
        if pending is not None:
            pods, end = self.pods, self.requesting
            while self.next < end and pods[self.next] not in pending:
                self.next += 1
        return self.next < self.requesting

    def remaining(self, end: int, most: int | None = None) -> list[Pod]:
        """The pods from ``next`` up to index ``end`` still waiting (at most ``most``)."""
        rest = self.pods[self.next : end]
        pending = self.pending
        if pending is not None:
            rest = [pod for pod in rest if pod in pending]
        return rest if most is None else rest[:most]


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
    next_turn: NextTurn | None = None,
) -> bool:
    """One turn: place tasks until the job is ready, and keep them only if it is. Returns
    whether the job has tasks left for another turn. With ``gated`` (a readiness plugin that
    wants minMember placed), readiness is not asked before that. ``statement``: one the
    caller opened (empty), else a new one. With ``next_turn``, once the job is ready the
    turn goes on as the job's next turns, one pod each, while the job would go next anyway:
    in the same statement, with the same decisions."""
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
    short = _cannot_complete(job, session, tasks, end, floor)
    if short is not None:
        hopeless.add(short.cls.key)
        if short.queue_reason is None:
            session.unplaced[job.key] = short.cls
        else:
            session.job_reasons[job.key] = short.queue_reason
        tasks.next = end
    keys, run_end, pending = tasks.keys, tasks.run_end, tasks.pending
    nodeless = _nodeless(session)
    if nodeless is None:
        next_turn = None
    turn_start = 0  # where the current turn's placements start in the statement
    extended = False  # whether the turn went on as further turns
    while tasks.next < end:
        if ready:  # (only with ``next_turn``: the job is ready and may go next again)
            assert next_turn is not None
            if not (tasks.more() and next_turn.goes_on()):
                break
            next_turn.taken += 1
            ready, extended, end = False, True, tasks.requesting
            turn_start = statement.savepoint()
            continue
        at = tasks.next
        pod = pods[at]
        if keys is None:
            cls = search.compile(pod)
        elif pod not in pending:  # type: ignore[operator]  # left the job since its order was made
            tasks.next = at + 1
            continue
        elif hold is None and keys[at] in hopeless:
            tasks.next = min(run_end[at], end)  # type: ignore[index]
            continue
        else:
            cls = search.compile(pod, keys[at])
        tasks.next = at + 1
        mark = cls.key if hold is None else placement_mark(session, job, pod, cls)
        if mark in hopeless:
            continue
        pace = None if nodeless is None or mark in nodeless else runs.pace(cls)
        if pace is not None and pace.size > 1:
            # Before the gang is whole its pods go in one turn; after, one a turn (going on).
            need = floor - len(job.bound) - job.allocated
            on = next_turn if extended else None
            most = pace.size if on is not None else min(need, pace.size)
            block = _run_block(tasks, at, end, cls, search, most) if most > 1 else []
            if len(block) > 1:
                kept, entered = runs.place_run(
                    session, statement, job, cls, [pods[i] for i in block], on
                )
                if kept:
                    tasks.next = block[kept - 1] + 1
                    if on is not None:
                        on.taken += entered
                    if entered == kept:  # the next pod's turn has begun, nothing placed yet
                        turn_start = statement.savepoint()
                        continue
                    if len(job.bound) + job.allocated >= floor:
                        ready = session.job_ready(job)
                        if ready and next_turn is None:
                            break
                    continue
        if nodeless is None or cls.global_filters:
            row = session.place(job, pod, cls)
        else:
            row = None if mark in nodeless else session.place(job, pod, cls)
            if row is None and statement.savepoint() == turn_start:
                nodeless.add(mark)
        if pace is not None and row is not None:
            pace.placed(row)
        if row is None:
            hopeless.add(mark)
            session.unplaced[job.key] = cls
            placed = job.active + job.allocated
            if placed < min_member and placed + len(tasks.remaining(end)) < min_member:
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
            if ready and next_turn is None:
                break
    if ready and keep_if_ready(statement, session, job, ready):
        return tasks.more()
    if extended:  # the last turn placed nothing: the ones before it stand
        statement.rollback(turn_start)
        keep_if_ready(statement, session, job, True)
        return False
    statement.discard()
    return False


def _run_block(
    tasks: Tasks, at: int, end: int, cls: PodClass, search: NodeSearch, most: int
) -> list[int]:
    """Indices of the pods from ``at`` on, up to ``end``, that are of ``cls`` and still
    waiting (``at`` is): at most ``most``, ending at the first pod of another class."""
    pods, pending = tasks.pods, tasks.pending
    block = [at]
    if tasks.keys is not None:  # a kept order knows where the class's run ends
        for i in range(at + 1, min(tasks.run_end[at], end)):  # type: ignore[index]
            if len(block) >= most:
                break
            if pods[i] in pending:  # type: ignore[operator]
                block.append(i)
        return block
    for i in range(at + 1, end):
        if len(block) >= most or search.compile(pods[i]) is not cls:
            break
        block.append(i)
    return block


def _nodeless(session: Session) -> set[tuple] | None:
    """The classes allocate found no node for this cycle while nothing was tentatively placed,
    or None where that cannot be relied on. In allocate capacity only shrinks: a statement
    undone gives back only what it took after such a find. So a class whose filters each look
    at a node's own row alone (no pod affinity or spread, which a placement can satisfy) finds
    no node again until the cycle ends, and its later pods skip the search. Not under a hold,
    within a HyperNode, with a topology bonus, in sampled search (a sample is not every node)
    or while decisions are explained."""
    if (
        session.nodeless is None
        or session.hold is not None
        or session.region is not None
        or session.bonus is not None
        or session.explainer is not None
        or session.search.config.mode != "full"
    ):
        return None
    return session.nodeless


@dataclass(slots=True, frozen=True)
class Shortfall:
    """Why a gang's turn cannot complete, known before any of its pods is placed: the nodes'
    room for its class (``queue_reason`` None), or its queue's room (that refusal)."""

    cls: PodClass
    queue_reason: Reason | None = None


def _cannot_complete(
    job: JobInfo, session: Session, tasks: Tasks, end: int, floor: int
) -> Shortfall | None:
    """What the turn would find if the gang's remaining pods, all of one class, were tried one
    by one: some placed, then the next refused, and the lot undone.

    - The nodes' room (the filters' bound) is short of what the gang still needs while its
      queue would take that many: no node for a later pod, that class the reason.
    - The queue refuses a pod first (the m-th) while the nodes hold m: the queue's refusal of
      the m-th pod is the reason. Only where the nodes' room is exact and the queue plugins
      can tell m and that reason without placing (``allocatable_additive``): on a long backlog,
      gangs of a queue at its share were placed and undone in every session.

    Anything else (pods of several classes, held or bounded regions, explained pods, sampled
    search) takes the turn as usual."""
    need = floor - len(job.bound) - job.allocated
    if need < 2 or session.hold is not None or session.explainer is not None:
        return None
    search = session.search
    if session.region is not None or session.bonus is not None or search.config.mode != "full":
        return None  # (a sampled search moves on with every pod it places)
    rest = tasks.remaining(end)
    if len(rest) < need:
        return None
    keys = tasks.keys
    # A kept task order knows its runs of one class: no pod need be classed again.
    one_run = keys is not None and tasks.run_end[tasks.next] >= end  # type: ignore[index]
    cls = search.compile(rest[0], keys[tasks.next] if one_run else None)  # type: ignore[index]
    room = search.room(cls)
    if room is None:
        return None
    additive = session.allocatable_additive
    exact = additive and search.room_exact(cls)
    if room >= need and not exact:
        return None  # (the common case: asked before compiling every pod of the gang)
    if not one_run and any(search.compile(pod) is not cls for pod in rest[1:]):
        return None
    most = min(room, need)
    if not additive:  # (so the nodes' room is short)
        return None if session.allocatable(job, cls.request * most) else Shortfall(cls)
    taken = session.allocatable_pods(job, cls.request, most)
    if taken >= most:
        return Shortfall(cls) if room < need else None
    if cls.key in tasks.hopeless or not exact:
        return None  # (a hopeless class's pods are skipped as they are)
    return Shortfall(cls, session.allocatable_after(job, cls.request, taken))


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
