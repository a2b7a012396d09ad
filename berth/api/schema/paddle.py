"""PaddlePaddle EDL's ``paddlepaddle.org/v1`` TrainingJob: trainers elastic between
``min-instance`` and ``max-instance``, parameter servers, and a master when fault tolerant.

EDL spells its fields in three styles (``fault_tolerant``, ``min-instance``, ``VolumeMounts``),
so the aliases here are explicit rather than generated."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, StrictStr

from berth.api.schema.base import Model
from berth.api.schema.meta import ObjectMeta
from berth.api.schema.pods import ResourceRequirements
from berth.api.schema.volcano import MAX_REPLICAS

PADDLE_API = "paddlepaddle.org/v1"

Instances = Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)]

#: What the operator fills in or what only the container sees: no bearing on placement.
_ROLE_IGNORED = frozenset(
    {"etcd-endpoint", "envs", "replicaSpec", "imagePullSecrets", "grace_period_seconds"}
    | {"pre_stop_cmd", "liveness_probe", "readiness_probe", "index_succeed"}
)
#: Placement constraints later paddle-operator versions added per role; not read yet.
_ROLE_UNSUPPORTED = frozenset({"tolerations", "node_selector"})


class TrainerSpec(Model):
    entrypoint: StrictStr = ""
    min_instance: Instances = Field(alias="min-instance")
    max_instance: Instances = Field(alias="max-instance")
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ignored = _ROLE_IGNORED | {"workspace"}
    unsupported = _ROLE_UNSUPPORTED


class PserverSpec(Model):
    # 0 is what EDL reads for a job without parameter servers.
    min_instance: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = Field(alias="min-instance")
    max_instance: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] | None = Field(
        default=None, alias="max-instance"
    )
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ignored = _ROLE_IGNORED | {"entrypoint"}
    unsupported = _ROLE_UNSUPPORTED


class MasterSpec(Model):
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ignored = _ROLE_IGNORED
    unsupported = _ROLE_UNSUPPORTED


class TrainingJobSpec(Model):
    image: StrictStr = ""
    fault_tolerant: StrictBool = Field(default=False, alias="fault_tolerant")
    trainer: TrainerSpec
    pserver: PserverSpec | None = None
    master: MasterSpec | None = None
    ignored = frozenset(
        {"port", "ports_num", "ports_num_for_sparse", "passes", "volumes", "VolumeMounts"}
        | {"host_network", "matrix"}
    )
    unsupported = frozenset({"NodeSelector"})


class TrainingJobDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: TrainingJobSpec
    ignored = frozenset({"status"})
