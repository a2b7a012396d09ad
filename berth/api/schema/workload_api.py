"""The Workload API's manifest shapes (``scheduling.k8s.io`` v1beta1 and v1alpha3: Workload and
PodGroup); ``berth.api.workload_api`` converts them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, StrictStr, model_validator

from berth.api.schema.base import Model, NonEmpty, fail
from berth.api.schema.meta import ObjectMeta

_POLICY_FIELDS = frozenset({"schedulingConstraints", "resourceClaims", "disruptionMode"})
_NOT_MODELLED = frozenset({"preemptionPolicy"})


class BasicPolicy(Model):
    """No fields: its presence asks for pod-by-pod scheduling."""


class GangPolicy(Model):
    min_count: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]


class SchedulingPolicy(Model):
    basic: BasicPolicy | None = None
    gang: GangPolicy | None = None

    @model_validator(mode="after")
    def _one_policy(self) -> SchedulingPolicy:
        if (self.basic is None) == (self.gang is None):
            raise fail("expected exactly one of basic, gang")
        return self

    @property
    def min_member(self) -> int:
        return self.gang.min_count if self.gang is not None else 1


class PodGroupTemplateDoc(Model):
    name: NonEmpty
    scheduling_policy: SchedulingPolicy
    priority_class_name: StrictStr = ""
    priority: StrictInt | None = None
    ignored = _POLICY_FIELDS
    unsupported = _NOT_MODELLED


class WorkloadSpecDoc(Model):
    pod_group_templates: list[PodGroupTemplateDoc] = Field(min_length=1)
    ignored = frozenset({"controllerRef"})
    unsupported = frozenset({"compositePodGroupTemplates"})


class WorkloadDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: WorkloadSpecDoc


class WorkloadReference(Model):
    workload_name: NonEmpty
    template_name: NonEmpty


class PodGroupSpecDoc(Model):
    workload_ref: WorkloadReference | None = None
    scheduling_policy: SchedulingPolicy
    priority_class_name: StrictStr = ""
    priority: StrictInt | None = None
    ignored = _POLICY_FIELDS
    unsupported = _NOT_MODELLED | {"parentCompositePodGroupName"}


class PodGroupDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: PodGroupSpecDoc
    ignored = frozenset({"status"})
