"""The StatefulSet controllers: Kubernetes' ``apps/v1`` StatefulSet and OpenKruise's Advanced
StatefulSet (``apps.kruise.io/v1beta1``), one reconcile loop per kind on the same algorithm
(OpenKruise's is a superset of Kubernetes').

Pods are ``<name>-<ordinal>``, ordinals from ``ordinals.start``, skipping ``reserveOrdinals``.
``OrderedReady`` creates one pod at a time, in ordinal order, each only once every lower one
is running and ready, and removes surplus pods one at a time from the highest ordinal;
``Parallel`` does both at once (``scaleStrategy.maxUnavailable`` caps how many are unavailable
while scaling out). A failed pod is deleted and created again under the same name.
``RollingUpdate`` replaces pods from the highest ordinal down to ``partition``, at most
``maxUnavailable`` unavailable at a time; the Advanced StatefulSet updates a pod in place when
only images and metadata changed (``podUpdatePolicy``). ``OnDelete`` updates nothing itself.
"""

from __future__ import annotations

from berth.api.keys import REVISION_LABEL
from berth.api.objects import Pod, PodPhase
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    STATEFUL_SET,
    Workload,
    scaled,
)
from berth.controllers import rollout
from berth.controllers.inplace import in_place_update
from berth.controllers.pod_order import is_ready
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def replica_range(spec: object) -> tuple[int, int]:
    """[start, end) ordinals holding ``replicas`` pods once reserved ordinals are skipped."""
    start = spec.start_ordinal  # type: ignore[attr-defined]
    end, made = start, 0
    while made < spec.replicas:  # type: ignore[attr-defined]
        if end not in spec.reserve_ordinals:  # type: ignore[attr-defined]
            made += 1
        end += 1
    return start, end


def ordinal_of(set_name: str, pod: Pod) -> int:
    """The ordinal in ``<set>-<ordinal>``, or -1."""
    prefix, _, number = pod.name.rpartition("-")
    return int(number) if prefix == set_name and number.isdigit() else -1


class StatefulSetController(WorkloadController):
    kind = STATEFUL_SET

    def reconcile(self, sts: Workload) -> None:
        spec = sts.spec
        template = self.remember(sts)
        self.ensure_group(sts, template)
        status = sts.status
        update = template.revision
        if status.update_revision and status.update_revision != update:
            allowed = None
            if spec.update_type == "RollingUpdate":
                allowed = self.max_unavailable(sts)
            rollout.begin(
                status, self.runtime.now(), update, spec.replicas, self._strategy(sts), allowed
            )
        status.update_revision = update
        if not status.current_revision:
            status.current_revision = update
        pods = [
            pod
            for pod in self.pods_of(sts)
            if pod.phase not in (PodPhase.EVICTED, PodPhase.DELETED)
        ]
        start, end = replica_range(spec)
        slots: list[int] = [o for o in range(start, end) if o not in spec.reserve_ordinals]
        kept = set(slots)  # looked up once per pod: a list would make a pass quadratic
        by_ordinal = {ordinal_of(sts.name, pod): pod for pod in pods}
        condemned = sorted(
            (pod for ordinal, pod in by_ordinal.items() if ordinal >= 0 and ordinal not in kept),
            key=lambda pod: -ordinal_of(sts.name, pod),
        )
        if self._replicas(sts, slots, by_ordinal) and self._condemned(
            sts, slots, by_ordinal, condemned
        ):
            if spec.update_type == "RollingUpdate" and not spec.paused:
                self._rolling_update(sts, start, end, by_ordinal)
        self._status(sts, slots)

    def _strategy(self, sts: Workload) -> str:
        spec = sts.spec
        if spec.update_type != "RollingUpdate":
            return spec.update_type
        return spec.pod_update_policy if spec.advanced else "RollingUpdate"

    def max_unavailable(self, sts: Workload) -> int:
        return max(scaled(sts.spec.max_unavailable, sts.spec.replicas, False), 1)

    # ------------------------------------------------------------------ scaling

    def _replicas(self, sts: Workload, slots: list[int], pods: dict[int, Pod]) -> bool:
        """Create missing pods and replace failed ones; False when the pass must stop here
        (OrderedReady waiting on a pod, or a failed pod just deleted)."""
        spec = sts.spec
        monotonic = spec.pod_management != "Parallel"
        budget = None
        if spec.scale_max_unavailable is not None:
            budget = max(scaled(spec.scale_max_unavailable, spec.replicas, False), 1)

        def spend() -> bool:
            nonlocal budget
            if budget is None:
                return False
            budget -= 1
            return budget <= 0

        for position, ordinal in enumerate(slots):
            pod = pods.get(ordinal)
            if pod is None:
                revision = self._creation_revision(sts, position, slots, pods)
                created = self._create(sts, ordinal, revision)
                if created is not None:
                    pods[ordinal] = created  # unavailable for the rest of the pass
                if monotonic:
                    return False
                if spend():
                    return True
                continue
            if pod.phase in (PodPhase.FAILED, PodPhase.SUCCEEDED):
                if spend():
                    return True
                self.delete_pod(sts, pod, f"pod {pod.phase.lower()}; recreated under the same name")
                return False
            if monotonic or budget is not None:
                if not self.available(sts, pod, spec.min_ready_seconds):
                    if monotonic:
                        return False
                    if spend():
                        return True
        return True

    def _creation_revision(
        self, sts: Workload, position: int, slots: list[int], pods: dict[int, Pod]
    ) -> str:
        """Pods below the partition are created at the current revision."""
        spec = sts.spec
        if spec.update_type != "RollingUpdate":
            return spec.template.revision
        return (
            sts.status.current_revision
            if position + 1 <= spec.partition
            else spec.template.revision
        )

    def _create(self, sts: Workload, ordinal: int, revision: str) -> Pod | None:
        template = self.revision_template(sts, revision) or sts.spec.template
        name = f"{sts.name}-{ordinal}"
        labels = {
            REVISION_LABEL: f"{sts.name}-{template.revision}",
            POD_NAME_LABEL: name,
            POD_INDEX_LABEL: str(ordinal),
        }
        return self.create_pod(sts, template, name, labels)

    def _condemned(
        self, sts: Workload, slots: list[int], pods: dict[int, Pod], condemned: list[Pod]
    ) -> bool:
        """Remove pods beyond the replicas, highest ordinal first; OrderedReady one at a
        time, and only while the pods that stay are healthy."""
        if not condemned:
            return True
        monotonic = sts.spec.pod_management != "Parallel"
        unhealthy = [
            pod
            for pod in [*(pods[o] for o in slots if o in pods), *reversed(condemned)]
            if not is_ready(pod)
        ]
        first_unhealthy = min(unhealthy, key=lambda p: ordinal_of(sts.name, p), default=None)
        for pod in condemned:
            if monotonic and pod is not first_unhealthy:
                if not self.available(sts, pod, sts.spec.min_ready_seconds):
                    return False
            self.delete_pod(sts, pod, f"scaled down to {sts.spec.replicas} replicas")
            if monotonic:
                return False
        return True

    # ------------------------------------------------------------------ rolling update

    def _rolling_update(self, sts: Workload, start: int, end: int, pods: dict[int, Pod]) -> None:
        spec = sts.spec
        update = spec.template.revision
        positions = [
            pods.get(o) if o not in spec.reserve_ordinals else None for o in range(start, end)
        ]
        max_unavailable = self.max_unavailable(sts)
        unavailable = {
            pod.name
            for pod in positions
            if pod is not None and not self.available(sts, pod, spec.min_ready_seconds)
        }
        budget = spec.replicas - spec.partition
        if budget <= 0:
            return
        targets = []
        for index in range(len(positions) - 1, spec.partition - 1, -1):
            if len(targets) >= budget:
                break
            if positions[index] is not None:
                targets.append(positions[index])
        for pod in targets:
            if pod.phase not in ACTIVE or self.pod_revision(pod) == update:
                continue
            if len(unavailable) >= max_unavailable and pod.name not in unavailable:
                return
            if not self._update_in_place(sts, pod):
                if spec.pod_update_policy == "InPlaceOnly":
                    self.condition(sts, f"FailedUpdate: pod {pod.name} cannot be updated in place")
                    return
                self.delete_pod(sts, pod, f"update to revision {update}", replaced=True)
            unavailable.add(pod.name)

    def _update_in_place(self, sts: Workload, pod: Pod) -> bool:
        spec = sts.spec
        if not spec.advanced or spec.pod_update_policy == "ReCreate":
            return False
        old = self.revision_template(sts, self.pod_revision(pod))
        if in_place_update(old, spec.template) is None:
            return False
        labels = {REVISION_LABEL: f"{sts.name}-{spec.template.revision}"}
        self.update_in_place(sts, pod, old, spec.template, labels)
        return True

    # ------------------------------------------------------------------ status

    def _status(self, sts: Workload, slots: list[int]) -> None:
        spec, status = sts.spec, sts.status
        active = [pod for pod in self.owned.get(sts.key, {}).values() if pod.phase in ACTIVE]
        update = spec.template.revision
        status.desired, status.replicas = spec.replicas, len(active)
        status.ready = sum(1 for pod in active if is_ready(pod))
        available = [pod for pod in active if self.available(sts, pod, spec.min_ready_seconds)]
        status.available = len(available)
        status.updated = sum(1 for pod in active if self.pod_revision(pod) == update)
        status.updated_available = sum(1 for pod in available if self.pod_revision(pod) == update)
        expected = (
            max(spec.replicas - spec.partition, 0) if spec.update_type == "RollingUpdate" else 0
        )
        complete = (
            status.replicas == spec.replicas
            and status.available == spec.replicas
            and status.updated_available >= expected
        )
        if complete and status.updated == spec.replicas:
            status.current_revision = update
        rollout.observe(
            status, self.runtime.now(), spec.replicas, status.available, status.replicas, complete
        )


class AdvancedStatefulSetController(StatefulSetController):
    kind = ADVANCED_STATEFUL_SET


@register("statefulset")
def _start(runtime: Runtime) -> StatefulSetController:
    return StatefulSetController(runtime)


@register("advanced-statefulset")
def _start_advanced(runtime: Runtime) -> AdvancedStatefulSetController:
    return AdvancedStatefulSetController(runtime)
