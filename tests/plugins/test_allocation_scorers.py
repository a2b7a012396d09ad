"""least-allocated, most-allocated and balanced-allocation: which partially filled node each
picks.

Nodes are 4 cpu / 8 GiB; the pod asks 1 cpu / 1 GiB. After placement:
    empty: cpu .25, mem .125  -> least picks it (mean .19)
    full:  cpu .75, mem .875  -> most picks it  (mean .81)
    even:  cpu .50, mem .50   -> balanced picks it (gap 0)
"""

from __future__ import annotations

import pytest

from berth.framework.plugin import PluginArgumentError
from berth.framework.scheduler import Scheduler
from berth.plugins.balanced_allocation import BalancedAllocation
from berth.plugins.node_affinity import NodeAffinity
from berth.plugins.taint_toleration import TaintToleration
from tests.builders import config, node, place_one, pod


def three_nodes():
    nodes = [node("empty"), node("full"), node("even")]
    bound = [(pod("f", cpu=2000, mem=6144), "full"), (pod("e", cpu=1000, mem=3072), "even")]
    return nodes, bound


CASES = {
    "least-allocated": (["least-allocated"], "empty"),
    "most-allocated": (["most-allocated"], "full"),
    "balanced-allocation": (["balanced-allocation"], "even"),
    "least + balanced (default pair)": (["least-allocated", "balanced-allocation"], "empty"),
    "most-allocated weighted over least": (
        [{"name": "most-allocated", "arguments": {"weight": 5}}, "least-allocated"],
        "full",
    ),
    "least-allocated on memory only": (
        [{"name": "least-allocated", "arguments": {"resources": {"memory": 1}}}],
        "empty",
    ),
    "most-allocated on cpu only (list form)": (
        [{"name": "most-allocated", "arguments": {"resources": [{"name": "cpu", "weight": 1}]}}],
        "full",
    ),
}


@pytest.mark.parametrize("scorers,expected", CASES.values(), ids=CASES.keys())
def test_choice_among_partially_filled_nodes(scorers, expected):
    nodes, bound = three_nodes()
    cfg = config(["resource-fit", *scorers], actions="allocate")
    assert place_one(nodes, pod("p"), bound, cfg)[0] == expected


def test_full_node_is_still_filtered_by_resource_fit():
    nodes, bound = three_nodes()
    cfg = config(["resource-fit", "most-allocated"], actions="allocate")
    # "full" has 2 cpu free, so a 2.5 cpu pod goes to the next fullest node.
    assert place_one(nodes, pod("p", cpu=2500), bound, cfg)[0] == "even"


GPU_CASES = {
    # The gpu node's GPUs are all taken; a cpu-only pod must not be pulled there by them.
    "cpu pod ignores gpu fullness": (pod("p"), "cpu"),
    # A gpu pod binpacks onto the node whose GPUs are already partly used.
    "gpu pod packs gpus": (pod("p", gpu=1000), "gpu-busy"),
}


@pytest.mark.parametrize("new,expected", GPU_CASES.values(), ids=GPU_CASES.keys())
def test_most_allocated_weighs_only_requested_resources(new, expected):
    nodes = [node("cpu"), node("gpu-full", gpu=8000), node("gpu-busy", gpu=8000)]
    bound = [
        (pod("c", cpu=1000, mem=1024), "cpu"),
        (pod("g1", cpu=10, mem=10, gpu=8000), "gpu-full"),
        (pod("g2", cpu=10, mem=10, gpu=4000), "gpu-busy"),
    ]
    cfg = config(["resource-fit", "most-allocated"], actions="allocate")
    assert place_one(nodes, new, bound, cfg)[0] == expected


def test_a_resource_a_node_lacks_does_not_count_for_that_node():
    """With gpu weighted, node "c" (no GPUs) is judged on cpu and memory alone:
    c: cpu .75, mem .5 -> .625; g: cpu .25, mem .125, gpu 1.0 -> .458, so g is emptier.
    (Counting c's missing GPUs as 0 used would make c look emptier at .417.)"""
    nodes = [node("c"), node("g", gpu=8000)]
    bound = [(pod("x", cpu=2000, mem=3072), "c"), (pod("y", cpu=1, mem=1, gpu=8000), "g")]
    cfg = config(
        [
            "resource-fit",
            {
                "name": "least-allocated",
                "arguments": {"resources": {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1}},
            },
        ],
        actions="allocate",
    )
    assert place_one(nodes, pod("p"), bound, cfg)[0] == "g"


@pytest.mark.parametrize("scorer", ["least-allocated", "most-allocated", "balanced-allocation"])
def test_zero_weight_scorer_is_not_registered(scorer):
    cfg = config(["resource-fit", {"name": scorer, "arguments": {"weight": 0}}])
    assert [p.name for p in Scheduler(cfg).framework.scorers] == []


def test_balanced_allocation_leaves_out_a_resource_the_node_lacks():
    """Node "cpu-only" has no memory: judged on cpu alone it is perfectly balanced (100), while
    "even" ends at cpu .5 / memory .375 (93.75). Counting the missing memory as an unused 0
    would score "cpu-only" 87.5 (cpu .25 against memory 0) and send the pod to "even"."""
    nodes = [node("cpu-only", mem=0), node("even")]
    bound = [(pod("e", cpu=1000, mem=3072), "even")]
    cfg = config(["resource-fit", "balanced-allocation"], actions="allocate")
    assert place_one(nodes, pod("p", cpu=1000, mem=0), bound, cfg)[0] == "cpu-only"


@pytest.mark.parametrize(
    "plugin,arguments,message",
    [
        (
            BalancedAllocation,
            {"balance": "sideways"},
            "argument balance: expected one of after, change",
        ),
        (TaintToleration, {"normalize": "yes"}, "argument normalize: 'yes' is not true or false"),
        (NodeAffinity, {"normalize": 1}, "argument normalize: 1 is not true or false"),
    ],
)
def test_bad_scoring_form_arguments(plugin, arguments, message) -> None:
    with pytest.raises(PluginArgumentError, match=message):
        plugin(arguments)
