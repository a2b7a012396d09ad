"""cpusets through the scheduler: LSE/LSR pods asking whole cores get cpus of their own on
nodes that describe their CPUs, LS pods none; the filter; giving cpus back; BE's cap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from berth.api.keys import NUMA_STRATEGY_LABEL, RESOURCE_SPEC_ANNOTATION, RESOURCE_STATUS_ANNOTATION
from berth.api.objects import CpuTopology
from berth.api.qos import QOS_LABEL
from berth.cluster.cpusets import cpuset_ask
from tests.builders import config, node, pod, run, scheduler

TWO_SOCKETS = CpuTopology(2, 4, 2, 1)  # 16 cpus: socket 0 = cpus 0-7, socket 1 = 8-15


def topo_node(name: str, topology: CpuTopology | None = TWO_SOCKETS, **labels: str):
    n = node(name, cpu=16000, mem=64 * 1024, labels=labels or None)
    n.cpu_topology = topology
    return n


def qos_pod(name: str, qos: str, cpu: int, policy: str | None = None):
    p = pod(name, cpu=cpu, mem=1024, labels={QOS_LABEL: qos})
    if policy:
        p.annotations[RESOURCE_SPEC_ANNOTATION] = json.dumps({"preferredCPUBindPolicy": policy})
    return p


def test_who_gets_a_cpuset() -> None:
    assert cpuset_ask(qos_pod("a", "LSE", 4000)) == (4, "FullPCPUs")
    assert cpuset_ask(qos_pod("b", "LSR", 2000, "SpreadByPCPUs")) == (2, "SpreadByPCPUs")
    assert cpuset_ask(qos_pod("c", "LSE", 1500)) is None  # not whole cores
    assert cpuset_ask(qos_pod("d", "LS", 4000)) is None
    assert cpuset_ask(qos_pod("e", "BE", 4000)) is None


def test_lse_pods_get_cpus_of_their_own_and_ls_pods_none() -> None:
    s = scheduler([topo_node("n0")])
    pods = [
        qos_pod("lse-a", "LSE", 4000),
        qos_pod("lsr-b", "LSR", 6000),
        qos_pod("ls-c", "LS", 4000),
    ]
    assert set(run(s, pods).values()) == {"n0"}
    sets = {p.name: p.cpuset for p in pods}
    assert sets == {"lse-a": "0-3", "lsr-b": "8-13", "ls-c": ""}
    assert json.loads(pods[0].annotations[RESOURCE_STATUS_ANNOTATION]) == {"cpuset": "0-3"}
    assert s.state.cpus.unheld[0] == 6 and s.state.cpus.lse_held[0] == 4
    # BE may use every cpu but the LSE pod's
    assert s.state.cpus.be_cap(1).tolist() == [12000.0]


def test_cpus_come_back_when_the_pod_leaves() -> None:
    s = scheduler([topo_node("n0")])
    first = qos_pod("first", "LSE", 8000)
    run(s, [first])
    s.release(first)
    assert s.state.cpus.unheld[0] == 16 and not s.state.cpus.held
    second = qos_pod("second", "LSE", 16000)
    assert run(s, [second]) == {"second": "n0"}
    assert second.cpuset == "0-15"


FILTER = [
    # name, nodes (topology or None), pod (qos, cpu, policy), fits
    ("enough unheld cpus", [TWO_SOCKETS], ("LSE", 16000, None), ["n0"]),
    ("more than the node's cpus", [TWO_SOCKETS], ("LSE", 18000, None), []),
    ("FullPCPUs needs whole cores", [TWO_SOCKETS], ("LSE", 3000, None), []),
    ("SpreadByPCPUs takes an odd count", [TWO_SOCKETS], ("LSE", 3000, "SpreadByPCPUs"), ["n0"]),
    ("a node without a topology is refused", [None, TWO_SOCKETS], ("LSR", 2000, None), ["n1"]),
    ("LS pods go anywhere", [None, TWO_SOCKETS], ("LS", 2000, None), ["n0", "n1"]),
]  # fmt: skip


@pytest.mark.parametrize("name,topologies,ask,fits", FILTER, ids=[r[0] for r in FILTER])
def test_filter(name, topologies, ask, fits) -> None:
    nodes = [topo_node(f"n{i}", t) for i, t in enumerate(topologies)]
    s = scheduler(nodes, config(["resource-fit"]))
    (plugin,) = [f for f in s.framework.filters if f.name == "resource-fit"]
    cls = s.search.compile(qos_pod("p", *ask))
    mask = plugin.filter(cls, s.state, np.arange(len(nodes)))
    assert [n.name for n, ok in zip(nodes, mask, strict=True) if ok] == fits


def test_a_refused_pod_says_why() -> None:
    s = scheduler([topo_node("n0", None), topo_node("n1")])
    big = qos_pod("big", "LSE", 12000, "SpreadByPCPUs")
    run(s, [qos_pod("first", "LSE", 8000), big])
    # n0 has room but no topology; n1 has 8 cpus left for the 12 asked
    assert s.pending_reason(big) == (
        "0/2 nodes available: 1 insufficient cpu, "
        "1 no CPU topology with 12 cpus for a cpuset (SpreadByPCPUs)"
    )


def test_numa_strategy_label_spreads_instead_of_packing() -> None:
    numa = CpuTopology(1, 8, 1, 2)  # one socket, NUMA 0 = cpus 0-3, NUMA 1 = cpus 4-7
    packed = topo_node("packed", numa)
    spread = topo_node("spread", numa, **{NUMA_STRATEGY_LABEL: "LeastAllocated"})
    for n in (packed, spread):
        s = scheduler([n])
        first, second = qos_pod("a", "LSE", 1000), qos_pod("b", "LSE", 1000)
        run(s, [first])
        run(s, [second])
        got = (first.cpuset, second.cpuset)
        assert got == (("0", "1") if n is packed else ("0", "4"))


def test_topology_changes_are_refused_while_cpus_are_held() -> None:
    s = scheduler([topo_node("n0")])
    run(s, [qos_pod("a", "LSE", 2000)])
    changed = topo_node("n0", CpuTopology(1, 8, 2, 1))
    with pytest.raises(ValueError, match="CPU topology changed while pods hold its cpus"):
        s.state.update_node(changed)
