"""What proportion and capacity share: each queue's deserved share, real capability, guarantee
and use, and the queue-level extension points answered from them.

The two plugins differ only in where ``deserved`` and the real capability come from (water
filling by weight, or the Queue's own figures over a hierarchy) and in which queues a placement
counts against (the queue alone, or the queue and its ancestors). Use is kept exact during a
session through the allocation hooks, so a share seen after a placement or an eviction is
already the new one.

Figures are matrices with a row per queue and a float column per share resource (every
resource but the pod count), so a session's set-up is a handful of array operations however
many queues there are; ``index`` maps queue names to rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from berth.api.objects import Pod, Queue
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, Refusal, Vote
from berth.framework.queues import EPSILON, ShareColumns, dominant_share, stacked
from berth.framework.session import Session
from berth.resources import format_amount


def no_room(room: np.ndarray) -> np.ndarray | np.bool_:
    """Whether ``room`` (from ``room_holding``: one vector, or one per row) leaves nothing in
    any resource: what makes a queue full (one bool for one vector)."""
    return ~(room > 2 * EPSILON).any(axis=-1)


class QueueShare(Plugin):
    allocatable_additive = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.columns = ShareColumns()
        self._queues_key: tuple = ()
        self._limited_by: tuple[np.ndarray, np.ndarray] | None = None

    def on_session_open(self, session: Session) -> None:
        self.session = session
        columns = self.columns
        columns.bind(session.state)
        self.total = columns.of(session.total)
        self._queue_rows(session)
        self.inqueue = np.zeros_like(self.guarantee)
        self._shares: dict[int, float] = {}
        self._rooms: dict[int, np.ndarray] = {}
        self._full: dict[int, bool] = {}  # whether the room is nil (see ``full``)
        self._count_held(session.queue_allocated)
        # Filled by ``divide``: Volcano's realCapability, and the deserved share.
        self.capability, self.deserved = self.divide(session)
        self.limits = self.limit()
        capability, total = self.capability, self.total
        made = self._limited_by
        if made is None or made[0] is not capability or made[1] is not total:
            #: Where a queue's real capability is below the cluster's total.
            self.limited = capability < total - EPSILON
            #: Per queue row, whether any of its resources is limited.
            self.any_limited: list[bool] = np.asarray(self.limited.any(axis=-1)).tolist()
            # Kept for the next session only where neither can change in place (proportion
            # keeps its capability and the total read-only until nodes change).
            fixed = not capability.flags.writeable and not total.flags.writeable
            self._limited_by = (capability, total) if fixed else None
        for job in session.promised():
            self.on_job_enqueued(job)

    def _rows(self, vectors: list[np.ndarray]) -> np.ndarray:
        return np.array(vectors).reshape(len(vectors), len(self.total))

    def _queue_rows(self, session: Session) -> None:
        """The queues' names, rows, guarantees, capabilities (as limits) and weights, made
        again only when a queue or the resource columns changed: a long replay opens a
        session at every pod's end, nearly always over the same queues."""
        columns = self.columns
        key = (id(columns.state), columns.width, session.queue_snapshots())
        if key == self._queues_key:
            return
        self._queues_key = key
        queues = session.queues.values()
        self.names = list(session.queues)
        self.index = {name: row for row, name in enumerate(self.names)}
        self.guarantee = self._rows([columns.amounts(q.guarantee) for q in queues])
        self.guarantee.flags.writeable = False
        self.capability_limits = self._rows([columns.limits(q.capability) for q in queues])
        self.capability_limits.flags.writeable = False
        self.weights = np.array([float(q.weight) for q in queues])
        self.every_row = list(range(len(self.names)))

    def per_queue(self, vectors: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
        """The known queues among ``vectors``' keys, and their vectors as rows over the share
        columns (``columns.of`` of each, at once)."""
        names = [name for name in vectors if name in self.index]
        if not names:
            return names, np.zeros((0, len(self.total)))
        amounts = stacked([vectors[name] for name in names], self.columns.width)
        return names, amounts[:, self.columns.columns].astype(np.float64)

    def _count_held(self, held: dict[str, np.ndarray]) -> None:
        """What each queue holds, counted against its rows (as ``_count`` does, at once)."""
        names, amounts = self.per_queue(held)
        rows: list[int] = []
        sources: list[int] = []
        for k, name in enumerate(names):
            lineage = self.lineage(name)
            rows += lineage
            sources += [k] * len(lineage)
        # Each queue counted once, against its own row alone, in row order (one queue that
        # holds anything, always): the matrix is the use (a matrix of its own).
        if len(rows) == len(names) and rows == self.every_row:
            self.used = amounts
            return
        self.used = np.zeros_like(self.guarantee)
        if len(set(rows)) == len(rows):  # no row counted twice (no hierarchy): plain stores
            self.used[rows] = amounts[sources]
        else:
            np.add.at(self.used, rows, amounts[sources])

    def divide(self, session: Session) -> tuple[np.ndarray, np.ndarray]:
        """The real capability and the deserved share of every queue."""
        raise NotImplementedError

    def limit(self) -> np.ndarray:
        """The most each queue may hold: what allocatable keeps it within."""
        return self.capability

    def lineage(self, queue: str) -> list[int]:
        """Rows a placement in ``queue`` counts against: the queue's own, then its ancestors'
        where use rolls up (capacity)."""
        return [self.index[queue]]

    def share(self, row: int) -> float:
        """Held over deserved, the largest fraction over resources. Cached, like ``headroom``,
        until the queue's use changes: both are asked for every job and task served."""
        share = self._shares.get(row)
        if share is None:
            share = self._shares[row] = dominant_share(self.used[row], self.deserved[row])
        return share

    def headroom(self, row: int) -> np.ndarray:
        """What the queue may still take under its limit (never negative), plus the slack."""
        room = self._rooms.get(row)
        if room is None:
            room = self._rooms[row] = self.room_holding(row, self.used[row])
        return room

    def room_holding(self, row: int, used: np.ndarray) -> np.ndarray:
        """``headroom`` were the queue in ``row`` holding ``used`` (a vector, or one per row)."""
        return np.maximum(self.limits[row] - used, 0.0) + EPSILON

    def full(self, row: int) -> bool:
        """Whether the queue has no room left in any resource; cached like ``headroom``: asked
        before every turn allocate gives."""
        full = self._full.get(row)
        if full is None:
            full = self._full[row] = bool(no_room(self.headroom(row)))
        return full

    def shortfall(
        self, head: str, need: np.ndarray, room: np.ndarray, short: np.ndarray, left: str
    ) -> Refusal:
        """ "<head>: cpu needs 6, <left>" for every resource in ``short``; ``left`` formats the
        room. Rendered when read: on a long backlog most waiting jobs are refused every
        session."""
        names = self.columns.names
        return Refusal(
            lambda: (
                f"{head}: "
                + "; ".join(
                    f"{res} needs {format_amount(res, need[i])}, "
                    + left.format(format_amount(res, max(room[i], 0.0)))
                    for i, res in enumerate(names)
                    if short[i]
                )
            )
        )

    def refusal(self, row: int, need: np.ndarray, used: np.ndarray, room: np.ndarray) -> str:
        """Why ``need`` does not fit in the room of the queue in ``row`` holding ``used``."""
        return f"queue {self.names[row]} at capability ({self.columns.listed(need > room)})"

    # -- extension points ---------------------------------------------------------------

    def queue_order(self, queue: Queue) -> tuple:
        """A queue of higher ``priority`` first (Volcano's proportion and capacity), then the
        smaller share."""
        return (-queue.priority, self.share(self.index[queue.name]))

    def allocatable(self, queue: Queue, request: np.ndarray) -> str | None:
        need = self.columns.of(request)
        for row in self.lineage(queue.name):
            room = self.headroom(row)
            if not (need <= room).all():
                return self.refusal(row, need, self.used[row], room)
        return None

    def allocatable_pods(self, queue: Queue, request: np.ndarray, most: int) -> int:
        """How many pods of ``request`` the queue takes (``allocatable`` refuses one more),
        up to ``most``: each pod checked against the room the ones before it leave, as they
        would be placed (use is a sum of whole amounts, so counting them at once is exact)."""
        need = self.columns.of(request)
        if not (need > 0).any():
            return most
        taken = most
        before = np.arange(most, dtype=np.float64)[:, None]  # pods placed before each one
        for row in self.lineage(queue.name):
            used = self.used[row] + before[:taken] * need
            room = self.room_holding(row, used)
            refused = np.flatnonzero(~(need <= room).all(axis=1))
            if len(refused):
                taken = int(refused[0])
        return taken

    def allocatable_after(self, queue: Queue, request: np.ndarray, placed: int) -> Refusal | None:
        """``allocatable`` of one more pod of ``request`` once ``placed`` of them are placed
        (the reason the next pod would be given), rendered when read: a gang of a queue at its
        share is told this in every session."""
        need = self.columns.of(request)
        for row in self.lineage(queue.name):
            used = self.used[row] + need * placed
            room = self.room_holding(row, used)
            if not (need <= room).all():
                return Refusal(partial(self.refusal, row, need, used, room))
        return None

    def jobs_enqueueable(self, jobs: list[JobInfo]) -> list[Vote]:
        if not any(self.any_limited):
            return [None] * len(jobs)  # no real limit anywhere: nothing to refuse
        return [self._capability_vote(job) for job in jobs]

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return self._capability_vote(job)

    def _capability_vote(self, job: JobInfo) -> Vote:
        """Refuse a job whose minResources would take its queue (or an ancestor) past its real
        capability, counting the groups already admitted; never admit on its own. Only real
        limits count: where a queue may have the whole cluster, the idle check (or overcommit)
        is the one that says what is missing."""
        if not job.group.min_resources:
            return None
        rows = self.lineage(job.queue)
        if not any(self.any_limited[row] for row in rows):
            return None  # no real limit anywhere above the job: nothing to refuse
        need = self.columns.amounts(job.group.min_resources)
        for row in rows:
            limited = self.limited[row] & (need > 0)
            if not limited.any():
                continue
            room = self.capability[row] - self.used[row] - self.inqueue[row]
            short = limited & (need > room + EPSILON)
            if short.any():
                head = f"minResources exceed the capability of queue {self.names[row]}"
                return self.shortfall(head, need, room, short, "{} left")
        return None

    def on_job_enqueued(self, job: JobInfo) -> None:
        if job.group.min_resources:
            need = self.columns.amounts(job.group.min_resources)
            for row in self.lineage(job.queue):
                self.inqueue[row] += need

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """Victims from queues holding more than they deserve in some resource, taken while
        that lasts and never below the queue's guarantee (Volcano's reclaimable)."""
        held: dict[int, np.ndarray] = {}
        victims = []
        for candidate in candidates:
            job = self.session.job_of(candidate)
            if job is None:
                continue
            row = self.index[job.queue]
            amount = held.setdefault(row, self.used[row].copy())
            freed = self.columns.amounts(candidate.requests)
            over = (amount > self.deserved[row] + EPSILON).any()
            if over and (self.guarantee[row] <= amount - freed + EPSILON).all():
                amount -= freed
                victims.append(candidate)
        return victims

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        self._count(job.queue, request, 1.0)

    def on_deallocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        self._count(job.queue, request, -1.0)

    def _count(self, queue: str, request: np.ndarray, sign: float) -> None:
        # Pods can sit in a queue that does not exist (their jobs wait with a reason).
        if queue in self.index:
            need = self.columns.of(request)
            for row in self.lineage(queue):
                if sign > 0:
                    self.used[row] += need
                else:
                    self.used[row] -= need
                self._forget(row)

    def _forget(self, row: int) -> None:
        """The queue in ``row`` holds more or less now: what was worked out from its use is
        stale."""
        self._shares.pop(row, None)
        self._rooms.pop(row, None)
        self._full.pop(row, None)
