"""``v1 Pod``: containers, resources and the scheduling fields of a pod spec."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, StrictStr

from berth.api.schema.base import Model, NonEmpty, ResourceList, StringMap
from berth.api.schema.dra import ContainerClaim, PodResourceClaim
from berth.api.schema.meta import Affinity, PodMeta, Toleration, TopologySpreadConstraint


class ResourceRequirements(Model):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)
    claims: list[ContainerClaim] = Field(default_factory=list)


class Container(Model):
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    # "Always" on an init container makes it a sidecar, which changes how requests add up.
    restart_policy: StrictStr = ""
    # What an in-place update changes; Kubernetes requires both, berth only reads them.
    name: StrictStr = ""
    image: StrictStr = ""
    ignored = frozenset(
        {
            "imagePullPolicy",
            "command",
            "args",
            "workingDir",
            "env",
            "envFrom",
            "ports",
            "volumeMounts",
            "volumeDevices",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
            "resizePolicy",
            "restartPolicyRules",
        }
    )


PreemptionPolicy = Literal["Never", "PreemptLowerPriority"]


class PodSchedulingGroup(Model):
    """The Workload API's group of a pod (``berth.api.workload_api``)."""

    pod_group_name: NonEmpty | None = None


class PodSpec(Model):
    containers: list[Container] = Field(min_length=1)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    node_selector: StringMap = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    priority: StrictInt | None = None
    priority_class_name: StrictStr = ""
    scheduler_name: NonEmpty | None = None
    node_name: StrictStr = ""
    preemption_policy: PreemptionPolicy | None = None
    resource_claims: list[PodResourceClaim] = Field(default_factory=list)
    scheduling_group: PodSchedulingGroup | None = None
    ignored = frozenset(
        {
            "volumes",
            "restartPolicy",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "hostUsers",
            "hostAliases",
            "hostname",
            "subdomain",
            "setHostnameAsFQDN",
            "dnsPolicy",
            "dnsConfig",
            "securityContext",
            "imagePullSecrets",
            "enableServiceLinks",
            "runtimeClassName",
            "readinessGates",
            "shareProcessNamespace",
            "ephemeralContainers",
            "os",
        }
    )
    unsupported = frozenset({"schedulingGates", "resources"})


class PodDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: PodMeta
    spec: PodSpec
    ignored = frozenset({"status"})
