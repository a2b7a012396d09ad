"""Volcano's preempt tests (pkg/scheduler/actions/preempt/preempt_test.go: TestPreempt, and the
cases of TestTopologyAwarePreempt that are not in it) and the priority plugin's preemption tests
(plugins/priority/priority_test.go), ported with the same plugin switches.

Only the preempt action runs, as upstream. Where Volcano pipelines the preemptor onto the room it
freed, berth binds it.
"""

from __future__ import annotations

import pytest

from berth.api.keys import HOSTNAME_LABEL
from berth.api.objects import PodGroup, Queue
from berth.api.selectors import Affinity, LabelSelector, Requirement
from berth.api.selectors import PodAffinityTerm as Term
from tests.builders import Case, amounts, check, only, tiers, vnode, vpod

HIGH, LOW = 100000, 10

PREEMPT = tiers(
    [
        only("conformance", "Preemptable"),
        only("gang", "Preemptable", "JobPipelined", "JobStarving"),
        only("priority", "TaskOrder", "JobOrder", "Preemptable", "JobPipelined", "JobStarving"),
        only("proportion", "Overused", "Allocatable", "QueueOrder"),
    ],
    actions="preempt",
)


def group(name: str, queue: str, min_member: int, priority: int = 0, **kw) -> PodGroup:
    return PodGroup(name, "c1", min_member=min_member, queue=queue, priority=priority, **kw)


def running(name: str, node: str, cpu: str, mem: str, grp: str, preemptable: bool = True, **kw):
    return (vpod(name, cpu, mem, grp, namespace="c1", preemptable=preemptable, **kw), node)


def pending(name: str, cpu: str, mem: str, grp: str, **kw):
    return vpod(name, cpu, mem, grp, namespace="c1", **kw)


def by(preemptor: str, *victims: str) -> dict[str, str]:
    return dict.fromkeys(victims, f"preempted by c1/{preemptor}")


def capped(name: str, cpu: str, mem: str, **kw) -> Queue:
    return Queue(name, capability=amounts(cpu, mem), **kw)


def preempt_cases() -> dict[str, Case]:
    n10 = [vnode("n1", "10", "10G", 10)]
    n12 = [vnode("n1", "12", "12G", 10)]
    cases: dict[str, Case] = {}
    cases["do not preempt if there are enough idle resources"] = Case(
        n10,
        groups=[group("pg1", "q1", 3, min_task_member={"": 3})],
        queues=[Queue("q1")],
        bound=[running(f"preemptee{i}", "n1", "1", "1G", "pg1") for i in (1, 2)],
        pods=[pending("preemptor1", "1", "1G", "pg1")],
        binds={"preemptor1": "n1"},
    )
    cases["do not preempt if job is pipelined"] = Case(
        [vnode("n1", "3", "3G", 10)],
        groups=[group("pg1", "q1", 1), group("pg2", "q1", 1)],
        queues=[Queue("q1")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg1"),
            running("preemptee2", "n1", "1", "1G", "pg1"),
            running("preemptee3", "n1", "1", "1G", "pg2"),
        ],
        pods=[pending("preemptor2", "1", "1G", "pg2")],
    )
    cases["preempt one task of different job to fit both jobs on one node"] = Case(
        [vnode("n1", "2", "2G", 10)],
        groups=[group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[Queue("q1")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg1"),
            running("preemptee2", "n1", "1", "1G", "pg1", preemptable=False),
        ],
        pods=[pending(f"preemptor{i}", "1", "1G", "pg2") for i in (1, 2)],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee1"),
    )
    cases["preempt enough tasks to fit large task of different job"] = Case(
        [vnode("n1", "6", "6G", 10)],
        groups=[group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[Queue("q1")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg1"),
            running("preemptee2", "n1", "1", "1G", "pg1"),
            running("preemptee3", "n1", "1", "1G", "pg1", preemptable=False),
        ],
        pods=[pending("preemptor1", "5", "5G", "pg2")],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee1", "preemptee2"),
    )
    cases["preempt low priority job in same queue"] = Case(
        n12,
        groups=[group("pg1", "q1", 0, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[capped("q1", "4", "4G")],
        bound=[running("preemptee1", "n1", "3", "3G", "pg1")],
        pods=[pending("preemptor1", "3", "3G", "pg2")],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee1"),
    )
    cases[
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt"
    ] = Case(
        n12,
        groups=[group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[capped("q1", "6", "6G")],
        bound=[running("preemptee1", "n1", "3", "3G", "pg1")],
        pods=[pending("preemptor1", "3", "3G", "pg2")],
        binds={"preemptor1": "n1"},
    )
    cases[
        "preempt low priority job in same queue but not pod with preemptable=false or higher "
        "priority"
    ] = Case(
        n12,
        groups=[group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[capped("q1", "3", "3G")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg1", preemptable=False),
            running("preemptee2", "n1", "1", "1G", "pg1"),
            running("preemptee3", "n1", "1", "1G", "pg1", priority=HIGH),
        ],
        pods=[pending("preemptor1", "1", "1G", "pg2")],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee2"),
    )
    one_slot = [vnode("n1", "12", "12G", 1)]
    cases["unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue"] = (
        Case(
            one_slot,
            groups=[group("pg1", "q1", 0, LOW), group("pg2", "q1", 1, HIGH)],
            queues=[capped("q1", "6", "6G")],
            bound=[running("preemptee1", "n1", "", "", "pg1")],
            pods=[pending("preemptor1", "3", "3G", "pg2")],
            binds={"preemptor1": "n1"},
            evictions=by("pg2", "preemptee1"),
        )
    )
    cases["BestEffort high-priority pod preempt BestEffort low-priority pod in same queue"] = Case(
        one_slot,
        groups=[group("pg1", "q1", 0, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[capped("q1", "6", "6G")],
        bound=[running("preemptee1", "n1", "", "", "pg1")],
        pods=[pending("preemptor1", "", "", "pg2")],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee1"),
    )
    cases["can not preempt resources when task preemption policy is never"] = Case(
        [vnode("n1", "1", "1Gi", 1)],
        groups=[group("pg1", "q1", 0, LOW), group("pg2", "q1", 1, HIGH)],
        queues=[Queue("q1")],
        bound=[running("preemptee1", "n1", "1", "1G", "pg1")],
        pods=[pending("preemptor1", "1", "1G", "pg2", preemption_policy="Never")],
    )
    cases["rollback evictions when preemptor exceeds queue capacity after evicting victims"] = Case(
        n10,
        groups=[
            group("pg1", "q1", 1, LOW, min_task_member={"": 2}),
            group("pg2", "q1", 1, HIGH, min_task_member={"": 1}),
        ],
        queues=[capped("q1", "3", "3G")],
        bound=[running(f"preemptee{i}", "n1", "1", "1G", "pg1") for i in (1, 2)],
        pods=[pending("preemptor1", "4", "4G", "pg2")],
    )
    cases["only commit evictions on the node where preemption succeeds"] = Case(
        [vnode("n1", "3", "3G", 10), vnode("n2", "4", "4G", 10)],
        groups=[
            group("pg1", "q1", 0, LOW),
            group("pg2", "q1", 1, HIGH),
            group("pg3", "q1", 0, LOW),
        ],
        queues=[capped("q1", "6", "6G")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg1"),
            running("preemptee2", "n2", "4", "4G", "pg3"),
        ],
        pods=[pending("preemptor1", "3", "3G", "pg2")],
        binds={"preemptor1": "n2"},
        evictions=by("pg2", "preemptee2"),
    )
    cases[
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another "
        "queue"
    ] = Case(
        [vnode("n1", "2", "2G", 10)],
        groups=[group("pg1", "q1", 1), group("pg2", "q2", 0, LOW), group("pg3", "q2", 1, HIGH)],
        queues=[Queue("q1"), capped("q2", "4", "4G")],
        bound=[
            running("q1-runner1", "n1", "1", "1G", "pg1"),
            running("q2-preemptee1", "n1", "1", "1G", "pg2"),
        ],
        pods=[pending("q2-preemptor1", "1", "1G", "pg3")],
        binds={"q2-preemptor1": "n1"},
        evictions=by("pg3", "q2-preemptee1"),
    )
    # From TestTopologyAwarePreempt (the same outcome without its topology-aware mode).
    cases["preemption with priority queues"] = Case(
        [vnode("n1", "2", "2Gi", 2)],
        groups=[
            group("pg3", "q2", 1, HIGH),
            group("pg1", "q1", 0, LOW),
            group("pg2", "q1", 1, HIGH),
        ],
        queues=[
            Queue("q1", priority=1, deserved=amounts("1", "1G"), capability=amounts("1", "1G")),
            Queue("q2", priority=10, deserved=amounts("1", "1G"), capability=amounts("1", "1G")),
        ],
        bound=[
            running("preemptee2", "n1", "1", "1G", "pg3"),
            running("preemptee1", "n1", "1", "1G", "pg1"),
        ],
        pods=[pending("preemptor1", "1", "1G", "pg2", preemption_policy="PreemptLowerPriority")],
        binds={"preemptor1": "n1"},
        evictions=by("pg2", "preemptee1"),
    )
    return cases


@pytest.mark.parametrize("name", preempt_cases().keys())
def test_preempt(name):
    check(preempt_cases()[name], PREEMPT)


#: TestTopologyAwarePreempt's switches: as TestPreempt's, with predicates.
PREEMPT_PREDICATES = tiers(
    [
        only("conformance", "Preemptable"),
        only("gang", "Preemptable", "JobPipelined", "JobStarving"),
        only("priority", "TaskOrder", "JobOrder", "Preemptable", "JobPipelined", "JobStarving"),
        only("proportion", "Overused", "Allocatable", "QueueOrder"),
        only("predicates", "Predicate"),
        only("capacity", "QueueOrder"),
    ],
    actions="preempt",
)


def test_preempt_low_priority_pod_when_high_priority_pod_has_pod_anti_affinity_conflict():
    anti = Affinity(
        anti_required=(
            Term(LabelSelector((Requirement("test", "In", ("test",)),)), HOSTNAME_LABEL),
        )
    )
    case = Case(
        [vnode("n1", "2", "2Gi", 2, labels={HOSTNAME_LABEL: "n1"})],
        groups=[
            group("pg1", "q1", 0, LOW),
            group("pg2", "q1", 0, LOW),
            group("pg3", "q1", 1, HIGH),
        ],
        queues=[capped("q1", "2", "2G")],
        bound=[
            running("preemptee1", "n1", "1", "1G", "pg2"),
            running("preemptee2", "n1", "1", "1G", "pg1", labels={"test": "test"}, affinity=anti),
        ],
        pods=[pending("preemptor1", "1", "1G", "pg3", labels={"test": "test"}, affinity=anti)],
        differs=(
            "victims are chosen to free resources: a node that the preemptor's required "
            "anti-affinity rules out is not a candidate (Volcano's topology-aware preemption "
            "evicts preemptee2 to clear the conflict)"
        ),
    )
    check(case, PREEMPT_PREDICATES)


def priority_config(evict: bool):
    switches = ("TaskOrder", "JobOrder", "JobStarving")
    if evict:
        switches += ("Preemptable", "Reclaimable")
    return tiers([only("priority", *switches)], actions="allocate, preempt")


PRIORITY_CASES = {
    "enable preempt low priority: enablePreemptable:true": (
        True,
        Case(
            [vnode("node1", "6", "6G", 10), vnode("node2", "2", "2G", 10)],
            groups=[group("pg1", "q1", 1, 100), group("pg2", "q1", 1, 1000)],
            queues=[capped("q1", "6", "6G")],
            bound=[
                running("preemptee1", "node1", "3", "3G", "pg1"),
                running("preemptee2", "node1", "3", "3G", "pg1", priority=1000),
            ],
            pods=[pending("preemptor1", "3", "3G", "pg2")],
            binds={"preemptor1": "node1"},
            evictions=by("pg2", "preemptee1"),
        ),
    ),
    "disable preempt low priority: enablePreemptable:false": (
        False,
        Case(
            [vnode("node1", "3", "3G", 10), vnode("node2", "3", "3G", 10)],
            groups=[group("pg1", "q1", 1, 100), group("pg2", "q1", 1, 1000)],
            queues=[capped("q1", "6", "6G")],
            bound=[
                running("preemptee1", "node1", "3", "3G", "pg1"),
                running("preemptee2", "node2", "3", "3G", "pg1", preemptable=False),
            ],
            pods=[pending("preemptor1", "3", "3G", "pg2")],
        ),
    ),
}


@pytest.mark.parametrize("evict,case", PRIORITY_CASES.values(), ids=PRIORITY_CASES.keys())
def test_priority_plugin_preemption(evict, case):
    check(case, priority_config(evict))
