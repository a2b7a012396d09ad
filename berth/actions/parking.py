"""Jobs allocate found to fit on no node, left out of its line while the finding holds.

On a long backlog most admitted jobs wait for nodes session after session. Telling that such a
job's turn would find no node is cheap (``BeyondEveryNode``), but lining the job up to ask is
not: checking that it may be served, asking its job-order key, sorting and taking it, once per
job and session. A job whose turn was ruled out is parked instead, with the key it was taken
with and under the most free its finding was told from, until it changes
(``Scheduler.touched``: a pod came, left or was placed, its group was replaced, it was given a
reason).

Jobs ruled out under one most free form a group, in job order. In a later cycle, a group
whose most free the nodes are still at most at sleeps: its jobs' turns would be passed, so they
are not taken. The others wake: their jobs are taken in job order among the line's (the
finding is asked again then, as the most free only falls during allocate), and a group
sleeps as soon as the nodes are back at most at its most free. A session opens because a pod
ended, so most groups wake and most fall asleep again once its place is taken.

A parked job's turn would have been counted and not taken. Leaving it out changes nothing
where that is all a ruled-out turn does: in a session whose jobs are all in one queue (among
several, a counted turn still moves the round robin), and where job order and job validity
read only the job (``Plugin.job_answers_own``), so that the key a job was taken with holds
while it does not change. Two things can still reach a sleeping job during a cycle, and then
the parked jobs still in line, those after the greatest key a job was taken with, go back in
it (``rejoin``): the queue is found overused (every job in line is told so), or the class
keys' flags or the nodes' structure change (findings no longer hold).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np

from berth.actions.ruled_out import BeyondEveryNode, Ceiling
from berth.framework.job_info import JobInfo
from berth.framework.session import Session


class _Group:
    """Jobs ruled out under one most free, by ascending job-order key; ``at`` is where a
    cycle has taken them to. Jobs that left the group stay in ``entries`` and are skipped;
    ``start`` is where the group's first job still parked was when it last woke: a job never
    comes back to a group it left (groups are made anew at each parking), so a cycle starts
    there rather than skipping again every job that left before."""

    __slots__ = ("ceiling", "entries", "live", "at", "start", "awake")

    def __init__(self, ceiling: Ceiling) -> None:
        self.ceiling = ceiling
        self.entries: list[tuple[tuple, JobInfo]] = []
        self.live = 0  # entries whose jobs are still parked here
        self.at = 0
        self.start = 0
        self.awake = False


class Parking:
    """The parked jobs of one queue, and, during a cycle, the groups awake in it."""

    __slots__ = (
        "groups",
        "where",
        "queue",
        "snapshot",
        "flags",
        "total",
        "epoch",
        "session",
        "beyond",
        "seen",
        "awake",
        "ceilings",
        "passed",
    )

    _ids: ClassVar[Iterator[int]] = itertools.count()

    def __init__(self) -> None:
        self.groups: dict[int, _Group] = {}
        self.where: dict[str, int] = {}  # job key → its group's id
        self.queue = ""
        #: What the keys and findings were made under: the queues, the class keys' flags, the
        #: cluster's total (a share of it is a job-order key).
        self.snapshot: tuple = ()
        self.flags = False
        self.total = np.zeros(0)
        #: The cycle open: its structure epoch, its rule, the most free the awake groups were
        #: last asked under, and a heap of their next jobs as (key, group id).
        self.epoch = -1
        self.session: Session | None = None
        self.beyond: BeyondEveryNode | None = None
        self.seen: Ceiling | None = None
        self.awake: list[tuple[tuple, int]] = []
        #: The awake groups' ids and their most free as rows, asked at once.
        self.ceilings: tuple[list[int], np.ndarray] = ([], np.zeros((0, 0)))
        #: The jobs whose turns this cycle passed, with the keys they were taken with.
        self.passed: list[tuple[tuple, JobInfo]] = []

    def clear(self) -> None:
        self.groups.clear()
        self.where.clear()
        self.awake.clear()

    def forget(self, keys: Iterable[str]) -> None:
        where = self.where
        for key in keys:
            group = where.pop(key, None)
            if group is not None:
                self._left(group)

    def _left(self, id_: int) -> None:
        group = self.groups[id_]
        group.live -= 1
        if not group.live:
            del self.groups[id_]

    def open(self, session: Session, beyond: BeyondEveryNode | None) -> None:
        """Start a cycle: forget the jobs that changed, and every job if what the keys and
        findings were made under changed. ``beyond`` None (no turn can be ruled out in this
        cycle): none kept, none parked."""
        if self.where:  # (many jobs may have changed: a cluster's start binds every pod)
            self.forget(session.touched)
        session.touched.clear()
        self.session = None
        self.passed = []
        self.awake = []
        framework = session.framework
        if beyond is None or not all(
            p.job_answers_own for p in framework.job_orders + framework.job_valids
        ):
            self.clear()
            return
        flags, snapshot = session.search.key_flags(), session.queue_snapshots()
        total = session.total
        epoch = session.state.structure_epoch
        if (
            flags != self.flags
            or snapshot != self.snapshot
            or epoch != self.epoch
            or not np.array_equal(total, self.total)
        ):
            self.clear()
        self.flags, self.snapshot, self.total, self.epoch = flags, snapshot, total, epoch
        self.session, self.beyond = session, beyond

    def line_up(self, queues: dict[str, list[JobInfo]]) -> Parking | None:
        """Where the session's jobs (``queues``, the parked ones left out) are all in the
        parked jobs' queue, this parking for that queue's line; else the parked jobs go back
        among the others, and None."""
        if self.session is None:
            return None
        if not self.where:
            if len(queues) != 1:
                return None
            self.queue = next(iter(queues))
            return self
        if len(queues) > 1 or (queues and self.queue not in queues):
            for _, job in self.keyed(None):
                queues.setdefault(job.queue, []).append(job)
            self.clear()
            return None
        queues.setdefault(self.queue, [])
        groups = self.groups
        ids = list(groups)
        rows = np.array([groups[id_].ceiling.free for id_ in ids]) if ids else np.zeros((0, 0))
        # The groups the nodes are at most at already sleep: they never enter the heap.
        ids, rows, _ = self._wakeful(ids, rows)
        for group in groups.values():
            group.awake = False
        for id_ in ids:
            group = groups[id_]
            group.at, group.awake = group.start, True
            self._next(id_, group)
            group.start = group.at
        self.ceilings = (ids, rows)
        self.seen = self.beyond.current()  # type: ignore[union-attr]
        return self

    def keyed(self, after: tuple | None) -> list[tuple[tuple, JobInfo]]:
        """The parked jobs with keys above ``after`` (all for None), with their keys."""
        where = self.where
        return [
            (key, job)
            for id_, group in self.groups.items()
            for key, job in group.entries
            if where.get(job.key) == id_ and (after is None or after < key)
        ]

    def _next(self, id_: int, group: _Group) -> None:
        """Put the group's next job still parked in the heap of awake groups."""
        entries, where = group.entries, self.where
        at = group.at
        while at < len(entries) and where.get(entries[at][1].key) != id_:
            at += 1
        group.at = at
        if at < len(entries):
            heapq.heappush(self.awake, (entries[at][0], id_))

    def _wakeful(self, ids: list[int], rows: np.ndarray) -> tuple[list[int], np.ndarray, list[int]]:
        """Of the groups ``ids`` with ceilings ``rows``: those the nodes have more free than
        in some resource, with their rows, and those the nodes are at most at, asleep for the
        rest of the cycle (the most free only falls during it)."""
        free = self.beyond.current().free  # type: ignore[union-attr]
        if not len(ids) or rows.shape[1] != len(free):
            return ids, rows, []
        asleep = (free <= rows).all(axis=1)
        if not asleep.any():
            return ids, rows, []
        kept = np.flatnonzero(~asleep).tolist()
        return [ids[k] for k in kept], rows[kept], [ids[k] for k in np.flatnonzero(asleep).tolist()]

    def head(self) -> tuple | None:
        """The key of the first job of an awake group, the groups the nodes are at most at
        again put to sleep first."""
        awake, groups = self.awake, self.groups
        if not awake:
            return None
        ceiling = self.beyond.current()  # type: ignore[union-attr]
        if ceiling is not self.seen:  # (the same while the most free is as it was)
            self.seen = ceiling
            ids, rows, asleep = self._wakeful(*self.ceilings)
            if asleep:
                for id_ in asleep:
                    group = groups.get(id_)
                    if group is not None:
                        group.awake = False
                # Their ceilings need not be asked again, nor their entries popped one by one.
                self.ceilings = (ids, rows)
                if 2 * len(ids) < len(awake):
                    awake[:] = [
                        entry
                        for entry in awake
                        if (group := groups.get(entry[1])) is not None and group.awake
                    ]
                    heapq.heapify(awake)
        while awake:
            key, id_ = awake[0]
            group = groups.get(id_)
            if group is not None and group.awake and group.at < len(group.entries):
                if group.entries[group.at][0] == key:
                    return key
            heapq.heappop(awake)
        return None

    def before(self, key: tuple) -> bool:
        """Whether a job of an awake group goes before job order ``key`` (the heap's first
        entry, awake or not, tells most times that none does)."""
        awake = self.awake
        if not awake or not awake[0][0] < key:
            return False
        first = self.head()
        return first is not None and first < key

    def pop(self) -> JobInfo:
        """Take the job ``head`` names out of the parking, to be taken in line."""
        _, id_ = heapq.heappop(self.awake)
        group = self.groups[id_]
        job = group.entries[group.at][1]
        group.at += 1
        del self.where[job.key]
        self._next(id_, group)
        self._left(id_)
        return job

    def stale(self) -> bool:
        """Whether findings may no longer hold mid-cycle: the class keys' flags or the nodes'
        structure changed since the cycle started."""
        session = self.session
        assert session is not None
        return (
            session.state.structure_epoch != self.epoch or session.search.key_flags() != self.flags
        )

    def rejoin(self, after: tuple | None) -> list[tuple[tuple, JobInfo]]:
        """Unpark, for good this cycle, the jobs with keys above ``after``; returns them."""
        back = self.keyed(after)
        self.clear()
        self.session = None
        return back

    def park(self) -> None:
        """The jobs whose turns this cycle passed (each with its finding on its kept order)."""
        groups, where = self.groups, self.where
        made: dict[int, int] = {}  # ceiling serial → the group made for it now
        for key, job in self.passed:
            kept = job.task_order
            assert kept is not None and kept.ruled_out is not None
            ceiling = kept.ruled_out[1]
            id_ = made.get(ceiling.serial)
            if id_ is None:
                id_ = made[ceiling.serial] = next(Parking._ids)
                groups[id_] = _Group(ceiling)
            group = groups[id_]
            group.entries.append((key, job))
            group.live += 1
            where[job.key] = id_
        self.passed = []
