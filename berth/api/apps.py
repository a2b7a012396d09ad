"""Kubernetes' ``apps/v1`` Deployment, ReplicaSet and StatefulSet and ``batch/v1`` Job
documents, and OpenKruise's Advanced StatefulSet (``apps.kruise.io/v1beta1``), whose shape is
Kubernetes' StatefulSet plus a few fields."""

from __future__ import annotations

from berth.api import schema
from berth.api.load_annotations import load_scaling
from berth.api.loaded import Context
from berth.api.templates import (
    add_workload,
    at_most_100_percent,
    pod_template,
    workload_selector,
)
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    DEPLOYMENT,
    KUBE_JOB,
    REPLICA_SET,
    STATEFUL_SET,
    DeploymentSpec,
    KubeJobSpec,
    ReplicaSetSpec,
    StatefulSetSpec,
    scaled,
)


def convert_deployment(doc: schema.DeploymentDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    selector = workload_selector(spec.selector, template, ctx)
    rolling = spec.strategy.rolling_update
    if spec.strategy.type == "Recreate" and rolling is not None:
        ctx.error(
            "spec.strategy.rollingUpdate", "may not be specified when strategy type is Recreate"
        )
    surge = "25%" if rolling is None or rolling.max_surge is None else rolling.max_surge
    unavailable = (
        "25%" if rolling is None or rolling.max_unavailable is None else rolling.max_unavailable
    )
    path = "spec.strategy.rollingUpdate"
    at_most_100_percent(unavailable, f"{path}.maxUnavailable", ctx)
    if spec.strategy.type == "RollingUpdate" and scaled(surge, 100, True) == 0:
        if scaled(unavailable, 100, True) == 0:
            ctx.error(f"{path}.maxUnavailable", "may not be 0 when maxSurge is 0")
    converted = DeploymentSpec(
        template=template,
        selector=selector,
        replicas=spec.replicas,
        strategy=spec.strategy.type,
        max_surge=surge,
        max_unavailable=unavailable,
        min_ready_seconds=float(spec.min_ready_seconds),
        paused=spec.paused,
        revision_history_limit=spec.revision_history_limit,
        load=load_scaling(meta.annotations, ctx),
    )
    add_workload(DEPLOYMENT, doc, converted, ctx)


def convert_replica_set(doc: schema.ReplicaSetDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    selector = workload_selector(spec.selector, template, ctx)
    converted = ReplicaSetSpec(
        template=template,
        selector=selector,
        replicas=spec.replicas,
        min_ready_seconds=float(spec.min_ready_seconds),
    )
    add_workload(REPLICA_SET, doc, converted, ctx)


def _reserve_ordinals(items: list[int | str], ctx: Context) -> frozenset[int]:
    """Integers, or ``"a-b"`` ranges (both ends included), as OpenKruise accepts them."""
    result: set[int] = set()
    for index, item in enumerate(items):
        path = f"spec.reserveOrdinals[{index}]"
        if isinstance(item, int):
            if item < 0:
                ctx.error(path, f"must be >= 0 (got {item})")
            result.add(item)
            continue
        low, dash, high = item.partition("-")
        if not dash or not low.isdigit() or not high.isdigit() or int(low) > int(high):
            ctx.error(path, f'"{item}" is not an ordinal or a range (expected e.g. 3 or "2-5")')
            continue
        result.update(range(int(low), int(high) + 1))
    return frozenset(result)


def convert_stateful_set(doc: schema.StatefulSetDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    advanced = doc.api_version != schema.APPS_API
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    selector = workload_selector(spec.selector, template, ctx)
    strategy = spec.update_strategy
    rolling = strategy.rolling_update
    path = "spec.updateStrategy.rollingUpdate"
    if strategy.type == "OnDelete" and rolling is not None:
        ctx.error(path, "only allowed for updateStrategy type RollingUpdate")
    max_unavailable = (
        1 if rolling is None or rolling.max_unavailable is None else (rolling.max_unavailable)
    )
    at_most_100_percent(max_unavailable, f"{path}.maxUnavailable", ctx)
    if scaled(max_unavailable, 1, True) < 1:
        ctx.error(f"{path}.maxUnavailable", "must be at least 1")
    if advanced and max_unavailable != 1 and spec.pod_management_policy != "Parallel":
        # OpenKruise's admission rule.
        ctx.error(
            f"{path}.maxUnavailable", "can only be other than 1 with podManagementPolicy Parallel"
        )
    policy = "ReCreate"
    if rolling is not None and rolling.pod_update_policy is not None:
        if not advanced:
            ctx.error(
                f"{path}.podUpdatePolicy",
                f"not a field of {schema.APPS_API} StatefulSet "
                "(in-place update needs apps.kruise.io/v1beta1)",
            )
        policy = rolling.pod_update_policy
    if not advanced:
        for name, value in (
            ("reserveOrdinals", spec.reserve_ordinals),
            ("scaleStrategy", spec.scale_strategy),
        ):
            if value:
                ctx.error(
                    f"spec.{name}",
                    f"not a field of {schema.APPS_API} StatefulSet "
                    "(expected apps.kruise.io/v1beta1)",
                )
    min_ready = spec.min_ready_seconds
    if rolling is not None and rolling.min_ready_seconds is not None:
        min_ready = rolling.min_ready_seconds
    scale = spec.scale_strategy
    converted = StatefulSetSpec(
        template=template,
        selector=selector,
        replicas=spec.replicas,
        pod_management=spec.pod_management_policy,
        update_type=strategy.type,
        partition=0 if rolling is None else rolling.partition,
        max_unavailable=max_unavailable,
        pod_update_policy=policy,
        paused=rolling is not None and rolling.paused,
        reserve_ordinals=_reserve_ordinals(spec.reserve_ordinals, ctx),
        start_ordinal=0 if spec.ordinals is None else spec.ordinals.start,
        min_ready_seconds=float(min_ready),
        scale_max_unavailable=None if scale is None else scale.max_unavailable,
        advanced=advanced,
    )
    add_workload(ADVANCED_STATEFUL_SET if advanced else STATEFUL_SET, doc, converted, ctx)


def convert_kube_job(doc: schema.KubeJobDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    template = pod_template(meta.name, meta.namespace, spec.template, ctx)
    if spec.selector is not None:
        workload_selector(spec.selector, template, ctx)
    # Kubernetes' defaults: both unset is one pod; only parallelism set is a work queue.
    if spec.completions is None and spec.parallelism is None:
        completions, parallelism = 1, 1
    else:
        completions = spec.completions
        parallelism = 1 if spec.parallelism is None else spec.parallelism
    if spec.completion_mode == "Indexed" and completions is None:
        ctx.error("spec.completions", "field required when completionMode is Indexed")
    converted = KubeJobSpec(
        template=template,
        parallelism=parallelism,
        completions=completions,
        backoff_limit=spec.backoff_limit,
        completion_mode=spec.completion_mode,
        active_deadline=None
        if spec.active_deadline_seconds is None
        else float(spec.active_deadline_seconds),
    )
    add_workload(KUBE_JOB, doc, converted, ctx)
