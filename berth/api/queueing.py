"""PodGroup, Queue and PriorityClass documents: what decides when and in which order jobs run."""

from __future__ import annotations

from berth.api import schema
from berth.api.fields import (
    at_least_zero,
    canonical,
    check_deadline,
    check_sla,
    float_annotation,
    preemptable,
)
from berth.api.hypernodes import network_topology
from berth.api.keys import (
    HIERARCHY_ANNOTATION,
    HIERARCHY_WEIGHTS_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
)
from berth.api.loaded import Context
from berth.api.objects import PodGroup, PriorityClass, Queue
from berth.resources import format_amount

#: Priority classes every Kubernetes cluster has without anyone defining them.
BUILTIN_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}

MAX_USER_PRIORITY = 1_000_000_000


def convert_pod_group(doc: schema.PodGroupDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    check_sla(meta.annotations, ctx)
    check_deadline(meta.annotations, ctx)
    group = PodGroup(
        name=meta.name,
        namespace=meta.namespace,
        min_member=spec.min_member,
        min_resources=canonical(spec.min_resources),
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        submit_time=float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        annotations=dict(meta.annotations),
        preemptable=preemptable(meta, ctx),
        min_task_member=dict(spec.min_task_member),
        network_topology=network_topology(spec.network_topology),
    )
    ctx.out.add(ctx.out.groups, group, ctx.origin())


def convert_queue(doc: schema.QueueDoc, ctx: Context) -> None:
    spec = doc.spec
    capability = canonical(spec.capability)
    guarantee = canonical(spec.guarantee.resource)
    for name, amount in guarantee.items():
        if name in capability and amount > capability[name]:
            ctx.warn(
                f"spec.guarantee.resource.{name}",
                f"{format_amount(name, amount)} exceeds spec.capability.{name} "
                f"({format_amount(name, capability[name])}); only the capability can be used",
            )
    _check_hierarchy(doc.metadata.annotations, ctx)
    queue = Queue(
        name=doc.metadata.name,
        weight=spec.weight,
        capability=capability,
        state=spec.state or doc.status.state or "Open",
        guarantee=guarantee,
        deserved=canonical(spec.deserved),
        reclaimable=spec.reclaimable,
        parent=spec.parent or "",
        priority=spec.priority,
        annotations=dict(doc.metadata.annotations),
    )
    ctx.out.add(ctx.out.queues, queue, ctx.origin())


def _check_hierarchy(annotations: dict[str, str], ctx: Context) -> None:
    """Volcano's hierarchical-DRF annotations: a path from ``root`` and one weight per level.
    Volcano reads a weight it cannot use as 1, so mistakes are warnings, not errors."""
    path = annotations.get(HIERARCHY_ANNOTATION)
    weights = annotations.get(HIERARCHY_WEIGHTS_ANNOTATION)
    where = f"metadata.annotations.{HIERARCHY_ANNOTATION}"
    if path is None:
        if weights is not None:
            ctx.warn(
                f"metadata.annotations.{HIERARCHY_WEIGHTS_ANNOTATION}",
                f"has no effect without {HIERARCHY_ANNOTATION}",
            )
        return
    names = path.split("/")
    if names[0] != "root" or not all(names):
        ctx.warn(where, f'"{path}" is not a path from root (expected e.g. root/eng/dev)')
    if weights is None:
        ctx.warn(where, f"without {HIERARCHY_WEIGHTS_ANNOTATION} every level weighs 1")
        return
    values = weights.split("/")
    at = f"metadata.annotations.{HIERARCHY_WEIGHTS_ANNOTATION}"
    if len(values) != len(names):
        ctx.warn(at, f'"{weights}" has {len(values)} weights for {len(names)} levels of "{path}"')
    for value in values:
        try:
            weight = float(value)
        except ValueError:
            weight = 0.0
        if weight < 1:
            ctx.warn(at, f'weight "{value}" is not a number >= 1; it counts as 1')


def convert_priority_class(doc: schema.PriorityClassDoc, ctx: Context) -> None:
    builtin = BUILTIN_PRIORITY_CLASSES.get(doc.metadata.name)
    if builtin is not None and doc.value != builtin:
        ctx.error("value", f"must be {builtin} for this built-in class (got {doc.value})")
    elif builtin is None and doc.value > MAX_USER_PRIORITY:
        ctx.error(
            "value",
            f"must be <= {MAX_USER_PRIORITY} (got {doc.value}; larger values are "
            "reserved for the built-in system classes)",
        )
    pc = PriorityClass(
        name=doc.metadata.name,
        value=doc.value,
        global_default=doc.global_default,
        preemption_policy=doc.preemption_policy,
    )
    ctx.out.add(ctx.out.priority_classes, pc, ctx.origin())
