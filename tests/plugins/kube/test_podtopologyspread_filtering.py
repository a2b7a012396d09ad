"""kube-scheduler's podtopologyspread filtering tables (filtering_test.go: TestPreFilterState,
TestSingleConstraint, TestMultipleConstraints), run against berth's topology-spread filter in
the default profile, with the node inclusion policies and matchLabelKeys on (their defaults
since Kubernetes 1.27).

TestPreFilterState tables give, per DoNotSchedule constraint, the matching pods of every
eligible domain; each row here checks the verdicts those counts imply for every node
(count + the pod itself − the smallest count ≤ maxSkew, the smallest taken as 0 below
minDomains), so a wrong count changes a verdict. Rows that need Services or ReplicaSets for
default constraints, feature gates off, terminating pods, or a pod the API server refuses
(matchLabelKeys without a labelSelector) have no counterpart in berth.
"""

from __future__ import annotations

import pytest

from tests.plugins.kube.harness import NODE_AFF, NODE_SEL, cluster, node, pod, verdicts

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
UNSCHEDULABLE = [("node.kubernetes.io/unschedulable", "", "NoSchedule")]


def sc(skew: int, key: str, selector: dict | None, when: str = DNS, **extra) -> dict:
    entry: dict = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        entry["labelSelector"] = selector
    names = {
        "min_domains": "minDomains",
        "affinity": "nodeAffinityPolicy",
        "taints": "nodeTaintsPolicy",
        "keys": "matchLabelKeys",
    }
    entry.update({names[k]: v for k, v in extra.items()})
    return entry


def zn(zone: str, name: str, **labels: str) -> dict:
    return {"zone": zone, "node": name, **labels}


FOUR = {
    "node-a": zn("zone1", "node-a"),
    "node-b": zn("zone1", "node-b"),
    "node-x": zn("zone2", "node-x"),
    "node-y": zn("zone2", "node-y"),
}
FOO_POD = {"foo": ""}


def spec(labels: dict, *constraints: dict, **fields) -> dict:
    return {"labels": labels, "topologySpreadConstraints": list(constraints), **fields}


def placed(*where: str, labels: dict | None = None, namespace: str = "default") -> list:
    return [({"labels": labels if labels is not None else FOO_POD}, n, namespace) for n in where]


def run(incoming: dict, nodes: dict, existing: list, taints: dict | None = None) -> dict[str, bool]:
    taints = taints or {}
    pods = []
    for i, (fields, where, namespace) in enumerate(existing):
        pods.append((pod(f"e{i}", namespace, fields.get("labels")), where))
    s = cluster([node(n, labels, taints=taints.get(n, ())) for n, labels in nodes.items()], pods)
    fields = dict(incoming)
    labels = fields.pop("labels")
    return verdicts(s, "topology-spread", pod("p", labels=labels, **fields))


def implied(
    nodes: dict, incoming: dict, counts: list[tuple[str, dict[str, int]]]
) -> dict[str, bool]:
    """Verdicts that per-constraint domain counts imply, by the rule in the module docstring."""
    hard = [c for c in incoming["topologySpreadConstraints"] if c["whenUnsatisfiable"] == DNS]
    result = {}
    for name, labels in nodes.items():
        ok = True
        for constraint, (key, domains) in zip(hard, counts, strict=True):
            assert constraint["topologyKey"] == key
            floor = min(domains.values()) if len(domains) >= constraint.get("minDomains", 1) else 0
            selector = constraint.get("labelSelector")
            # matchLabelKeys only add the pod's own values: they never stop it matching itself.
            self_match = int(_matches(selector, incoming["labels"]))
            value = labels.get(key)
            ok &= (
                value is not None
                and domains.get(value, 0) + self_match - floor <= constraint["maxSkew"]
            )
        result[name] = ok
    return result


def _matches(selector: dict | None, labels: dict) -> bool:
    if selector is None:
        return False
    for req in selector.get("matchExpressions", []):
        if req["operator"] == "Exists" and req["key"] not in labels:
            return False
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


FOO_BAR_PODS = placed("node-a", "node-a", "node-b", "node-y", "node-y")
SEVEN = placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y")
ABC = {
    "node-a": {"node": "node-a", "foo": ""},
    "node-b": {"node": "node-b", "foo": ""},
    "node-c": {"node": "node-c", "bar": ""},
}
ABC_PODS = placed("node-a", "node-b", "node-b", labels={"bar": ""}) + placed("node-c", labels={})
PLAIN = {
    "node-a": {"node": "node-a"},
    "node-b": {"node": "node-b"},
    "node-c": {"node": "node-c", "bar": ""},
}

# (incoming, nodes, existing, tainted nodes, [(key, domain counts)] per DoNotSchedule constraint)
PREFILTER_STATE = {
    "clean cluster with one spreadConstraint": (
        spec(FOO_POD, sc(5, "zone", {"matchLabels": {"foo": "bar"}})),
        FOUR,
        [],
        {},
        [("zone", {"zone1": 0, "zone2": 0})],
    ),
    "normal case with one spreadConstraint": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        FOUR,
        FOO_BAR_PODS,
        {},
        [("zone", {"zone1": 3, "zone2": 2})],
    ),
    "normal case with null label selector": (
        spec(FOO_POD, sc(1, "zone", None)),
        FOUR,
        FOO_BAR_PODS,
        {},
        [("zone", {"zone1": 0, "zone2": 0})],
    ),
    "one spreadConstraint on a 3-zone cluster": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        {**FOUR, "node-o": zn("zone3", "node-o"), "node-p": zn("zone3", "node-p")},
        FOO_BAR_PODS,
        {},
        [("zone", {"zone1": 3, "zone2": 2, "zone3": 0})],
    ),
    "namespace mismatch doesn't count": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        FOUR,
        placed("node-a", "node-b", "node-y")
        + placed("node-a", namespace="ns1")
        + placed("node-y", namespace="ns2"),
        {},
        [("zone", {"zone1": 2, "zone2": 1})],
    ),
    "normal case with two spreadConstraints": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO)),
        FOUR,
        SEVEN,
        {},
        [
            ("zone", {"zone1": 3, "zone2": 4}),
            ("node", {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}),
        ],
    ),
    "soft spreadConstraints are bypassed": (
        spec(
            FOO_POD,
            sc(1, "zone", FOO, SA),
            sc(1, "zone", FOO),
            sc(1, "node", FOO, SA),
            sc(1, "node", FOO),
        ),
        {k: v for k, v in FOUR.items() if k != "node-x"},
        SEVEN,
        {},
        [("zone", {"zone1": 3, "zone2": 4}), ("node", {"node-a": 2, "node-b": 1, "node-y": 4})],
    ),
    "different labelSelectors - simple version": (
        spec({"foo": "", "bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        {k: v for k, v in FOUR.items() if k != "node-x"},
        placed("node-a") + placed("node-b", labels={"bar": ""}),
        {},
        [("zone", {"zone1": 1, "zone2": 0}), ("node", {"node-a": 0, "node-b": 1, "node-y": 0})],
    ),
    "different labelSelectors - complex pods": (
        spec({"foo": "", "bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        {k: v for k, v in FOUR.items() if k != "node-x"},
        placed("node-a", "node-b", "node-y", "node-y")
        + placed("node-a", "node-y", labels={"foo": "", "bar": ""}),
        {},
        [("zone", {"zone1": 3, "zone2": 4}), ("node", {"node-a": 1, "node-b": 0, "node-y": 2})],
    ),
    "two spreadConstraints, and with node affinity": (
        spec(
            FOO_POD,
            sc(1, "zone", FOO),
            sc(1, "node", FOO),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "node", "operator": "NotIn", "values": ["node-x"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        FOUR,
        SEVEN,
        {},
        [("zone", {"zone1": 3, "zone2": 4}), ("node", {"node-a": 2, "node-b": 1, "node-y": 4})],
    ),
    "NodeAffinityPolicy honored with labelSelectors": (
        spec(FOO_POD, sc(1, "node", BAR), **NODE_SEL),
        ABC,
        ABC_PODS,
        {},
        [("node", {"node-a": 1, "node-b": 2})],
    ),
    "NodeAffinityPolicy ignored with labelSelectors": (
        spec(FOO_POD, sc(1, "node", BAR, affinity="Ignore"), **NODE_SEL),
        ABC,
        ABC_PODS,
        {},
        [("node", {"node-a": 1, "node-b": 2, "node-c": 0})],
    ),
    "NodeAffinityPolicy honored with nodeAffinity": (
        spec(FOO_POD, sc(1, "node", BAR), **NODE_AFF),
        ABC,
        ABC_PODS,
        {},
        [("node", {"node-a": 1, "node-b": 2})],
    ),
    "NodeAffinityPolicy ignored with nodeAffinity": (
        spec(FOO_POD, sc(1, "node", BAR, affinity="Ignore"), **NODE_AFF),
        ABC,
        ABC_PODS,
        {},
        [("node", {"node-a": 1, "node-b": 2, "node-c": 0})],
    ),
    "NodeTaintsPolicy ignored": (
        spec(FOO_POD, sc(1, "node", BAR)),
        PLAIN,
        ABC_PODS,
        {"node-c": UNSCHEDULABLE},
        [("node", {"node-a": 1, "node-b": 2, "node-c": 0})],
    ),
    "NodeTaintsPolicy honored": (
        spec(FOO_POD, sc(1, "node", BAR, taints="Honor")),
        PLAIN,
        ABC_PODS,
        {"node-c": UNSCHEDULABLE},
        [("node", {"node-a": 1, "node-b": 2})],
    ),
    "NodeTaintsPolicy honored with tolerated taints": (
        spec(
            FOO_POD,
            sc(1, "node", BAR, taints="Honor"),
            tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
        ),
        PLAIN,
        ABC_PODS,
        {"node-c": UNSCHEDULABLE},
        [("node", {"node-a": 1, "node-b": 2, "node-c": 0})],
    ),
    "two constraints, zone: honor/ignore, node: ignore/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO, affinity="Ignore"), **NODE_SEL),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b"),
            "node-x": zn("zone2", "node-x", foo=""),
        },
        placed("node-b", "node-b", "node-x"),
        {},
        [("zone", {"zone1": 0, "zone2": 1}), ("node", {"node-a": 0, "node-b": 2, "node-x": 1})],
    ),
    "two constraints, zone: honor/honor, node: honor/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO, taints="Honor"), sc(1, "node", FOO)),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b"),
            "node-x": zn("zone2", "node-x", foo=""),
        },
        placed("node-b", "node-b", "node-x"),
        {"node-b": UNSCHEDULABLE},
        [("zone", {"zone1": 0, "zone2": 1}), ("node", {"node-a": 0, "node-b": 2, "node-x": 1})],
    ),
    "two constraints, zone: honor/ignore, node: honor/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO), **NODE_SEL),
        {
            "node-a": zn("zone1", "node-a"),
            "node-b": zn("zone1", "node-b", foo=""),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y"),
        },
        placed("node-a", "node-a", "node-x", "node-y"),
        {"node-b": UNSCHEDULABLE},
        [("zone", {"zone1": 0, "zone2": 1}), ("node", {"node-b": 0, "node-x": 1})],
    ),
    "two constraints, zone: ignore/ignore, node: honor/honor": (
        spec(
            FOO_POD,
            sc(1, "zone", FOO, affinity="Ignore"),
            sc(1, "node", FOO, taints="Honor"),
            **NODE_SEL,
        ),
        {
            "node-a": zn("zone1", "node-a"),
            "node-b": zn("zone1", "node-b", foo=""),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y", foo=""),
        },
        placed("node-a", "node-a", "node-x", "node-x", "node-y"),
        {"node-b": UNSCHEDULABLE},
        [("zone", {"zone1": 2, "zone2": 3}), ("node", {"node-x": 2, "node-y": 1})],
    ),
    "matchLabelKeys ANDed with a non-empty labelSelector": (
        spec({"foo": "", "bar": "a"}, sc(1, "zone", FOO, keys=["bar"])),
        FOUR,
        placed("node-a", "node-b")
        + placed("node-a", "node-y", labels={"foo": "", "bar": "a"})
        + placed("node-y", labels={"bar": ""}),
        {},
        [("zone", {"zone1": 1, "zone2": 1})],
    ),
    "matchLabelKeys ANDed with an empty labelSelector": (
        spec({"foo": "a"}, sc(1, "zone", {}, keys=["foo"])),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", labels={"foo": "a"}),
        {},
        [("zone", {"zone1": 3, "zone2": 2})],
    ),
    "a key in matchLabelKeys the pod does not have is ignored": (
        spec(FOO_POD, sc(1, "zone", FOO, keys=["bar"])),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", labels={"foo": "a"}),
        {},
        [("zone", {"zone1": 3, "zone2": 2})],
    ),
}


@pytest.mark.parametrize(
    "incoming,nodes,existing,taints,counts", PREFILTER_STATE.values(), ids=PREFILTER_STATE.keys()
)
def test_prefilter_state(incoming, nodes, existing, taints, counts):
    assert run(incoming, nodes, existing, taints) == implied(nodes, incoming, counts)


U = False  # Unschedulable, and UnschedulableAndUnresolvable: the node is refused either way
S = True

# (incoming, nodes, existing, tainted nodes, verdicts in node order)
SINGLE = {
    "no existing pods": (spec(FOO_POD, sc(1, "zone", FOO)), FOUR, [], {}, [S, S, S, S]),
    "no existing pods, the pod does not match itself": (
        spec(FOO_POD, sc(1, "zone", BAR)),
        FOUR,
        [],
        {},
        [S, S, S, S],
    ),
    "pods of another namespace do not count": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        FOUR,
        placed("node-a", namespace="ns1")
        + placed("node-a", namespace="ns2")
        + placed("node-x", "node-y"),
        {},
        [S, S, U, U],
    ),
    "existing pods do not match a null selector": (
        spec(FOO_POD, sc(1, "zone", None)),
        FOUR,
        placed("node-x", "node-y"),
        {},
        [S, S, S, S],
    ),
    "spread 3/3: every node fits": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [S, S, S, S],
    ),
    "spread 1/2 as node-b lacks the zone label": (
        spec(FOO_POD, sc(1, "zone", FOO)),
        {**FOUR, "node-b": {"zon": "zone1", "node": "node-b"}},
        placed("node-a", "node-b", "node-x", "node-y"),
        {},
        [S, U, U, U],
    ),
    "no node has the rack label": (
        spec(FOO_POD, sc(1, "rack", FOO)),
        {"node-a": FOUR["node-a"], "node-x": FOUR["node-x"]},
        [],
        {},
        [U, U],
    ),
    "nodes 2/1/0/3: only node-x fits": (
        spec(FOO_POD, sc(1, "node", FOO)),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [U, U, S, U],
    ),
    "nodes 2/1/0/3, maxSkew 2: node-b and node-x fit": (
        spec(FOO_POD, sc(2, "node", FOO)),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [U, S, S, U],
    ),
    "nodes 2/1/0/3, the pod does not match itself": (
        spec({"bar": ""}, sc(1, "node", FOO)),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [U, S, S, U],
    ),
    "node affinity: 2/~1~/~0~/3, node-a fits": (
        spec(
            FOO_POD,
            sc(1, "node", FOO),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "node",
                                        "operator": "In",
                                        "values": ["node-a", "node-y"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [S, S, S, U],
    ),
    "node affinity: 0/~2~/0/1, node-a fits": (
        spec(
            FOO_POD,
            sc(1, "zone", FOO),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "node", "operator": "NotIn", "values": ["node-b"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        FOUR,
        placed("node-b", "node-b", "node-y"),
        {},
        [S, S, U, U],
    ),
    "nodes 2/2/1, maxSkew 2, fewer domains than minDomains": (
        spec(FOO_POD, sc(2, "node", FOO, min_domains=4)),
        {n: {"node": n} for n in ("node-a", "node-b", "node-c")},
        placed("node-a", "node-a", "node-b", "node-b", "node-c"),
        {},
        [U, U, S],
    ),
    "nodes 2/2/1, maxSkew 2, more domains than minDomains": (
        spec(FOO_POD, sc(2, "node", FOO, min_domains=2)),
        {n: {"node": n} for n in ("node-a", "node-b", "node-c")},
        placed("node-a", "node-a", "node-b", "node-b", "node-c"),
        {},
        [S, S, S],
    ),
    "zones 2/1, maxSkew 2, fewer domains than minDomains": (
        spec(FOO_POD, sc(2, "zone", FOO, min_domains=3)),
        FOUR,
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, S],
    ),
    "zones 2/1, maxSkew 2, more domains than minDomains": (
        spec(FOO_POD, sc(2, "zone", FOO, min_domains=1)),
        FOUR,
        placed("node-a", "node-b", "node-y"),
        {},
        [S, S, S, S],
    ),
    "NodeAffinityPolicy honored with labelSelectors": (
        spec(FOO_POD, sc(1, "node", FOO), **NODE_SEL),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, S],
    ),
    "NodeAffinityPolicy ignored with labelSelectors": (
        spec(FOO_POD, sc(1, "node", FOO, affinity="Ignore"), **NODE_SEL),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, U],
    ),
    "NodeAffinityPolicy honored with nodeAffinity": (
        spec(FOO_POD, sc(1, "node", FOO), **NODE_AFF),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, S],
    ),
    "NodeAffinityPolicy ignored with nodeAffinity": (
        spec(FOO_POD, sc(1, "node", FOO, affinity="Ignore"), **NODE_AFF),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, U],
    ),
    "NodeTaintsPolicy honored": (
        spec(FOO_POD, sc(1, "node", FOO, taints="Honor")),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {"node-y": UNSCHEDULABLE},
        [U, U, S, S],
    ),
    "NodeTaintsPolicy ignored": (
        spec(FOO_POD, sc(1, "node", FOO)),
        {
            n: {"node": n, **({"foo": ""} if n != "node-y" else {})}
            for n in ("node-a", "node-b", "node-x", "node-y")
        },
        placed("node-a", "node-b", "node-y"),
        {"node-y": UNSCHEDULABLE},
        [U, U, S, U],
    ),
}


@pytest.mark.parametrize(
    "incoming,nodes,existing,taints,expected", SINGLE.values(), ids=SINGLE.keys()
)
def test_single_constraint(incoming, nodes, existing, taints, expected):
    assert run(incoming, nodes, existing, taints) == dict(zip(nodes, expected, strict=True))


# (incoming, nodes, existing, tainted nodes, verdicts in node order)
MULTIPLE = {
    "zone and node, spreads [3/3, 2/1/0/3]": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO)),
        FOUR,
        placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {},
        [U, U, S, U],
    ),
    "zone and node, spreads [3/4, 2/1/0/4]": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO)),
        FOUR,
        SEVEN,
        {},
        [U, U, U, U],
    ),
    "different selectors, spreads [1/0, 1/0/0/1]": (
        spec({"foo": "", "bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        FOUR,
        placed("node-a") + placed("node-y", labels={"bar": ""}),
        {},
        [U, U, S, U],
    ),
    "different selectors, spreads [1/0, 0/0/1/1]": (
        spec({"foo": "", "bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        FOUR,
        placed("node-a") + placed("node-x", "node-y", labels={"bar": ""}),
        {},
        [U, U, U, U],
    ),
    "different selectors, spreads [2/3, 1/0/0/1]": (
        spec({"foo": "", "bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        FOUR,
        placed("node-a", "node-y", "node-y")
        + placed("node-a", "node-y", labels={"foo": "", "bar": ""}),
        {},
        [U, S, U, U],
    ),
    "different selectors, the pod does not match the zone one": (
        spec({"bar": ""}, sc(1, "zone", FOO), sc(1, "node", BAR)),
        FOUR,
        placed("node-a") + placed("node-x", "node-y", labels={"bar": ""}),
        {},
        [S, S, U, U],
    ),
    "zone and node, node-x lacks the node label": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO)),
        {**FOUR, "node-x": {"zone": "zone2"}},
        placed("node-a", "node-y"),
        {},
        [U, S, U, U],
    ),
    "node inclusion, zone: honor/ignore, node: ignore/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO, affinity="Ignore"), **NODE_SEL),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b", foo=""),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y"),
        },
        placed("node-a", "node-b", "node-y"),
        {},
        [U, U, S, U],
    ),
    "node inclusion, zone: honor/honor, node: honor/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO, taints="Honor"), sc(1, "node", FOO)),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b", foo=""),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y"),
        },
        placed("node-a", "node-b", "node-y"),
        {"node-y": UNSCHEDULABLE},
        [U, U, S, U],
    ),
    "node inclusion, zone: honor/ignore, node: honor/ignore": (
        spec(FOO_POD, sc(1, "zone", FOO), sc(1, "node", FOO), **NODE_SEL),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b"),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y", foo=""),
        },
        placed("node-a", "node-b", "node-y"),
        {"node-y": UNSCHEDULABLE},
        [U, S, S, U],
    ),
    "node inclusion, zone: honor/honor, node: ignore/ignore": (
        spec(
            FOO_POD,
            sc(1, "zone", FOO, taints="Honor"),
            sc(1, "node", FOO, affinity="Ignore"),
            **NODE_SEL,
        ),
        {
            "node-a": zn("zone1", "node-a", foo=""),
            "node-b": zn("zone1", "node-b"),
            "node-x": zn("zone2", "node-x", foo=""),
            "node-y": zn("zone2", "node-y", foo=""),
        },
        placed("node-a", "node-b", "node-y"),
        {"node-y": UNSCHEDULABLE},
        [U, U, S, U],
    ),
}


@pytest.mark.parametrize(
    "incoming,nodes,existing,taints,expected", MULTIPLE.values(), ids=MULTIPLE.keys()
)
def test_multiple_constraints(incoming, nodes, existing, taints, expected):
    assert run(incoming, nodes, existing, taints) == dict(zip(nodes, expected, strict=True))
