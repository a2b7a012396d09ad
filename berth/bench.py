"""Scheduling throughput benchmark (``berth bench``).

Builds a cluster of heterogeneous nodes already holding running pods, then times the scheduler
placing a batch of pending pods: only the sessions are timed, never the set-up and never any
simulator events. Scenarios follow kube-scheduler's performance tests: plain pods, zone spread,
required hostname anti-affinity, gangs, and a mix of all; ``gpu-share`` is a cluster of 8-GPU
nodes where half the running pods hold shares of a device and the pending pods ask shares
(0.2 to 0.7 of a device) or 1, 2 or 4 whole GPUs, placed per device. ``topology`` racks the
nodes in three tiers of switches (racks of 20 nodes, spines of 10 racks, 5 spines under each
core switch) described by HyperNodes, and the pending pods are gangs of 64 workers (16 cores,
64 GiB each) that must share a spine (hard mode, tier 2), under network-topology-aware.
``dra`` is the 8-GPU cluster with its GPUs published as DRA ResourceSlices (one per node, a
DeviceClass for the driver): every eighth running pod holds one GPU through a claim, and the
pending pods ask 1, 2 or 4 GPUs through ResourceClaimTemplates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import berth.actions  # noqa: F401  (registers the built-in actions and plugins)
import berth.plugins  # noqa: F401
from berth import native
from berth.api.dra import (
    ClaimSpec,
    Device,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    NodeSelection,
    PodClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from berth.api.hypernodes import PoolTier, pool_hypernodes, pool_switch_labels
from berth.api.keys import HOSTNAME_LABEL, ZONE_LABEL
from berth.api.objects import NetworkTopology, Node, Pod, PodGroup
from berth.api.selectors import (
    Affinity,
    LabelSelector,
    PodAffinityTerm,
    Requirement,
    SpreadConstraint,
)
from berth.collector import new_objects_only
from berth.defaults import BENCH_SCENARIOS
from berth.framework.config import PluginSpec
from berth.framework.config_files import load_config
from berth.framework.scheduler import Scheduler
from berth.plugins.network_topology_aware import NetworkTopologyAware
from berth.resources import GIB, MIB

#: Sizes beyond these would exhaust memory building the cluster, not measure the scheduler.
MAX_NODES = 1_000_000
MAX_PODS = 20_000_000
#: (cpu millicores, memory bytes, GPUs in milli) node shapes, drawn with the given weights.
_SHAPES = [
    ((16_000, 64 * GIB, 0), 0.3),
    ((32_000, 128 * GIB, 0), 0.4),
    ((64_000, 256 * GIB, 0), 0.2),
    ((96_000, 768 * GIB, 8_000), 0.1),
]
_ZONES = 10
#: The gpu-share scenario's node: 8 GPUs.
_GPU_NODE = (96_000, 768 * GIB, 8_000)
#: Pending GPU asks of gpu-share, in milli-GPU, cycled.
_GPU_ASKS = (200, 500, 1000, 300, 700, 2000, 250, 1000, 4000, 500)
#: The topology scenario's switches (nodes per rack, racks per spine, spines per core) and
#: gangs (workers, and the highest tier they may span).
_SWITCHES = (PoolTier("rack", 20), PoolTier("spine", 10), PoolTier("core", 5))
_TOPOLOGY_GANG = 64
#: The dra scenario: its driver, and the GPUs pending pods ask through their claims, cycled.
_DRA_DRIVER = "gpu.nvidia.com"
_DRA_ASKS = (1, 1, 2, 1, 4)
_TOPOLOGY_TIER = 2


NETWORK_TOPOLOGY_AWARE = NetworkTopologyAware.name


class BenchError(ValueError):
    pass


def build_nodes(
    n: int, rng: np.random.Generator, gpu_only: bool = False, racked: bool = False
) -> list[Node]:
    """``n`` nodes of mixed shapes over ten zones; ``racked``: labelled with their switches
    (see ``_SWITCHES``)."""
    picks = rng.choice(len(_SHAPES), size=n, p=[w for _, w in _SHAPES])
    switches = pool_switch_labels("node", n, _SWITCHES) if racked else None
    nodes = []
    for i, pick in enumerate(picks):
        cpu, memory, gpu = _GPU_NODE if gpu_only else _SHAPES[pick][0]
        labels = {ZONE_LABEL: f"zone-{i % _ZONES}", "node.berth.io/shape": str(pick)}
        if switches is not None:
            labels.update(switches[i])
        nodes.append(
            Node(
                name=f"node-{i:05d}",
                labels=labels,
                allocatable={"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpu, "pods": 110},
            )
        )
    return nodes


def _selector(app: str) -> LabelSelector:
    return LabelSelector((Requirement("app", "In", (app,)),))


def _pod(name: str, app: str, cpu: int, memory: int, **spec: Any) -> Pod:
    return Pod(
        name=name, labels={"app": app}, requests={"cpu": cpu, "memory": memory, "pods": 1}, **spec
    )


def pending_pods(
    scenario: str, count: int, rng: np.random.Generator
) -> tuple[list[PodGroup], list[Pod]]:
    groups: list[PodGroup] = []
    pods: list[Pod] = []
    shapes = [(500, 1 * GIB), (1000, 2 * GIB), (2000, 4 * GIB)]
    kinds = [scenario] if scenario != "mixed" else ["basic", "spread", "anti-affinity", "gang"]
    i = 0
    while len(pods) < count:
        kind = kinds[i % len(kinds)]
        cpu, memory = shapes[i % len(shapes)]
        name = f"pending-{i:06d}"
        if kind == "basic":
            pods.append(_pod(name, f"basic-{i % 3}", cpu, memory))
        elif kind == "spread":
            spread = (SpreadConstraint(1, ZONE_LABEL, "DoNotSchedule", _selector("spread")),)
            pods.append(_pod(name, "spread", 500, GIB, spread=spread))
        elif kind == "anti-affinity":
            term = PodAffinityTerm(_selector("anti"), HOSTNAME_LABEL)
            pods.append(_pod(name, "anti", 500, GIB, affinity=Affinity(anti_required=(term,))))
        elif kind == "gpu-share":
            pod = _pod(name, f"gpu-{i % 3}", cpu, memory)
            pod.requests["nvidia.com/gpu"] = _GPU_ASKS[i % len(_GPU_ASKS)]
            pods.append(pod)
        elif kind == "dra":
            pod = _pod(name, f"dra-{i % 3}", cpu, memory)
            ask = _DRA_ASKS[i % len(_DRA_ASKS)]
            pod.resource_claims = (PodClaim("gpus", template_name=f"gpus-{ask}"),)
            pods.append(pod)
        elif kind == "topology":
            size = min(_TOPOLOGY_GANG, count - len(pods))
            topology = NetworkTopology(hard=True, highest_tier=_TOPOLOGY_TIER)
            group = PodGroup(name=f"gang-{i:06d}", min_member=size, network_topology=topology)
            groups.append(group)
            pods.extend(
                _pod(f"{group.name}-{t}", group.name, 16_000, 64 * GIB, group=group.name)
                for t in range(size)
            )
        elif kind == "gang":
            size = int(rng.integers(8, 65))
            size = min(size, count - len(pods))
            group = PodGroup(name=f"gang-{i:06d}", min_member=size)
            groups.append(group)
            pods.extend(
                _pod(f"{group.name}-{t}", group.name, cpu, memory, group=group.name)
                for t in range(size)
            )
        i += 1
    return groups, pods


#: ``(stage, done, total)`` as the cluster is built and the pods are scheduled.
Stage = Callable[[str, int, int], None]


def run_bench(
    scenario: str,
    nodes: int,
    running: int,
    pods: int,
    seed: int = 0,
    search: str = "full",
    stage: Stage | None = None,
) -> dict[str, Any]:
    """Build the cluster (untimed), then time the scheduler placing the pending pods; ``stage``
    hears how far each step is."""
    report = stage or (lambda _what, _done, _total: None)
    if scenario not in BENCH_SCENARIOS:
        raise BenchError(
            f"unknown scenario {scenario!r} (expected one of {', '.join(BENCH_SCENARIOS)})"
        )
    if nodes < 1 or running < 0 or pods < 1:
        raise BenchError("--nodes and --pods must be >= 1 and --running >= 0")
    for flag, value, most in (
        ("--nodes", nodes, MAX_NODES),
        ("--running", running, MAX_PODS),
        ("--pods", pods, MAX_PODS),
    ):
        if value > most:
            raise BenchError(f"{flag} {value:,}: at most {most:,} (the cluster is built in memory)")
    if seed < 0:
        raise BenchError("--seed must be >= 0")
    rng = np.random.default_rng(seed)
    config = load_config(None)
    config.search.mode = search
    racked = scenario == "topology"
    if racked:
        config.tiers[-1].append(PluginSpec(NETWORK_TOPOLOGY_AWARE))
    scheduler = Scheduler(config, seed=seed)
    gpu_share = scenario == "gpu-share"
    dra = scenario == "dra"
    node_list = build_nodes(nodes, rng, gpu_only=gpu_share or dra, racked=racked)
    if dra:  # the GPUs are published as ResourceSlices instead
        for node in node_list:
            node.allocatable.pop("nvidia.com/gpu")
    report("adding nodes", 0, nodes)
    for node in node_list:
        scheduler.add_node(node)
    if dra:
        scheduler.set_dra(dra_objects(node_list))
    if racked:
        scheduler.state.hypernodes = pool_hypernodes("node", nodes, _SWITCHES)
    report("adding nodes", nodes, nodes)
    _fill(
        scheduler,
        node_list,
        running,
        rng,
        gpu_share,
        lambda done: report("placing running pods", done, running),
        dra,
    )
    groups, pending = pending_pods(scenario, pods, rng)
    for group in groups:
        scheduler.add_group(group)
    for pod in pending:
        scheduler.submit(pod)
    scheduled = 0
    report("scheduling (timed)", 0, len(pending))
    # The cluster just built is frozen out of the collector, as a simulation's inputs are: a
    # full collection would otherwise walk its running pods, about a fifth of the timed
    # seconds whenever one happens to fall inside them.
    with new_objects_only():
        start = time.perf_counter()
        while scheduler.has_waiting:
            binds = scheduler.run_session(0.0)
            if not binds:
                break
            scheduled += len(binds)
            report("scheduling (timed)", scheduled, len(pending))
        seconds = time.perf_counter() - start
    return {
        "scenario": scenario,
        "search": search,
        "nodes": nodes,
        "running": running,
        "pods": len(pending),
        "scheduled": scheduled,
        "unschedulable": len(pending) - scheduled,
        "seconds": round(seconds, 4),
        "pods_per_second": round(scheduled / seconds, 1) if seconds > 0 else 0.0,
        "modules": native.MODE,  # whether the placing path ran compiled (berth.native)
    }


def _fill(
    scheduler: Scheduler,
    nodes: list[Node],
    running: int,
    rng: np.random.Generator,
    shares: bool = False,
    done: Callable[[int], None] | None = None,
    claims: bool = False,
) -> None:
    """Place ``running`` small pods round-robin (untimed), labelled with 1,000 apps so that
    spread and affinity selectors have existing pods to count; with ``shares`` every other
    one holds a quarter of a GPU device. ``done`` hears the count every 10,000 pods."""
    order = rng.permutation(len(nodes))
    for i in range(running):
        node = nodes[order[i % len(nodes)]]
        pod = _pod(f"running-{i:06d}", f"app-{i % 1000}", 250, 512 * MIB)
        if shares and i % 2 == 0:
            pod.requests["nvidia.com/gpu"] = 250
        if claims and i % 8 == 0:
            pod.resource_claims = (PodClaim("gpus", template_name="gpus-1"),)
            scheduler.state.dra.map_pod(pod)  # type: ignore[union-attr]
        scheduler.place_bound(pod, node.name)
        if done is not None and (i + 1) % 10_000 == 0:
            done(i + 1)
    if done is not None:
        done(running)


def dra_objects(nodes: list[Node]) -> list[object]:
    """The dra scenario's DeviceClass, claim templates (1, 2 and 4 GPUs) and one slice of 8
    GPUs per node."""
    objects: list[object] = [
        DeviceClass(_DRA_DRIVER, (f'device.driver == "{_DRA_DRIVER}"',)),
    ]
    for count in sorted(set(_DRA_ASKS)):
        request = DeviceRequest("gpu", ExactRequest(_DRA_DRIVER, count=count))
        objects.append(ResourceClaimTemplate(f"gpus-{count}", spec=ClaimSpec((request,))))
    for node in nodes:
        devices = tuple(
            Device(f"gpu-{k}", attributes={"index": k, "productName": "A100"}) for k in range(8)
        )
        objects.append(
            ResourceSlice(
                f"{node.name}-gpus",
                _DRA_DRIVER,
                node.name,
                selection=NodeSelection(node_name=node.name),
                devices=devices,
            )
        )
    return objects
