"""resource-fit: a node fits when its free capacity covers every requested resource."""

from __future__ import annotations

import pytest

from tests.builders import node, place_one, pod, run, scheduler

FIT_CASES = {
    "cpu picks the only node with room": (
        [node("small", cpu=1000), node("big", cpu=4000)],
        [],
        pod("p", cpu=2000),
        "big",
    ),
    "memory picks the only node with room": (
        [node("a", mem=1024), node("b", mem=16384)],
        [],
        pod("p", mem=4096),
        "b",
    ),
    "exact fit on cpu and memory": (
        [node("a", cpu=500, mem=256), node("b", cpu=2000, mem=2048)],
        [],
        pod("p", cpu=2000, mem=2048),
        "b",
    ),
    "whole gpu needs a gpu node": (
        [node("cpu0"), node("gpu0", gpu=8000)],
        [],
        pod("p", gpu=1000),
        "gpu0",
    ),
    "fractional gpu fits beside another share": (
        [node("g", gpu=1000)],
        [(pod("other", gpu=600), "g")],
        pod("p", gpu=400),
        "g",
    ),
    "fractional gpu over the remaining share": (
        [node("g", gpu=1000)],
        [(pod("other", gpu=600), "g")],
        pod("p", gpu=500),
        None,
    ),
    "extended resource": (
        [node("plain"), node("fpga", extra={"example.com/fpga": 2})],
        [],
        pod("p", extra={"example.com/fpga": 2}),
        "fpga",
    ),
    "extended resource nobody has": (
        [node("a"), node("b")],
        [],
        pod("p", extra={"example.com/fpga": 1}),
        None,
    ),
    "bound pods reduce free cpu": (
        [node("a", cpu=4000), node("b", cpu=4000)],
        [(pod("x", cpu=3500), "a")],
        pod("p", cpu=1000),
        "b",
    ),
    "pods count limit": (
        [node("a", pods=1), node("b", pods=2)],
        [(pod("x", cpu=10), "a")],
        pod("p", cpu=10),
        "b",
    ),
    "pods count limit everywhere": (
        [node("a", pods=1)],
        [(pod("x", cpu=10), "a")],
        pod("p", cpu=10),
        None,
    ),
}


@pytest.mark.parametrize("nodes,bound,new,expected", FIT_CASES.values(), ids=FIT_CASES.keys())
def test_fit(nodes, bound, new, expected):
    where, _ = place_one(nodes, new, bound)
    assert where == expected


REASON_CASES = {
    "counts per resource": (
        [node("a", cpu=500), node("b", cpu=500), node("c", mem=512)],
        [],
        pod("p", cpu=1000, mem=1024),
        "0/3 nodes available: 2 insufficient cpu, 1 insufficient memory",
    ),
    "a node short of two resources counts under both": (
        [node("a", cpu=500, mem=512)],
        [],
        pod("p", cpu=1000, mem=1024),
        "0/1 nodes available: 1 insufficient cpu, 1 insufficient memory",
    ),
    "gpu": (
        [node("a"), node("b")],
        [],
        pod("p", gpu=1000),
        "0/2 nodes available: 2 insufficient nvidia.com/gpu",
    ),
    "pods": (
        [node("a", pods=1)],
        [(pod("x", cpu=10), "a")],
        pod("p", cpu=10),
        "0/1 nodes available: 1 insufficient pods",
    ),
    "extended": (
        [node("a")],
        [],
        pod("p", extra={"example.com/fpga": 1}),
        "0/1 nodes available: 1 insufficient example.com/fpga",
    ),
    "mixed with selector and unschedulable": (
        [
            node("a", cpu=500, labels={"pool": "y"}),
            node("b", cpu=500, labels={"pool": "y"}),
            node("c", labels={"pool": "x"}),
            node("d", unschedulable=True),
        ],
        [],
        pod("p", cpu=1000, node_selector={"pool": "y"}),
        "0/4 nodes available: 2 insufficient cpu, 1 node affinity/selector mismatch, "
        "1 node unschedulable",
    ),
}


@pytest.mark.parametrize("nodes,bound,new,reason", REASON_CASES.values(), ids=REASON_CASES.keys())
def test_reason(nodes, bound, new, reason):
    where, s = place_one(nodes, new, bound)
    assert where is None
    assert s.pending_reason(new) == reason


def test_second_pod_sees_first_pods_request():
    # Two pods of the same class in one session: the second must not reuse the stale free cpu.
    s = scheduler([node("a", cpu=3000), node("b", cpu=1000)])
    binds = run(s, [pod("p1", cpu=2000), pod("p2", cpu=2000)])
    assert binds == {"p1": "a"}
