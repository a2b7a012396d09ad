"""Which pod goes first: Kubernetes' ``TestSortingActivePodsWithRanks``
(``pkg/controller/controller_utils_test.go``) and OpenKruise's ``TestSortingActivePods``,
``TestSameNodeRanker`` and ``TestSpreadConstraintsRanker``
(``pkg/controller/cloneset/utils/pod_sorter_test.go``), ported.

Times are seconds before ``NOW``; "month" is 30 days.
"""

from __future__ import annotations

import pytest

from berth.api.keys import DELETION_COST_ANNOTATION, HOSTNAME_LABEL, ZONE_LABEL
from berth.api.objects import Pod, PodPhase
from berth.controllers.pod_order import (
    kruise_deletion_order,
    kube_deletion_order,
    same_node_ranks,
    spread_ranks,
)

NOW = 10_000_000.0
MONTH = 30 * 24 * 3600.0
HOUR = 3600.0


def make(
    name: str,
    node: str,
    phase: str,
    ready: bool = False,
    restarts: int = 0,
    ready_ago: float | None = None,
    created_ago: float | None = None,
    cost: int | None = None,
) -> Pod:
    """A pod as the upstream tests build one; ``phase`` is Pending, Unknown or Running."""
    pod = Pod(name, uid=name)
    pod.bound_node = node
    if phase == "Running":
        pod.phase = PodPhase.RUNNING
    elif node:
        pod.phase = PodPhase.BOUND
    pod.ready_since = (NOW - (ready_ago or 0.0)) if ready else None
    pod.restarts = restarts
    pod.submit_time = NOW - created_ago if created_ago is not None else 0.0
    if cost is not None:
        pod.annotations[DELETION_COST_ANNOTATION] = str(cost)
    return pod


UNSCHEDULED = make("unscheduled", "", "Pending")
PENDING = make("pending", "node", "Pending")
NOT_READY = make("not-ready", "node", "Running")
READY_NOW = make("ready-now", "node", "Running", True, ready_ago=0, created_ago=0)
READY_THEN = make("ready-then", "node", "Running", True, ready_ago=MONTH, created_ago=MONTH)
HIGH_RESTARTS = make("ready-high-restarts", "node", "Running", True, 9001, 0, 0)
CREATED_THEN = make(
    "ready-now-created-then", "node", "Running", True, ready_ago=0, created_ago=MONTH
)
LOW_COST = make("low-deletion-cost", "node", "Running", True, 0, 0, MONTH, cost=10)
HIGH_COST = make("high-deletion-cost", "node", "Running", True, 0, 0, MONTH, cost=100)
READY_2H = make("ready-2-hours", "", "Running", True, ready_ago=2 * HOUR, created_ago=MONTH)
READY_5H = make("ready-5-hours", "", "Running", True, ready_ago=5 * HOUR, created_ago=MONTH)
READY_8H = make("ready-8-hours", "", "Running", True, ready_ago=8 * HOUR, created_ago=MONTH)


def kube_first(a: Pod, rank_a: int, b: Pod, rank_b: int) -> str:
    ranks = {a.ref: rank_a, b.ref: rank_b}
    return kube_deletion_order([b, a], ranks, NOW)[0].name


# Kubernetes: (lesser, its rank, greater, its rank): the lesser is deleted first.
KUBE_INEQUALITIES = [
    (UNSCHEDULED, 1, PENDING, 2),
    (UNSCHEDULED, 2, PENDING, 1),
    (NOT_READY, 1, READY_NOW, 1),
    (READY_NOW, 2, READY_THEN, 1),
    (READY_NOW, 1, READY_THEN, 1),
    (HIGH_RESTARTS, 1, READY_NOW, 1),
    (READY_NOW, 2, HIGH_RESTARTS, 1),
    (READY_NOW, 1, CREATED_THEN, 1),
    (CREATED_THEN, 2, READY_NOW, 1),
    (LOW_COST, 2, HIGH_COST, 1),
    (READY_2H, 1, READY_5H, 1),
]


@pytest.mark.parametrize(
    "lesser,lesser_rank,greater,greater_rank",
    KUBE_INEQUALITIES,
    ids=[f"{a.name}<{b.name}" for a, _, b, _ in KUBE_INEQUALITIES],
)
def test_kubernetes_order(lesser: Pod, lesser_rank: int, greater: Pod, greater_rank: int) -> None:
    assert kube_first(lesser, lesser_rank, greater, greater_rank) == lesser.name
    assert kube_first(greater, greater_rank, lesser, lesser_rank) == lesser.name


def test_kubernetes_compares_ready_times_by_powers_of_two() -> None:
    # 5 and 8 hours fall in the same power of two of nanoseconds (2^44): neither is "newer";
    # Kubernetes then goes by pod UID (random there), berth by a hash of it.
    a, b = READY_5H, READY_8H
    assert {kube_first(a, 1, b, 1), kube_first(b, 1, a, 1)} == {kube_first(a, 1, b, 1)}


def test_kubernetes_order_of_a_mixed_list() -> None:
    pods = [READY_THEN, CREATED_THEN, NOT_READY, UNSCHEDULED, PENDING, READY_NOW]
    assert [p.name for p in kube_deletion_order(pods, None, NOW)] == [
        "unscheduled",
        "pending",
        "not-ready",
        "ready-now",
        "ready-now-created-then",
        "ready-then",
    ]


# OpenKruise's CloneSet order: the same without the logarithmic comparison.
KRUISE_INEQUALITIES = [
    (UNSCHEDULED, PENDING),
    (NOT_READY, READY_NOW),
    (READY_NOW, READY_THEN),
    (HIGH_RESTARTS, READY_NOW),
    (READY_NOW, CREATED_THEN),
    (LOW_COST, HIGH_COST),
    (READY_2H, READY_5H),
    (READY_5H, READY_8H),
]


@pytest.mark.parametrize(
    "lesser,greater",
    KRUISE_INEQUALITIES,
    ids=[f"{a.name}<{b.name}" for a, b in KRUISE_INEQUALITIES],
)
def test_kruise_order(lesser: Pod, greater: Pod) -> None:
    assert kruise_deletion_order([greater, lesser])[0] is lesser
    assert kruise_deletion_order([lesser, greater])[0] is lesser


@pytest.mark.parametrize("pod", [UNSCHEDULED, PENDING, NOT_READY, READY_NOW, CREATED_THEN])
def test_a_pod_is_not_before_itself(pod: Pod) -> None:
    twin = make(pod.name, pod.bound_node, "Running" if pod.phase == PodPhase.RUNNING else "Pending")
    twin.ready_since, twin.submit_time, twin.uid = pod.ready_since, pod.submit_time, "twin"
    assert kruise_deletion_order([pod, twin]) == [pod, twin]
    assert kruise_deletion_order([twin, pod]) == [twin, pod]


def test_unavailable_pods_go_before_available_ones() -> None:
    # OpenKruise checks availability (ready for minReadySeconds) right after the phase.
    young, old = make("young", "node", "Running", True), make("old", "node", "Running", True)
    order = kruise_deletion_order([old, young], available=lambda p: p is old)
    assert [p.name for p in order] == ["young", "old"]


def test_same_node_ranker() -> None:
    # node a: 0, 4, 10; node b: 3, 6; node c: 5; node d: 7, 8, 9; 1 and 2 unscheduled.
    nodes = ["a", "", "", "b", "a", "c", "b", "d", "d", "d", "a"]
    pods = [Pod(str(i), uid=str(i), bound_node=node) for i, node in enumerate(nodes)]
    assert same_node_ranks(pods) == {"0": 2.0, "4": 1.0, "3": 1.0, "7": 2.0, "8": 1.0}


NODE_LABELS = {
    "a": {},
    "b": {HOSTNAME_LABEL: "b", ZONE_LABEL: "z1"},
    "c": {HOSTNAME_LABEL: "c", ZONE_LABEL: "z1"},
    "d": {HOSTNAME_LABEL: "d", ZONE_LABEL: "z1"},
    "e": {HOSTNAME_LABEL: "e", ZONE_LABEL: "z2"},
    "f": {HOSTNAME_LABEL: "f", ZONE_LABEL: "z2"},
    "g": {HOSTNAME_LABEL: "g", ZONE_LABEL: "z2"},
    "h": {HOSTNAME_LABEL: "h", ZONE_LABEL: "z3"},
    "i": {HOSTNAME_LABEL: "i", ZONE_LABEL: "z3"},
}
SPREAD_PODS = [
    Pod(f"{node}-{i}", uid=f"{node}-{i}", bound_node=node)
    for node, count in (("a", 2), ("b", 2), ("c", 3), ("d", 5), ("e", 5), ("f", 3), ("i", 5))
    for i in range(count)
]


@pytest.mark.parametrize(
    "keys,expected",
    [
        (
            [ZONE_LABEL],
            [
                "d-0", "d-1", "c-0", "e-0", "d-2", "e-1", "b-0", "e-2", "c-1", "f-0", "i-0",
                "d-3", "e-3", "i-1", "b-1", "f-1", "i-2", "c-2", "e-4", "i-3", "d-4", "f-2", "i-4",
            ],
        ),
        (
            [ZONE_LABEL, HOSTNAME_LABEL],
            [
                "d-0", "e-0", "d-1", "e-1", "c-0", "i-0", "d-2", "e-2", "i-1", "f-0", "b-0",
                "c-1", "i-2", "d-3", "e-3", "f-1", "i-3", "b-1", "c-2", "e-4", "d-4", "f-2", "i-4",
            ],
        ),
    ],
    ids=["zone", "zone, host"],
)  # fmt: skip
def test_spread_constraints_ranker(keys: list[str], expected: list[str]) -> None:
    ranks = spread_ranks(SPREAD_PODS, keys, NODE_LABELS.get)
    ranked = sorted(
        (p for p in SPREAD_PODS if ranks.get(p.ref, 0) > 0), key=lambda p: -ranks[p.ref]
    )
    assert [p.name for p in ranked] == expected
