"""LeaderWorkerSets in ``berth serve --lws``: the simulator's controller against the API server.

``LeaderWorkerSets`` runs ``berth.controllers.leaderworkerset`` over the cache on the serve
loop's clock and timers (``ServeRuntime``), and is the cache's writer for its pods: each is
created from the leader's or the workers' template as the API holds it, with the labels and
annotations LWS gives its pods, the group's PodGroup, an ownerReference to the
LeaderWorkerSet and, with ``leaderworkerset.sigs.k8s.io/exclusive-topology``, upstream's
affinity terms. Each LeaderWorkerSet's status (``replicas``, ``readyReplicas``,
``updatedReplicas``) is written through ``/status`` when it changes.

Upstream's controller makes a StatefulSet of leaders and one of workers per group; berth
creates the pods itself, owned by the LeaderWorkerSet (the pods, their names and labels are
the same). Run it only where LWS's own controller is not installed. A restarted berth takes
back, before the controller's first pass, the PodGroup each running group's pods joined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from berth.api.keys import GROUP_NAME_ANNOTATION
from berth.api.lws import EXCLUSIVE_ANNOTATION, GROUP_KEY_LABEL
from berth.api.objects import Pod, PodGroup
from berth.api.workloads import LEADER_WORKER_SET, Workload
from berth.controllers.leaderworkerset import LeaderWorkerSetController, worker_of
from berth.controllers.workload import WorkloadController
from berth.k8s import inplace
from berth.k8s.cache import KubeStore
from berth.k8s.convert import owner_reference, pod_object
from berth.k8s.kinds import BY_KIND
from berth.k8s.kruise import ServeRuntime
from berth.store import NotFound, WatchEvent


class GroupWorkloads:
    """What the LeaderWorkerSet and JobSet controllers of a serve loop share: the serve loop's
    runtime, the cache's writer of pods they replace and never update in place (their labels
    and annotations patched), and the status last written per object (their controllers
    publish no event when a status changes, so every object is compared on each write)."""

    #: The kind whose objects' status is written, and the owner kind of the pods written.
    kind = ""
    pods_of = ""

    def __init__(
        self,
        store: KubeStore,
        clock: Callable[[], float],
        at: Callable[[float, Callable[[], None]], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.runtime = ServeRuntime(store, clock, at, self._resync)
        self._written: dict[str, dict[str, Any]] = {}
        #: Objects the controller has had a pass over in this process.
        self._seen: set[str] = set()
        self.controller = self._start_controllers()
        self._attach(self.controller)

    def _start_controllers(self) -> WorkloadController:
        """Start the controllers on ``runtime``; the one of ``kind`` is returned."""
        raise NotImplementedError

    def _attach(self, controller: WorkloadController) -> None:
        """Become the pods' writer, hear of deletions (once the controllers watch), and take
        back before ``controller``'s first pass over an object what it made before a restart
        (``_first_sight``): the caches have every pod by then."""
        self.store.pod_writers[self.pods_of] = self
        self.store.group_owners.append(self._group_owner)
        self.store.watch(self.kind, self._on_set)
        reconcile = controller.reconcile

        def first_sight_then(obj: Workload) -> None:
            if obj.key not in self._seen:
                self._seen.add(obj.key)
                self._first_sight(obj)
            reconcile(obj)

        controller.reconcile = first_sight_then  # type: ignore[method-assign]

    def _resync(self) -> None:
        raise NotImplementedError

    def _first_sight(self, obj: Workload) -> None:
        raise NotImplementedError

    def _group_owner(self, group: PodGroup) -> tuple[str, str] | None:
        """The object of ``kind`` that made ``group`` (its ownerReference, so that
        Kubernetes' garbage collector deletes the group with it)."""
        key = self._owner_key(group)
        return None if key is None else (self.kind, key)

    def _owner_key(self, group: PodGroup) -> str | None:
        raise NotImplementedError

    def _on_set(self, event: WatchEvent, obj: Workload) -> None:
        if event == WatchEvent.DELETED:
            self._written.pop(obj.key, None)
            self._seen.discard(obj.key)

    def created(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def update(self, pod: Pod, raw: dict[str, Any]) -> dict[str, Any] | None:
        return patch_metadata(self.store, pod, raw)


class LeaderWorkerSets(GroupWorkloads):
    """The LeaderWorkerSet controller of one serve loop, and the writer of its pods."""

    kind = pods_of = LEADER_WORKER_SET
    controller: LeaderWorkerSetController

    def _start_controllers(self) -> LeaderWorkerSetController:
        return LeaderWorkerSetController(self.runtime)

    def _resync(self) -> None:
        self.controller.resync()

    def _first_sight(self, obj: Workload) -> None:
        """A restarted berth: each running group keeps the PodGroup its pods joined, so a
        pod made again joins its group's gang."""
        self.controller.remember_groups(obj)

    def _owner_key(self, group: PodGroup) -> str | None:
        return self.controller.owner_of_group(group.namespace, group.name)

    # ------------------------------------------------------------------ the cache's pod writer

    def manifest(self, pod: Pod) -> dict[str, Any]:
        raw = self.store.raw(LEADER_WORKER_SET, pod.owner)
        if raw is None:
            raise NotFound(f"LeaderWorkerSet {pod.owner} of pod {pod.key} is not in the cache")
        templates = (raw.get("spec") or {}).get("leaderWorkerTemplate") or {}
        worker = templates.get("workerTemplate") or {}
        template = worker
        if worker_of(pod) == 0:
            template = templates.get("leaderTemplate") or worker
        owner = owner_reference(raw, BY_KIND[LEADER_WORKER_SET])
        return group_pod(pod, template, owner, GROUP_KEY_LABEL, EXCLUSIVE_ANNOTATION)

    # ------------------------------------------------------------------ status

    def write(self) -> None:
        for lws in self.store.list(LEADER_WORKER_SET):
            key = lws.key
            status = {
                "replicas": lws.status.replicas,
                "readyReplicas": lws.status.ready,
                "updatedReplicas": lws.status.updated,
            }
            if self._written.get(key) != status:
                self.store.write_status(LEADER_WORKER_SET, key, status)
                self._written[key] = status


def patch_metadata(store: KubeStore, pod: Pod, raw: dict[str, Any]) -> dict[str, Any] | None:
    """Write the labels and annotations a controller changed on ``pod`` (LWS and JobSet
    replace pods, never update their containers); the pod's latest state, or None when nothing
    changed."""
    patch = inplace.metadata_patch(pod, raw)
    if not patch:
        return None
    if pod.uid:
        patch["metadata"]["uid"] = pod.uid
    path = BY_KIND["Pod"].item(pod.namespace, pod.name)
    stored = store.client.request("PATCH", path, body=patch, content_type=inplace.STRATEGIC)
    store.keep("Pod", pod.key, stored)
    return stored


def group_pod(
    pod: Pod, template: dict[str, Any], owner: dict[str, Any], label: str, exclusive: str
) -> dict[str, Any]:
    """The API pod of a gang member (an LWS group's, a JobSet Job's) from its template: kept
    within one domain of the topology its ``exclusive`` annotation names, apart from other
    groups (by ``label``), and naming its PodGroup as Volcano's pods do."""
    spec = dict(template.get("spec") or {})
    topology = pod.annotations.get(exclusive)
    if topology:
        spec["affinity"] = group_affinity(
            spec.get("affinity") or {}, label, pod.labels[label], topology
        )
    annotations = dict(pod.annotations)
    if pod.group:
        annotations[GROUP_NAME_ANNOTATION] = pod.group
    return pod_object(pod, spec, owner, annotations=annotations)


def group_affinity(affinity: dict[str, Any], label: str, key: str, topology: str) -> dict[str, Any]:
    """``affinity`` (the template's, as the API holds it) with the two required terms LWS and
    JobSet add for exclusive placement: with the pods whose ``label`` is ``key`` in one
    ``topology`` domain, and in no domain that holds a pod whose ``label`` has another value
    (``berth.api.lws.exclusive_affinity`` for the scheduler's side)."""

    def term(*expressions: dict[str, Any]) -> dict[str, Any]:
        return {"labelSelector": {"matchExpressions": list(expressions)}, "topologyKey": topology}

    together = term({"key": label, "operator": "In", "values": [key]})
    alone = term(
        {"key": label, "operator": "Exists"},
        {"key": label, "operator": "NotIn", "values": [key]},
    )
    result = dict(affinity)
    for field, added in (("podAffinity", together), ("podAntiAffinity", alone)):
        current = dict(result.get(field) or {})
        required = list(current.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        current["requiredDuringSchedulingIgnoredDuringExecution"] = [*required, added]
        result[field] = current
    return result
