"""berth's in-memory objects: what manifests become and what the store, the engine and the
simulator pass around.

They keep the Kubernetes shapes (selectors, affinity terms, tolerations) but with quantities
already converted to canonical integers (see ``berth.resources``), so nothing downstream parses
strings again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from berth.api.elastic import ElasticSpec
from berth.api.qos import LOW_BANDS, PriorityBand, QoS, band_of, qos_of
from berth.api.usage import UsageProfile

# Label and annotation keys berth reads or writes.
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # the GPU model (NVIDIA's GPU feature discovery)
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
SLA_WAITING_TIME_ANNOTATION = "sla-waiting-time"
SUBMIT_TIME_ANNOTATION = "berth.io/submit-time"
DURATION_ANNOTATION = "berth.io/duration"
UTILIZATION_ANNOTATION = "berth.io/utilization"
FAIL_AFTER_ANNOTATION = "berth.io/fail-after"
EXIT_CODE_ANNOTATION = "berth.io/exit-code"
FAIL_PROBABILITY_ANNOTATION = "berth.io/fail-probability"
#: GPU memory per device (on nodes) or needed on each device a pod uses, MiB.
GPU_MEMORY_ANNOTATION = "berth.io/gpu-memory"
#: A node's GPU interconnect islands (NVLink / NVSwitch domains): device indices, comma-separated
#: within a group, groups separated by semicolons ("0,1,2,3;4,5,6,7"). Without it a node's
#: devices form one group; a device it does not list is a group of its own.
GPU_TOPOLOGY_ANNOTATION = "berth.io/gpu-topology"


def gpu_groups(text: str) -> tuple[tuple[int, ...], ...]:
    """The device groups of a ``berth.io/gpu-topology`` annotation; ValueError says what is
    wrong with it."""
    groups = []
    seen: set[int] = set()
    for part in text.split(";"):
        if not part.strip():
            raise ValueError("an empty group (expected e.g. 0,1,2,3;4,5,6,7)")
        group = []
        for item in part.split(","):
            try:
                device = int(item.strip())
            except ValueError:
                raise ValueError(
                    f"{item.strip()!r} is not a device index (expected e.g. 0,1,2,3;4,5,6,7)"
                ) from None
            if device < 0:
                raise ValueError(f"device {device}: indices start at 0")
            if device in seen:
                raise ValueError(f"device {device} is in two groups")
            seen.add(device)
            group.append(device)
        groups.append(tuple(group))
    return tuple(groups)


# What Volcano's job controller puts on the pods it creates.
JOB_NAME_LABEL = "volcano.sh/job-name"
TASK_NAME_LABEL = "volcano.sh/task-spec"
TASK_INDEX_ANNOTATION = "volcano.sh/task-index"
# What workload controllers put on their pods (Kubernetes' and OpenKruise's keys).
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
REVISION_LABEL = "controller-revision-hash"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
#: Seconds OpenKruise waits, the pod unready, before it changes a pod's images in place.
INPLACE_GRACE_ANNOTATION = "apps.kruise.io/inplace-update-grace"
TOPOLOGY_SOCKETS = "berth.io/cpu-sockets"
TOPOLOGY_CORES = "berth.io/cpu-cores-per-socket"
TOPOLOGY_THREADS = "berth.io/cpu-threads-per-core"
TOPOLOGY_NUMA = "berth.io/cpu-numa-nodes-per-socket"
#: Koordinator's pod resource spec (``preferredCPUBindPolicy``) and status (``cpuset``), and
#: the node label choosing how NUMA nodes are filled.
RESOURCE_SPEC_ANNOTATION = "scheduling.koordinator.sh/resource-spec"
RESOURCE_STATUS_ANNOTATION = "scheduling.koordinator.sh/resource-status"
CPU_BIND_POLICY_KEY = "preferredCPUBindPolicy"
NUMA_STRATEGY_LABEL = "node.koordinator.sh/numa-allocate-strategy"
FULL_PCPUS = "FullPCPUs"
SPREAD_BY_PCPUS = "SpreadByPCPUs"
BIND_POLICIES = (FULL_PCPUS, SPREAD_BY_PCPUS)
MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
NUMA_STRATEGIES = (MOST_ALLOCATED, LEAST_ALLOCATED)
DEFAULT_SCHEDULER = "berth"
DEFAULT_QUEUE = "default"
# Volcano's hierarchical DRF reads a queue's place in the tree from these annotations.
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
# Pod and PriorityClass preemptionPolicy values.
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"


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
class Requirement:
    """One ``matchExpressions`` entry (node selector terms and label selectors alike)."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def valid_label_value(value: str) -> bool:
    """What Kubernetes accepts as a label value: empty, or up to 63 alphanumerics, '-', '_'
    and '.', starting and ending alphanumeric."""
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def valid_label_key(key: str) -> bool:
    """A qualified name: an optional DNS-subdomain prefix and '/', then a name of up to 63."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None


def valid_requirement(req: Requirement) -> bool:
    """Whether kube-scheduler can turn a node selector requirement into a selector; one that it
    cannot makes the whole term match no node."""
    if not valid_label_key(req.key):
        return False
    if req.operator in ("In", "NotIn"):
        return all(valid_label_value(v) for v in req.values)
    if req.operator in ("Gt", "Lt"):
        return len(req.values) == 1 and _INTEGER.fullmatch(req.values[0]) is not None
    return True


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """``matchLabels`` folded into ``In`` requirements; an empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        for req in self.requirements:
            value = labels.get(req.key)
            op = req.operator
            if op == "In":
                if value is None or value not in req.values:
                    return False
            elif op == "NotIn":
                if value is not None and value in req.values:
                    return False
            elif op == "Exists":
                if value is None:
                    return False
            elif op == "DoesNotExist":
                if value is not None:
                    return False
            elif op in ("Gt", "Lt"):
                try:
                    number, bound = int(value), int(req.values[0])  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    return False
                if (op == "Gt" and not number > bound) or (op == "Lt" and not number < bound):
                    return False
        return True


#: A selector no labels satisfy (``In`` with no values): what Kubernetes makes of a missing
#: ``labelSelector``.
MATCH_NOTHING = LabelSelector((Requirement("", "In", ()),))


def with_label_keys(
    selector: LabelSelector,
    labels: dict[str, str],
    match_keys: tuple[str, ...],
    mismatch_keys: tuple[str, ...] = (),
) -> LabelSelector:
    """``selector`` narrowed to the pods whose labels agree with ``labels`` on ``match_keys``
    and differ on ``mismatch_keys`` (``matchLabelKeys`` / ``mismatchLabelKeys``); keys the pod
    does not carry are left out, as in Kubernetes."""
    extra = tuple(Requirement(k, "In", (labels[k],)) for k in match_keys if k in labels)
    extra += tuple(Requirement(k, "NotIn", (labels[k],)) for k in mismatch_keys if k in labels)
    return LabelSelector(selector.requirements + extra) if extra else selector


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """Requirements on node labels (``matchExpressions``) and node fields (``matchFields``:
    only ``metadata.name`` exists in Kubernetes)."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()


@dataclass(slots=True, frozen=True)
class PreferredNodeTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(slots=True, frozen=True)
class PodAffinityTerm:
    selector: LabelSelector
    topology_key: str
    #: Namespaces named outright; with no ``namespace_selector`` either: the pod's own.
    namespaces: tuple[str, ...] = ()
    #: Namespaces by their labels (``namespaceSelector``); an empty selector means all.
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    def for_pod(self, labels: dict[str, str]) -> PodAffinityTerm:
        """The term with ``matchLabelKeys`` / ``mismatchLabelKeys`` folded into its selector
        for the pod that carries it (what the API server does when it admits the pod)."""
        if not self.match_label_keys and not self.mismatch_label_keys:
            return self
        selector = with_label_keys(
            self.selector, labels, self.match_label_keys, self.mismatch_label_keys
        )
        return PodAffinityTerm(
            selector, self.topology_key, self.namespaces, self.namespace_selector
        )


@dataclass(slots=True, frozen=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule, PreferNoSchedule, NoExecute


@dataclass(slots=True, frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule or ScheduleAnyway
    selector: LabelSelector
    min_domains: int = 1
    #: Which nodes' pods count: Honor keeps to the nodes the pod's node affinity and
    #: nodeSelector allow (default); Ignore counts every node.
    node_affinity_policy: str = "Honor"
    #: Honor leaves out nodes with taints the pod does not tolerate; Ignore (default) does not.
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class Affinity:
    node_required: tuple[NodeSelectorTerm, ...] = ()  # ORed terms
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    pod_required: tuple[PodAffinityTerm, ...] = ()
    pod_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_required: tuple[PodAffinityTerm, ...] = ()
    anti_preferred: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def has_pod_terms(self) -> bool:
        return bool(
            self.pod_required or self.pod_preferred or self.anti_required or self.anti_preferred
        )


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
    #: Why it waited before it was bound (empty: bound in the first cycle after it arrived).
    waited_for: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

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

    def usage_at(self, t: float) -> tuple[float, float]:
        """(cpu, memory) used ÷ requested at time ``t``."""
        if self.usage_profile is None:
            return self.utilization, self.utilization
        return self.usage_profile.at(t)

    @property
    def best_effort(self) -> bool:
        """No requests for cpu, memory or GPU: placed by backfill, not by allocate."""
        return not any(v for k, v in self.requests.items() if k != "pods")


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
