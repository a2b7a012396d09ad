"""Volcano's PodGroup, Queue, Job and Command, and ``scheduling.k8s.io`` PriorityClass."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from berth.api.schema.base import Model, Name, NonEmpty, ResourceList, fail
from berth.api.schema.meta import ObjectMeta, TemplateMeta
from berth.api.schema.pods import PodSpec, PreemptionPolicy
from berth.api.schema.topology import NetworkTopologySpec


class PodGroupSpec(Model):
    min_member: Annotated[StrictInt, Field(ge=0)] = 1
    min_resources: ResourceList = Field(default_factory=dict)
    queue: NonEmpty = "default"
    priority_class_name: StrictStr = ""
    min_task_member: dict[StrictStr, Annotated[StrictInt, Field(ge=0)]] = Field(
        default_factory=dict
    )
    network_topology: NetworkTopologySpec | None = None


class PodGroupDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    ignored = frozenset({"status"})


QueueState = Literal["Open", "Closed"]


class QueueGuarantee(Model):
    resource: ResourceList = Field(default_factory=dict)


class QueueSpec(Model):
    weight: Annotated[StrictInt, Field(ge=1)] = 1
    capability: ResourceList = Field(default_factory=dict)
    deserved: ResourceList = Field(default_factory=dict)
    guarantee: QueueGuarantee = Field(default_factory=QueueGuarantee)
    reclaimable: StrictBool = True
    parent: Name | None = None
    state: QueueState | None = None
    priority: StrictInt = 0
    # Multi-cluster placement has no meaning in a single simulated cluster.
    ignored = frozenset({"extendClusters", "affinity", "type"})


class QueueStatus(Model):
    state: QueueState | None = None
    ignored = frozenset(
        {
            "pending",
            "running",
            "inqueue",
            "unknown",
            "completed",
            "allocated",
            "reservation",
            "conditions",
        }
    )


class QueueDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)


class PriorityClassDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    value: StrictInt
    global_default: StrictBool = False
    preemption_policy: PreemptionPolicy = "PreemptLowerPriority"
    ignored = frozenset({"description"})


# -- batch.volcano.sh Job and bus.volcano.sh Command -----------------------------------------------

JobEventName = Literal[
    "PodFailed", "PodEvicted", "PodPending", "PodRunning", "TaskCompleted", "Unknown", "*"
]
JobActionName = Literal[
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
]


class JobPolicy(Model):
    event: JobEventName | None = None
    events: list[JobEventName] = Field(default_factory=list)
    exit_code: StrictInt | None = None
    action: JobActionName
    timeout: StrictStr | None = None

    @model_validator(mode="after")
    def _one_trigger(self) -> JobPolicy:
        # Volcano's admission rules: a policy reacts to events or to an exit code, not both,
        # and exit code 0 is success, which no policy can catch.
        has_events = self.event is not None or bool(self.events)
        if has_events and self.exit_code is not None:
            raise fail("set either event/events or exitCode, not both")
        if not has_events and self.exit_code is None:
            raise fail("expected event, events or exitCode")
        if self.exit_code == 0:
            raise fail("exitCode 0 means success and cannot trigger a policy")
        return self


class DependsOn(Model):
    name: list[NonEmpty] = Field(min_length=1)
    iteration: Literal["any", "all"] = "all"


class PodTemplate(Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: PodSpec


#: The most replicas one task may ask for: beyond this a number is a typo, and creating the
#: pods would only exhaust memory (Kubernetes' own limit is 2^31).
MAX_REPLICAS = 1_000_000


class JobTask(Model):
    name: Name
    replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    min_available: Annotated[StrictInt, Field(ge=0)] | None = None
    template: PodTemplate
    policies: list[JobPolicy] = Field(default_factory=list)
    depends_on: DependsOn | None = None
    unsupported = frozenset({"topologyPolicy", "partitionPolicy", "maxRetry"})


class JobSpec(Model):
    min_available: Annotated[StrictInt, Field(ge=0)] | None = None
    min_success: Annotated[StrictInt, Field(ge=1)] | None = None
    queue: NonEmpty = "default"
    priority_class_name: StrictStr = ""
    scheduler_name: NonEmpty | None = None
    max_retry: Annotated[StrictInt, Field(ge=0)] = 3
    tasks: list[JobTask] = Field(min_length=1)
    policies: list[JobPolicy] = Field(default_factory=list)
    network_topology: NetworkTopologySpec | None = None
    ignored = frozenset({"ttlSecondsAfterFinished"})
    unsupported = frozenset({"plugins", "volumes", "runningEstimate"})


class JobDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: JobSpec
    ignored = frozenset({"status"})


class CommandTarget(Model):
    kind: Literal["Job"]
    name: Name
    ignored = frozenset({"apiVersion", "uid", "controller", "blockOwnerDeletion"})


class CommandDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    action: JobActionName
    target: CommandTarget
    reason: StrictStr = ""
    message: StrictStr = ""
