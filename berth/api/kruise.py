"""OpenKruise's ``apps.kruise.io/v1alpha1`` CloneSet, SidecarSet and BroadcastJob documents,
checked as OpenKruise's admission webhooks check them."""

from __future__ import annotations

from berth.api import schema
from berth.api.fields import label_selector
from berth.api.loaded import Context
from berth.api.pod_spec import container_requests
from berth.api.templates import (
    add_workload,
    at_most_100_percent,
    layout_of,
    pod_template,
    short_hash,
    workload_selector,
)
from berth.api.workloads import (
    BROADCAST_JOB,
    CLONE_SET,
    SIDECAR_SET,
    BroadcastJobSpec,
    CloneSetSpec,
    SidecarContainer,
    SidecarSetSpec,
    scaled,
)


def convert_clone_set(doc: schema.CloneSetDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    selector = workload_selector(spec.selector, template, ctx)
    update = spec.update_strategy
    path = "spec.updateStrategy"
    max_unavailable = "20%" if update.max_unavailable is None else update.max_unavailable
    max_surge = 0 if update.max_surge is None else update.max_surge
    at_most_100_percent(max_unavailable, f"{path}.maxUnavailable", ctx)
    at_most_100_percent(update.partition, f"{path}.partition", ctx)
    if update.type == "InPlaceOnly" and scaled(max_surge, spec.replicas, True) > 0:
        ctx.error(f"{path}.maxSurge", "can not be used with update strategy type InPlaceOnly")
    if (
        spec.replicas > 0
        and scaled(max_unavailable, spec.replicas, True) < 1
        and scaled(max_surge, spec.replicas, True) < 1
    ):
        ctx.error(f"{path}.maxUnavailable", "maxUnavailable and maxSurge may not both be 0")
    to_delete = spec.scale_strategy.pods_to_delete
    duplicates = sorted({name for name in to_delete if to_delete.count(name) > 1})
    if duplicates:
        ctx.error("spec.scaleStrategy.podsToDelete", f"duplicated items {duplicates}")
    grace = update.in_place_update_strategy
    converted = CloneSetSpec(
        template=template,
        selector=selector,
        replicas=spec.replicas,
        update_type=update.type,
        partition=update.partition,
        max_unavailable=max_unavailable,
        max_surge=max_surge,
        paused=update.paused,
        pods_to_delete=tuple(to_delete),
        scale_max_unavailable=spec.scale_strategy.max_unavailable,
        min_ready_seconds=float(spec.min_ready_seconds),
        grace_seconds=0.0 if grace is None else float(grace.grace_period_seconds),
    )
    add_workload(CLONE_SET, doc, converted, ctx)


def _sidecars(
    containers: list[schema.SidecarContainer], init: bool, path: str, ctx: Context
) -> list[SidecarContainer]:
    result = []
    for index, container in enumerate(containers):
        where = f"{path}[{index}]"
        upgrade = container.upgrade_strategy
        if upgrade is not None and upgrade.upgrade_type == "HotUpgrade":
            ctx.warn(
                f"{where}.upgradeStrategy.upgradeType",
                "HotUpgrade is not modelled: "
                "the sidecar is upgraded by a restart, as with ColdUpgrade",
            )
        requests = container_requests(container, where, ctx)
        result.append(SidecarContainer(container.name, container.image, requests, init))
    return result


def convert_sidecar_set(doc: schema.SidecarSetDoc, ctx: Context) -> None:
    spec = doc.spec
    if doc.metadata.namespace != "default":
        ctx.warn(
            "metadata.namespace",
            "SidecarSet is cluster-scoped: ignored (spec.namespace limits it to a namespace)",
        )
        doc.metadata.namespace = "default"
    selector = label_selector(spec.selector, "spec.selector", ctx)
    if not selector.requirements:
        ctx.error("spec.selector", "empty selector is invalid (expected matchLabels)")
    containers = _sidecars(spec.containers, False, "spec.containers", ctx)
    containers += _sidecars(spec.init_containers, True, "spec.initContainers", ctx)
    if not containers:
        ctx.error("spec.containers", "no containers (expected at least one sidecar)")
    names = [c.name for c in containers]
    for name in sorted({n for n in names if names.count(n) > 1}):
        ctx.error("spec.containers", f"duplicate container name {schema.show(name)}")
    update = spec.update_strategy
    path = "spec.updateStrategy"
    max_unavailable = 1 if update.max_unavailable is None else update.max_unavailable
    at_most_100_percent(max_unavailable, f"{path}.maxUnavailable", ctx)
    at_most_100_percent(update.partition, f"{path}.partition", ctx)
    raw = [c.model_dump(by_alias=True, exclude_none=True) for c in spec.containers]
    raw += [c.model_dump(by_alias=True, exclude_none=True) for c in spec.init_containers]
    converted = SidecarSetSpec(
        selector=selector,
        containers=tuple(containers),
        namespace=spec.namespace,
        update_type=update.type,
        max_unavailable=max_unavailable,
        partition=update.partition,
        update_selector=None
        if update.selector is None
        else label_selector(update.selector, f"{path}.selector", ctx),
        paused=update.paused,
        injection_paused=spec.injection_strategy.paused,
        revision=short_hash(raw),
        layout=short_hash(layout_of({"containers": raw})),
    )
    add_workload(SIDECAR_SET, doc, converted, ctx)


def convert_broadcast_job(doc: schema.BroadcastJobDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    completion = spec.completion_policy
    if completion.type == "Never" and completion.active_deadline_seconds is not None:
        ctx.error(
            "spec.completionPolicy.activeDeadlineSeconds",
            "only allowed with completionPolicy type Always",
        )
    converted = BroadcastJobSpec(
        template=template,
        parallelism=spec.parallelism,
        completion_type=completion.type,
        active_deadline=None
        if completion.active_deadline_seconds is None
        else float(completion.active_deadline_seconds),
        failure_type=spec.failure_policy.type,
        paused=spec.paused,
    )
    add_workload(BROADCAST_JOB, doc, converted, ctx)
