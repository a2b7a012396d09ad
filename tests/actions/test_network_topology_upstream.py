"""Volcano's allocate tests for network topologies (pkg/scheduler/actions/allocate/
allocate_test.go: TestAllocateWithNetWorkTopologies, TestNodeLevelScoreWithNetWorkTopologies,
TestHyperNodeBinpackWithNetWorkTopologies), ported: the same nodes, HyperNodes, groups and
pods, and the same number of bindings (and placements where Volcano checks them).

Left out: the ``highestTierName`` rows (berth reads ``highestTierAllowed`` only, see
docs/topology.md) and the sub-group rows (berth has no sub-groups). A running pod's group
names the HyperNode that holds it in Volcano's tests; berth works it out from the pods.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from berth.api.hypernodes import HyperNode
from berth.api.keys import TASK_NAME_LABEL
from berth.api.objects import NetworkTopology, PodGroup, Queue
from tests.builders import (
    GANG,
    Case,
    check,
    config,
    hypernode,
    run,
    scheduler,
    three_tiers,
    vnode,
    vpod,
)

NTA = "network-topology-aware"
PLUGINS = config(["gang", "predicates", NTA])


def two_racks() -> list[HyperNode]:
    """s0 = {s0-n1, s0-n2}, s1 = {s1-n3, s1-n4} in tier 1, s2 over both in tier 2."""
    return [
        hypernode("s0", 1, "s0-n1", "s0-n2"),
        hypernode("s1", 1, "s1-n3", "s1-n4"),
        hypernode("s2", 2, "s0", "s1"),
    ]


def nodes(*names: str, cpu: str = "2", mem: str = "4Gi") -> list:
    return [vnode(n, cpu, mem, 10) for n in names]


FOUR = ("s0-n1", "s0-n2", "s1-n3", "s1-n4")
EIGHT = tuple(f"s{i}-n{j}" for i in range(3, 7) for j in (1, 2))


def group(min_member: int, mode: str, tier: int | None) -> PodGroup:
    topology = NetworkTopology(hard=mode == "hard", highest_tier=tier)
    return PodGroup("pg1", "c1", min_member=min_member, queue="q1", network_topology=topology)


def task(name: str, role: str, cpu: str = "2", mem: str = "4G", **fields: object) -> object:
    return vpod(name, cpu, mem, "pg1", namespace="c1", labels={TASK_NAME_LABEL: role}, **fields)


def fresh(count: int) -> list:
    return [task(f"p{i + 1}", "master" if i == 0 else "worker") for i in range(count)]


def rescheduled(first: str, second: str) -> tuple[list, list]:
    """Two running pods on ``first`` and ``second``, a third pending."""
    bound = [(task("p1", "master"), first), (task("p2", "worker"), second)]
    return bound, [task("p3", "worker")]


@dataclass
class Row:
    """One row of TestAllocateWithNetWorkTopologies: Volcano checks only how many pods bind."""

    min_member: int
    mode: str
    tier: int | None
    binds: int
    nodes: list = field(default_factory=lambda: nodes(*FOUR))
    hypernodes: list[HyperNode] = field(default_factory=two_racks)
    bound: list = field(default_factory=list)
    pods: list = field(default_factory=lambda: fresh(3))


def rows() -> dict[str, Row]:
    bound, pending = rescheduled("s0-n1", "s0-n2")
    bound3, pending3 = rescheduled("s3-n1", "s3-n2")
    deep = {"nodes": nodes(*EIGHT), "hypernodes": three_tiers(), "bound": bound3, "pods": pending3}
    again = {"bound": bound, "pods": pending}
    return {
        "soft, enough resources": Row(3, "soft", None, 3),
        "soft, minAvailable < replicas": Row(1, "soft", None, 2, pods=fresh(2)),
        "soft, rescheduled, enough resources": Row(2, "soft", None, 1, **again),
        "soft, rescheduled, minAvailable = replicas": Row(3, "soft", None, 1, **again),
        "soft, rescheduled, three tiers": Row(2, "soft", None, 1, **deep),
        "hard, cannot cross highestTierAllowed": Row(3, "hard", 1, 0),
        "hard, highestTierAllowed not reached": Row(3, "hard", 2, 3),
        "hard, several HyperNodes available": Row(2, "hard", 1, 2, pods=fresh(2)),
        "hard, minAvailable < replicas": Row(1, "hard", 1, 2, pods=fresh(2)),
        "hard, rescheduled, tier not reached": Row(2, "hard", 2, 1, **again),
        "hard, rescheduled, minAvailable = replicas": Row(3, "hard", 2, 1, **again),
        "hard, rescheduled, three tiers, tier not reached": Row(2, "hard", 2, 1, **deep),
        "hard, rescheduled, cannot cross tier": Row(2, "hard", 1, 0, **again),
        "hard, rescheduled, three tiers, cannot cross tier": Row(2, "hard", 1, 0, **deep),
        # Only tier-1 HyperNodes and tier 2 allowed: the tier above them is the whole cluster.
        "hard, rescheduled, no HyperNode of the allowed tier": Row(
            2, "hard", 2, 1, hypernodes=two_racks()[:2], **again
        ),
    }


ROWS = rows()


@pytest.mark.parametrize("name", list(ROWS))
def test_allocate_with_network_topologies(name: str) -> None:
    row = ROWS[name]
    s = scheduler(
        row.nodes,
        PLUGINS,
        queues=[Queue("q1")],
        groups=[group(row.min_member, row.mode, row.tier)],
        bound=row.bound,
    )
    s.state.hypernodes = list(row.hypernodes)
    assert len(run(s, row.pods)) == row.binds


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_node_affinity_picks_the_hypernode(mode: str) -> None:
    """Two one-node HyperNodes; only the second node carries the label the pod selects."""
    case = Case(
        nodes=[
            vnode("s0-n1", "2", "4Gi", 10),
            vnode("s1-n2", "2", "4Gi", 10, labels={"nodeRole": "master"}),
        ],
        hypernodes=[hypernode("s0", 1, "s0-n1"), hypernode("s1", 1, "s1-n2")],
        queues=[Queue("q1")],
        groups=[group(1, mode, 1)],
        pods=[task("p1", "master", node_selector={"nodeRole": "master"})],
        binds={"p1": "s1-n2"},
    )
    check(case, PLUGINS)


def test_gang_goes_to_the_fuller_hypernode() -> None:
    """Node-level binpack with the HyperNode order: s0 already runs pg2, so pg1 (tier 1, hard)
    goes to s0 too, its pods on the nodes binpack prefers."""
    running = PodGroup("pg2", "c1", min_member=2, queue="q1")
    case = Case(
        nodes=[
            vnode("s0-n1", "4", "8Gi", 10),
            vnode("s0-n2", "8", "16Gi", 10),
            vnode("s1-n3", "4", "8Gi", 10),
            vnode("s1-n4", "8", "16Gi", 10),
        ],
        hypernodes=two_racks(),
        queues=[Queue("q1")],
        groups=[group(2, "hard", 1), running],
        bound=[
            (vpod("p3", "2", "4Gi", "pg2", namespace="c1"), "s0-n1"),
            (vpod("p4", "4", "8Gi", "pg2", namespace="c1"), "s0-n2"),
        ],
        pods=[task("p1", "master", "2", "4Gi"), task("p2", "worker", "4", "8Gi")],
        binds={"p1": "s0-n1", "p2": "s0-n2"},
    )
    check(case, config(["gang", "predicates", "binpack", NTA]))


def test_gang_fills_a_rack_before_the_next() -> None:
    """Four 4-cpu pods, hard up to tier 2, three racks of two 4-cpu nodes: no rack holds the
    gang, so it goes under the spine, two pods in each of two racks (the node score draws
    each pod to the rack of the pods already placed)."""
    racks = [hypernode(f"s{i}", 1, f"s{i}-n{2 * i + 1}", f"s{i}-n{2 * i + 2}") for i in range(3)]
    names = [f"s{i}-n{2 * i + j}" for i in range(3) for j in (1, 2)]
    case = Case(
        nodes=nodes(*names, cpu="4", mem="8Gi"),
        hypernodes=[*racks, hypernode("s3", 2, "s0", "s1", "s2")],
        queues=[Queue("q1")],
        groups=[group(4, "hard", 2)],
        pods=[task(f"p{i}", "worker", "4", "8Gi") for i in range(1, 5)],
        binds={f"p{i}" for i in range(1, 5)},
    )
    check(case, PLUGINS)
    racks_used = Counter(p.bound_node.split("-")[0] for p in case.pods)
    assert sorted(racks_used.values()) == [2, 2]


def test_hard_gang_waits_with_the_topology_reason() -> None:
    case = Case(
        nodes=nodes(*FOUR),
        hypernodes=two_racks(),
        queues=[Queue("q1")],
        groups=[group(3, "hard", 1)],
        pods=fresh(3),
        binds={},
    )
    s = check(case, PLUGINS)
    reason = s.pending_reason(case.pods[0])
    assert reason == (
        "networkTopology: no HyperNode of tier 1 or lower can hold the gang (2 without the idle "
        "capacity, 0 tried)"
    )


def test_without_hypernodes_the_topology_is_ignored() -> None:
    """A group with a networkTopology on a cluster without HyperNodes schedules as usual."""
    case = Case(
        nodes=nodes(*FOUR),
        queues=[Queue("q1")],
        groups=[group(3, "hard", 1)],
        pods=fresh(3),
        binds={"p1", "p2", "p3"},
    )
    check(case, PLUGINS)


def test_preempt_keeps_a_hard_gang_within_its_tier() -> None:
    """Four full nodes in two racks of two; a high-priority gang of three that must share a
    rack cannot start by preemption across racks (berth leaves a hard gang with no pod running
    to allocate), while the same gang in soft mode preempts three of the low pods."""
    cfg = config(
        ["priority", GANG, "predicates", NTA], actions="enqueue, allocate, preempt, backfill"
    )
    for mode, evicted in (("hard", 0), ("soft", 3)):
        low = PodGroup("low", "c1", min_member=1, queue="q1")
        high = PodGroup(
            "pg1",
            "c1",
            min_member=3,
            queue="q1",
            priority=10,
            network_topology=NetworkTopology(hard=mode == "hard", highest_tier=1),
        )
        bound = [(vpod(f"l{i}", "2", "4G", "low", namespace="c1"), n) for i, n in enumerate(FOUR)]
        s = scheduler(nodes(*FOUR), cfg, queues=[Queue("q1")], groups=[low, high], bound=bound)
        s.state.hypernodes = two_racks()
        binds = run(s, fresh(3))
        assert len(s.evictions) == evicted, mode
        assert len(binds) == evicted, mode


def test_preempt_stays_in_the_rack_of_the_running_pods() -> None:
    """A gang of two runs one pod in rack s0 (its other was lost); the replacement, with no
    idle room anywhere, preempts the pod in s0 although those in s1 are cheaper victims."""
    cfg = config(
        ["priority", GANG, "predicates", NTA], actions="enqueue, allocate, preempt, backfill"
    )
    low = PodGroup("low", "c1", min_member=1, queue="q1")
    mid = PodGroup("mid", "c1", min_member=1, queue="q1", priority=5)
    high = PodGroup(
        "pg1", "c1", min_member=2, queue="q1", priority=10,
        network_topology=NetworkTopology(hard=True, highest_tier=1),
    )  # fmt: skip
    bound = [
        (task("p1", "master", priority=10), "s0-n1"),
        (vpod("l1", "2", "4G", "mid", namespace="c1"), "s0-n2"),
        (vpod("l2", "2", "4G", "low", namespace="c1"), "s1-n3"),
        (vpod("l3", "2", "4G", "low", namespace="c1"), "s1-n4"),
    ]
    groups = [low, mid, high]
    s = scheduler(nodes(*FOUR), cfg, queues=[Queue("q1")], groups=groups, bound=bound)
    s.state.hypernodes = two_racks()
    binds = run(s, [task("p2", "worker", priority=10)])
    assert [e.pod.name for e in s.evictions] == ["l1"]
    assert binds == {"p2": "s0-n2"}
