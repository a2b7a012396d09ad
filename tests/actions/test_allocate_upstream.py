"""Volcano's allocate tests (pkg/scheduler/actions/allocate/allocate_test.go: TestAllocate and
TestFareShareAllocate) and its hierarchical DRF tests (plugins/drf/hdrf_test.go), ported: the
same clusters, pods, groups, queues and plugin switches, and the same expected placements.

Network-topology, sub-group, PVC and DRA cases are left out: berth has none of those features.
"""

from __future__ import annotations

from collections import Counter

import pytest

from berth.api.keys import TASK_NAME_LABEL
from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, amounts, check, only, run, scheduler, tiers, vnode, vpod

ALLOCATE = tiers(
    [
        only("gang", "JobOrder", "JobReady", "JobPipelined", "JobStarving"),
        only("drf", "Preemptable", "JobOrder"),
        only("proportion", "QueueOrder", "Reclaimable", "Allocatable"),
        only("predicates", "Predicate"),
        only("nodeorder", "NodeOrder"),
    ],
    actions="allocate",
)


def role(name: str, task: str, group: str = "pg1") -> object:
    """A 1-CPU pod of task ``task`` that must go to a node labelled nodeRole=<task>."""
    return vpod(
        name,
        "1",
        "1G",
        group,
        namespace="c1",
        labels={TASK_NAME_LABEL: task},
        node_selector={"nodeRole": task},
    )


def allocate_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    cases["prepredicate failed: node selector does not match"] = Case(
        [vnode("n1", "2", "4Gi", 10, labels={"nodeRole": "worker"})],
        groups=[PodGroup("pg1", "c1", min_member=1, queue="c1")],
        queues=[Queue("c1")],
        pods=[role("p1", "master"), role("p2", "worker")],
        binds={"p2": "n1"},
    )
    masters_and_workers = [
        role("p0", "master"),
        role("p1", "master"),
        role("p2", "worker"),
        role("p3", "worker"),
    ]
    cases["prepredicate failed and tasks are not used up, continue on until min member meet"] = (
        Case(
            [
                vnode("n1", "1", "2Gi", 10, labels={"nodeRole": "master"}),
                vnode("n2", "1", "2Gi", 10, labels={"nodeRole": "worker"}),
            ],
            groups=[
                PodGroup(
                    "pg1",
                    "c1",
                    min_member=2,
                    queue="c1",
                    min_task_member={"master": 1, "worker": 1},
                )
            ],
            queues=[Queue("c1")],
            pods=masters_and_workers,
            binds={"p0": "n1", "p2": "n2"},
        )
    )
    cases["master's min member can not be allocated, break from allocating"] = Case(
        [
            vnode("n1", "1", "2Gi", 10, labels={"nodeRole": "master"}),
            vnode("n2", "2", "2Gi", 10, labels={"nodeRole": "worker"}),
        ],
        groups=[
            PodGroup(
                "pg1", "c1", min_member=2, queue="c1", min_task_member={"master": 2, "worker": 0}
            )
        ],
        queues=[Queue("c1")],
        pods=[role(p.name, p.labels[TASK_NAME_LABEL]) for p in masters_and_workers],
        binds={},
    )
    cases["one Job with two Pods on one node"] = Case(
        [vnode("n1", "2", "4Gi", 10)],
        groups=[PodGroup("pg1", "c1", min_member=0, queue="c1")],
        queues=[Queue("c1")],
        pods=[vpod(f"p{i}", "1", "1G", "pg1", namespace="c1") for i in (1, 2)],
        binds={"p1": "n1", "p2": "n1"},
    )
    cases["two Jobs on one node"] = Case(
        [vnode("n1", "2", "4G", 10)],
        groups=[
            PodGroup("pg1", "c1", min_member=0, queue="c1"),
            PodGroup("pg2", "c2", min_member=0, queue="c2"),
        ],
        queues=[Queue("c1"), Queue("c2")],
        pods=[
            vpod(f"{g}-p-{i}", "1", "1G", g, namespace=ns)
            for g, ns in (("pg1", "c1"), ("pg2", "c2"))
            for i in (1, 2)
        ],
        binds={"pg1-p-1": "n1", "pg2-p-1": "n1"},
    )
    cases["high priority queue should not block others"] = Case(
        [vnode("n1", "2", "4G", 10)],
        groups=[
            PodGroup("pg1", "c1", min_member=0, queue="c1"),
            PodGroup("pg2", "c1", min_member=0, queue="c2"),
        ],
        queues=[Queue("c1"), Queue("c2")],
        pods=[
            vpod("p1", "3", "1G", "pg1", namespace="c1"),
            vpod("p2", "1", "1G", "pg2", namespace="c1"),
        ],
        binds={"p2": "n1"},
    )
    return cases


@pytest.mark.parametrize("name", allocate_cases().keys())
def test_allocate(name):
    check(allocate_cases()[name], ALLOCATE)


FAIR_SHARE = tiers(
    [
        only("drf", "Preemptable", "JobOrder"),
        only("proportion", "QueueOrder", "Reclaimable"),
        only("predicates", "Predicate"),
        only("nodeorder", "NodeOrder"),
    ],
    actions="allocate",
)


def fair_share_cases() -> dict[str, Case]:
    def group(name: str, queue: str, running: bool = False) -> PodGroup:
        phase = GroupPhase.RUNNING if running else GroupPhase.INQUEUE
        return PodGroup(name, "ns-1", min_member=0, queue=queue, phase=phase)

    small = (vpod("pod-small-1", "1", "1G", "pg-small-1", namespace="ns-1"), "node-1")
    node = [vnode("node-1", "5", "5G", 10)]
    cases: dict[str, Case] = {}
    cases["queue with low DRF share value has high priority, should allocate first"] = Case(
        node,
        groups=[
            group("pg-small-1", "q-1", True),
            group("pg-large-1", "q-1"),
            group("pg-large-2", "q-2"),
        ],
        queues=[Queue("q-1"), Queue("q-2")],
        bound=[small],
        pods=[
            vpod("pod-large-1", "2", "2G", "pg-large-1", namespace="ns-1"),
            vpod("pod-large-2", "3", "2G", "pg-large-2", namespace="ns-1"),
        ],
        binds={"pod-large-2": "node-1"},
    )
    cases[
        "queue's DRF share value will be updated and its priority will change before it is "
        "put back into the priority queue"
    ] = Case(
        node,
        groups=[
            group("pg-small-1", "q-1", True),
            group("pg-large-1", "q-1"),
            group("pg-small-2", "q-2"),
            group("pg-large-2", "q-2"),
        ],
        queues=[Queue("q-1"), Queue("q-2")],
        bound=[small],
        pods=[
            vpod("pod-large-1", "2", "2G", "pg-large-1", namespace="ns-1"),
            vpod("pod-large-2", "2", "2G", "pg-large-2", namespace="ns-1"),
            vpod("pod-small-2", "1", "1G", "pg-small-2", namespace="ns-1"),
        ],
        binds={"pod-large-1": "node-1", "pod-large-2": "node-1"},
    )
    cases["queue's one jobs has no pending tasks, should be put back to queues for next job"] = (
        Case(
            node,
            groups=[group("pg-1", "q-1", True), group("pg-2", "q-1")],
            queues=[Queue("q-1")],
            bound=[(vpod("pod-1", "1", "1G", "pg-1", namespace="ns-1"), "node-1")],
            pods=[vpod("pod-2", "2", "2G", "pg-2", namespace="ns-1")],
            binds={"pod-2": "node-1"},
        )
    )
    return cases


@pytest.mark.parametrize("name", fair_share_cases().keys())
def test_fair_share_allocate(name):
    check(fair_share_cases()[name], FAIR_SHARE)


HDRF = tiers(
    [
        only("drf", "QueueOrder", "JobOrder", enableHierarchy=True),
        only("proportion", "JobEnqueued", "QueueOrder", "Reclaimable"),
    ],
    actions="allocate",
)


def annotated(name: str, path: str, weights: str) -> Queue:
    return Queue(
        name,
        annotations={"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights},
    )


def pods_of(group: str, count: int, cpu: str, mem: str) -> list:
    return [vpod(f"{group}-p{i}", cpu, mem, group) for i in range(count)]


HDRF_CASES = {
    # groups (name, queue, cpu, memory of each of its pods, pods), queues, node, expected
    # resources per group (cpu, memory) once allocate is done
    "rescaling test": (
        [("pg1", "root-sci", "1", "1G", 10), ("pg21", "root-eng-dev", "1", "0", 10)]
        + [("pg22", "root-eng-prod", "0", "1G", 10)],
        [
            annotated("root-sci", "root/sci", "100/50"),
            annotated("root-eng-dev", "root/eng/dev", "100/50/50"),
            annotated("root-eng-prod", "root/eng/prod", "100/50/50"),
        ],
        vnode("n", "10", "10G", 50),
        {"pg1": ("5", "5G"), "pg21": ("5", "0"), "pg22": ("0", "5G")},
    ),
    # Both pg31 and pg32 are in queue root-pg3-pg31, as in Volcano's table.
    "blocking nodes test": (
        [
            ("pg1", "root-pg1", "1", "0", 30),
            ("pg2", "root-pg2", "1", "0", 30),
            ("pg31", "root-pg3-pg31", "1", "0", 30),
            ("pg32", "root-pg3-pg31", "0", "1G", 30),
            ("pg4", "root-pg4", "0", "1G", 30),
        ],
        [
            annotated("root-pg1", "root/pg1", "100/25"),
            annotated("root-pg2", "root/pg2", "100/25"),
            annotated("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
            annotated("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
            annotated("root-pg4", "root/pg4", "100/25"),
        ],
        vnode("n", "30", "30G", 500),
        {
            "pg1": ("10", "0"),
            "pg2": ("10", "0"),
            "pg31": ("10", "0"),
            "pg32": ("0", "15G"),
            "pg4": ("0", "15G"),
        },
    ),
}


@pytest.mark.parametrize("groups,queues,node,expected", HDRF_CASES.values(), ids=HDRF_CASES.keys())
def test_hierarchical_drf(groups, queues, node, expected):
    s = scheduler(
        [node],
        HDRF,
        queues=queues,
        groups=[PodGroup(g, min_member=0, queue=q) for g, q, *_ in groups],
    )
    pods = [p for g, _, cpu, mem, count in groups for p in pods_of(g, count, cpu, mem)]
    binds = run(s, pods)
    held: dict[str, Counter] = {}
    for p in pods:
        if p.name in binds:
            held.setdefault(p.group, Counter()).update(p.requests)
    for group, (cpu, mem) in expected.items():
        got = held.get(group, Counter())
        assert {k: got[k] for k in ("cpu", "memory") if got[k]} == amounts(cpu, mem), group
