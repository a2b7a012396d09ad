"""backfill: best-effort pods (no cpu, memory or GPU requests) are placed after allocate,
wherever the filters allow."""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup, Queue
from berth.api.selectors import Taint, Toleration
from tests.builders import best_effort, config, node, pod, run, scheduler

CASES = {
    "placed on a full node": ([node("n", cpu=1000)], [(pod("x", cpu=1000), "n")], {}, "n"),
    "nodeSelector honoured": (
        [node("a"), node("b", labels={"pool": "be"})],
        [],
        {"node_selector": {"pool": "be"}},
        "b",
    ),
    "taints honoured": ([node("a", taints=[Taint("k", "v")]), node("b")], [], {}, "b"),
    "tolerated taint": (
        [node("a", taints=[Taint("k", "v")])],
        [],
        {"tolerations": (Toleration("k", "Exists"),)},
        "a",
    ),
    "pods limit honoured": (
        [node("a", pods=1), node("b", pods=5)],
        [(pod("x", cpu=10), "a")],
        {},
        "b",
    ),
    "no room in pods anywhere": ([node("a", pods=1)], [(pod("x", cpu=10), "a")], {}, None),
    "unschedulable node skipped": ([node("a", unschedulable=True), node("b")], [], {}, "b"),
    "spec.nodeName": ([node("a"), node("b")], [], {"node_name": "a"}, "a"),
}


@pytest.mark.parametrize("nodes,bound,fields,expected", CASES.values(), ids=CASES.keys())
def test_best_effort_placement(nodes, bound, fields, expected):
    s = scheduler(nodes, bound=bound)
    p = best_effort("be", **fields)
    assert run(s, [p]).get("be") == expected


def test_backfill_runs_after_allocate():
    # One pod slot left: the regular pod gets it even though the best-effort pod is older.
    s = scheduler([node("n", pods=1)])
    binds = run(s, [best_effort("be", submit_time=0.0), pod("regular", submit_time=5.0)])
    assert binds == {"regular": "n"}


def test_without_backfill_best_effort_pods_wait():
    cfg = config(["priority", "gang", "resource-fit"], actions="enqueue, allocate")
    s = scheduler([node("n")], cfg)
    assert run(s, [best_effort("be"), pod("regular")]) == {"regular": "n"}


def test_closed_queue_blocks_backfill():
    s = scheduler(
        [node("n")], queues=[Queue("q", state="Closed")], groups=[PodGroup("g", queue="q")]
    )
    assert run(s, [best_effort("be", group="g")]) == {}


def test_best_effort_members_of_a_running_job():
    s = scheduler([node("n")], groups=[PodGroup("g", min_member=1)])
    binds = run(
        s, [pod("w", group="g"), best_effort("side0", group="g"), best_effort("side1", group="g")]
    )
    assert binds == {"w": "n", "side0": "n", "side1": "n"}


def test_backfill_serves_the_jobs_best_effort_pods_were_submitted_to():
    """Backfill walks only the jobs a best-effort pod was submitted to (a long backlog of jobs
    that request resources has none). A job waiting for admission keeps its place there until
    it is admitted; a job whose best-effort pods are all placed leaves it, and a new one brings
    it back."""
    s = scheduler(
        [node("n")], queues=[Queue("q", state="Closed")], groups=[PodGroup("g", queue="q")]
    )
    assert run(s, [best_effort("be0", group="g"), pod("regular")]) == {"regular": "n"}
    assert s.best_effort == {"default/g"}  # not admitted: its queue is closed
    s.add_queue(Queue("q"))
    assert {b.pod.name: b.node for b in s.run_session(10.0)} == {"be0": "n"}
    s.run_session(20.0)
    assert s.best_effort == set()
    assert run(s, [best_effort("be1", group="g")], now=30.0) == {"be1": "n"}
