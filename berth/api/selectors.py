"""Label selectors, and what a pod says about where it may go: node selector terms, pod
(anti-)affinity terms, tolerations of node taints and topology spread constraints.

They keep the Kubernetes shapes, with the label syntax Kubernetes accepts (``valid_label_key``,
``valid_label_value``, ``valid_requirement``); ``berth.api.objects`` holds the pods and nodes
that carry them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Requirement:
    """One ``matchExpressions`` entry (node selector terms and label selectors alike)."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def valid_label_value(value: str) -> bool:
    """What Kubernetes accepts as a label value: empty, or up to 63 alphanumerics, '-', '_'
    and '.', starting and ending alphanumeric."""
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def valid_label_key(key: str) -> bool:
    """A qualified name: an optional DNS-subdomain prefix and '/', then a name of up to 63."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None


def valid_requirement(req: Requirement) -> bool:
    """Whether kube-scheduler can turn a node selector requirement into a selector; one that it
    cannot makes the whole term match no node."""
    if not valid_label_key(req.key):
        return False
    if req.operator in ("In", "NotIn"):
        return all(valid_label_value(v) for v in req.values)
    if req.operator in ("Gt", "Lt"):
        return len(req.values) == 1 and _INTEGER.fullmatch(req.values[0]) is not None
    return True


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """``matchLabels`` folded into ``In`` requirements; an empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        for req in self.requirements:
            value = labels.get(req.key)
            op = req.operator
            if op == "In":
                if value is None or value not in req.values:
                    return False
            elif op == "NotIn":
                if value is not None and value in req.values:
                    return False
            elif op == "Exists":
                if value is None:
                    return False
            elif op == "DoesNotExist":
                if value is not None:
                    return False
            elif op in ("Gt", "Lt"):
                try:
                    number, bound = int(value), int(req.values[0])  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    return False
                if (op == "Gt" and not number > bound) or (op == "Lt" and not number < bound):
                    return False
        return True


#: A selector no labels satisfy (``In`` with no values): what Kubernetes makes of a missing
#: ``labelSelector``.
MATCH_NOTHING = LabelSelector((Requirement("", "In", ()),))


def with_label_keys(
    selector: LabelSelector,
    labels: dict[str, str],
    match_keys: tuple[str, ...],
    mismatch_keys: tuple[str, ...] = (),
) -> LabelSelector:
    """``selector`` narrowed to the pods whose labels agree with ``labels`` on ``match_keys``
    and differ on ``mismatch_keys`` (``matchLabelKeys`` / ``mismatchLabelKeys``); keys the pod
    does not carry are left out, as in Kubernetes."""
    extra = tuple(Requirement(k, "In", (labels[k],)) for k in match_keys if k in labels)
    extra += tuple(Requirement(k, "NotIn", (labels[k],)) for k in mismatch_keys if k in labels)
    return LabelSelector(selector.requirements + extra) if extra else selector


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """Requirements on node labels (``matchExpressions``) and node fields (``matchFields``:
    only ``metadata.name`` exists in Kubernetes)."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()


@dataclass(slots=True, frozen=True)
class PreferredNodeTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(slots=True, frozen=True)
class PodAffinityTerm:
    selector: LabelSelector
    topology_key: str
    #: Namespaces named outright; with no ``namespace_selector`` either: the pod's own.
    namespaces: tuple[str, ...] = ()
    #: Namespaces by their labels (``namespaceSelector``); an empty selector means all.
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    def for_pod(self, labels: dict[str, str]) -> PodAffinityTerm:
        """The term with ``matchLabelKeys`` / ``mismatchLabelKeys`` folded into its selector
        for the pod that carries it (what the API server does when it admits the pod)."""
        if not self.match_label_keys and not self.mismatch_label_keys:
            return self
        selector = with_label_keys(
            self.selector, labels, self.match_label_keys, self.mismatch_label_keys
        )
        return PodAffinityTerm(
            selector, self.topology_key, self.namespaces, self.namespace_selector
        )


@dataclass(slots=True, frozen=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule, PreferNoSchedule, NoExecute


@dataclass(slots=True, frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule or ScheduleAnyway
    selector: LabelSelector
    min_domains: int = 1
    #: Which nodes' pods count: Honor keeps to the nodes the pod's node affinity and
    #: nodeSelector allow (default); Ignore counts every node.
    node_affinity_policy: str = "Honor"
    #: Honor leaves out nodes with taints the pod does not tolerate; Ignore (default) does not.
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class Affinity:
    node_required: tuple[NodeSelectorTerm, ...] = ()  # ORed terms
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    pod_required: tuple[PodAffinityTerm, ...] = ()
    pod_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_required: tuple[PodAffinityTerm, ...] = ()
    anti_preferred: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def has_pod_terms(self) -> bool:
        return bool(
            self.pod_required or self.pod_preferred or self.anti_required or self.anti_preferred
        )
