"""proportion: water-filled deserved shares by weight, capped by demand and capability, floored
by guarantee; queue order, overuse, allocatable and enqueue checks built on them."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from berth.plugins.proportion import water_fill
from tests.builders import Case, check, config, node, pod, queued, run, scheduler, session_of

CFG = config(["priority", "gang", "proportion", "resource-fit", "node-affinity", "least-allocated"])
INF = np.inf

FILL_CASES = {
    # weights, requests (cpu), capabilities, guarantees → deserved
    "1:2:3 on 12": ([1, 2, 3], [12, 12, 12], [INF] * 3, [0] * 3, [2, 4, 6]),
    "small demand redistributed": ([1, 2, 3], [1, 12, 12], [INF] * 3, [0] * 3, [1, 4.4, 6.6]),
    "two small demands": ([1, 2, 3], [1, 2, 12], [INF] * 3, [0] * 3, [1, 2, 9]),
    "everyone satisfied, rest unclaimed": ([1, 1], [3, 4], [INF] * 2, [0] * 2, [3, 4]),
    "capability caps": ([1, 1, 1], [12, 12, 12], [1, INF, INF], [0] * 3, [1, 5.5, 5.5]),
    "guarantee floors": ([1, 5], [12, 12], [INF, 6], [6, 0], [6, 6]),
    "equal weights": ([1, 1], [12, 12], [INF] * 2, [0] * 2, [6, 6]),
}


@pytest.mark.parametrize(
    "weights,requests,caps,guarantees,expected", FILL_CASES.values(), ids=FILL_CASES.keys()
)
def test_water_fill(weights, requests, caps, guarantees, expected):
    def column(values):
        return np.array(values, dtype=float)[:, None]

    deserved = water_fill(
        np.array([12.0]),
        np.array(weights, dtype=float),
        column(requests),
        column(caps),
        column(guarantees),
    )
    np.testing.assert_allclose(deserved[:, 0], expected)


def weighted_queues(*weights: int, **extra) -> list[Queue]:
    return [
        Queue(name, weight=w, **extra.get(name, {}))
        for name, w in zip("abc", weights, strict=False)
    ]


def backlog(queue: str, count: int, cpu: int = 1000) -> list:
    return [queued(pod(f"{queue}{i}", cpu=cpu, mem=1, submit_time=i), queue) for i in range(count)]


def per_queue(binds) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in binds:
        counts[name[0]] = counts.get(name[0], 0) + 1
    return counts


CLUSTER = [node("n0", cpu=6000, mem=65536), node("n1", cpu=6000, mem=65536)]

SHARE_CASES = {
    "1:2:3 gets 2, 4 and 6 of 12 CPUs": (
        weighted_queues(1, 2, 3),
        backlog("a", 12) + backlog("b", 12) + backlog("c", 12),
        {"a": 2, "b": 4, "c": 6},
    ),
    "a small queue's leftover goes to the others by weight": (
        weighted_queues(1, 2, 3),
        backlog("a", 1) + backlog("b", 12, 500) + backlog("c", 30, 500),
        {"a": 1, "b": 8, "c": 13},
    ),
    "capability caps a queue and the others share the rest": (
        weighted_queues(1, 1, 1, a={"capability": {"cpu": 1000}}),
        backlog("a", 12) + backlog("b", 12) + backlog("c", 12),
        {"a": 1, "b": 5, "c": 5},
    ),
    "guarantee is honoured against a heavier queue": (
        weighted_queues(1, 5, a={"guarantee": {"cpu": 6000}}),
        backlog("a", 12) + backlog("b", 12),
        {"a": 6, "b": 6},
    ),
    "without the guarantee the weights decide": (
        weighted_queues(1, 5),
        backlog("a", 12) + backlog("b", 12),
        {"a": 2, "b": 10},
    ),
    "a lone queue takes the whole cluster": (weighted_queues(1), backlog("a", 20), {"a": 12}),
}


@pytest.mark.parametrize("queues,pods,expected", SHARE_CASES.values(), ids=SHARE_CASES.keys())
def test_queues_get_their_deserved_share(queues, pods, expected):
    s = scheduler(CLUSTER, CFG, queues=queues)
    assert per_queue(run(s, pods)) == expected


def test_an_overused_queue_gets_no_more_turns():
    # b's demand counts towards the split even though its pod fits nowhere, so a deserves 1
    # CPU: after a0 it is overused and waits while a CPU stays idle.
    stuck = queued(pod("b0", cpu=1000, mem=0, node_selector={"pool": "none"}), "b")
    pods = [queued(pod(f"a{i}", cpu=1000, mem=0, submit_time=i), "a") for i in range(3)]
    s = check(
        Case(
            [node("n", cpu=2000)],
            pods=pods + [stuck],
            queues=weighted_queues(1, 1),
            binds={"a0": "n"},
            reasons={"a1": "queue a is overused"},
        ),
        CFG,
    )
    assert s.state.free[0, 0] == 1000


def test_queue_order_is_by_share_of_deserved():
    # Equal weights, 8 CPUs, both asking for 8: each deserves 4. a holds 3 (share 0.75), b 1.
    bound = [(queued(pod(f"a-old{i}", cpu=1000, mem=0), "a"), "n") for i in range(3)]
    bound.append((queued(pod("b-old", cpu=1000, mem=0), "b"), "n"))
    s = scheduler([node("n", cpu=8000)], CFG, queues=weighted_queues(1, 1), bound=bound)
    for q, count in (("a", 5), ("b", 7)):
        for i in range(count):
            s.submit(queued(pod(f"{q}{i}", cpu=1000, mem=0), q))
    session = session_of(s)
    # (negated queue priority, share)
    assert session.queue_order_key("a", 0) == ((0, 0.75), 0, "a")
    assert session.queue_order_key("b", 0) == ((0, 0.25), 0, "b")
    assert session.overused("a") is False


def test_without_a_queue_order_plugin_queues_take_turns():
    s = scheduler([node("n")], config(["gang", "resource-fit"]), queues=weighted_queues(1, 1))
    session = session_of(s)
    assert session.queue_order_key("b", 2) == (2, "b")


CAPABILITY_CASES = {
    "at capability": (
        {"capability": {"cpu": 2000}},
        3,
        {"p0", "p1"},
        "queue q at capability (cpu)",
    ),
    "capability in another resource": (
        {"capability": {"nvidia.com/gpu": 1000}},
        3,
        {"p0", "p1", "p2"},
        None,
    ),
    "full cluster is reported as such": (
        {},
        10,
        {f"p{i}" for i in range(8)},
        "0/1 nodes available: 1 insufficient cpu",
    ),
}


@pytest.mark.parametrize(
    "spec,count,bound,reason", CAPABILITY_CASES.values(), ids=CAPABILITY_CASES.keys()
)
def test_allocatable(spec, count, bound, reason):
    pods = [queued(pod(f"p{i}", cpu=1000, mem=1, submit_time=i), "q") for i in range(count)]
    reasons = {f"p{count - 1}": reason} if reason else {}
    check(
        Case(
            [node("n", cpu=8000, mem=65536)],
            pods=pods,
            queues=[Queue("q", **spec)],
            binds={p: "n" for p in bound},
            reasons=reasons,
        ),
        CFG,
    )


ENQUEUE_CASES = {
    # cpu already running in the queue, minResources cpu → phase, reason
    "within capability": (0, 3000, GroupPhase.INQUEUE, None),
    "past capability": (
        0,
        6000,
        GroupPhase.PENDING,
        "minResources exceed the capability of queue q: cpu needs 6, 4 left",
    ),
    "past capability counting what runs": (
        2000,
        3000,
        GroupPhase.PENDING,
        "minResources exceed the capability of queue q: cpu needs 3, 2 left",
    ),
}


@pytest.mark.parametrize(
    "running,min_cpu,phase,reason", ENQUEUE_CASES.values(), ids=ENQUEUE_CASES.keys()
)
def test_enqueue_respects_capability(running, min_cpu, phase, reason):
    bound = [(queued(pod("old", cpu=running, mem=1), "q"), "n")] if running else []
    capability, min_resources = {"cpu": 4000}, {"cpu": min_cpu}
    groups = [PodGroup("g", min_member=1, min_resources=min_resources, queue="q")]
    p = pod("g-0", cpu=100, mem=1, group="g")
    cfg = config(["priority", "gang", "proportion", "resource-fit"], actions="enqueue")
    check(
        Case(
            [node("n", cpu=16000, mem=65536)],
            pods=[p],
            bound=bound,
            groups=groups,
            queues=[Queue("q", capability=capability)],
            phases={"g": phase},
            reasons={"g-0": reason} if reason else {},
        ),
        cfg,
    )


def test_two_groups_admitted_within_capability_count_each_other():
    groups = [
        PodGroup(g, min_member=1, min_resources={"cpu": 3000}, queue="q", submit_time=t)
        for t, g in enumerate("ab")
    ]
    pods = [pod(f"{g}-0", cpu=100, mem=1, group=g) for g in "ab"]
    cfg = config(["priority", "gang", "proportion", "resource-fit"], actions="enqueue")
    check(
        Case(
            [node("n", cpu=16000, mem=65536)],
            pods=pods,
            groups=groups,
            queues=[Queue("q", capability={"cpu": 4000})],
            phases={"a": GroupPhase.INQUEUE, "b": GroupPhase.PENDING},
        ),
        cfg,
    )


def test_a_group_beyond_its_queues_deserved_share_is_not_admitted():
    """Weights 5:1 on 12 CPUs with both queues asking for everything: dev deserves 2 CPUs. Its
    6-CPU gang could never be allocated there; admitting it would promise 6 CPUs to a group
    that cannot start and refuse everyone else's admission behind it."""
    cfg = config(["priority", "gang", "proportion", "resource-fit"], actions="enqueue, allocate")
    big = [queued(pod(f"a-{i}", cpu=1000, mem=1), "a") for i in range(12)]
    dev = PodGroup("dev-job", min_member=6, min_resources={"cpu": 6000}, queue="dev")
    dev_pods = [pod(f"dev-{i}", cpu=1000, mem=1, group="dev-job") for i in range(6)]
    s = check(
        Case(
            [node("n", cpu=12000, mem=65536)],
            pods=big + dev_pods,
            groups=[dev],
            queues=[Queue("a", weight=5), Queue("dev", weight=1)],
            # a deserves the other 10 CPUs (pods go in name order: a-10 and a-11 before a-2)
            binds={f"a-{i}" for i in (0, 1, 10, 11, 2, 3, 4, 5, 6, 7)},
            phases={"dev-job": GroupPhase.PENDING},
        ),
        cfg,
    )
    assert s.pending_reason(dev_pods[0]) == (
        "queue dev at its deserved share: cpu needs 6, deserves 2 more"
    )


def test_a_queue_alone_is_refused_by_idle_room_not_by_its_share():
    cfg = config(["priority", "gang", "proportion", "resource-fit"], actions="enqueue, allocate")
    group = PodGroup("g", min_member=2, min_resources={"cpu": 2000})
    pods = [pod(f"g-{i}", cpu=1000, mem=1, group="g") for i in range(2)]
    s = check(
        Case(
            [node("n", cpu=4000, mem=65536)],
            bound=[(pod("busy", cpu=4000, mem=1), "n")],
            pods=pods,
            groups=[group],
            phases={"g": GroupPhase.PENDING},
        ),
        cfg,
    )
    assert s.pending_reason(pods[0]) == "minResources exceed the idle capacity: cpu needs 2, 0 idle"
