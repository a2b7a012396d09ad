"""What every workload controller does the same way: a work queue of object keys, the pods
each object owns, the PodGroup its pods join, and creating, deleting and updating pods in place
through the store.

A controller reconciles an object by reading its spec and its pods as they are now and writing
the difference, as a Kubernetes controller does; it never keeps a plan between passes. Passes
are queued (``Runtime.soon``): all the pod events of one instant make one pass per object.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import ClassVar

from berth.api.keys import (
    DEFAULT_QUEUE,
    INPLACE_GRACE_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    REVISION_LABEL,
)
from berth.api.objects import FINAL_POD_PHASES, GroupPhase, Pod, PodGroup, PodPhase
from berth.api.templates import SAFE_ALPHABET
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    REPLICA_SET,
    STATEFUL_SET,
    UPSTREAM,
    PodTemplate,
    Workload,
)
from berth.controllers import rollout
from berth.controllers.pod_order import is_ready
from berth.controllers.runtime import Runtime
from berth.store import AlreadyExists, NotFound, ObjectStore, WatchEvent

#: Kinds whose pods kube-scheduler spreads by default, counting the pods their selector selects
#: (it knows Services, ReplicationControllers, ReplicaSets and StatefulSets, not CRDs).
SPREAD_BY_DEFAULT = (REPLICA_SET, STATEFUL_SET)

#: Pods that have not ended (Kubernetes' active pods).
ACTIVE = (PodPhase.PENDING, PodPhase.BOUND, PodPhase.RUNNING)
#: Pod phases that mean the pod object is gone from the API (evicted pods are deleted by the
#: eviction; deleted ones are gone already).
GONE = (PodPhase.EVICTED, PodPhase.DELETED)
_GROUP_PREFIX = {ADVANCED_STATEFUL_SET: "asts"}


class WorkloadController:
    """Base of the controllers of ``kind``; subclasses implement ``reconcile``."""

    kind: ClassVar[str]

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store
        self.deleted: dict[str, str] = {}
        #: owner key → pod uid → the pods it owns that are still in the store.
        self.owned: dict[str, dict[str, Pod]] = {}
        self._queue: dict[str, None] = {}
        self._draining = False
        self._wakes: dict[str, float] = {}
        self._names: dict[str, int] = {}
        self._publishing = False
        #: object key → revision → template: the templates its pods may still run (what
        #: Kubernetes keeps as ControllerRevisions).
        self.history: dict[str, dict[str, PodTemplate]] = {}
        self.store.watch(self.kind, self._on_object)
        self.store.watch("Pod", self._on_pod)

    # ------------------------------------------------------------------ queue

    def _on_object(self, event: WatchEvent, obj: Workload) -> None:
        if self._publishing:
            return  # its own status update
        if event == WatchEvent.DELETED:
            self.owned.pop(obj.key, None)
        else:
            self.enqueue(obj.key)

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        if pod.owner_kind != self.kind:
            return
        pods = self.owned.setdefault(pod.owner, {})
        if event == WatchEvent.DELETED or pod.terminating:
            # A pod being deleted (a cluster's, in its grace period) is no longer one of its
            # owner's active pods, as Kubernetes' and OpenKruise's controllers count them.
            pods.pop(pod.uid, None)
        else:
            pods[pod.uid] = pod
        self.enqueue(pod.owner)

    def enqueue(self, key: str) -> None:
        if key in self._queue:
            return
        self._queue[key] = None
        if not self._draining and len(self._queue) == 1:
            self.runtime.soon(self._drain)

    def _drain(self) -> None:
        self._draining = True
        try:
            while self._queue:
                key = next(iter(self._queue))
                del self._queue[key]
                obj = self.store.get(self.kind, key)
                if obj is not None:
                    self.reconcile(obj)
        finally:
            self._draining = False

    def resync(self) -> None:
        """Queue every object of the kind again (after a pass that failed half-way through,
        against a backend whose writes can fail)."""
        for obj in self.store.list(self.kind):
            self._queue[obj.key] = None
        if self._queue and not self._draining:
            self.runtime.soon(self._drain)

    def wake(self, key: str, at: float) -> None:
        """Reconcile ``key`` again at ``at`` (a pod becoming available after
        minReadySeconds, a deadline, a backoff)."""
        if at <= self.runtime.now():
            self.enqueue(key)
            return
        pending = self._wakes.get(key)
        if pending is not None and self.runtime.now() < pending <= at:
            return
        self._wakes[key] = at

        def fire() -> None:
            if self._wakes.get(key) == at:
                del self._wakes[key]
            self.enqueue(key)

        self.runtime.at(at, fire)

    def reconcile(self, obj: Workload) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ revisions

    def remember(self, obj: Workload) -> PodTemplate:
        """Record the object's current template among its revisions, and return it."""
        template = obj.spec.template
        self.history.setdefault(obj.key, {})[template.revision] = template
        return template

    def revision_template(self, obj: Workload, revision: str) -> PodTemplate | None:
        return self.history.get(obj.key, {}).get(revision)

    @staticmethod
    def pod_revision(pod: Pod) -> str:
        """The revision in a pod's ``controller-revision-hash`` (``<owner>-<revision>``)."""
        return pod.labels.get(REVISION_LABEL, "").rpartition("-")[2]

    # ------------------------------------------------------------------ pods

    def pods_of(self, obj: Workload) -> list[Pod]:
        """The object's pods still in the store, oldest first; evicted ones are removed from
        the store here (an eviction deletes the pod)."""
        pods = self.owned.get(obj.key, {})
        for pod in [p for p in pods.values() if p.phase in GONE]:
            del pods[pod.uid]
            try:
                self.store.delete("Pod", pod.key)
            except NotFound:
                pass
        return list(pods.values())

    def available(self, obj: Workload, pod: Pod, min_ready: float) -> bool:
        """Ready for ``min_ready`` seconds; a pod ready for less wakes the object when it
        will have been."""
        if not is_ready(pod):
            return False
        since = pod.ready_since or 0.0
        if since + min_ready <= self.runtime.now():
            return True
        self.wake(obj.key, since + min_ready)
        return False

    def generate_name(self, obj: Workload, prefix: str) -> str:
        """``<prefix>-<5 characters>``, as a generateName would give, from a counter."""
        while True:
            count = self._names.get(obj.key, 0)
            self._names[obj.key] = count + 1
            digest = hashlib.sha256(f"{obj.kind}/{obj.key}/{count}".encode()).digest()
            number = int.from_bytes(digest[:8], "big")
            suffix = ""
            for _ in range(5):
                number, digit = divmod(number, len(SAFE_ALPHABET))
                suffix += SAFE_ALPHABET[digit]
            name = f"{prefix}-{suffix}"
            if self.store.get("Pod", f"{obj.namespace}/{name}") is None:
                return name

    def create_pod(
        self,
        obj: Workload,
        template: PodTemplate,
        name: str,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        group: str | None = None,
        **fields: object,
    ) -> Pod | None:
        """A pod from ``template`` owned by ``obj``, in ``group`` (else the object's); None
        (and a condition) when the name is taken by a pod the controller does not own."""
        proto = template.pod
        pod = replace(
            proto,
            name=name,
            namespace=obj.namespace,
            labels={**proto.labels, **(labels or {})},
            annotations={**proto.annotations, **(annotations or {})},
            group=obj.group if group is None else group,
            submit_time=self.runtime.now(),
            owner=obj.key,
            owner_kind=self.kind,
            owner_selector=obj.spec.selector if self.kind in SPREAD_BY_DEFAULT else None,
            uid="",
            **fields,
        )
        try:
            self.store.create("Pod", pod)
        except AlreadyExists:
            self.condition(obj, f"FailedCreate: pod {name} already exists")
            return None
        obj.status.created += 1
        return pod

    def delete_pod(self, obj: Workload, pod: Pod, why: str, replaced: bool = False) -> None:
        """Delete a pod; ``replaced``: to make room for the new revision (a rollout's
        recreation)."""
        if pod.phase not in FINAL_POD_PHASES:
            self.deleted[pod.ref] = f"deleted by the {UPSTREAM[self.kind][1]} controller: {why}"
            obj.status.deleted += 1
            if replaced:
                rollout.recreated(obj.status, pod)
        self.owned.get(obj.key, {}).pop(pod.uid, None)
        try:
            self.store.delete("Pod", pod.key)
        except NotFound:
            pass

    def update_in_place(
        self,
        obj: Workload,
        pod: Pod,
        old: PodTemplate | None,
        new: PodTemplate,
        labels: dict[str, str],
        grace: float = 0.0,
    ) -> None:
        """Give a pod the new template's images and metadata, keeping its name, uid and
        node; its containers restart (the node agent sees the images change)."""
        pod.labels = _patched(pod.labels, old.pod.labels if old else {}, new.pod.labels)
        pod.labels.update(labels)
        pod.annotations = _patched(
            pod.annotations, old.pod.annotations if old else {}, new.pod.annotations
        )
        if grace > 0:
            pod.annotations[INPLACE_GRACE_ANNOTATION] = f"{grace:g}"
        else:
            pod.annotations.pop(INPLACE_GRACE_ANNOTATION, None)
        # By container name: containers the template does not have (injected sidecars) keep
        # their images.
        images = dict(new.pod.containers)
        pod.containers = tuple((name, images.get(name, image)) for name, image in pod.containers)
        rollout.updated_in_place(obj.status)
        self.store.update("Pod", pod)

    # ------------------------------------------------------------------ groups and status

    def ensure_group(self, obj: Workload, template: PodTemplate) -> None:
        """The PodGroup the object's pods join (one per object, as Volcano's controller
        makes one per owner), created on the first pass."""
        if obj.group:
            return
        prefix = _GROUP_PREFIX.get(obj.kind, UPSTREAM[obj.kind][1].lower())
        name, attempt = f"{prefix}-{obj.name}", 0
        while self.store.get("PodGroup", f"{obj.namespace}/{name}") is not None:
            attempt += 1
            name = f"{prefix}-{obj.name}-{attempt}"
        pod = template.pod
        group = PodGroup(
            name=name,
            namespace=obj.namespace,
            min_member=1,
            queue=pod.annotations.get(QUEUE_NAME_ANNOTATION, DEFAULT_QUEUE),
            priority_class_name=pod.priority_class_name,
            priority=pod.priority,
            submit_time=obj.submit_time,
            annotations=dict(pod.annotations),
            preemptable=pod.preemptable,
        )
        obj.group = name
        self.store.create("PodGroup", group)

    def publish(self, obj: Workload) -> None:
        """Write the object's status back (its owner, if any, reconciles on it)."""
        self._publishing = True
        try:
            self.store.update(self.kind, obj)
        finally:
            self._publishing = False

    def condition(self, obj: Workload, what: str) -> None:
        """Record a condition, unless it is the one recorded last."""
        conditions = obj.status.conditions
        if not conditions or conditions[-1][1] != what:
            conditions.append((self.runtime.now(), what))

    def finish_group(self, obj: Workload, succeeded: bool) -> None:
        """A Job's group ends with the Job (its JCT)."""
        group = self.store.get("PodGroup", f"{obj.namespace}/{obj.group}")
        if group is None or group.end_time is not None:
            return
        group.phase = GroupPhase.COMPLETED if succeeded else GroupPhase.FAILED
        group.end_time = self.runtime.now()


def set_replicas(store: ObjectStore, kind: str, key: str, replicas: int) -> None:
    """Change an object's desired replicas at run time, as an autoscaler writing the scale
    subresource does; its controller scales on the change."""
    obj = store.get(kind, key)
    if obj is None:
        raise NotFound(f"{kind} {key} not found")
    obj.spec = replace(obj.spec, replicas=replicas)
    store.update(kind, obj)


def _patched(current: dict[str, str], old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    """``current`` with what changed from ``old`` to ``new`` applied (keys removed from the
    template are removed, others set)."""
    result = {k: v for k, v in current.items() if k not in old or k in new}
    result.update(new)
    return result
