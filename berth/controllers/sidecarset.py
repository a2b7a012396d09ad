"""The SidecarSet controller (OpenKruise ``apps.kruise.io/v1alpha1``): sidecar containers
injected into the pods its selector matches when they are created, and upgraded in place.

Injection is an admission hook on pod creation (OpenKruise's mutating webhook): every
SidecarSet whose namespace and selector match, and whose ``injectionStrategy.paused`` is not
set, adds the containers the pod does not have yet,
and their requests count for the scheduler (init containers by their maximum, as Kubernetes
counts init containers, but without knowing the pod's own init containers, so the pod's whole
request stands in for them). Pods created before a SidecarSet do not get it.

When a SidecarSet's containers change only in their images, its pods are upgraded in place:
the sidecar images change, the pod is unready while they restart, at most ``maxUnavailable``
pods (a count, or a percentage of the matched pods rounded up; default 1) are unavailable at
once, ``partition`` pods are left on the old version, and ``updateStrategy.selector`` narrows
which pods are upgraded. Any other change reaches only pods created from then on.
"""

from __future__ import annotations

import json

from berth.api.objects import Pod
from berth.api.workloads import SIDECAR_SET, Workload, scaled
from berth.controllers import rollout
from berth.controllers.cloneset_sync import partition_count
from berth.controllers.pod_order import is_ready, kube_active_order
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController
from berth.store import WatchEvent

HASH_ANNOTATION = "kruise.io/sidecarset-hash"
#: SidecarSets are cluster-scoped; berth files them under this namespace.
CLUSTER_SCOPE = "default"
LAYOUT_ANNOTATION = "kruise.io/sidecarset-hash-without-image"
#: The names of the SidecarSets injected into the pod, comma-separated (Kruise's list).
LIST_ANNOTATION = "kruise.io/sidecarset-injected-list"


def matches(sidecar_set: Workload, pod: Pod) -> bool:
    spec = sidecar_set.spec
    if spec.namespace and pod.namespace != spec.namespace:
        return False
    return spec.selector.matches(pod.labels)


def injected(pod: Pod, annotation: str = HASH_ANNOTATION) -> dict[str, dict[str, object]]:
    """SidecarSet name → {"hash", "sidecarSetName", "sidecarList"} recorded on the pod; an
    annotation that is no such record (anyone may write one on a pod) records nothing."""
    text = pod.annotations.get(annotation)
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(record, dict):
        return {}
    return {name: value for name, value in record.items() if isinstance(value, dict)}


class SidecarSetController(WorkloadController):
    kind = SIDECAR_SET

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        #: SidecarSet name → the pods it was injected into (uid → pod).
        self.members: dict[str, dict[str, Pod]] = {}
        self._hooked = False

    def _on_object(self, event: WatchEvent, obj: Workload) -> None:
        if not self._hooked:
            self._hooked = True
            self.runtime.admit("Pod", self._inject)
        super()._on_object(event, obj)

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        if HASH_ANNOTATION not in pod.annotations:
            return
        for name in injected(pod):
            members = self.members.setdefault(name, {})
            if event == WatchEvent.DELETED or pod.phase not in ACTIVE:
                members.pop(pod.uid, None)
            else:
                members[pod.uid] = pod
            self.enqueue(f"{CLUSTER_SCOPE}/{name}")

    # ------------------------------------------------------------------ injection

    def _inject(self, pod: Pod) -> None:
        for sidecar_set in sorted(self.store.list(SIDECAR_SET), key=lambda s: s.name):
            if sidecar_set.spec.injection_paused or not matches(sidecar_set, pod):
                continue
            have = {name for name, _ in pod.containers}
            added = [c for c in sidecar_set.spec.containers if c.name not in have]
            if not added:
                continue
            requests = dict(pod.requests)
            for container in added:
                for name, amount in container.requests.items():
                    if container.init:
                        requests[name] = max(requests.get(name, 0), amount)
                    else:
                        requests[name] = requests.get(name, 0) + amount
            pod.requests = requests
            pod.containers = (*pod.containers, *((c.name, c.image) for c in added if not c.init))
            names = [c.name for c in added]
            self._record(pod, sidecar_set, names)

    def _record(self, pod: Pod, sidecar_set: Workload, names: list[str]) -> None:
        spec = sidecar_set.spec
        annotations = dict(pod.annotations)
        for key, value in ((HASH_ANNOTATION, spec.revision), (LAYOUT_ANNOTATION, spec.layout)):
            record = injected(pod, key)
            record[sidecar_set.name] = {
                "hash": value,
                "sidecarSetName": sidecar_set.name,
                "sidecarList": names,
            }
            annotations[key] = json.dumps(record, sort_keys=True, separators=(",", ":"))
        listed = set(filter(None, annotations.get(LIST_ANNOTATION, "").split(",")))
        annotations[LIST_ANNOTATION] = ",".join(sorted(listed | {sidecar_set.name}))
        pod.annotations = annotations

    # ------------------------------------------------------------------ upgrade

    def reconcile(self, sidecar_set: Workload) -> None:
        spec, status = sidecar_set.spec, sidecar_set.status
        members = self.members.get(sidecar_set.name, {}).values()
        pods = [pod for pod in members if pod.phase in ACTIVE]
        allowed = self._max_unavailable(spec, len(pods))
        if status.update_revision and status.update_revision != spec.revision:
            bound = None if spec.update_type == "NotUpdate" else allowed
            rollout.begin(
                status, self.runtime.now(), spec.revision, len(pods), spec.update_type, bound
            )
        status.update_revision = spec.revision
        waiting, stuck = [], 0
        for pod in pods:
            if self._updated(sidecar_set, pod):
                continue
            if spec.update_selector is not None and not spec.update_selector.matches(pod.labels):
                continue
            if (
                injected(pod, LAYOUT_ANNOTATION).get(sidecar_set.name, {}).get("hash")
                == spec.layout
            ):
                waiting.append(pod)
            else:
                stuck += 1  # changed beyond images: only new pods get it
        kept = partition_count(spec.partition, len(pods))
        if spec.update_type == "RollingUpdate" and not spec.paused:
            busy = sum(1 for p in pods if self._updated(sidecar_set, p) and not is_ready(p))
            for pod in kube_active_order(waiting)[: max(len(waiting) - kept, 0)]:
                if is_ready(pod):
                    if busy >= allowed:
                        break
                    busy += 1
                self._upgrade(sidecar_set, pod)
        if stuck:
            self.condition(
                sidecar_set, f"NotUpgradable: {stuck} pods need recreating for the new containers"
            )
        status.desired = status.replicas = len(pods)
        status.updated = sum(1 for pod in pods if self._updated(sidecar_set, pod))
        status.ready = status.available = sum(1 for pod in pods if is_ready(pod))
        status.updated_available = sum(
            1 for pod in pods if self._updated(sidecar_set, pod) and is_ready(pod)
        )
        remaining = sum(1 for pod in waiting if not self._updated(sidecar_set, pod))
        complete = remaining <= kept and status.updated == status.updated_available
        now = self.runtime.now()
        rollout.observe(status, now, len(pods), status.available, len(pods), complete)

    @staticmethod
    def _max_unavailable(spec: object, total: int) -> int:
        return scaled(spec.max_unavailable, total, True)  # type: ignore[attr-defined]

    def _updated(self, sidecar_set: Workload, pod: Pod) -> bool:
        return injected(pod).get(sidecar_set.name, {}).get("hash") == sidecar_set.spec.revision

    def _upgrade(self, sidecar_set: Workload, pod: Pod) -> None:
        images = {c.name: c.image for c in sidecar_set.spec.containers if not c.init}
        names = list(injected(pod).get(sidecar_set.name, {}).get("sidecarList", []))
        pod.containers = tuple((name, images.get(name, image)) for name, image in pod.containers)
        self._record(pod, sidecar_set, names)
        rollout.updated_in_place(sidecar_set.status)
        self.store.update("Pod", pod)


@register("sidecarset")
def _start(runtime: Runtime) -> SidecarSetController:
    return SidecarSetController(runtime)
