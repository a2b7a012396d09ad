"""The local cache of the API, and the object store the controllers run against.

``KubeStore`` implements the protocol of ``berth.store`` over the API: ``create``, ``update`` and
``delete`` write through to the API server and then tell the watchers at once, as
``MemoryStore`` does, so a controller sees the same sequence of events here as in the
simulator. Informer events (``apply``) keep the cache current. An object keeps its identity for
as long as it exists (a change is copied onto the cached object), because the controllers
recognise their objects by identity; the echo of berth's own write (same or older
resourceVersion) is dropped.

An object that does not convert (an invalid quantity, a field of the wrong type) is reported
once per resourceVersion with its kind and name and skipped; warnings (unknown fields) are
reported and the object is used, as ``berth validate`` does for files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase, PriorityClass, task_name
from berth.api.problems import Problem
from berth.api.workloads import KUBE_JOB, SIDECAR_SET, Workload
from berth.controllers.sidecarset import CLUSTER_SCOPE
from berth.k8s.client import ApiError, ConnectionLost, KubeClient
from berth.k8s.convert import (
    from_api,
    group_phase,
    job_pod_manifest,
    job_status,
    pod_group_manifest,
    read_owner,
    read_pod_status,
)
from berth.k8s.informer import Event
from berth.k8s.kinds import BY_KIND, DRA_KINDS, JOB_KINDS, WORKLOAD_POD_GROUP, object_key
from berth.store import AlreadyExists, NotFound, WatchEvent

log = logging.getLogger("berth.k8s")

Handler = Callable[[WatchEvent, Any], None]

#: How many times a status write re-reads the object after a 409 Conflict.
CONFLICT_RETRIES = 5


#: Kinds kept in the cache alone, never written to the API: the batch/v1 Jobs of berth's JobSet
#: controller (``berth.k8s.jobset``), whose pods it creates itself.
LOCAL_KINDS = frozenset({KUBE_JOB})
#: Fields berth keeps for itself: what the scheduler and controllers decided, not the spec.
_LOCAL = frozenset({"owned", "implicit", "phase", "start_time", "end_time", "submit_time"})
#: What a new version of a workload object changes (its group and status are its controller's).
_WORKLOAD_FIELDS = ("spec", "labels", "annotations")


class PodWriter(Protocol):
    """How the pods of one owner kind are written (``berth.k8s.kruise``): the manifest a new
    pod is created from, what follows its creation, and an update of what its controller
    changed. Each returns the pod's latest API state (None: nothing written)."""

    def manifest(self, pod: Any) -> dict[str, Any]: ...
    def created(self, pod: Any, raw: dict[str, Any]) -> dict[str, Any]: ...
    def update(self, pod: Any, raw: dict[str, Any]) -> dict[str, Any] | None: ...


def _containers(raw: dict[str, Any]) -> list[tuple[Any, Any]]:
    spec = raw.get("spec") or {}
    every = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return [(c.get("name"), c.get("image")) for c in every]


def _version(raw: dict[str, Any]) -> int | None:
    """The resourceVersion as a number (etcd revisions are), None when it is not one."""
    try:
        return int((raw.get("metadata") or {}).get("resourceVersion", ""))
    except (TypeError, ValueError):
        return None


def _claim_statuses(raw: dict[str, Any] | None) -> Any:
    return ((raw or {}).get("status") or {}).get("resourceClaimStatuses")


class KubeStore:
    def __init__(
        self,
        client: KubeClient,
        *,
        report: Callable[[Problem], None] | None = None,
    ) -> None:
        self.client = client
        self._objects: dict[str, dict[str, Any]] = {}
        self._raw: dict[str, dict[str, dict[str, Any]]] = {}
        self._versions: dict[str, dict[str, int]] = {}
        self._watchers: dict[str, list[Handler]] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self._report = report or (lambda problem: log.warning(str(problem)))
        self._reported: set[tuple[str, str, str]] = set()
        #: Problems by kind/name found in the cluster's objects (for metrics and tests).
        self.skipped: dict[str, str] = {}
        #: Owner kind → the writer of the pods its controller makes (a Volcano Job's pods are
        #: written here).
        self.pod_writers: dict[str, PodWriter] = {}
        #: Each answers which object of its kind made a PodGroup: (kind, key), or None.
        self.group_owners: list[Callable[[PodGroup], tuple[str, str] | None]] = []
        #: Pods whose state changed in the API's answer to a write of berth's (someone else's
        #: change came with it): their watch events will look like echoes and be dropped, so
        #: the watchers are told by ``announce`` once the handler that wrote has returned.
        self._unannounced: dict[str, Pod] = {}

    # ------------------------------------------------------------------ the store protocol

    def get(self, kind: str, key: str) -> Any | None:
        return self._objects.get(kind, {}).get(key)

    def list(self, kind: str) -> list[Any]:
        return list(self._objects.get(kind, {}).values())

    def raw(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._raw.get(kind, {}).get(key)

    def watch(self, kind: str, handler: Handler) -> None:
        self._watchers.setdefault(kind, []).append(handler)

    def watched(self, kind: str) -> bool:
        return bool(self._watchers.get(kind))

    def notify(self, kind: str, event: WatchEvent, obj: Any) -> None:
        for handler in self._watchers.get(kind, ()):
            handler(event, obj)

    def create(self, kind: str, obj: Any) -> None:
        """Create through the API (a controller's PodGroup or pod), then tell the watchers.

        An object that exists already (made before a restart, or by the previous leader) is
        adopted: ``obj`` takes its place, with the state the API has for it. A pod still
        terminating under that name is not: the name is free only once it is gone."""
        if kind in LOCAL_KINDS:
            self._remember(kind, obj.key, obj, {})
            self.notify(kind, WatchEvent.ADDED, obj)
            return
        existing = self._objects.get(kind, {}).get(obj.key)
        if existing is not None:
            raw = self._raw[kind][obj.key]
            if kind == "Pod":
                if existing.terminating:
                    raise AlreadyExists(f"pod {obj.key} is still terminating")
                # The old object leaves everyone's books before its replacement enters them.
                self._forget(kind, obj.key)
                self.notify(kind, WatchEvent.DELETED, existing)
            self._enter(kind, obj, raw)
            return
        resource = BY_KIND[kind]
        body = self._manifest(kind, obj)
        try:
            stored = self.client.request("POST", resource.collection(obj.namespace), body=body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            stored = self.client.request("GET", resource.item(obj.namespace, obj.name))
        if kind == "Pod" and _containers(stored) != _containers(body):
            self._take_admission(obj, body, stored)
        writer = self.pod_writers.get(obj.owner_kind) if kind == "Pod" else None
        if writer is not None:
            obj.uid = str((stored.get("metadata") or {}).get("uid") or "")
            stored = writer.created(obj, stored)
        self._enter(kind, obj, stored)

    def _take_admission(self, pod: Any, body: dict[str, Any], stored: dict[str, Any]) -> None:
        """A mutating webhook (SidecarSet injection) changed the pod berth posted: berth's pod
        takes the containers, requests and annotations the API server stored, as the
        simulator's pod takes what its admission hooks add."""
        converted, _ = from_api("Pod", stored, list(self.priority_classes.values()))
        if converted is not None:
            pod.containers, pod.requests = converted.containers, converted.requests
        posted = (body.get("metadata") or {}).get("annotations") or {}
        added = (stored.get("metadata") or {}).get("annotations") or {}
        pod.annotations = {
            **pod.annotations,
            **{k: v for k, v in added.items() if posted.get(k) != v},
        }

    def _enter(self, kind: str, obj: Any, raw: dict[str, Any]) -> None:
        """``obj`` joins the cache with the state ``raw`` gives it; its watchers hear of it
        as created, then (if it is past its first phase) as changed, so its controller
        counts it."""
        if kind == "Pod":
            read_owner(obj, raw)
            read_pod_status(obj, raw)
            started = obj.phase != PodPhase.PENDING
        else:
            obj.phase = group_phase(raw, obj.phase)
            started = obj.phase in (GroupPhase.INQUEUE, GroupPhase.RUNNING)
        self._remember(kind, obj.key, obj, raw)
        self.notify(kind, WatchEvent.ADDED, obj)  # a group is swapped in the scheduler
        if started:
            self.notify(kind, WatchEvent.MODIFIED, obj)

    def update(self, kind: str, obj: Any) -> None:
        """A changed object: its status is written (PodGroup, Job), or what its controller
        changed on a pod its writer knows (labels, images in place), then the watchers hear."""
        if kind == "PodGroup" and self.get(WORKLOAD_POD_GROUP.kind, obj.key) is obj:
            kind = WORKLOAD_POD_GROUP.kind  # its phase is berth's alone: that API's status has none
        if obj.key not in self._objects.get(kind, {}):
            raise NotFound(f"{kind} {obj.key} not found")
        if kind == "PodGroup":
            self.write_status(kind, obj.key, {"phase": str(obj.phase)})
        elif kind == "Job":
            self.write_status(kind, obj.key, job_status(obj))
        elif kind == "Pod" and obj.owner_kind in self.pod_writers:
            raw = self._raw[kind][obj.key]
            self.pod_writers[obj.owner_kind].update(obj, raw)
        self.notify(kind, WatchEvent.MODIFIED, obj)

    def keep(self, kind: str, key: str, raw: dict[str, Any]) -> None:
        """The API's answer to a write berth made: the cache keeps it (its watch echo is then
        dropped), and a pod's state is read from it. The answer may carry another writer's
        change too (a kubelet's phase, the names of claims made from the pod's templates),
        whose own event would now be dropped as well: that pod is announced later."""
        obj = self._objects.get(kind, {}).get(key)
        if obj is None:
            return
        named = _claim_statuses(self._raw.get(kind, {}).get(key))
        self._store_raw(kind, key, raw)
        if kind == "Pod" and (read_pod_status(obj, raw) or named != _claim_statuses(raw)):
            self._unannounced[key] = obj

    @property
    def unannounced(self) -> bool:
        """Whether pods wait for ``announce``."""
        return bool(self._unannounced)

    def announce(self) -> None:
        """Tell the watchers of the pods ``keep`` found changed (called between handlers, not
        inside one, so no watcher hears of a pod in the middle of another's work). A write a
        watcher makes in reaction and that fails after its retries is logged, as for a watch
        event: the pod's next event or the resync brings it round again."""
        while self._unannounced:
            key, pod = self._unannounced.popitem()
            if self._objects.get("Pod", {}).get(key) is not pod:
                continue
            try:
                self.notify("Pod", WatchEvent.MODIFIED, pod)
            except (ApiError, ConnectionLost, NotFound) as exc:
                log.error("event not handled", extra={"kind": "Pod", "error": str(exc)})

    def delete(self, kind: str, key: str) -> Any:
        obj = self._objects.get(kind, {}).get(key)
        if obj is None:
            raise NotFound(f"{kind} {key} not found")
        try:
            if kind not in LOCAL_KINDS:
                self.client.request("DELETE", BY_KIND[kind].item(obj.namespace, obj.name))
        except ApiError as exc:
            if exc.status != 404:
                raise
        self._forget(kind, key)
        self.notify(kind, WatchEvent.DELETED, obj)
        return obj

    def write_status(
        self,
        kind: str,
        key: str,
        status: dict[str, Any],
        unless: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Replace the object's status with optimistic concurrency: PUT with the cached
        resourceVersion, and on 409 Conflict read the latest and try again, unless the latest
        satisfies ``unless`` (e.g. a pod bound meanwhile)."""
        raw = self._raw.get(kind, {}).get(key)
        if raw is None:
            return
        resource = BY_KIND[kind]
        meta = raw.get("metadata") or {}
        subresource = "status" if resource.status_subresource else ""
        path = resource.item(meta.get("namespace"), meta["name"], subresource)
        reread = False
        for _ in range(CONFLICT_RETRIES):
            if unless is not None and unless(raw):
                return
            body = {**raw, "status": {**(raw.get("status") or {}), **status}}
            try:
                stored = self.client.request("PUT", path, body=body)
            except ApiError as exc:
                if exc.status == 404:
                    return
                if exc.status != 409:
                    raise
                raw = self.client.request("GET", resource.item(meta.get("namespace"), meta["name"]))
                reread = True
                continue
            if kind == "Pod":
                self.keep(kind, key, stored)
            elif reread:
                # The latest may carry a change the watch has not delivered yet, and whose
                # event would now look like an echo: it is taken here, as the watch would.
                self.apply(Event(kind, "MODIFIED", stored))
            else:
                self._store_raw(kind, key, stored)
            return
        log.warning("status not written after conflicts", extra={"kind": kind, "key": key})

    # ------------------------------------------------------------------ informer events

    def apply(self, event: Event) -> None:
        kind, raw = event.kind, event.object
        key = object_key(raw)
        if kind == SIDECAR_SET:
            key = f"{CLUSTER_SCOPE}/{key}"  # where the simulator files the cluster-scoped kind
        if event.type == "DELETED":
            obj = self._objects.get(kind, {}).get(key)
            if obj is not None:
                self._forget(kind, key)
                self.notify(kind, WatchEvent.DELETED, obj)
            return
        version = _version(raw)
        known = self._versions.get(kind, {}).get(key)
        if version is not None and known is not None and version <= known:
            return  # the echo of our own write, or a replay
        current = self._objects.get(kind, {}).get(key)
        if current is not None and kind == "Pod":
            # A pod's spec does not change; only where it runs and how it is doing (and the
            # names of the claims made from its templates, which the DRA books read).
            named = _claim_statuses(self._raw[kind].get(key))
            self._store_raw(kind, key, raw)
            if read_pod_status(current, raw) or named != _claim_statuses(raw):
                self.notify(kind, WatchEvent.MODIFIED, current)
            return
        obj, problems = from_api(kind, raw, list(self.priority_classes.values()))
        self._report_problems(kind, key, raw, problems)
        if obj is None:
            return
        self.skipped.pop(f"{kind}/{key}", None)
        if kind == "PriorityClass":
            self.priority_classes[obj.name] = obj
        if current is None:
            self._remember(kind, key, obj, raw)
            self.notify(kind, WatchEvent.ADDED, obj)
            return
        self._store_raw(kind, key, raw)
        if kind in DRA_KINDS:  # immutable: the new version takes the old one's place
            self._objects[kind][key] = obj
            self.notify(kind, WatchEvent.MODIFIED, obj)
            return
        if kind in JOB_KINDS or kind == "Command":
            return  # their spec is the controller's input once; status is the controller's
        if isinstance(obj, Workload):
            for name in _WORKLOAD_FIELDS:
                setattr(current, name, getattr(obj, name))
            self.notify(kind, WatchEvent.MODIFIED, current)
            return
        for name in type(obj).__slots__:
            if name not in _LOCAL:
                setattr(current, name, getattr(obj, name))
        self.notify(kind, WatchEvent.MODIFIED, current)

    def _report_problems(
        self, kind: str, key: str, raw: dict[str, Any], problems: list[Problem]
    ) -> None:
        version = str((raw.get("metadata") or {}).get("resourceVersion", ""))
        for problem in problems:
            mark = (f"{kind}/{key}", version, str(problem))
            if mark in self._reported:
                continue
            self._reported.add(mark)
            if problem.severity == "error":
                self.skipped[f"{kind}/{key}"] = str(problem)
            self._report(problem)

    # ------------------------------------------------------------------ bookkeeping

    def _remember(self, kind: str, key: str, obj: Any, raw: dict[str, Any]) -> None:
        self._objects.setdefault(kind, {})[key] = obj
        self._store_raw(kind, key, raw)

    def _store_raw(self, kind: str, key: str, raw: dict[str, Any]) -> None:
        self._raw.setdefault(kind, {})[key] = raw
        version = _version(raw)
        if version is not None:
            self._versions.setdefault(kind, {})[key] = version

    def _forget(self, kind: str, key: str) -> None:
        self._objects.get(kind, {}).pop(key, None)
        self._raw.get(kind, {}).pop(key, None)
        self._versions.get(kind, {}).pop(key, None)
        if kind == "PriorityClass":
            self.priority_classes.pop(key, None)

    def _manifest(self, kind: str, obj: Any) -> dict[str, Any]:
        if kind == "PodGroup":
            job_raw = self.raw("Job", obj.key)
            if job_raw is not None:
                return pod_group_manifest(obj, job_raw)
            for owner_of in self.group_owners:
                found = owner_of(obj)
                owner_raw = None if found is None else self.raw(*found)
                if found is not None and owner_raw is not None:
                    return pod_group_manifest(obj, owner_raw, found[0])
            for owner_kind in self.pod_writers:
                if owner_kind in LOCAL_KINDS:
                    continue  # not in the API: nothing to own the group there
                if owner_kind in JOB_KINDS:
                    # A training job's group has the job's name, as its operator names it.
                    owner_raw = self.raw(owner_kind, obj.key)
                    if owner_raw is not None:
                        return pod_group_manifest(obj, owner_raw, owner_kind)
                    continue
                for owner in self._objects.get(owner_kind, {}).values():
                    if owner.namespace == obj.namespace and owner.group == obj.name:
                        return pod_group_manifest(obj, self.raw(owner_kind, owner.key), owner_kind)
            return pod_group_manifest(obj, None)
        if kind == "Pod" and obj.owner_kind in self.pod_writers:
            return self.pod_writers[obj.owner_kind].manifest(obj)
        if kind == "Pod" and obj.owner:
            job_raw = self.raw("Job", obj.owner)
            if job_raw is None:
                raise NotFound(f"Job {obj.owner} of pod {obj.key} is not in the cache")
            return job_pod_manifest(obj, job_raw, task_name(obj))
        raise ValueError(f"berth does not create {kind} objects")
