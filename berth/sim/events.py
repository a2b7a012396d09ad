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
    TICK = 10  # a periodic callback that never keeps a run alive (see BACKGROUND)
    START = 11
    RESTARTED = 12
    RECONCILE = 13
    SESSION = 14
    SAMPLE = 15


#: Kinds that do not count as work left: a run whose heap holds only these has ended.
BACKGROUND = frozenset((Ev.TICK, Ev.SAMPLE))


class EventQueue:
    """The heap, and how many events in it are not background (a run ends when only
    background events are left)."""

    __slots__ = ("heap", "live", "_seq")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, Any]] = []
        self.live = 0
        self._seq = 0

    def push(self, at: float, kind: Ev, payload: Any = None) -> None:
        heapq.heappush(self.heap, (at, int(kind), self._seq, payload))
        self._seq += 1
        if kind not in BACKGROUND:
            self.live += 1
