"""Kubeflow's ``kubeflow.org/v1`` PyTorchJob: a master and workers, elastic between
``elasticPolicy.minReplicas`` and ``maxReplicas``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, StrictStr

from berth.api.schema.base import Model
from berth.api.schema.meta import ObjectMeta
from berth.api.schema.volcano import MAX_REPLICAS, PodTemplate

KUBEFLOW_API = "kubeflow.org/v1"


class ReplicaSpec(Model):
    replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    template: PodTemplate
    ignored = frozenset({"restartPolicy"})


class ElasticPolicy(Model):
    min_replicas: Annotated[StrictInt, Field(ge=1)] | None = None
    max_replicas: Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)] | None = None
    ignored = frozenset(
        {"rdzvBackend", "rdzvHost", "rdzvPort", "rdzvId", "rdzvConf", "standalone"}
        | {"nProcPerNode", "maxRestarts", "metrics"}
    )


class PyTorchJobSpec(Model):
    pytorch_replica_specs: dict[Literal["Master", "Worker"], ReplicaSpec]
    elastic_policy: ElasticPolicy | None = None
    ignored = frozenset({"nprocPerNode"})
    unsupported = frozenset({"runPolicy"})


class PyTorchJobDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: PyTorchJobSpec
    ignored = frozenset({"status"})
