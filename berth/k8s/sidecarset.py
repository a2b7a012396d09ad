"""OpenKruise's SidecarSet in ``berth serve --kruise``: the simulator's controller
(``berth.controllers.sidecarset``) against the API server, with the pod webhook that injects
its sidecars (``berth.k8s.webhook``).

Injection. The API server asks the webhook about every pod being created; ``admit`` converts
the pod as the cache converts pods, runs the controller's admission hook on it (the hook the
simulator runs on a new pod: the same SidecarSets match, the same containers are added, the
same annotations recorded) and answers with the patch that carries that onto the API's pod
(``berth.k8s.sidecar_inject``). It runs on the webhook's thread, not the serve loop's: the loop
creates pods itself (a CloneSet's), and the API server asks the webhook about those while the
loop waits for its answer. The webhook calls it on an instance of this class over a cache of
its own (``berth.k8s.webhook_cache``), on every replica, leader or standby; the serve loop's
instance upgrades and writes status. Like Kruise's webhook over its informers' cache, it only
reads the cache (SidecarSets, whose specs are replaced whole and never changed in place, and
PriorityClasses) and changes nothing but the pod under review, which is its own.

Upgrade. When the controller upgrades a pod's sidecars in place, the new images, the hash
annotations and ``kruise.io/sidecarset-inplace-update-state`` (each updated container's imageID
before the update, per SidecarSet) go out in one patch, whatever made the pod, as Kruise's
controller updates it; the kubelet restarts the containers, and the pod is unready meanwhile.

Status. ``matchedPods``, ``updatedPods``, ``readyPods``, ``updatedReadyPods`` and
``observedGeneration``, written through ``/status`` when they change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from berth.api.objects import Pod
from berth.api.workloads import SIDECAR_SET, Workload
from berth.controllers.sidecarset import (
    CLUSTER_SCOPE,
    HASH_ANNOTATION,
    LAYOUT_ANNOTATION,
    LIST_ANNOTATION,
    SidecarSetController,
    injected,
)
from berth.k8s import inplace
from berth.k8s.cache import KubeStore
from berth.k8s.convert import from_api, stamp
from berth.k8s.kinds import BY_KIND
from berth.k8s.kruise import ServeRuntime
from berth.k8s.sidecar_inject import pod_patch
from berth.store import NotFound, WatchEvent

#: Per SidecarSet, the imageIDs of the containers its last in-place upgrade changed.
STATE_ANNOTATION = "kruise.io/sidecarset-inplace-update-state"
#: The annotations the controller records on a pod.
RECORDS = (HASH_ANNOTATION, LAYOUT_ANNOTATION, LIST_ANNOTATION)

#: What the webhook answers: a JSON Patch (empty: the pod as it is) and warnings for the user.
Admitted = tuple[list[dict[str, Any]], list[str]]


class SidecarSets:
    """The SidecarSet controller of one serve loop, its pod writes and its status."""

    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
    ) -> None:
        self.store = store
        self.runtime = ServeRuntime(
            _UpgradeWriter(store, clock),  # type: ignore[arg-type]
            clock,
            at,
            lambda: self.controller.resync(),
        )
        self.controller = SidecarSetController(self.runtime)
        #: SidecarSets whose status may have changed, and what was last written for each.
        self.dirty: set[str] = set()
        self._written: dict[str, dict[str, Any]] = {}
        store.watch(SIDECAR_SET, self._on_set)
        store.watch("Pod", self._on_pod)

    def _on_set(self, event: WatchEvent, obj: Workload) -> None:
        if event == WatchEvent.DELETED:
            self.dirty.discard(obj.key)
            self._written.pop(obj.key, None)
        else:
            self.dirty.add(obj.key)

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        for name in injected(pod):
            self.dirty.add(f"{CLUSTER_SCOPE}/{name}")

    # ------------------------------------------------------------------ injection

    def admit(self, raw: dict[str, Any], namespace: str) -> Admitted:
        """The patch that injects the sidecars the controller's hook chooses for ``raw`` (a pod
        the API server is creating in ``namespace``), and warnings. Called on the webhook's
        thread (see the module's docstring)."""
        meta = dict(raw.get("metadata") or {})
        meta["namespace"] = meta.get("namespace") or namespace or "default"
        # A pod named by generateName has no name yet; the hook does not look at it.
        meta["name"] = meta.get("name") or f"{meta.get('generateName') or 'pod-'}new"
        doc = {"apiVersion": "v1", "kind": "Pod", **raw, "metadata": meta}
        pod, problems = from_api("Pod", doc, list(self.store.priority_classes.values()))
        if pod is None:
            errors = [str(p) for p in problems if p.severity == "error"] or ["not a pod"]
            return [], [f"berth injected no sidecars: it cannot read the pod ({errors[0]})"]
        before = {key: pod.annotations.get(key) for key in RECORDS}
        had = injected(pod)
        self.runtime.admit_object("Pod", pod)
        chosen = []
        for name, record in sorted(injected(pod).items()):
            if had.get(name) == record:
                continue
            set_raw = self.store.raw(SIDECAR_SET, f"{CLUSTER_SCOPE}/{name}") or {}
            chosen.append((set_raw.get("spec") or {}, list(record.get("sidecarList") or [])))
        if not chosen:
            return [], []
        annotations = {
            key: pod.annotations[key] for key in RECORDS if pod.annotations.get(key) != before[key]
        }
        return pod_patch(raw, chosen, annotations), []

    # ------------------------------------------------------------------ status

    def write(self) -> None:
        """Write the status of every SidecarSet that may have changed, when it differs from
        what was last written."""
        dirty, self.dirty = self.dirty, set()
        for key in sorted(dirty):
            obj = self.store.get(SIDECAR_SET, key)
            raw = self.store.raw(SIDECAR_SET, key)
            if obj is None or raw is None:
                continue
            status = sidecar_set_status(obj, raw)
            if self._written.get(key) == status:
                continue
            self.store.write_status(SIDECAR_SET, key, status)
            self._written[key] = status


def sidecar_set_status(sidecar_set: Workload, raw: dict[str, Any]) -> dict[str, Any]:
    """OpenKruise's SidecarSetStatus for what the controller counted."""
    status = sidecar_set.status
    return {
        "observedGeneration": int((raw.get("metadata") or {}).get("generation") or 0),
        "matchedPods": status.replicas,
        "updatedPods": status.updated,
        "readyPods": status.ready,
        "updatedReadyPods": status.updated_available,
    }


class _UpgradeWriter:
    """The cache as the SidecarSet controller writes to it: a pod whose sidecars it upgraded is
    patched as Kruise's controller updates it, whoever made the pod; everything else is the
    cache's."""

    def __init__(self, store: KubeStore, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def update(self, kind: str, obj: Any) -> None:
        if kind != "Pod":
            self._store.update(kind, obj)
            return
        raw = self._store.raw("Pod", obj.key)
        if raw is None:
            raise NotFound(f"Pod {obj.key} not found")
        patch = upgrade_patch(obj, raw, self._clock())
        if patch:
            patch["metadata"] = {**(patch.get("metadata") or {}), "uid": obj.uid}
            path = BY_KIND["Pod"].item(obj.namespace, obj.name)
            stored = self._store.client.request(
                "PATCH", path, body=patch, content_type=inplace.STRATEGIC
            )
            self._store.keep("Pod", obj.key, stored)
        self._store.notify("Pod", WatchEvent.MODIFIED, obj)


def upgrade_patch(pod: Pod, raw: dict[str, Any], now: float) -> dict[str, Any]:
    """What the controller changed on ``pod`` against the API's ``raw``: the records it keeps
    in annotations, and new sidecar images with the in-place update state."""
    before = dict((raw.get("metadata") or {}).get("annotations") or {})
    annotations: dict[str, str] = {
        key: pod.annotations[key]
        for key in RECORDS
        if key in pod.annotations and pod.annotations[key] != before.get(key)
    }
    images = inplace.changed_images(pod, raw)
    if images:
        statuses = {
            c.get("name"): c for c in (raw.get("status") or {}).get("containerStatuses") or []
        }
        state = _json(before.get(STATE_ANNOTATION))
        old = _json(before.get(HASH_ANNOTATION))
        for name, record in injected(pod).items():
            if (old.get(name) or {}).get("hash") == record.get("hash"):
                continue
            changed = [n for n in record.get("sidecarList") or [] if n in images]
            state[name] = {
                "revision": record.get("hash"),
                "updateTimestamp": stamp(now),
                "lastContainerStatuses": {
                    n: {"imageID": (statuses.get(n) or {}).get("imageID", "")} for n in changed
                },
            }
        annotations[STATE_ANNOTATION] = json.dumps(state, sort_keys=True)
    patch: dict[str, Any] = {}
    if annotations:
        patch["metadata"] = {"annotations": annotations}
    if images:
        patch["spec"] = inplace.images_patch(images)["spec"]
    return patch


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
