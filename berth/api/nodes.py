"""Node and NodePool documents → Nodes."""

from __future__ import annotations

from collections.abc import Mapping

from berth.api import schema
from berth.api.fields import canonical, positive_int_annotation
from berth.api.hypernodes import (
    TOPOLOGY_LABEL_PREFIX,
    PoolTier,
    pool_hypernodes,
    pool_switch_labels,
)
from berth.api.keys import (
    GPU_MEMORY_ANNOTATION,
    GPU_TOPOLOGY_ANNOTATION,
    HOSTNAME_LABEL,
    NUMA_STRATEGIES,
    NUMA_STRATEGY_LABEL,
    TOPOLOGY_CORES,
    TOPOLOGY_NUMA,
    TOPOLOGY_SOCKETS,
    TOPOLOGY_THREADS,
    ZONE_LABEL,
    gpu_groups,
)
from berth.api.loaded import Context
from berth.api.objects import CpuTopology, Node
from berth.api.selectors import Taint
from berth.resources import CPU, GPU, PODS

DEFAULT_NODE_PODS = 110


def node_resources(status: schema.NodeStatus) -> dict[str, int]:
    """Allocatable is what pods can use; capacity stands in for resources it does not list."""
    resources = {**canonical(status.capacity), **canonical(status.allocatable)}
    resources.setdefault(PODS, DEFAULT_NODE_PODS)
    return resources


def _taints(spec: schema.NodeSpec) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.value, t.effect) for t in spec.taints)


def _cpu_topology(
    meta: schema.ObjectMeta | schema.TemplateMeta,
    allocatable: Mapping[str, int],
    path: str,
    ctx: Context,
) -> CpuTopology | None:
    """Topology from the annotations of ``meta`` at ``path`` (absent ones count as 1), checked
    against the node's cpus; its NUMA strategy label checked too."""
    annotations = meta.annotations
    strategy = meta.labels.get(NUMA_STRATEGY_LABEL)
    if strategy is not None and strategy not in NUMA_STRATEGIES:
        where = path.replace("annotations", "labels") + f".{NUMA_STRATEGY_LABEL}"
        ctx.error(where, f"{strategy!r} is not one of {', '.join(NUMA_STRATEGIES)}")
    keys = (TOPOLOGY_SOCKETS, TOPOLOGY_CORES, TOPOLOGY_THREADS, TOPOLOGY_NUMA)
    if not any(key in annotations for key in keys):
        return None
    values = [positive_int_annotation(annotations, key, path, ctx) for key in keys]
    sockets, cores, threads, numa = (value or 1 for value in values)
    topology = CpuTopology(sockets, cores, threads, numa)
    if cores % numa:
        ctx.error(
            f"{path}.{TOPOLOGY_NUMA}",
            f"{numa} NUMA nodes per socket do not split its {cores} cores evenly",
        )
        return None
    millicores = allocatable.get(CPU, 0)
    if topology.cpus * 1000 < millicores:
        ctx.error(
            f"{path}.{TOPOLOGY_CORES}",
            f"the topology has {topology.cpus} cpus, fewer than the node's allocatable cpu "
            f"{millicores / 1000:g}",
        )
        return None
    return topology


def _check_gpu_topology(
    annotations: Mapping[str, str], allocatable: Mapping[str, int], path: str, ctx: Context
) -> None:
    text = annotations.get(GPU_TOPOLOGY_ANNOTATION)
    if text is None:
        return
    where = f"{path}.{GPU_TOPOLOGY_ANNOTATION}"
    try:
        groups = gpu_groups(text)
    except ValueError as exc:
        ctx.error(where, str(exc))
        return
    devices = -(-allocatable.get(GPU, 0) // 1000)
    beyond = [d for group in groups for d in group if d >= devices]
    if beyond:
        ctx.error(where, f"device {beyond[0]} beyond the node's {devices} GPUs")


def convert_node(doc: schema.NodeDoc, ctx: Context) -> None:
    meta = doc.metadata
    labels = dict(meta.labels)
    labels.setdefault(HOSTNAME_LABEL, meta.name)
    node = Node(
        name=meta.name,
        labels=labels,
        annotations=dict(meta.annotations),
        allocatable=node_resources(doc.status),
        taints=_taints(doc.spec),
        unschedulable=doc.spec.unschedulable,
        cpu_topology=_cpu_topology(meta, node_resources(doc.status), "metadata.annotations", ctx),
    )
    positive_int_annotation(meta.annotations, GPU_MEMORY_ANNOTATION, "metadata.annotations", ctx)
    _check_gpu_topology(meta.annotations, node.allocatable, "metadata.annotations", ctx)
    ctx.out.add(ctx.out.nodes, node, ctx.origin())


def _pool_topology(doc: schema.NodePoolDoc, ctx: Context) -> list[dict[str, str]]:
    """The switch labels of each node of the pool (none without ``spec.topology``), and its
    HyperNodes filed with the other objects when ``hyperNodes`` is on."""
    topology = doc.spec.topology
    if topology is None:
        return []
    tiers = tuple(PoolTier(t.name, t.size) for t in topology.tiers)
    names = [t.name for t in tiers]
    for index, name in enumerate(names):
        if name in names[:index]:
            ctx.error(f"spec.topology.tiers[{index}].name", f"duplicate tier name {name!r}")
            return []
    for key in doc.spec.template.metadata.labels:
        if key.startswith(TOPOLOGY_LABEL_PREFIX) and key[len(TOPOLOGY_LABEL_PREFIX) :] in names:
            ctx.warn(
                f"spec.template.metadata.labels.{key}",
                "ignored (spec.topology sets each node's switch labels)",
            )
    pool, count = doc.metadata.name, doc.spec.count
    if topology.hyper_nodes:
        origin = ctx.origin()
        for hypernode in pool_hypernodes(pool, count, tiers):
            ctx.out.add(ctx.out.hypernodes, hypernode, origin)
    return pool_switch_labels(pool, count, tiers)


def convert_node_pool(doc: schema.NodePoolDoc, ctx: Context) -> None:
    pool, spec = doc.metadata.name, doc.spec
    template = spec.template
    base_labels = template.metadata.labels
    if HOSTNAME_LABEL in base_labels:
        ctx.warn(
            f"spec.template.metadata.labels.{HOSTNAME_LABEL}",
            "ignored (each node's hostname label is its own name)",
        )
    zones = spec.zones
    if zones and ZONE_LABEL in base_labels:
        ctx.warn("spec.zones", f"ignored (the template sets {ZONE_LABEL})")
        zones = []
    allocatable = node_resources(template.status)
    _check_gpu_topology(
        template.metadata.annotations, allocatable, "spec.template.metadata.annotations", ctx
    )
    taints = _taints(template.spec)
    topology = _cpu_topology(
        template.metadata, allocatable, "spec.template.metadata.annotations", ctx
    )
    positive_int_annotation(
        template.metadata.annotations,
        GPU_MEMORY_ANNOTATION,
        "spec.template.metadata.annotations",
        ctx,
    )
    width = len(str(spec.count - 1))
    origin = ctx.origin()
    switches = _pool_topology(doc, ctx)
    for index in range(spec.count):
        name = f"{pool}-{index:0{width}d}"
        labels = {**base_labels, HOSTNAME_LABEL: name}
        if switches:
            labels.update(switches[index])
        if zones:
            labels[ZONE_LABEL] = zones[index % len(zones)]
        node = Node(
            name=name,
            labels=labels,
            annotations=dict(template.metadata.annotations),
            allocatable=dict(allocatable),
            taints=taints,
            unschedulable=template.spec.unschedulable,
            cpu_topology=topology,
        )
        ctx.out.add(ctx.out.nodes, node, origin)
