"""proportion: share the cluster between queues by weight (Volcano's proportion).

Each cycle the cluster's total is water-filled over the queues that want something: every
round each unsatisfied queue gets its weight's fraction of what is left, capped by what it asks
for (running plus pending requests) and by its real capability (``capability``, and no more
than the total minus the other queues' guarantees); a queue whose ask is met, or that could not
grow, drops out and what it did not take is shared again. ``guarantee`` is a floor.

With 12 CPUs and weights 1:2:3 the queues deserve 2, 4 and 6 CPUs; if the first asks for just
one, the other eleven are split 2:3 (4.4 and 6.6).

A queue is overused once it holds its deserved share in every resource and gets no more turns
that cycle; a task fits the queue only within its deserved share (and, with a clearer reason,
its capability); queues go in order of their priority, then their share (held / deserved, the
largest fraction). A queue reclaims a task only within its deserved share, from a queue that
holds more than it deserves, down to that queue's guarantee.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import Queue
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Refusal, Vote
from berth.framework.queues import EPSILON
from berth.framework.session import Session
from berth.plugins.queue_share import QueueShare, no_room

#: Volcano's threshold under which a resource counts as used up.
_EMPTY = 0.1


class Proportion(QueueShare):
    name = "proportion"
    orders_see_placements = True  # shares and room follow the use charged at each placement
    #: The real capability as last made, from those queues' guarantee rows and that total:
    #: both nearly always the same from one session to the next.
    _capability: np.ndarray | None = None
    _capability_of: np.ndarray | None = None
    _total: np.ndarray | None = None
    #: What each queue still deserves (deserved − held − promised): asked for every job
    #: enqueue asks about, so kept until a queue's use or promises change.
    _deserved_room: np.ndarray | None = None

    def divide(self, session: Session) -> tuple[np.ndarray, np.ndarray]:
        total, guarantee = self.total, self.guarantee
        capability, kept_total = self._capability, self._total
        if (
            capability is None
            or self._capability_of is not guarantee
            or (
                kept_total is not total
                and (kept_total is None or not np.array_equal(kept_total, total))
            )
        ):
            free = total - guarantee.sum(axis=0)
            capability = np.minimum(free + guarantee, self.capability_limits)
            capability.flags.writeable = False
            self._capability, self._capability_of, self._total = capability, guarantee, total
        names, asking = self.per_queue(session.demand)
        asked = [self.index[name] for name in names]
        if asked == self.every_row:
            requests = self.used + asking
        else:
            requests = self.used.copy()
            requests[asked] += asking
        wanting = np.flatnonzero((requests > 0).any(axis=1))
        #: More than one queue asks: only then can a queue's share be held down by the others.
        self.contested = len(wanting) > 1
        self._deserved_room = None
        deserved = guarantee.copy()
        if len(wanting):
            # When every queue asks (one queue, always), views of the rows, not copies.
            rows = slice(None) if len(wanting) == len(requests) else wanting
            deserved[rows] = water_fill(
                total, self.weights[rows], requests[rows], capability[rows], guarantee[rows]
            )
        #: Where a queue deserves less than it could have: other queues hold its share down.
        self.held_down = deserved < capability - EPSILON
        return capability, deserved

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return self.jobs_enqueueable([job])[0]

    def jobs_enqueueable(self, jobs: list[JobInfo]) -> list[Vote]:
        """Besides the capability check, refuse a job whose minResources do not fit in what its
        queue still deserves (deserved − held − promised to admitted groups). Allocate would
        never place it there, and an admitted group holds its minResources against every other
        admission: admitting it would stall the cluster, not just the queue. One array
        operation for all the jobs."""
        votes = super().jobs_enqueueable(jobs)
        if not self.contested:
            return votes
        index, amounts_of = self.index, self.columns.amounts
        asked: list[int] = []
        rows: list[int] = []
        amounts: list[np.ndarray] = []
        for i, job in enumerate(jobs):
            min_resources = job.group.min_resources
            if votes[i] is None and min_resources:
                row = index.get(job.queue)
                if row is not None:
                    asked.append(i)
                    rows.append(row)
                    amounts.append(amounts_of(min_resources))
        if not asked:
            return votes
        need = np.array(amounts)
        room = self._deserved_room
        if room is None:
            room = self._deserved_room = self.deserved - self.used - self.inqueue
        # Only where other queues hold the share down: a queue that deserves all it could
        # have is short of idle room, which the idle check reports better.
        short = (need > 0) & self.held_down[rows] & (need > room[rows] + EPSILON)
        # Jobs of one queue asking the same (the memoised vector) share one refusal.
        refusals: dict[tuple[int, int], Refusal] = {}
        for k in np.flatnonzero(short.any(axis=1)).tolist():
            row = rows[k]
            key = (row, id(amounts[k]))
            refusal = refusals.get(key)
            if refusal is None:
                head = f"queue {self.names[row]} at its deserved share"
                refusal = refusals[key] = self.shortfall(
                    head, need[k], room[row], short[k], "deserves {} more"
                )
            votes[asked[k]] = refusal
        return votes

    def on_job_enqueued(self, job: JobInfo) -> None:
        super().on_job_enqueued(job)
        self._deserved_room = None

    def _forget(self, row: int) -> None:
        super()._forget(row)
        self._deserved_room = None

    def limit(self) -> np.ndarray:
        return np.minimum(self.capability, self.deserved)

    def preemptive(self, queue: Queue, request: np.ndarray) -> bool:
        """A queue reclaims a task only while it keeps within its deserved share in every
        resource the task asks for (Volcano's proportion: its allocatable check)."""
        row = self.index[queue.name]
        need = self.columns.of(request)
        asked = need > 0
        return bool((self.used[row] + need <= self.deserved[row] + EPSILON)[asked].all())

    def overused(self, queue: Queue) -> bool:
        """Volcano's deserved ≤ allocated in every resource: no room left in any."""
        return self.full(self.index[queue.name])

    def overused_from(self, queue: Queue, request: np.ndarray, most: int) -> int | None:
        """``full`` with k more pods placed, for every k up to ``most`` at once: use grows by
        whole amounts, so adding k requests at once is what adding them one by one comes to."""
        row = self.index[queue.name]
        placed = np.arange(most + 1, dtype=np.float64)[:, None]
        room = self.room_holding(row, self.used[row] + placed * self.columns.of(request))
        full = np.flatnonzero(no_room(room))
        return int(full[0]) if len(full) else most + 1

    def refusal(self, row: int, need: np.ndarray, used: np.ndarray, room: np.ndarray) -> str:
        over = used + need > self.capability[row] + EPSILON
        if over.any():
            return f"queue {self.names[row]} at capability ({self.columns.listed(over)})"
        return f"queue {self.names[row]} at its deserved share ({self.columns.listed(need > room)})"


def water_fill(
    total: np.ndarray,
    weights: np.ndarray,
    request: np.ndarray,
    capability: np.ndarray,
    guarantee: np.ndarray,
) -> np.ndarray:
    """Deserved share per queue (rows) and resource (columns): rounds of weighted shares of
    what is left, each queue capped by its request and capability, floored by its guarantee,
    until every queue is satisfied or nothing is left to give."""
    wanted = np.maximum(np.minimum(request, capability), guarantee)
    if (wanted.sum(axis=0) <= total + EPSILON).all():
        return wanted  # no contention: the rounds would end with everyone's full ask
    ceiling = np.minimum(capability, request)
    deserved = np.zeros_like(request)
    active = np.arange(len(weights))  # the queues not yet satisfied
    remaining = total.astype(np.float64)
    # Every round satisfies a queue or hands out what is left; the bound only guards floats.
    for _ in range(2 * len(weights) + 2):
        share = weights[active]
        weight = share.sum()
        if weight == 0:
            break
        # Only the active rows change: the other rows add nothing to what is handed out.
        before = deserved[active]
        grant = np.minimum(before + remaining * share[:, None] / weight, ceiling[active])
        stuck = (grant == before).all(axis=1)
        met = (request[active] <= grant + EPSILON).all(axis=1)
        granted = np.maximum(grant, guarantee[active])
        deserved[active] = granted
        left = remaining - (granted - before).sum(axis=0)
        active = active[~(met | stuck)]
        if (left < _EMPTY).all() or np.array_equal(left, remaining):
            break
        remaining = left
    return deserved
