"""Object metadata, label selectors, node and pod affinity, and ``v1 List``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from berth.api.schema.base import Model, Name, Namespace, NonEmpty, StringMap, Weight

# -- metadata -------------------------------------------------------------------------------------


class ObjectMeta(Model):
    name: Name
    namespace: Namespace = "default"
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    ignored = frozenset(
        {
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "ownerReferences",
            "generation",
            "generateName",
            "managedFields",
            "finalizers",
            "selfLink",
        }
    )


class OwnerReference(Model):
    """An object's owner; berth reads a pod's controller (``berth.api.owners``)."""

    api_version: NonEmpty
    kind: NonEmpty
    name: Name
    uid: StrictStr = ""
    controller: StrictBool | None = None
    ignored = frozenset({"blockOwnerDeletion"})


class PodMeta(ObjectMeta):
    """A pod's metadata: its ownerReferences name the controller that made it."""

    owner_references: list[OwnerReference] = Field(default_factory=list)
    ignored = ObjectMeta.ignored - {"ownerReferences"}


class TemplateMeta(Model):
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    # What kubectl output carries in templates; a pod's own name comes from its controller.
    ignored = frozenset({"name", "namespace", "generateName", "creationTimestamp"})


# -- selectors and affinity -----------------------------------------------------------------------


class SelectorRequirement(Model):
    key: NonEmpty
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] = Field(default_factory=list)


class LabelSelector(Model):
    match_labels: StringMap = Field(default_factory=dict)
    match_expressions: list[SelectorRequirement] = Field(default_factory=list)


class NodeSelectorRequirement(Model):
    key: NonEmpty
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[StrictStr] = Field(default_factory=list)


class NodeFieldRequirement(Model):
    key: Literal["metadata.name"]
    operator: Literal["In", "NotIn"]
    values: list[StrictStr] = Field(default_factory=list)


class NodeSelectorTerm(Model):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeFieldRequirement] = Field(default_factory=list)


class NodeSelector(Model):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(Model):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(Model):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(Model):
    label_selector: LabelSelector | None = None
    topology_key: NonEmpty
    namespaces: list[StrictStr] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[NonEmpty] = Field(default_factory=list)
    mismatch_label_keys: list[NonEmpty] = Field(default_factory=list)


class WeightedPodAffinityTerm(Model):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(Model):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(Model):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(Model):
    key: StrictStr = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: StrictStr = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    ignored = frozenset({"tolerationSeconds"})


InclusionPolicy = Literal["Honor", "Ignore"]


class TopologySpreadConstraint(Model):
    max_skew: Annotated[StrictInt, Field(ge=1)]
    topology_key: NonEmpty
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Annotated[StrictInt, Field(ge=1)] | None = None
    node_affinity_policy: InclusionPolicy | None = None
    node_taints_policy: InclusionPolicy | None = None
    match_label_keys: list[NonEmpty] = Field(default_factory=list)


class ListDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    items: list[Any]
    ignored = frozenset({"metadata"})
