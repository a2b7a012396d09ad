"""Network topology invariants over random racked clusters and gangs: a hard-mode gang never
spans two HyperNodes of its allowed tier, gangs stay all-or-nothing, and the lowest tier that
fits is the one chosen."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.hypernodes import PoolTier, pool_hypernodes, pool_switch_labels
from berth.api.objects import NetworkTopology, Node, Pod, PodGroup
from berth.resources import GPU
from tests.builders import config, scheduler

RACK = "topology.berth.io/rack"
SPINE = "topology.berth.io/spine"
CFG = config(["gang", "predicates", "nodeorder", "network-topology-aware"])


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    count = draw(st.integers(4, 24))
    rack = draw(st.integers(1, 4))
    spine = draw(st.integers(1, 3))
    gpus = [draw(st.sampled_from([2, 4, 8])) for _ in range(count)]
    gangs = [
        (
            draw(st.integers(1, 6)),  # workers
            draw(st.sampled_from([1, 2, 4])),  # GPUs per worker
            draw(st.sampled_from([1, 2, 3, None])),  # highestTierAllowed
            draw(st.booleans()),  # hard
        )
        for _ in range(draw(st.integers(1, 5)))
    ]
    return {"count": count, "tiers": (rack, spine), "gpus": gpus, "gangs": gangs}


def build(spec: dict):
    tiers = (PoolTier("rack", spec["tiers"][0]), PoolTier("spine", spec["tiers"][1]))
    labels = pool_switch_labels("p", spec["count"], tiers)
    nodes = [
        Node(f"p-{i:02d}", labels=labels[i], allocatable={"cpu": 64000, GPU: g * 1000, "pods": 110})
        for i, g in enumerate(spec["gpus"])
    ]
    groups, pods = [], []
    for j, (workers, gpus, tier, hard) in enumerate(spec["gangs"]):
        name = f"g{j}"
        groups.append(
            PodGroup(name, min_member=workers, network_topology=NetworkTopology(hard, tier))
        )
        pods += [
            Pod(f"{name}-{k}", requests={"cpu": 1000, GPU: gpus * 1000, "pods": 1}, group=name)
            for k in range(workers)
        ]
    s = scheduler(nodes, CFG, groups=groups)
    s.state.hypernodes = pool_hypernodes("p", spec["count"], tiers)
    return s, nodes, pods


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_hard_gangs_stay_within_one_hypernode_of_their_tier(spec: dict) -> None:
    s, nodes, pods = build(spec)
    for pod in pods:
        s.submit(pod)
    binds = {b.pod.name: b.node for b in s.run_session(0.0)}
    binds.update({b.pod.name: b.node for b in s.run_session(1.0)})
    labels = {n.name: n.labels for n in nodes}
    for j, (workers, _, tier, hard) in enumerate(spec["gangs"]):
        placed = [binds[p] for p in binds if p.startswith(f"g{j}-")]
        assert len(placed) in (0, workers)  # all or nothing
        if not placed or not hard:
            continue
        highest = 2 if tier is None else tier
        if highest >= 3:
            continue  # above every HyperNode: the cluster as a whole
        key = RACK if highest == 1 else SPINE
        assert len({labels[node][key] for node in placed}) == 1


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_a_gang_that_fits_one_rack_gets_one_rack(spec: dict) -> None:
    """The first gang, alone on an empty cluster, with a whole rack's worth of room in some
    rack and hard mode up to the spine tier, lands in one rack."""
    spec = {**spec, "gangs": [(*spec["gangs"][0][:2], 2, True)]}
    workers, gpus = spec["gangs"][0][:2]
    s, nodes, pods = build(spec)
    racks: Counter[str] = Counter()
    for node in nodes:
        racks[node.labels[RACK]] += node.allocatable[GPU] // (gpus * 1000)
    for pod in pods:
        s.submit(pod)
    binds = {b.pod.name: b.node for b in s.run_session(0.0)}
    if max(racks.values()) >= workers:
        labels = {n.name: n.labels[RACK] for n in nodes}
        assert len(binds) == workers
        assert len({labels[node] for node in binds.values()}) == 1
