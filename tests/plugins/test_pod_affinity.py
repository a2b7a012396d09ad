"""pod-affinity: required and preferred inter-pod affinity and anti-affinity, by hostname and by
zone, symmetric anti-affinity of existing pods, namespaces, and the first-pod exception."""

from __future__ import annotations

import pytest

from berth.api.objects import PodGroup
from berth.api.selectors import Affinity
from tests.builders import HOST, ZONE, node, place_one, pod, run, scheduler, sel, term, weighted

REASON = "pod affinity/anti-affinity rules"


def cluster(extra_labels: dict[str, dict[str, str]] | None = None):
    extra_labels = extra_labels or {}
    return [
        node(name, zone=zone, labels=extra_labels.get(name))
        for name, zone in (("a1", "z1"), ("a2", "z1"), ("b1", "z2"), ("b2", "z2"))
    ]


def existing():
    """db on b1 (namespace default), cache on a1 (namespace other); both tiny."""
    return [
        (pod("db", cpu=100, mem=100, labels={"app": "db"}), "b1"),
        (pod("cache", cpu=100, mem=100, labels={"app": "cache"}, namespace="other"), "a1"),
    ]


def feasible_nodes(
    affinity: Affinity,
    bound=None,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    nodes=None,
) -> set[str]:
    """Submit four pods that each need most of a node: the nodes they land on are the nodes
    the rules allow (each allowed node takes exactly one)."""
    s = scheduler(nodes or cluster(), bound=existing() if bound is None else bound)
    copies = [
        pod(
            f"w{i}",
            cpu=3000,
            labels=labels or {"app": "web"},
            affinity=affinity,
            namespace=namespace,
        )
        for i in range(4)
    ]
    binds = run(s, copies)
    assert len(binds) == len(set(binds.values()))
    if len(binds) < 4:
        left = next(p for p in copies if p.name not in binds)
        assert REASON in s.pending_reason(left)
    return set(binds.values())


REQUIRED_CASES = {
    "affinity by hostname": (Affinity(pod_required=(term(sel(app="db")),)), {"b1"}),
    "affinity by zone": (Affinity(pod_required=(term(sel(app="db"), ZONE),)), {"b1", "b2"}),
    "affinity to nothing": (Affinity(pod_required=(term(sel(app="nope")),)), set()),
    "affinity ignores other namespaces": (Affinity(pod_required=(term(sel(app="cache")),)), set()),
    "affinity with namespaces": (
        Affinity(pod_required=(term(sel(app="cache"), HOST, ("other",)),)),
        {"a1"},
    ),
    "affinity by a key no node has": (Affinity(pod_required=(term(sel(app="db"), "rack"),)), set()),
    "two affinity terms ANDed": (
        Affinity(
            pod_required=(term(sel(app="db"), ZONE), term(sel(app="cache"), ZONE, ("other",)))
        ),
        set(),
    ),
    "anti-affinity by hostname": (
        Affinity(anti_required=(term(sel(app="db")),)),
        {"a1", "a2", "b2"},
    ),
    "anti-affinity by zone": (Affinity(anti_required=(term(sel(app="db"), ZONE),)), {"a1", "a2"}),
    "anti-affinity ignores other namespaces": (
        Affinity(anti_required=(term(sel(app="cache"), ZONE),)),
        {"a1", "a2", "b1", "b2"},
    ),
    "anti-affinity with namespaces": (
        Affinity(anti_required=(term(sel(app="cache"), ZONE, ("other",)),)),
        {"b1", "b2"},
    ),
    "affinity by zone, anti-affinity by host": (
        Affinity(pod_required=(term(sel(app="db"), ZONE),), anti_required=(term(sel(app="db")),)),
        {"b2"},
    ),
}


@pytest.mark.parametrize("affinity,allowed", REQUIRED_CASES.values(), ids=REQUIRED_CASES.keys())
def test_required(affinity, allowed):
    assert feasible_nodes(affinity) == allowed


def guard(affinity: Affinity, namespace: str = "default"):
    return (
        pod(
            "guard",
            cpu=100,
            mem=100,
            labels={"app": "guard"},
            affinity=affinity,
            namespace=namespace,
        ),
        "a1",
    )


SYMMETRIC_CASES = {
    "existing pod's hostname anti-affinity": (
        Affinity(anti_required=(term(sel(app="web")),)),
        "default",
        {"a2", "b1", "b2"},
    ),
    "existing pod's zone anti-affinity": (
        Affinity(anti_required=(term(sel(app="web"), ZONE),)),
        "default",
        {"b1", "b2"},
    ),
    "existing pod's term counts only its own namespace": (
        Affinity(anti_required=(term(sel(app="web"), ZONE),)),
        "other",
        {"a1", "a2", "b1", "b2"},
    ),
    "existing pod's term naming the new pod's namespace": (
        Affinity(anti_required=(term(sel(app="web"), ZONE, ("default",)),)),
        "other",
        {"b1", "b2"},
    ),
    "existing pod's term not matching the new pod": (
        Affinity(anti_required=(term(sel(app="db"), ZONE),)),
        "default",
        {"a1", "a2", "b1", "b2"},
    ),
    "existing pod's affinity is not symmetric": (
        Affinity(pod_required=(term(sel(app="web")),)),
        "default",
        {"a1", "a2", "b1", "b2"},
    ),
}


@pytest.mark.parametrize(
    "affinity,namespace,allowed", SYMMETRIC_CASES.values(), ids=SYMMETRIC_CASES.keys()
)
def test_existing_pods_anti_affinity_is_symmetric(affinity, namespace, allowed):
    assert feasible_nodes(Affinity(), bound=[guard(affinity, namespace)]) == allowed


def test_symmetric_anti_affinity_arriving_after_the_class_was_compiled():
    """Web pods already scheduled once must see a guard that arrives later."""
    s = scheduler(cluster())
    first = run(s, [pod("w0", cpu=3000, labels={"app": "web"})])["w0"]
    other_zone_node = "b1" if first.startswith("a") else "a1"
    s.place_bound(
        pod(
            "guard",
            cpu=100,
            mem=100,
            labels={"app": "guard"},
            affinity=Affinity(anti_required=(term(sel(app="web"), ZONE),)),
        ),
        other_zone_node,
    )
    binds = run(s, [pod(f"w{i}", cpu=3000, labels={"app": "web"}) for i in range(1, 4)], now=1.0)
    assert {n[0] for n in binds.values()} == {first[0]}
    assert len(binds) == 1  # w0's zone has one node left


SELF_CASES = {
    "first pod may go anywhere the key exists": (HOST, None, {"a1"}),
    "first pod needs the topology key": (
        "rack",
        {"a2": {"rack": "r1"}, "b2": {"rack": "r2"}},
        {"a2", "b2"},
    ),
}


@pytest.mark.parametrize("key,labels,allowed", SELF_CASES.values(), ids=SELF_CASES.keys())
def test_first_pod_self_affinity_exception(key, labels, allowed):
    # a2, b1 and b2 are loaded, so least-allocated prefers a1 when the rules allow it.
    load = [(pod(f"x{i}", cpu=1500, mem=3000), n) for i, n in enumerate(("a2", "b1", "b2"))]
    affinity = Affinity(pod_required=(term(sel(app="web"), key),))
    where, _ = place_one(cluster(labels), pod("w", labels={"app": "web"}, affinity=affinity), load)
    assert where in allowed


def self_affine_gang(key: str, size: int = 3):
    affinity = Affinity(pod_required=(term(sel(app="web"), key),))
    s = scheduler(cluster(), groups=[PodGroup("g", min_member=size)])
    pods = [pod(f"w{i}", group="g", labels={"app": "web"}, affinity=affinity) for i in range(size)]
    return s, pods


def test_self_affinity_by_zone_keeps_a_gang_in_one_zone():
    s, pods = self_affine_gang(ZONE, size=4)
    binds = run(s, pods)
    assert len(binds) == 4
    assert len({n[0] for n in binds.values()}) == 1


def test_self_affinity_by_hostname_keeps_a_gang_on_one_node():
    s, pods = self_affine_gang(HOST)
    binds = run(s, pods)
    assert len(binds) == 3
    assert len(set(binds.values())) == 1


def test_self_affinity_by_hostname_across_sessions():
    affinity = Affinity(pod_required=(term(sel(app="web")),))
    s = scheduler(cluster())
    first = run(s, [pod("w0", labels={"app": "web"}, affinity=affinity)])["w0"]
    second = run(s, [pod("w1", labels={"app": "web"}, affinity=affinity)], now=1.0)
    assert second == {"w1": first}


PREFERRED_CASES = {
    "preferred affinity by hostname": (
        Affinity(pod_preferred=(weighted(10, sel(app="db")),)),
        {"b1"},
    ),
    "preferred affinity by zone": (
        Affinity(pod_preferred=(weighted(10, sel(app="db"), ZONE),)),
        {"b1", "b2"},
    ),
    "preferred anti-affinity by zone": (
        Affinity(anti_preferred=(weighted(10, sel(app="db"), ZONE),)),
        {"a1", "a2"},
    ),
    "preferred affinity to nothing changes nothing": (
        Affinity(pod_preferred=(weighted(10, sel(app="nope")),)),
        {"a2", "b2"},
    ),
    "heavier term wins": (
        Affinity(
            pod_preferred=(weighted(5, sel(app="db"), ZONE),),
            anti_preferred=(weighted(50, sel(app="db")),),
        ),
        {"b2"},
    ),
}


@pytest.mark.parametrize("affinity,expected", PREFERRED_CASES.values(), ids=PREFERRED_CASES.keys())
def test_preferred_steers(affinity, expected):
    # a1 and b1 hold a small pod each, so least-allocated alone prefers a2 or b2.
    where, _ = place_one(cluster(), pod("p", labels={"app": "web"}, affinity=affinity), existing())
    assert where in expected


def test_preferred_affinity_outweighs_load():
    # b1 is half full; without the preference the pod goes to an empty node.
    heavy = [(pod("db", cpu=2000, mem=4096, labels={"app": "db"}), "b1")]
    plain, _ = place_one(cluster(), pod("p"), heavy)
    assert plain != "b1"
    heavy = [(pod("db", cpu=2000, mem=4096, labels={"app": "db"}), "b1")]
    steered, _ = place_one(
        cluster(), pod("p", affinity=Affinity(pod_preferred=(weighted(1, sel(app="db")),))), heavy
    )
    assert steered == "b1"
