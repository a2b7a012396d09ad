"""kube-scheduler's tainttoleration plugin tables (taint_toleration_test.go:
TestTaintTolerationFilter and TestTaintTolerationScore), run against berth's
taint-toleration in the default profile.

Scores: kube-scheduler gives 100 − 100 × untolerated / most untolerated among the nodes, and
so does berth for a KubeSchedulerConfiguration (these tables: the figures are upstream's);
berth's own configurations give 100 / (1 + untolerated), so that a node's score does not depend
on the others (documented in docs/configuration.md; nodes rank the same).
"""

from __future__ import annotations

import numpy as np
import pytest

from berth.plugins.taint_toleration import TaintToleration
from tests.plugins.kube.harness import cluster, node, pod, same_ranking, scores, verdicts

NS, PREFER = "NoSchedule", "PreferNoSchedule"


def tol(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict:
    entry = {"key": key, "operator": operator, "effect": effect}
    if operator == "Equal":
        entry["value"] = value
    return entry


# (tolerations, node taints, fits)
FILTER = {
    "no tolerations, a NoSchedule taint": ([], [("dedicated", "user1", NS)], False),
    "tolerated NoSchedule taint": (
        [tol("dedicated", "user1", NS)],
        [("dedicated", "user1", NS)],
        True,
    ),
    "toleration for another value": (
        [tol("dedicated", "user2", NS)],
        [("dedicated", "user1", NS)],
        False,
    ),
    "Exists tolerates any value": (
        [tol("foo", effect=NS, operator="Exists")],
        [("foo", "bar", NS)],
        True,
    ),
    "every taint tolerated": (
        [tol("dedicated", "user2", NS), tol("foo", effect=NS, operator="Exists")],
        [("dedicated", "user2", NS), ("foo", "bar", NS)],
        True,
    ),
    "matching key and value, other effect": (
        [tol("foo", "bar", PREFER)],
        [("foo", "bar", NS)],
        False,
    ),
    "empty effect tolerates every effect": ([tol("foo", "bar")], [("foo", "bar", NS)], True),
    "untolerated PreferNoSchedule does not filter": (
        [tol("dedicated", "user2", NS)],
        [("dedicated", "user1", PREFER)],
        True,
    ),
    "no tolerations, a PreferNoSchedule taint": ([], [("dedicated", "user1", PREFER)], True),
}


@pytest.mark.parametrize("tolerations,taints,fits", FILTER.values(), ids=FILTER.keys())
def test_filter(tolerations, taints, fits):
    s = cluster([node("nodeA", taints=taints)])
    assert verdicts(s, "taint-toleration", pod(tolerations=tolerations)) == {"nodeA": fits}


# (tolerations, taints per node, upstream scores)
SCORE = {
    "tolerated taints score higher than intolerable ones": (
        [tol("foo", "bar", PREFER)],
        {"nodeA": [("foo", "bar", PREFER)], "nodeB": [("foo", "blah", PREFER)]},
        {"nodeA": 100, "nodeB": 0},
    ),
    "how many tolerated taints does not matter": (
        [tol("cpu-type", "arm64", PREFER), tol("disk-type", "ssd", PREFER)],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", PREFER)],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 100},
    ),
    "more intolerable taints, lower score": (
        [tol("foo", "bar", PREFER)],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", PREFER)],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 50, "nodeC": 0},
    ),
    "only PreferNoSchedule taints count": (
        [tol("cpu-type", "arm64", NS), tol("disk-type", "ssd", NS)],
        {
            "nodeA": [],
            "nodeB": [("cpu-type", "arm64", NS)],
            "nodeC": [("cpu-type", "arm64", PREFER), ("disk-type", "ssd", PREFER)],
        },
        {"nodeA": 100, "nodeB": 100, "nodeC": 0},
    ),
    "no tolerations: the untainted node": (
        [],
        {"nodeA": [], "nodeB": [("cpu-type", "arm64", PREFER)]},
        {"nodeA": 100, "nodeB": 0},
    ),
}


@pytest.mark.parametrize("tolerations,taints,expected", SCORE.values(), ids=SCORE.keys())
def test_score(tolerations, taints, expected):
    s = cluster([node(n, taints=t) for n, t in taints.items()])
    got = scores(s, "taint-toleration", pod(tolerations=tolerations))
    if any(got.values()):
        assert got == expected
    else:  # nothing to score: every node equal, as upstream's all-100
        assert set(expected.values()) == {100}


@pytest.mark.parametrize("tolerations,taints,expected", SCORE.values(), ids=SCORE.keys())
def test_own_score_ranks_alike(tolerations, taints, expected):
    """berth's own configurations: 100 / (1 + untolerated), the same ranking."""
    s = cluster([node(n, taints=t) for n, t in taints.items()])
    own = TaintToleration({})
    cls = s.search.compile(pod(tolerations=tolerations))
    own.prepare(cls, s.state)
    if not own.relevant(cls, "score"):
        assert set(expected.values()) == {100}
        return
    rows = np.array([s.state.rows[n] for n in expected], dtype=np.intp)
    got = dict(zip(expected, own.score(cls, s.state, rows).tolist(), strict=True))
    assert same_ranking(got, expected)
