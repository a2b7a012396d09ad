"""drf: jobs (and optionally namespaces) with the smaller dominant share go first, preemption
never reverses the order, and with enableHierarchy queues are ordered along their tree."""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup, Queue
from tests.builders import GANG, Case, check, config, node, pod, queued, scheduler

#: 4 CPUs and 8 GiB: a CPU is a quarter of the cluster, a GiB an eighth.
CLUSTER = [node("n", cpu=4000, mem=8192)]


def drf(**options) -> dict:
    return {"name": "drf", **options}


def job(
    name: str,
    *pods,
    priority: int = 0,
    namespace: str = "default",
    submit: float = 0.0,
    min_member: int = 1,
) -> tuple[PodGroup, list]:
    group = PodGroup(name, namespace, min_member=min_member, priority=priority, submit_time=submit)
    for p in pods:
        p.group, p.namespace = name, namespace
    return group, list(pods)


def running(name: str, *pods, **kw) -> tuple[PodGroup, list[tuple]]:
    group, members = job(name, *pods, **kw)
    return group, [(p, "n") for p in members]


ORDER_CASES = {
    # (held by job "x", held by job "y") as (cpu, memory); one free slot; who gets it
    "fewer CPUs first": (((2000, 1024), (1000, 1024)), "y-new"),
    "dominant resource counts, not the sum": (((1000, 6144), (2000, 0)), "y-new"),
    "memory-heavy job waits": (((0, 4096), (1000, 0)), "y-new"),
    "ties go by arrival": (((1000, 0), (1000, 0)), "x-new"),
}


@pytest.mark.parametrize("held,winner", ORDER_CASES.values(), ids=ORDER_CASES.keys())
def test_job_order_by_dominant_share(held, winner):
    (xc, xm), (yc, ym) = held
    xg, xb = running("x", pod("x-old", cpu=xc, mem=xm))
    yg, yb = running("y", pod("y-old", cpu=yc, mem=ym), submit=1.0)
    free = 4000 - xc - yc
    pods = [pod(f"{g}-new", cpu=free, mem=1, group=g, submit_time=2.0) for g in "xy"]
    check(
        Case(CLUSTER, pods=pods, bound=xb + yb, groups=[xg, yg], binds={winner: "n"}),
        config([drf(), "resource-fit"]),
    )


@pytest.mark.parametrize(
    "options,winner",
    [({}, "a-new-0"), ({"enableNamespaceOrder": True}, "b-new-0")],
    ids=["arrival decides", "the poorer namespace first"],
)
def test_namespace_order(options, winner):
    # Both new jobs hold nothing; namespace a holds three quarters of the CPUs, b an eighth
    # of the memory.
    rich, rich_pods = running("rich", pod("rich-old", cpu=3000, mem=0), namespace="a")
    poor, poor_pods = running("poor", pod("poor-old", cpu=0, mem=1024), namespace="b")
    new_a, a_pods = job("a-new", pod("a-new-0", cpu=1000, mem=0), namespace="a")
    new_b, b_pods = job("b-new", pod("b-new-0", cpu=1000, mem=0), namespace="b", submit=1.0)
    check(
        Case(
            CLUSTER,
            pods=a_pods + b_pods,
            bound=rich_pods + poor_pods,
            groups=[rich, poor, new_a, new_b],
            binds={winner: "n"},
        ),
        config([drf(**options), "resource-fit"]),
    )


PREEMPT = "enqueue, allocate, preempt"

PREEMPT_CASES = {
    # victim job's pods (cpu each), preemptor's cpu → evicted
    "victim keeps a larger share": ([1000, 1000, 1000, 1000], 1000, {"lo-0"}),
    "victim would fall below the preemptor": ([4000], 2000, set()),
    "equal shares after are allowed": ([1000, 1000, 1000, 1000], 2000, {"lo-0", "lo-1"}),
}


@pytest.mark.parametrize("victims,cpu,evicted", PREEMPT_CASES.values(), ids=PREEMPT_CASES.keys())
@pytest.mark.parametrize("with_drf", [True, False], ids=["drf", "no drf"])
def test_preemption_never_reverses_the_order(victims, cpu, evicted, with_drf):
    lo, lo_pods = running("lo", *[pod(f"lo-{i}", cpu=c, mem=0) for i, c in enumerate(victims)])
    hi, hi_pods = job("hi", pod("hi-0", cpu=cpu, mem=0), priority=10)
    if not with_drf and not evicted:  # the whole low-priority job may go
        evicted = {p.name for p, _ in lo_pods}
    plugins = ["priority", GANG, "resource-fit"] + ([drf()] if with_drf else [])
    check(
        Case(
            CLUSTER,
            pods=hi_pods,
            bound=lo_pods,
            groups=[lo, hi],
            binds={"hi-0": "n"} if evicted else {},
            evictions=dict.fromkeys(evicted, "preempted by default/hi"),
        ),
        config(plugins, actions=PREEMPT),
    )


def tree_case(winner: str) -> Case:
    # org1 holds 2 of 4 CPUs through a; org2 holds 1 through c, none through b.
    queues = [
        Queue("org1"),
        Queue("org2"),
        Queue("a", parent="org1"),
        Queue("b", parent="org2"),
        Queue("c", parent="org2"),
    ]
    bound = [
        (queued(pod("a-old", cpu=2000, mem=0), "a"), "n"),
        (queued(pod("c-old", cpu=1000, mem=0), "c"), "n"),
    ]
    pods = [queued(pod(f"{q}-new", cpu=1000, mem=0), q) for q in "acb"]
    return Case(CLUSTER, pods=pods, bound=bound, queues=queues, binds={winner: "n"})


def test_hierarchy_orders_queues_by_subtree_share():
    # org2's subtree goes first, and inside it b (nothing held) before c.
    check(tree_case("b-new"), config([drf(enableHierarchy=True), "resource-fit"]))


def test_without_hierarchy_queues_take_turns():
    check(tree_case("a-new"), config([drf(), "resource-fit"]))


def test_hierarchy_weighs_subtrees():
    # org1 holds twice what org2 holds but weighs three times as much: org1 goes first.
    queues = [
        Queue("org1", weight=3),
        Queue("org2"),
        Queue("a", parent="org1"),
        Queue("b", parent="org2"),
    ]
    bound = [
        (queued(pod("a-old", cpu=2000, mem=0), "a"), "n"),
        (queued(pod("b-old", cpu=1000, mem=0), "b"), "n"),
    ]
    pods = [queued(pod(f"{q}-new", cpu=1000, mem=0), q) for q in "ba"]
    check(
        Case(CLUSTER, pods=pods, bound=bound, queues=queues, binds={"a-new": "n"}),
        config([drf(enableHierarchy=True), "resource-fit"]),
    )


def test_a_waiting_jobs_namespace_share_is_asked_when_it_is_compared():
    """Under namespace order a waiting job's key moves as other jobs of its namespace are
    placed in the same session. b (namespace one) and c (two) each place a pod and wait for
    another turn; d (namespace one, not yet served) is then behind c, whose namespace holds
    less than b's placement gave namespace one: c's second pod goes before d's first."""
    cluster = [node("n", cpu=16000, mem=16384)]
    b, b_pods = job("b", pod("b-0", cpu=2000, mem=0), pod("b-1", cpu=2000, mem=0), namespace="one")
    c, c_pods = job(
        "c", pod("c-0", cpu=1000, mem=0), pod("c-1", cpu=1000, mem=0), namespace="two", submit=1.0
    )
    d, d_pods = job("d", pod("d-0", cpu=1000, mem=0), namespace="one", submit=2.0)
    s = scheduler(cluster, config([drf(enableNamespaceOrder=True), "resource-fit"]))
    for group, members in ((b, b_pods), (c, c_pods), (d, d_pods)):
        s.add_group(group)
        for member in members:
            s.submit(member)
    order = [bind.pod.name for bind in s.run_session(0.0)]
    assert order.index("c-1") < order.index("d-0"), order
