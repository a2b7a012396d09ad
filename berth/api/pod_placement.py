"""A pod's placement constraints as Kubernetes writes them (node and pod affinity, tolerations,
topology spread constraints), checked and converted; and the same shapes given as scheduler
plugin arguments (NodeAffinity's ``addedAffinity``, PodTopologySpread's constraints)."""

from __future__ import annotations

from typing import Any

from berth.api import schema
from berth.api.fields import (
    label_selector,
    requirements,
)
from berth.api.loaded import Context, Manifests
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


def pod_affinity(affinity: schema.Affinity | None, ctx: Context) -> Affinity:
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


def pod_tolerations(spec: schema.PodSpec, ctx: Context) -> tuple[Toleration, ...]:
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


def pod_spread(spec: schema.PodSpec, ctx: Context) -> tuple[SpreadConstraint, ...]:
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
