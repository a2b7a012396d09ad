"""cpusets under random pods, topologies, policies and releases: no cpu is ever held by two
pods, a node's unheld and LSE-held counts match what its pods hold, and every LSE/LSR pod on
a node with a topology holds exactly the cores it asked for."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.keys import RESOURCE_SPEC_ANNOTATION
from berth.api.objects import CpuTopology
from berth.api.qos import QOS_LABEL
from berth.cluster.cpusets import _parse, cpuset_ask
from tests.builders import node, pod, run, scheduler

TOPOLOGIES = st.sampled_from(
    [CpuTopology(1, 4, 2, 1), CpuTopology(2, 4, 2, 2), CpuTopology(2, 2, 1, 1), None]
)
PODS = st.lists(
    st.tuples(
        st.sampled_from(["LSE", "LSR", "LS", "BE"]),
        st.integers(1, 10),
        st.sampled_from(["FullPCPUs", "SpreadByPCPUs"]),
        st.booleans(),  # released after the first round
    ),
    min_size=1,
    max_size=14,
)


def _check(s, pods) -> None:
    state, cpus = s.state, s.state.cpus
    owners: dict[tuple[int, int], str] = {}
    for p in pods:
        if not p.bound_node or p.key not in state.pods_on[state.rows[p.bound_node]]:
            assert p.key not in cpus.held
            continue
        row = state.rows[p.bound_node]
        ask = cpuset_ask(p)
        if ask is None or not cpus.threads[row]:
            assert p.key not in cpus.held
            continue
        held_row, held, _ = cpus.held[p.key]
        assert held_row == row and sorted(held) == _parse(p.cpuset) and len(held) == ask[0]
        for cpu in held:
            assert (row, cpu) not in owners, f"cpu {cpu} of row {row} held twice"
            owners[(row, cpu)] = p.name
    for row in range(state.n):
        mine = [c for (r, c) in owners if r == row]
        assert cpus.unheld[row] == cpus.total[row] - len(mine)
        assert not (cpus.free[row] & {c for (r, c) in owners if r == row})
        lse = sum(len(h) for k, (r, h, is_lse) in cpus.held.items() if r == row and is_lse)
        assert cpus.lse_held[row] == lse


@settings(max_examples=60, deadline=None)
@given(st.lists(TOPOLOGIES, min_size=1, max_size=3), PODS)
def test_no_cpu_is_held_twice(topologies, specs) -> None:
    nodes = []
    for i, topology in enumerate(topologies):
        n = node(f"n{i}", cpu=16000, mem=64 * 1024)
        n.cpu_topology = topology
        nodes.append(n)
    s = scheduler(nodes)
    pods = []
    for i, (qos, cores, policy, _) in enumerate(specs):
        p = pod(f"p{i}", cpu=cores * 1000, mem=256, labels={QOS_LABEL: qos})
        p.annotations[RESOURCE_SPEC_ANNOTATION] = json.dumps({"preferredCPUBindPolicy": policy})
        pods.append(p)
    run(s, pods)
    _check(s, pods)
    for p, (_, _, _, release) in zip(pods, specs, strict=True):
        if release and p.bound_node:
            s.release(p)
            p.bound_node = ""
    run(s, [])
    _check(s, pods)
