"""JobSet's manifest shapes (``jobset.x-k8s.io/v1alpha2``, after kubernetes-sigs/jobset
``api/jobset/v1alpha2``); ``berth.api.jobset`` converts them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, StrictStr

from berth.api.schema.base import Model, NonEmpty
from berth.api.schema.meta import ObjectMeta, TemplateMeta
from berth.api.schema.workloads import KubeJobSpec as KubeJobSpecDoc
from berth.api.schema.workloads import Replicas


class JobTemplateDoc(Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: KubeJobSpecDoc


class ReplicatedJobDoc(Model):
    name: NonEmpty
    template: JobTemplateDoc
    replicas: Replicas = 1
    ignored = frozenset({"groupName"})
    unsupported = frozenset({"dependsOn"})


class SuccessPolicyDoc(Model):
    operator: Literal["All", "Any"]
    target_replicated_jobs: list[StrictStr] = Field(default_factory=list)


class FailurePolicyDoc(Model):
    max_restarts: StrictInt = Field(default=0, ge=0)
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] = "Recreate"
    unsupported = frozenset({"rules"})


class JobSetSpecDoc(Model):
    replicated_jobs: list[ReplicatedJobDoc] = Field(min_length=1)
    success_policy: SuccessPolicyDoc | None = None
    failure_policy: FailurePolicyDoc | None = None
    ignored = frozenset(
        {"network", "coordinator", "managedBy", "ttlSecondsAfterFinished", "volumeClaimPolicies"}
    )
    unsupported = frozenset({"startupPolicy", "suspend"})


class JobSetDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: JobSetSpecDoc
    ignored = frozenset({"status"})
