"""``berth snapshot``: the live cluster as manifests ``berth simulate`` runs as they are.

Nodes, DeviceClasses and ResourceSlices go to ``cluster.yaml``; everything else berth reads to
``workload.yaml``. Pods on a node keep ``spec.nodeName``, so the simulation starts from the
cluster's current placement; finished pods are left out.

A workload is written with its unfinished pods, each keeping its controller ownerReference: the
simulator's controller for the kind adopts them (``berth.sim.adoption``), as berth serve's do
after a restart, so the replay keeps the placements and goes on with the workload (a CloneSet's
scale or rollout, a Job's retries and completion). The PodGroups a workload's controller makes
again under the same name are left out (a Volcano Job's, a CloneSet's, ...); a LeaderWorkerSet's
are written, as its controller makes a group's PodGroup only for a group it creates. A JobSet
whose pods exist is still written as those pods and its PodGroups: its pods are its child Jobs',
which the simulator adopts none by. A workload whose pods have all finished is left out
(it ran; a Volcano Job is written all the same). A running job's finished pods are not written,
so the replay makes them again. A ResourceClaim made for a pod from a ResourceClaimTemplate is
left out: the simulator makes it again from the template. Only what berth reads is kept of
each object (no status, uid, resourceVersion or managed fields). A kind the cluster does not
serve (its CRD is not installed, its API not enabled), or one the credentials may not list, is
skipped with a note.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.k8s.client import ApiError, KubeClient
from berth.k8s.kinds import (
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    CLONE_SET,
    DEVICE_CLASS,
    JOB,
    JOB_SET,
    LEADER_WORKER_SET,
    NODE,
    POD,
    POD_GROUP,
    PRIORITY_CLASS,
    PYTORCH_JOB,
    QUEUE,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    SIDECAR_SET,
    TRAINING_JOB,
    WORKLOAD,
    WORKLOAD_POD_GROUP,
    Resource,
)

_KEEP_META = ("name", "namespace", "labels", "annotations")
_FINISHED = ("Succeeded", "Failed")
#: Workloads whose pods the simulator's controllers make.
_WORKLOADS = (
    CLONE_SET,
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    PYTORCH_JOB,
    TRAINING_JOB,
    LEADER_WORKER_SET,
    JOB_SET,
)
#: Written as they are, after the queues and before the workloads: what pods refer to.
_REFERRED = (WORKLOAD, WORKLOAD_POD_GROUP, RESOURCE_CLAIM_TEMPLATE, SIDECAR_SET)
#: Written as pods and PodGroups once it has pods: its child Jobs make its pods, and those
#: adopt none.
_AS_PODS = (JOB_SET,)
#: Its controller makes a PodGroup only for the pods it creates: the existing ones are written.
_KEEPS_GROUPS = (LEADER_WORKER_SET,)
#: Of a pod's controller ownerReference, what the simulator reads.
_KEEP_REF = ("apiVersion", "kind", "name", "uid", "controller")
#: The kind a manifest names, where the one berth's store knows it by differs.
_MANIFEST_KIND = {ADVANCED_STATEFUL_SET: "StatefulSet", WORKLOAD_POD_GROUP: "PodGroup"}

#: Answers that leave a kind out of the snapshot rather than fail it, and why.
_SKIPPED = {404: "not served by the cluster", 403: "not readable with these credentials"}
#: An owner as a controller ownerReference names it: API group, kind, namespace, name.
Owner = tuple[str, str, str, str]


@dataclass
class Snapshot:
    cluster: list[dict[str, Any]] = field(default_factory=list)
    workload: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {key: meta[key] for key in _KEEP_META if meta.get(key)}


def _named(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _list(client: KubeClient, resource: Resource, snap: Snapshot) -> list[dict[str, Any]]:
    """Every object of ``resource`` in name order; none, with a note, when the cluster does
    not serve it."""
    try:
        items = client.request("GET", resource.collection()).get("items") or []
    except ApiError as exc:
        why = _SKIPPED.get(exc.status)
        if why is None:
            raise
        kind = _MANIFEST_KIND.get(resource, resource.kind)
        snap.notes.append(f"{kind} ({resource.api_version}): {why}, skipped")
        return []
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
        "kind": _MANIFEST_KIND.get(resource, resource.kind),
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


def _controller(obj: dict[str, Any]) -> Owner | None:
    """The object's controlling owner, if it has one."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            return group, str(ref.get("kind")), meta.get("namespace", ""), str(ref.get("name"))
    return None


def _owner_of(resource: Resource, obj: dict[str, Any]) -> Owner:
    meta = obj.get("metadata") or {}
    kind = _MANIFEST_KIND.get(resource, resource.kind)
    return resource.group, kind, meta.get("namespace", ""), str(meta.get("name"))


def take(client: KubeClient) -> Snapshot:
    snap = Snapshot()
    for node in _list(client, NODE, snap):
        cleaned = _clean(NODE, node, ("capacity", "allocatable"))
        spec = node.get("spec") or {}
        cleaned["spec"] = {k: spec[k] for k in ("taints", "unschedulable") if k in spec}
        snap.cluster.append(cleaned)
    for resource in (DEVICE_CLASS, RESOURCE_SLICE):
        snap.cluster.extend(_clean(resource, item) for item in _list(client, resource, snap))
    for item in _list(client, PRIORITY_CLASS, snap):
        snap.workload.append(_clean(PRIORITY_CLASS, item))
    for item in _list(client, QUEUE, snap):
        snap.workload.append(_clean(QUEUE, item, ("state",)))
    for resource in _REFERRED:
        snap.workload.extend(_clean(resource, item) for item in _list(client, resource, snap))
    all_pods = _list(client, POD, snap)
    _claims(client, snap)
    pods = [p for p in all_pods if (p.get("status") or {}).get("phase") not in _FINISHED]
    groups_left_out = _jobs(client, snap, pods) | _workloads(client, snap, all_pods)
    for group in _list(client, POD_GROUP, snap):
        owner = _controller(group) or _owner_of(JOB, group)  # a Job's group bears its name
        if owner not in groups_left_out:
            snap.workload.append(_clean(POD_GROUP, group))
    for pod in pods:
        snap.workload.append(_clean_pod(pod))
    return snap


def _clean_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod as berth reads it, with its controller ownerReference (what adopts it)."""
    cleaned = _clean(POD, pod)
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            kept = {key: ref[key] for key in _KEEP_REF if key in ref}
            cleaned["metadata"]["ownerReferences"] = [kept]
    return cleaned


def _claims(client: KubeClient, snap: Snapshot) -> None:
    """Standalone ResourceClaims, without their allocation (the simulator allocates anew)."""
    made = 0
    for claim in _list(client, RESOURCE_CLAIM, snap):
        owner = _controller(claim)
        if owner is not None and owner[:2] == ("", "Pod"):
            made += 1
            continue
        snap.workload.append(_clean(RESOURCE_CLAIM, claim))
    if made:
        snap.notes.append(
            f"{made} ResourceClaim{'s' if made > 1 else ''} made for pods from templates: "
            "left out (the simulator makes them again from the template)"
        )


def _jobs(client: KubeClient, snap: Snapshot, pods: list[dict[str, Any]]) -> set[Owner]:
    """Every Volcano Job, written (its pods with it); the owners of the PodGroups left out
    (their controller makes each again under the Job's name)."""
    live = Counter(_controller(pod) for pod in pods)
    written: set[Owner] = set()
    for job in _list(client, JOB, snap):
        owner = _owner_of(JOB, job)
        _adopted_note(snap, owner, job, live[owner])
        written.add(owner)
        snap.workload.append(_clean(JOB, job))
    return written


def _workloads(client: KubeClient, snap: Snapshot, pods: list[dict[str, Any]]) -> set[Owner]:
    """The workloads of ``_WORKLOADS`` that have not finished (finished ones: all their pods
    have; a workload that ran is not run again), written, with their pods (but those of
    ``_AS_PODS``, written as their pods alone); the owners of the PodGroups left out (those
    the controllers of the workloads written make again, and of finished ones)."""
    owned = Counter(_controller(pod) for pod in pods)
    live = Counter(
        _controller(pod) for pod in pods if (pod.get("status") or {}).get("phase") not in _FINISHED
    )
    groups_left_out: set[Owner] = set()
    for resource in _WORKLOADS:
        for item in _list(client, resource, snap):
            owner = _owner_of(resource, item)
            count = live[owner]
            if count and resource in _AS_PODS:
                snap.notes.append(
                    f"{owner[1]} {_named(item)}: written as its {count} pod"
                    f"{'s' if count > 1 else ''} and PodGroups (its pods exist)"
                )
                continue
            if owned[owner] and not count:
                groups_left_out.add(owner)
                snap.notes.append(f"{owner[1]} {_named(item)}: left out (its pods have finished)")
                continue
            if not count or resource not in _KEEPS_GROUPS:
                groups_left_out.add(owner)
            _adopted_note(snap, owner, item, count)
            snap.workload.append(_clean(resource, item))
    return groups_left_out


def _adopted_note(snap: Snapshot, owner: Owner, obj: dict[str, Any], count: int) -> None:
    if count:
        snap.notes.append(
            f"{owner[1]} {_named(obj)}: written with its {count} pod"
            f"{'s' if count > 1 else ''}, which the replay's controller adopts"
        )


def write(snap: Snapshot, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    cluster, workload = out / "cluster.yaml", out / "workload.yaml"
    for path, docs in ((cluster, snap.cluster), (workload, snap.workload)):
        with path.open("w") as handle:
            yaml.safe_dump_all(docs, handle, sort_keys=False)
    return cluster, workload
