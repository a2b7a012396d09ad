"""Pod documents and pod templates → Pods: effective requests and berth's simulation
annotations; the placement constraints are read by ``pod_placement``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from berth.api import schema
from berth.api.dra import pod_claims
from berth.api.dra_checks import check_container_claims
from berth.api.fields import (
    above_zero,
    at_least_zero,
    canonical,
    check_deadline,
    check_sla,
    float_annotation,
    fraction,
    positive_int_annotation,
    preemptable,
)
from berth.api.keys import (
    BIND_POLICIES,
    CPU_BIND_POLICY_KEY,
    DEFAULT_SCHEDULER,
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    FAIL_PROBABILITY_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    RESOURCE_SPEC_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
    UTILIZATION_ANNOTATION,
)
from berth.api.loaded import Context
from berth.api.objects import Pod
from berth.api.owners import controller_owner
from berth.api.pod_placement import pod_affinity, pod_spread, pod_tolerations
from berth.api.qos import check_qos_label
from berth.api.usage import (
    USAGE_CURVE_ANNOTATION,
    USAGE_PERIOD_ANNOTATION,
    UsageCurveError,
    UsageProfile,
    parse_usage_curve,
)
from berth.api.workload_api import pod_group_name
from berth.resources import CPU, MEMORY, MIB, PODS, canonical_name, format_amount, to_canonical

VOLCANO_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"


def _add_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = max(total.get(name, 0), amount)


def container_requests(container: schema.Container, path: str, ctx: Context) -> dict[str, int]:
    """Requests as the scheduler sees them: a resource given only a limit requests the limit."""
    limits = canonical(container.resources.limits)
    requests: dict[str, int] = {}
    for raw_name, raw_value in container.resources.requests.items():
        name = canonical_name(raw_name)
        amount = to_canonical(raw_name, raw_value)
        limit = limits.get(name)
        if limit is not None and amount > limit:
            ctx.error(
                f"{path}.resources.requests.{raw_name}",
                f"must be <= its limit {format_amount(name, limit)} (got {schema.show(raw_value)})",
            )
        requests[name] = amount
    return {**limits, **requests}


#: What kube-scheduler's allocation scores count for a container that requests no cpu or no
#: memory (its DefaultMilliCPURequest and DefaultMemoryRequest).
DEFAULT_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * MIB


def _nonzero(requests: dict[str, int]) -> dict[str, int]:
    return {
        CPU: requests.get(CPU, DEFAULT_CPU_REQUEST),
        MEMORY: requests.get(MEMORY, DEFAULT_MEMORY_REQUEST),
    }


def _combined(
    containers: list[dict[str, int]],
    init_containers: list[tuple[dict[str, int], bool]],
    overhead: Mapping[str, int],
) -> dict[str, int]:
    """The pod's effective request, following Kubernetes.

    Regular containers run together, so they add up; init containers run one at a time before
    them, so only the largest counts; sidecars (init containers with restartPolicy Always) keep
    running, so they add to every init container started after them and to the main phase.
    """
    main: dict[str, int] = {}
    for requests in containers:
        _add_into(main, requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, sidecar in init_containers:
        if sidecar:
            _add_into(sidecars, requests)
        else:
            running = dict(sidecars)
            _add_into(running, requests)
            _max_into(init_peak, running)
    _add_into(main, sidecars)
    _max_into(main, init_peak)
    _add_into(main, overhead)
    return main


def _pod_requests(spec: schema.PodSpec, ctx: Context) -> tuple[dict[str, int], tuple[int, int]]:
    """The pod's request, and its cpu and memory as kube-scheduler's allocation scores count
    them (containers that request none counted at the defaults)."""
    containers = [
        container_requests(container, f"spec.containers[{index}]", ctx)
        for index, container in enumerate(spec.containers)
    ]
    init_containers = [
        (
            container_requests(container, f"spec.initContainers[{index}]", ctx),
            container.restart_policy == "Always",
        )
        for index, container in enumerate(spec.init_containers)
    ]
    overhead = canonical(spec.overhead)
    main = _combined(containers, init_containers, overhead)
    main[PODS] = 1
    scored = _combined(
        [_nonzero(c) for c in containers],
        [(_nonzero(c), sidecar) for c, sidecar in init_containers],
        {k: v for k, v in overhead.items() if k in (CPU, MEMORY)},
    )
    return main, (scored[CPU], scored[MEMORY])


def _group_name(annotations: Mapping[str, str], ctx: Context) -> str:
    group = annotations.get(GROUP_NAME_ANNOTATION, "")
    volcano = annotations.get(VOLCANO_GROUP_ANNOTATION, "")
    if group and volcano and group != volcano:
        ctx.error(
            f"metadata.annotations.{VOLCANO_GROUP_ANNOTATION}",
            f"{schema.show(volcano)} contradicts {GROUP_NAME_ANNOTATION} "
            f"{schema.show(group)} (expected the same group name)",
        )
    return group or volcano


def convert_pod(doc: schema.PodDoc, ctx: Context) -> None:
    meta = doc.metadata
    pod = build_pod(meta.name, meta.namespace, meta, doc.spec, ctx)
    if not ctx.out.live:  # a cluster's pod has its owner read from the API object
        # The controller reference; without ``controller``, a pod's only reference is taken
        # as it (what a hand-written manifest means by one).
        alone = len(meta.owner_references) == 1
        owner = controller_owner(
            meta.namespace,
            (
                (
                    ref.api_version,
                    ref.kind,
                    ref.name,
                    alone if ref.controller is None else ref.controller,
                )
                for ref in meta.owner_references
            ),
        )
        if owner is not None:
            pod.owner, pod.owner_kind = owner
    if not pod.group:  # a group of one, with the pod's annotations: the sla plugin reads them
        check_sla(doc.metadata.annotations, ctx)
        check_deadline(doc.metadata.annotations, ctx)
    ctx.out.add(ctx.out.pods, pod, ctx.origin(explicit_priority=doc.spec.priority is not None))


def build_pod(
    name: str,
    namespace: str,
    meta: schema.ObjectMeta | schema.TemplateMeta,
    spec: schema.PodSpec,
    ctx: Context,
) -> Pod:
    """A Pod from its metadata and spec: a Pod document's, or a Job task's template."""
    annotations = meta.annotations
    requests, nonzero = _pod_requests(spec, ctx)
    # Built last, once every setting is read: each one written afterwards would copy them.
    fields: dict[str, Any] = dict(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(annotations),
        requests=requests,
        nonzero_requests=nonzero,
        node_selector=dict(spec.node_selector),
        affinity=pod_affinity(spec.affinity, ctx),
        tolerations=pod_tolerations(spec, ctx),
        spread=pod_spread(spec, ctx),
        priority=spec.priority or 0,
        priority_class_name=spec.priority_class_name,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        node_name=spec.node_name,
        group=pod_group_name(spec.scheduling_group, _group_name(annotations, ctx), ctx),
        submit_time=float_annotation(annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        duration=float_annotation(annotations, DURATION_ANNOTATION, ctx, above_zero),
        preemptable=preemptable(meta, ctx),
        preemption_policy=spec.preemption_policy or "",
        fail_after=float_annotation(annotations, FAIL_AFTER_ANNOTATION, ctx, at_least_zero),
        containers=tuple(
            (container.name or f"container-{index}", container.image)
            for index, container in enumerate(spec.containers)
        ),
        resource_claims=pod_claims(spec.resource_claims),
    )
    check_container_claims(spec, ctx)
    positive_int_annotation(annotations, GPU_MEMORY_ANNOTATION, "metadata.annotations", ctx)
    utilization = float_annotation(annotations, UTILIZATION_ANNOTATION, ctx, fraction)
    if utilization is not None:
        fields["utilization"] = utilization
    fields["usage_profile"] = _usage_curve(annotations, ctx)
    wrong = check_qos_label(fields["labels"])
    if wrong:
        ctx.error("metadata.labels", wrong)
    _check_resource_spec(annotations, ctx)
    probability = float_annotation(annotations, FAIL_PROBABILITY_ANNOTATION, ctx, fraction)
    if probability is not None:
        fields["fail_probability"] = probability
    exit_code = float_annotation(annotations, EXIT_CODE_ANNOTATION, ctx, _exit_code)
    if exit_code is not None:
        fields["fail_exit_code"] = int(exit_code)
    return Pod(**fields)


def _check_resource_spec(annotations: Mapping[str, str], ctx: Context) -> None:
    """Koordinator's resource spec: a JSON object whose preferredCPUBindPolicy, if given, is
    one berth knows."""
    text = annotations.get(RESOURCE_SPEC_ANNOTATION)
    if text is None:
        return
    where = f"metadata.annotations.{RESOURCE_SPEC_ANNOTATION}"
    try:
        spec = json.loads(text)
    except ValueError:
        ctx.error(where, f"{schema.show(text)} is not JSON (expected an object)")
        return
    if not isinstance(spec, dict):
        ctx.error(where, f"{schema.show(text)} is not a JSON object")
        return
    policy = spec.get(CPU_BIND_POLICY_KEY)
    if policy is not None and policy not in BIND_POLICIES:
        ctx.error(
            f"{where}.{CPU_BIND_POLICY_KEY}",
            f"{schema.show(str(policy))} is not one of {', '.join(BIND_POLICIES)}",
        )


def _usage_curve(annotations: Mapping[str, str], ctx: Context) -> UsageProfile | None:
    period = float_annotation(annotations, USAGE_PERIOD_ANNOTATION, ctx, above_zero)
    text = annotations.get(USAGE_CURVE_ANNOTATION)
    if text is None:
        if period is not None:
            ctx.error(
                f"metadata.annotations.{USAGE_PERIOD_ANNOTATION}",
                f"needs {USAGE_CURVE_ANNOTATION} (a period of what?)",
            )
        return None
    try:
        return parse_usage_curve(text, period)
    except UsageCurveError as exc:
        ctx.error(f"metadata.annotations.{USAGE_CURVE_ANNOTATION}", str(exc))
        return None


def _exit_code(value: float) -> str | None:
    if value != int(value) or not 1 <= value <= 255:
        return "must be an integer from 1 to 255 (0 means success)"
    return None
