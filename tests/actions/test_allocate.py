"""allocate: queues take turns, queue problems become reasons, jobs share nodes, and a job that
cannot fit does not hold back the ones that can."""

from __future__ import annotations

import pytest

from berth.api.keys import QUEUE_NAME_ANNOTATION
from berth.api.objects import PodGroup, Queue
from tests.builders import config, node, pod, run, scheduler

WITH_ENQUEUE = None  # the default configuration
WITHOUT_ENQUEUE = config(
    ["priority", "gang", "resource-fit", "least-allocated"], actions="allocate, backfill"
)


def test_queues_take_turns():
    groups = [PodGroup(f"{q}{i}", queue=q, submit_time=i) for q in ("qa", "qb") for i in range(3)]
    s = scheduler([node("n", cpu=4000)], queues=[Queue("qa"), Queue("qb")], groups=groups)
    binds = run(s, [pod(f"{g.name}-p", cpu=1000, group=g.name) for g in groups])
    assert sorted(binds) == ["qa0-p", "qa1-p", "qb0-p", "qb1-p"]


def test_queue_turns_follow_job_order_inside_each_queue():
    groups = [
        PodGroup("qa-lo", queue="qa", priority=0),
        PodGroup("qa-hi", queue="qa", priority=9),
        PodGroup("qb-only", queue="qb"),
    ]
    s = scheduler([node("n", cpu=2000)], queues=[Queue("qa"), Queue("qb")], groups=groups)
    binds = run(s, [pod(f"{g.name}-p", cpu=1000, group=g.name) for g in groups])
    assert sorted(binds) == ["qa-hi-p", "qb-only-p"]


QUEUE_CASES = {
    "closed queue, with enqueue": (
        Queue("q", state="Closed"),
        "q",
        WITH_ENQUEUE,
        "queue q is closed",
    ),
    "closed queue, without enqueue": (
        Queue("q", state="Closed"),
        "q",
        WITHOUT_ENQUEUE,
        "queue q is closed",
    ),
    "missing queue, with enqueue": (Queue("q"), "nope", WITH_ENQUEUE, "queue nope not found"),
    "missing queue, without enqueue": (Queue("q"), "nope", WITHOUT_ENQUEUE, "queue nope not found"),
    "open queue": (Queue("q"), "q", WITH_ENQUEUE, None),
}


@pytest.mark.parametrize(
    "queue,queue_name,cfg,reason", QUEUE_CASES.values(), ids=QUEUE_CASES.keys()
)
def test_queue_problems(queue, queue_name, cfg, reason):
    s = scheduler([node("n")], cfg, queues=[queue], groups=[PodGroup("g", queue=queue_name)])
    p = pod("p", group="g")
    binds = run(s, [p])
    if reason is None:
        assert binds == {"p": "n"}
    else:
        assert binds == {}
        assert s.pending_reason(p) == reason


@pytest.mark.parametrize("cfg", [WITH_ENQUEUE, WITHOUT_ENQUEUE], ids=["enqueue", "no-enqueue"])
def test_pod_of_a_missing_group_waits_for_it(cfg):
    s = scheduler([node("n")], cfg)
    p = pod("p", group="ghost")
    assert run(s, [p]) == {}
    assert s.pending_reason(p) == "podgroup ghost not found"
    s.add_group(PodGroup("ghost"))
    assert run(s, now=1.0) == {"p": "n"}


def test_queue_opened_later_schedules():
    q = Queue("q", state="Closed")
    s = scheduler([node("n")], queues=[q], groups=[PodGroup("g", queue="q")])
    assert run(s, [pod("p", group="g")]) == {}
    q.state = "Open"
    assert run(s, now=1.0) == {"p": "n"}


def test_implicit_group_uses_the_queue_annotation():
    s = scheduler([node("n")], queues=[Queue("q", state="Closed")])
    p = pod("p", annotations={QUEUE_NAME_ANNOTATION: "q"})
    assert run(s, [p]) == {}
    assert s.pending_reason(p) == "queue q is closed"


def test_two_jobs_share_one_node():
    s = scheduler(
        [node("n", cpu=4000)], groups=[PodGroup("a", min_member=2), PodGroup("b", min_member=2)]
    )
    pods = [pod(f"{g}-{i}", cpu=1000, group=g) for g in "ab" for i in range(2)]
    assert run(s, pods) == {p.name: "n" for p in pods}


def test_a_job_spreads_over_nodes_when_one_is_not_enough():
    s = scheduler(
        [node("n0", cpu=2000), node("n1", cpu=2000)], groups=[PodGroup("g", min_member=4)]
    )
    binds = run(s, [pod(f"g-{i}", cpu=1000, group="g") for i in range(4)])
    assert sorted(binds.values()) == ["n0", "n0", "n1", "n1"]


NODELESS_CASES = {
    # a's third pod finds no node next to its first two, and a is undone: b's pod, of the
    # same class, fits on what a gave back.
    "a class without a node beside a gang's placements": (
        [("a", 3, [1000, 2000, 2000]), ("b", 1, [2000])],
        {"b-0"},
    ),
    # c's pod finds no node with nothing placed; d's, of the same class, finds none either.
    "a class without a node, nothing placed": (
        [("r", 1, [3000]), ("c", 1, [2000]), ("d", 1, [2000])],
        {"r-0"},
    ),
}


@pytest.mark.parametrize("jobs,expected", NODELESS_CASES.values(), ids=NODELESS_CASES.keys())
def test_a_class_known_to_have_no_node_this_cycle(jobs, expected):
    s = scheduler(
        [node("n", cpu=4000)],
        groups=[
            PodGroup(name, min_member=size, submit_time=t) for t, (name, size, _) in enumerate(jobs)
        ],
    )
    pods = [
        pod(f"{name}-{i}", cpu=cpu, group=name, submit_time=t)
        for t, (name, _, cpus) in enumerate(jobs)
        for i, cpu in enumerate(cpus)
    ]
    assert set(run(s, pods)) == expected


PRIORITY_CASES = {
    "big high-priority job cannot fit": ((8000, 2), {"lo-0"}),
    "high-priority gang two pods short": ((2500, 3), {"lo-0"}),
    "high-priority job that fits goes first": ((2000, 3), {"hi-0", "hi-1", "hi-2"}),
}


@pytest.mark.parametrize("hi_shape,expected", PRIORITY_CASES.values(), ids=PRIORITY_CASES.keys())
def test_job_that_cannot_fit_does_not_block_lower_priority(hi_shape, expected):
    cpu, count = hi_shape
    s = scheduler(
        [node("n0", cpu=4000), node("n1", cpu=2000)],
        groups=[PodGroup("hi", min_member=count, priority=100), PodGroup("lo", min_member=1)],
    )
    pods = [pod(f"hi-{i}", cpu=cpu, group="hi") for i in range(count)] + [
        pod("lo-0", cpu=1000, group="lo")
    ]
    assert set(run(s, pods)) == expected


def test_only_what_fits_of_many_single_pods():
    s = scheduler([node("n0", cpu=2000), node("n1", cpu=1000)])
    pods = [pod(f"p{i}", cpu=1000, submit_time=i) for i in range(5)]
    binds = run(s, pods)
    assert sorted(binds) == ["p0", "p1", "p2"]
    assert s.pending_reason(pods[3]) == "0/2 nodes available: 2 insufficient cpu"


def test_release_frees_room_for_the_next_session():
    s = scheduler([node("n", cpu=1000)])
    first, second = pod("p0", cpu=1000), pod("p1", cpu=1000, submit_time=1.0)
    assert run(s, [first, second]) == {"p0": "n"}
    s.release(first)
    assert run(s, now=1.0) == {"p1": "n"}


CAPABILITY_CASES = {
    # capability, pods (cpu each), expected bound
    "room for two": ({"cpu": 2000}, [1000, 1000, 1000], ["p0", "p1"]),
    "exact fit": ({"cpu": 3000}, [1000, 1000, 1000], ["p0", "p1", "p2"]),
    "other resource uncapped": ({"nvidia.com/gpu": 1000}, [1000, 1000], ["p0", "p1"]),
    "zero capability": ({"cpu": 0}, [1000], []),
}


@pytest.mark.parametrize(
    "capability,cpus,expected", CAPABILITY_CASES.values(), ids=CAPABILITY_CASES.keys()
)
def test_queue_capability_is_never_exceeded(capability, cpus, expected):
    s = scheduler([node("n0", cpu=8000), node("n1", cpu=8000)])
    s.add_queue(Queue("q", capability=capability))
    pods = [
        pod(f"p{i}", cpu=c, submit_time=i, annotations={QUEUE_NAME_ANNOTATION: "q"})
        for i, c in enumerate(cpus)
    ]
    assert sorted(run(s, pods)) == expected
    for p in pods[len(expected) :]:
        assert s.pending_reason(p) == "queue q at capability (cpu)"


def test_queue_capability_frees_up_when_pods_leave():
    s = scheduler([node("n0", cpu=8000)])
    s.add_queue(Queue("q", capability={"cpu": 1000}))
    first, second = (
        pod(f"p{i}", cpu=1000, submit_time=i, annotations={QUEUE_NAME_ANNOTATION: "q"})
        for i in range(2)
    )
    assert run(s, [first, second]) == {"p0": "n0"}
    s.release(first)
    assert run(s, now=1.0) == {"p1": "n0"}


def test_a_gang_over_capability_binds_nothing():
    s = scheduler([node("n0", cpu=8000)])
    s.add_queue(Queue("q", capability={"cpu": 2000}))
    s.add_group(PodGroup("g", min_member=3, queue="q"))
    assert run(s, [pod(f"g{i}", group="g") for i in range(3)]) == {}
    held = s.queue_allocated.get("q")  # (none placed and undone: the gang is refused at once)
    assert held is None or held.sum() == 0


@pytest.mark.parametrize("cfg", [WITH_ENQUEUE, WITHOUT_ENQUEUE], ids=["proportion", "round robin"])
def test_a_queue_whose_job_cannot_fit_does_not_block_the_others(cfg):
    # "big" goes first (equal shares, then by name) but its gang needs more than the node;
    # with proportion its demand still counts, so "small" deserves half the node: both pods.
    s = scheduler(
        [node("n", cpu=4000)],
        cfg,
        queues=[Queue("big"), Queue("small")],
        groups=[PodGroup("gang", min_member=5, queue="big")],
    )
    gang = [pod(f"gang-{i}", cpu=1000, group="gang") for i in range(5)]
    small = [
        pod(f"s{i}", cpu=1000, submit_time=i, annotations={QUEUE_NAME_ANNOTATION: "small"})
        for i in range(2)
    ]
    assert run(s, gang + small) == {"s0": "n", "s1": "n"}
