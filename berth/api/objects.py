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
from typing import Any

from berth.api.elastic import ElasticSpec
from berth.api.keys import (
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    TASK_NAME_LABEL,
)
from berth.api.qos import LOW_BANDS, PriorityBand, QoS, band_of, qos_of
from berth.api.selectors import Affinity, LabelSelector, SpreadConstraint, Taint, Toleration
from berth.api.usage import UsageProfile


class PodPhase(StrEnum):
    PENDING = "Pending"
    BOUND = "Bound"  # bound to a node, container not started yet
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    EVICTED = "Evicted"
    DELETED = "Deleted"  # removed by its job's controller (restart, abort, ...) before it ended


FINAL_POD_PHASES = frozenset(
    {PodPhase.SUCCEEDED, PodPhase.FAILED, PodPhase.EVICTED, PodPhase.DELETED}
)


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


@dataclass(slots=True)
class Pod:
    name: str
    namespace: str = "default"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(
        default_factory=dict
    )  # canonical units, summed over containers
    #: (cpu, memory) as kube-scheduler's allocation scores count them: a container that
    #: requests no cpu counts 100m, none memory 200 MiB. None: the requests themselves.
    nonzero_requests: tuple[int, int] | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity = field(default_factory=Affinity)
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    priority: int = 0
    priority_class_name: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER
    node_name: str = ""  # spec.nodeName: already placed by the user
    group: str = ""  # PodGroup name; empty = implicit group of one
    submit_time: float = 0.0
    duration: float | None = None  # None: runs until the simulation ends
    utilization: float = 1.0  # used / requested, for the simulated usage model
    #: Usage varying over time (berth.api.usage); None: ``utilization`` throughout.
    usage_profile: UsageProfile | None = None
    preemptable: bool = True  # False: never evicted by preempt or reclaim
    #: spec.preemptionPolicy, else its PriorityClass's (empty: neither says): Never keeps the
    #: pod from evicting anyone.
    preemption_policy: str = ""
    #: Simulated fault: seconds after start at which the container exits with ``fail_exit_code``
    #: (with probability ``fail_probability``), unless it finishes first.
    fail_after: float | None = None
    fail_exit_code: int = 1
    fail_probability: float = 1.0
    #: (name, image) of each regular container: what an in-place update changes.
    containers: tuple[tuple[str, str], ...] = ()
    owner: str = ""  # key of the object whose controller created the pod; empty for plain pods
    owner_kind: str = ""  # that object's kind in the store ("" for a Volcano Job's pods)
    #: The selector of the ReplicaSet or StatefulSet (apps/v1) that made the pod: the peers
    #: kube-scheduler's default topology spreading counts for it.
    owner_selector: LabelSelector | None = None
    #: spec.resourceClaims (``berth.api.dra.PodClaim``): the DRA claims the pod asks for.
    resource_claims: tuple[Any, ...] = ()
    uid: str = ""  # set by the controller that creates the pod; a replacement gets a new one
    # runtime
    phase: PodPhase = PodPhase.PENDING
    bound_node: str = ""
    gpu_devices: str = ""  # the GPU devices it was placed on ("3:460", "0,1,2,3")
    cpuset: str = ""  # the cpus it holds to itself ("0-3,48-51"), berth.cluster.cpusets
    bind_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    exit_code: int | None = None
    #: When the pod last became ready (started, or back from an in-place restart); None while
    #: it is not ready.
    ready_since: float | None = None
    restarts: int = 0  # container restarts (in-place updates)
    #: Being deleted (a cluster pod with a deletionTimestamp, in its grace period): still on
    #: its node, but no longer one of its job's workers.
    terminating: bool = False
    #: Why it waited before it was bound (empty: bound in the first cycle after it arrived).
    waited_for: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def job_key(self) -> str:
        """Its job's key: the key of the PodGroup it belongs to."""
        return f"{self.namespace}/{self.group}"

    @property
    def ref(self) -> str:
        """This pod object among all a run has seen: its uid when a controller made it (a
        StatefulSet's replacement reuses the name), else ``namespace/name``."""
        return self.uid or f"{self.namespace}/{self.name}"

    @property
    def may_preempt(self) -> bool:
        return self.preemption_policy != PREEMPT_NEVER

    @property
    def qos(self) -> QoS:
        """Koordinator's QoS class (berth.api.qos)."""
        return qos_of(self.labels, self.requests)

    @property
    def band(self) -> PriorityBand:
        """Koordinator's priority band (berth.api.qos)."""
        return band_of(self.labels, self.priority, self.qos)

    @property
    def reclaimed(self) -> bool:
        """Runs on reclaimed (batch) resources: its usage does not count against them."""
        return self.band in LOW_BANDS

    def placed_at(self, now: float) -> float:
        """When the pod was placed: its bind; for a pod placed before this berth started, its
        kubelet's start; ``now`` for one with neither. The newest placed go first when a job
        is scaled in."""
        if self.bind_time is not None:
            return self.bind_time
        return self.start_time if self.start_time is not None else now

    def usage_at(self, t: float) -> tuple[float, float]:
        """(cpu, memory) used ÷ requested at time ``t``."""
        if self.usage_profile is None:
            return self.utilization, self.utilization
        return self.usage_profile.at(t)

    @property
    def best_effort(self) -> bool:
        """No requests for cpu, memory or GPU: placed by backfill, not by allocate. (Asked for
        every pod as it arrives and is placed: most ask for cpu, which answers at once.)"""
        requests = self.requests
        if requests.get("cpu") or requests.get("memory"):
            return False
        return not any(v for k, v in requests.items() if k != "pods")


def task_name(pod: Pod) -> str:
    """The task a pod belongs to in its group (a label or an annotation, as Volcano reads it)."""
    return pod.labels.get(TASK_NAME_LABEL) or pod.annotations.get(TASK_NAME_LABEL, "")


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
