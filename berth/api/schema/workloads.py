"""Kubernetes' ``apps/v1`` Deployment, ReplicaSet and StatefulSet, ``batch/v1`` Job, and
OpenKruise's ``apps.kruise.io`` CloneSet, StatefulSet, SidecarSet and BroadcastJob."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from berth.api.schema.base import Model, fail
from berth.api.schema.meta import LabelSelector, ObjectMeta, TemplateMeta
from berth.api.schema.pods import Container, PodSpec
from berth.api.schema.volcano import MAX_REPLICAS

APPS_API = "apps/v1"
KUBE_BATCH_API = "batch/v1"
KRUISE_API = "apps.kruise.io/v1alpha1"
KRUISE_BETA_API = "apps.kruise.io/v1beta1"

_PERCENT = re.compile(r"[0-9]+%")


def _check_int_or_percent(value: int | str) -> int | str:
    if isinstance(value, int):
        if value < 0:
            raise fail(f"must be >= 0 (got {value})")
        return value
    if not _PERCENT.fullmatch(value):
        raise fail(f'"{value}" is not a count or a percentage (expected e.g. 2 or "25%")')
    return value


IntOrPercent = Annotated[StrictInt | StrictStr, AfterValidator(_check_int_or_percent)]
Count = Annotated[StrictInt, Field(ge=0)]
#: Replicas, completions, parallelism: bounded as a Volcano task's replicas are.
Replicas = Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)]


class WorkloadTemplate(Model):
    """A pod template; the document as written is kept for the revision hashes."""

    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: PodSpec
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_raw(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        if isinstance(data, dict):
            model._raw = data
        return model

    @property
    def raw(self) -> dict[str, Any]:
        return self._raw


# -- apps/v1 --------------------------------------------------------------------------------------


class RollingUpdateDeployment(Model):
    max_surge: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None


class DeploymentStrategy(Model):
    type: Literal["RollingUpdate", "Recreate"] = "RollingUpdate"
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(Model):
    replicas: Replicas = 1
    selector: LabelSelector
    template: WorkloadTemplate
    strategy: DeploymentStrategy = Field(default_factory=DeploymentStrategy)
    min_ready_seconds: Count = 0
    paused: StrictBool = False
    revision_history_limit: Count = 10
    ignored = frozenset({"progressDeadlineSeconds"})


class ReplicaSetSpec(Model):
    replicas: Replicas = 1
    selector: LabelSelector
    template: WorkloadTemplate
    min_ready_seconds: Count = 0


class StatefulSetRollingUpdate(Model):
    partition: Count = 0
    max_unavailable: IntOrPercent | None = None
    # OpenKruise's Advanced StatefulSet only:
    pod_update_policy: Literal["ReCreate", "InPlaceIfPossible", "InPlaceOnly"] | None = None
    paused: StrictBool = False
    min_ready_seconds: Count | None = None
    ignored = frozenset({"inPlaceUpdateStrategy"})
    unsupported = frozenset({"unorderedUpdate"})


class StatefulSetUpdateStrategy(Model):
    type: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    rolling_update: StatefulSetRollingUpdate | None = None


class StatefulSetOrdinals(Model):
    start: Count = 0


class StatefulSetScaleStrategy(Model):
    max_unavailable: IntOrPercent | None = None


class StatefulSetSpec(Model):
    replicas: Replicas = 1
    selector: LabelSelector
    template: WorkloadTemplate
    pod_management_policy: Literal["OrderedReady", "Parallel"] = "OrderedReady"
    update_strategy: StatefulSetUpdateStrategy = Field(default_factory=StatefulSetUpdateStrategy)
    min_ready_seconds: Count = 0
    ordinals: StatefulSetOrdinals | None = None
    # OpenKruise's Advanced StatefulSet only:
    reserve_ordinals: list[StrictInt | StrictStr] = Field(default_factory=list)
    scale_strategy: StatefulSetScaleStrategy | None = None
    # Storage is not modelled (PersistentVolumeClaims are read past as well).
    ignored = frozenset(
        {
            "serviceName",
            "volumeClaimTemplates",
            "persistentVolumeClaimRetentionPolicy",
            "revisionHistoryLimit",
            "volumeClaimUpdateStrategy",
        }
    )
    unsupported = frozenset({"lifecycle"})


class DeploymentDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: DeploymentSpec
    ignored = frozenset({"status"})


class ReplicaSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: ReplicaSetSpec
    ignored = frozenset({"status"})


class StatefulSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: StatefulSetSpec
    ignored = frozenset({"status"})


# -- batch/v1 -------------------------------------------------------------------------------------


class KubeJobSpec(Model):
    parallelism: Replicas | None = None
    completions: Replicas | None = None
    backoff_limit: Count = 6
    completion_mode: Literal["NonIndexed", "Indexed"] = "NonIndexed"
    active_deadline_seconds: Annotated[StrictInt, Field(ge=1)] | None = None
    selector: LabelSelector | None = None
    template: WorkloadTemplate
    ignored = frozenset({"ttlSecondsAfterFinished", "manualSelector"})
    unsupported = frozenset(
        {"suspend", "podFailurePolicy", "backoffLimitPerIndex", "maxFailedIndexes", "successPolicy"}
    )


class KubeJobDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: KubeJobSpec
    ignored = frozenset({"status"})


# -- apps.kruise.io -------------------------------------------------------------------------------


class CloneSetScaleStrategy(Model):
    pods_to_delete: list[StrictStr] = Field(default_factory=list)
    max_unavailable: IntOrPercent | None = None
    ignored = frozenset({"disablePVCReuse"})


class InPlaceUpdateStrategy(Model):
    grace_period_seconds: Count = 0


class CloneSetUpdateStrategy(Model):
    type: Literal["ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete"] = "ReCreate"
    partition: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    max_surge: IntOrPercent | None = None
    paused: StrictBool = False
    in_place_update_strategy: InPlaceUpdateStrategy | None = None
    unsupported = frozenset({"priorityStrategy", "scatterStrategy"})


class CloneSetSpec(Model):
    replicas: Replicas = 1
    selector: LabelSelector
    template: WorkloadTemplate
    scale_strategy: CloneSetScaleStrategy = Field(default_factory=CloneSetScaleStrategy)
    update_strategy: CloneSetUpdateStrategy = Field(default_factory=CloneSetUpdateStrategy)
    min_ready_seconds: Count = 0
    ignored = frozenset({"revisionHistoryLimit", "volumeClaimTemplates", "progressDeadlineSeconds"})
    unsupported = frozenset({"lifecycle"})


class CloneSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: CloneSetSpec
    ignored = frozenset({"status"})


class SidecarUpgradeStrategy(Model):
    upgrade_type: Literal["ColdUpgrade", "HotUpgrade"] = "ColdUpgrade"
    ignored = frozenset({"hotUpgradeEmptyImage"})


class SidecarContainer(Container):
    name: Annotated[StrictStr, Field(min_length=1)]
    upgrade_strategy: SidecarUpgradeStrategy | None = None
    # How the container is wired into the pod, which does not change its scheduling.
    ignored = Container.ignored | frozenset(
        {"podInjectPolicy", "shareVolumePolicy", "shareVolumeDevicePolicy", "transferEnv"}
    )


class SidecarSetUpdateStrategy(Model):
    type: Literal["RollingUpdate", "NotUpdate"] = "RollingUpdate"
    partition: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    selector: LabelSelector | None = None
    paused: StrictBool = False
    unsupported = frozenset({"priorityStrategy", "scatterStrategy"})


class SidecarSetInjectionStrategy(Model):
    paused: StrictBool = False  # no injection into new pods (existing ones keep theirs)
    unsupported = frozenset({"revision"})


class SidecarSetSpec(Model):
    selector: LabelSelector
    namespace: StrictStr = ""
    containers: list[SidecarContainer] = Field(default_factory=list)
    init_containers: list[SidecarContainer] = Field(default_factory=list)
    update_strategy: SidecarSetUpdateStrategy = Field(default_factory=SidecarSetUpdateStrategy)
    injection_strategy: SidecarSetInjectionStrategy = Field(
        default_factory=SidecarSetInjectionStrategy
    )
    ignored = frozenset({"volumes", "imagePullSecrets", "revisionHistoryLimit"})
    unsupported = frozenset({"namespaceSelector", "patchPodMetadata"})


class SidecarSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: SidecarSetSpec
    ignored = frozenset({"status"})


class CompletionPolicy(Model):
    type: Literal["Always", "Never"] = "Always"
    active_deadline_seconds: Annotated[StrictInt, Field(ge=1)] | None = None
    ignored = frozenset({"ttlSecondsAfterFinished"})


class FailurePolicy(Model):
    type: Literal["FailFast", "Continue", "Pause"] = "FailFast"
    ignored = frozenset({"restartLimit"})


class BroadcastJobSpec(Model):
    template: WorkloadTemplate
    parallelism: IntOrPercent | None = None
    completion_policy: CompletionPolicy = Field(default_factory=CompletionPolicy)
    failure_policy: FailurePolicy = Field(default_factory=FailurePolicy)
    paused: StrictBool = False


class BroadcastJobDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: BroadcastJobSpec
    ignored = frozenset({"status"})
