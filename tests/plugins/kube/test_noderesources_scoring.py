"""kube-scheduler's NodeResourcesFit scoring strategies and NodeResourcesBalancedAllocation
(least_allocated_test.go, most_allocated_test.go, requested_to_capacity_ratio_test.go,
balanced_allocation_test.go), run against berth's least-allocated, most-allocated (as
kube-scheduler's MostAllocated), requested-to-capacity-ratio and balanced-allocation.

kube-scheduler keeps whole points (each resource's score, then the weighted mean, truncated);
berth keeps the fractions, so its score is the same formula without the truncation: truncated,
it gives the upstream figure. requested-to-capacity-ratio does kube-scheduler's arithmetic in
whole numbers and agrees exactly. Rows where kube-scheduler is handed no resource list at all
(an error there) have no counterpart: a KubeSchedulerConfiguration defaults it to cpu and
memory.
"""

from __future__ import annotations

import numpy as np
import pytest

from berth.framework.config import ConfigError
from berth.plugins.requested_to_capacity_ratio import broken_linear
from tests.plugins.kube.harness import cluster, kube_profile, node, pod, scores, truncated

EXT = "vendor.io/extended"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_EXT = DEFAULT + [{"name": EXT, "weight": 1}]


def cm(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory, **{EXT if k == "ext" else k: v for k, v in extra.items()}}


def cap(cpu: str, memory: str, ext: int | None = None) -> dict[str, str | int]:
    capacity: dict[str, str | int] = {"cpu": cpu, "memory": memory}
    if ext is not None:
        capacity[EXT] = ext
    return capacity


TWO = [cm("1000", "2000"), cm("2000", "3000")]  # the incoming pod of most rows: 3000 cpu, 5000

# (strategy, nodes {name: capacity}, existing [(containers, node)], pod containers, resources,
#  upstream scores)
ROWS = {
    "least: nothing scheduled, nothing requested": (
        "LeastAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("4000", "10000")},
        [],
        [],
        DEFAULT,
        {"node1": 100, "node2": 100},
    ),
    "least: nothing scheduled, differently sized nodes": (
        "LeastAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [],
        TWO,
        DEFAULT,
        {"node1": 37, "node2": 50},
    ),
    "least: no resources requested, pods scheduled": (
        "LeastAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("4000", "10000")},
        [([], "node1"), ([], "node1"), ([], "node2"), ([], "node2")],
        [],
        DEFAULT,
        {"node1": 100, "node2": 100},
    ),
    "least: no resources requested, pods scheduled with resources": (
        "LeastAllocated",
        {"node1": cap("10000", "20000"), "node2": cap("10000", "20000")},
        [
            ([cm("3000", "0")], "node1"),
            ([cm("3000", "0")], "node1"),
            ([cm("3000", "0")], "node2"),
            ([cm("3000", "5000")], "node2"),
        ],
        [],
        DEFAULT,
        {"node1": 70, "node2": 57},
    ),
    "least: resources requested, pods scheduled with resources": (
        "LeastAllocated",
        {"node1": cap("10000", "20000"), "node2": cap("10000", "20000")},
        [([cm("3000", "0")], "node1"), ([cm("3000", "5000")], "node2")],
        TWO,
        DEFAULT,
        {"node1": 57, "node2": 45},
    ),
    "least: resources requested, pods scheduled, differently sized nodes": (
        "LeastAllocated",
        {"node1": cap("10000", "20000"), "node2": cap("10000", "50000")},
        [([cm("3000", "0")], "node1"), ([cm("3000", "5000")], "node2")],
        TWO,
        DEFAULT,
        {"node1": 57, "node2": 60},
    ),
    "least: requested resources exceed node capacity": (
        "LeastAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("4000", "10000")},
        [([cm("3000", "0")], "node1"), ([cm("3000", "5000")], "node2")],
        [cm("3000", "0")],
        DEFAULT,
        {"node1": 50, "node2": 25},
    ),
    "least: zero node resources": (
        "LeastAllocated",
        {"node1": {}, "node2": {}},
        [],
        [],
        DEFAULT,
        {"node1": 0, "node2": 0},
    ),
    "least: different weights on cpu and memory": (
        "LeastAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [],
        TWO,
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        {"node1": 41, "node2": 50},
    ),
    "least: an extended resource the pod does not request is bypassed": (
        "LeastAllocated",
        {"node1": cap("6000", "10000"), "node2": cap("6000", "10000", ext=4)},
        [],
        TWO,
        WITH_EXT,
        {"node1": 50, "node2": 50},
    ),
    "least: an extended resource the pod requests counts": (
        "LeastAllocated",
        {"node1": cap("6000", "10000", ext=4), "node2": cap("6000", "10000", ext=10)},
        [],
        [cm("3000", "5000", ext="2")],
        WITH_EXT,
        {"node1": 50, "node2": 60},
    ),
    "least: a resource the node lacks": (
        "LeastAllocated",
        {"node1": cap("6000", "10000"), "node2": cap("6000", "10000", ext=4)},
        [],
        [cm("3000", "4000")],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        {"node1": 55, "node2": 55},
    ),
    "most: nothing scheduled, nothing requested": (
        "MostAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("4000", "10000")},
        [],
        [],
        DEFAULT,
        {"node1": 0, "node2": 0},
    ),
    "most: nothing scheduled, differently sized nodes": (
        "MostAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [],
        TWO,
        DEFAULT,
        {"node1": 62, "node2": 50},
    ),
    "most: no resources requested, pods scheduled with resources": (
        "MostAllocated",
        {"node1": cap("10000", "20000"), "node2": cap("10000", "20000")},
        [
            ([cm("3000", "0")], "node1"),
            ([cm("3000", "0")], "node1"),
            ([cm("3000", "0")], "node2"),
            ([cm("3000", "5000")], "node2"),
        ],
        [],
        DEFAULT,
        {"node1": 30, "node2": 42},
    ),
    "most: resources requested, pods scheduled with resources": (
        "MostAllocated",
        {"node1": cap("10000", "20000"), "node2": cap("10000", "20000")},
        [([cm("3000", "0")], "node1"), ([cm("3000", "5000")], "node2")],
        TWO,
        DEFAULT,
        {"node1": 42, "node2": 55},
    ),
    "most: resources requested equal node capacity": (
        "MostAllocated",
        {"node1": cap("5000", "10000"), "node2": cap("10000", "9000")},
        [],
        [cm("2000", "4000"), cm("3000", "5000")],
        DEFAULT,
        {"node1": 95, "node2": 75},
    ),
    "most: different weights on cpu and memory": (
        "MostAllocated",
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [],
        TWO,
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        {"node1": 58, "node2": 50},
    ),
    "most: no requests counted at the defaults (100m, 200Mi)": (
        "MostAllocated",
        {"node1": cap("250m", "1000Mi"), "node2": cap("250m", "1000Mi")},
        [([{}], "node1"), ([{}], "node1")],
        [{}],
        DEFAULT,
        {"node1": 80, "node2": 30},
    ),
    "most: an extended resource the pod does not request is bypassed": (
        "MostAllocated",
        {"node1": cap("6000", "10000"), "node2": cap("6000", "10000", ext=4)},
        [],
        TWO,
        WITH_EXT,
        {"node1": 50, "node2": 50},
    ),
    "most: an extended resource the pod requests counts": (
        "MostAllocated",
        {"node1": cap("6000", "10000", ext=4), "node2": cap("6000", "10000", ext=10)},
        [],
        [cm("3000", "5000", ext="2")],
        WITH_EXT,
        {"node1": 50, "node2": 40},
    ),
    "most: a resource the node lacks": (
        "MostAllocated",
        {"node1": cap("6000", "10000"), "node2": cap("6000", "10000", ext=4)},
        [],
        [cm("3000", "4000")],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        {"node1": 45, "node2": 45},
    ),
}

SCORERS = {
    "LeastAllocated": "least-allocated",
    "MostAllocated": "most-allocated",
    "RequestedToCapacityRatio": "requested-to-capacity-ratio",
}


def fit_config(strategy: str, resources: list[dict], shape: list[dict] | None = None) -> list:
    scoring: dict = {"type": strategy, "resources": resources}
    if shape is not None:
        scoring["requestedToCapacityRatio"] = {"shape": shape}
    return [{"name": "NodeResourcesFit", "args": {"scoringStrategy": scoring}}]


def build(nodes, existing, plugin_config):
    pods = [(pod(f"e{i}", containers=c), where) for i, (c, where) in enumerate(existing)]
    return cluster(
        [node(n, capacity=c) for n, c in nodes.items()], pods, plugin_config=plugin_config
    )


@pytest.mark.parametrize(
    "strategy,nodes,existing,containers,resources,expected", ROWS.values(), ids=ROWS.keys()
)
def test_scoring_strategy(strategy, nodes, existing, containers, resources, expected):
    s = build(nodes, existing, fit_config(strategy, resources))
    got = scores(s, SCORERS[strategy], pod(containers=containers))
    assert truncated(got) == expected


@pytest.mark.parametrize("weight", [-1, 0, 101])
@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_resource_weight_out_of_range_is_refused(strategy, weight):
    resources = [{"name": "memory", "weight": weight}, {"name": "cpu", "weight": 1}]
    with pytest.raises(ConfigError, match=r"resources\[0\]\.weight: expected 1\.\.100"):
        kube_profile(fit_config(strategy, resources))


SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
PACK = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]
FOO, BAR = "intel.com/foo", "intel.com/bar"
MIB = 1024 * 1024

# (nodes, existing [(containers, node)], pod containers, resources, shape, scores)
RATIO = {
    "nothing scheduled, nothing requested": (
        {"node1": cap("4000", "10000"), "node2": cap("4000", "10000")},
        [([], "node1"), ([], "node1")],
        [],
        DEFAULT,
        SHAPE,
        {"node1": 100, "node2": 100},
    ),
    "nothing scheduled, resources requested, differently sized nodes": (
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [([], "node1"), ([], "node1")],
        TWO,
        DEFAULT,
        SHAPE,
        {"node1": 38, "node2": 50},
    ),
    "no resources requested, pods scheduled with resources": (
        {"node1": cap("4000", "10000"), "node2": cap("6000", "10000")},
        [([cm("3000", "5000")], "node1"), ([cm("3000", "5000")], "node2")],
        [],
        DEFAULT,
        SHAPE,
        {"node1": 38, "node2": 50},
    ),
    "one extended resource, nothing requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4},
        },
        [],
        [],
        [{"name": FOO, "weight": 1}],
        PACK,
        {"node1": 0, "node2": 0},
    ),
    "one extended resource requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4},
        },
        [],
        [{FOO: "2"}],
        [{"name": FOO, "weight": 1}],
        PACK,
        {"node1": 2, "node2": 5},
    ),
    "one extended resource, a pod already using it": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4},
        },
        [([{FOO: "2"}], "node2")],
        [{FOO: "2"}],
        [{"name": FOO, "weight": 1}],
        PACK,
        {"node1": 2, "node2": 10},
    ),
    "one extended resource, more requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4},
        },
        [],
        [{FOO: "4"}],
        [{"name": FOO, "weight": 1}],
        PACK,
        {"node1": 5, "node2": 10},
    ),
    "two extended resources, nothing requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8, BAR: 4},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4, BAR: 8},
        },
        [],
        [],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        PACK,
        {"node1": 0, "node2": 0},
    ),
    "two extended resources requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8, BAR: 4},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4, BAR: 8},
        },
        [],
        [{FOO: "2", BAR: "2"}],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        PACK,
        {"node1": 4, "node2": 3},
    ),
    "two extended resources, a pod already using them": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8, BAR: 4},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4, BAR: 8},
        },
        [([{FOO: "4", BAR: "2"}], "node2")],
        [{FOO: "2", BAR: "2"}],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        PACK,
        {"node1": 4, "node2": 7},
    ),
    "two extended resources, more requested": (
        {
            "node1": {"cpu": "4", "memory": 10000 * MIB, FOO: 8, BAR: 4},
            "node2": {"cpu": "4", "memory": 10000 * MIB, FOO: 4, BAR: 8},
        },
        [],
        [{FOO: "4", BAR: "2"}],
        [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        PACK,
        {"node1": 5, "node2": 5},
    ),
}


@pytest.mark.parametrize(
    "nodes,existing,containers,resources,shape,expected", RATIO.values(), ids=RATIO.keys()
)
def test_requested_to_capacity_ratio(nodes, existing, containers, resources, shape, expected):
    s = build(nodes, existing, fit_config("RequestedToCapacityRatio", resources, shape))
    got = scores(s, "requested-to-capacity-ratio", pod(containers=containers))
    assert got == {n: float(v) for n, v in expected.items()}


# TestBrokenLinearFunction: (points, {utilization: score})
BROKEN_LINEAR = [
    (
        ((10, 1), (90, 9)),
        {-10: 1, 0: 1, 9: 1, 10: 1, 15: 1, 19: 1, 20: 2, 89: 8, 90: 9, 99: 9, 100: 9, 110: 9},
    ),
    (((0, 2), (40, 10), (100, 0)), {-10: 2, 0: 2, 20: 6, 30: 8, 40: 10, 70: 5, 100: 0, 110: 0}),
    (((0, 2), (40, 2), (100, 2)), {-10: 2, 0: 2, 20: 2, 30: 2, 40: 2, 70: 2, 100: 2, 110: 2}),
]


@pytest.mark.parametrize("points,expected", BROKEN_LINEAR)
def test_broken_linear_function(points, expected):
    at = np.array(list(expected), dtype=np.int64)
    assert dict(zip(expected, broken_linear(points, at).tolist(), strict=True)) == expected


CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]
WITH_GPU = [
    {"cpu": "1000m", "memory": "2000"},
    {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"},
]
GPU_SET = DEFAULT + [{"name": "nvidia.com/gpu", "weight": 1}]

# (nodes, existing [(containers, node)], pod containers, resources, scores): v1.37's table,
# which scores the change in balance (the comment of each upstream row gives before -> after).
BALANCED = {
    "best-effort pod: not scored": (
        {"node1": cap("4000m", "10000"), "node2": cap("4000m", "10000")},
        [],
        [],
        DEFAULT,
        {"node1": 0, "node2": 0},
    ),
    "nothing scheduled, differently sized nodes": (  # 100 -> 87, 100 -> 100
        {"node1": cap("4000m", "10000"), "node2": cap("6000m", "10000")},
        [],
        CPU_AND_MEMORY,
        DEFAULT,
        {"node1": 68, "node2": 75},
    ),
    "resources requested, pods scheduled with resources": (  # 85 -> 82, 97 -> 95
        {"node1": cap("10000m", "20000"), "node2": cap("10000m", "20000")},
        [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
        CPU_AND_MEMORY,
        DEFAULT,
        {"node1": 73, "node2": 74},
    ),
    "resources requested, pods scheduled, differently sized nodes": (  # 85 -> 82, 90 -> 80
        {"node1": cap("10000m", "20000"), "node2": cap("10000m", "50000")},
        [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
        CPU_AND_MEMORY,
        DEFAULT,
        {"node1": 73, "node2": 70},
    ),
    "nodes to reach min/max score": (  # 50 -> 100, 100 -> 50
        {"node1": cap("3000m", "5000"), "node2": cap("3000m", "5000")},
        [(CPU_ONLY, "node1")],
        [{"memory": "2000"}, {"memory": "3000"}],
        DEFAULT,
        {"node1": 100, "node2": 50},
    ),
    "requested resources at node capacity": (  # 75 -> 50, 100 -> 75
        {"node1": cap("6000m", "10000"), "node2": cap("6000m", "10000")},
        [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
        CPU_ONLY,
        DEFAULT,
        {"node1": 62, "node2": 62},
    ),
    "a scalar resource the pod requests counts": (  # 69 -> 70, 62 -> 65
        {
            "node1": {"cpu": "3500m", "memory": "40000", "nvidia.com/gpu": 8},
            "node2": {"cpu": "3500m", "memory": "40000", "nvidia.com/gpu": 8},
        },
        [(CPU_AND_MEMORY, "node2"), (WITH_GPU, "node1")],
        [{"memory": "0", "nvidia.com/gpu": "1"}],
        GPU_SET,
        {"node1": 75, "node2": 76},
    ),
    "a scalar resource the pod does not request is skipped": (  # 100 -> 63 on both
        {
            "node1": {"cpu": "3500m", "memory": "40000", "nvidia.com/gpu": 8},
            "node2": {"cpu": "3500m", "memory": "40000"},
        },
        [],
        CPU_AND_MEMORY,
        GPU_SET,
        {"node1": 56, "node2": 56},
    ),
}
#: The same rows scored by the balance after placement alone (``balance: after``, the form
#: Volcano's nodeorder runs and kube-scheduler used before it scored the change): the "after"
#: figure of each upstream comment.
BALANCED_AFTER = {
    "nothing scheduled, differently sized nodes": {"node1": 87, "node2": 100},
    "resources requested, pods scheduled with resources": {"node1": 82, "node2": 95},
    "resources requested, pods scheduled, differently sized nodes": {"node1": 82, "node2": 80},
    "nodes to reach min/max score": {"node1": 100, "node2": 50},
    "requested resources at node capacity": {"node1": 50, "node2": 75},
    "a scalar resource the pod requests counts": {"node1": 70, "node2": 65},
    "a scalar resource the pod does not request is skipped": {"node1": 63, "node2": 63},
}


@pytest.mark.parametrize(
    "nodes,existing,containers,resources,expected", BALANCED.values(), ids=BALANCED.keys()
)
def test_balanced_allocation(nodes, existing, containers, resources, expected):
    config = [{"name": "NodeResourcesBalancedAllocation", "args": {"resources": resources}}]
    s = build(nodes, existing, config)
    got = scores(s, "balanced-allocation", pod(containers=containers))
    assert got == expected  # whole points already, as kube-scheduler computes them


@pytest.mark.parametrize("row", sorted(BALANCED_AFTER))
def test_balanced_allocation_by_the_balance_after_placement(row):
    nodes, existing, containers, resources, _ = BALANCED[row]
    config = [{"name": "NodeResourcesBalancedAllocation", "args": {"resources": resources}}]
    s = build(nodes, existing, config)
    for plugin in s.framework.plugins:
        if plugin.name == "balanced-allocation":
            plugin.balance = "after"
    got = scores(s, "balanced-allocation", pod(containers=containers))
    assert truncated(got) == BALANCED_AFTER[row]
