"""The pod: what the store, the engine and the simulator know of one, and its phases.

A replay holds every pod of its trace at once (11 million for Alibaba 2017), so a pod keeps in
slots of its own only what differs between the pods of one task or what changes as it runs.
Its settings that most pods leave alike (placement terms, owner, simulated faults and usage,
...) are one frozen ``PodSettings`` that pods share: a trace's task hands all its pods the same
one, and a pod built without any of them shares ``DEFAULT_SETTINGS``. They read as the pod's
own attributes; writing one gives that pod a copy with the change (``dataclasses.replace``
passes them through too). 20 slots fewer: 216 bytes a pod instead of 368.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from berth.api.keys import DEFAULT_SCHEDULER, PREEMPT_NEVER, TASK_NAME_LABEL
from berth.api.qos import LOW_BANDS, PriorityBand, QoS, band_of, qos_of
from berth.api.selectors import Affinity, LabelSelector, SpreadConstraint, Toleration
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


@dataclass(frozen=True, slots=True)
class PodSettings:
    """A pod's settings that pods commonly share; each reads as an attribute of the pod."""

    #: (cpu, memory) as kube-scheduler's allocation scores count them: a container that
    #: requests no cpu counts 100m, none memory 200 MiB. None: the requests themselves.
    nonzero_requests: tuple[int, int] | None = None
    #: Never written into: a pod is given a new dict (the default one is every pod's).
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity = field(default_factory=Affinity)
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    priority_class_name: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER
    node_name: str = ""  # spec.nodeName: already placed by the user
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


DEFAULT_SETTINGS = PodSettings()


@dataclass(slots=True, init=False)
class Pod:
    """One pod. Besides the slots below, every field of ``PodSettings`` reads and writes as an
    attribute, and is taken by the constructor as a keyword."""

    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    requests: dict[str, int]  # canonical units, summed over containers
    priority: int
    group: str  # PodGroup name; empty = implicit group of one
    submit_time: float
    duration: float | None  # None: runs until the simulation ends
    settings: PodSettings
    uid: str  # set by the controller that creates the pod; a replacement gets a new one
    # runtime
    phase: PodPhase
    bound_node: str
    gpu_devices: str  # the GPU devices it was placed on ("3:460", "0,1,2,3")
    cpuset: str  # the cpus it holds to itself ("0-3,48-51"), berth.cluster.cpusets
    bind_time: float | None
    start_time: float | None
    end_time: float | None
    exit_code: int | None
    #: When the pod last became ready (started, or back from an in-place restart); None while
    #: it is not ready.
    ready_since: float | None
    restarts: int  # container restarts (in-place updates)
    #: Being deleted (a cluster pod with a deletionTimestamp, in its grace period): still on
    #: its node, but no longer one of its job's workers.
    terminating: bool
    #: Why it waited before it was bound (empty: bound in the first cycle after it arrived).
    waited_for: str

    if TYPE_CHECKING:  # the fields of ``PodSettings``, read and written through the pod
        nonzero_requests: tuple[int, int] | None
        node_selector: dict[str, str]
        affinity: Affinity
        tolerations: tuple[Toleration, ...]
        spread: tuple[SpreadConstraint, ...]
        priority_class_name: str
        scheduler_name: str
        node_name: str
        utilization: float
        usage_profile: UsageProfile | None
        preemptable: bool
        preemption_policy: str
        fail_after: float | None
        fail_exit_code: int
        fail_probability: float
        containers: tuple[tuple[str, str], ...]
        owner: str
        owner_kind: str
        owner_selector: LabelSelector | None
        resource_claims: tuple[Any, ...]

    def __init__(
        self,
        name: str,
        namespace: str = "default",
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        requests: dict[str, int] | None = None,
        priority: int = 0,
        group: str = "",
        submit_time: float = 0.0,
        duration: float | None = None,
        settings: PodSettings = DEFAULT_SETTINGS,
        uid: str = "",
        phase: PodPhase = PodPhase.PENDING,
        bound_node: str = "",
        gpu_devices: str = "",
        cpuset: str = "",
        bind_time: float | None = None,
        start_time: float | None = None,
        end_time: float | None = None,
        exit_code: int | None = None,
        ready_since: float | None = None,
        restarts: int = 0,
        terminating: bool = False,
        waited_for: str = "",
        **changed: Any,  # fields of PodSettings, over ``settings``
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.labels = {} if labels is None else labels
        self.annotations = {} if annotations is None else annotations
        self.requests = {} if requests is None else requests
        self.priority = priority
        self.group = group
        self.submit_time = submit_time
        self.duration = duration
        self.settings = replace(settings, **changed) if changed else settings
        self.uid = uid
        self.phase = phase
        self.bound_node = bound_node
        self.gpu_devices = gpu_devices
        self.cpuset = cpuset
        self.bind_time = bind_time
        self.start_time = start_time
        self.end_time = end_time
        self.exit_code = exit_code
        self.ready_since = ready_since
        self.restarts = restarts
        self.terminating = terminating
        self.waited_for = waited_for

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


def _setting(name: str) -> property:
    """``Pod.<name>``: read from the pod's settings; written as a copy of them, changed."""

    def write(pod: Pod, value: Any) -> None:
        pod.settings = replace(pod.settings, **{name: value})

    return property(attrgetter(f"settings.{name}"), write)


for _field in fields(PodSettings):
    setattr(Pod, _field.name, _setting(_field.name))


def task_name(pod: Pod) -> str:
    """The task a pod belongs to in its group (a label or an annotation, as Volcano reads it)."""
    return pod.labels.get(TASK_NAME_LABEL) or pod.annotations.get(TASK_NAME_LABEL, "")
