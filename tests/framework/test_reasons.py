"""Pending reasons name what actually blocks a pod, and a pod that waited and then ran keeps why
it waited (``waited_for``)."""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup, Queue
from tests.builders import config, node, pod, queued, run, scheduler

NO_ENQUEUE = config(["priority", "gang", "resource-fit"], actions="allocate, backfill")

PENDING_CASES = {
    "a node short of memory is not reported as short of cpu": (
        [node("n0", cpu=1000, mem=1024), node("n1", cpu=8000, mem=1024)],
        [],
        pod("p", cpu=2000, mem=4096),
        "0/2 nodes available: 2 insufficient memory, 1 insufficient cpu",
    ),
    "an extended resource no node has, not an overused queue": (
        [node("n0")],
        [],
        pod("p", cpu=0, mem=0, extra={"example.com/foo": 1}),
        "0/1 nodes available: 1 insufficient example.com/foo",
    ),
    "the queue's capability, in the resource over it": (
        [node("n0", cpu=8000, mem=8192)],
        [Queue("q", capability={"cpu": 8000, "memory": 1024 * 1024 * 1024})],
        queued(pod("p", cpu=1000, mem=2048), "q"),
        "queue q at capability (memory)",
    ),
}


@pytest.mark.parametrize("nodes,queues,p,reason", PENDING_CASES.values(), ids=PENDING_CASES.keys())
def test_pending_reason_names_the_blocker(nodes, queues, p, reason):
    s = scheduler(nodes, queues=queues)
    assert run(s, [p]) == {}
    assert s.pending_reason(p) == reason


def test_bound_at_once_waited_for_nothing():
    s = scheduler([node("n")])
    p = pod("p")
    assert run(s, [p]) == {"p": "n"}
    assert p.waited_for == ""


def test_waited_for_nodes_then_ran():
    s = scheduler([node("n", cpu=1000)], NO_ENQUEUE)
    first, second = pod("a", cpu=1000), pod("b", cpu=1000, submit_time=1.0)
    assert run(s, [first, second]) == {"a": "n"}
    assert run(s, now=1.0) == {}  # still waiting: explained once, not again
    s.release(first)
    assert run(s, now=2.0) == {"b": "n"}
    assert second.waited_for == "0/1 nodes available: 1 insufficient cpu"
    assert first.waited_for == ""


def test_waited_for_admission_then_ran():
    filler = pod("filler", cpu=1000)
    s = scheduler(
        [node("n", cpu=2000)],
        groups=[PodGroup("big", min_resources={"cpu": 2000})],
        bound=[(filler, "n")],
    )
    p = pod("big-0", cpu=2000, group="big")
    assert run(s, [p]) == {}
    s.release(filler)
    assert run(s, now=5.0) == {"big-0": "n"}
    assert p.waited_for == "minResources exceed the idle capacity: cpu needs 2, 1 idle"


def test_waited_for_the_queue_then_ran():
    s = scheduler([node("n", cpu=8000)], queues=[Queue("q", capability={"cpu": 1000})])
    first = queued(pod("a", cpu=1000), "q")
    second = queued(pod("b", cpu=1000, submit_time=1.0), "q")
    assert run(s, [first, second]) == {"a": "n"}
    s.release(first)
    assert run(s, now=1.0) == {"b": "n"}
    assert second.waited_for == "queue q at capability (cpu)"


def test_a_pod_arriving_after_its_job_waited_did_not_wait():
    s = scheduler([node("n", cpu=2000)], NO_ENQUEUE, groups=[PodGroup("g", min_member=2)])
    first = pod("g-0", cpu=1000, group="g")
    assert run(s, [first]) == {}  # waits for its gang's second pod
    second = pod("g-1", cpu=1000, group="g", submit_time=1.0)
    assert run(s, [second], now=1.0) == {"g-0": "n", "g-1": "n"}
    assert first.waited_for == "gang 1/2: waiting for pods"
    assert second.waited_for == ""
