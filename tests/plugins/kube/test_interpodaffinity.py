"""kube-scheduler's interpodaffinity plugin tables (filtering_test.go:
TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes; scoring_test.go:
TestPreferredAffinity, TestPreferredAffinityWithHardPodAffinitySymmetricWeight), run against
berth's pod-affinity in the default profile.

Namespaces are renamed to valid names (``subteam1.team1`` → ``subteam1-team1``, the empty
namespace → ``default``); rows whose pod kube-scheduler refuses to parse (an invalid label
value in a selector) keep their verdict, as berth's selector then matches nothing.
"""

from __future__ import annotations

import pytest

from berth.api.objects import Namespace
from tests.plugins.kube.harness import cluster, node, pod, scores, truncated, verdicts

TEAM1, TEAM2 = {"team": "team1"}, {"team": "team2"}
NAMESPACES = [
    Namespace("subteam1-team1", TEAM1),
    Namespace("subteam2-team1", TEAM1),
    Namespace("subteam1-team2", TEAM2),
    Namespace("subteam2-team2", TEAM2),
]


def sel(*exprs: tuple) -> dict:
    out = []
    for key, op, *values in exprs:
        entry: dict = {"key": key, "operator": op}
        if values:
            entry["values"] = list(values)
        out.append(entry)
    return {"matchExpressions": out}


def term(
    selector: dict,
    topology: str,
    namespaces: list[str] | None = None,
    namespace_selector: dict | None = None,
) -> dict:
    entry: dict = {"labelSelector": selector, "topologyKey": topology}
    if namespaces is not None:
        entry["namespaces"] = namespaces
    if namespace_selector is not None:
        entry["namespaceSelector"] = namespace_selector
    return entry


def aff(required=(), anti=(), preferred=(), anti_preferred=()) -> dict:
    result: dict = {}
    if required or preferred:
        result["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(required),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred
            ],
        }
    if anti or anti_preferred:
        result["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in anti_preferred
            ],
        }
    return result


def mk(labels=None, affinity=None, namespace="default", name="p") -> dict:
    return {"labels": labels or {}, "affinity": affinity, "namespace": namespace, "name": name}


def build_pod(spec: dict):
    extra = {"affinity": spec["affinity"]} if spec["affinity"] else {}
    return pod(spec["name"], spec["namespace"], spec["labels"], **extra)


SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
IN_SCAN = ("service", "In", "securityscan", "value2")
TEAM1_SEL = sel(("team", "In", "team1"))


def existing_scan(**fields) -> dict:
    return mk(SCAN, name="scan", **fields)


# One node, node1 (region r1, zone z11). (incoming, existing pods, fits)
SINGLE = {
    "no affinity, no existing pods": (mk(), [], True),
    "affinity In matches the existing pod": (
        mk(S1, aff([term(sel(IN_SCAN), "region")])),
        [existing_scan()],
        True,
    ),
    "affinity NotIn matches the existing pod": (
        mk(S1, aff([term(sel(("service", "NotIn", "securityscan3", "value3")), "region")])),
        [existing_scan()],
        True,
    ),
    "affinity fails for a pod in another namespace": (
        mk(S1, aff([term(sel(IN_SCAN), "region", namespaces=["diff-namespace"])])),
        [mk(SCAN, namespace="ns", name="scan")],
        False,
    ),
    "affinity fails on a selector no pod matches": (
        mk(SCAN, aff([term(sel(("service", "In", "antivirusscan", "value2")), "region")])),
        [existing_scan()],
        False,
    ),
    "several terms, one pod matching all": (
        mk(
            S1,
            aff(
                [
                    term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"),
                    term(
                        sel(("service", "In", "securityscan"), ("service", "NotIn", "WrongValue")),
                        "region",
                    ),
                ]
            ),
        ),
        [existing_scan()],
        True,
    ),
    "several terms ANDed, one not matching": (
        mk(
            S1,
            aff(
                [
                    term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"),
                    term(
                        sel(("service", "In", "securityscan2"), ("service", "NotIn", "WrongValue")),
                        "region",
                    ),
                ]
            ),
        ),
        [existing_scan()],
        False,
    ),
    "affinity and anti-affinity both satisfied": (
        mk(
            S1,
            aff(
                [term(sel(IN_SCAN), "region")],
                [term(sel(("service", "In", "antivirusscan", "value2")), "node")],
            ),
        ),
        [existing_scan()],
        True,
    ),
    "affinity, anti-affinity and the existing pod's anti-affinity satisfied": (
        mk(
            S1,
            aff(
                [term(sel(IN_SCAN), "region")],
                [term(sel(("service", "In", "antivirusscan", "value2")), "node")],
            ),
        ),
        [
            existing_scan(
                affinity=aff(anti=[term(sel(("service", "In", "antivirusscan", "value2")), "node")])
            )
        ],
        True,
    ),
    "affinity satisfied, anti-affinity not": (
        mk(S1, aff([term(sel(IN_SCAN), "region")], [term(sel(IN_SCAN), "zone")])),
        [existing_scan()],
        False,
    ),
    "the existing pod's anti-affinity not satisfied": (
        mk(
            SCAN,
            aff(
                [term(sel(IN_SCAN), "region")],
                [term(sel(("service", "In", "antivirusscan", "value2")), "node")],
            ),
        ),
        [existing_scan(affinity=aff(anti=[term(sel(IN_SCAN), "zone")]))],
        False,
    ),
    "the pod does not match its own affinity term": (
        mk(SCAN, aff([term(sel(("service", "NotIn", "securityscan", "value2")), "region")])),
        [],
        False,
    ),
    "existing anti-affinity without affinity of its own: refused": (
        mk(SCAN),
        [existing_scan(affinity=aff(anti=[term(sel(IN_SCAN), "zone")]))],
        False,
    ),
    "existing anti-affinity without affinity of its own: allowed": (
        mk(SCAN),
        [
            existing_scan(
                affinity=aff(
                    anti=[term(sel(("service", "NotIn", "securityscan", "value2")), "zone")]
                )
            )
        ],
        True,
    ),
    "own anti-affinity matches the existing pod": (
        mk(
            SCAN,
            aff(
                anti=[
                    term(sel(("service", "Exists")), "region"),
                    term(sel(("security", "Exists")), "region"),
                ]
            ),
        ),
        [mk(S1, aff(anti=[term(sel(("security", "Exists")), "zone")]), name="e")],
        False,
    ),
    "symmetry a1: partial match of each other's terms": (
        mk(
            SCAN,
            aff(
                anti=[
                    term(sel(("service", "Exists")), "zone"),
                    term(sel(("security", "Exists")), "zone"),
                ]
            ),
        ),
        [mk(S1, aff(anti=[term(sel(("security", "Exists")), "zone")]), name="e")],
        False,
    ),
    "symmetry a2: partial match of each other's terms": (
        mk(S1, aff(anti=[term(sel(("security", "Exists")), "zone")])),
        [
            mk(
                SCAN,
                aff(
                    anti=[
                        term(sel(("service", "Exists")), "zone"),
                        term(sel(("security", "Exists")), "zone"),
                    ]
                ),
                name="e",
            )
        ],
        False,
    ),
    "symmetry b1: partial match of each other's terms": (
        mk(
            {"abc": "", "xyz": ""},
            aff(anti=[term(sel(("abc", "Exists")), "zone"), term(sel(("def", "Exists")), "zone")]),
        ),
        [
            mk(
                {"def": "", "xyz": ""},
                aff(
                    anti=[
                        term(sel(("abc", "Exists")), "zone"),
                        term(sel(("def", "Exists")), "zone"),
                    ]
                ),
                name="e",
            )
        ],
        False,
    ),
    "symmetry b2: partial match of each other's terms": (
        mk(
            {"def": "", "xyz": ""},
            aff(anti=[term(sel(("abc", "Exists")), "zone"), term(sel(("def", "Exists")), "zone")]),
        ),
        [
            mk(
                {"abc": "", "xyz": ""},
                aff(
                    anti=[
                        term(sel(("abc", "Exists")), "zone"),
                        term(sel(("def", "Exists")), "zone"),
                    ]
                ),
                name="e",
            )
        ],
        False,
    ),
    "invalid label value in an affinity term": (
        mk(
            SCAN,
            aff(
                [
                    term(sel(("service", "In", "{{.bad-value.}}")), "region"),
                    term(sel(IN_SCAN), "node"),
                ]
            ),
        ),
        [],
        False,
    ),
    "affinity with a namespaceSelector": (
        mk(S1, aff([term(sel(IN_SCAN), "region", namespace_selector=TEAM1_SEL)])),
        [mk(SCAN, namespace="subteam1-team1", name="scan")],
        True,
    ),
    "affinity with a non-matching namespaceSelector": (
        mk(S1, aff([term(sel(IN_SCAN), "region", namespace_selector=TEAM1_SEL)])),
        [mk(SCAN, namespace="subteam1-team2", name="scan")],
        False,
    ),
    "anti-affinity with a matching namespaceSelector": (
        mk(
            S1,
            aff(anti=[term(sel(IN_SCAN), "zone", namespace_selector=TEAM1_SEL)]),
            namespace="subteam1-team1",
        ),
        [mk(SCAN, namespace="subteam2-team1", name="scan")],
        False,
    ),
    "anti-affinity with an empty namespaceSelector (every namespace)": (
        mk(
            S1,
            aff(anti=[term(sel(IN_SCAN), "zone", namespace_selector={})]),
            namespace="subteam1-team1",
        ),
        [mk(SCAN, namespace="subteam2-team1", name="scan")],
        False,
    ),
    "anti-affinity with a non-matching namespaceSelector": (
        mk(
            S1,
            aff(anti=[term(sel(IN_SCAN), "zone", namespace_selector=TEAM1_SEL)]),
            namespace="subteam1-team1",
        ),
        [mk(SCAN, namespace="subteam1-team2", name="scan")],
        True,
    ),
}


@pytest.mark.parametrize("incoming,existing,fits", SINGLE.values(), ids=SINGLE.keys())
def test_required_affinity_single_node(incoming, existing, fits):
    s = cluster(
        [node("node1", {"region": "r1", "zone": "z11"})],
        [(build_pod(spec), "node1") for spec in existing],
        NAMESPACES,
    )
    assert verdicts(s, "pod-affinity", build_pod(incoming)) == {"node1": fits}


CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}


def three(r1, r2, r3) -> dict:
    return {"nodeA": r1, "nodeB": r2, "nodeC": r3}


# (incoming, existing [(pod, node)], nodes {name: labels}, verdicts per node)
MULTIPLE = {
    "nodes sharing the domain of a matching pod": (
        mk(affinity=aff([term(sel(("foo", "In", "bar")), "region")])),
        [(mk({"foo": "bar"}, name="p1"), "nodeA")],
        three(CHINA, CHINA_AZ1, INDIA),
        [True, True, False],
    ),
    "the first pod of a collection may go anywhere the key exists": (
        mk(
            {"foo": "bar", "service": "securityscan"},
            aff(
                [
                    term(sel(("foo", "In", "bar")), "zone"),
                    term(sel(("service", "In", "securityscan")), "zone"),
                ]
            ),
        ),
        [(mk({"foo": "bar"}, name="p1"), "nodeA")],
        {"nodeA": {"zone": "az1", "hostname": "h1"}, "nodeB": {"zone": "az2", "hostname": "h2"}},
        [True, True],
    ),
    "the first pod of a collection needs the topology key": (
        mk(
            {"foo": "bar", "service": "securityscan"},
            aff(
                [
                    term(sel(("foo", "In", "bar")), "zone"),
                    term(sel(("service", "In", "securityscan")), "zone"),
                ]
            ),
        ),
        [(mk({"foo": "bar"}, name="p1"), "nodeA")],
        {
            "nodeA": {"zoneLabel": "az1", "hostname": "h1"},
            "nodeB": {"zoneLabel": "az2", "hostname": "h2"},
        },
        [False, False],
    ),
    "anti-affinity over a shared region": (
        mk(affinity=aff(anti=[term(sel(("foo", "In", "abc")), "region")])),
        [(mk({"foo": "abc"}, name="e"), "nodeA")],
        {
            "nodeA": {"region": "r1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "anti-affinity: any term matching is enough": (
        mk(
            affinity=aff(
                anti=[
                    term(sel(("foo", "In", "abc")), "region"),
                    term(sel(("service", "In", "securityscan")), "zone"),
                ]
            )
        ),
        [(mk({"foo": "abc", "service": "securityscan"}, name="e"), "nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "anti-affinity: another region is fine": (
        mk(affinity=aff(anti=[term(sel(("foo", "In", "abc")), "region")])),
        [(mk({"foo": "abc"}, name="e"), "nodeA")],
        three(CHINA, CHINA_AZ1, INDIA),
        [False, False, True],
    ),
    "anti-affinity: a matching pod in another namespace does not count": (
        mk({"foo": "123"}, aff(anti=[term(sel(("foo", "In", "bar")), "region")]), namespace="ns1"),
        [
            (mk({"foo": "bar"}, namespace="ns1", name="e1"), "nodeA"),
            (
                mk(
                    affinity=aff(anti=[term(sel(("foo", "In", "123")), "region")]),
                    namespace="ns2",
                    name="e2",
                ),
                "nodeC",
            ),
        ],
        three(CHINA, CHINA_AZ1, INDIA),
        [False, False, True],
    ),
    "existing anti-affinity with a topology key no node has": (
        mk({"foo": ""}),
        [
            (
                mk(
                    affinity=aff(anti=[term(sel(("foo", "Exists")), "invalid-node-label")]),
                    name="e",
                ),
                "nodeA",
            )
        ],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z1", "hostname": "nodeB"},
        },
        [True, True],
    ),
    "own anti-affinity with a topology key no node has": (
        mk(affinity=aff(anti=[term(sel(("foo", "Exists")), "invalid-node-label")])),
        [(mk({"foo": ""}, name="e"), "nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z1", "hostname": "nodeB"},
        },
        [True, True],
    ),
    "existing pods' anti-affinity refuses every node": (
        mk({"foo": "", "bar": ""}),
        [
            (mk(affinity=aff(anti=[term(sel(("foo", "Exists")), "zone")]), name="e1"), "nodeA"),
            (mk(affinity=aff(anti=[term(sel(("bar", "Exists")), "region")]), name="e2"), "nodeA"),
        ],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "own anti-affinity refuses every node": (
        mk(
            affinity=aff(
                anti=[term(sel(("foo", "Exists")), "zone"), term(sel(("bar", "Exists")), "region")]
            )
        ),
        [(mk({"foo": ""}, name="e1"), "nodeA"), (mk({"bar": ""}, name="e2"), "nodeB")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "existing anti-affinity: a term counts only with its topology key": (
        mk({"foo": "", "bar": ""}),
        [
            (
                mk(
                    affinity=aff(
                        anti=[
                            term(sel(("foo", "Exists")), "invalid-node-label"),
                            term(sel(("bar", "Exists")), "zone"),
                        ]
                    ),
                    name="e",
                ),
                "nodeA",
            )
        ],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, True],
    ),
    "own anti-affinity: a term counts only with its topology key": (
        mk(
            affinity=aff(
                anti=[
                    term(sel(("foo", "Exists")), "invalid-node-label"),
                    term(sel(("bar", "Exists")), "zone"),
                ]
            )
        ),
        [(mk({"foo": "", "bar": ""}, name="pod-a"), "nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, True],
    ),
    "existing anti-affinity: every term has its key": (
        mk({"foo": "", "bar": ""}),
        [
            (
                mk(
                    affinity=aff(
                        anti=[
                            term(sel(("foo", "Exists")), "region"),
                            term(sel(("bar", "Exists")), "zone"),
                        ]
                    ),
                    name="e",
                ),
                "nodeA",
            )
        ],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "own anti-affinity: every term has its key": (
        mk(
            affinity=aff(
                anti=[term(sel(("foo", "Exists")), "region"), term(sel(("bar", "Exists")), "zone")]
            )
        ),
        [(mk({"foo": "", "bar": ""}, name="e"), "nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
    "existing pods on two nodes each refuse the pod: only nodeC": (
        mk({"foo": "", "bar": ""}),
        [
            (
                mk(
                    affinity=aff(
                        anti=[
                            term(sel(("foo", "Exists")), "zone"),
                            term(sel(("labelA", "Exists")), "zone"),
                        ]
                    ),
                    name="e1",
                ),
                "nodeA",
            ),
            (
                mk(
                    affinity=aff(
                        anti=[
                            term(sel(("bar", "Exists")), "zone"),
                            term(sel(("labelB", "Exists")), "zone"),
                        ]
                    ),
                    name="e2",
                ),
                "nodeB",
            ),
        ],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
            "nodeC": {"region": "r1", "zone": "z3", "hostname": "nodeC"},
        },
        [False, False, True],
    ),
    "affinity terms met by one pod, topology keys checked after": (
        mk(
            affinity=aff(
                [term(sel(("foo", "Exists")), "region"), term(sel(("bar", "Exists")), "zone")]
            )
        ),
        [(mk({"foo": "", "bar": ""}, name="pod1"), "nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z1", "hostname": "nodeB"},
        },
        [True, True],
    ),
    "affinity terms must be met by the same pod": (
        mk(
            affinity=aff(
                [term(sel(("foo", "Exists")), "region"), term(sel(("bar", "Exists")), "zone")]
            )
        ),
        [(mk({"foo": ""}, name="pod1"), "nodeA"), (mk({"bar": ""}, name="pod2"), "nodeB")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        [False, False],
    ),
}


@pytest.mark.parametrize("incoming,existing,nodes,fits", MULTIPLE.values(), ids=MULTIPLE.keys())
def test_required_affinity_multiple_nodes(incoming, existing, nodes, fits):
    s = cluster(
        [node(n, labels) for n, labels in nodes.items()],
        [(build_pod(spec), where) for spec, where in existing],
        [Namespace("ns1")],
    )
    assert verdicts(s, "pod-affinity", build_pod(incoming)) == dict(zip(nodes, fits, strict=True))


SEC_S1, SEC_S2 = ("security", "In", "S1"), ("security", "In", "S2")
STAY_S1 = aff(preferred=[(5, term(sel(SEC_S1), "region"))])
STAY_S2 = aff(preferred=[(6, term(sel(SEC_S2), "region"))])
AFFINITY3 = aff(
    preferred=[
        (8, term(sel(("security", "NotIn", "S1"), SEC_S2), "region")),
        (2, term(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region")),
    ]
)
HARD = aff(
    [
        term(sel(("security", "In", "S1", "value2")), "region"),
        term(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region"),
    ]
)
AWAY_S1 = aff(anti_preferred=[(5, term(sel(SEC_S1), "az"))])
AWAY_S2 = aff(anti_preferred=[(5, term(sel(SEC_S2), "az"))])
STAY_S1_AWAY_S2 = aff(
    preferred=[(8, term(sel(SEC_S1), "region"))], anti_preferred=[(5, term(sel(SEC_S2), "az"))]
)
NS_SELECTED = aff(preferred=[(5, term(sel(SEC_S1), "region", ["subteam2-team2"], TEAM1_SEL))])
ANTI_NS_SELECTED = aff(
    anti_preferred=[(5, term(sel(SEC_S1), "region", ["subteam2-team2"], TEAM1_SEL))]
)
S2 = {"security": "S2"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}

# (incoming, existing [(pod, node)], nodes {name: labels}, upstream scores)
PREFERRED = {
    "no affinity: all equal": (
        mk(S1),
        [],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    "affinity: the node sharing the key with a matching pod": (
        mk(S1, STAY_S1),
        [(mk(S1, name="a"), "node1"), (mk(S2, name="b"), "node2"), (mk(S1, name="c"), "node3")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    "affinity: every node of the matching pod's region": (
        mk(affinity=STAY_S1),
        [(mk(S1, name="a"), "node1")],
        {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA},
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    "affinity: the region with more matching pods": (
        mk(S1, STAY_S2),
        [
            (mk(S2, name=f"p{i}"), n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node4", "node5"])
        ],
        {"node1": CHINA, "node2": INDIA, "node3": CHINA, "node4": CHINA, "node5": INDIA},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    "affinity: several operators and weights": (
        mk(S1, AFFINITY3),
        [(mk(S1, name="a"), "node1"), (mk(S2, name="b"), "node2"), (mk(S1, name="c"), "node3")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 20, "node2": 100, "node3": 0},
    ),
    "symmetry: existing pods' preferred affinity": (
        mk(S2),
        [(mk(S1, STAY_S1, name="a"), "node1"), (mk(S2, STAY_S2, name="b"), "node2")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 0, "node2": 100, "node3": 0},
    ),
    "symmetry with a namespaceSelector": (
        mk(S1, namespace="subteam1-team1"),
        [(mk(S1, NS_SELECTED, name="a"), "node1"), (mk(S2, STAY_S2, name="b"), "node2")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    "anti-affinity symmetry with a namespaceSelector": (
        mk(S1, namespace="subteam1-team1"),
        [(mk(S1, ANTI_NS_SELECTED, name="a"), "node1"), (mk(S2, STAY_S2, name="b"), "node2")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 0, "node2": 100, "node3": 100},
    ),
    "symmetry: existing pods' required affinity": (
        mk(S1),
        [(mk(S1, HARD, name="a"), "node1"), (mk(S2, HARD, name="b"), "node2")],
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    "anti-affinity: away from matching pods": (
        mk(S1, AWAY_S1),
        [(mk(S1, name="a"), "node1"), (mk(S2, name="b"), "node2")],
        {"node1": AZ1, "node2": CHINA},
        {"node1": 0, "node2": 100},
    ),
    "anti-affinity: a node without the key scores high": (
        mk(S1, AWAY_S1),
        [(mk(S1, name="a"), "node1"), (mk(S1, name="b"), "node2")],
        {"node1": AZ1, "node2": CHINA},
        {"node1": 0, "node2": 100},
    ),
    "anti-affinity: more matching pods, lower score": (
        mk(S1, AWAY_S1),
        [(mk(S1, name="a"), "node1"), (mk(S1, name="b"), "node1"), (mk(S2, name="c"), "node2")],
        {"node1": AZ1, "node2": INDIA},
        {"node1": 0, "node2": 100},
    ),
    "anti-affinity symmetry": (
        mk(S2),
        [(mk(S1, AWAY_S2, name="a"), "node1"), (mk(S2, AWAY_S1, name="b"), "node2")],
        {"node1": AZ1, "node2": AZ2},
        {"node1": 0, "node2": 100},
    ),
    "affinity and anti-affinity": (
        mk(S1, STAY_S1_AWAY_S2),
        [(mk(S1, name="a"), "node1"), (mk(S1, name="b"), "node2")],
        {"node1": CHINA, "node2": AZ1},
        {"node1": 100, "node2": 0},
    ),
    "affinity and anti-affinity with the same labels": (
        mk(S1, STAY_S1_AWAY_S2),
        [
            (mk(S1, name=f"p{i}"), n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node3", "node4", "node5"])
        ],
        {"node1": CHINA_AZ1, "node2": INDIA, "node3": CHINA, "node4": CHINA, "node5": INDIA},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    "affinity, anti-affinity and symmetry together": (
        mk(S1, STAY_S1_AWAY_S2),
        [
            (mk(S1, name="a"), "node1"),
            (mk(S2, name="b"), "node2"),
            (mk(affinity=STAY_S1_AWAY_S2, name="c"), "node3"),
            (mk(affinity=AWAY_S1, name="d"), "node4"),
        ],
        {"node1": CHINA, "node2": AZ1, "node3": INDIA, "node4": AZ2},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
    ),
    "nodes of a domain without pods with affinity": (
        mk(S1),
        [(mk(S1, name="a"), "node1"), (mk(affinity=STAY_S1_AWAY_S2, name="b"), "node2")],
        {"node1": CHINA, "node2": CHINA},
        {"node1": 0, "node2": 0},
    ),
    "affinity with pods matching the namespaceSelector": (
        mk(S1, NS_SELECTED, namespace="subteam1-team1"),
        [
            (mk(S1, namespace="subteam1-team1", name="a"), "node1"),
            (mk(S1, namespace="subteam1-team1", name="b"), "node1"),
            (mk(S1, namespace="subteam1-team2", name="c"), "node1"),
            (mk(S1, namespace="subteam2-team1", name="d"), "node2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 100, "node2": 0},
    ),
    "affinity with pods matching the namespaceSelector and namespaces": (
        mk(S1, NS_SELECTED, namespace="subteam1-team1"),
        [
            (mk(S1, namespace="subteam1-team1", name="a"), "node1"),
            (mk(S1, namespace="subteam1-team1", name="b"), "node1"),
            (mk(S1, namespace="subteam2-team2", name="c"), "node1"),
            (mk(S1, namespace="subteam2-team1", name="d"), "node2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 100, "node2": 0},
    ),
    "anti-affinity with pods matching the namespaceSelector": (
        mk(S1, ANTI_NS_SELECTED, namespace="subteam1-team1"),
        [
            (mk(S1, namespace="subteam1-team1", name="a"), "node1"),
            (mk(S1, namespace="subteam1-team1", name="b"), "node1"),
            (mk(S1, namespace="subteam1-team2", name="c"), "node1"),
            (mk(S1, namespace="subteam2-team1", name="d"), "node2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
    ),
    "anti-affinity with pods matching the namespaceSelector and namespaces": (
        mk(S1, ANTI_NS_SELECTED, namespace="subteam1-team1"),
        [
            (mk(S1, namespace="subteam1-team1", name="a"), "node1"),
            (mk(S1, namespace="subteam1-team1", name="b"), "node1"),
            (mk(S1, namespace="subteam2-team2", name="c"), "node1"),
            (mk(S1, namespace="subteam2-team1", name="d"), "node2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
    ),
}


def scored(incoming, existing, nodes, plugin_config=()):
    s = cluster(
        [node(n, labels) for n, labels in nodes.items()],
        [(build_pod(spec), where) for spec, where in existing],
        NAMESPACES,
        plugin_config,
    )
    return scores(s, "pod-affinity", build_pod(incoming))


@pytest.mark.parametrize(
    "incoming,existing,nodes,expected", PREFERRED.values(), ids=PREFERRED.keys()
)
def test_preferred_affinity(incoming, existing, nodes, expected):
    got = scored(incoming, existing, nodes)
    assert truncated(got) == expected


IGNORE = [{"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": True}}]


def test_preferred_terms_of_existing_pods_can_be_ignored():
    existing = [(mk(S1, STAY_S1_AWAY_S2, name="a"), "node1"), (mk(S2, STAY_S2, name="b"), "node2")]
    nodes = {"node1": CHINA, "node2": INDIA}
    assert scored(mk(S2), existing, nodes, IGNORE) == {"node1": 0.0, "node2": 0.0}
    assert scored(mk(S2), existing, nodes) == {"node1": 0.0, "node2": 100.0}


HARD_NS = aff(
    [term(sel(("service", "In", "S1")), "region", ["default", "subteam2-team2"], TEAM1_SEL)]
)
SERVICE = {"service": "S1"}

# (namespace of the incoming pod, hardPodAffinityWeight, upstream scores or None if skipped)
HARD_WEIGHT = {
    "default weight": ("default", 1, {"node1": 100, "node2": 100, "node3": 0}),
    "zero weight": ("default", 0, None),
    "no matching namespace": ("subteam1-team2", 1, None),
    "matching namespaceSelector": ("subteam1-team1", 1, {"node1": 100, "node2": 100, "node3": 0}),
    "matching namespaces": ("subteam2-team2", 1, {"node1": 100, "node2": 100, "node3": 0}),
}


@pytest.mark.parametrize("namespace,weight,expected", HARD_WEIGHT.values(), ids=HARD_WEIGHT.keys())
def test_hard_pod_affinity_symmetric_weight(namespace, weight, expected):
    existing = [
        (mk(affinity=HARD_NS, name="a"), "node1"),
        (mk(affinity=HARD_NS, name="b"), "node2"),
    ]
    nodes = {"node1": CHINA, "node2": INDIA, "node3": AZ1}
    config = [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": weight}}]
    got = scored(mk(SERVICE, namespace=namespace), existing, nodes, config)
    assert truncated(got) == (expected or dict.fromkeys(nodes, 0))
