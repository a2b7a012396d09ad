"""Volcano's network-topology-aware plugin tests (pkg/scheduler/plugins/network-topology-aware/
network_topology_aware_test.go), ported: TestNew (arguments), TestNetworkTopologyAwareNodeScore
(node scores against the HyperNode of the job's running pods) and TestHyperNodeOrderFn
(HyperNode bin-packing scores), with the same clusters and expected scores.

Left out: the eviction-gradient and sub-group rows (berth has neither) and the scores for pods
without a networkTopology (``hypernode.binpack.normal-pod.*``, see docs/topology.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.hypernodes import HyperNode
from berth.api.objects import PodGroup
from berth.cluster.state import ClusterState
from berth.framework.job_info import JobInfo
from berth.framework.plugin import PluginArgumentError
from berth.plugins.network_topology_aware import NetworkTopologyAware
from tests.builders import hypernode, three_tiers, vnode, vpod


def cluster(hypernodes: list[HyperNode], nodes: list) -> ClusterState:
    state = ClusterState()
    state.add_nodes(nodes)
    state.hypernodes = hypernodes
    return state


def job_with(pending: int, running: int = 0) -> JobInfo:
    job = JobInfo(PodGroup("pg1", "c1"))
    for i in range(running):
        job.bound[f"c1/r{i}"] = vpod(f"r{i}", "2", "4G", "pg1")
    for i in range(pending):
        job.pending.append(vpod(f"p{i}", "2", "4G", "pg1"))
    return job


# -- TestNew ----------------------------------------------------------------------------------


def test_default_arguments() -> None:
    plugin = NetworkTopologyAware({})
    assert plugin.weight == 1
    assert plugin.binpack == {"cpu": 1.0, "memory": 1.0}


def test_customized_arguments() -> None:
    plugin = NetworkTopologyAware(
        {
            "weight": 10,
            "hypernode.binpack.cpu": 5,
            "hypernode.binpack.memory": 2,
            "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
            "hypernode.binpack.resources.nvidia.com/gpu": 3,
            "hypernode.binpack.resources.example.com/foo": 4,
        }
    )
    assert plugin.weight == 10
    assert plugin.binpack == {
        "cpu": 5.0,
        "memory": 2.0,
        "nvidia.com/gpu": 3.0,
        "example.com/foo": 4.0,
    }


def test_negative_arguments_fall_back_to_defaults() -> None:
    plugin = NetworkTopologyAware(
        {
            "weight": -1,
            "hypernode.binpack.cpu": -1,
            "hypernode.binpack.memory": -2,
            "hypernode.binpack.resources": "nvidia.com/gpu",
            "hypernode.binpack.resources.nvidia.com/gpu": -3,
        }
    )
    assert plugin.weight == 1
    assert plugin.binpack == {"cpu": 1.0, "memory": 1.0, "nvidia.com/gpu": 1.0}


def test_resources_list_must_be_text() -> None:
    with pytest.raises(PluginArgumentError, match="hypernode.binpack.resources"):
        NetworkTopologyAware({"hypernode.binpack.resources": 3})


# -- TestNetworkTopologyAwareNodeScore ----------------------------------------------------------

EIGHT = [vnode(f"s{i}-n{j}", "2", "4Gi", 10) for i in range(3, 7) for j in (1, 2)]

NODE_SCORES = {
    # The job's first pods: nothing placed yet, every node scores 0.
    "first scheduling": (
        three_tiers(),
        EIGHT,
        [],
        {"s3-n1": 0.0, "s4-n1": 0.0, "s5-n1": 0.0},
    ),
    # Running pods in s3: its nodes score 100, s4 (sharing s1, tier 2) 66.7, s5 (sharing only
    # s0, tier 3) 33.3, on the scale from tier 1 to the cluster (tier 4).
    "LCA tier": (
        three_tiers(),
        EIGHT,
        ["s3-n1", "s3-n2"],
        {"s3-n1": 100.0, "s4-n1": 66.7, "s5-n1": 33.3},
    ),
    # No switch over both trees: nodes under s2 share nothing with the pods in s3.
    "no common HyperNode": (
        [h for h in three_tiers() if h.name != "s0"],
        EIGHT,
        ["s3-n1", "s3-n2"],
        {"s5-n1": 0.0, "s6-n1": 0.0},
    ),
    # Two tiers: the other rack shares the tier-2 switch, half way to the cluster.
    "two tiers": (
        [
            hypernode("s1", 1, "s1-n1", "s1-n2"),
            hypernode("s2", 1, "s2-n1", "s2-n2"),
            hypernode("s0", 2, "s1", "s2"),
        ],
        [vnode(n, "2", "4Gi", 10) for n in ("s1-n1", "s1-n2", "s2-n1", "s2-n2")],
        ["s1-n1"],
        {"s1-n1": 100.0, "s2-n1": 50.0},
    ),
    # One tier: the pods' rack 100, the other rack shares only the cluster.
    "one tier": (
        [hypernode("s1", 1, "s1-n1", "s1-n2"), hypernode("s2", 1, "s2-n1", "s2-n2")],
        [vnode(n, "2", "4Gi", 10) for n in ("s1-n1", "s1-n2", "s2-n1", "s2-n2")],
        ["s1-n1"],
        {"s1-n1": 100.0, "s2-n1": 0.0},
    ),
}


@pytest.mark.parametrize("name", list(NODE_SCORES))
def test_node_score(name: str) -> None:
    hypernodes, nodes, running, expected = NODE_SCORES[name]
    state = cluster(hypernodes, nodes)
    topology = state.topology()
    assert topology is not None
    job = job_with(pending=1, running=len(running))
    placed = np.array([state.rows[n] for n in running], dtype=np.int64)
    plugin = NetworkTopologyAware({"weight": 1})
    # Scored one node at a time, as Volcano's test scores them: the tie-break among equally
    # scored nodes does not enter.
    for node, score in expected.items():
        got = plugin.topology_score(job, topology, placed, np.array([state.rows[node]]))
        assert got[0] == pytest.approx(score, abs=0.05), node


def test_ties_go_to_the_hypernode_holding_more_of_the_job() -> None:
    """Nodes tied on the tier score: the one whose rack holds more of the job's pods wins."""
    state = cluster(three_tiers(), EIGHT)
    topology = state.topology()
    assert topology is not None
    job = job_with(pending=2, running=2)
    placed = np.array([state.rows["s3-n1"], state.rows["s5-n1"]])  # LCA: s0 (tier 3)
    plugin = NetworkTopologyAware({})
    rows = np.array([state.rows[n] for n in ("s4-n1", "s6-n1", "s5-n2")])
    scores = plugin.topology_score(job, topology, placed, rows)
    assert scores[2] > scores[0] == scores[1]


# -- TestHyperNodeOrderFn -------------------------------------------------------------------------


def order_cluster(foo: bool) -> ClusterState:
    """Racks of two nodes: s3 2 cpu/4G, s4 4 cpu/4G, s5 2 cpu/8G, s6 4 cpu/8G per node; with
    ``foo``, the first node of each rack has example.com/foo (8, 8, 16, 16)."""
    shapes = {3: ("2", "4G", "8"), 4: ("4", "4G", "8"), 5: ("2", "8G", "16"), 6: ("4", "8G", "16")}
    nodes = []
    for i, (cpu, mem, amount) in shapes.items():
        for j in (1, 2):
            scalars = {"example.com/foo": amount if j == 1 else "0"} if foo else None
            nodes.append(vnode(f"s{i}-n{j}", cpu, mem, 10, scalars=scalars))
    return cluster(three_tiers(), nodes)


ORDER = {
    "default arguments": (
        {},
        False,
        {"s0": 25.0, "s1": 58.3, "s2": 45.8, "s3": 0.0, "s4": 100.0, "s5": 0.0, "s6": 75.0},
    ),
    "customized arguments": (
        {
            "weight": 10,
            "hypernode.binpack.cpu": 3,
            "hypernode.binpack.memory": 4,
            "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
            "hypernode.binpack.resources.nvidia.com/gpu": 2,
            "hypernode.binpack.resources.example.com/foo": 3,
        },
        True,
        {"s0": 266.7, "s1": 700.0, "s2": 450.0, "s3": 0.0, "s4": 0.0, "s5": 0.0, "s6": 800.0},
    ),
}


@pytest.mark.parametrize("name", list(ORDER))
def test_hypernode_order(name: str) -> None:
    arguments, foo, expected = ORDER[name]
    state = order_cluster(foo)
    topology = state.topology()
    assert topology is not None
    job = JobInfo(PodGroup("pg1", "ns1"))
    scalars = {"example.com/foo": "8"} if foo else None
    for i in (1, 2):
        pod = vpod(f"p{i}", "4", "4G", "pg1", scalars=scalars)
        job.add_pending(pod, state.request_vector(pod.requests))
    plugin = NetworkTopologyAware(arguments)
    for hypernode_name, score in expected.items():
        ids = np.array([topology.names.index(hypernode_name)])
        got = plugin.hypernode_order(job, topology, ids, state)
        assert got[0] == pytest.approx(score, abs=0.05), hypernode_name


def test_switches() -> None:
    """Volcano's enableHyperNodeOrder and enableNodeOrder switch the two rankings off."""
    from berth.framework.framework import Framework
    from tests.builders import config

    on = Framework(config(["network-topology-aware"]))
    assert [p.name for p in on.hypernode_orders] == ["network-topology-aware"]
    assert [p.name for p in on.topology_scorers] == ["network-topology-aware"]
    off = Framework(
        config(
            [
                {
                    "name": "network-topology-aware",
                    "enableHyperNodeOrder": False,
                    "enableNodeOrder": False,
                }
            ]  # fmt: skip
        )
    )
    assert not off.hypernode_orders and not off.topology_scorers
