"""reclaim: a queue under its deserved share takes resources back from queues above theirs,
never from non-reclaimable queues or exempt pods, never below a guarantee, keeping gangs whole
and undoing everything for a job that still cannot start."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import GANG, Case, check, config, node, pod, queued

ACTIONS = "enqueue, allocate, reclaim"
PROPORTION = config(["priority", GANG, "proportion", "resource-fit"], actions=ACTIONS)
CAPACITY = config(["priority", GANG, "capacity", "resource-fit"], actions=ACTIONS)
NODES = [node("n", cpu=4000)]


def cpu(name: str, queue: str, amount: int = 1000, **fields) -> object:
    return queued(pod(name, cpu=amount, mem=0, **fields), queue)


def held(queue: str, count: int, amount: int = 1000, **fields) -> list[tuple]:
    return [(cpu(f"{queue}-old{i}", queue, amount, **fields), "n") for i in range(count)]


def wants(queue: str, count: int, amount: int = 1000) -> list:
    return [cpu(f"{queue}{i}", queue, amount, submit_time=i) for i in range(count)]


def by(queue: str, *victims: str) -> dict[str, str]:
    return dict.fromkeys(victims, f"reclaimed by queue {queue}")


def make_cases() -> dict[str, tuple[Case, object]]:
    two = [Queue("a"), Queue("b")]
    cases: dict[str, tuple[Case, object]] = {}
    cases["from an overused queue, down to its share"] = (
        Case(
            NODES,
            queues=two,
            bound=held("a", 4),
            pods=wants("b", 3),
            binds={"b0": "n", "b1": "n"},
            evictions=by("b", "a-old0", "a-old1"),
        ),
        PROPORTION,
    )
    cases["not from a queue that is not reclaimable"] = (
        Case(
            NODES,
            queues=[Queue("a", reclaimable=False), Queue("b")],
            bound=held("a", 4),
            pods=wants("b", 2),
        ),
        PROPORTION,
    )
    cases["not preemptable=false pods"] = (
        Case(NODES, queues=two, bound=held("a", 4, preemptable=False), pods=wants("b", 2)),
        PROPORTION,
    )
    cases["a closed queue does not reclaim"] = (
        Case(
            NODES,
            queues=[Queue("a"), Queue("b", state="Closed")],
            bound=held("a", 4),
            pods=wants("b", 2),
            reasons={"b0": "queue b is closed"},
        ),
        PROPORTION,
    )
    cases["the guarantee is honoured"] = (
        Case(
            NODES,
            queues=[Queue("a", guarantee={"cpu": 3000}), Queue("b")],
            bound=held("a", 4),
            pods=wants("b", 2),
            binds={"b0": "n"},
            evictions=by("b", "a-old0"),
            reasons={"b1": "queue b is overused"},
        ),
        PROPORTION,
    )
    cases["weights decide how much comes back"] = (
        Case(
            NODES,
            queues=[Queue("a"), Queue("b", weight=3)],
            bound=held("a", 4),
            pods=wants("b", 4),
            binds={"b0": "n", "b1": "n", "b2": "n"},
            evictions=by("b", "a-old0", "a-old1", "a-old2"),
        ),
        PROPORTION,
    )
    cases["gang alone keeps single-pod jobs (all at minMember)"] = (
        Case(NODES, queues=two, bound=held("a", 4), pods=wants("b", 2)),
        config(["priority", "gang", "resource-fit"], actions=ACTIONS),
    )
    elastic = PodGroup("a-el", min_member=2, queue="a")
    cases["gang alone gives up what a job holds above minMember (Volcano's vote)"] = (
        Case(
            NODES,
            queues=two,
            groups=[elastic],
            bound=[(cpu(f"a-el{i}", "a", group="a-el"), "n") for i in range(4)],
            pods=wants("b", 2),
            binds={"b0": "n", "b1": "n"},
            evictions=by("b", "a-el0", "a-el1"),
        ),
        config(["priority", "gang", "resource-fit"], actions=ACTIONS),
    )
    cases["without a reclaimable plugin nothing is reclaimable"] = (
        Case(NODES, queues=two, bound=held("a", 4), pods=wants("b", 2)),
        config(
            ["priority", {"name": "gang", "enableReclaimable": False}, "resource-fit"],
            actions=ACTIONS,
        ),
    )
    cases["capacity: deserved comes back"] = (
        Case(
            NODES,
            queues=[Queue("a", deserved={"cpu": 2000}), Queue("b", deserved={"cpu": 2000})],
            bound=held("a", 4),
            pods=wants("b", 3),
            binds={"b0": "n", "b1": "n"},
            evictions=by("b", "a-old0", "a-old1"),
        ),
        CAPACITY,
    )
    cases["capacity: only up to the reclaimer's deserved"] = (
        Case(
            NODES,
            queues=[Queue("a", deserved={"cpu": 3000}), Queue("b", deserved={"cpu": 1000})],
            bound=held("a", 4),
            pods=wants("b", 2),
            binds={"b0": "n"},
            evictions=by("b", "a-old0"),
        ),
        CAPACITY,
    )
    cases["capacity: not from a queue within its deserved"] = (
        Case(
            NODES,
            queues=[Queue("a", deserved={"cpu": 4000}), Queue("b", deserved={"cpu": 1000})],
            bound=held("a", 4),
            pods=wants("b", 1),
        ),
        CAPACITY,
    )
    cases["capacity: hierarchy, a sibling under the same parent"] = (
        Case(
            NODES,
            queues=[
                Queue("org"),
                Queue("a", parent="org", deserved={"cpu": 2000}),
                Queue("b", parent="org", deserved={"cpu": 2000}),
            ],
            bound=held("a", 4),
            pods=wants("b", 2),
            binds={"b0": "n", "b1": "n"},
            evictions=by("b", "a-old0", "a-old1"),
        ),
        CAPACITY,
    )
    return cases


@pytest.mark.parametrize("name", make_cases().keys())
def test_reclaim(name):
    case, cfg = make_cases()[name]
    check(case, cfg)


def test_gangs_are_reclaimed_whole_or_not_at_all():
    # a's gang of two 2-CPU pods sits at its minMember; evicting one would break it, evicting
    # both would take a below its share: nothing is reclaimed.
    group = PodGroup("g", min_member=2, queue="a")
    members = [(pod(f"g-{i}", cpu=2000, mem=0, group="g"), "n") for i in range(2)]
    check(
        Case(
            NODES,
            queues=[Queue("a"), Queue("b")],
            groups=[group],
            bound=members,
            pods=wants("b", 1),
        ),
        PROPORTION,
    )


def test_a_reclaimer_gang_that_cannot_complete_evicts_nobody():
    # b's gang needs 3 CPUs at once but may only take back its 2 deserved: nothing happens.
    group = PodGroup("bg", min_member=3, queue="b")
    members = [pod(f"bg-{i}", cpu=1000, mem=0, group="bg") for i in range(3)]
    check(
        Case(
            NODES,
            queues=[Queue("a"), Queue("b")],
            groups=[group],
            bound=held("a", 4),
            pods=members,
            phases={"bg": GroupPhase.INQUEUE},
        ),
        PROPORTION,
    )


def test_reclaimer_gang_within_its_share_is_placed_whole():
    group = PodGroup("bg", min_member=2, queue="b")
    members = [pod(f"bg-{i}", cpu=1000, mem=0, group="bg") for i in range(2)]
    check(
        Case(
            NODES,
            queues=[Queue("a"), Queue("b")],
            groups=[group],
            bound=held("a", 4),
            pods=members,
            binds={"bg-0": "n", "bg-1": "n"},
            evictions=by("b", "a-old0", "a-old1"),
        ),
        PROPORTION,
    )
