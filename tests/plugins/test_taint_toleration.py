"""taint-toleration: NoSchedule/NoExecute taints block unless tolerated; PreferNoSchedule only
lowers the score."""

from __future__ import annotations

import pytest

from berth.api.selectors import Taint, Toleration
from tests.builders import node, place_one, pod

GPU_NO_SCHEDULE = Taint("dedicated", "gpu", "NoSchedule")
GPU_NO_EXECUTE = Taint("dedicated", "gpu", "NoExecute")
SOFT = Taint("spot", "true", "PreferNoSchedule")

CASES = {
    "NoSchedule blocks": (GPU_NO_SCHEDULE, (), False),
    "NoExecute blocks": (GPU_NO_EXECUTE, (), False),
    "PreferNoSchedule does not block": (SOFT, (), True),
    "Equal key and value": (GPU_NO_SCHEDULE, (Toleration("dedicated", "Equal", "gpu"),), True),
    "Equal wrong value": (GPU_NO_SCHEDULE, (Toleration("dedicated", "Equal", "cpu"),), False),
    "Equal wrong key": (GPU_NO_SCHEDULE, (Toleration("team", "Equal", "gpu"),), False),
    "Exists on the key ignores the value": (
        GPU_NO_SCHEDULE,
        (Toleration("dedicated", "Exists"),),
        True,
    ),
    "Exists without a key tolerates everything": (
        GPU_NO_EXECUTE,
        (Toleration(operator="Exists"),),
        True,
    ),
    "empty effect tolerates every effect": (
        GPU_NO_EXECUTE,
        (Toleration("dedicated", "Equal", "gpu", effect=""),),
        True,
    ),
    "matching effect": (
        GPU_NO_EXECUTE,
        (Toleration("dedicated", "Equal", "gpu", effect="NoExecute"),),
        True,
    ),
    "other effect does not tolerate": (
        GPU_NO_EXECUTE,
        (Toleration("dedicated", "Equal", "gpu", effect="NoSchedule"),),
        False,
    ),
    "one of several tolerations suffices": (
        GPU_NO_SCHEDULE,
        (Toleration("a", "Exists"), Toleration("dedicated", "Exists")),
        True,
    ),
}


@pytest.mark.parametrize("taint,tolerations,allowed", CASES.values(), ids=CASES.keys())
def test_single_tainted_node(taint, tolerations, allowed):
    p = pod("p", tolerations=tolerations)
    where, s = place_one([node("t", taints=[taint])], p)
    assert where == ("t" if allowed else None)
    if not allowed:
        assert s.pending_reason(p) == "0/1 nodes available: 1 untolerated taint"


def test_every_taint_must_be_tolerated():
    n = node("t", taints=[GPU_NO_SCHEDULE, Taint("zone-maint", "", "NoExecute")])
    partial = pod("p", tolerations=(Toleration("dedicated", "Exists"),))
    assert place_one([n], partial)[0] is None
    full = pod(
        "q", tolerations=(Toleration("dedicated", "Exists"), Toleration("zone-maint", "Exists"))
    )
    assert place_one([node("t", taints=n.taints)], full)[0] == "t"


def test_tainted_node_is_avoided_by_untolerating_pod_even_when_emptier():
    nodes = [node("busy"), node("tainted", taints=[GPU_NO_SCHEDULE])]
    bound = [(pod("x", cpu=3000, mem=6000), "busy")]
    assert place_one(nodes, pod("p"), bound)[0] == "busy"


SOFT_TWICE = Taint("old", "", "PreferNoSchedule")
SCORE_CASES = {
    "untolerated PreferNoSchedule ranks below a clean node": ([[SOFT], []], (), "n1"),
    "two soft taints rank below one": ([[SOFT, SOFT_TWICE], [SOFT]], (), "n1"),
    "a tolerated soft taint costs nothing, the emptier node wins": (
        [[SOFT], []],
        (Toleration("spot", "Exists"),),
        "n0",
    ),
}


@pytest.mark.parametrize(
    "taints,tolerations,expected", SCORE_CASES.values(), ids=SCORE_CASES.keys()
)
def test_prefer_no_schedule_lowers_score(taints, tolerations, expected):
    # n1 already runs a small pod, so only the taint score can send the new pod there.
    nodes = [node(f"n{i}", taints=t) for i, t in enumerate(taints)]
    bound = [(pod("x", cpu=400, mem=800), "n1")]
    assert place_one(nodes, pod("p", tolerations=tolerations), bound)[0] == expected
