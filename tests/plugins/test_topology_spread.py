"""topology-spread: DoNotSchedule keeps skew within maxSkew over the eligible domains;
ScheduleAnyway only steers."""

from __future__ import annotations

from collections import Counter

import pytest

from berth.api.objects import Pod, PodGroup
from berth.api.selectors import SpreadConstraint
from tests.builders import HOST, ZONE, feasible, node, place_one, pod, run, scheduler, sel

ZONED = {"a1", "a2", "b1", "c1"}


def cluster(pool: set[str] = frozenset()):
    """z1: a1, a2; z2: b1; z3: c1; x has no zone label."""
    spec = (("a1", "z1"), ("a2", "z1"), ("b1", "z2"), ("c1", "z3"), ("x", None))
    return [node(n, zone=z, labels={"pool": "p"} if n in pool else None) for n, z in spec]


def spread(
    max_skew: int = 1,
    key: str = ZONE,
    when: str = "DoNotSchedule",
    min_domains: int = 1,
    **labels: str,
) -> SpreadConstraint:
    return SpreadConstraint(max_skew, key, when, sel(**(labels or {"app": "web"})), min_domains)


def web(name: str, *constraints: SpreadConstraint, **fields) -> Pod:
    fields.setdefault("labels", {"app": "web"})
    return pod(name, cpu=100, mem=100, spread=constraints, **fields)


def existing(*placements: str, labels=None, namespace="default"):
    return [
        (pod(f"e{i}", cpu=100, mem=100, labels=labels or {"app": "web"}, namespace=namespace), n)
        for i, n in enumerate(placements)
    ]


# (nodes holding an app=web pod each, constraint, options, nodes allowed for a new app=web pod);
# options: existing_labels / existing_namespace for the bound pods, extra for a 2nd constraint.
CASES = {
    "empty cluster: every zoned node": ((), spread(), {}, ZONED),
    "the empty zone only": (("a1", "b1"), spread(), {}, {"c1"}),
    "both zones at the minimum": (("a1", "a2", "b1", "c1"), spread(), {}, {"b1", "c1"}),
    "maxSkew 2 allows one more": (("a1",), spread(2), {}, ZONED),
    "maxSkew 2 at its limit": (("a1", "a2"), spread(2), {}, {"b1", "c1"}),
    "pods of other namespaces do not count": (
        ("a1", "b1"),
        spread(),
        {"existing_namespace": "other"},
        ZONED,
    ),
    "pods not matching the selector do not count": (("a1", "b1"), spread(app="db"), {}, ZONED),
    "a pod not matching its own selector adds no skew": (
        ("a1",),
        spread(app="db"),
        {"existing_labels": {"app": "db"}},
        ZONED,
    ),
    "minDomains above the domain count floors the minimum at 0": (
        ("a1", "b1", "c1"),
        spread(min_domains=4),
        {},
        set(),
    ),
    "minDomains met": (("a1", "b1", "c1"), spread(min_domains=3), {}, ZONED),
    "hostname key: x counts as a domain": (("a1",), spread(key=HOST), {}, {"a2", "b1", "c1", "x"}),
    "two constraints ANDed": (("a1", "b1"), spread(2), {"extra": spread(key=HOST)}, {"a2", "c1"}),
    "ScheduleAnyway never filters": (
        ("a1", "a2", "a1"),
        spread(when="ScheduleAnyway"),
        {},
        ZONED | {"x"},
    ),
}


@pytest.mark.parametrize("placed,constraint,opts,allowed", CASES.values(), ids=CASES.keys())
def test_do_not_schedule(placed, constraint, opts, allowed):
    opts = dict(opts)
    constraints = (constraint,) + ((opts.pop("extra"),) if "extra" in opts else ())
    labels = opts.pop("existing_labels", None)
    namespace = opts.pop("existing_namespace", "default")
    s = scheduler(cluster(), bound=existing(*placed, labels=labels, namespace=namespace))
    assert feasible(s, web("new", *constraints, **opts)) == allowed


def test_node_selector_limits_the_eligible_domains():
    """z3 is outside the pod's nodeSelector, so its emptiness does not hold z1 and z2 back."""
    bound = existing("a1", "b1")
    s = scheduler(cluster(pool={"a1", "a2", "b1"}), bound=bound)
    assert feasible(s, web("new", spread(), node_selector={"pool": "p"})) == {"a1", "a2", "b1"}
    s = scheduler(cluster(pool={"a1", "a2", "b1"}), bound=existing("a1", "b1"))
    assert feasible(s, web("new", spread())) == {"c1"}


def test_unsatisfiable_reason():
    s = scheduler(cluster(), bound=existing("a1", "b1", "c1"))
    new = web("new", spread(min_domains=4))
    assert run(s, [new]) == {}
    assert s.pending_reason(new) == ("0/5 nodes available: 5 topology spread constraints")


def test_replicas_spread_evenly_in_one_session():
    s = scheduler(cluster())
    binds = run(s, [web(f"w{i}", spread()) for i in range(6)])
    zones = Counter({"a": "z1", "b": "z2", "c": "z3"}[n[0]] for n in binds.values())
    assert zones == {"z1": 2, "z2": 2, "z3": 2}


def test_replicas_as_one_gang_spread_evenly():
    s = scheduler(cluster(), groups=[PodGroup("g", min_member=6)])
    binds = run(s, [web(f"w{i}", spread(), group="g") for i in range(6)])
    zones = Counter(n[0] for n in binds.values())
    assert zones == {"a": 2, "b": 2, "c": 2}


STEER_CASES = {
    "to the emptiest zone": (("a1", "b1"), {"c1"}),
    "away from the fullest zone": (("a1", "a2", "b1", "b1", "c1"), {"c1"}),
    "node without the key ranks last": (("a1", "b1", "c1"), ZONED),
}


@pytest.mark.parametrize("placed,expected", STEER_CASES.values(), ids=STEER_CASES.keys())
def test_schedule_anyway_steers(placed, expected):
    where, _ = place_one(cluster(), web("new", spread(when="ScheduleAnyway")), existing(*placed))
    assert where in expected


def test_schedule_anyway_never_blocks():
    # Only the crowded zone has room: the pod still goes there.
    nodes = [node("a1", zone="z1"), node("b1", zone="z2", cpu=50)]
    where, _ = place_one(
        nodes, web("new", spread(when="ScheduleAnyway")), existing("a1", "a1", "a1")
    )
    assert where == "a1"
