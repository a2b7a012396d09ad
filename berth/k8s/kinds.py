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
SERVICE = Resource("Service", "", "v1", "services", True)
#: Kinds whose objects berth's Job controller runs: their spec is its input once, their
#: status is its output.
JOB_KINDS = frozenset({"Job", PYTORCH_JOB.kind})

#: What the serve loop watches, in the order an initial sync applies them: what pods refer to
#: (priority classes, queues, nodes, groups, jobs) before the pods.
WATCHED = (PRIORITY_CLASS, QUEUE, NODE, POD_GROUP, JOB, COMMAND, POD)
BY_KIND = {
    resource.kind: resource
    for resource in (*WATCHED, *KRUISE, *KUBEFLOW, SERVICE, CONTROLLER_REVISION, LEASE, EVENT)
}


def watched(kruise: bool = False, kubeflow: bool = False) -> tuple[Resource, ...]:
    """The resources the serve loop watches: with ``kruise``, the OpenKruise workloads too,
    with ``kubeflow`` Kubeflow's training jobs, after what their pods refer to and before the
    pods."""
    extra = (*(KRUISE if kruise else ()), *(KUBEFLOW if kubeflow else ()))
    return (*WATCHED[:-1], *extra, POD)


def object_key(obj: dict) -> str:
    """``namespace/name`` (``name`` alone for cluster-scoped objects), as berth keys objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
