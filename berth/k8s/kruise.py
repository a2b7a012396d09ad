"""OpenKruise's workloads in ``berth serve --kruise``: the simulator's controllers against the
API server.

``KruiseWorkloads`` runs the CloneSet, Advanced StatefulSet and BroadcastJob controllers of
``berth.controllers`` over the cache (``KubeStore``) on a ``Runtime`` made of the serve loop's
clock and timers, and is the cache's writer for their pods: it creates them from the
revision's template as the API holds it (Kruise's labels, ownerReference, readiness gate or
node affinity, ``berth.k8s.kruise_pods``), updates them in place through the readiness gate,
opens the gate when the kubelet has restarted their containers, keeps each revision as a
ControllerRevision (``berth.k8s.kruise_revisions``) and writes each workload's status in
Kruise's shape (``berth.k8s.kruise_status``) through ``/status`` when it changes.

A reconcile pass that fails against the API (after the client's retries) queues every object
of its kind again a second later, as a work queue requeues with backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from berth.api.objects import Pod
from berth.api.workloads import ADVANCED_STATEFUL_SET, BROADCAST_JOB, CLONE_SET, Workload
from berth.controllers.broadcastjob import BroadcastJobController
from berth.controllers.cloneset import CloneSetController
from berth.controllers.statefulset import AdvancedStatefulSetController
from berth.controllers.workload import WorkloadController
from berth.k8s import inplace
from berth.k8s.cache import KubeStore
from berth.k8s.client import ApiError, ConnectionLost
from berth.k8s.convert import from_api
from berth.k8s.kinds import BY_KIND
from berth.k8s.kruise_pods import pod_manifest
from berth.k8s.kruise_revisions import Revisions
from berth.k8s.kruise_status import workload_status
from berth.store import AlreadyExists, NotFound, WatchEvent

log = logging.getLogger("berth.k8s")

#: Seconds before the objects of a pass that failed are reconciled again.
RETRY = 1.0
#: Kinds whose pods carry a revision (``controller-revision-hash``) kept as ControllerRevisions.
REVISIONED = (CLONE_SET, ADVANCED_STATEFUL_SET)


class ServeRuntime:
    """``berth.controllers.runtime.Runtime`` over the serve loop: its clock, its timers.

    A pass happens at one instant, as in the simulator: ``now()`` stays at the time the pass
    began, so the pods one pass creates arrive together (the scheduler then takes them in
    name order, as it does in a simulation)."""

    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
        retry: Callable[[], None],
    ) -> None:
        self.store = store
        self._clock = clock
        self._at = at
        self._retry = retry
        self._pass: float | None = None  # when the pass under way began
        #: Kind → the controllers' admission hooks, which the webhook runs (berth.k8s.webhook).
        self.hooks: dict[str, list[Callable[[Any], None]]] = {}

    def now(self) -> float:
        return self._clock() if self._pass is None else self._pass

    def at(self, time: float, callback: Callable[[], None]) -> None:
        self._at(time, self._guarded(callback))

    def soon(self, callback: Callable[[], None]) -> None:
        self._at(self._clock(), self._guarded(callback))

    def admit(self, kind: str, hook: Callable[[Any], None]) -> None:
        self.hooks.setdefault(kind, []).append(hook)

    def admit_object(self, kind: str, obj: Any) -> None:
        """Run the admission hooks on a new object the API server asks the webhook about."""
        for hook in self.hooks.get(kind, ()):
            hook(obj)

    def _guarded(self, callback: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            self._pass = self._clock()
            try:
                callback()
            except (ApiError, ConnectionLost, NotFound) as exc:
                log.error("reconcile failed", extra={"error": str(exc)})
                self._at(self._clock() + RETRY, self._retry)
            finally:
                self._pass = None

        return run


class KruiseWorkloads:
    """The OpenKruise controllers of one serve loop, and the writer of their pods."""

    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.at = at
        self.runtime = ServeRuntime(store, clock, at, self._resync)
        self.controllers: dict[str, WorkloadController] = {
            CLONE_SET: CloneSetController(self.runtime),
            ADVANCED_STATEFUL_SET: AdvancedStatefulSetController(self.runtime),
            BROADCAST_JOB: BroadcastJobController(self.runtime),
        }
        self.revisions = Revisions(store.client)
        #: owner key → revision → the pod template as the API held it at that revision.
        self.templates: dict[str, dict[str, dict[str, Any]]] = {}
        #: Workloads whose status may have changed, and what was last written for each.
        self.dirty: set[tuple[str, str]] = set()
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        for kind, controller in self.controllers.items():
            store.pod_writers[kind] = self
            store.watch(kind, self._on_workload)
            controller.reconcile = self._noting(controller.reconcile)  # type: ignore[method-assign]
        store.watch("Pod", self._on_pod)

    def _noting(self, reconcile: Callable[[Workload], None]) -> Callable[[Workload], None]:
        """``reconcile``, marking its workload's status as possibly changed: a pass a timer
        woke (a pod available after minReadySeconds, a deadline) changes it with no event."""

        def noted(obj: Workload) -> None:
            reconcile(obj)
            self.dirty.add((obj.kind, obj.key))

        return noted

    def _resync(self) -> None:
        for controller in self.controllers.values():
            controller.resync()

    # ------------------------------------------------------------------ watches

    def _on_workload(self, event: WatchEvent, obj: Workload) -> None:
        key = (obj.kind, obj.key)
        if event == WatchEvent.DELETED:
            self.templates.pop(obj.key, None)
            self.dirty.discard(key)
            self._written.pop(key, None)
            self.revisions.forget(*key)
            return
        raw = self.store.raw(obj.kind, obj.key) or {}
        if obj.key not in self.templates:
            self._first_sight(obj, raw)
        template = obj.spec.template
        written = dict((raw.get("spec") or {}).get("template") or {})
        self.templates.setdefault(obj.key, {})[template.revision] = written
        if obj.kind in REVISIONED:
            self.revisions.record(obj.kind, obj.key, template.revision, written)
        if not obj.group:
            obj.group = self._own_group(obj, raw)
        self.dirty.add(key)

    def _first_sight(self, obj: Workload, raw: dict[str, Any]) -> None:
        """A workload this process has not seen: what its controller had before a restart
        (its revisions, the revision its pods were last all at, whether it had ended) is
        taken back, before the controller's first pass."""
        status = raw.get("status") or {}
        if obj.kind == BROADCAST_JOB:
            if status.get("phase") in ("Completed", "Failed") and not obj.status.phase:
                obj.status.phase = status["phase"]
            return
        current = str(status.get("currentRevision") or "")
        if current.startswith(f"{obj.name}-") and not obj.status.current_revision:
            obj.status.current_revision = current[len(obj.name) + 1 :]
        try:
            kept = self.revisions.load(obj.kind, raw)
        except (ApiError, ConnectionLost) as exc:
            log.error("revisions not read", extra={"key": obj.key, "error": str(exc)})
            return
        controller = self.controllers[obj.kind]
        classes = list(self.store.priority_classes.values())
        for template in kept:
            old, _ = from_api(
                obj.kind, {**raw, "spec": {**raw["spec"], "template": template}}, classes
            )
            if old is None:
                continue
            revision = old.spec.template
            controller.history.setdefault(obj.key, {})[revision.revision] = revision
            self.templates.setdefault(obj.key, {})[revision.revision] = template

    def _own_group(self, obj: Workload, raw: dict[str, Any]) -> str:
        """The PodGroup the workload's controller made before a restart (owned by it)."""
        uid = (raw.get("metadata") or {}).get("uid")
        for group in self.store.list("PodGroup"):
            if group.namespace != obj.namespace:
                continue
            meta = (self.store.raw("PodGroup", group.key) or {}).get("metadata") or {}
            if any(ref.get("uid") == uid for ref in meta.get("ownerReferences") or []):
                return group.name
        return ""

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        if pod.owner_kind not in self.controllers:
            return
        self.dirty.add((pod.owner_kind, pod.owner))
        if event == WatchEvent.DELETED or pod.terminating:
            return
        raw = self.store.raw("Pod", pod.key)
        if raw is not None:
            self._open_gate(pod, raw)

    # ------------------------------------------------------------------ the cache's pod writer

    def manifest(self, pod: Pod) -> dict[str, Any]:
        owner_raw = self.store.raw(pod.owner_kind, pod.owner)
        if owner_raw is None:
            raise NotFound(f"{pod.owner_kind} {pod.owner} of pod {pod.key} is not in the cache")
        revision = WorkloadController.pod_revision(pod)
        template = self.templates.get(pod.owner, {}).get(revision)
        if template is None:
            template = (owner_raw.get("spec") or {}).get("template") or {}
        return pod_manifest(pod, template, owner_raw)

    def created(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any]:
        """A new pod: its readiness gate opened (Kruise's first refresh). A pod of the same
        name still terminating (an Advanced StatefulSet's ordinal, recreated) is not the
        new pod: the controller tries again once it is gone."""
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            raise AlreadyExists(f"pod {pod.key} is still terminating")
        return self._open_gate(pod, raw) or raw

    def update(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any] | None:
        """Write what the controller changed on ``pod``: new images in place (through the
        readiness gate), or labels and annotations alone. The pod's latest state, or None when
        nothing was written."""
        images = inplace.changed_images(pod, raw)
        if not images:
            patch = inplace.metadata_patch(pod, raw)
            return self._patch(pod, "", patch) if patch else None
        now = self.clock()
        self._patch(pod, "status", inplace.gate_patch(False, now))
        grace = inplace.grace_seconds(pod)
        stored = self._patch(pod, "", inplace.update_patch(pod, raw, images, now, grace))
        if grace > 0:
            uid = pod.uid
            self.at(now + grace, lambda: self._after_grace(pod, uid))
        return stored

    def _after_grace(self, pod: Pod, uid: str) -> None:
        raw = self.store.raw("Pod", pod.key)
        if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
            return
        images = inplace.pending_images(raw)
        if images is None:
            return
        patch = inplace.images_patch(images)
        patch["metadata"] = {"annotations": {inplace.GRACE_ANNOTATION: None}}
        try:
            self._patch(pod, "", patch)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def _open_gate(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any] | None:
        if not inplace.has_gate(raw) or (raw.get("metadata") or {}).get("deletionTimestamp"):
            return None
        if inplace.condition(raw, inplace.READY_GATE).get("status") == "True":
            return None
        if not inplace.update_completed(raw):
            return None
        try:
            return self._patch(pod, "status", inplace.gate_patch(True, self.clock()))
        except ApiError as exc:
            if exc.status in (404, 409):
                return None
            raise

    def _prune(self, obj: Workload, raw: dict[str, Any]) -> None:
        """Kruise's truncation of the workload's revision history; the templates of the
        revisions deleted are let go (no pod uses them)."""
        controller = self.controllers[obj.kind]
        live = {obj.status.current_revision, obj.spec.template.revision}
        live |= {controller.pod_revision(p) for p in controller.owned.get(obj.key, {}).values()}
        try:
            pruned = self.revisions.prune(obj.kind, raw, live)
        except (ApiError, ConnectionLost) as exc:
            log.error("revisions not pruned", extra={"key": obj.key, "error": str(exc)})
            return
        for revision in pruned:
            self.templates.get(obj.key, {}).pop(revision, None)
            controller.history.get(obj.key, {}).pop(revision, None)

    def _patch(self, pod: Pod, subresource: str, body: dict[str, Any]) -> dict[str, Any]:
        """A strategic merge patch on the pod (only while it is this pod, by uid); the cache
        keeps the answer."""
        if pod.uid:
            body = {**body, "metadata": {**(body.get("metadata") or {}), "uid": pod.uid}}
        path = BY_KIND["Pod"].item(pod.namespace, pod.name, subresource)
        stored = self.store.client.request("PATCH", path, body=body, content_type=inplace.STRATEGIC)
        self.store.keep("Pod", pod.key, stored)
        return stored

    # ------------------------------------------------------------------ status

    def write(self) -> None:
        """Write the revisions not yet kept, then the status of every workload that may have
        changed, when it differs from what was last written."""
        self.revisions.write(self.store.raw)
        dirty, self.dirty = self.dirty, set()
        for kind, key in sorted(dirty):
            obj = self.store.get(kind, key)
            raw = self.store.raw(kind, key)
            if obj is None or raw is None:
                continue
            if kind in REVISIONED:
                self._prune(obj, raw)
            status = workload_status(obj, raw, self.controllers[kind])
            if status is None or self._written.get((kind, key)) == status:
                continue
            self.store.write_status(kind, key, status)
            self._written[(kind, key)] = status
