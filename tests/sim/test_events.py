"""The event queue: events pushed as one entry (``EventQueue.push_runs``, ``push_item``) are
handled in the order and with the live count their events pushed one by one would have had;
the times the agent pushes for pods placed together are one object."""

from __future__ import annotations

import heapq

from hypothesis import given
from hypothesis import strategies as st

from berth.sim.agent import _Later
from berth.sim.events import Ev, EventQueue, Run

KINDS = [Ev.GROUP, Ev.FINISH, Ev.SUBMIT, Ev.START, Ev.SESSION, Ev.SAMPLE]
#: What handling an item pushes: (time, kind, name), pushed one by one or as items.
Pushes = dict[str, list[tuple[float, Ev, str]]]


def drain(queue: EventQueue, pushes: Pushes, items: bool) -> tuple[list, list[int]]:
    """Pop everything as the simulator does: a ``Run`` through ``drain``. Handling an item
    pushes what ``pushes`` gives for it, START and FINISH events with ``push_item`` when
    ``items``. Returns what was handled in order, and the live count after each pop."""
    handled: list[tuple[float, int, str]] = []
    live: list[int] = []
    now = kind_now = None

    def handle(name: str) -> None:
        handled.append((now, kind_now, name))
        for at, kind, pushed in pushes.get(name, []):
            if items and kind in (Ev.START, Ev.FINISH):
                queue.push_item(at, kind, pushed)
            else:
                queue.push(at, kind, pushed)

    while queue.heap:
        now, kind_now, _, payload = heapq.heappop(queue.heap)
        if type(payload) is Run:
            queue.drain(payload, handle)
        else:
            handle(payload)
            if kind_now != Ev.SAMPLE:
                queue.live -= 1
        live.append(queue.live)
    return handled, live


event = st.tuples(st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from(KINDS))


@given(
    before=st.lists(event, max_size=5),
    times=st.lists(st.sampled_from([0.0, 1.0, 2.0]), max_size=30),
    later=st.lists(st.tuples(st.integers(0, 40), st.lists(event, max_size=4)), max_size=12),
)
def test_runs_and_items_are_handled_as_their_events_one_by_one(before, times, later):
    """Arrivals at the times given, after other events (``before``); handling an event pushes
    more (``later``: of any kind, at the same times too, START and FINISH ones as items)."""
    arrivals = [f"e{i}" for i in range(len(times))]
    names = [f"before{i}" for i in range(len(before))] + arrivals
    pushes: Pushes = {}
    made = 0
    for which, events in later:
        if names:
            name = names[which % len(names)]
            for at, kind in events:
                if kind != Ev.SAMPLE or at >= 1.0:  # (periodic events never keep a run going)
                    made += 1
                    pushed = f"late{made}"
                    pushes.setdefault(name, []).append((at + 1.0, kind, pushed))
                    names.append(pushed)
    one_by_one, in_runs = EventQueue(), EventQueue()
    for queue in (one_by_one, in_runs):
        for i, (at, kind) in enumerate(before):
            queue.push(at, kind, f"before{i}")
    for at, item in zip(times, arrivals, strict=True):
        one_by_one.push(at, Ev.SUBMIT, item)
    in_runs.push_runs(Ev.SUBMIT, arrivals, times)
    assert in_runs.live == one_by_one.live
    expected, _ = drain(one_by_one, pushes, items=False)
    got, _ = drain(in_runs, pushes, items=True)
    assert got == expected
    assert in_runs.live == one_by_one.live


def test_a_run_is_one_entry_and_counts_each_event():
    queue = EventQueue()
    queue.push_run(5.0, Ev.SUBMIT, list(range(1000)), 0, 1000)
    queue.push(5.0, Ev.SAMPLE)  # periodic: never counted
    assert len(queue.heap) == 2
    assert queue.live == 1000


def test_arrivals_in_a_row_at_one_time_are_one_entry():
    queue = EventQueue()
    pods = [f"p{i}" for i in range(1003)]
    queue.push_runs(Ev.SUBMIT, pods, [5.0] * 1000 + [6.0, 6.0, 5.0])
    runs = sorted((entry[3] for entry in queue.heap), key=lambda run: run.seq)
    assert [(run.seq, run.next, run.stop) for run in runs] == [
        (0, 0, 1000),
        (1000, 1000, 1002),
        (1002, 1002, 1003),
    ]
    assert all(run.items is pods for run in runs)
    assert queue.live == 1003


def test_items_pushed_in_a_row_share_an_entry_until_something_comes_between():
    queue = EventQueue()
    for name in ("a", "b", "c"):
        queue.push_item(9.0, Ev.FINISH, name)
    queue.push(9.0, Ev.FINISH, "alone")  # comes between: the next item starts a new entry
    queue.push_item(9.0, Ev.FINISH, "d")
    queue.push_item(8.0, Ev.FINISH, "e")  # another time
    queue.push_item(8.0, Ev.START, "f")  # another kind
    assert len(queue.heap) == 5
    assert queue.live == 7
    first = min(queue.heap)[3] if type(min(queue.heap)[3]) is Run else None
    assert first is not None and first.items == ["e"]
    entries = sorted(queue.heap)
    assert [e[3].items if type(e[3]) is Run else e[3] for e in entries] == [
        ["e"],
        ["f"],
        ["a", "b", "c"],
        "alone",
        ["d"],
    ]


def test_an_entry_taken_off_the_heap_takes_no_more_items():
    """Items pushed while a run is handled, at its time and of its kind, go after it."""
    queue = EventQueue()
    queue.push_item(1.0, Ev.START, "a")
    queue.push_item(1.0, Ev.START, "b")
    seen: list[str] = []

    def handle(name: str) -> None:
        seen.append(name)
        if name == "a":
            queue.push_item(1.0, Ev.START, "late")

    _, _, _, run = heapq.heappop(queue.heap)
    assert queue.drain(run, handle) == 2
    assert seen == ["a", "b"] and [entry[3].items for entry in queue.heap] == [["late"]]
    assert queue.live == 1


def test_an_earlier_kind_pushed_meanwhile_goes_between_the_items():
    queue = EventQueue()
    for name in ("a", "b", "c"):
        queue.push_item(1.0, Ev.START, name)
    seen: list[str] = []

    def handle(name: str) -> None:
        seen.append(name)
        if name == "a":
            queue.push(1.0, Ev.FAIL, "fail")  # FAIL goes before START at the same time

    _, _, _, run = heapq.heappop(queue.heap)
    assert queue.drain(run, handle) == 1
    assert seen == ["a"]
    assert [entry[3] for entry in sorted(queue.heap)][0] == "fail"
    _, _, _, rest = sorted(queue.heap)[1]
    assert (rest.next, rest.stop, rest.seq) == (1, 3, 1)
    assert queue.live == 3


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
