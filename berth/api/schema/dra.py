"""Dynamic Resource Allocation, ``resource.k8s.io/v1``: ResourceSlice, DeviceClass,
ResourceClaim and ResourceClaimTemplate, with the field names and shapes of the v1 API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from berth.api.schema.base import Model, NonEmpty, Quantity, fail
from berth.api.schema.meta import NodeSelector, ObjectMeta, TemplateMeta

__all__ = [
    "ALLOCATION_RESULTS_MAX",
    "AllocationMode",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "ContainerClaim",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClassConfiguration",
    "DeviceClassDoc",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceToleration",
    "ExactDeviceRequest",
    "OpaqueDeviceConfiguration",
    "PodResourceClaim",
    "RESOURCE_API",
    "ResourceClaimDoc",
    "ResourceClaimSpec",
    "ResourceClaimTemplateDoc",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSliceDoc",
    "ResourceSliceSpec",
]

RESOURCE_API = "resource.k8s.io/v1"

#: The most results one claim's allocation holds (AllocationResultsMaxSize upstream).
ALLOCATION_RESULTS_MAX = 32


class ResourcePool(Model):
    name: NonEmpty
    generation: Annotated[StrictInt, Field(ge=0)] = 0
    resource_slice_count: Annotated[StrictInt, Field(ge=1)]


class DeviceAttribute(Model):
    """Exactly one typed value (the list forms are the ``ListTypeAttributes`` extension)."""

    int: StrictInt | None = None
    bool: StrictBool | None = None
    string: StrictStr | None = None
    version: StrictStr | None = None
    ints: list[StrictInt] | None = None
    bools: list[StrictBool] | None = None
    strings: list[StrictStr] | None = None
    versions: list[StrictStr] | None = None

    @model_validator(mode="after")
    def _one_value(self) -> DeviceAttribute:
        given = [name for name, value in self if value is not None]
        if len(given) != 1:
            raise fail(
                "expected exactly one of int, bool, string, version, ints, bools, strings, "
                f"versions (got {', '.join(given) or 'none'})"
            )
        return self


class CapacityRequestPolicyRange(Model):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(Model):
    default: Quantity | None = None
    valid_values: list[Quantity] = Field(default_factory=list)
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(Model):
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


class DeviceTaint(Model):
    key: NonEmpty
    value: StrictStr = ""
    effect: Literal["None", "NoSchedule", "NoExecute"]
    ignored = frozenset({"timeAdded"})


class Counter(Model):
    value: Quantity


class DeviceCounterConsumption(Model):
    counter_set: NonEmpty
    counters: dict[StrictStr, Counter] = Field(default_factory=dict)


class CounterSet(Model):
    name: NonEmpty
    counters: dict[StrictStr, Counter] = Field(default_factory=dict)


class Device(Model):
    name: NonEmpty
    attributes: dict[StrictStr, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[StrictStr, DeviceCapacity] = Field(default_factory=dict)
    allow_multiple_allocations: StrictBool | None = None
    taints: list[DeviceTaint] = Field(default_factory=list)
    node_name: StrictStr | None = None
    node_selector: NodeSelector | None = None
    all_nodes: StrictBool | None = None
    consumes_counters: list[DeviceCounterConsumption] = Field(default_factory=list)
    binding_conditions: list[StrictStr] = Field(default_factory=list)
    binding_failure_conditions: list[StrictStr] = Field(default_factory=list)
    binds_to_node: StrictBool | None = None
    ignored = frozenset({"nodeAllocatableResources"})


class ResourceSliceSpec(Model):
    driver: NonEmpty
    pool: ResourcePool
    node_name: StrictStr | None = None
    node_selector: NodeSelector | None = None
    all_nodes: StrictBool | None = None
    per_device_node_selection: StrictBool | None = None
    devices: list[Device] = Field(default_factory=list)
    shared_counters: list[CounterSet] = Field(default_factory=list)
    ignored = frozenset({"partitionTypeAttribute", "skipNodeOperations"})

    @model_validator(mode="after")
    def _one_node_selection(self) -> ResourceSliceSpec:
        given = [
            name
            for name, value in (
                ("nodeName", self.node_name),
                ("nodeSelector", self.node_selector),
                ("allNodes", self.all_nodes or None),
                ("perDeviceNodeSelection", self.per_device_node_selection or None),
            )
            if value
        ]
        if len(given) > 1:
            raise fail(f"set only one of {', '.join(given)}")
        if not given and not self.shared_counters:
            raise fail("expected one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection")
        return self


class ResourceSliceDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: ResourceSliceSpec


class CELDeviceSelector(Model):
    expression: NonEmpty


class DeviceSelector(Model):
    cel: CELDeviceSelector


class OpaqueDeviceConfiguration(Model):
    driver: NonEmpty
    parameters: Any = None


class DeviceClassConfiguration(Model):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(Model):
    selectors: list[DeviceSelector] = Field(default_factory=list)
    config: list[DeviceClassConfiguration] = Field(default_factory=list)
    extended_resource_name: StrictStr | None = None


class DeviceClassDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


class DeviceToleration(Model):
    key: StrictStr = ""
    operator: Literal["Exists", "Equal"] = "Equal"
    value: StrictStr = ""
    effect: Literal["", "None", "NoSchedule", "NoExecute"] = ""
    toleration_seconds: StrictInt | None = None


class CapacityRequirements(Model):
    requests: dict[StrictStr, Quantity] = Field(default_factory=dict)


AllocationMode = Literal["ExactCount", "All"]


class ExactDeviceRequest(Model):
    device_class_name: NonEmpty
    selectors: list[DeviceSelector] = Field(default_factory=list)
    allocation_mode: AllocationMode = "ExactCount"
    count: Annotated[StrictInt, Field(ge=1)] | None = None
    admin_access: StrictBool | None = None
    tolerations: list[DeviceToleration] = Field(default_factory=list)
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(ExactDeviceRequest):
    name: NonEmpty


class DeviceRequest(Model):
    name: NonEmpty
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = Field(default_factory=list, max_length=8)

    @model_validator(mode="after")
    def _one_form(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise fail("expected exactly one of exactly and firstAvailable")
        return self


class DeviceConstraint(Model):
    requests: list[NonEmpty] = Field(default_factory=list)
    match_attribute: NonEmpty | None = None
    distinct_attribute: NonEmpty | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DeviceConstraint:
        if (self.match_attribute is None) == (self.distinct_attribute is None):
            raise fail("expected exactly one of matchAttribute and distinctAttribute")
        return self


class DeviceClaimConfiguration(Model):
    requests: list[NonEmpty] = Field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(Model):
    requests: list[DeviceRequest] = Field(default_factory=list, max_length=ALLOCATION_RESULTS_MAX)
    constraints: list[DeviceConstraint] = Field(default_factory=list, max_length=32)
    config: list[DeviceClaimConfiguration] = Field(default_factory=list, max_length=32)


class ResourceClaimSpec(Model):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class ResourceClaimDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: ResourceClaimSpec
    # An allocation already made is what a live cluster reports; the simulator allocates anew.
    ignored = frozenset({"status"})


class ResourceClaimTemplateSpec(Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: ResourceClaimSpec


class ResourceClaimTemplateDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: ResourceClaimTemplateSpec


class PodResourceClaim(Model):
    """An entry of a pod's ``spec.resourceClaims``."""

    name: NonEmpty
    resource_claim_name: NonEmpty | None = None
    resource_claim_template_name: NonEmpty | None = None

    @model_validator(mode="after")
    def _one_source(self) -> PodResourceClaim:
        if (self.resource_claim_name is None) == (self.resource_claim_template_name is None):
            raise fail("expected exactly one of resourceClaimName and resourceClaimTemplateName")
        return self


class ContainerClaim(Model):
    """An entry of a container's ``resources.claims``."""

    name: NonEmpty
    request: StrictStr = ""
