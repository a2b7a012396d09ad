"""Time-sliced jobs' ends: work done at the speed their group gives them, ends moved when the
sharing changes (a job of the group ends, the policy regroups), in turns or fluid."""

from __future__ import annotations

import heapq

import pytest

from berth.sim.events import Ev, EventQueue
from berth.sim.timeslice import TimeSlicing
from tests.builders import pod


def run(durations: dict[str, float], running: int, fluid: bool) -> dict[str, float]:
    """Jobs (all in one group, in this order) started at 0: when each ends."""
    queue = EventQueue()
    slicing = TimeSlicing(queue, fluid)
    slicing.assign({f"default/{k}": (0, running) for k in durations}, 0, 0.0)
    for name, duration in durations.items():
        p = pod(name, gpu=1000, duration=duration)
        p.group = name
        assert slicing.takes(p, 0.0)
    ends: dict[str, float] = {}
    while queue.heap:
        at, kind, _, end = heapq.heappop(queue.heap)
        assert kind == Ev.SLICE_END
        for finished in slicing.ended(end, at):
            ends[finished.name] = at
    assert queue.live == 0
    return ends


ENDS = {
    # name: (durations in turn order, jobs running at once, fluid, expected ends)
    "room for both: each its own duration": ({"a": 100, "b": 300}, 2, False, {"a": 100, "b": 300}),
    "in turns: b starts when a ends": ({"a": 100, "b": 300}, 1, False, {"a": 100, "b": 400}),
    "turn order, not length, decides": ({"b": 300, "a": 100}, 1, False, {"b": 300, "a": 400}),
    # Fluid: both at 1/2 until a has done its 100 s (t=200), then b alone for its last 200 s.
    "fluid: halves, then b alone": ({"a": 100, "b": 300}, 1, True, {"a": 200, "b": 400}),
    "fluid: two of three at once": (
        {"a": 200, "b": 200, "c": 200},
        2,
        True,
        {"a": 300, "b": 300, "c": 300},
    ),
}


@pytest.mark.parametrize("name", list(ENDS))
def test_ends(name: str) -> None:
    durations, running, fluid, expected = ENDS[name]
    assert run(durations, running, fluid) == pytest.approx(expected)


def test_a_regrouped_job_keeps_the_work_it_did() -> None:
    queue = EventQueue()
    slicing = TimeSlicing(queue)
    slicing.assign({"default/a": (0, 1), "default/b": (0, 1)}, 0, 0.0)
    for name in ("a", "b"):
        p = pod(name, gpu=1000, duration=100)
        p.group = name
        slicing.takes(p, 0.0)
    # At t=40 b (waiting its turn, nothing done) moves to a set of its own: 100 s from then.
    slicing.assign({"default/a": (0, 1), "default/b": (1, 1)}, 1, 40.0)
    live = sorted((at, end.key) for at, _, _, end in queue.heap if not end.cancelled)
    assert live == [(100.0, "default/a"), (140.0, "default/b")]
    assert slicing.sample() == {"time_sliced_jobs": 0.0, "migrations": 1.0}


TICKS = {
    # name: (now, last arrival, slot, jobs running at once of two, expected)
    "arrivals still due": (50.0, 100.0, 60.0, 1, False),
    "all arrived, one waiting its turn": (150.0, 100.0, 60.0, 1, True),
    "all arrived, both running": (150.0, 100.0, 60.0, 2, False),
    "no slot": (150.0, 100.0, 0.0, 1, False),
}


@pytest.mark.parametrize("name", list(TICKS))
def test_sessions_every_slot_once_all_arrived_while_jobs_wait_their_turn(name: str) -> None:
    now, last, slot, running, expected = TICKS[name]
    slicing = TimeSlicing(EventQueue(), now=lambda: now, last_arrival=last, slot=slot)
    slicing.assign({"default/a": (0, running), "default/b": (0, running)}, 0, 0.0)
    for name_ in ("a", "b"):
        p = pod(name_, gpu=1000, duration=100)
        p.group = name_
        slicing.takes(p, 0.0)
    assert slicing.ticking() is expected
