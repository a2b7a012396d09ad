"""Volcano's proportion tests (pkg/scheduler/plugins/proportion/proportion_test.go:
TestEnqueueAndAllocable and TestAllocate) and overcommit tests
(plugins/overcommit/overcommit_test.go), ported with the switches each table sets.

TestProportion (queue metrics over Prometheus after pod groups are deleted) has no decision to
port: berth reports queue shares in its outputs instead."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, amounts, check, only, tiers, vnode, vpod


def group(name: str, queue: str, phase: GroupPhase, cpu: str = "", mem: str = "") -> PodGroup:
    resources = amounts(cpu, mem) if cpu or mem else {}
    return PodGroup(name, "ns1", min_member=1, queue=queue, phase=phase, min_resources=resources)


RUNNING, PENDING = GroupPhase.RUNNING, GroupPhase.PENDING


def proportion(*switches: str):
    return tiers([only("proportion", *switches)], actions="enqueue, allocate")


ALL = proportion("Allocatable", "Overused", "JobEnqueued")
ENQUEUEABLE = proportion("JobEnqueued")
ALLOCATABLE = proportion("Allocatable")


def enqueue_and_allocate_cases() -> dict[str, tuple[Case, object]]:
    nodes = [vnode("n1", "2", "2G", 10), vnode("n2", "2", "2G", 10)]
    queues = [
        Queue("q1", capability=amounts("2", "2G")),
        Queue("q2", capability=amounts("3", "3G")),
        Queue("q3", capability=amounts("3", "3G"), state="Closed"),
    ]
    held = [
        (vpod("pod1", "1", "2G", "pg1", namespace="ns1"), "n1"),
        (vpod("pod2", "2", "1G", "pg2", namespace="ns1"), "n2"),
    ]
    running = [group("pg1", "q1", RUNNING, "1", "2G"), group("pg2", "q2", RUNNING, "2", "1G")]

    def case(grp: PodGroup, cpu: str, mem: str, binds: dict[str, str]) -> Case:
        pod = vpod(f"pod{grp.name[2:]}", cpu, mem, grp.name, namespace="ns1")
        return Case(
            nodes, groups=[*running, grp], queues=queues, bound=held, pods=[pod], binds=binds
        )

    return {
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated": (
            case(group("pg3", "q1", PENDING, "1", "0"), "1", "0", {"pod3": "n1"}),
            ALL,
        ),
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated": (
            case(group("pg4", "q2", PENDING, "0", "1G"), "0", "1G", {"pod4": "n2"}),
            ALL,
        ),
        "case2: exceed capacity, can not enqueue": (
            case(group("pg5", "q1", PENDING, "1", "1G"), "1", "1G", {}),
            ENQUEUEABLE,
        ),
        "case3: exceed deserved, can not allocate": (
            case(group("pg5", "q1", PENDING, "1", "1G"), "1", "1G", {}),
            ALLOCATABLE,
        ),
        "case4: queue with  non-open state, can not enqueue": (
            case(group("pg6", "q3", PENDING, "1", "1G"), "1", "1G", {}),
            ENQUEUEABLE,
        ),
    }


@pytest.mark.parametrize("name", enqueue_and_allocate_cases().keys())
def test_enqueue_and_allocable(name):
    case, cfg = enqueue_and_allocate_cases()[name]
    check(case, cfg)


def test_pods_are_assigned_in_the_order_of_queue_priority():
    cap = amounts("2", "4Gi")
    check(
        Case(
            [vnode("n1", "2", "4Gi", 10), vnode("n2", "2", "4Gi", 10)],
            groups=[
                group("pg1", "q1", RUNNING),
                group("pg2", "q2", GroupPhase.INQUEUE),
                group("pg3", "q3", GroupPhase.INQUEUE),
            ],
            queues=[
                Queue("q1", priority=5, capability=cap),
                Queue("q2", priority=1, capability=cap),
                Queue("q3", priority=10, capability=cap),
            ],
            bound=[(vpod("p1", "2", "4Gi", "pg1", namespace="ns1"), "n1")],
            pods=[
                vpod("p2", "2", "4Gi", "pg2", namespace="ns1"),
                vpod("p3", "2", "4Gi", "pg3", namespace="ns1"),
            ],
            binds={"p3": "n2"},
        ),
        tiers([only("proportion", "QueueOrder")], actions="allocate, reclaim"),
    )


OVERCOMMIT_CASES = {
    # factor, the group's minResources, whether it is admitted
    "overCommitFactor is more than 0": (1.2, ("2000m", "2G"), True),
    "overCommitFactor is less than 0": (0.8, ("2000m", "2G"), True),
    "when the required resources of pg are too large": (1.2, ("20000m", "20G"), False),
    "when pg does not fill MinResources": (1.2, None, True),
}


@pytest.mark.parametrize(
    "factor,minimum,admitted", OVERCOMMIT_CASES.values(), ids=OVERCOMMIT_CASES.keys()
)
def test_overcommit(factor, minimum, admitted):
    cfg = tiers(
        [only("overcommit", "JobEnqueued", arguments={"overcommit-factor": factor})],
        actions="enqueue",
    )
    if factor < 1:
        assert cfg.warnings and "using Volcano's default 1.2" in cfg.warnings[0]
    resources = amounts(*minimum) if minimum else {}
    pg = PodGroup("pg1", "test-namespace", min_member=2, queue="c1", min_resources=resources)
    expected = GroupPhase.INQUEUE if admitted else GroupPhase.PENDING
    check(
        Case(
            [vnode("n1", "2", "4Gi"), vnode("n2", "4", "16Gi")],
            groups=[pg],
            queues=[Queue("c1", capability=amounts("200m", "0.5G"))],
            phases={"test-namespace/pg1": expected},
        ),
        cfg,
    )
