"""API objects ↔ berth objects.

Inbound, an API object goes through the same manifest converters as a file's
(``berth.api.manifest.parse_documents``), with the cluster's PriorityClasses beside it so
priorities resolve as admission resolves them: a cluster object and a file object mean the same
thing. The runtime state the API adds (a pod's node and phase, a PodGroup's phase) is read here.
Outbound, berth objects the controllers create become manifests (a Job's pods from the Job's own
task templates, so nothing berth does not model is lost), and statuses become status bodies.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import BatchJob, GroupPhase, Pod, PodGroup, PodPhase, PriorityClass
from berth.api.owners import VOLCANO_JOB_OWNER, controller_owner
from berth.api.problems import Problem
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    CLONE_SET,
    JOB_SET,
    LEADER_WORKER_SET,
    SIDECAR_SET,
)
from berth.k8s.kinds import (
    BY_KIND,
    DRA_KINDS,
    JOB,
    POD_GROUP,
    PYTORCH_JOB,
    TRAINING_JOB,
    WORKLOAD_POD_GROUP,
    Resource,
)
from berth.resources import format_quantity

SOURCE = "cluster"

#: Where parse_documents puts each kind.
_FIELD = {
    "Node": "nodes",
    "Pod": "pods",
    "PodGroup": "groups",
    "Queue": "queues",
    "PriorityClass": "priority_classes",
    "Job": "jobs",
    "Command": "commands",
    CLONE_SET: "workloads",
    SIDECAR_SET: "workloads",
    LEADER_WORKER_SET: "workloads",
    JOB_SET: "workloads",
    ADVANCED_STATEFUL_SET: "workloads",
    BROADCAST_JOB: "workloads",
    PYTORCH_JOB.kind: "jobs",
    TRAINING_JOB.kind: "jobs",
    **dict.fromkeys(DRA_KINDS, "dra"),
}
#: Kinds whose priorities (their own, or their pod template's) resolve through the cluster's
#: PriorityClasses.
_PRIORITIZED = (
    "Pod",
    "PodGroup",
    "Job",
    CLONE_SET,
    LEADER_WORKER_SET,
    JOB_SET,
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    PYTORCH_JOB.kind,
)
_GROUP_PHASES = {phase.value: phase for phase in GroupPhase}


def from_api(
    kind: str, raw: dict[str, Any], classes: list[PriorityClass]
) -> tuple[Any | None, list[Problem]]:
    """The berth object for an API object (None when it has errors) and every problem found."""
    if kind == WORKLOAD_POD_GROUP.kind:  # a list's items carry the store's kind
        raw = {**raw, "apiVersion": WORKLOAD_POD_GROUP.api_version, "kind": "PodGroup"}
        kind = "PodGroup"
    manifests = parse_documents([raw], SOURCE, live=True)
    if kind in _PRIORITIZED:
        manifests.priority_classes.extend(classes)
        cross_check(manifests)
        del manifests.priority_classes[len(manifests.priority_classes) - len(classes) :]
    # Only this object's own problems count: the classes beside it were checked on arrival.
    # (A kind qualified by its group, as Kruise's StatefulSet is, files them under its name.)
    problems = [p for p in manifests.problems if p.kind in (kind, kind.partition(".")[0], "")]
    if any(p.severity == "error" for p in problems):
        return None, problems
    objects = getattr(manifests, _FIELD[kind])
    if len(objects) != 1:
        return None, problems
    obj = objects[0]
    created = creation_time(raw)
    if created is not None and hasattr(obj, "submit_time"):
        # In a cluster an object arrives when it is created (the simulator's submit-time
        # annotation is a replay instruction, not a fact about the object).
        obj.submit_time = created
    if kind == "Pod":
        read_owner(obj, raw)
        read_pod_status(obj, raw)
    elif kind == "PodGroup":
        obj.phase = group_phase(raw, obj.phase)
    elif kind == "Job":
        # The restarts its controller counted before a restart of berth's (maxRetry counts them).
        retries = (raw.get("status") or {}).get("retryCount")
        if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:
            obj.retries = retries
    elif kind in (PYTORCH_JOB.kind, TRAINING_JOB.kind):
        # Its pods are written by its operator's writer, which knows them by their owner's kind.
        for task in obj.tasks:
            task.template.owner_kind = kind
    return obj, problems


def group_phase(raw: dict[str, Any], default: GroupPhase) -> GroupPhase:
    """A PodGroup's phase as its status gives it (``default`` for none berth knows)."""
    return _GROUP_PHASES.get((raw.get("status") or {}).get("phase"), default)


def creation_time(raw: dict[str, Any]) -> float | None:
    return _seconds((raw.get("metadata") or {}).get("creationTimestamp"))


def _seconds(stamp: Any) -> float | None:
    """An RFC 3339 time as seconds since the epoch (None for anything else)."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_state(raw: dict[str, Any]) -> tuple[str, PodPhase, int | None]:
    """(node, phase, exit code) of an API pod; a pod with a node but not started is Bound."""
    node = (raw.get("spec") or {}).get("nodeName") or ""
    status = raw.get("status") or {}
    phase = status.get("phase") or "Pending"
    exit_code = None
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode"):
            exit_code = int(terminated["exitCode"])
    if phase == "Running":
        return node, PodPhase.RUNNING, exit_code
    if phase == "Succeeded":
        return node, PodPhase.SUCCEEDED, exit_code
    if phase == "Failed":
        evicted = status.get("reason") == "Evicted"
        return node, PodPhase.EVICTED if evicted else PodPhase.FAILED, exit_code
    return node, PodPhase.BOUND if node else PodPhase.PENDING, exit_code


def read_owner(pod: Pod, raw: dict[str, Any]) -> None:
    """The pod's uid, and its owner when a controller berth runs made it (its controller
    ownerReference), so that controller counts the pod again after a restart (a Volcano Job's
    pods are adopted by name instead, as its controller creates them)."""
    meta = raw.get("metadata") or {}
    pod.uid = str(meta.get("uid") or pod.uid)
    refs = (
        (str(r.get("apiVersion", "")), r.get("kind"), r.get("name"), bool(r.get("controller")))
        for r in meta.get("ownerReferences") or []
    )
    owner = controller_owner(pod.namespace, refs)
    if owner is not None and owner[1] != VOLCANO_JOB_OWNER:
        pod.owner, pod.owner_kind = owner


def ready(raw: dict[str, Any]) -> tuple[bool, float | None]:
    """Whether the pod is ready (its Ready condition True and every readiness gate's
    condition True, as the kubelet decides it), and since when (the Ready condition's
    lastTransitionTime)."""
    status = raw.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    condition = conditions.get("Ready") or {}
    if condition.get("status") != "True":
        return False, None
    for gate in (raw.get("spec") or {}).get("readinessGates") or []:
        if (conditions.get(gate.get("conditionType")) or {}).get("status") != "True":
            return False, None
    return True, _seconds(condition.get("lastTransitionTime"))


def read_pod_status(pod: Pod, raw: dict[str, Any]) -> bool:
    """Copy the API pod's node, phase, readiness, container restarts and whether it is being
    deleted onto ``pod``; True if anything changed. Its start time (the kubelet's
    ``status.startTime``) is taken once: a scaling policy orders the workers berth did not
    place by it."""
    status = raw.get("status") or {}
    if pod.start_time is None:
        pod.start_time = _seconds(status.get("startTime"))
    node, phase, exit_code = pod_state(raw)
    terminating = bool((raw.get("metadata") or {}).get("deletionTimestamp"))
    restarts = sum(
        int(c.get("restartCount") or 0)
        for c in status.get("containerStatuses") or []
        if isinstance(c, dict)
    )
    is_ready, since = ready(raw)
    if not is_ready or phase != PodPhase.RUNNING:
        ready_since = None
    elif pod.ready_since is not None:
        ready_since = pod.ready_since
    else:
        ready_since = since if since is not None else time.time()
    now = (node, phase, exit_code, terminating, restarts, ready_since)
    before = (pod.bound_node, pod.phase, pod.exit_code, pod.terminating, pod.restarts)
    changed = now != (*before, pod.ready_since)
    pod.bound_node, pod.phase, pod.exit_code, pod.terminating, pod.restarts = now[:5]
    pod.ready_since = ready_since
    return changed


def _quantities(amounts: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in amounts.items()}


def owner_reference(owner_raw: dict[str, Any], resource: Resource = JOB) -> list[dict[str, Any]]:
    """The controller ownerReference to ``owner_raw``, an object of ``resource``."""
    meta = owner_raw.get("metadata") or {}
    return [
        {
            "apiVersion": resource.api_version,
            "kind": owner_raw.get("kind") or resource.kind,
            "name": meta.get("name"),
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def pod_group_manifest(
    group: PodGroup, owner_raw: dict[str, Any] | None, owner_kind: str = "Job"
) -> dict[str, Any]:
    """The PodGroup a controller made, owned by ``owner_raw`` (a Volcano Job, or a workload
    of ``owner_kind``)."""
    meta: dict[str, Any] = {"name": group.name, "namespace": group.namespace}
    if group.annotations:
        meta["annotations"] = dict(group.annotations)
    if owner_raw is not None:
        meta["ownerReferences"] = owner_reference(owner_raw, BY_KIND[owner_kind])
    spec: dict[str, Any] = {"minMember": group.min_member, "queue": group.queue}
    if group.min_resources:
        spec["minResources"] = _quantities(group.min_resources)
    if group.priority_class_name:
        spec["priorityClassName"] = group.priority_class_name
    if group.min_task_member:
        spec["minTaskMember"] = dict(group.min_task_member)
    return {
        "apiVersion": POD_GROUP.api_version,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": str(group.phase)},
    }


def pod_object(
    pod: Pod,
    spec: dict[str, Any],
    owner: list[dict[str, Any]],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A v1 Pod as a controller posts it: ``pod``'s name and namespace, its labels and
    annotations unless others are given, ``owner`` as its ownerReferences, and ``spec``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "labels": dict(pod.labels) if labels is None else labels,
            "annotations": dict(pod.annotations) if annotations is None else annotations,
            "ownerReferences": owner,
        },
        "spec": spec,
    }


def job_pod_manifest(pod: Pod, job_raw: dict[str, Any], task: str) -> dict[str, Any]:
    """A Job's pod from the Job's task template as the API holds it, with the name, labels
    and annotations the controller gave ``pod``."""
    template: dict[str, Any] = {}
    for item in (job_raw.get("spec") or {}).get("tasks") or []:
        if item.get("name") == task:
            template = item.get("template") or {}
    spec = dict(template.get("spec") or {})
    spec["schedulerName"] = pod.scheduler_name
    return pod_object(pod, spec, owner_reference(job_raw))


def job_status(job: BatchJob) -> dict[str, Any]:
    """Volcano's JobStatus shape: state, pod counts, retryCount, conditions."""
    state: dict[str, Any] = {"phase": str(job.phase)}
    if job.conditions:
        at, _, why = job.conditions[-1]
        state["message"] = why
        state["lastTransitionTime"] = stamp(at)
    counts = job.counts or {}
    return {
        "state": state,
        "minAvailable": job.min_available,
        "pending": counts.get("pending", 0),
        "running": counts.get("running", 0),
        "succeeded": counts.get("succeeded", 0),
        "failed": counts.get("failed", 0),
        "retryCount": job.retries,
        "conditions": [
            {"status": str(phase), "lastTransitionTime": stamp(at)}
            for at, phase, _ in job.conditions[-10:]
        ],
    }


def stamp(seconds: float) -> str:
    """An API timestamp (RFC 3339, whole seconds, UTC) of ``seconds`` since the epoch."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
