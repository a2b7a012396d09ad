"""The simulator's event queue: (time, kind, seq, payload) in a heap.

``kind`` orders events at the same time (see ``Ev``) and ``seq`` breaks the remaining ties in
insertion order, so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class Ev(IntEnum):
    # Order matters at equal times: groups, jobs and workload objects arrive before their pods,
    # pods leave before a session looks at the cluster, controllers react once everything at
    # that time has happened (and before the session), and samples see the session's outcome.
    GROUP = 0
    JOB = 1
    WORKLOAD = 2
    NODE_DOWN = 3
    NODE_UP = 4
    FINISH = 5
    ELASTIC_END = 6  # an elastic job's work done (berth.sim.elastic counts it live itself)
    SLICE_END = 7  # a GPU-sharing job's work done (berth.sim.timeslice counts it live itself)
    FAIL = 8
    SUBMIT = 9  # pushed as runs (EventQueue.push_run)
    COMMAND = 10
    TIMER = 11
    TICK = 12  # a periodic callback (autoscaler, loaning checks): never keeps a run going
    START = 13
    RESTARTED = 14
    RECONCILE = 15
    REPORT = 16  # usage reports (colocation): batch resources are set before the session
    SESSION = 17
    SAMPLE = 18


#: Events that repeat for as long as the run goes on: they never keep it going.
PERIODIC = frozenset({int(Ev.TICK), int(Ev.REPORT), int(Ev.SAMPLE)})
#: Events the queue does not count: the periodic ones, and those whose owner counts them in
#: ``live`` while they stand and out when it cancels them (an elastic job's end, moved at every
#: change of its workers), so a superseded one neither keeps the run going nor marks its end.
UNCOUNTED = PERIODIC | {int(Ev.ELASTIC_END), int(Ev.SLICE_END)}


class EventQueue:
    """The heap, and how many events in it are not samples (a run ends when only samples
    are left)."""

    __slots__ = ("heap", "live", "_seq")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, Any]] = []
        self.live = 0
        self._seq = 0

    def push(self, at: float, kind: Ev, payload: Any = None) -> None:
        heapq.heappush(self.heap, (at, int(kind), self._seq, payload))
        self._seq += 1
        if kind not in UNCOUNTED:
            self.live += 1

    def push_run(self, at: float, kind: Ev, first: int, count: int) -> None:
        """``count`` events of one time and kind, for the items ``first`` on of a list their
        handler holds, as one entry: a trace task's thousands of pods arriving together cost
        the heap one entry, not one each. Each item keeps the place its own push would have
        had (the seqs are reserved for them) and counts as live until it is handled; the
        handler puts back the rest (``rest``)."""
        seq = self._seq
        heapq.heappush(self.heap, (at, int(kind), seq, (seq, first, count)))
        self._seq += count
        if kind not in UNCOUNTED:
            self.live += count

    def push_runs(self, kind: Ev, times: Sequence[float]) -> None:
        """One event of ``kind`` per item of a list their handler holds, the i-th at
        ``times[i]``: each run of equal times in a row is one entry (``push_run``)."""
        start = 0
        for end in range(1, len(times) + 1):
            if end == len(times) or times[end] != times[start]:
                self.push_run(times[start], kind, start, end - start)
                start = end

    def rest(self, at: float, kind: Ev, run: tuple[int, int, int]) -> int:
        """Put back what is left of a run (``push_run``) whose first item is being handled,
        in that item's successor's place; returns the index of the item being handled."""
        seq, first, count = run
        if count > 1:
            heapq.heappush(self.heap, (at, int(kind), seq + 1, (seq + 1, first + 1, count - 1)))
        return first


@dataclass(slots=True)
class MovableEnd:
    """A job's end event, whose time a change of the job's speed (its workers, its share of
    a GPU) moves: the heap cannot take an event out, so the standing one is marked
    ``cancelled`` and a new one pushed."""

    key: str
    cancelled: bool = False
