"""Which jobs the placing actions serve, and in which order: queues take turns, jobs within a
queue go in job order, and both orders are asked afresh between turns.

Volcano's allocate, preempt and reclaim pop a queue, serve one job of it and push the queue
back, so that queue order (proportion's share, hierarchical DRF) sees every placement. Allocate
also pushes the job back while it has tasks left, so job order (DRF's share) is asked again too:
a job is served until it is ready (its gang complete), then one task per turn.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from berth.api.objects import GroupPhase
from berth.framework.job_info import JobInfo
from berth.framework.reasons import Overused
from berth.framework.session import Session

if TYPE_CHECKING:
    from berth.actions.parking import Parking

_ADMITTED = (GroupPhase.INQUEUE, GroupPhase.RUNNING)


def admitted(job: JobInfo, session: Session) -> bool:
    """Jobs the placing actions may serve; without an enqueue action every valid job is
    admitted."""
    if job.group.phase == GroupPhase.PENDING and not session.framework_has_enqueue:
        session.admit(job)
    return job.group.phase in _ADMITTED


def _admit_before_pods(job: JobInfo, session: Session) -> None:
    """A group waiting for its pods (a batch Job's has none until it is admitted); without an
    enqueue action it is admitted as soon as its queue can take jobs."""
    if job.group.phase != GroupPhase.PENDING:
        return
    reason = session.queue_problem(job)
    if reason:
        session.job_reasons[job.key] = reason
    else:
        session.admit(job)


#: Which pending pods an action places: those that request something (allocate), best-effort
#: ones (backfill), or any (preempt and reclaim).
Share = Literal["requesting", "best_effort", "any"]


def schedulable_jobs(
    session: Session, share: Share, skip: Mapping[str, object] | None = None
) -> list[JobInfo]:
    """Admitted, valid jobs with pending pods of the action's ``share``, but those whose keys
    are in ``skip``."""
    jobs = []
    if share == "best_effort":
        candidates = _best_effort_jobs(session)
    elif skip:  # most of a long backlog: the others are found at once
        candidates = session.servable_among(session.servable.keys() - skip.keys())
    else:
        candidates = None
    for job in session.servable_jobs() if candidates is None else candidates:
        if not job.pending:
            if not session.framework_has_enqueue:
                _admit_before_pods(job, session)
            continue
        if share == "best_effort" and len(job.pending) == job.requesting:
            continue
        if share == "requesting" and not job.requesting:
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


def _best_effort_jobs(session: Session) -> list[JobInfo] | None:
    """The servable jobs with best-effort pods pending, in the order they started waiting,
    told from the jobs best-effort pods were submitted to (``Session.best_effort``): on a long
    backlog of jobs that request resources, backfill then walks none. None where that is not
    known, or where a job with no pods pending may still be admitted here (no enqueue)."""
    keys = session.best_effort
    if keys is None or not session.framework_has_enqueue:
        return None
    every = session.all_jobs
    for key in [k for k in keys if (j := every.get(k)) is None or len(j.pending) == j.requesting]:
        keys.discard(key)
    return session.servable_among(keys)


def by_queue(jobs: list[JobInfo]) -> dict[str, list[JobInfo]]:
    queues: dict[str, list[JobInfo]] = {}
    for job in jobs:
        queues.setdefault(job.queue, []).append(job)
    return queues


class NextTurn:
    """Whether the job being served would be served next again were its turn to end now, and
    how many such further turns it took: its queue is not overused, no queue goes before it
    and no job of its queue goes before it. Asked with the pods of the open statement
    counted as placed, which is why it is offered only where every order plugin counts them
    so (``Plugin.orders_see_placements``) and serving a queue changes no other queue's key."""

    __slots__ = ("session", "name", "job", "line", "heap", "served", "skip_overused", "taken")

    def __init__(
        self,
        session: Session,
        name: str,
        job: JobInfo,
        line: _JobLine,
        heap: list[tuple[tuple, str]],
        served: int,
        skip_overused: bool,
    ) -> None:
        self.session, self.name, self.job, self.line = session, name, job, line
        self.heap, self.served, self.skip_overused = heap, served, skip_overused
        self.taken = 0

    def goes_on(self, ahead: int = 0, overused: bool | None = None) -> bool:
        """Whether the job goes next after its current turn, ``ahead`` turns past those
        taken; ``overused``: whether its queue is overused now, where the caller knows."""
        session, name, line = self.session, self.name, self.line
        line.settle()
        key = None
        if line.parked is not None or line:
            key = session.job_order_key(self.job)
            if line.goes_before(key):
                return False
        if self.heap:
            served = self.served + self.taken + ahead + 1  # the turns ended so far
            if self.heap[0] < (session.queue_order_key(name, served), name):
                return False
        if self.skip_overused and (session.overused(name) if overused is None else overused):
            return False
        if key is not None and line.parked is not None:
            line.took(key)
        return True


def take_turns(
    session: Session,
    queues: dict[str, list[JobInfo]],
    serve: Callable[[JobInfo], bool],
    skip_overused: bool = True,
    go_on: Callable[[JobInfo, NextTurn], bool] | None = None,
    passes: Callable[[JobInfo], bool] | None = None,
    parked: Parking | None = None,
) -> None:
    """Serve one job at a time from the queue that goes next in queue order, then the job that
    goes next in that queue in job order. ``serve`` returns whether the job wants another
    turn; it goes back with its key asked afresh. With ``skip_overused`` a queue that holds
    its deserved share gets no further turn. ``go_on``, where the orders allow it, serves
    instead of ``serve`` and may take further turns of the job itself, told by ``NextTurn``
    when the job would go next. ``passes``, asked before a turn, tells a turn that would
    change nothing (allocate's turns that would find no node): it is counted as taken, but not
    taken. ``parked``: jobs of one queue left out of its line whose turns would be passed
    (``berth.actions.parking``).

    Keys are asked when a job or queue is (re)queued: serving one job changes only its own
    job key and, unless a queue-order plugin ranks queues along a tree, only its own queue's
    key. A queue or job left alone goes next whatever its key, so its key is not asked."""
    lines = {
        name: _JobLine(
            session, jobs, parked if parked is not None and parked.queue == name else None
        )
        for name, jobs in queues.items()
    }
    served = dict.fromkeys(queues, 0)
    framework = session.framework
    shared = any(p.queue_order_shared for p in framework.queue_orders)
    orders = framework.job_orders + framework.queue_orders + framework.overuseds
    if shared or not all(p.orders_see_placements for p in orders):
        go_on = None
    # A queue alone is not ranked: its key would be compared with none.
    alone = len(queues) == 1
    heap = [(() if alone else session.queue_order_key(name, 0), name) for name in queues]
    heapq.heapify(heap)

    def one_turn(name: str, line: _JobLine, job: JobInfo) -> bool:
        if go_on is None:
            again = serve(job)
        else:
            turn = NextTurn(session, name, job, line, heap, served[name], skip_overused)
            again = go_on(job, turn)
            served[name] += turn.taken
        served[name] += 1
        return again

    while heap:
        _, name = heapq.heappop(heap)
        line = lines[name]
        line.settle()
        if skip_overused and session.overused(name):
            reason = Overused(name)
            line.rejoin()
            for waiting in line.jobs():
                session.job_reasons[waiting.key] = reason
            continue
        if not line:
            continue  # only parked jobs left: their turns would be passed
        job = line.next()
        taken = True  # (False: the queue's turn ended on a passed job)
        while passes is not None and passes(job):
            line.passed(job)
            served[name] += 1
            if heap or not line:
                taken = False
                break
            # Nothing changed, so alone in the only queue left the queue goes on without
            # being asked again whether it is overused.
            job = line.next()
        if taken:
            again = one_turn(name, line, job)
            while again and not heap:
                # Alone in the only queue left: nothing to re-rank it against.
                key = line.alone(job)
                if key is None:
                    break
                if skip_overused and session.overused(name):
                    session.job_reasons[job.key] = Overused(name)
                    line.rejoin()  # told so at the queue's next turn
                    again = False
                    break
                if line.parked is not None:
                    line.took(key)
                again = one_turn(name, line, job)
            if again:
                line.push(job)
        if line.waiting or line.again or line.parked is not None:
            if shared and heap:
                heap = [(session.queue_order_key(q, served[q]), q) for _, q in heap]
                heapq.heapify(heap)
            key = session.queue_order_key(name, served[name]) if heap else ()
            heapq.heappush(heap, (key, name))


class _JobLine:
    """A queue's jobs in job order: those not yet served in a list sorted once, last first,
    those served and back for another turn in a heap with their keys asked afresh; the next
    job is the smaller of the two heads (and of the parked jobs awake, ``parked``). The next
    waiting job's key is asked again when it is compared: under DRF's namespace order it
    moves as other jobs of its namespace are placed (and kept, the keys would cost the
    garbage collector a pass over them in each large session). Keys end with the job's
    unique key, so jobs are never compared."""

    __slots__ = ("session", "waiting", "again", "head", "parked", "last")

    def __init__(self, session: Session, jobs: list[JobInfo], parked: Parking | None) -> None:
        self.session = session
        self.waiting = sorted(jobs, key=session.job_order_key, reverse=True)
        self.again: list[tuple[tuple, JobInfo]] = []
        self.head: tuple | None = None  # the key of waiting[-1], once asked
        #: Jobs left out of the line whose turns would be passed while their groups sleep,
        #: and the greatest key a job was taken with: those after it would still be in line.
        self.parked = parked
        self.last: tuple | None = None

    def __bool__(self) -> bool:
        """Whether a job is left to take: parked ones are asked for only when no other is."""
        if self.waiting or self.again:
            return True
        parked = self.parked
        return parked is not None and parked.head() is not None

    def jobs(self) -> list[JobInfo]:
        return self.waiting + [job for _, job in self.again]

    def _head(self) -> tuple:
        """The key of the next job not yet served, asked once until it is served."""
        if self.head is None:
            self.head = self.session.job_order_key(self.waiting[-1])
        return self.head

    def goes_before(self, key: tuple) -> bool:
        """Whether a job of the line goes before one of job order ``key`` put back in it."""
        again = self.again
        if again and again[0][0] < key or self.waiting and self._head() < key:
            return True
        return self.parked is not None and self.parked.before(key)

    def next(self) -> JobInfo:
        """Take the job that goes next."""
        waiting, again, parked = self.waiting, self.again, self.parked
        if parked is not None:
            first = parked.head()
            if first is not None:
                if (not again or first < again[0][0]) and (not waiting or first < self._head()):
                    self.took(first)
                    return parked.pop()
        if again:
            if not waiting or again[0][0] < self._head():
                key, job = heapq.heappop(again)
                if parked is not None:
                    self.took(key)
                return job
        if parked is not None:
            self.took(self._head())
        self.head = None
        return waiting.pop()

    def push(self, job: JobInfo) -> None:
        key = self.session.job_order_key(job) if self.parked is not None or self else ()
        heapq.heappush(self.again, (key, job))

    def alone(self, job: JobInfo) -> tuple | None:
        """None unless ``job``, being served, would be taken next again with no other job
        compared with it: none waits or is back, and no awake parked one goes before it
        (one after it, taken only after it, changes nothing). Else its key with parked
        jobs, () without."""
        self.settle()
        if self.waiting or self.again:
            return None
        parked = self.parked
        if parked is None:
            return ()
        key = self.session.job_order_key(job)
        return None if parked.before(key) else key

    # -- parked jobs (berth.actions.parking) -------------------------------------------

    def took(self, key: tuple) -> None:
        """A job is taken (or goes on) with job order ``key`` as it is now: every sleeping
        parked job before it would have been passed by now."""
        if self.last is None or self.last < key:
            self.last = key

    def passed(self, job: JobInfo) -> None:
        """The turn of ``job``, just taken, is passed: parked at the end of the cycle."""
        if self.parked is not None:
            assert self.last is not None
            self.parked.passed.append((self.last, job))

    def settle(self) -> None:
        """Put the parked jobs back in line if their findings may no longer hold."""
        if self.parked is not None and self.parked.stale():
            self.rejoin()

    def rejoin(self) -> None:
        """Put back in line, in job order, the parked jobs that would still be in it (those
        after the greatest key a job was taken with, all before any was); none is parked in
        this cycle after that."""
        parked = self.parked
        if parked is None:
            return
        self.parked = None
        back = parked.rejoin(self.last)
        if back:
            key = self.session.job_order_key
            keyed = [(key(job), job) for job in self.waiting] + back
            keyed.sort(key=_first, reverse=True)
            self.waiting = [job for _, job in keyed]
            self.head = None


def _first(pair: tuple) -> tuple:
    return pair[0]
