"""The simulator's event queue: (time, kind, seq, payload) in a heap.

``kind`` orders events at the same time (see ``Ev``) and ``seq`` breaks the remaining ties in
insertion order, so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import heapq
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
    FAIL = 6
    SUBMIT = 7
    COMMAND = 8
    TIMER = 9
    START = 10
    RESTARTED = 11
    RECONCILE = 12
    REPORT = 13  # usage reports (colocation): batch resources are set before the session
    SESSION = 14
    SAMPLE = 15


#: Events that repeat for as long as the run goes on: they never keep it going.
PERIODIC = frozenset({int(Ev.REPORT), int(Ev.SAMPLE)})


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
        if kind not in PERIODIC:
            self.live += 1
