"""Pod documents and pod templates → Pods: effective requests, affinity, tolerations, spread
constraints and berth's simulation annotations."""

from __future__ import annotations

from collections.abc import Mapping

from berth.api import schema
from berth.api.fields import (
    above_zero,
    at_least_zero,
    canonical,
    float_annotation,
    fraction,
    label_selector,
    positive_int_annotation,
    preemptable,
    requirements,
)
from berth.api.objects import (
    DEFAULT_SCHEDULER,
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    FAIL_PROBABILITY_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
    UTILIZATION_ANNOTATION,
    Affinity,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    Requirement,
    SpreadConstraint,
    Toleration,
    WeightedPodAffinityTerm,
)
from berth.api.problems import Context
from berth.resources import PODS, canonical_name, format_amount, to_canonical

VOLCANO_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"


def _add_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = max(total.get(name, 0), amount)


def _container_requests(container: schema.Container, path: str, ctx: Context) -> dict[str, int]:
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


def _pod_requests(spec: schema.PodSpec, ctx: Context) -> dict[str, int]:
    """The pod's effective request, following Kubernetes.

    Regular containers run together, so they add up; init containers run one at a time before
    them, so only the largest counts; sidecars (init containers with restartPolicy Always) keep
    running, so they add to every init container started after them and to the main phase.
    """
    main: dict[str, int] = {}
    for index, container in enumerate(spec.containers):
        _add_into(main, _container_requests(container, f"spec.containers[{index}]", ctx))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(spec.init_containers):
        requests = _container_requests(container, f"spec.initContainers[{index}]", ctx)
        if container.restart_policy == "Always":
            _add_into(sidecars, requests)
        else:
            running = dict(sidecars)
            _add_into(running, requests)
            _max_into(init_peak, running)
    _add_into(main, sidecars)
    _max_into(main, init_peak)
    _add_into(main, canonical(spec.overhead))
    main[PODS] = 1
    return main


def _node_term(term: schema.NodeSelectorTerm, path: str, ctx: Context) -> NodeSelectorTerm:
    fields = []
    for index, req in enumerate(term.match_fields):
        if len(req.values) != 1:
            ctx.error(
                f"{path}.matchFields[{index}].values",
                f"must hold exactly one node name (got {len(req.values)})",
            )
        fields.append(Requirement(req.key, req.operator, tuple(req.values)))
    expressions = requirements(term.match_expressions, f"{path}.matchExpressions", ctx)
    return NodeSelectorTerm(expressions, tuple(fields))


_NO_SELECTOR = "missing (Kubernetes matches no pods without one, so the term is ignored)"


def _pod_term(term: schema.PodAffinityTerm, path: str, ctx: Context) -> PodAffinityTerm | None:
    if term.label_selector is None:
        ctx.warn(f"{path}.labelSelector", _NO_SELECTOR)
        return None
    selector = label_selector(term.label_selector, f"{path}.labelSelector", ctx)
    return PodAffinityTerm(selector, term.topology_key, tuple(term.namespaces))


def _pod_terms(
    affinity: schema.PodAffinity | None, path: str, ctx: Context
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    if affinity is None:
        return (), ()
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = [
        _pod_term(term, f"{required_path}[{index}]", ctx)
        for index, term in enumerate(affinity.required_during_scheduling_ignored_during_execution)
    ]
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for index, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        term = _pod_term(
            weighted.pod_affinity_term, f"{preferred_path}[{index}].podAffinityTerm", ctx
        )
        if term is not None:
            preferred.append(WeightedPodAffinityTerm(weighted.weight, term))
    return tuple(t for t in required if t is not None), tuple(preferred)


def _affinity(affinity: schema.Affinity | None, ctx: Context) -> Affinity:
    if affinity is None:
        return Affinity()
    path = "spec.affinity"
    node_required: tuple[NodeSelectorTerm, ...] = ()
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    if affinity.node_affinity is not None:
        node_path = f"{path}.nodeAffinity"
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            terms_path = f"{node_path}.requiredDuringSchedulingIgnoredDuringExecution"
            terms_path += ".nodeSelectorTerms"
            terms = []
            for index, term in enumerate(required.node_selector_terms):
                if not term.match_expressions and not term.match_fields:
                    ctx.warn(
                        f"{terms_path}[{index}]",
                        "empty term matches no nodes (expected matchExpressions or matchFields)",
                    )
                terms.append(_node_term(term, f"{terms_path}[{index}]", ctx))
            node_required = tuple(terms)
        preferred_path = f"{node_path}.preferredDuringSchedulingIgnoredDuringExecution"
        node_preferred = tuple(
            PreferredNodeTerm(
                item.weight, _node_term(item.preference, f"{preferred_path}[{i}].preference", ctx)
            )
            for i, item in enumerate(
                affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
            )
        )
    pod_required, pod_preferred = _pod_terms(affinity.pod_affinity, f"{path}.podAffinity", ctx)
    anti_required, anti_preferred = _pod_terms(
        affinity.pod_anti_affinity, f"{path}.podAntiAffinity", ctx
    )
    return Affinity(
        node_required=node_required,
        node_preferred=node_preferred,
        pod_required=pod_required,
        pod_preferred=pod_preferred,
        anti_required=anti_required,
        anti_preferred=anti_preferred,
    )


def _tolerations(spec: schema.PodSpec, ctx: Context) -> tuple[Toleration, ...]:
    result = []
    for index, tol in enumerate(spec.tolerations):
        path = f"spec.tolerations[{index}]"
        if tol.operator == "Exists" and tol.value:
            ctx.error(f"{path}.value", "must be empty when operator is Exists")
        if not tol.key and tol.operator != "Exists":
            ctx.error(f"{path}.operator", "must be Exists when key is empty")
        result.append(Toleration(tol.key, tol.operator, tol.value, tol.effect))
    return tuple(result)


def _spread(spec: schema.PodSpec, ctx: Context) -> tuple[SpreadConstraint, ...]:
    result = []
    for index, item in enumerate(spec.topology_spread_constraints):
        path = f"spec.topologySpreadConstraints[{index}]"
        if item.min_domains is not None and item.when_unsatisfiable != "DoNotSchedule":
            ctx.error(f"{path}.minDomains", "only allowed with whenUnsatisfiable DoNotSchedule")
        if item.label_selector is None:
            ctx.warn(f"{path}.labelSelector", _NO_SELECTOR)
            continue
        selector = label_selector(item.label_selector, f"{path}.labelSelector", ctx)
        result.append(
            SpreadConstraint(
                max_skew=item.max_skew,
                topology_key=item.topology_key,
                when_unsatisfiable=item.when_unsatisfiable,
                selector=selector,
                min_domains=item.min_domains or 1,
            )
        )
    return tuple(result)


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
    pod = build_pod(doc.metadata.name, doc.metadata.namespace, doc.metadata, doc.spec, ctx)
    ctx.out._add(ctx.out.pods, pod, ctx.origin(explicit_priority=doc.spec.priority is not None))


def build_pod(
    name: str,
    namespace: str,
    meta: schema.ObjectMeta | schema.TemplateMeta,
    spec: schema.PodSpec,
    ctx: Context,
) -> Pod:
    """A Pod from its metadata and spec: a Pod document's, or a Job task's template."""
    annotations = meta.annotations
    pod = Pod(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(annotations),
        requests=_pod_requests(spec, ctx),
        node_selector=dict(spec.node_selector),
        affinity=_affinity(spec.affinity, ctx),
        tolerations=_tolerations(spec, ctx),
        spread=_spread(spec, ctx),
        priority=spec.priority or 0,
        priority_class_name=spec.priority_class_name,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        node_name=spec.node_name,
        group=_group_name(annotations, ctx),
        submit_time=float_annotation(annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        duration=float_annotation(annotations, DURATION_ANNOTATION, ctx, above_zero),
        preemptable=preemptable(meta, ctx),
        preemption_policy=spec.preemption_policy or "",
        fail_after=float_annotation(annotations, FAIL_AFTER_ANNOTATION, ctx, at_least_zero),
    )
    positive_int_annotation(annotations, GPU_MEMORY_ANNOTATION, "metadata.annotations", ctx)
    utilization = float_annotation(annotations, UTILIZATION_ANNOTATION, ctx, fraction)
    if utilization is not None:
        pod.utilization = utilization
    probability = float_annotation(annotations, FAIL_PROBABILITY_ANNOTATION, ctx, fraction)
    if probability is not None:
        pod.fail_probability = probability
    exit_code = float_annotation(annotations, EXIT_CODE_ANNOTATION, ctx, _exit_code)
    if exit_code is not None:
        pod.fail_exit_code = int(exit_code)
    return pod


def _exit_code(value: float) -> str | None:
    if value != int(value) or not 1 <= value <= 255:
        return "must be an integer from 1 to 255 (0 means success)"
    return None
