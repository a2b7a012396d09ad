"""A cluster for a trace that does not say what it ran on (ITP, Philly, Helios, Alibaba 2017).

The rule is stated so results can be reproduced and argued with: identical nodes of the shape
the trace's pods assume (``gpus_per_node`` GPUs with ``cpu_per_gpu`` and ``memory_per_gpu``
each, or a CPU node for CPU-only traces), as many as make the trace's mean demand a
``target_load`` fraction of capacity, and never fewer than the largest job needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from berth.api.keys import ZONE_LABEL
from berth.api.objects import Node, Pod
from berth.resources import CPU, GIB, GPU, MEMORY, MIB, PODS

DEFAULT_TARGET_LOAD = 0.7
#: Node shape for CPU-only traces: 96 cores, 384 GiB.
CPU_NODE = {CPU: 96_000, MEMORY: 384 * GIB}


@dataclass(frozen=True, slots=True)
class SizingRule:
    gpus_per_node: int = 8
    cpu_per_gpu: int = 8_000  # millicores
    memory_per_gpu: int = 64 * 1024  # MiB
    target_load: float = DEFAULT_TARGET_LOAD
    zones: int = 2

    def describe(self, count: int, kind: str) -> str:
        return (
            f"cluster sized from the trace: {count} {kind} nodes so that its mean demand is "
            f"{self.target_load:.0%} of capacity (use --cluster to choose nodes yourself)"
        )


def size_cluster(pods: Sequence[Pod], rule: SizingRule) -> tuple[list[Node], str]:
    """Nodes for ``pods`` (which carry submit times and durations) and a sentence saying how
    they were chosen."""
    gpu_pods = [p for p in pods if p.requests.get(GPU, 0) > 0]
    resource, per_node = (GPU, rule.gpus_per_node * 1000) if gpu_pods else (CPU, CPU_NODE[CPU])
    if gpu_pods:
        shape = {
            GPU: per_node,
            CPU: rule.gpus_per_node * rule.cpu_per_gpu,
            MEMORY: rule.gpus_per_node * rule.memory_per_gpu * MIB,
        }
    else:
        shape = dict(CPU_NODE)
    shape[PODS] = 110
    demand_area = 0.0
    first = math.inf
    last = -math.inf
    largest_pod = 0
    largest_group: dict[str, int] = {}
    for pod in pods:
        amount = pod.requests.get(resource, 0)
        first = min(first, pod.submit_time)
        last = max(last, pod.submit_time + (pod.duration or 0.0))
        largest_pod = max(largest_pod, amount)
        key = pod.job_key
        largest_group[key] = largest_group.get(key, 0) + amount
        if pod.duration is not None:
            demand_area += amount * pod.duration
    span = max(last - first, 1.0) if pods else 1.0  # first arrival to last departure
    mean_demand = demand_area / span
    biggest_job = max(largest_group.values(), default=0)
    count = max(
        1,
        math.ceil(biggest_job / per_node),
        math.ceil(mean_demand / (rule.target_load * per_node)),
    )
    if largest_pod > per_node:
        # A single pod larger than a node: grow the node shape rather than make it unplaceable.
        factor = math.ceil(largest_pod / per_node)
        shape = {name: amount * factor for name, amount in shape.items()}
        shape[PODS] = 110
    kind = f"{rule.gpus_per_node}-GPU" if gpu_pods else "96-core"
    width = len(str(count - 1))
    nodes = [
        Node(
            name=f"trace-node-{i:0{width}d}",
            labels={ZONE_LABEL: f"zone-{i % rule.zones}"},
            allocatable=dict(shape),
        )
        for i in range(count)
    ]
    return nodes, rule.describe(count, kind)
