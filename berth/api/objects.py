"""berth's in-memory objects: what manifests become and what the store, the engine and the
simulator pass around.

They keep the Kubernetes shapes (selectors, affinity terms and tolerations, in
``berth.api.selectors``) but with quantities already converted to canonical integers (see
``berth.resources``), so nothing downstream parses strings again. The label and annotation names
they are read from are in ``berth.api.keys``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from berth.api.elastic import ElasticSpec
from berth.api.keys import DEFAULT_QUEUE, PREEMPT_LOWER_PRIORITY
from berth.api.pod import FINAL_POD_PHASES as FINAL_POD_PHASES
from berth.api.pod import Pod as Pod
from berth.api.pod import PodPhase as PodPhase
from berth.api.pod import PodSettings as PodSettings
from berth.api.pod import task_name as task_name
from berth.api.selectors import Taint


class GroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


@dataclass(slots=True, frozen=True)
class CpuTopology:
    """Sockets, physical cores per socket, hardware threads per core and NUMA nodes per
    socket (the socket's cores split evenly among them)."""

    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    numa_per_socket: int = 1

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


@dataclass(slots=True)
class Namespace:
    """``v1 Namespace``: only its labels matter, to affinity terms' ``namespaceSelector``."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Node:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, int] = field(default_factory=dict)  # canonical units
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    cpu_topology: CpuTopology | None = None

    @property
    def key(self) -> str:
        return self.name  # nodes have no namespace


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """Volcano's ``networkTopology``: the gang's pods must share a switch of tier
    ``highest_tier`` or lower (None: any tier a HyperNode has). ``hard`` leaves the gang
    pending when no such switch can hold it; soft only prefers one."""

    hard: bool = True
    highest_tier: int | None = None


@dataclass(slots=True)
class PodGroup:
    name: str
    namespace: str = "default"
    min_member: int = 1
    min_resources: dict[str, int] = field(default_factory=dict)
    queue: str = DEFAULT_QUEUE
    priority_class_name: str = ""
    priority: int = 0
    submit_time: float = 0.0
    implicit: bool = False  # made by berth for a pod without a group
    annotations: dict[str, str] = field(default_factory=dict)
    preemptable: bool = True  # False: none of its pods is evicted by preempt or reclaim
    #: Made by a batch Job's controller, which creates the pods only once the group is admitted.
    owned: bool = False
    #: Per-task minimums (Volcano's minTaskMember), by the pods' ``volcano.sh/task-spec``;
    #: enforced only when minMember covers their sum, as Volcano does.
    min_task_member: dict[str, int] = field(default_factory=dict)
    network_topology: NetworkTopology | None = None
    # runtime
    phase: GroupPhase = GroupPhase.PENDING
    start_time: float | None = None
    end_time: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class Queue:
    name: str
    weight: int = 1
    capability: dict[str, int] = field(default_factory=dict)  # upper limit; unlisted: unlimited
    state: str = "Open"
    guarantee: dict[str, int] = field(default_factory=dict)  # reserved for this queue alone
    deserved: dict[str, int] = field(default_factory=dict)  # the capacity plugin's fair share
    reclaimable: bool = True  # False: other queues never reclaim what this one holds
    parent: str = ""  # empty (or "root" when no queue has that name): a top-level queue
    #: spec.priority: proportion and capacity serve a queue of higher priority first.
    priority: int = 0
    annotations: dict[str, str] = field(default_factory=dict)

    def snapshot(self) -> tuple:
        """Everything the queue says, as a tuple its later changes in place (opened,
        re-weighted) leave as it was: compared between sessions to see whether it changed."""
        return (
            self.name,
            self.weight,
            self.state,
            self.reclaimable,
            self.parent,
            self.priority,
            tuple(self.capability.items()),
            tuple(self.guarantee.items()),
            tuple(self.deserved.items()),
            tuple(self.annotations.items()),
        )


@dataclass(slots=True)
class PriorityClass:
    name: str
    value: int = 0
    global_default: bool = False
    #: Given to the class's pods that set none themselves (as Kubernetes admission does).
    preemption_policy: str = PREEMPT_LOWER_PRIORITY


class JobPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


#: Phases a Job never leaves (Aborted is left by ResumeJob).
FINAL_JOB_PHASES = frozenset({JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED})


class JobEvent(StrEnum):
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    TASK_COMPLETED = "TaskCompleted"
    UNKNOWN = "Unknown"
    ANY = "*"


class JobAction(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"


@dataclass(slots=True, frozen=True)
class LifecyclePolicy:
    """``event``/``events`` or ``exitCode`` → ``action``, after ``timeout`` seconds if set."""

    action: JobAction
    events: frozenset[JobEvent] = frozenset()
    exit_code: int | None = None
    timeout: float | None = None

    def matches(self, event: JobEvent, exit_code: int | None) -> bool:
        if self.exit_code is not None:
            return event == JobEvent.POD_FAILED and exit_code == self.exit_code
        return event in self.events or JobEvent.ANY in self.events


@dataclass(slots=True)
class TaskSpec:
    name: str
    replicas: int
    template: Pod  # a prototype: each replica is a copy named <job>-<task>-<index>
    min_available: int | None = None
    policies: tuple[LifecyclePolicy, ...] = ()
    depends_on: tuple[str, ...] = ()
    depends_on_any: bool = False  # iteration "any": one of the named tasks ready is enough


@dataclass(slots=True)
class BatchJob:
    """Volcano's ``batch.volcano.sh`` Job: task templates and lifecycle policies; its controller
    turns it into a PodGroup and pods."""

    name: str
    namespace: str = "default"
    tasks: list[TaskSpec] = field(default_factory=list)
    min_available: int = 0
    min_success: int | None = None
    queue: str = DEFAULT_QUEUE
    priority_class_name: str = ""
    priority: int = 0
    max_retry: int = 3
    policies: tuple[LifecyclePolicy, ...] = ()
    submit_time: float = 0.0
    annotations: dict[str, str] = field(default_factory=dict)
    preemptable: bool = True
    network_topology: NetworkTopology | None = None
    elastic: ElasticSpec | None = None  # berth.io/elastic: workers above the gang come and go
    # runtime
    phase: JobPhase = JobPhase.PENDING
    retries: int = 0
    resizes: int = 0  # an elastic job's changes of running workers
    counts: dict[str, int] = field(default_factory=dict)  # pods pending/running/succeeded/failed
    #: (time, phase, why) for every phase change, oldest first: the Job's conditions.
    conditions: list[tuple[float, JobPhase, str]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)


@dataclass(slots=True)
class Command:
    """Volcano's ``bus.volcano.sh`` Command: an action on a Job, issued at ``submit_time``."""

    name: str
    namespace: str
    action: JobAction
    target: str  # the Job's name, in the Command's namespace
    submit_time: float = 0.0
    reason: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
