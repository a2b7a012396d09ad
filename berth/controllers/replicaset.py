"""The ReplicaSet controller (Kubernetes' ``apps/v1``): keep ``replicas`` pods of the template.

Missing pods are created (``<name>-<5 characters>``); surplus ones are deleted in Kubernetes'
order (``pod_order.kube_deletion_order``), ranked by how many related pods share their node,
related pods being those of every ReplicaSet of the same Deployment. Failed and succeeded pods
do not count and are replaced. The status counts ready and available pods (ready for
``minReadySeconds``), which is what a Deployment rolls by.
"""

from __future__ import annotations

from berth.api.keys import POD_TEMPLATE_HASH_LABEL
from berth.api.objects import Pod
from berth.api.workloads import DEPLOYMENT, REPLICA_SET, Workload
from berth.controllers import rollout
from berth.controllers.pod_order import is_ready, kube_deletion_order, related_on_node
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController


class ReplicaSetController(WorkloadController):
    kind = REPLICA_SET

    def reconcile(self, rs: Workload) -> None:
        spec = rs.spec
        self.ensure_group(rs, spec.template)
        pods = self.pods_of(rs)
        active = [pod for pod in pods if pod.phase in ACTIVE]
        diff = len(active) - spec.replicas
        if diff < 0:
            for _ in range(-diff):
                self.create_pod(rs, spec.template, self.generate_name(rs, rs.name))
        elif diff > 0:
            owner = self.store.get(DEPLOYMENT, rs.owner) if rs.owner else None
            related = self._related(rs) if owner is not None else active
            doomed = pods_to_delete(active, related, diff, self.runtime.now())
            replaced = owner is not None and owner.status.update_revision != revision_of(rs)
            why = f"scaled down to {spec.replicas} replicas"
            if owner is not None:
                why += f" by Deployment {owner.name}"
            for pod in doomed:
                if replaced:  # a rolling update's old pod: the Deployment's rollout counts it
                    rollout.recreated(owner.status, pod)  # type: ignore[union-attr]
                self.delete_pod(rs, pod, why)
        self._status(rs)

    def _related(self, rs: Workload) -> list[Pod]:
        """The active pods of every ReplicaSet of the same Deployment."""
        pods: list[Pod] = []
        for other in self.store.list(REPLICA_SET):
            if other.owner == rs.owner and other.namespace == rs.namespace:
                pods += [p for p in self.owned.get(other.key, {}).values() if p.phase in ACTIVE]
        return pods

    def _status(self, rs: Workload) -> None:
        active = [pod for pod in self.owned.get(rs.key, {}).values() if pod.phase in ACTIVE]
        status = rs.status
        before = (status.replicas, status.ready, status.available)
        status.desired, status.replicas = rs.spec.replicas, len(active)
        status.ready = sum(1 for pod in active if is_ready(pod))
        status.available = sum(
            1 for pod in active if self.available(rs, pod, rs.spec.min_ready_seconds)
        )
        if (status.replicas, status.ready, status.available) != before:
            self.publish(rs)  # its Deployment rolls by these counts


def revision_of(rs: Workload) -> str:
    """A ReplicaSet's pod-template-hash (empty for one made by hand)."""
    return rs.spec.template.pod.labels.get(POD_TEMPLATE_HASH_LABEL, "")


def pods_to_delete(active: list[Pod], related: list[Pod], count: int, now: float) -> list[Pod]:
    """The ``count`` pods a ReplicaSet scales down first."""
    if count >= len(active):
        return list(active)
    ranks = related_on_node(active, related)
    return kube_deletion_order(active, ranks, now)[:count]


@register("replicaset")
def _start(runtime: Runtime) -> ReplicaSetController:
    return ReplicaSetController(runtime)
