"""A node updated in place (labels, taints, capacity, cordon), as the Kubernetes backend sees
node updates: the scheduler's answers follow, and the pods already on the node stay."""

from __future__ import annotations

import pytest

from berth.api.selectors import Taint
from tests.builders import feasible, node, pod, scheduler


def selecting(name: str = "p", **fields) -> object:
    return pod(name, node_selector={"pool": "gpu"}, **fields)


UPDATES = {
    # before, after (node "a"; node "b" never fits), pod, feasible after
    "a label added lets a selecting pod in": (
        node("a"),
        node("a", labels={"pool": "gpu"}),
        selecting(),
        {"a"},
    ),
    "a label removed keeps it out": (
        node("a", labels={"pool": "gpu"}),
        node("a"),
        selecting(),
        set(),
    ),
    "a NoSchedule taint keeps it out": (
        node("a", labels={"pool": "gpu"}),
        node("a", labels={"pool": "gpu"}, taints=(Taint("dedicated", "x", "NoSchedule"),)),
        selecting(),
        set(),
    ),
    "a taint removed lets it in": (
        node("a", labels={"pool": "gpu"}, taints=(Taint("dedicated", "x", "NoSchedule"),)),
        node("a", labels={"pool": "gpu"}),
        selecting(),
        {"a"},
    ),
    "less cpu than the pod asks": (
        node("a", cpu=4000, labels={"pool": "gpu"}),
        node("a", cpu=1000, labels={"pool": "gpu"}),
        selecting(cpu=2000),
        set(),
    ),
    "cordoned": (
        node("a", labels={"pool": "gpu"}),
        node("a", labels={"pool": "gpu"}, unschedulable=True),
        selecting(),
        set(),
    ),
    "GPUs added to an idle node": (
        node("a", labels={"pool": "gpu"}),
        node("a", gpu=2000, labels={"pool": "gpu"}),
        selecting(gpu=1500),
        {"a"},
    ),
}


@pytest.mark.parametrize("before,after,new,expected", UPDATES.values(), ids=UPDATES.keys())
def test_update(before, after, new, expected):
    s = scheduler([before, node("b")])
    assert feasible(s, new) != expected  # each update changes the answer
    s.update_node(after)
    assert feasible(s, new) == expected


def test_pods_on_an_updated_node_stay_and_count():
    s = scheduler([node("a", cpu=4000)], bound=[(pod("held", cpu=3000), "a")])
    s.update_node(node("a", cpu=8000, labels={"pool": "gpu"}))
    row = s.state.rows["a"]
    assert s.state.free[row, 0] == 5000
    assert "default/held" in s.state.pods_on[row]
    assert feasible(s, selecting(cpu=5000)) == {"a"}
    assert feasible(s, selecting(cpu=5001)) == set()


def test_gpus_cannot_change_under_pods_holding_them():
    s = scheduler([node("a", gpu=2000)], bound=[(pod("held", gpu=500), "a")])
    with pytest.raises(ValueError, match="node a: GPUs changed from 2 to 4 while pods hold"):
        s.update_node(node("a", gpu=4000, labels={"pool": "gpu"}))
    # Nothing of the refused update was taken.
    assert feasible(s, selecting()) == set()
