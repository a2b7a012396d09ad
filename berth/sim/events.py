"""The simulator's event queue: (time, kind, seq, payload) in a heap.

``kind`` orders events at the same time (see ``Ev``) and ``seq`` breaks the remaining ties in
insertion order, so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
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
    SUBMIT = 9  # pushed as runs (EventQueue.push_runs)
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


@dataclass(slots=True, eq=False)
class Run:
    """Events of one time and kind for ``items[next:stop]``, held by one heap entry: a trace
    task's thousands of pods arrive, start and end together, and each of them as an entry of
    its own would cost the heap a push and a pop. The items' seqs follow one another from
    ``seq`` (that of ``items[next]``), reserved for them, so each keeps the place its own
    push would have had. ``open``: items may still be appended (``EventQueue.push_item``)."""

    at: float
    kind: int
    seq: int
    items: list[Any]
    next: int
    stop: int
    open: bool = False


class EventQueue:
    """The heap, and how many events in it are not samples (a run ends when only samples
    are left)."""

    __slots__ = ("heap", "live", "_seq", "_open")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, Any]] = []
        self.live = 0
        self._seq = 0
        self._open: Run | None = None  # the run push_item last made or grew

    def push(self, at: float, kind: Ev, payload: Any = None) -> None:
        heapq.heappush(self.heap, (at, int(kind), self._seq, payload))
        self._seq += 1
        if kind not in UNCOUNTED:
            self.live += 1

    def push_run(self, at: float, kind: Ev, items: list[Any], first: int, count: int) -> None:
        """``count`` events of one time and kind, for ``items[first:first + count]``, as one
        entry (a ``Run``)."""
        assert kind not in UNCOUNTED
        run = Run(at, int(kind), self._seq, items, first, first + count)
        heapq.heappush(self.heap, (at, run.kind, run.seq, run))
        self._seq += count
        self.live += count

    def push_runs(self, kind: Ev, items: list[Any], times: Sequence[float]) -> None:
        """One event of ``kind`` per item, the i-th at ``times[i]``: each run of equal times
        in a row is one entry (``push_run``)."""
        start = 0
        for end in range(1, len(times) + 1):
            if end == len(times) or times[end] != times[start]:
                self.push_run(times[start], kind, items, start, end - start)
                start = end

    def push_item(self, at: float, kind: Ev, item: Any) -> None:
        """``push(at, kind, item)``, handed to a ``Run``: appended to the one this method
        last pushed when nothing was pushed since, at the same time and of the same kind, and
        that run has not been taken off the heap; else a new one."""
        run = self._open
        seq = self._seq
        if (
            run is not None
            and run.open
            and run.seq + run.stop - run.next == seq
            and run.kind == kind
            and run.at == at
        ):
            run.items.append(item)
            run.stop += 1
        else:
            assert kind not in UNCOUNTED
            run = self._open = Run(at, int(kind), seq, [item], 0, 1, open=True)
            heapq.heappush(self.heap, (at, run.kind, seq, run))
        self._seq = seq + 1
        self.live += 1

    def drain(self, run: Run, handle: Callable[[Any], Any]) -> int:
        """Handle the items of ``run``, just popped, in order, while nothing pushed by their
        handlers must go before the next one (an event at this time of an earlier kind); put
        back what is left in its next item's place. Returns how many were handled."""
        run.open = False
        heap, items, at, kind = self.heap, run.items, run.at, run.kind
        first = i = run.next
        stop, seq = run.stop, run.seq
        while True:
            handle(items[i])
            i += 1
            seq += 1
            if i == stop:
                break
            if heap and heap[0] < (at, kind, seq):
                run.next, run.seq = i, seq
                heapq.heappush(heap, (at, kind, seq, run))
                break
        self.live -= i - first
        return i - first


@dataclass(slots=True)
class MovableEnd:
    """A job's end event, whose time a change of the job's speed (its workers, its share of
    a GPU) moves: the heap cannot take an event out, so the standing one is marked
    ``cancelled`` and a new one pushed."""

    key: str
    cancelled: bool = False
