"""Pod documents and pod templates → Pods: effective requests, affinity, tolerations, spread
constraints and berth's simulation annotations."""

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
    label_selector,
    positive_int_annotation,
    preemptable,
    requirements,
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
from berth.api.loaded import Context, Manifests
from berth.api.objects import Pod
from berth.api.owners import controller_owner
from berth.api.qos import check_qos_label
from berth.api.selectors import (
    MATCH_NOTHING,
    Affinity,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredNodeTerm,
    Requirement,
    SpreadConstraint,
    Toleration,
    WeightedPodAffinityTerm,
    valid_label_key,
    valid_requirement,
)
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


def _node_term(
    term: schema.NodeSelectorTerm, path: str, ctx: Context, effect: str
) -> NodeSelectorTerm:
    """A node selector term; one kube-scheduler cannot parse (an invalid label key or value)
    matches no node, and ``effect`` says what that means for the pod."""
    fields = []
    for index, req in enumerate(term.match_fields):
        if len(req.values) != 1:
            ctx.error(
                f"{path}.matchFields[{index}].values",
                f"must hold exactly one node name (got {len(req.values)})",
            )
        fields.append(Requirement(req.key, req.operator, tuple(req.values)))
    expressions = requirements(term.match_expressions, f"{path}.matchExpressions", ctx)
    for index, req in enumerate(expressions):
        if not valid_requirement(req):
            ctx.warn(
                f"{path}.matchExpressions[{index}]",
                f"{schema.show(req.key)} {req.operator} {schema.show(list(req.values))} is not a "
                f"valid label selector: the term matches no node, as in Kubernetes ({effect})",
            )
    return NodeSelectorTerm(expressions, tuple(fields))


_NO_SELECTOR = "missing: the term matches no pods, as in Kubernetes"


def _label_keys(
    term: schema.PodAffinityTerm | schema.TopologySpreadConstraint, path: str, ctx: Context
) -> None:
    """The checks Kubernetes makes of ``matchLabelKeys`` (and ``mismatchLabelKeys``)."""
    mismatch = getattr(term, "mismatch_label_keys", [])
    for field_name, keys in (
        ("matchLabelKeys", term.match_label_keys),
        ("mismatchLabelKeys", mismatch),
    ):
        for index, key in enumerate(keys):
            if not valid_label_key(key):
                ctx.error(
                    f"{path}.{field_name}[{index}]", f"{schema.show(key)} is not a valid label key"
                )
    if (term.match_label_keys or mismatch) and term.label_selector is None:
        ctx.error(f"{path}.matchLabelKeys", "must not be set without a labelSelector")
    for key in sorted(set(term.match_label_keys) & set(mismatch)):
        ctx.error(f"{path}.mismatchLabelKeys", f"{schema.show(key)} is also in matchLabelKeys")


def _pod_term(term: schema.PodAffinityTerm, path: str, ctx: Context) -> PodAffinityTerm:
    _label_keys(term, path, ctx)
    if term.label_selector is None:
        ctx.warn(f"{path}.labelSelector", _NO_SELECTOR)
        selector = MATCH_NOTHING
    else:
        selector = label_selector(term.label_selector, f"{path}.labelSelector", ctx)
    namespace_selector = None
    if term.namespace_selector is not None:
        namespace_selector = label_selector(
            term.namespace_selector, f"{path}.namespaceSelector", ctx
        )
    return PodAffinityTerm(
        selector,
        term.topology_key,
        tuple(term.namespaces),
        namespace_selector,
        tuple(term.match_label_keys),
        tuple(term.mismatch_label_keys),
    )


def _pod_terms(
    affinity: schema.PodAffinity | None, path: str, ctx: Context
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    if affinity is None:
        return (), ()
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_term(term, f"{required_path}[{index}]", ctx)
        for index, term in enumerate(affinity.required_during_scheduling_ignored_during_execution)
    )
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = tuple(
        WeightedPodAffinityTerm(
            weighted.weight,
            _pod_term(
                weighted.pod_affinity_term, f"{preferred_path}[{index}].podAffinityTerm", ctx
            ),
        )
        for index, weighted in enumerate(
            affinity.preferred_during_scheduling_ignored_during_execution
        )
    )
    return required, preferred


def _node_affinity(
    node_affinity: schema.NodeAffinity, path: str, ctx: Context
) -> tuple[tuple[NodeSelectorTerm, ...], tuple[PreferredNodeTerm, ...]]:
    """Required terms (ORed) and weighted preferred terms of a ``nodeAffinity``."""
    node_required: tuple[NodeSelectorTerm, ...] = ()
    required = node_affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        terms_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = []
        for index, term in enumerate(required.node_selector_terms):
            if not term.match_expressions and not term.match_fields:
                ctx.warn(
                    f"{terms_path}[{index}]",
                    "empty term matches no nodes (expected matchExpressions or matchFields)",
                )
            terms.append(_node_term(term, f"{terms_path}[{index}]", ctx, "it allows no node"))
        node_required = tuple(terms)
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    node_preferred = tuple(
        PreferredNodeTerm(
            item.weight,
            _node_term(
                item.preference,
                f"{preferred_path}[{i}].preference",
                ctx,
                "the preference counts for no node",
            ),
        )
        for i, item in enumerate(node_affinity.preferred_during_scheduling_ignored_during_execution)
    )
    return node_required, node_preferred


def _affinity(affinity: schema.Affinity | None, ctx: Context) -> Affinity:
    if affinity is None:
        return Affinity()
    path = "spec.affinity"
    node_required: tuple[NodeSelectorTerm, ...] = ()
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    if affinity.node_affinity is not None:
        node_required, node_preferred = _node_affinity(
            affinity.node_affinity, f"{path}.nodeAffinity", ctx
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


def _spread_constraint(
    item: schema.TopologySpreadConstraint, path: str, ctx: Context
) -> SpreadConstraint:
    if item.min_domains is not None and item.when_unsatisfiable != "DoNotSchedule":
        ctx.error(f"{path}.minDomains", "only allowed with whenUnsatisfiable DoNotSchedule")
    _label_keys(item, path, ctx)
    if item.label_selector is None:
        selector = MATCH_NOTHING
    else:
        selector = label_selector(item.label_selector, f"{path}.labelSelector", ctx)
        named = {req.key for req in selector.requirements}
        for key in item.match_label_keys:
            if key in named:
                ctx.error(
                    f"{path}.matchLabelKeys",
                    f"{schema.show(key)} is also a key of the labelSelector",
                )
    return SpreadConstraint(
        max_skew=item.max_skew,
        topology_key=item.topology_key,
        when_unsatisfiable=item.when_unsatisfiable,
        selector=selector,
        min_domains=item.min_domains or 1,
        node_affinity_policy=item.node_affinity_policy or "Honor",
        node_taints_policy=item.node_taints_policy or "Ignore",
        match_label_keys=tuple(item.match_label_keys),
    )


def _spread(spec: schema.PodSpec, ctx: Context) -> tuple[SpreadConstraint, ...]:
    result = []
    for index, item in enumerate(spec.topology_spread_constraints):
        path = f"spec.topologySpreadConstraints[{index}]"
        if item.label_selector is None:
            ctx.warn(
                f"{path}.labelSelector",
                "missing: the constraint counts no pods, as in Kubernetes (only its "
                "topology key still limits the nodes)",
            )
        result.append(_spread_constraint(item, path, ctx))
    return tuple(result)


# -- Kubernetes-shaped scheduler plugin arguments -------------------------------------------------


class ArgumentProblem(ValueError):
    """A plugin argument in a Kubernetes shape (a node affinity, spread constraints) that does
    not validate; the message names the field."""


def _argument_context(where: str) -> Context:
    return Context(Manifests(), where, "", "-", "")


def _raise_problems(ctx: Context) -> None:
    problems = ctx.out.problems
    if problems:
        raise ArgumentProblem("; ".join(str(p) for p in problems))


def node_affinity(
    raw: Any, where: str
) -> tuple[tuple[NodeSelectorTerm, ...], tuple[PreferredNodeTerm, ...]]:
    """A ``nodeAffinity`` given as a plugin argument (NodeAffinity's ``addedAffinity``)."""
    if not isinstance(raw, dict):
        raise ArgumentProblem(f"{where}: expected a nodeAffinity mapping (got {schema.show(raw)})")
    ctx = _argument_context(where)
    parsed, issues = schema.validate(schema.NodeAffinity, raw)
    for issue in issues:
        ctx.report("error", issue.path, issue.message)
    _raise_problems(ctx)
    assert parsed is not None
    result = _node_affinity(parsed, "", ctx)
    _raise_problems(ctx)
    return result


def spread_constraints(
    raw: Any, where: str, defaults: bool = False
) -> tuple[SpreadConstraint, ...]:
    """Topology spread constraints given as a plugin argument. ``defaults``: PodTopologySpread's
    ``defaultConstraints``, which take each pod's selector from its workload and so must not
    name one."""
    if not isinstance(raw, list):
        raise ArgumentProblem(f"{where}: expected a list of constraints (got {schema.show(raw)})")
    ctx = _argument_context(where)
    result = []
    for index, item in enumerate(raw):
        path = f"[{index}]"
        if not isinstance(item, dict):
            ctx.error(path, f"expected a mapping (got {schema.show(item)})")
            continue
        if defaults and "labelSelector" in item:
            ctx.error(f"{path}.labelSelector", "must not be set: each pod's workload is selected")
            item = {k: v for k, v in item.items() if k != "labelSelector"}
        parsed, issues = schema.validate(schema.TopologySpreadConstraint, item)
        for issue in issues:
            ctx.report(
                "error", schema.join(path, issue.path) if issue.path else path, issue.message
            )
        if parsed is not None:
            result.append(_spread_constraint(parsed, path, ctx))
    _raise_problems(ctx)
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
    pod = Pod(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(annotations),
        requests=requests,
        nonzero_requests=nonzero,
        node_selector=dict(spec.node_selector),
        affinity=_affinity(spec.affinity, ctx),
        tolerations=_tolerations(spec, ctx),
        spread=_spread(spec, ctx),
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
        pod.utilization = utilization
    pod.usage_profile = _usage_curve(annotations, ctx)
    wrong = check_qos_label(pod.labels)
    if wrong:
        ctx.error("metadata.labels", wrong)
    _check_resource_spec(annotations, ctx)
    probability = float_annotation(annotations, FAIL_PROBABILITY_ANNOTATION, ctx, fraction)
    if probability is not None:
        pod.fail_probability = probability
    exit_code = float_annotation(annotations, EXIT_CODE_ANNOTATION, ctx, _exit_code)
    if exit_code is not None:
        pod.fail_exit_code = int(exit_code)
    return pod


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
