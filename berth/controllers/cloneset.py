"""The CloneSet controller (OpenKruise ``apps.kruise.io/v1alpha1``): stateless pods with
in-place update, partition, maxUnavailable and maxSurge.

Each pass first scales, and only when scaling changed nothing, updates (``cloneset_sync``
has the counts). Scaling creates pods ``<name>-<5 characters>`` on the current revision (those
the partition keeps) or the update revision, deletes ``scaleStrategy.podsToDelete`` and pods
marked for recreation, and scales in from the least useful pod: not scheduled, pending, not
ready, lower ``controller.kubernetes.io/pod-deletion-cost``, doubled up on a node (or in the
most crowded topology domain when the template spreads), newer. Updating goes through pods in
Kubernetes' ActivePods order: ``InPlaceIfPossible`` and ``InPlaceOnly`` change the images of
pods whose revisions differ only there (the pod keeps its name, uid and node and is unready
while its containers restart); anything else is recreated: marked, then deleted by the next
scaling pass, within ``maxUnavailable``, and replaced through the scheduler.
"""

from __future__ import annotations

from berth.api.keys import REVISION_LABEL
from berth.api.objects import Pod
from berth.api.workloads import CLONE_SET, PodTemplate, Workload, scaled
from berth.controllers import rollout
from berth.controllers.cloneset_sync import (
    Diffs,
    PodView,
    calculate_diffs,
    limit_updates,
    partition_count,
)
from berth.controllers.inplace import in_place_update
from berth.controllers.pod_order import (
    is_ready,
    kruise_deletion_order,
    kube_active_order,
    same_node_ranks,
    spread_ranks,
)
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController

INSTANCE_ID_LABEL = "apps.kruise.io/cloneset-instance-id"
SPECIFIED_DELETE_LABEL = "apps.kruise.io/specified-delete"


class CloneSetController(WorkloadController):
    kind = CLONE_SET

    def reconcile(self, cs: Workload) -> None:
        spec, status = cs.spec, cs.status
        template = self.remember(cs)
        self.ensure_group(cs, template)
        update = template.revision
        if status.update_revision and status.update_revision != update:
            allowed = None if spec.update_type == "OnDelete" else self._allowed(cs)
            rollout.begin(
                status, self.runtime.now(), update, spec.replicas, spec.update_type, allowed
            )
        status.update_revision = update
        if not status.current_revision:
            status.current_revision = update
        pods = [pod for pod in self.pods_of(cs) if pod.phase in ACTIVE]
        if not self._scale(cs, pods):
            self._update(cs, pods)
        self._status(cs)

    def _allowed(self, cs: Workload) -> int:
        """The unavailable pods the update strategy allows."""
        spec = cs.spec
        surge = scaled(spec.max_surge, spec.replicas, True)
        return scaled(spec.max_unavailable, spec.replicas, surge == 0)

    # ------------------------------------------------------------------ counting

    def _to_delete(self, cs: Workload, pod: Pod) -> bool:
        return (
            pod.labels.get(SPECIFIED_DELETE_LABEL) == "true" or pod.name in cs.spec.pods_to_delete
        )

    def _diffs(self, cs: Workload, pods: list[Pod]) -> Diffs:
        spec = cs.spec
        update = spec.template.revision
        views = [
            PodView(
                self.pod_revision(pod) == update,
                self.available(cs, pod, spec.min_ready_seconds),
                self._to_delete(cs, pod),
            )
            for pod in pods
        ]
        return calculate_diffs(
            spec.replicas,
            spec.partition,
            spec.max_unavailable,
            spec.max_surge,
            views,
            same_revision=cs.status.current_revision == update,
            scale_max_unavailable=spec.scale_max_unavailable,
            paused=spec.paused,
        )

    # ------------------------------------------------------------------ scaling

    def _scale(self, cs: Workload, pods: list[Pod]) -> bool:
        """Create or delete pods; True when something changed (the update waits)."""
        diffs = self._diffs(cs, pods)
        if diffs.scale_up > 0:
            return self._create(cs, diffs.scale_up_limit, diffs.scale_up_old)
        marked = [pod for pod in pods if self._to_delete(cs, pod)]
        deleting, budget = _ready_budget(marked, diffs.delete_ready_limit)
        for pod in deleting:
            recreate = pod.labels.get(SPECIFIED_DELETE_LABEL) == "true"
            why = "recreated for the update" if recreate else "listed in scaleStrategy.podsToDelete"
            self.delete_pod(cs, pod, why, replaced=recreate)
        if deleting:
            return True
        if diffs.scale_down <= 0 or marked:
            return False  # marked pods go before any scale-in
        update = cs.spec.template.revision
        chosen = self._choose(
            cs,
            diffs.scale_down,
            diffs.scale_down_old,
            [p for p in pods if self.pod_revision(p) != update],
            [p for p in pods if self.pod_revision(p) == update],
        )
        deleting, _ = _ready_budget(chosen, budget)
        for pod in deleting:
            self.delete_pod(cs, pod, f"scaled in to {cs.spec.replicas} replicas")
        return bool(deleting)

    def _create(self, cs: Workload, count: int, old: int) -> bool:
        current = self.revision_template(cs, cs.status.current_revision) or cs.spec.template
        made = 0
        for index in range(count):
            template = current if index < old else cs.spec.template
            name = self.generate_name(cs, cs.name)
            labels = {
                REVISION_LABEL: f"{cs.name}-{template.revision}",
                INSTANCE_ID_LABEL: name.rpartition("-")[2],
            }
            made += self.create_pod(cs, template, name, labels) is not None
        return made > 0

    def _choose(
        self, cs: Workload, total: int, old: int, not_updated: list[Pod], updated: list[Pod]
    ) -> list[Pod]:
        def pick(pods: list[Pod], count: int) -> list[Pod]:
            if count >= len(pods):
                return pods
            keys = [c.topology_key for c in cs.spec.template.pod.spread]
            if keys:
                ranks = spread_ranks(pods, keys, self._node_labels)
            else:
                ranks = same_node_ranks(pods)
            min_ready = cs.spec.min_ready_seconds
            order = kruise_deletion_order(pods, ranks, lambda p: self.available(cs, p, min_ready))
            return order[:count]

        if old >= total:
            return pick(not_updated, total)
        if old > 0:
            return pick(not_updated, old) + pick(updated, total - old)
        return pick(updated, total)

    def _node_labels(self, name: str) -> dict[str, str] | None:
        node = self.store.get("Node", name)
        return None if node is None else node.labels

    # ------------------------------------------------------------------ updating

    def _update(self, cs: Workload, pods: list[Pod]) -> None:
        spec = cs.spec
        if spec.update_type == "OnDelete" or spec.paused:
            return
        diffs = self._diffs(cs, pods)
        if diffs.update == 0:
            return
        update = spec.template.revision
        target = update if diffs.update > 0 else cs.status.current_revision
        waiting = [
            pod
            for pod in pods
            if (self.pod_revision(pod) != update) == (diffs.update > 0)
            and pod.labels.get(SPECIFIED_DELETE_LABEL) != "true"
        ]
        min_ready = spec.min_ready_seconds
        chosen = limit_updates(
            kube_active_order(waiting),
            diffs,
            pods,
            lambda p: self.available(cs, p, min_ready),
            lambda p: self.pod_revision(p) == target,
        )
        template = self.revision_template(cs, target) or spec.template
        for pod in chosen:
            self._update_pod(cs, pod, template)

    def _update_pod(self, cs: Workload, pod: Pod, template: PodTemplate) -> None:
        spec = cs.spec
        if spec.update_type in ("InPlaceIfPossible", "InPlaceOnly"):
            old = self.revision_template(cs, self.pod_revision(pod))
            if in_place_update(old, template) is not None:
                labels = {REVISION_LABEL: f"{cs.name}-{template.revision}"}
                self.update_in_place(cs, pod, old, template, labels, spec.grace_seconds)
                return
            if spec.update_type == "InPlaceOnly":
                self.condition(cs, f"FailedUpdate: pod {pod.name} cannot be updated in place")
                return
        pod.labels = {**pod.labels, SPECIFIED_DELETE_LABEL: "true"}
        self.store.update("Pod", pod)

    # ------------------------------------------------------------------ status

    def _status(self, cs: Workload) -> None:
        spec, status = cs.spec, cs.status
        pods = [pod for pod in self.owned.get(cs.key, {}).values() if pod.phase in ACTIVE]
        update = spec.template.revision
        available = [pod for pod in pods if self.available(cs, pod, spec.min_ready_seconds)]
        status.desired, status.replicas = spec.replicas, len(pods)
        status.ready = sum(1 for pod in pods if is_ready(pod))
        status.available = len(available)
        status.updated = sum(1 for pod in pods if self.pod_revision(pod) == update)
        status.updated_available = sum(1 for pod in available if self.pod_revision(pod) == update)
        expected = spec.replicas - partition_count(spec.partition, spec.replicas)
        complete = (
            status.replicas == spec.replicas
            and status.available == spec.replicas
            and status.updated_available >= expected
            and not any(self._to_delete(cs, pod) for pod in pods)
        )
        if complete and status.updated == spec.replicas:
            status.current_revision = update
        rollout.observe(
            status, self.runtime.now(), spec.replicas, status.available, status.replicas, complete
        )


def _ready_budget(pods: list[Pod], budget: int) -> tuple[list[Pod], int]:
    """The pods that may be deleted now: every unready one, ready ones while the budget lasts;
    and what is left of the budget."""
    allowed = []
    for pod in pods:
        if not is_ready(pod):
            allowed.append(pod)
        elif budget > 0:
            allowed.append(pod)
            budget -= 1
    return allowed, budget


@register("cloneset")
def _start(runtime: Runtime) -> CloneSetController:
    return CloneSetController(runtime)
