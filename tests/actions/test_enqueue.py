"""enqueue: admit PodGroups whose minResources fit in the idle capacity."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from berth.resources import MIB
from tests.builders import Case, check, config, node, pod, run, scheduler

ENQUEUE_ONLY = config(["priority", "gang", "resource-fit"], actions="enqueue")


def two_nodes(**kw):
    return [node("n0", **kw), node("n1", **kw)]


def phase(s, group: str) -> GroupPhase:
    return s.jobs[f"default/{group}"].group.phase


CASES = {
    "fits the summed idle capacity": (two_nodes(), [], {"cpu": 6000}, None),
    "exactly the idle capacity": (two_nodes(), [], {"cpu": 8000, "memory": 16384 * MIB}, None),
    "no minResources": (two_nodes(), [], {}, None),
    "cpu short": (
        two_nodes(),
        [],
        {"cpu": 9000},
        "minResources exceed the idle capacity: cpu needs 9, 8 idle",
    ),
    "memory short, in Gi": (
        two_nodes(),
        [],
        {"memory": 20480 * MIB},
        "minResources exceed the idle capacity: memory needs 20Gi, 16Gi idle",
    ),
    "gpu nobody has": (
        two_nodes(),
        [],
        {"nvidia.com/gpu": 1000},
        "minResources exceed the idle capacity: nvidia.com/gpu needs 1, 0 idle",
    ),
    "extended resource nobody has": (
        two_nodes(),
        [],
        {"example.com/fpga": 1},
        "minResources exceed the idle capacity: example.com/fpga needs 1, 0 idle",
    ),
    "bound pods are not idle": (
        two_nodes(),
        [(pod("x", cpu=3000, mem=1024), "n0")],
        {"cpu": 6000},
        "minResources exceed the idle capacity: cpu needs 6, 5 idle",
    ),
    "every short resource listed": (
        two_nodes(),
        [],
        {"cpu": 8500, "memory": 1024 * MIB, "nvidia.com/gpu": 500},
        "minResources exceed the idle capacity: cpu needs 8.5, 8 idle; "
        "nvidia.com/gpu needs 0.5, 0 idle",
    ),
    "unschedulable nodes are not idle": (
        [node("n0"), node("n1", unschedulable=True)],
        [],
        {"cpu": 5000},
        "minResources exceed the idle capacity: cpu needs 5, 4 idle",
    ),
}


@pytest.mark.parametrize("nodes,bound,min_resources,reason", CASES.values(), ids=CASES.keys())
def test_admission(nodes, bound, min_resources, reason):
    s = scheduler(
        nodes,
        ENQUEUE_ONLY,
        bound=bound,
        groups=[PodGroup("g", min_member=1, min_resources=min_resources)],
    )
    p = pod("g-0", cpu=100, group="g")
    assert run(s, [p]) == {}
    if reason is None:
        assert phase(s, "g") == GroupPhase.INQUEUE
    else:
        assert phase(s, "g") == GroupPhase.PENDING
        assert s.pending_reason(p) == reason


def big_groups(**extra):
    return [
        PodGroup("a", min_member=2, min_resources={"cpu": 6000}, submit_time=0.0, **extra),
        PodGroup("b", min_member=2, min_resources={"cpu": 6000}, submit_time=1.0),
    ]


def test_two_big_groups_are_not_admitted_on_the_same_capacity():
    s = scheduler(two_nodes(), ENQUEUE_ONLY, groups=big_groups())
    pods = [pod(f"{g}-{i}", cpu=3000, group=g) for g in "ab" for i in range(2)]
    run(s, pods)
    assert (phase(s, "a"), phase(s, "b")) == (GroupPhase.INQUEUE, GroupPhase.PENDING)
    reason = "minResources exceed the idle capacity: cpu needs 6, 2 idle"
    assert s.pending_reason(pods[2]) == reason
    # Next cycle: "a" is admitted but has not started, and its promise still counts.
    run(s, now=1.0)
    assert phase(s, "b") == GroupPhase.PENDING
    assert s.pending_reason(pods[2]) == reason


def test_higher_priority_group_is_admitted_first():
    groups = [
        PodGroup("a", min_member=2, min_resources={"cpu": 6000}, submit_time=0.0),
        PodGroup("b", min_member=2, min_resources={"cpu": 6000}, submit_time=1.0, priority=10),
    ]
    s = scheduler(two_nodes(), ENQUEUE_ONLY, groups=groups)
    run(s, [pod(f"{g}-{i}", cpu=3000, group=g) for g in "ab" for i in range(2)])
    assert (phase(s, "a"), phase(s, "b")) == (GroupPhase.PENDING, GroupPhase.INQUEUE)


def test_admitted_group_is_then_allocated_and_the_other_waits():
    s = scheduler(two_nodes(), groups=big_groups())
    binds = run(s, [pod(f"{g}-{i}", cpu=3000, group=g) for g in "ab" for i in range(2)])
    assert sorted(binds) == ["a-0", "a-1"]
    assert phase(s, "b") == GroupPhase.PENDING


def test_a_group_short_of_pods_is_admitted_and_waits_for_them():
    # Volcano's enqueue does not ask job_valid: a group is admitted before its pods exist.
    s = scheduler(two_nodes(), groups=[PodGroup("g", min_member=3)])
    p = pod("g-0", group="g")
    assert run(s, [p]) == {}
    assert phase(s, "g") == GroupPhase.INQUEUE
    assert s.pending_reason(p) == "gang 1/3: waiting for pods"


def test_a_group_without_pods_is_admitted():
    s = scheduler(two_nodes(), ENQUEUE_ONLY, groups=[PodGroup("g", min_member=2)])
    run(s)
    assert phase(s, "g") == GroupPhase.INQUEUE
    assert "default/g" not in s.waiting  # nothing to place until its pods come


def test_without_enqueue_jobs_are_still_scheduled():
    cfg = config(
        ["priority", "gang", "resource-fit", "least-allocated"], actions="allocate, backfill"
    )
    huge = PodGroup("g", min_member=2, min_resources={"cpu": 10**6})
    s = scheduler(two_nodes(), cfg, groups=[huge])
    binds = run(s, [pod("g-0", group="g"), pod("g-1", group="g")])
    assert sorted(binds) == ["g-0", "g-1"]
    assert phase(s, "g") == GroupPhase.INQUEUE


def test_with_enqueue_a_huge_group_waits():
    huge = PodGroup("g", min_member=2, min_resources={"cpu": 10**6})
    s = scheduler(two_nodes(), groups=[huge])
    assert run(s, [pod("g-0", group="g"), pod("g-1", group="g")]) == {}


def test_a_refusal_is_remembered_until_capacity_is_freed():
    s = scheduler([node("n", cpu=2000)])
    first = pod("first", cpu=2000)
    assert run(s, [first]) == {"first": "n"}
    s.add_group(PodGroup("g", min_member=1, min_resources={"cpu": 2000}))
    waiting = pod("w", cpu=2000, group="g", submit_time=1.0)
    assert run(s, [waiting], now=1.0) == {}
    reason = "minResources exceed the idle capacity: cpu needs 2, 0 idle"
    assert s.pending_reason(waiting) == reason
    assert run(s, now=2.0) == {}  # nothing changed: the refusal stands, with its reason
    assert s.pending_reason(waiting) == reason
    s.release(first)
    assert run(s, now=3.0) == {"w": "n"}


def test_a_new_pod_for_a_refused_gang_is_looked_at_again():
    s = scheduler([node("n", cpu=4000)])
    s.add_group(PodGroup("g", min_member=2))
    one = pod("g0", group="g")
    assert run(s, [one]) == {}
    assert s.pending_reason(one) == "gang 1/2: waiting for pods"
    assert run(s, [pod("g1", group="g", submit_time=1.0)], now=1.0) == {"g0": "n", "g1": "n"}


def backlog(*specs: tuple[str, int, int], queue: str = "default") -> tuple[list, list]:
    """Groups (name, minResources cpu, priority), submitted in that order, one small pod each."""
    groups = [
        PodGroup(
            name,
            min_member=1,
            min_resources={"cpu": cpu},
            priority=prio,
            queue=queue,
            submit_time=float(i),
        )
        for i, (name, cpu, prio) in enumerate(specs)
    ]
    return groups, [pod(f"{g.name}-0", cpu=100, group=g.name) for g in groups]


SHORT = "minResources exceed the idle capacity: cpu needs {}, {} idle"
BACKLOG = {
    # plugins, queues, backlog on 8 idle CPUs → admitted groups, {pod: reason}
    "an admission leaves room only for the smaller ones": (
        ENQUEUE_ONLY,
        [],
        backlog(("a", 6000, 0), ("b", 3000, 0), ("c", 2000, 0), ("d", 9000, 0)),
        {"a", "c"},
        {"b-0": SHORT.format(3, 2), "d-0": SHORT.format(9, 0)},
    ),
    "job order, not size, decides who gets the room": (
        ENQUEUE_ONLY,
        [],
        backlog(("a", 3000, 0), ("b", 6000, 5), ("c", 2000, 0)),
        {"b", "c"},
        {"a-0": SHORT.format(3, 2)},
    ),
    "a gang short of pods is refused for the shortfall, as enqueue sees it": (
        ENQUEUE_ONLY,
        [],
        ([PodGroup("g", min_member=3, min_resources={"cpu": 9000})], [pod("g-0", group="g")]),
        set(),
        {"g-0": SHORT.format(9, 8)},
    ),
    "a closed queue is a better reason than the shortfall": (
        ENQUEUE_ONLY,
        [Queue("q", state="Closed")],
        backlog(("a", 9000, 0), queue="q"),
        set(),
        {"a-0": "queue q is closed"},
    ),
    "the shortfall wins over a queue plugin's refusal": (
        config(["priority", "gang", "resource-fit", "proportion"], actions="enqueue"),
        [Queue("q", capability={"cpu": 1000})],
        backlog(("a", 9000, 0), queue="q"),
        set(),
        {"a-0": SHORT.format(9, 8)},
    ),
    "a queue plugin still refuses what fits": (
        config(["priority", "gang", "resource-fit", "proportion"], actions="enqueue"),
        [Queue("q", capability={"cpu": 1000})],
        backlog(("a", 2000, 0), queue="q"),
        set(),
        {"a-0": "minResources exceed the capability of queue q: cpu needs 2, 1 left"},
    ),
}


@pytest.mark.parametrize("cfg,queues,work,admitted,reasons", BACKLOG.values(), ids=BACKLOG.keys())
def test_backlog(cfg, queues, work, admitted, reasons):
    groups, pods = work
    s = check(Case(two_nodes(), pods=pods, groups=groups, queues=queues, reasons=reasons), cfg)
    inqueue = {g.name for g in groups if phase(s, g.name) == GroupPhase.INQUEUE}
    assert inqueue == admitted
