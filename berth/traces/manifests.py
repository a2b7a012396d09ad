"""Trace objects back into Kubernetes-shaped manifests — the inverse of ``berth.api.manifest``
for the fields traces use — so a converted trace is ordinary YAML that ``berth validate`` and
``berth simulate --workload`` read like any other workload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from berth.api.keys import (
    DEFAULT_QUEUE,
    DURATION_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
)
from berth.api.nodes import DEFAULT_NODE_PODS
from berth.api.objects import Node, Pod, PodGroup, Queue
from berth.api.schema import NODE_API, POD_API, PRIORITY_CLASS_API, VOLCANO_API
from berth.api.selectors import Affinity
from berth.resources import PODS, format_quantity
from berth.traces.model import TraceJob
from berth.traces.queues import QueueRule


def to_manifests(job: TraceJob) -> list[dict[str, Any]]:
    """The PodGroup, then its Pods."""
    return [pod_group_manifest(job.group)] + [pod_manifest(pod) for pod in job.pods]


def seconds(value: float) -> str:
    """A time for an annotation: exact (``repr`` round-trips a float), without a needless .0."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _resources(amounts: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in amounts.items() if name != PODS}


def _metadata(name: str, namespace: str, **fields: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace != "default":
        meta["namespace"] = namespace
    meta.update({key: value for key, value in fields.items() if value})
    return meta


def pod_group_manifest(group: PodGroup) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": group.min_member}
    if group.min_resources:
        spec["minResources"] = _resources(group.min_resources)
    if group.queue != DEFAULT_QUEUE:
        spec["queue"] = group.queue
    if group.priority_class_name:
        spec["priorityClassName"] = group.priority_class_name
    topology = group.network_topology
    if topology is not None:
        spec["networkTopology"] = {"mode": "hard" if topology.hard else "soft"}
        if topology.highest_tier is not None:
            spec["networkTopology"]["highestTierAllowed"] = topology.highest_tier
    annotations = {SUBMIT_TIME_ANNOTATION: seconds(group.submit_time)}
    return {
        "apiVersion": VOLCANO_API,
        "kind": "PodGroup",
        "metadata": _metadata(group.name, group.namespace, annotations=annotations),
        "spec": spec,
    }


def pod_manifest(pod: Pod) -> dict[str, Any]:
    annotations = dict(pod.annotations)
    if pod.group:
        annotations[GROUP_NAME_ANNOTATION] = pod.group
    annotations[SUBMIT_TIME_ANNOTATION] = seconds(pod.submit_time)
    if pod.duration is not None:
        annotations[DURATION_ANNOTATION] = seconds(pod.duration)
    container = {"name": "main", "resources": {"requests": _resources(pod.requests)}}
    spec: dict[str, Any] = {"containers": [container]}
    if pod.priority_class_name:
        spec["priorityClassName"] = pod.priority_class_name
    elif pod.priority:
        spec["priority"] = pod.priority
    affinity = _node_affinity(pod.affinity)
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": POD_API,
        "kind": "Pod",
        "metadata": _metadata(pod.name, pod.namespace, labels=pod.labels, annotations=annotations),
        "spec": spec,
    }


def _node_affinity(affinity: Affinity) -> dict[str, Any]:
    """Required node affinity on labels, the only affinity traces produce (GPU models)."""
    if not affinity.node_required:
        return {}
    terms = [
        {
            "matchExpressions": [
                {"key": r.key, "operator": r.operator, "values": list(r.values)}
                for r in term.expressions
            ]
        }
        for term in affinity.node_required
    ]
    required = {"nodeSelectorTerms": terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def node_manifest(node: Node) -> dict[str, Any]:
    """A Node with its labels, annotations and allocatable resources (what trace nodes have)."""
    pods = node.allocatable.get(PODS, DEFAULT_NODE_PODS)
    allocatable = {**_resources(node.allocatable), PODS: str(pods)}
    metadata = _metadata(node.name, "default", labels=node.labels, annotations=node.annotations)
    return {
        "apiVersion": NODE_API,
        "kind": "Node",
        "metadata": metadata,
        "status": {"allocatable": allocatable},
    }


def queue_manifest(queue: Queue) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO_API,
        "kind": "Queue",
        "metadata": {"name": queue.name},
        "spec": {"weight": queue.weight},
    }


def priority_class_manifest(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": PRIORITY_CLASS_API,
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def workload_manifests(
    jobs: Iterable[TraceJob],
    rule: QueueRule,
    write: Callable[[TraceJob], list[dict[str, Any]]] = to_manifests,
) -> Iterator[dict[str, Any]]:
    """A whole workload, streamed: the rule's queues first, then each job as ``write`` writes
    it (its PodGroup and Pods; ``berth.traces.shapes`` has the other APIs' shapes), then the
    queues and priority classes the jobs named that nothing defined (trace queues such as
    Philly's virtual clusters, openb's QoS classes) — those are known only at the end."""
    defined = {queue.name for queue in rule.queues()} | {DEFAULT_QUEUE}
    yield from (queue_manifest(queue) for queue in rule.queues())
    named_queues: set[str] = set()
    classes: dict[str, int] = {}
    for job in jobs:
        named_queues.add(job.group.queue)
        if job.group.priority_class_name:
            classes[job.group.priority_class_name] = job.group.priority
        yield from write(job)
    yield from (queue_manifest(Queue(name)) for name in sorted(named_queues - defined))
    yield from (priority_class_manifest(name, value) for name, value in sorted(classes.items()))
