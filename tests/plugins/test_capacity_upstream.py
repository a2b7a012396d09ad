"""Volcano's capacity tests (pkg/scheduler/plugins/capacity/capacity_test.go), ported:
Test_capacityPlugin_OnSessionOpenWithoutHierarchy, TestEnqueueAndAllocatable and
Test_capacityPlugin_OnSessionOpenWithHierarchy, with the switches each table sets.

Left out: the dynamic-resource-allocation and queue-gate cases (berth has neither), the
ancestorReclaimLevel scenarios (an argument berth does not implement; it warns), and the
share-arithmetic unit tests of Volcano's internal functions (the shares they compute decide the
queue order checked here). Where Volcano pipelines a reclaimer onto freed room, berth binds it.
"""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, amounts, check, only, tiers, vnode, vpod

A100 = "nvidia.com/A100"
GPU = "nvidia.com/gpu"
RUNNING, INQUEUE, PENDING = GroupPhase.RUNNING, GroupPhase.INQUEUE, GroupPhase.PENDING

FLAT = tiers(
    [
        only("capacity", "Allocatable", "Preemptive", "Reclaimable", "QueueOrder"),
        only("predicates", "Predicate"),
        only("gang", "JobStarving"),
    ],
    actions="allocate, reclaim",
)
ENQUEUE_ALLOCATE = tiers(
    [only("capacity", "Allocatable", "Preemptive", "Overused", "JobEnqueued")],
    actions="enqueue, allocate",
)
HIERARCHY = tiers(
    [
        only(
            "capacity",
            "Allocatable",
            "Preemptive",
            "Reclaimable",
            "QueueOrder",
            "JobEnqueued",
            enableHierarchy=True,
        ),
        only("predicates", "Predicate"),
        only("gang", "JobStarving"),
    ],
    actions="enqueue, reclaim, allocate",
)


def queue(name: str, deserved=None, capability=None, parent: str = "", **kw) -> Queue:
    """Volcano's BuildQueueWithResourcesQuantity: deserved, then capability."""
    return Queue(name, deserved=deserved or {}, capability=capability or {}, parent=parent, **kw)


def res(cpu: str = "", mem: str = "", **scalars: str) -> dict[str, int]:
    names = {"a100": A100, "gpu": GPU, "rdma_hca": "rdma/hca", "rdma": "rdma"}
    return amounts(cpu, mem, {names[k]: v for k, v in scalars.items()})


def group(name: str, queue_name: str, phase: GroupPhase, min_member: int = 1, **kw) -> PodGroup:
    return PodGroup(name, "ns1", min_member=min_member, queue=queue_name, phase=phase, **kw)


def pod(name: str, grp: str, cpu: str = "", mem: str = "", **kw):
    scalars = {k: kw.pop(k) for k in ("a100", "gpu", "rdma_hca") if k in kw}
    names = {"a100": A100, "gpu": GPU, "rdma_hca": "rdma/hca"}
    return vpod(
        name,
        cpu,
        mem,
        grp,
        namespace="ns1",
        scalars={names[k]: v for k, v in scalars.items()},
        **kw,
    )


def by(reclaimer_queue: str, *victims: str) -> dict[str, str]:
    return dict.fromkeys(victims, f"reclaimed by queue {reclaimer_queue}")


def flat_cases() -> dict[str, Case]:
    n1 = vnode("n1", "2", "4Gi", 10, labels={"selector": "worker"})
    n2 = vnode("n2", "2", "4Gi", 10)
    n3 = vnode("n3", "2", "4Gi", 10, labels={"selector": "worker"}, scalars={A100: "10"})
    n4 = vnode("n4", "2", "4Gi", 10, scalars={A100: "10"})
    n8 = vnode("n8", "4", "8Gi", 10, scalars={GPU: "1"})
    cases: dict[str, Case] = {}
    cases["case0: Pod allocatable when queue has not exceed capability"] = Case(
        [n1, n2],
        groups=[group("pg1", "q1", RUNNING), group("pg2", "q1", INQUEUE)],
        queues=[queue("q1", capability=res("2", "2Gi"))],
        bound=[(pod("p1", "pg1", "1", "1Gi"), "n1")],
        pods=[pod("p2", "pg2", "1", "1Gi", node_selector={"selector": "worker"})],
        binds={"p2": "n1"},
    )
    cases["case1: Pod not allocatable when queue exceed queue capability"] = Case(
        [n1, n2],
        groups=[group("pg3", "q2", RUNNING), group("pg4", "q2", INQUEUE)],
        queues=[queue("q2", capability=res("1.5", "1.5Gi"))],
        bound=[(pod("p3", "pg3", "1", "1Gi"), "n1")],
        pods=[pod("p4", "pg4", "1", "1Gi")],
    )
    cases["case2: Can reclaim from other queues when allocated < deserved"] = Case(
        [n1, n2],
        groups=[group("pg5", "q3", RUNNING), group("pg6", "q4", INQUEUE)],
        queues=[queue("q3", res("2", "4Gi")), queue("q4", res("2", "4Gi"))],
        bound=[
            (pod("p5", "pg5", "2", "4Gi", preemptable=False), "n1"),
            (pod("p6", "pg5", "2", "4Gi"), "n2"),
        ],
        pods=[pod("p7", "pg6", "2", "4Gi")],
        binds={"p7": "n2"},
        evictions=by("q4", "p6"),
    )
    cases[
        "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod "
        "has not request CPU & Memory, reclaim should happen"
    ] = Case(
        [n3, n4],
        groups=[
            group("pg7", "q5", RUNNING),
            group("pg8", "q6", RUNNING),
            group("pg9", "q6", INQUEUE),
        ],
        queues=[queue("q5", res("2", "4Gi", a100="10")), queue("q6", res("2", "4Gi", a100="10"))],
        bound=[
            (pod("p8", "pg7", a100="10", preemptable=False), "n3"),
            (pod("p9", "pg7", a100="10"), "n4"),
            (pod("p10", "pg8", "2", "4Gi"), "n3"),
            (pod("p11", "pg8", "2", "4Gi"), "n4"),
        ],
        pods=[pod("p12", "pg9", a100="10")],
        binds={"p12": "n4"},
        evictions=by("q6", "p9"),
    )
    cases[
        "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed"
    ] = Case(
        [vnode("n5", "2", "4Gi", 10), vnode("n6", "2", "4Gi", 10)],
        groups=[
            group("pg10", "q7", RUNNING),
            group("pg11", "q8", INQUEUE),
            group("pg12", "q9", INQUEUE),
        ],
        queues=[
            queue("q7", capability=res("2", "4Gi"), priority=5),
            queue("q8", capability=res("2", "4Gi"), priority=1),
            queue("q9", capability=res("2", "4Gi"), priority=10),
        ],
        bound=[(pod("p13", "pg10", "2", "4Gi"), "n5")],
        pods=[pod("p14", "pg11", "2", "4Gi"), pod("p15", "pg12", "2", "4Gi")],
        binds={"p15": "n6"},
    )
    cases[
        "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension"
    ] = Case(
        [n1],
        groups=[
            group("pg16", "q10", RUNNING),
            group("pg17", "q10", INQUEUE),
            group("pg18", "q11", RUNNING),
        ],
        queues=[
            queue("q10", res("2", "2Gi"), res("4", "4Gi")),
            queue("q11", res("0", "0"), res("2", "2Gi")),
        ],
        bound=[(pod("p16", "pg16", "1", "3Gi"), "n1"), (pod("p18", "pg18", "1", "1Gi"), "n1")],
        pods=[pod("p17", "pg17", "1", "1Gi")],
        binds={"p17": "n1"},
        evictions=by("q10", "p18"),
    )
    cases["case6: Can not reclaim from other queues when allocated + req > deserved"] = Case(
        [n1],
        groups=[
            group("pg19", "q12", RUNNING),
            group("pg20", "q12", INQUEUE),
            group("pg21", "q13", RUNNING),
        ],
        queues=[
            queue("q12", res("1", "2Gi"), res("4", "4Gi")),
            queue("q13", res("0", "0"), res("2", "2Gi")),
        ],
        bound=[(pod("p19", "pg19", "1", "1Gi"), "n1"), (pod("p21", "pg21", "1", "1Gi"), "n1")],
        pods=[pod("p20", "pg20", "1", "2Gi")],
    )
    cases[
        "case7: allocated does not contain scalar dimension (GPU), deserved does; should not "
        "reclaim"
    ] = Case(
        [vnode("n7", "4", "8Gi", 10, scalars={GPU: "4"})],
        groups=[
            group("pg22", "queue14", RUNNING),
            group("pg23", "queue15", RUNNING),
            group("pg24", "queue16", RUNNING),
            group("pg25", "queue16", INQUEUE),
        ],
        queues=[
            queue("queue14", res("2", "4Gi", gpu="2")),
            queue("queue15"),
            queue("queue16", res("2", "4Gi", gpu="2")),
        ],
        bound=[
            (pod("p22", "pg22", "2", "4Gi"), "n7"),
            (pod("p23", "pg23", gpu="1"), "n7"),
            (pod("p24", "pg24", "2", "1Gi", gpu="1"), "n7"),
        ],
        pods=[pod("p25", "pg25", "2", "3Gi", gpu="1")],
    )
    cases["case8: reclaimer dimensions are considered properly while evicting reclaimees"] = Case(
        [n8],
        groups=[
            group("pg26", "queue17", RUNNING),
            group("pg27", "queue17", RUNNING),
            group("pg28", "queue17", RUNNING),
            group("pg29", "queue18", RUNNING),
            group("pg30", "queue18", INQUEUE),
        ],
        queues=[queue("queue17", res("2", "2Gi")), queue("queue18", res("2", "4Gi", gpu="1"))],
        bound=[
            (pod("p26", "pg26", "0", "4Gi"), "n8"),
            (pod("p27", "pg27", "1", "0"), "n8"),
            (pod("p28", "pg28", gpu="1"), "n8"),
            (pod("p29", "pg29", "2", "4Gi"), "n8"),
        ],
        pods=[pod("p30", "pg30", "1", "0", gpu="1")],
        binds={"p30": "n8"},
        evictions=by("queue18", "p28"),
    )
    cases[
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed "
        "on cpu/memory"
    ] = Case(
        [n8],
        groups=[group("pg31", "queue19", RUNNING), group("pg32", "queue20", INQUEUE)],
        queues=[queue("queue19", res(gpu="1")), queue("queue20", res("2", "2Gi"))],
        bound=[(pod("p31", "pg31", "4", "4Gi", gpu="1"), "n8")],
        pods=[pod("p32", "pg32", "1", "1Gi")],
    )
    cases[
        "case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed "
        "capability"
    ] = Case(
        [vnode("n9", "8", "100Gi", 10), vnode("n10", "8", "100Gi", 10)],
        groups=[
            group("pg33", "queue21", RUNNING),
            group("pg34", "queue21", INQUEUE),
            group("pg35", "queue22", RUNNING),
        ],
        queues=[
            queue("queue21", res("8", "100Gi"), res("8", "100Gi")),
            queue("queue22", None, res("2", "5Gi")),
        ],
        bound=[(pod("p33", "pg33", "7", "90Gi"), "n9"), (pod("p35", "pg35", "2", "5Gi"), "n10")],
        pods=[pod("p34", "pg34", "2", "5Gi")],
    )
    return cases


@pytest.mark.parametrize("name", flat_cases().keys())
def test_without_hierarchy(name):
    check(flat_cases()[name], FLAT)


def enqueue_allocate_cases() -> dict[str, Case]:
    nodes = [vnode("n1", "3", "3G", 10), vnode("n2", "3", "3G", 10)]
    queues = [
        queue("q1", res("2", "2G"), res("2", "2G")),
        queue("q2", res("2", "2G"), res("3", "3G")),
        Queue("q3", capability=res("3", "3G"), state="Closed"),
    ]
    held = [(pod("pod1", "pg1", "1", "3G"), "n1"), (pod("pod2", "pg2", "3", "1G"), "n2")]
    running = [
        group("pg1", "q1", RUNNING, min_resources=res("1", "3G")),
        group("pg2", "q2", RUNNING, min_resources=res("3", "1G")),
    ]

    def case(name: str, queue_name: str, cpu: str, mem: str, binds: dict[str, str]) -> Case:
        grp = group(f"pg{name[3:]}", queue_name, PENDING, min_resources=res(cpu, mem))
        return Case(
            nodes,
            groups=[*running, grp],
            queues=queues,
            bound=held,
            pods=[pod(name, grp.name, cpu, mem)],
            binds=binds,
        )

    return {
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated": (
            case("pod3", "q1", "1", "0", {"pod3": "n1"})
        ),
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated": (
            case("pod4", "q2", "0", "1G", {"pod4": "n2"})
        ),
        "case2: exceed capacity, can not enqueue": case("pod5", "q1", "1", "1G", {}),
        "case4: queue with non-open state, can not enqueue": case("pod6", "q3", "1", "1G", {}),
    }


@pytest.mark.parametrize("name", enqueue_allocate_cases().keys())
def test_enqueue_and_allocatable(name):
    check(enqueue_allocate_cases()[name], ENQUEUE_ALLOCATE)


def hierarchy_cases() -> dict[str, Case]:
    n1 = vnode("n1", "8", "8Gi", 11)
    root = queue("root")
    q1, q2 = queue("q1", None, res("4", "4Gi"), "root"), queue("q2", None, res("4", "4Gi"), "root")
    q11, q12 = queue("q11", None, res("1", "1Gi"), "q1"), queue("q12", None, res("3", "3Gi"), "q1")
    q3 = queue("q3", res("4", "4Gi"), res("4", "4Gi"), "root")
    q4 = queue("q4", res("2", "2Gi"), res("4", "4Gi"), "root")
    q31 = queue("q31", res("2", "2Gi"), res("4", "4Gi"), "q3")
    q32 = queue("q32", res("2", "2Gi"), res("4", "4Gi"), "q3")
    q33 = queue("q33", res("0", "0"), res("4", "4Gi"), "q3")
    cases: dict[str, Case] = {}
    cases["case0: Pod allocatable when queue is leaf queue"] = Case(
        [n1],
        groups=[group("pg1", "q11", INQUEUE)],
        queues=[root, q1, q2, q11, q12],
        pods=[pod("p1", "pg1", "1", "1Gi")],
        binds={"p1": "n1"},
    )
    cases["case1: Pod not allocatable when queue is not leaf queue"] = Case(
        [n1],
        groups=[group("pg2", "q1", PENDING)],
        queues=[root, q1, q2, q11, q12],
        pods=[pod("p2", "pg2", "1", "1Gi")],
    )
    cases["case2: Pod allocatable when queue has not exceed capability"] = Case(
        [n1],
        groups=[group("pg3", "q31", INQUEUE, min_member=2)],
        queues=[root, q3, q4, q31, q32],
        pods=[pod("p3", "pg3", "2", "2Gi"), pod("p4", "pg3", "2", "2Gi")],
        binds={"p3": "n1", "p4": "n1"},
    )
    cases["case3: Can reclaim from other queues when allocated < deserved"] = Case(
        [n1],
        groups=[
            group("pg4", "q4", RUNNING),
            group("pg5", "q31", RUNNING),
            group("pg6", "q32", INQUEUE),
        ],
        queues=[root, q3, q31, q32, q4],
        bound=[
            (pod("p5", "pg4", "4", "4Gi"), "n1"),
            (pod("p6", "pg5", "2", "2Gi", preemptable=False), "n1"),
            (pod("p7", "pg5", "2", "2Gi"), "n1"),
        ],
        pods=[pod("p8", "pg6", "2", "2Gi")],
        binds={"p8": "n1"},
        evictions=by("q32", "p7"),
    )
    cases["case4: Pod is not allocatable when ancestor queue's real capability not enough"] = Case(
        [n1],
        groups=[
            group("pg5", "q31", RUNNING),
            group("pg7", "q32", RUNNING),
            group("pg8", "q33", INQUEUE),
        ],
        queues=[root, q3, q31, q32, q33],
        bound=[
            (pod("p6", "pg5", "2", "2Gi", preemptable=False), "n1"),
            (pod("p9", "pg7", "2", "2Gi"), "n1"),
        ],
        pods=[pod("p10", "pg8", "3", "3Gi")],
    )
    cases[
        "case5: If the capability cpu or memory is not specified, the value should be inherited "
        "from parent queue"
    ] = Case(
        [n1],
        groups=[group("pg9", "q51", RUNNING)],
        queues=[
            root,
            queue("q5", None, res("", "4Gi"), "root"),
            queue("q51", None, res("", "2Gi"), "q5"),
        ],
        pods=[pod("p11", "pg9", "1", "")],
        binds={"p11": "n1"},
    )
    cases[
        "case6: podgroup can't be enqueued when any ancestor queue's capability is not enough"
    ] = Case(
        [n1],
        groups=[
            group("pg10", "q61", PENDING, min_resources=res("2", "4Gi")),
            group("pg11", "q62", PENDING, min_resources=res("2", "4Gi")),
        ],
        queues=[
            root,
            queue("q6", None, res("2", "4Gi"), "root"),
            queue("q61", parent="q6"),
            queue("q62", parent="q6"),
        ],
        phases={"ns1/pg10": INQUEUE, "ns1/pg11": PENDING},
    )
    cases[
        "case7: the sum of sub queue 71 and 72's guarantee exceeds the capacity of queue7, but "
        "should not panic"
    ] = Case(
        [n1],
        queues=[
            root,
            queue("q7", None, res("6", "4Gi"), "root"),
            queue("q71", None, res("6", "4Gi"), "q7", guarantee=res("4", "3Gi")),
            queue("q72", None, res("6", "4Gi"), "q7", guarantee=res("4", "3Gi")),
        ],
    )
    cases[
        "case8: When the queue's deserved value has a scalar resource set, the check can pass"
    ] = Case(
        [vnode("n-gpu", "8", "8Gi", 10, scalars={GPU: "8"})],
        groups=[group("pg12", "q81", INQUEUE)],
        queues=[
            root,
            queue("q8", res("4", "4Gi", gpu="8"), None, "root"),
            queue("q81", res("2", "2Gi", gpu="4"), None, "q8"),
            queue("q82", res("2", "2Gi", gpu="4"), None, "q8"),
        ],
        pods=[pod("p12", "pg12", "2", "2Gi", gpu="1")],
        binds={"p12": "n-gpu"},
    )
    cases["case9: When some scalar resources are 0 in deserved, the check can still pass"] = Case(
        [vnode("n2", "8", "8Gi", 10, scalars={GPU: "8"})],
        groups=[group("pg13", "q91", INQUEUE)],
        queues=[
            root,
            queue("q9", res("2", "2Gi", gpu="8"), None, "root"),
            queue("q91", res("2", "2Gi", gpu="4"), None, "q9"),
        ],
        pods=[pod("p13", "pg13", "2", "2Gi", gpu="1")],
        binds={"p13": "n2"},
    )
    cases["case10: root queue's capability > cluster total resource, but should not panic"] = Case(
        [n1],
        queues=[
            queue("root", None, res("16", "16Gi")),
            queue("q10", None, res("10", "4Gi"), "root"),
        ],
    )
    cases[
        "case11: If the capability scalar resources is not specified, the value should be "
        "inherited from parent queue"
    ] = Case(
        [vnode("n2", "8", "8Gi", 10, scalars={GPU: "8"})],
        groups=[group("pg14", "case11_queue11", INQUEUE), group("pg15", "case11_queue12", INQUEUE)],
        queues=[
            root,
            queue("case11_queue1", parent="root"),
            queue("case11_queue11", None, res("4", "4Gi", gpu="4"), "case11_queue1"),
            queue("case11_queue12", None, res("4", "4Gi", gpu="4"), "case11_queue1"),
        ],
        pods=[pod("p14", "pg14", "1", "1Gi", gpu="4"), pod("p15", "pg15", "1", "1Gi", gpu="4")],
        binds={"p14": "n2", "p15": "n2"},
    )
    cases[
        "case12: Can reclaim from other queues when allocated <= deserved on a single scalar "
        "dimension"
    ] = Case(
        [vnode("n3", "16", "16Gi", 11, scalars={A100: "5", "rdma/hca": "1001"})],
        groups=[
            group("pg16", "case12_queue11", INQUEUE),
            group("pg17", "case12_queue12", RUNNING),
            group("pg18", "case12_queue12", RUNNING),
        ],
        queues=[
            queue("root", res("16", "16Gi", a100="4", rdma="1000")),
            queue("case12_queue1", res(a100="2"), None, "root"),
            queue("case12_queue11", res(a100="2"), None, "case12_queue1"),
            queue("case12_queue12", parent="case12_queue1"),
        ],
        bound=[
            (pod("p17", "pg17", "1", "1Gi", a100="2", rdma_hca="1"), "n3"),
            (pod("p18", "pg18", "1", "1Gi", a100="2", rdma_hca="1", preemptable=False), "n3"),
        ],
        pods=[pod("p16", "pg16", "1", "1Gi", a100="2", rdma_hca="1")],
        binds={"p16": "n3"},
        evictions=by("case12_queue11", "p17"),
    )
    return cases


@pytest.mark.parametrize("name", hierarchy_cases().keys())
def test_with_hierarchy(name):
    check(hierarchy_cases()[name], HIERARCHY)
