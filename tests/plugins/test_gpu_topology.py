"""GPU interconnect groups (``berth.io/gpu-topology``): multi-GPU pods take devices within one
NVLink island when one has enough, and gpu-topology scores the nodes where one does."""

from __future__ import annotations

import pytest

from berth.api.keys import GPU_TOPOLOGY_ANNOTATION
from berth.api.manifest import parse_documents
from berth.api.objects import Node
from berth.framework.config import parse_config
from berth.plugins.gpu_topology import GpuTopology
from tests.builders import node, pod, run, scheduler

ISLANDS = "0,1,2,3;4,5,6,7"


def gpu_node(name: str, groups: str | None = ISLANDS) -> Node:
    n = node(name, cpu=64000, mem=65536, gpu=8000)
    if groups is not None:
        n.annotations[GPU_TOPOLOGY_ANNOTATION] = groups
    return n


def devices(s, name: str) -> str:
    return s.jobs[f"default/{name}"].bound[f"default/{name}"].gpu_devices


@pytest.mark.parametrize(
    ("groups", "bound", "ask", "expected"),
    [
        # Devices 0 and 1 taken: the first island has 2 idle, the second 4. A 2-GPU pod fits
        # the first exactly (keeping the whole second island), a 4-GPU pod takes the second.
        (ISLANDS, [2000], 2000, "2,3"),
        (ISLANDS, [2000], 4000, "4,5,6,7"),
        # 0,1,2 taken: no island has 4 idle; the pod takes island 2's four (most idle) ...
        (ISLANDS, [2000, 1000], 4000, "4,5,6,7"),
        # ... and 5 GPUs: all of the second island and the first's last.
        (ISLANDS, [2000, 1000], 5000, "3,4,5,6,7"),
        # Islands of two: a 2-GPU pod takes a whole pair, not one device of each.
        ("0,2;1,3;4,6;5,7", [1000], 2000, "1,3"),
        # No annotation: one group, lowest indices first (the default choice).
        (None, [2000], 2000, "2,3"),
    ],
)
def test_devices_within_one_island(groups, bound, ask, expected) -> None:
    s = scheduler([gpu_node("n", groups)])
    run(s, [pod(f"b{i}", gpu=g) for i, g in enumerate(bound)])
    run(s, [pod("p", gpu=ask)], now=1.0)
    assert devices(s, "p") == expected


def test_score_prefers_the_node_with_a_free_island() -> None:
    cfg = parse_config(
        {"tiers": [{"plugins": [{"name": "resource-fit"}, {"name": "gpu-topology"}]}]}, "t"
    )
    s = scheduler([gpu_node("n1"), gpu_node("n2")], cfg)
    s.place_bound(pod("a", gpu=3000), "n1")  # 0,1,2
    s.place_bound(pod("b", gpu=2000), "n1")  # 4,5: islands keep 1 and 2 idle
    s.place_bound(pod("c", gpu=2000), "n2")  # 0,1: the second island stays whole
    binds = run(s, [pod("p", gpu=3000)])
    assert binds == {"p": "n2"}
    assert devices(s, "p") == "4,5,6"


def test_score_values() -> None:
    s = scheduler([gpu_node("n1"), gpu_node("n2", None)])
    s.place_bound(pod("a", gpu=2000), "n1")  # 0,1
    cls = s.search.compile(pod("p", gpu=4000))
    plugin = GpuTopology({})
    assert plugin.relevant(cls, "score")
    assert list(plugin.score(cls, s.state, slice(0, 2))) == [100.0, 100.0]
    s.place_bound(pod("b", gpu=3000), "n1")  # 4,5,6: the islands keep 2 and 1 idle
    assert list(plugin.score(cls, s.state, slice(0, 1))) == [50.0]
    assert not plugin.relevant(s.search.compile(pod("q", gpu=1000)), "score")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0,1;1,2", "device 1 is in two groups"),
        ("0,x", "'x' is not a device index (expected e.g. 0,1,2,3;4,5,6,7)"),
        ("0,1;;2", "an empty group (expected e.g. 0,1,2,3;4,5,6,7)"),
        ("0,1,8", "device 8 beyond the node's 8 GPUs"),
    ],
)
def test_bad_annotation(value: str, expected: str) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "annotations": {GPU_TOPOLOGY_ANNOTATION: value}},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }
    m = parse_documents([doc], "t.yaml")
    assert [str(p) for p in m.problems] == [
        f"t.yaml: Node/n: metadata.annotations.{GPU_TOPOLOGY_ANNOTATION}: {expected}"
    ]
