"""Workload objects: Kubernetes' Deployment, ReplicaSet, StatefulSet and batch/v1 Job, and
OpenKruise's CloneSet, Advanced StatefulSet, SidecarSet and BroadcastJob, as their controllers
read them.

One ``Workload`` class carries every kind (a spec dataclass per kind, one status for all) so the
loader, the store and the outputs handle them alike. Specs are frozen: a new version of an object
(a later ``berth.io/submit-time``, or an autoscaler changing ``replicas``) replaces the spec as a
whole, as ``kubectl apply`` replaces what the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from berth.api.load_curves import LoadScaling
from berth.api.objects import Pod
from berth.api.selectors import LabelSelector

# Kinds in the object store. Two upstream kinds share a name with another one (batch/v1 Job with
# Volcano's Job, Kruise's StatefulSet with Kubernetes'): those are qualified by their API group,
# as ``kubectl get jobs.batch`` qualifies them.
DEPLOYMENT = "Deployment"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
KUBE_JOB = "Job.batch"
CLONE_SET = "CloneSet"
ADVANCED_STATEFUL_SET = "StatefulSet.apps.kruise.io"
SIDECAR_SET = "SidecarSet"
BROADCAST_JOB = "BroadcastJob"
LEADER_WORKER_SET = "LeaderWorkerSet"
JOB_SET = "JobSet"

#: Store kind → (apiVersion, kind) as manifests name them.
UPSTREAM: dict[str, tuple[str, str]] = {
    DEPLOYMENT: ("apps/v1", "Deployment"),
    REPLICA_SET: ("apps/v1", "ReplicaSet"),
    STATEFUL_SET: ("apps/v1", "StatefulSet"),
    KUBE_JOB: ("batch/v1", "Job"),
    CLONE_SET: ("apps.kruise.io/v1alpha1", "CloneSet"),
    ADVANCED_STATEFUL_SET: ("apps.kruise.io/v1beta1", "StatefulSet"),
    SIDECAR_SET: ("apps.kruise.io/v1alpha1", "SidecarSet"),
    BROADCAST_JOB: ("apps.kruise.io/v1alpha1", "BroadcastJob"),
    LEADER_WORKER_SET: ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    JOB_SET: ("jobset.x-k8s.io/v1alpha2", "JobSet"),
}

IntOrPercent = int | str  # a count, or "N%" of a total (validated at the manifest boundary)


def scaled(value: IntOrPercent, total: int, round_up: bool) -> int:
    """A count, or a percentage of ``total`` rounded up or down, as Kubernetes' intstr does."""
    if isinstance(value, int):
        return value
    percent = int(value[:-1])
    return -(-percent * total // 100) if round_up else percent * total // 100


@dataclass(slots=True, frozen=True)
class PodTemplate:
    """A pod template: the pod each replica is a copy of, and two hashes of what was written.

    ``revision`` changes with anything in the template; ``layout`` leaves out the containers'
    images and the template's metadata, so two revisions with the same layout differ only in
    what OpenKruise updates in place.
    """

    pod: Pod
    revision: str
    layout: str


@dataclass(slots=True, frozen=True)
class DeploymentSpec:
    template: PodTemplate
    selector: LabelSelector
    replicas: int = 1
    strategy: str = "RollingUpdate"  # or Recreate
    max_surge: IntOrPercent = "25%"
    max_unavailable: IntOrPercent = "25%"
    min_ready_seconds: float = 0.0
    paused: bool = False
    revision_history_limit: int = 10
    #: The load curve its replicas follow (``berth.io/load-curve``): an inference service.
    load: LoadScaling | None = None


@dataclass(slots=True, frozen=True)
class ReplicaSetSpec:
    template: PodTemplate
    selector: LabelSelector
    replicas: int = 1
    min_ready_seconds: float = 0.0


@dataclass(slots=True, frozen=True)
class StatefulSetSpec:
    """Kubernetes' StatefulSet, and OpenKruise's Advanced StatefulSet (``advanced``), which adds
    in-place update, ``reserveOrdinals`` and scale-out ``maxUnavailable``."""

    template: PodTemplate
    selector: LabelSelector
    replicas: int = 1
    pod_management: str = "OrderedReady"  # or Parallel
    update_type: str = "RollingUpdate"  # or OnDelete
    partition: int = 0
    max_unavailable: IntOrPercent = 1
    pod_update_policy: str = "ReCreate"  # InPlaceIfPossible, InPlaceOnly (advanced only)
    paused: bool = False
    reserve_ordinals: frozenset[int] = frozenset()
    start_ordinal: int = 0
    min_ready_seconds: float = 0.0
    scale_max_unavailable: IntOrPercent | None = None
    advanced: bool = False


@dataclass(slots=True, frozen=True)
class KubeJobSpec:
    """batch/v1 Job. ``completions`` None is a work queue: done once a pod succeeds and none is
    left running."""

    template: PodTemplate
    parallelism: int = 1
    completions: int | None = 1
    backoff_limit: int = 6
    completion_mode: str = "NonIndexed"  # or Indexed
    active_deadline: float | None = None


@dataclass(slots=True, frozen=True)
class CloneSetSpec:
    template: PodTemplate
    selector: LabelSelector
    replicas: int = 1
    update_type: str = "ReCreate"  # InPlaceIfPossible, InPlaceOnly, OnDelete
    partition: IntOrPercent | None = None
    max_unavailable: IntOrPercent = "20%"
    max_surge: IntOrPercent = 0
    paused: bool = False
    pods_to_delete: tuple[str, ...] = ()
    scale_max_unavailable: IntOrPercent | None = None
    min_ready_seconds: float = 0.0
    grace_seconds: float = 0.0  # inPlaceUpdateStrategy.gracePeriodSeconds


@dataclass(slots=True, frozen=True)
class SidecarContainer:
    name: str
    image: str
    requests: dict[str, int]
    init: bool = False  # an init container (counts by the maximum, not the sum)


@dataclass(slots=True, frozen=True)
class SidecarSetSpec:
    selector: LabelSelector
    containers: tuple[SidecarContainer, ...]
    namespace: str = ""  # empty: every namespace
    update_type: str = "RollingUpdate"  # or NotUpdate
    max_unavailable: IntOrPercent = 1
    partition: IntOrPercent | None = None
    update_selector: LabelSelector | None = None
    paused: bool = False
    injection_paused: bool = False  # injectionStrategy.paused: new pods get nothing
    revision: str = ""  # hash of the containers
    layout: str = ""  # the same without images: equal layouts upgrade in place


@dataclass(slots=True, frozen=True)
class BroadcastJobSpec:
    template: PodTemplate
    parallelism: IntOrPercent | None = None  # None: no limit
    completion_type: str = "Always"  # or Never (keeps a pod on every new eligible node)
    active_deadline: float | None = None
    failure_type: str = "FailFast"  # Continue, Pause
    paused: bool = False


@dataclass(slots=True)
class Rollout:
    """One change of a workload's pod template (or SidecarSet containers), as it went."""

    revision: str
    start: float
    replicas: int  # desired when it began
    strategy: str  # what updated the pods: RollingUpdate, Recreate, ReCreate, InPlaceIfPossible…
    #: Unavailable pods the strategy allows (None: no bound, as for Recreate).
    max_unavailable: int | None
    end: float | None = None  # when it was complete; None: it never was
    superseded: float | None = None  # when a newer revision replaced it before it completed
    recreated: int = 0  # pods deleted and created anew through the scheduler
    in_place: int = 0  # pods updated in place (same node, same uid)
    peak_unavailable: int = 0  # most of the desired replicas not available at once
    peak_surge: int = 0  # most pods above the desired count at once
    #: Requests of the pods the rollout took off their nodes, per resource (canonical units).
    churn: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class WorkloadStatus:
    """What the controller reports, as the upstream status fields name it."""

    desired: int = 0  # pods wanted: replicas, completions, eligible nodes, matched pods
    replicas: int = 0  # pods that exist (not ended)
    ready: int = 0
    available: int = 0
    updated: int = 0  # on the newest revision
    updated_available: int = 0
    succeeded: int = 0
    failed: int = 0
    phase: str = ""  # Jobs and BroadcastJobs: Running, Complete/Completed, Failed, Paused
    current_revision: str = ""
    update_revision: str = ""
    created: int = 0  # pods created over the run
    deleted: int = 0  # pods deleted by the controller over the run
    restarts: int = 0  # a JobSet's: times its failure policy recreated its Jobs
    #: (time, what happened) for every condition the controller reported, oldest first.
    conditions: list[tuple[float, str]] = field(default_factory=list)
    rollouts: list[Rollout] = field(default_factory=list)


@dataclass(slots=True)
class Workload:
    """An object of one of the kinds above; ``kind`` is its kind in the store."""

    kind: str
    name: str
    spec: Any
    namespace: str = "default"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    submit_time: float = 0.0
    owner: str = ""  # a ReplicaSet made by a Deployment: the Deployment's key
    group: str = ""  # the PodGroup its pods join; set by its controller
    status: WorkloadStatus = field(default_factory=WorkloadStatus)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def template(self) -> PodTemplate | None:
        return getattr(self.spec, "template", None)

    @property
    def upstream(self) -> str:
        """``apiVersion kind``, as the manifest named it."""
        api_version, kind = UPSTREAM[self.kind]
        return f"{api_version} {kind}"


def workload_pods(workloads: list[Workload], nodes: int) -> int:
    """How many pods the workload objects ask for at once, at their largest version: replicas,
    completions (parallelism for a work queue), a pod per node for a BroadcastJob, the peak of
    a load curve; what a run must at least create for them."""
    largest: dict[tuple[str, str], int] = {}
    for workload in workloads:
        spec = workload.spec
        if isinstance(spec, KubeJobSpec):
            count = spec.parallelism if spec.completions is None else spec.completions
        elif isinstance(spec, BroadcastJobSpec):
            count = nodes
        elif isinstance(spec, DeploymentSpec) and spec.load is not None:
            count = max(spec.replicas, spec.load.peak())
        elif hasattr(spec, "pod_count"):  # LeaderWorkerSet, JobSet: pods of every group
            count = spec.pod_count
        else:
            count = getattr(spec, "replicas", 0)
        key = (workload.kind, workload.key)
        largest[key] = max(largest.get(key, 0), count)
    return sum(largest.values())
