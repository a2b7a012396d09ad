"""The event queue: a run of events pushed as one entry (``EventQueue.push_run``) is handled
in the order and with the live count its events pushed one by one would have had; the times
the agent pushes for pods placed together are one object."""

from __future__ import annotations

import heapq

from hypothesis import given
from hypothesis import strategies as st

from berth.sim.agent import _Later
from berth.sim.events import Ev, EventQueue

KINDS = [Ev.GROUP, Ev.SUBMIT, Ev.SESSION, Ev.SAMPLE]


def drain(queue: EventQueue, items: list[str], later: list[tuple[int, float, Ev, str]]) -> list:
    """Pop everything; a run's item is handled as the simulator does (``rest``). ``later``:
    (after how many pops, time, kind, name) pushed while draining."""
    handled, popped = [], 0
    while queue.heap:
        at, kind, _, payload = heapq.heappop(queue.heap)
        if isinstance(payload, tuple):
            payload = items[queue.rest(at, Ev(kind), payload)]
        handled.append((at, kind, payload))
        popped += 1
        for when, t, k, name in later:
            if when == popped:
                queue.push(t, k, name)
    return handled


other = st.tuples(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.sampled_from(KINDS))


@given(
    before=st.lists(other, max_size=5),
    times=st.lists(st.sampled_from([0.0, 1.0, 2.0]), max_size=30),
    later=st.lists(st.tuples(st.integers(1, 30), other), max_size=5),
)
def test_runs_are_handled_as_their_events_one_by_one(before, times, later):
    """Arrivals at the times given, after other events (``before``), with more pushed while
    draining (``later``, of any kind, arrivals at the same times too)."""
    items = [f"e{i}" for i in range(len(times))]
    later = [(when, t, k, f"late{i}") for i, (when, (t, k)) in enumerate(later)]
    one_by_one, in_runs = EventQueue(), EventQueue()
    for queue in (one_by_one, in_runs):
        for i, (at, kind) in enumerate(before):
            queue.push(at, kind, f"before{i}")
    for at, item in zip(times, items, strict=True):
        one_by_one.push(at, Ev.SUBMIT, item)
    in_runs.push_runs(Ev.SUBMIT, times)
    assert in_runs.live == one_by_one.live
    assert drain(in_runs, items, later) == drain(one_by_one, items, later)


def test_a_run_is_one_entry_and_counts_each_event():
    queue = EventQueue()
    queue.push_run(5.0, Ev.SUBMIT, 0, 1000)
    queue.push_run(5.0, Ev.SAMPLE, 1000, 3)  # periodic: never counted
    assert len(queue.heap) == 2
    assert queue.live == 1000


def test_arrivals_in_a_row_at_one_time_are_one_entry():
    queue = EventQueue()
    queue.push_runs(Ev.SUBMIT, [5.0] * 1000 + [6.0, 6.0, 5.0])
    assert sorted(entry[3] for entry in queue.heap) == [
        (0, 0, 1000),
        (1000, 1000, 2),
        (1002, 1002, 1),
    ]
    assert queue.live == 1003


def test_pods_placed_together_share_their_start_and_end_times():
    """One float object for a run of pods that start (and end) together: 48 bytes a pod on a
    trace of millions; a new one once either operand changes."""
    later = _Later()
    now, duration = 100.0 + 0.5, 30.0 + 0.25
    first = later(now, duration)
    assert first == 130.75 and later(now, duration) is first
    other = 100.0 + 1.5
    assert later(other, duration) == 131.75 and later(now, duration) is not first
    assert later(now, 30.0 + 1.25) == 131.75
