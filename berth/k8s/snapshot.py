"""``berth snapshot``: the live cluster as manifests ``berth simulate`` runs as they are.

Nodes go to ``cluster.yaml``; priority classes, queues, PodGroups, Jobs and pods to
``workload.yaml``. Pods on a node keep ``spec.nodeName``, so the simulation starts from the
cluster's current placement; finished pods are left out. A Volcano Job whose pods already exist
is represented by those pods and its PodGroup (replaying the Job as well would create its pods
twice); a Job with no pods yet is written as the Job, without the PodGroup its controller will
make. Only what berth reads is kept of each object (no status, uid or managed fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.k8s.client import KubeClient
from berth.k8s.kinds import JOB, NODE, POD, POD_GROUP, PRIORITY_CLASS, QUEUE, Resource

_KEEP_META = ("name", "namespace", "labels", "annotations")
_FINISHED = ("Succeeded", "Failed")
_JOB_LABEL = "volcano.sh/job-name"


@dataclass
class Snapshot:
    cluster: list[dict[str, Any]] = field(default_factory=list)
    workload: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {key: meta[key] for key in _KEEP_META if meta.get(key)}


def _list(client: KubeClient, resource: Resource) -> list[dict[str, Any]]:
    items = client.request("GET", resource.collection()).get("items") or []
    return sorted(
        items,
        key=lambda o: (
            (o.get("metadata") or {}).get("namespace", ""),
            (o.get("metadata") or {}).get("name", ""),
        ),
    )


def _clean(resource: Resource, obj: dict[str, Any], keep_status: tuple[str, ...] = ()) -> dict:
    out: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": _meta(obj),
    }
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    status = obj.get("status") or {}
    kept = {key: status[key] for key in keep_status if key in status}
    if kept:
        out["status"] = kept
    return out


def take(client: KubeClient) -> Snapshot:
    snap = Snapshot()
    for node in _list(client, NODE):
        cleaned = _clean(NODE, node, ("capacity", "allocatable"))
        spec = node.get("spec") or {}
        cleaned["spec"] = {k: spec[k] for k in ("taints", "unschedulable") if k in spec}
        snap.cluster.append(cleaned)
    for item in _list(client, PRIORITY_CLASS):
        snap.workload.append(_clean(PRIORITY_CLASS, item))
    for item in _list(client, QUEUE):
        snap.workload.append(_clean(QUEUE, item, ("state",)))
    pods = [p for p in _list(client, POD) if (p.get("status") or {}).get("phase") not in _FINISHED]
    jobs_with_pods = {
        (p["metadata"].get("namespace"), p["metadata"].get("labels", {}).get(_JOB_LABEL))
        for p in pods
        if (p["metadata"].get("labels") or {}).get(_JOB_LABEL)
    }
    pending_jobs = set()
    for job in _list(client, JOB):
        key = (job["metadata"].get("namespace"), job["metadata"]["name"])
        if key in jobs_with_pods:
            snap.notes.append(
                f"Job {key[0]}/{key[1]}: written as its pods and PodGroup (its pods exist)"
            )
            continue
        pending_jobs.add(key)
        snap.workload.append(_clean(JOB, job))
    for group in _list(client, POD_GROUP):
        key = (group["metadata"].get("namespace"), group["metadata"]["name"])
        if key not in pending_jobs:
            snap.workload.append(_clean(POD_GROUP, group))
    for pod in pods:
        snap.workload.append(_clean(POD, pod))
    return snap


def write(snap: Snapshot, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    cluster, workload = out / "cluster.yaml", out / "workload.yaml"
    for path, docs in ((cluster, snap.cluster), (workload, snap.workload)):
        with path.open("w") as handle:
            yaml.safe_dump_all(docs, handle, sort_keys=False)
    return cluster, workload
