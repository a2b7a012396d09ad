"""kube-scheduler's podtopologyspread scoring table (scoring_test.go:
TestPodTopologySpreadScore), run against berth's topology-spread score in the default
profile; the scores agree exactly.

``candidates`` are the nodes that passed filtering (the others are in the cluster but not
scored). berth names every node by kubernetes.io/hostname, so the row where a candidate lacks
the topology key uses a key of its own ("node"); for a key with one node per value the
arithmetic is the same. System default constraints count the pods the owning ReplicaSet or
StatefulSet selects, as kube-scheduler's; berth has no Services and counts a Volcano Job's
pods where kube-scheduler would count a Service's. Not ported: terminating pods (berth has none) and
minDomains with ScheduleAnyway (berth refuses such a pod, as the API server does).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from berth.api.keys import JOB_NAME_LABEL
from berth.api.selectors import LabelSelector, Requirement
from tests.plugins.kube.harness import NODE_AFF, NODE_SEL, cluster, node, pod, scores

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
HOST = "kubernetes.io/hostname"
SA = "ScheduleAnyway"
FOO_POD = {"foo": ""}
UNSCHEDULABLE = [("node.kubernetes.io/unschedulable", "", "NoSchedule")]


def sc(skew: int, key: str, selector: dict | None, **extra) -> dict:
    entry: dict = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": SA}
    if selector is not None:
        entry["labelSelector"] = selector
    names = {
        "affinity": "nodeAffinityPolicy",
        "taints": "nodeTaintsPolicy",
        "keys": "matchLabelKeys",
    }
    entry.update({names[k]: v for k, v in extra.items()})
    return entry


def on(*where: str, labels: dict | None = None, namespace: str = "default") -> list:
    return [(labels if labels is not None else FOO_POD, n, namespace) for n in where]


def zones(*names: str) -> dict:
    """Nodes named node-<x>; the first two in zone1, the rest in zone2."""
    return {n: {"zone": "zone1" if i < 2 else "zone2"} for i, n in enumerate(names)}


ABCD = {n: {} for n in ("node-a", "node-b", "node-c", "node-d")}
SPREAD_2103 = on("node-a", "node-a", "node-b", "node-d", "node-d", "node-d")
SPREAD_4321 = on(*["node-a"] * 4, *["node-b"] * 3, *["node-c"] * 2, "node-d")
SPREAD_4213 = on(*["node-a"] * 4, "node-b", "node-b", "node-x", "node-y", "node-y", "node-y")
ABC_FOO = {
    "node-a": {"node": "node-a", "foo": ""},
    "node-b": {"node": "node-b", "foo": ""},
    "node-c": {"node": "node-c"},
}
ABC_PODS = on("node-a", "node-a", "node-b", "node-c")
JOB = {JOB_NAME_LABEL: "web"}

# (incoming labels, constraints, extra pod fields, nodes, candidates (None: all), existing,
#  tainted nodes, scores)
ROWS = {
    "one constraint on node, no existing pods": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        {"node-a": {}, "node-b": {}},
        None,
        [],
        {},
        {"node-a": 100, "node-b": 100},
    ),
    "one constraint on node, one candidate": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        {"node-a": {}, "node-b": {}},
        ["node-a"],
        on("node-a", "node-a", "node-b"),
        {},
        {"node-a": 100},
    ),
    "one constraint on node, the same matching pods everywhere": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        {"node-a": {}, "node-b": {}},
        None,
        on("node-a", "node-b"),
        {},
        {"node-a": 100, "node-b": 100},
    ),
    "one constraint on node, 2/1/0/3": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        ABCD,
        None,
        SPREAD_2103,
        {},
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    "one constraint on node, null selector": (
        FOO_POD,
        [sc(1, HOST, None)],
        {},
        ABCD,
        None,
        SPREAD_2103,
        {},
        dict.fromkeys(ABCD, 100),
    ),
    "one constraint on node, 2/1/0/3, maxSkew 2": (
        FOO_POD,
        [sc(2, HOST, FOO)],
        {},
        ABCD,
        None,
        SPREAD_2103,
        {},
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    "one constraint on node, 4/3/2/1, maxSkew 3": (
        FOO_POD,
        [sc(3, HOST, FOO)],
        {},
        ABCD,
        None,
        SPREAD_4321,
        {},
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    "system default constraints, nodes without zones, pods of one job": (
        {**FOO_POD, **JOB},
        [],
        {},
        ABCD,
        None,
        [(dict(JOB), w, ns) for _, w, ns in SPREAD_4321],
        {},
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    "one constraint on node, 3 of 4 nodes candidates": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        {n: {} for n in ("node-a", "node-b", "node-x", "node-y")},
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        {},
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    "one constraint, a candidate without the topology key": (
        FOO_POD,
        [sc(1, "node", FOO)],
        {},
        {
            "node-a": {"node": "node-a"},
            "node-b": {"n": "node-b"},
            "node-x": {"node": "node-x"},
            "node-y": {"node": "node-y"},
        },
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        {},
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    "one constraint on zone, 3 of 4 nodes candidates": (
        FOO_POD,
        [sc(1, "zone", FOO)],
        {},
        zones("node-a", "node-b", "node-x", "node-y"),
        ["node-a", "node-b", "node-x"],
        SPREAD_4213,
        {},
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    "zone and node, 2 of 4 nodes candidates": (
        FOO_POD,
        [sc(1, "zone", FOO), sc(1, HOST, FOO)],
        {},
        zones("node-a", "node-b", "node-x", "node-y"),
        ["node-a", "node-x"],
        on("node-a", "node-a", "node-b", "node-x", "node-x", *["node-y"] * 4),
        {},
        {"node-a": 100, "node-x": 63},
    ),
    "zone and node, different selectors": (
        {"foo": "", "bar": ""},
        [sc(1, "zone", FOO), sc(1, HOST, BAR)],
        {},
        zones("node-a", "node-b", "node-x", "node-y"),
        None,
        on("node-a", "node-y")
        + on("node-b", labels={"foo": "", "bar": ""})
        + on("node-y", labels={"bar": ""}),
        {},
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    "zone and node, different selectors, nodes without pods": (
        {"foo": "", "bar": ""},
        [sc(1, "zone", FOO), sc(1, HOST, BAR)],
        {},
        zones("node-a", "node-b", "node-x", "node-y"),
        None,
        on("node-b", labels={"bar": ""})
        + on("node-x")
        + on("node-y", labels={"foo": "", "bar": ""}),
        {},
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    "zone and node, different selectors, 3 of 4 nodes candidates": (
        {"foo": "", "bar": ""},
        [sc(1, "zone", FOO), sc(1, HOST, BAR)],
        {},
        zones("node-a", "node-b", "node-x", "node-y"),
        ["node-a", "node-b", "node-x"],
        on("node-a", "node-y")
        + on("node-b", labels={"foo": "", "bar": ""})
        + on("node-y", labels={"bar": ""}),
        {},
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    "pods of another namespace do not count": (
        FOO_POD,
        [sc(1, HOST, FOO)],
        {},
        {"node-a": {}, "node-b": {}},
        None,
        on("node-a", namespace="ns1") + on("node-a", "node-b", "node-b"),
        {},
        {"node-a": 100, "node-b": 33},
    ),
    "NodeAffinityPolicy honored with a nodeSelector": (
        FOO_POD,
        [sc(1, "node", FOO)],
        NODE_SEL,
        ABC_FOO,
        None,
        ABC_PODS,
        {},
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    "NodeAffinityPolicy ignored with a nodeSelector": (
        FOO_POD,
        [sc(1, "node", FOO, affinity="Ignore")],
        NODE_SEL,
        ABC_FOO,
        None,
        ABC_PODS,
        {},
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    "NodeAffinityPolicy honored with node affinity": (
        FOO_POD,
        [sc(1, "node", FOO)],
        NODE_AFF,
        ABC_FOO,
        None,
        ABC_PODS,
        {},
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    "NodeAffinityPolicy ignored with node affinity": (
        FOO_POD,
        [sc(1, "node", FOO, affinity="Ignore")],
        NODE_AFF,
        ABC_FOO,
        None,
        ABC_PODS,
        {},
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    "NodeTaintsPolicy honored": (
        FOO_POD,
        [sc(1, "node", FOO, taints="Honor")],
        {},
        {n: {"node": n} for n in ABC_FOO},
        None,
        ABC_PODS,
        {"node-c": UNSCHEDULABLE},
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    "NodeTaintsPolicy ignored": (
        FOO_POD,
        [sc(1, "node", FOO)],
        {},
        {n: {"node": n} for n in ABC_FOO},
        None,
        ABC_PODS,
        {"node-c": UNSCHEDULABLE},
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    "matchLabelKeys with empty selectors": (
        {"foo": "", "bar": ""},
        [sc(1, "zone", {}, keys=["foo"]), sc(1, HOST, {}, keys=["bar"])],
        {},
        zones("node-a", "node-b", "node-c", "node-d"),
        None,
        on("node-a", "node-c")
        + on("node-b", labels={"foo": "", "bar": ""})
        + on("node-c", labels={"bar": ""}),
        {},
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    "matchLabelKeys ANDed with a selector": (
        {"foo": "", "bar": "", "baz": ""},
        [sc(1, "zone", FOO), sc(1, HOST, BAR, keys=["baz"])],
        {},
        zones("node-a", "node-b", "node-c", "node-d"),
        None,
        on("node-a", "node-c")
        + on("node-b", labels={"foo": "", "bar": "", "baz": ""})
        + on("node-c", labels={"bar": ""})
        + on("node-c", labels={"bar": "", "baz": ""}),
        {},
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
}


@pytest.mark.parametrize(
    "labels,constraints,fields,nodes,candidates,existing,taints,expected",
    ROWS.values(),
    ids=ROWS.keys(),
)
def test_score(labels, constraints, fields, nodes, candidates, existing, taints, expected):
    config = [{"name": "PodTopologySpread", "args": {"defaultingType": "System"}}]
    s = cluster(
        [node(n, labels_, taints=taints.get(n, ())) for n, labels_ in nodes.items()],
        [(pod(f"e{i}", ns, on_labels), w) for i, (on_labels, w, ns) in enumerate(existing)],
        plugin_config=config,
    )
    spec = {"topologySpreadConstraints": constraints} if constraints else {}
    incoming = pod("p", labels=labels, **spec, **fields)
    assert scores(s, "topology-spread", incoming, candidates) == {
        n: float(v) for n, v in expected.items()
    }


def test_no_soft_constraints_no_score():
    s = cluster([node("node-a"), node("node-b")])
    assert scores(s, "topology-spread", pod("p", labels=FOO_POD)) == {"node-a": 0.0, "node-b": 0.0}


def test_system_defaults_count_the_pods_the_owning_replica_set_selects():
    """Upstream's system-defaults row as kube-scheduler finds it: the incoming pod's ReplicaSet
    selects ``foo`` pods, so those are the peers spread across hostnames; a pod nothing owns
    gets no default constraint."""
    config = [{"name": "PodTopologySpread", "args": {"defaultingType": "System"}}]
    s = cluster(
        [node(n, labels_) for n, labels_ in ABCD.items()],
        [(pod(f"e{i}", ns, {"foo": ""}), w) for i, (_, w, ns) in enumerate(SPREAD_4321)],
        plugin_config=config,
    )
    owned = replace(
        pod("p", labels=FOO_POD), owner_selector=LabelSelector((Requirement("foo", "Exists"),))
    )
    assert scores(s, "topology-spread", owned) == {
        "node-a": 44.0,
        "node-b": 66.0,
        "node-c": 77.0,
        "node-d": 100.0,
    }
    assert set(scores(s, "topology-spread", pod("q", labels=FOO_POD)).values()) == {0.0}


def test_pods_of_different_owners_never_share_the_default_spread_counts():
    """Two Jobs' pods alike in every other way: each is spread against its own Job's pods (a
    shared equivalence class would count the first one's peers for both)."""
    config = [{"name": "PodTopologySpread", "args": {"defaultingType": "System"}}]
    s = cluster(
        [node(n, labels_) for n, labels_ in ABCD.items()],
        [(pod(f"e{i}", ns, dict(JOB)), w) for i, (_, w, ns) in enumerate(SPREAD_4321)],
        plugin_config=config,
    )
    web = scores(s, "topology-spread", pod("p", labels=dict(JOB)))
    other = scores(s, "topology-spread", pod("q", labels={JOB_NAME_LABEL: "other"}))
    assert web == {"node-a": 44.0, "node-b": 66.0, "node-c": 77.0, "node-d": 100.0}
    assert len(set(other.values())) == 1
