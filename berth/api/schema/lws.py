"""LeaderWorkerSet's manifest shapes (``leaderworkerset.x-k8s.io/v1``, after kubernetes-sigs/lws
``api/leaderworkerset/v1``); ``berth.api.lws`` converts them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, StrictStr

from berth.api.schema.base import Model
from berth.api.schema.meta import ObjectMeta
from berth.api.schema.volcano import MAX_REPLICAS
from berth.api.schema.workloads import Count, IntOrPercent, Replicas, WorkloadTemplate


class LwsRollingUpdate(Model):
    partition: Count = 0
    max_unavailable: IntOrPercent = 1
    max_surge: IntOrPercent = 0


class LwsRolloutStrategy(Model):
    type: Literal["RollingUpdate"] = "RollingUpdate"
    rolling_update_configuration: LwsRollingUpdate | None = None


class LeaderWorkerTemplateDoc(Model):
    leader_template: WorkloadTemplate | None = None
    worker_template: WorkloadTemplate
    size: Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)] = 1
    restart_policy: Literal[
        "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "Default", "None"
    ] = "RecreateGroupOnPodRestart"
    ignored = frozenset({"volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy"})
    unsupported = frozenset({"subGroupPolicy"})


class LeaderWorkerSetSpecDoc(Model):
    replicas: Replicas = 1
    leader_worker_template: LeaderWorkerTemplateDoc
    rollout_strategy: LwsRolloutStrategy = Field(default_factory=LwsRolloutStrategy)
    startup_policy: Literal["LeaderCreated", "LeaderReady"] = "LeaderCreated"
    ignored = frozenset({"networkConfig"})


class LeaderWorkerSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: LeaderWorkerSetSpecDoc
    ignored = frozenset({"status"})
