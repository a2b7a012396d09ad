"""A pod's controller, as its controller ownerReference names it, and the check that the
owner a workload file's pod names is in the input.

A controller berth runs knows the pods it owns by this owner (``Pod.owner``, ``owner_kind``):
after ``berth serve`` restarts, from the pods the API lists; in the simulator, from the pods a
manifest (a ``berth snapshot``) gives already placed, which the owner's controller adopts
instead of creating them again (``berth.sim.adoption``).
"""

from __future__ import annotations

from collections.abc import Iterable

from berth.api.loaded import Manifests
from berth.api.objects import Pod
from berth.api.problems import Problem, display
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    CLONE_SET,
    LEADER_WORKER_SET,
)

#: The store kind of a Volcano Job's pods' owner: none, as its controller knows its pods by
#: name (``<job>-<task>-<index>``), not by owner.
VOLCANO_JOB_OWNER = ""
PYTORCH_JOB = "PyTorchJob"
TRAINING_JOB = "TrainingJob"
#: A controller ownerReference's (API group, kind) → the owner's kind in the store, for the
#: kinds whose controllers berth runs.
OWNER_KINDS = {
    ("apps.kruise.io", "CloneSet"): CLONE_SET,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): LEADER_WORKER_SET,
    ("apps.kruise.io", "StatefulSet"): ADVANCED_STATEFUL_SET,
    ("apps.kruise.io", "BroadcastJob"): BROADCAST_JOB,
    ("kubeflow.org", PYTORCH_JOB): PYTORCH_JOB,
    ("paddlepaddle.org", TRAINING_JOB): TRAINING_JOB,
    ("batch.volcano.sh", "Job"): VOLCANO_JOB_OWNER,
}
#: Owner kinds whose pods berth's batch Job controller makes (a Volcano Job, and the training
#: jobs that become one): it adopts a pod by its name, as its slot's pod.
JOB_OWNER_KINDS = (VOLCANO_JOB_OWNER, PYTORCH_JOB, TRAINING_JOB)

#: (apiVersion, kind, name, controller) of one ownerReference.
Reference = tuple[str, str, str, bool]


def controller_owner(namespace: str, refs: Iterable[Reference]) -> tuple[str, str] | None:
    """(owner key, owner's store kind) of the controller reference among ``refs``, when it
    names a kind whose controller berth runs; None otherwise."""
    for api_version, kind, name, controller in refs:
        if not controller:
            continue
        owner_kind = OWNER_KINDS.get((api_version.partition("/")[0], kind))
        return None if owner_kind is None else (f"{namespace}/{name}", owner_kind)
    return None


def check_owners(m: Manifests) -> None:
    """A pod of the workload files whose owner is not among them runs as a plain pod, with a
    warning; so does a batch Job's pod whose name is none of its Job's pods' names."""
    if m.live:
        return  # a cluster's pod is checked against the cluster (berth serve), not a file
    workloads = {(w.kind, w.key) for w in m.workloads}
    slots = {
        job.key: {
            f"{job.namespace}/{job.name}-{task.name}-{index}"
            for task in job.tasks
            for index in range(task.replicas)
        }
        for job in m.jobs
    }
    for pod in m.pods:
        if not pod.owner:
            continue
        owner = (
            f"{_kind_name(pod.owner_kind)} {display(pod.namespace, pod.owner.partition('/')[2])}"
        )
        if pod.owner_kind in JOB_OWNER_KINDS:
            names = slots.get(pod.owner)
            if names is not None and pod.key not in names:
                _orphan(m, pod, f"{owner} makes no pod of this name: the pod runs as a plain pod")
                continue
            found = names is not None
        else:
            found = (pod.owner_kind, pod.owner) in workloads
        if not found:
            _orphan(m, pod, f"{owner} is not in the loaded files: the pod runs as a plain pod")


def _kind_name(owner_kind: str) -> str:
    return (owner_kind or "Job").partition(".")[0]


def _orphan(m: Manifests, pod: Pod, message: str) -> None:
    pod.owner, pod.owner_kind = "", ""
    name = display(pod.namespace, pod.name)
    path = "metadata.ownerReferences"
    m.problems.append(Problem(m.origin(pod).file, "Pod", name, path, message, "warning"))
