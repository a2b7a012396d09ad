"""Volcano's enqueue tests (pkg/scheduler/actions/enqueue/enqueue_test.go: TestEnqueue), ported:
drf, proportion, sla (3m) and gang with the switches Volcano's table sets, only the enqueue
action, and the phase each PodGroup must be in afterwards."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, amounts, check, only, tiers, vpod

ENQUEUE = tiers(
    [
        only("drf", "JobOrder", "JobEnqueued"),
        only("proportion", "QueueOrder", "JobEnqueued"),
        only("sla", "JobOrder", "JobEnqueued", arguments={"sla-waiting-time": "3m"}),
        only("gang", "JobOrder"),
    ],
    actions="enqueue",
)
Q = {
    "c1": Queue("c1", capability=amounts("4", "4G")),
    "c2": Queue("c2", capability=amounts("4", "4G")),
}


def group(name: str, queue: str, min_member: int, phase: GroupPhase, **kw) -> PodGroup:
    return PodGroup(name, "c1", min_member=min_member, queue=queue, phase=phase, **kw)


def pods(*specs: tuple[str, str, str]) -> list:
    return [vpod(name, cpu, "1G", grp, namespace="c1") for name, cpu, grp in specs]


ENQUEUE_CASES = {
    "when podgroup status is inqueue": Case(
        [],
        groups=[group("pg1", "c1", 2, GroupPhase.INQUEUE)],
        queues=[Q["c1"], Q["c2"]],
        pods=pods(("p1", "1", "pg1"), ("p2", "1", "pg1")),
        phases={"c1/pg1": GroupPhase.INQUEUE},
    ),
    "when podgroup status is pending": Case(
        [],
        groups=[
            group("pg1", "c1", 1, GroupPhase.PENDING),
            group("pg2", "c2", 1, GroupPhase.PENDING),
        ],
        queues=[Q["c1"], Q["c2"]],
        pods=pods(("p1", "3", "pg1"), ("p2", "1", "pg2")),
        phases={"c1/pg1": GroupPhase.INQUEUE, "c1/pg2": GroupPhase.INQUEUE},
    ),
    "when podgroup status is running": Case(
        [],
        groups=[group("pg1", "c1", 2, GroupPhase.RUNNING)],
        queues=[Q["c1"]],
        phases={"c1/pg1": GroupPhase.RUNNING},
    ),
    "pggroup cannot enqueue because the specified queue is c1, but there is only c2": Case(
        [],
        groups=[group("pg1", "c1", 0, GroupPhase.PENDING)],
        queues=[Q["c2"]],
        phases={"c1/pg1": GroupPhase.PENDING},
    ),
    "pggroup cannot enqueue because queue resources are less than podgroup MinResources": Case(
        [],
        groups=[
            group("pg1", "c1", 1, GroupPhase.PENDING, min_resources=amounts("8", "8G")),
        ],
        queues=[Queue("c1", capability=amounts("1", "1G"))],
        phases={"c1/pg1": GroupPhase.PENDING},
    ),
}


@pytest.mark.parametrize("case", ENQUEUE_CASES.values(), ids=ENQUEUE_CASES.keys())
def test_enqueue(case):
    check(case, ENQUEUE)
