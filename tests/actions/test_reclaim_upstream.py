"""Volcano's reclaim tests (pkg/scheduler/actions/reclaim/reclaim_test.go: TestReclaim), ported:
one tier of conformance, gang, proportion, capacity and priority with the switches Volcano's
table sets, each case using only the plugins it names, and only the reclaim action."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, check, only, tiers, vnode, vpod

#: The tier's entries, by plugin.
TIER = {
    "conformance": only("conformance", "Reclaimable"),
    "gang": only("gang", "Reclaimable", "JobStarving"),
    "proportion": only("proportion", "Reclaimable", "QueueOrder", "Preemptive"),
    "capacity": only("capacity", "Reclaimable", "QueueOrder", "Preemptive"),
    "priority": only("priority", "Reclaimable", "JobOrder", "TaskOrder"),
}
LOW, MID, HIGH = 100, 500, 1000


def config(*plugins: str):
    return tiers([TIER[name] for name in TIER if name in plugins], actions="reclaim")


def group(name: str, queue: str, min_member: int, priority: int, running: bool = False):
    phase = GroupPhase.RUNNING if running else GroupPhase.INQUEUE
    return PodGroup(name, "c1", min_member=min_member, queue=queue, priority=priority, phase=phase)


def on(node: str, name: str, grp: str, preemptable: bool = True, cpu: str = "1", mem: str = "1G"):
    return (vpod(name, cpu, mem, grp, namespace="c1", preemptable=preemptable), node)


def by(queue: str, *victims: str) -> dict[str, str]:
    return dict.fromkeys(victims, f"reclaimed by queue {queue}")


def reclaim_cases() -> dict[str, tuple[Case, tuple[str, ...]]]:
    cases: dict[str, tuple[Case, tuple[str, ...]]] = {}
    three = [
        on("n1", "preemptee1", "pg1", preemptable=False),
        on("n1", "preemptee2", "pg1"),
        on("n1", "preemptee3", "pg1", preemptable=False),
    ]
    cases["Two Queue with one Queue overusing resource, should reclaim"] = (
        Case(
            [vnode("n1", "3", "3Gi", 10)],
            groups=[group("pg1", "q1", 1, LOW), group("pg2", "q2", 1, HIGH)],
            queues=[Queue("q1"), Queue("q2")],
            bound=three,
            pods=[vpod("preemptor1", "1", "1G", "pg2", namespace="c1")],
            binds={"preemptor1": "n1"},
            evictions=by("q2", "preemptee2"),
        ),
        ("conformance", "gang", "proportion"),
    )
    four = [
        on("n1", "preemptee1-1", "pg1"),
        on("n1", "preemptee1-2", "pg1"),
        on("n1", "preemptee2-1", "pg2"),
        on("n1", "preemptee2-2", "pg2", preemptable=False),
    ]
    cases["sort reclaimees when reclaiming from overusing queue"] = (
        Case(
            [vnode("n1", "4", "4Gi", 10)],
            groups=[
                group("pg1", "q1", 1, MID),
                group("pg2", "q2", 1, LOW),
                group("pg3", "q3", 1, HIGH),
            ],
            queues=[Queue("q1"), Queue("q2"), Queue("q3")],
            bound=four,
            pods=[vpod("preemptor1", "1", "1G", "pg3", namespace="c1")],
            binds={"preemptor1": "n1"},
            evictions=by("q3", "preemptee2-1"),
        ),
        ("conformance", "gang", "priority", "proportion"),
    )
    four_kept = [four[0], on("n1", "preemptee1-2", "pg1", preemptable=False), *four[2:]]
    cases["sort reclaimees when reclaiming from overusing queues with different queue priority"] = (
        Case(
            [vnode("n1", "4", "4Gi", 10)],
            groups=[group(f"pg{i}", f"q{i}", 1, MID) for i in (1, 2, 3)],
            queues=[Queue("q1", priority=5), Queue("q2", priority=10), Queue("q3", priority=1)],
            bound=four_kept,
            pods=[vpod("preemptor1", "1", "1G", "pg3", namespace="c1")],
            binds={"preemptor1": "n1"},
            evictions=by("q3", "preemptee1-1"),
        ),
        ("conformance", "gang", "proportion"),
    )
    cases["can not reclaim resources when task preemption policy is never"] = (
        Case(
            [vnode("n1", "1", "1Gi", 1)],
            groups=[group("pg1", "q1", 0, LOW), group("pg2", "q2", 0, HIGH)],
            queues=[Queue("q1", weight=5), Queue("q2", weight=10)],
            bound=[on("n1", "preemptee1", "pg1")],
            pods=[vpod("preemptor1", "1", "1G", "pg2", namespace="c1", preemption_policy="Never")],
        ),
        ("conformance", "gang", "proportion"),
    )
    for plugin in ("proportion", "capacity"):
        cases[f"can not reclaim resources when queue is not open({plugin} plugin)"] = (
            Case(
                [vnode("n1", "3", "3Gi", 10)],
                groups=[group("pg1", "q1", 1, LOW, running=True), group("pg2", "q2", 1, HIGH)],
                queues=[Queue("q1"), Queue("q2", state="Closed")],
                bound=three,
                pods=[vpod("preemptor1", "1", "1G", "pg2", namespace="c1")],
            ),
            ("conformance", "gang", plugin),
        )
    cases["Node available resources should be included in reclaimed resources"] = (
        Case(
            [vnode("n1", "10", "2Gi", 10)],
            groups=[
                group("pg1", "q1", 0, MID, running=True),
                group("pg2", "q2", 0, MID, running=True),
                group("pg3", "q3", 1, MID),
            ],
            queues=[Queue("q1", priority=1), Queue("q2", priority=2), Queue("q3", weight=3)],
            bound=[on("n1", "preemptee1-1", "pg1"), on("n1", "preemptee2-1", "pg2")],
            pods=[vpod("preemptor1", "2", "1G", "pg3", namespace="c1")],
            binds={"preemptor1": "n1"},
            evictions=by("q3", "preemptee1-1"),
        ),
        ("conformance", "gang", "priority", "proportion"),
    )
    cases["Reclaim succeeds for second task when first task has PreemptionPolicy=Never"] = (
        Case(
            [vnode("n1", "2", "2G", 10)],
            groups=[
                group("pg-victim", "q1", 1, LOW, running=True),
                group("pg-preemptor", "q2", 2, HIGH),
            ],
            queues=[Queue("q1"), Queue("q2")],
            bound=[
                on("n1", "victim-pod-no", "pg-victim", preemptable=False),
                on("n1", "victim-pod", "pg-victim"),
            ],
            pods=[
                vpod(
                    "preemptor-task1-non-preemptable",
                    "1",
                    "1G",
                    "pg-preemptor",
                    namespace="c1",
                    preemption_policy="Never",
                ),
                vpod("preemptor-task2-preemptable", "1", "1G", "pg-preemptor", namespace="c1"),
            ],
            binds={"preemptor-task2-preemptable": "n1"},
            evictions=by("q2", "victim-pod"),
        ),
        ("conformance", "gang", "proportion", "priority"),
    )
    cases["only commit evictions on the node where reclaim succeeds"] = (
        Case(
            [vnode("n1", "10", "10G", 10)],
            groups=[
                group("pg-victim", "q1", 0, LOW, running=True),
                group("pg-preemptor", "q2", 1, LOW),
            ],
            queues=[Queue("q1", weight=1), Queue("q2", weight=9)],
            bound=[on("n1", "victim-n1", "pg-victim", cpu="2", mem="2G")],
            pods=[vpod("preemptor1", "3", "3G", "pg-preemptor", namespace="c1")],
            binds={"preemptor1": "n1"},
        ),
        ("conformance", "gang", "proportion"),
    )
    return cases


@pytest.mark.parametrize("name", reclaim_cases().keys())
def test_reclaim(name):
    case, plugins = reclaim_cases()[name]
    check(case, config(*plugins))
