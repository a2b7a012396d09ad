"""capacity: quotas straight from the Queue, borrowing up to the real capability, guarantees
kept out of other queues' reach, and hierarchical queues whose use rolls up to their parents."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import Case, check, config, node, pod, queued, scheduler, session_of

CFG = config(["priority", "gang", "capacity", "resource-fit", "least-allocated"])
CLUSTER = [node("n0", cpu=4000, mem=65536), node("n1", cpu=4000, mem=65536)]


def cpus(queue: str, count: int, cpu: int = 1000) -> list:
    return [queued(pod(f"{queue}{i}", cpu=cpu, mem=0, submit_time=i), queue) for i in range(count)]


def names(prefix: str, count: int) -> set[str]:
    return {f"{prefix}{i}" for i in range(count)}


CASES = {
    "borrows idle capacity past deserved": Case(
        CLUSTER, pods=cpus("a", 6), queues=[Queue("a", deserved={"cpu": 2000})], binds=names("a", 6)
    ),
    "never past capability": Case(
        CLUSTER,
        pods=cpus("a", 6),
        queues=[Queue("a", deserved={"cpu": 2000}, capability={"cpu": 3000})],
        binds=names("a", 3),
        reasons={"a5": "queue a at capability (cpu)"},
    ),
    "another queue's guarantee is out of reach": Case(
        CLUSTER,
        pods=cpus("a", 8),
        queues=[Queue("a", deserved={"cpu": 8000}), Queue("g", guarantee={"cpu": 3000})],
        binds=names("a", 5),
        reasons={"a7": "queue a at capability (cpu)"},
    ),
    "the child inherits its parent's capability": Case(
        CLUSTER,
        pods=cpus("a", 6),
        queues=[Queue("org", capability={"cpu": 4000}), Queue("a", parent="org")],
        binds=names("a", 4),
        reasons={"a5": "queue a at capability (cpu)"},
    ),
    "siblings share their parent's capability": Case(
        CLUSTER,
        pods=cpus("a", 3) + cpus("b", 3),
        queues=[
            Queue("org", capability={"cpu": 4000}),
            Queue("a", parent="org", deserved={"cpu": 2000}),
            Queue("b", parent="org", deserved={"cpu": 2000}),
        ],
        binds={"a0", "a1", "b0", "b1"},
        reasons={"a2": "queue org at capability (cpu)"},
    ),
    "a child's own capability is tighter than its parent's": Case(
        CLUSTER,
        pods=cpus("a", 4),
        queues=[
            Queue("org", capability={"cpu": 4000}),
            Queue("a", parent="org", capability={"cpu": 1000}),
        ],
        binds={"a0"},
        reasons={"a3": "queue a at capability (cpu)"},
    ),
    "jobs in a parent queue wait": Case(
        CLUSTER,
        pods=cpus("org", 1),
        queues=[Queue("org"), Queue("a", parent="org")],
        binds=set(),
        reasons={"org0": "queue org is not a leaf queue"},
    ),
    "a sibling's guarantee is reserved inside the parent": Case(
        CLUSTER,
        pods=cpus("a", 4),
        queues=[
            Queue("org", capability={"cpu": 4000}),
            Queue("a", parent="org"),
            Queue("b", parent="org", guarantee={"cpu": 1000}),
        ],
        binds=names("a", 3),
        reasons={"a3": "queue a at capability (cpu)"},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_capacity(case: Case):
    check(case, CFG)


def test_queue_order_compares_the_ancestors_where_paths_part():
    # org1 holds half its deserved, org2 nothing: every child of org2 goes before org1's,
    # whatever the children's own shares.
    queues = [
        Queue("org1", deserved={"cpu": 4000}),
        Queue("org2", deserved={"cpu": 4000}),
        Queue("a", parent="org1", deserved={"cpu": 4000}),
        Queue("b", parent="org2", deserved={"cpu": 100}),
        Queue("c", parent="org2", deserved={"cpu": 100}),
    ]
    bound = [(queued(pod("a-old", cpu=2000, mem=0), "a"), "n0")]
    s = scheduler(CLUSTER, CFG, queues=queues, bound=bound)
    session = session_of(s)
    keys = {q: session.queue_order_key(q, 0) for q in ("a", "b", "c")}
    assert sorted(keys, key=keys.__getitem__) == ["b", "c", "a"]
    # Queue priority first, then (share, deserves nothing) per level of the path.
    assert keys["a"] == ((0, (((0.5, False), "org1"), ((0.5, False), "a"))), 0, "a")


def test_use_rolls_up_to_a_parent_listed_after_its_child():
    # The child's lineage and the default queue's row together name every row in order,
    # yet the child's use counts against two of them.
    queues = [Queue("a", parent="org"), Queue("org", capability={"cpu": 8000})]
    bound = [
        (queued(pod("d-old", cpu=1000, mem=0), "default"), "n1"),
        (queued(pod("a-old", cpu=2000, mem=0), "a"), "n0"),
    ]
    s = scheduler(CLUSTER, CFG, queues=queues, bound=bound)
    session_of(s)
    (plugin,) = [p for p in s.framework.plugins if p.name == "capacity"]
    cpu = plugin.columns.names.index("cpu")
    held = {name: plugin.used[row][cpu] for name, row in plugin.index.items()}
    assert held == {"default": 1000, "a": 2000, "org": 2000}


ENQUEUE_CASES = {
    "fits what the sibling leaves": ({"cpu": 2000}, GroupPhase.INQUEUE, None),
    "past what the sibling leaves under the parent": (
        {"cpu": 3000},
        GroupPhase.PENDING,
        "minResources exceed the capability of queue org: cpu needs 3, 2 left",
    ),
}


@pytest.mark.parametrize(
    "min_resources,phase,reason", ENQUEUE_CASES.values(), ids=ENQUEUE_CASES.keys()
)
def test_enqueue_checks_every_ancestor(min_resources, phase, reason):
    cfg = config(["priority", "gang", "capacity", "resource-fit"], actions="enqueue")
    queues = [
        Queue("org", capability={"cpu": 4000}),
        Queue("a", parent="org"),
        Queue("b", parent="org"),
    ]
    sibling = [(queued(pod("b-old", cpu=2000, mem=0), "b"), "n0")]
    group = PodGroup("g", min_resources=min_resources, queue="a")
    check(
        Case(
            CLUSTER,
            pods=[pod("g-0", cpu=100, mem=0, group="g")],
            groups=[group],
            bound=sibling,
            queues=queues,
            phases={"g": phase},
            reasons={"g-0": reason} if reason else {},
        ),
        cfg,
    )
