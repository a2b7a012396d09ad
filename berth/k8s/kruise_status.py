"""The status OpenKruise's controllers write for each workload, from what berth's controller
counted: CloneSetStatus (``apps.kruise.io/v1alpha1``), the Advanced StatefulSet's
StatefulSetStatus (``apps.kruise.io/v1beta1``) and BroadcastJobStatus.

Revisions are written as the pods' ``controller-revision-hash`` names them
(``<name>-<revision>``). A BroadcastJob's ``startTime`` is its creation (from which its
``activeDeadlineSeconds`` is counted), and its conditions are the one ``Complete`` or
``Failed`` it ends with, as Kruise's ``finishJob`` appends it.
"""

from __future__ import annotations

from typing import Any

from berth.api.workloads import ADVANCED_STATEFUL_SET, BROADCAST_JOB, CLONE_SET, Workload
from berth.controllers.cloneset_sync import partition_count
from berth.controllers.pod_order import is_ready
from berth.controllers.workload import ACTIVE, WorkloadController
from berth.k8s.convert import stamp

#: A BroadcastJob's final phase → the condition type Kruise gives it.
_FINAL = {"Completed": "Complete", "Failed": "Failed"}


def workload_status(
    obj: Workload, raw: dict[str, Any], controller: WorkloadController
) -> dict[str, Any] | None:
    """The status body for ``obj`` (None: nothing of this process's to write)."""
    if obj.kind == CLONE_SET:
        return clone_set_status(obj, raw, controller)
    if obj.kind == ADVANCED_STATEFUL_SET:
        return stateful_set_status(obj, raw, controller)
    if obj.kind == BROADCAST_JOB:
        return broadcast_job_status(obj, raw, controller)
    raise ValueError(f"no status for {obj.kind}")


def _active(obj: Workload, controller: WorkloadController) -> list:
    return [p for p in controller.owned.get(obj.key, {}).values() if p.phase in ACTIVE]


def _revisions(obj: Workload) -> dict[str, str]:
    status = obj.status
    result = {}
    if status.update_revision:
        result["updateRevision"] = f"{obj.name}-{status.update_revision}"
    if status.current_revision:
        result["currentRevision"] = f"{obj.name}-{status.current_revision}"
    return result


def _generation(raw: dict[str, Any]) -> int:
    return int((raw.get("metadata") or {}).get("generation") or 0)


def clone_set_status(
    cs: Workload, raw: dict[str, Any], controller: WorkloadController
) -> dict[str, Any]:
    """OpenKruise's CloneSetStatus for what the controller counted."""
    spec, status = cs.spec, cs.status
    update = spec.template.revision
    updated_ready = sum(
        1
        for p in _active(cs, controller)
        if is_ready(p) and WorkloadController.pod_revision(p) == update
    )
    return {
        "observedGeneration": _generation(raw),
        "replicas": status.replicas,
        "readyReplicas": status.ready,
        "availableReplicas": status.available,
        "updatedReplicas": status.updated,
        "updatedReadyReplicas": updated_ready,
        "updatedAvailableReplicas": status.updated_available,
        "expectedUpdatedReplicas": spec.replicas - partition_count(spec.partition, spec.replicas),
        "labelSelector": format_selector((raw.get("spec") or {}).get("selector") or {}),
        **_revisions(cs),
    }


def stateful_set_status(
    sts: Workload, raw: dict[str, Any], controller: WorkloadController
) -> dict[str, Any]:
    """The Advanced StatefulSet's StatefulSetStatus: ``currentReplicas`` counts the pods at
    ``currentRevision``, the ``updated*`` ones those at ``updateRevision``."""
    status = sts.status
    pods = _active(sts, controller)
    update, current = sts.spec.template.revision, status.current_revision
    revisions = [WorkloadController.pod_revision(p) for p in pods]
    return {
        "observedGeneration": _generation(raw),
        "replicas": status.replicas,
        "readyReplicas": status.ready,
        "availableReplicas": status.available,
        "currentReplicas": revisions.count(current),
        "updatedReplicas": status.updated,
        "updatedReadyReplicas": sum(
            1 for p, r in zip(pods, revisions, strict=True) if r == update and is_ready(p)
        ),
        "updatedAvailableReplicas": status.updated_available,
        "collisionCount": 0,
        "labelSelector": format_selector((raw.get("spec") or {}).get("selector") or {}),
        **_revisions(sts),
    }


def broadcast_job_status(
    job: Workload, raw: dict[str, Any], controller: WorkloadController
) -> dict[str, Any] | None:
    """BroadcastJobStatus; ``active`` counts the pods as they are now (a failed job's pods
    deleted by its controller are no longer active). None for a job that had ended before
    this process saw it (its status is the one written then)."""
    status = job.status
    ended = [(at, what) for at, what in status.conditions if what.partition(":")[0] in _FINAL]
    if not ended and (raw.get("status") or {}).get("phase") in _FINAL:
        return None
    result: dict[str, Any] = {
        "active": len(_active(job, controller)),
        "succeeded": status.succeeded,
        "failed": status.failed,
        "desired": status.desired,
        "phase": status.phase or "Running",
        "startTime": stamp(job.submit_time),
    }
    if ended:
        at, what = ended[-1]
        phase, _, message = what.partition(":")
        kind, when = _FINAL[phase], stamp(at)
        result["conditions"] = [
            {
                "type": kind,
                "status": "True",
                "lastProbeTime": when,
                "lastTransitionTime": when,
                "reason": kind,
                "message": message.strip(),
            }
        ]
        result["completionTime"] = when
    return result


def format_selector(selector: dict[str, Any]) -> str:
    """A label selector as text (``app=web,tier in (a,b)``), as the scale subresource's
    ``labelSelectorPath`` wants it."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)
