"""edf: waiting jobs by deadline, earliest first (jobs without one last); a job evicts only
running jobs whose deadline is later than its own, latest first."""

from __future__ import annotations

import pytest

from berth.api.deadline import DEADLINE_ANNOTATION
from berth.framework.scheduler import Scheduler
from tests.builders import GANG, config, node, pod

GPU = 1000


def job(name: str, gpus: int, deadline: float | None, submit: float = 0.0, start=None):
    annotations = {} if deadline is None else {DEADLINE_ANNOTATION: str(deadline)}
    return pod(
        name,
        cpu=100,
        mem=1,
        gpu=gpus * GPU,
        submit_time=submit,
        start_time=start,
        duration=1000.0,
        annotations=annotations,
    )


def run(pods, bound=(), now: float = 10.0, nodes: int = 1, **arguments):
    entry = {"name": "edf", "arguments": arguments} if arguments else "edf"
    s = Scheduler(config([entry, GANG, "resource-fit"], actions="allocate, preempt, backfill"))
    for i in range(nodes):
        s.add_node(node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU))
    for p, where in bound:
        s.place_bound(p, where)
    for p in pods:
        s.submit(p)
    binds = {b.pod.name: b.node for b in s.run_session(now)}
    return binds, {e.pod.name: e.reason for e in s.evictions}


ROWS = {
    # name: (arriving, running, arguments, expected binds, expected victims)
    "earliest deadline first, not arrival": (
        [job("late", 8, 5000), job("soon", 8, 2000, submit=5)],
        [],
        {},
        {"soon": "n0"},
        {},
    ),
    "a job past its deadline is the earliest": (
        [job("future", 8, 5000), job("overdue", 8, 5, submit=1)],
        [],
        {},
        {"overdue": "n0"},
        {},
    ),
    "no deadline goes after every deadline": (
        [job("none", 8, None), job("some", 8, 90000, submit=5)],
        [],
        {},
        {"some": "n0"},
        {},
    ),
    "equal deadlines: arrival": (
        [job("second", 8, 3000, submit=2), job("first", 8, 3000, submit=1)],
        [],
        {},
        {"first": "n0"},
        {},
    ),
    "an earlier deadline evicts a later one": (
        [job("urgent", 8, 2000, submit=10)],
        [(job("relaxed", 8, 9000, start=0), "n0")],
        {},
        {"urgent": "n0"},
        {"relaxed": "preempted by default/urgent"},
    ),
    "a later deadline never evicts": (
        [job("relaxed", 8, 9000, submit=10)],
        [(job("urgent", 8, 2000, start=0), "n0")],
        {},
        {},
        {},
    ),
    "equal deadlines never evict each other": (
        [job("b", 8, 3000, submit=10)],
        [(job("a", 8, 3000, start=0), "n0")],
        {},
        {},
        {},
    ),
    "the latest deadline gives way first": (
        [job("urgent", 8, 1000, submit=10)],
        [(job("mid", 8, 5000, start=0), "n0"), (job("latest", 8, 9000, start=0), "n1")],
        {},
        {"urgent": "n1"},
        {"latest": "preempted by default/urgent"},
    ),
    "a job without a deadline is evicted by one with": (
        [job("urgent", 8, 1000, submit=10)],
        [(job("none", 8, None, start=0), "n0")],
        {},
        {"urgent": "n0"},
        {"none": "preempted by default/urgent"},
    ),
    "preempt false: no eviction": (
        [job("urgent", 8, 2000, submit=10)],
        [(job("relaxed", 8, 9000, start=0), "n0")],
        {"preempt": False},
        {},
        {},
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_order_and_victims(name: str) -> None:
    pods, bound, arguments, binds, victims = ROWS[name]
    nodes = 1 + len({where for _, where in bound} - {"n0"})
    got, evicted = run(pods, bound, nodes=nodes, **arguments)
    assert got == binds
    assert evicted == victims


def test_preempt_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="argument preempt: 'yes' is not true or false"):
        run([], preempt="yes")
