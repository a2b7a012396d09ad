"""The API resources berth reads and writes: where each lives and how its paths are built."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    #: Whether status is written through ``/status`` (Volcano's PodGroup CRD declares no status
    #: subresource: its status is written with the object, as Volcano's scheduler does).
    status_subresource: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection(self, namespace: str | None = None) -> str:
        """Every object (all namespaces when ``namespace`` is None), or one namespace's."""
        if self.namespaced and namespace is not None:
            return f"{self.base}/namespaces/{namespace}/{self.plural}"
        return f"{self.base}/{self.plural}"

    def item(self, namespace: str | None, name: str, subresource: str = "") -> str:
        path = f"{self.collection(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path


NODE = Resource("Node", "", "v1", "nodes", False)
POD = Resource("Pod", "", "v1", "pods", True)
POD_GROUP = Resource("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", True, False)
QUEUE = Resource("Queue", "scheduling.volcano.sh", "v1beta1", "queues", False)
JOB = Resource("Job", "batch.volcano.sh", "v1alpha1", "jobs", True)
COMMAND = Resource("Command", "bus.volcano.sh", "v1alpha1", "commands", True)
PRIORITY_CLASS = Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False)
LEASE = Resource("Lease", "coordination.k8s.io", "v1", "leases", True)
EVENT = Resource("Event", "", "v1", "events", True)

#: OpenKruise's workloads, which ``berth serve --kruise`` runs (``kind`` is the store's kind).
CLONE_SET = Resource("CloneSet", "apps.kruise.io", "v1alpha1", "clonesets", True)
#: Cluster-scoped; watched with the admission webhook that injects its sidecars.
SIDECAR_SET = Resource("SidecarSet", "apps.kruise.io", "v1alpha1", "sidecarsets", False)
ADVANCED_STATEFUL_SET = Resource(
    "StatefulSet.apps.kruise.io", "apps.kruise.io", "v1beta1", "statefulsets", True
)
BROADCAST_JOB = Resource("BroadcastJob", "apps.kruise.io", "v1alpha1", "broadcastjobs", True)
KRUISE = (CLONE_SET, ADVANCED_STATEFUL_SET, BROADCAST_JOB)
#: Where the Kruise workloads' revisions are kept, as Kruise keeps them (created, never
#: watched: read once per workload after a restart).
CONTROLLER_REVISION = Resource("ControllerRevision", "apps", "v1", "controllerrevisions", True)
#: Kubeflow's training jobs, which ``berth serve --kubeflow`` runs, and the headless Service
#: each of their replicas gets (created, never watched).
PYTORCH_JOB = Resource("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", True)
KUBEFLOW = (PYTORCH_JOB,)
#: PaddlePaddle EDL's training jobs, which ``berth serve --paddle`` runs.
TRAINING_JOB = Resource("TrainingJob", "paddlepaddle.org", "v1", "trainingjobs", True)
SERVICE = Resource("Service", "", "v1", "services", True)
#: Dynamic Resource Allocation: what claims are allocated from (slices, classes), the claims
#: (their status is berth's to write when it places a pod) and the templates pods name.
RESOURCE_SLICE = Resource("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False)
DEVICE_CLASS = Resource("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False)
RESOURCE_CLAIM = Resource("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True)
RESOURCE_CLAIM_TEMPLATE = Resource(
    "ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", True
)
DRA = (DEVICE_CLASS, RESOURCE_SLICE, RESOURCE_CLAIM_TEMPLATE, RESOURCE_CLAIM)
DRA_KINDS = frozenset(resource.kind for resource in DRA)
#: LeaderWorkerSets, which ``berth serve --lws`` runs.
LEADER_WORKER_SET = Resource(
    "LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", True
)
#: JobSets, which ``berth serve --jobset`` runs (their batch/v1 Jobs stay in berth's cache).
JOB_SET = Resource("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", True)
#: The Workload API's PodGroups (Kubernetes 1.37 with the GenericWorkload feature gate), which
#: ``berth serve --workload-api`` reads. The store knows them by a kind of their own, apart from
#: Volcano's PodGroups; ``convert.from_api`` reads them as the PodGroups they are.
WORKLOAD_POD_GROUP = Resource("WorkloadPodGroup", "scheduling.k8s.io", "v1beta1", "podgroups", True)
#: The Workloads those PodGroups are made from (``spec.workloadRef``): ``berth snapshot`` writes
#: them so the simulator can check the groups against their templates; ``serve`` reads none.
WORKLOAD = Resource("Workload", "scheduling.k8s.io", "v1beta1", "workloads", True)
#: Kinds whose objects berth's Job controller runs: their spec is its input once, their
#: status is its output.
JOB_KINDS = frozenset({"Job", PYTORCH_JOB.kind, TRAINING_JOB.kind})

#: What the serve loop watches, in the order an initial sync applies them: what pods refer to
#: (priority classes, queues, nodes, groups, jobs) before the pods.
WATCHED = (PRIORITY_CLASS, QUEUE, NODE, POD_GROUP, JOB, COMMAND, POD)
BY_KIND = {
    resource.kind: resource
    for resource in (
        *WATCHED,
        *KRUISE,
        SIDECAR_SET,
        *KUBEFLOW,
        TRAINING_JOB,
        *DRA,
        LEADER_WORKER_SET,
        JOB_SET,
        WORKLOAD_POD_GROUP,
        SERVICE,
        CONTROLLER_REVISION,
        LEASE,
        EVENT,
    )
}


def watched(
    *,
    kruise: bool = False,
    kubeflow: bool = False,
    paddle: bool = False,
    sidecars: bool = False,
    dra: bool = False,
    workload_api: bool = False,
    lws: bool = False,
    jobset: bool = False,
) -> tuple[Resource, ...]:
    """The resources the serve loop watches: with ``kruise``, the OpenKruise workloads too,
    with ``kubeflow`` Kubeflow's training jobs, with ``paddle`` EDL's TrainingJobs, with
    ``sidecars`` SidecarSets, with ``dra`` the DRA objects, with ``workload_api`` the Workload
    API's PodGroups, with ``lws`` LeaderWorkerSets, with ``jobset`` JobSets, after what their
    pods refer to and before the pods."""
    extra = (
        *(KRUISE if kruise else ()),
        *((SIDECAR_SET,) if sidecars else ()),
        *(KUBEFLOW if kubeflow else ()),
        *((TRAINING_JOB,) if paddle else ()),
        *(DRA if dra else ()),
        *((WORKLOAD_POD_GROUP,) if workload_api else ()),
        *((LEADER_WORKER_SET,) if lws else ()),
        *((JOB_SET,) if jobset else ()),
    )
    return (*WATCHED[:-1], *extra, POD)


def object_key(obj: dict) -> str:
    """``namespace/name`` (``name`` alone for cluster-scoped objects), as berth keys objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
