"""HyperNode manifests, networkTopology fields, NodePool topology, and the resolution of
HyperNodes over node rows.

Member selection follows Volcano's pkg/util/hypernode/member_selector_test.go (exact, regex,
label) and its admission webhook's tests (admit_hypernode_test.go: an invalid pattern is
refused). Deliberate differences: an empty labelMatch and a labelMatch on HyperNode members
are errors here (Volcano selects nothing).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from berth.api.hypernodes import HyperNode, HyperNodeMember
from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import NetworkTopology
from berth.cluster.hypernodes import resolve
from berth.cluster.state import ClusterState
from tests.builders import node, sel

API = "topology.volcano.sh/v1alpha1"


def hn(name: str, tier: int, *members: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": list(members)}}  # fmt: skip


def member(kind: str, **selector: Any) -> dict[str, Any]:
    return {"type": kind, "selector": selector}


def problems(*docs: dict[str, Any]) -> list[str]:
    m = parse_documents(list(docs), "t.yaml")
    cross_check(m)
    return [str(p) for p in m.problems]


def test_hypernode_is_read() -> None:
    m = parse_documents(
        [
            hn("rack-0", 1, member("Node", regexMatch={"pattern": "^n[01]$"})),
            hn("rack-1", 1, member("Node", labelMatch={"matchLabels": {"rack": "1"}})),
            hn(
                "spine",
                2,
                member("HyperNode", exactMatch={"name": "rack-0"}),
                member("HyperNode", exactMatch={"name": "rack-1"}),
            ),  # fmt: skip
        ],
        "t.yaml",
    )
    assert not m.problems
    spine = m.hypernodes[2]
    assert (spine.name, spine.tier) == ("spine", 2)
    assert [x.exact for x in spine.members] == ["rack-0", "rack-1"]


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        pytest.param(
            [hn("s", 1, member("Node", regexMatch={"pattern": "a(b"}))],
            't.yaml: HyperNode/s: spec.members[0].selector.regexMatch.pattern: "a(b" is not a '
            "regular expression (missing ), unterminated subpattern at position 1)",
            id="bad-regex",
        ),
        pytest.param(
            [hn("s", 1, member("Node"))],
            "t.yaml: HyperNode/s: spec.members[0].selector: expected one of exactMatch, "
            "regexMatch or labelMatch",
            id="no-selector",
        ),
        pytest.param(
            [hn("s", 1, member("Node", exactMatch={"name": "a"}, regexMatch={"pattern": "b"}))],
            "t.yaml: HyperNode/s: spec.members[0].selector: set only one of exactMatch, "
            "regexMatch and labelMatch",
            id="two-selectors",
        ),
        pytest.param(
            [hn("s", 1)],
            "t.yaml: HyperNode/s: spec.members: must have at least 1 item(s)",
            id="no-members",
        ),
        pytest.param(
            [hn("s", -1, member("Node", exactMatch={"name": "a"}))],
            "t.yaml: HyperNode/s: spec.tier: must be >= 0 (got -1)",
            id="negative-tier",
        ),
        pytest.param(
            [hn("s", 1, member("Switch", exactMatch={"name": "a"}))],
            't.yaml: HyperNode/s: spec.members[0].type: "Switch" is not a valid value (expected '
            "one of Node, HyperNode)",
            id="bad-type",
        ),
        pytest.param(
            [hn("s", 1, member("Node", labelMatch={}))],
            "t.yaml: HyperNode/s: spec.members[0].selector.labelMatch: empty selector "
            "(expected matchLabels or matchExpressions)",
            id="empty-label-selector",
        ),
        pytest.param(
            [hn("s", 2, member("HyperNode", labelMatch={"matchLabels": {"a": "b"}}))],
            "t.yaml: HyperNode/s: spec.members[0].selector.labelMatch: selects nodes only "
            "(name HyperNode members by exactMatch or regexMatch)",
            id="label-selected-hypernode",
        ),
        pytest.param(
            [hn("s", 2, member("HyperNode", exactMatch={"name": "rack"}))],
            "t.yaml: HyperNode/s: spec.members[0].selector.exactMatch.name: no HyperNode named "
            '"rack"',
            id="unknown-member",
        ),
        pytest.param(
            [
                hn("a", 1, member("Node", exactMatch={"name": "n"})),
                hn("b", 1, member("HyperNode", exactMatch={"name": "a"})),
            ],
            "t.yaml: HyperNode/b: spec.members[0].selector: member HyperNode a is in tier 1, "
            "not below this HyperNode's tier 1 (a member sits in a lower tier)",
            id="same-tier-member",
        ),
        pytest.param(
            [hn("a", 2, member("HyperNode", exactMatch={"name": "a"}))],
            "t.yaml: HyperNode/a: spec.members[0].selector: a HyperNode cannot be its own member",
            id="self-member",
        ),
        pytest.param(
            [
                hn("r", 1, member("Node", exactMatch={"name": "n"})),
                hn("s1", 2, member("HyperNode", exactMatch={"name": "r"})),
                hn("s2", 2, member("HyperNode", regexMatch={"pattern": "^r$"})),
            ],
            "t.yaml: HyperNode/s2: spec.members[0].selector: HyperNode r is already a member of "
            "s1 (a HyperNode has one parent)",
            id="two-parents",
        ),
        pytest.param(
            [
                hn("r", 1, member("Node", exactMatch={"name": "n"})),
                hn("r", 1, member("Node", exactMatch={"name": "m"})),
            ],
            't.yaml: HyperNode/r: metadata.name: duplicate HyperNode "r" (also defined earlier '
            "in this file)",
            id="duplicate",
        ),
    ],
)
def test_bad_hypernode(docs: list[dict[str, Any]], expected: str) -> None:
    assert problems(*docs) == [expected]


def group_doc(topology: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 0, "networkTopology": topology},
    }


def test_network_topology_on_a_podgroup() -> None:
    m = parse_documents([group_doc({"mode": "soft", "highestTierAllowed": 2})], "t.yaml")
    assert m.groups[0].network_topology == NetworkTopology(hard=False, highest_tier=2)
    m = parse_documents([group_doc({})], "t.yaml")
    assert m.groups[0].network_topology == NetworkTopology(hard=True, highest_tier=None)


@pytest.mark.parametrize(
    ("topology", "expected"),
    [
        (
            {"mode": "strict"},
            'spec.networkTopology.mode: "strict" is not a valid value (expected one of hard, soft)',
        ),
        ({"highestTierAllowed": -1}, "spec.networkTopology.highestTierAllowed: must be >= 0"),
    ],
)
def test_bad_network_topology(topology: dict[str, Any], expected: str) -> None:
    (problem,) = problems(group_doc(topology))
    assert expected in problem


def test_highest_tier_name_is_reported_unsupported() -> None:
    m = parse_documents([group_doc({"highestTierName": "spine"})], "t.yaml")
    assert [str(p) for p in m.warnings] == [
        "t.yaml: PodGroup/pg: spec.networkTopology.highestTierName: not supported by berth, ignored"
    ]


def test_job_network_topology_reaches_its_podgroup() -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                }
            ],  # fmt: skip
        },
    }
    m = parse_documents([job], "t.yaml")
    assert not m.errors
    assert m.jobs[0].network_topology == NetworkTopology(hard=True, highest_tier=1)


# -- NodePool topology ---------------------------------------------------------------------------


def pool(count: int, tiers: list[dict[str, Any]], **topology: Any) -> dict[str, Any]:
    return {
        "apiVersion": "berth.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {
            "count": count,
            "template": {"status": {"allocatable": {"cpu": "8"}}},
            "topology": {"tiers": tiers, **topology},
        },
    }


def test_node_pool_labels_switches_and_writes_hypernodes() -> None:
    m = parse_documents([pool(5, [{"name": "rack", "size": 2}, {"name": "spine", "size": 2}])], "t")
    cross_check(m)
    assert not m.problems
    racks = [n.labels["topology.berth.io/rack"] for n in m.nodes]
    spines = [n.labels["topology.berth.io/spine"] for n in m.nodes]
    assert racks == ["p-rack-0", "p-rack-0", "p-rack-1", "p-rack-1", "p-rack-2"]
    assert spines == ["p-spine-0"] * 4 + ["p-spine-1"]
    assert [(h.name, h.tier, h.tier_name) for h in m.hypernodes] == [
        ("p-rack-0", 1, "rack"),
        ("p-rack-1", 1, "rack"),
        ("p-rack-2", 1, "rack"),
        ("p-spine-0", 2, "spine"),
        ("p-spine-1", 2, "spine"),
    ]
    assert [x.exact for x in m.hypernodes[3].members] == ["p-rack-0", "p-rack-1"]
    # Resolved over the nodes, each node sits in its rack and its rack's spine.
    state = ClusterState()
    state.add_nodes(m.nodes)
    state.hypernodes = m.hypernodes
    topology = state.topology()
    assert topology is not None
    named = [[topology.names[i] for i in level] for level in topology.member]
    assert named == [racks, spines]


def test_node_pool_labels_only() -> None:
    m = parse_documents([pool(3, [{"name": "rack", "size": 2}], hyperNodes=False)], "t")
    assert not m.hypernodes
    assert m.nodes[2].labels["topology.berth.io/rack"] == "p-rack-1"


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        ([{"name": "rack", "size": 0}], "spec.topology.tiers[0].size: must be >= 1 (got 0)"),
        ([], "spec.topology.tiers: must have at least 1 item(s)"),
        (
            [{"name": "rack", "size": 2}, {"name": "rack", "size": 2}],
            "spec.topology.tiers[1].name: duplicate tier name 'rack'",
        ),
        ([{"name": "Rack!", "size": 2}], 'spec.topology.tiers[0].name: "Rack!" is not a valid'),
    ],
)
def test_bad_node_pool_topology(tiers: list[dict[str, Any]], expected: str) -> None:
    (problem,) = problems(pool(4, tiers))
    assert expected in problem


# -- resolution over node rows -------------------------------------------------------------------


def state_of(*names: str, labels: dict[str, dict[str, str]] | None = None) -> ClusterState:
    state = ClusterState()
    state.add_nodes(node(n, labels=(labels or {}).get(n)) for n in names)
    return state


def test_member_selection_like_volcano() -> None:
    """member_selector_test.go's nodes: exact, regex and label members."""
    labels = {"worker-1": {"role": "worker"}, "worker-2": {"role": "worker"},
              "control-plane-1": {"role": "control-plane"}}  # fmt: skip
    state = state_of("worker-1", "worker-2", "control-plane-1", labels=labels)
    cases = {
        "exact": HyperNodeMember("Node", exact="worker-1"),
        "regex": HyperNodeMember("Node", regex=re.compile("^worker-")),
        "label": HyperNodeMember("Node", labels=sel(role="worker")),
        "missing": HyperNodeMember("Node", exact="worker-9"),
    }
    expected = {
        "exact": ["worker-1"],
        "regex": ["worker-1", "worker-2"],
        "label": ["worker-1", "worker-2"],
        "missing": [],
    }
    for name, chosen in cases.items():
        topology = resolve([HyperNode("h", 1, (chosen,))], state)
        held = [state.names[r] for r in np.flatnonzero(topology.member[0] == 0)]
        assert held == expected[name], name


def test_a_node_claimed_twice_stays_with_the_first_by_name() -> None:
    state = state_of("n0", "n1")
    a = HyperNode("a", 1, (HyperNodeMember("Node", exact="n0"),))
    b = HyperNode(
        "b", 1, (HyperNodeMember("Node", exact="n0"), HyperNodeMember("Node", exact="n1"))
    )
    topology = resolve([b, a], state)
    assert [topology.names[i] for i in topology.member[0]] == ["a", "b"]
    assert topology.overlaps == ["node n0 is in HyperNodes a and b of tier 1: kept in a"]


def test_resolution_follows_the_cluster() -> None:
    """Resolved once per change of the nodes: a node added later joins its HyperNode."""
    state = state_of("r0-n0")
    state.hypernodes = [HyperNode("r0", 1, (HyperNodeMember("Node", regex=re.compile("^r0-")),))]
    first = state.topology()
    assert first is state.topology()
    state.add_node(node("r0-n1"))
    second = state.topology()
    assert second is not first
    assert list(second.member[0]) == [0, 0]


def test_no_hypernodes_no_topology() -> None:
    assert state_of("n0").topology() is None
