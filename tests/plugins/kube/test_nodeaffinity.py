"""kube-scheduler's nodeaffinity plugin tables (node_affinity_test.go: TestNodeAffinity and
TestNodeAffinityPriority), run against berth's node-affinity in the default profile.

Each filter row is one pod against one node (named ``node1`` unless the row says otherwise);
``added`` is the plugin's addedAffinity argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from berth.plugins.node_affinity import NodeAffinity
from tests.plugins.kube.harness import cluster, node, pod, same_ranking, scores, truncated, verdicts


def required(*terms: dict) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, op: str, *values: str) -> dict:
    entry: dict = {"key": key, "operator": op}
    if values:
        entry["values"] = list(values)
    return entry


def names(*values: str) -> dict:
    return {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": [v]} for v in values]
    }


# (pod spec fields, node labels, node name, addedAffinity, fits)
FILTER = {
    "missing labels": ({"nodeSelector": {"foo": "bar"}}, {}, "node1", None, False),
    "same labels": ({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "node1", None, True),
    "node labels are superset": (
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "node1",
        None,
        True,
    ),
    "node labels are subset": (
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "node1",
        None,
        False,
    ),
    "In matches": (
        {"affinity": required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})},
        {"foo": "bar"},
        "node1",
        None,
        True,
    ),
    "Gt matches": (
        {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})},
        {"kernel-version": "0206"},
        "node1",
        None,
        True,
    ),
    "NotIn matches": (
        {"affinity": required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})},
        {"mem-type": "DDR3"},
        "node1",
        None,
        True,
    ),
    "Exists matches": (
        {"affinity": required({"matchExpressions": [expr("GPU", "Exists")]})},
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        True,
    ),
    "affinity not matching the node's labels": (
        {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})},
        {"foo": "bar"},
        "node1",
        None,
        False,
    ),
    "empty matchExpressions match no node": (
        {"affinity": required({"matchExpressions": []})},
        {"foo": "bar"},
        "node1",
        None,
        False,
    ),
    "no affinity": ({}, {"foo": "bar"}, "node1", None, True),
    "affinity without a node selector": (
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "node1",
        None,
        True,
    ),
    "expressions ANDed, matching": (
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        True,
    ),
    "expressions ANDed, not matching": (
        {
            "affinity": required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}
            )
        },
        {"GPU": "NVIDIA-GRID-K1"},
        "node1",
        None,
        False,
    ),
    "terms ORed": (
        {
            "affinity": required(
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            )
        },
        {"foo": "bar"},
        "node1",
        None,
        True,
    ),
    "affinity and nodeSelector both satisfied": (
        {
            "nodeSelector": {"foo": "bar"},
            "affinity": required({"matchExpressions": [expr("foo", "Exists")]}),
        },
        {"foo": "bar"},
        "node1",
        None,
        True,
    ),
    "affinity satisfied, nodeSelector not": (
        {
            "nodeSelector": {"foo": "bar"},
            "affinity": required({"matchExpressions": [expr("foo", "Exists")]}),
        },
        {"foo": "barrrrrr"},
        "node1",
        None,
        False,
    ),
    "an invalid value in a term matches no node": (
        {
            "affinity": required(
                {"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}
            )
        },
        {"foo": "bar"},
        "node1",
        None,
        False,
    ),
    "matchFields In matching the node": (
        {"affinity": required(names("node1"))},
        {},
        "node1",
        None,
        True,
    ),
    "matchFields In not matching the node": (
        {"affinity": required(names("node1"))},
        {},
        "node2",
        None,
        False,
    ),
    "two terms: matchFields misses, matchExpressions matches": (
        {
            "affinity": required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        True,
    ),
    "one term: matchFields misses, matchExpressions matches": (
        {
            "affinity": required(
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node1"]}
                    ],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        False,
    ),
    "one term: both match": (
        {
            "affinity": required(
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node1"]}
                    ],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        },
        {"foo": "bar"},
        "node1",
        None,
        True,
    ),
    "two terms: neither matches": (
        {
            "affinity": required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]},
                {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
            )
        },
        {"foo": "bar"},
        "node2",
        None,
        False,
    ),
    "two terms of node names": (
        {"affinity": required(names("node1"), names("node2"))},
        {},
        "node2",
        None,
        True,
    ),
    "two conflicting matchFields in one term": (
        {"affinity": required(names("node1", "node2"))},
        {"foo": "bar"},
        "node2",
        None,
        False,
    ),
    "matches added affinity and the pod's": (
        {"affinity": required({"matchExpressions": [expr("zone", "In", "foo")]})},
        {"zone": "foo"},
        "node2",
        required(names("node2"))["nodeAffinity"],
        True,
    ),
    "matches added affinity, not the pod's": (
        {"affinity": required({"matchExpressions": [expr("zone", "In", "bar")]})},
        {"zone": "foo"},
        "node2",
        required(names("node2"))["nodeAffinity"],
        False,
    ),
    "does not match added affinity": (
        {},
        {"zone": "foo"},
        "node2",
        required({"matchExpressions": [expr("zone", "In", "bar")]})["nodeAffinity"],
        False,
    ),
}


@pytest.mark.parametrize("spec,labels,name,added,fits", FILTER.values(), ids=FILTER.keys())
def test_filter(spec, labels, name, added, fits):
    config = [{"name": "NodeAffinity", "args": {"addedAffinity": added}}] if added else []
    s = cluster([node(name, labels)], plugin_config=config)
    assert verdicts(s, "node-affinity", pod(**spec)) == {name: fits}


def preferred(*weighted: tuple[int, list[dict]]) -> dict:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": exprs}} for w, exprs in weighted
            ]
        }
    }


AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred(
    (2, [expr("foo", "In", "bar")]),
    (4, [expr("key", "In", "value")]),
    (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
)
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

# (pod affinity, nodes, addedAffinity, upstream scores, berth scores are the same)
SCORE = {
    "no node affinity: all equal": (
        None,
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 0, "node2": 0, "node3": 0},
        True,
    ),
    "no node matches the preference": (
        AFFINITY1,
        {"node1": LABEL4, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 0, "node2": 0, "node3": 0},
        True,
    ),
    "only node1 matches": (
        AFFINITY1,
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 100, "node2": 0, "node3": 0},
        True,
    ),
    "all match with different weights": (
        AFFINITY2,
        {"node1": LABEL1, "node5": LABEL5, "node2": LABEL2},
        None,
        {"node1": 18, "node5": 100, "node2": 36},
        True,
    ),
    "added affinity": (
        None,
        {"node1": LABEL1, "node2": LABEL2},
        AFFINITY1["nodeAffinity"],
        {"node1": 100, "node2": 0},
        True,
    ),
    "added affinity and the pod's": (
        AFFINITY1,
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL5},
        preferred((3, [expr("key", "In", "value")]))["nodeAffinity"],
        {"node1": 40, "node2": 60, "node3": 100},
        True,
    ),
}


@pytest.mark.parametrize("affinity,nodes,added,expected,exact", SCORE.values(), ids=SCORE.keys())
def test_score(affinity, nodes, added, expected, exact):
    config = [{"name": "NodeAffinity", "args": {"addedAffinity": added}}] if added else []
    s = cluster([node(n, labels) for n, labels in nodes.items()], plugin_config=config)
    got = scores(s, "node-affinity", pod(**({"affinity": affinity} if affinity else {})))
    assert same_ranking(got, expected)
    if exact:
        assert truncated(got) == expected


def test_score_normalization_by_the_best_feasible_node():
    """A KubeSchedulerConfiguration gets kube-scheduler's normalisation, by the best feasible
    node's total: with preferences of weight 2 and 4 and no node matching both, the weight-4
    node scores 100. berth's own configurations scale by the total preferred weight instead
    (66 there), which keeps a node's score its own and cached (a documented difference; the
    ranking is the same)."""
    affinity = preferred((2, [expr("foo", "In", "bar")]), (4, [expr("key", "In", "value")]))
    s = cluster([node("node1", LABEL1), node("node2", LABEL2), node("node3", LABEL3)])
    got = scores(s, "node-affinity", pod(affinity=affinity))
    upstream = {"node1": 50, "node2": 100, "node3": 0}
    assert got == upstream
    own_plugin = NodeAffinity({})  # as berth's own configurations build it
    cls = s.search.compile(pod(affinity=affinity))
    own_plugin.prepare(cls, s.state)
    rows = np.array([s.state.rows[n] for n in upstream], dtype=np.intp)
    own = dict(zip(upstream, own_plugin.score(cls, s.state, rows).tolist(), strict=True))
    assert same_ranking(own, upstream)
    assert truncated(own) == {"node1": 33, "node2": 66, "node3": 0}
