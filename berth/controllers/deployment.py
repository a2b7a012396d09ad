"""The Deployment controller (Kubernetes' ``apps/v1``): one ReplicaSet per pod template, and
the rollout between them.

Each template gets a ReplicaSet ``<deployment>-<pod-template-hash>`` whose pods carry that hash.
``RollingUpdate`` grows the new ReplicaSet while the total stays within ``replicas + maxSurge``
and shrinks old ones while at least ``replicas - maxUnavailable`` pods stay available (surge
rounded up, unavailable down, and at least one of the two above zero); ``Recreate`` scales every
old ReplicaSet to zero, waits until their pods are gone, then scales the new one up. A change of
``replicas`` alone (an autoscaler's) is spread over the active ReplicaSets in proportion to
their sizes. Going back to an earlier template reuses its ReplicaSet (a rollback).
"""

from __future__ import annotations

from dataclasses import replace

from berth.api.keys import POD_TEMPLATE_HASH_LABEL
from berth.api.selectors import Requirement
from berth.api.workloads import (
    DEPLOYMENT,
    REPLICA_SET,
    PodTemplate,
    ReplicaSetSpec,
    Workload,
    scaled,
)
from berth.controllers import rollout
from berth.controllers.replicaset import revision_of
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import WorkloadController
from berth.store import NotFound, WatchEvent

DESIRED_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_ANNOTATION = "deployment.kubernetes.io/max-replicas"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def resolve_fenceposts(surge: object, unavailable: object, desired: int) -> tuple[int, int]:
    """maxSurge rounded up and maxUnavailable rounded down, of ``desired``; both zero would
    stall a rollout, so unavailable is then 1."""
    max_surge = scaled(surge, desired, True)  # type: ignore[arg-type]
    max_unavailable = scaled(unavailable, desired, False)  # type: ignore[arg-type]
    if max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    return max_surge, max_unavailable


def max_unavailable(d: Workload) -> int:
    spec = d.spec
    if spec.strategy != "RollingUpdate" or spec.replicas == 0:
        return 0
    return min(
        resolve_fenceposts(spec.max_surge, spec.max_unavailable, spec.replicas)[1], spec.replicas
    )


def max_surge(d: Workload) -> int:
    spec = d.spec
    if spec.strategy != "RollingUpdate":
        return 0
    return resolve_fenceposts(spec.max_surge, spec.max_unavailable, spec.replicas)[0]


def new_rs_replicas(d: Workload, all_rss: list[Workload], new_rs: Workload) -> int:
    """How big the new ReplicaSet may be now."""
    spec = d.spec
    if spec.strategy != "RollingUpdate":
        return spec.replicas
    current = sum(rs.spec.replicas for rs in all_rss)
    limit = spec.replicas + max_surge(d)
    if current >= limit:
        return new_rs.spec.replicas
    return new_rs.spec.replicas + min(limit - current, spec.replicas - new_rs.spec.replicas)


def deployment_complete(d: Workload) -> bool:
    """Every pod updated and available, and no other pod left."""
    status, replicas = d.status, d.spec.replicas
    return (
        status.updated == replicas and status.replicas == replicas and status.available == replicas
    )


def _by_age(rss: list[Workload]) -> list[Workload]:
    return sorted(rss, key=lambda rs: (rs.submit_time, rs.name))


class DeploymentController(WorkloadController):
    kind = DEPLOYMENT

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        #: Pods created and deleted by the ReplicaSets it has deleted (revision history).
        self._retired: dict[str, tuple[int, int]] = {}
        self.store.watch(REPLICA_SET, self._on_replica_set)

    def _on_replica_set(self, event: WatchEvent, rs: Workload) -> None:
        if rs.owner:
            self.enqueue(rs.owner)

    def reconcile(self, d: Workload) -> None:
        spec = d.spec
        self.ensure_group(d, spec.template)
        rss = _by_age(
            [
                rs
                for rs in self.store.list(REPLICA_SET)
                if rs.owner == d.key and rs.namespace == d.namespace
            ]
        )
        revision = spec.template.revision
        if d.status.update_revision and d.status.update_revision != revision:
            allowed = max_unavailable(d) if spec.strategy == "RollingUpdate" else None
            rollout.begin(
                d.status, self.runtime.now(), revision, spec.replicas, spec.strategy, allowed
            )
        d.status.update_revision = revision
        new_rs = next((rs for rs in rss if rs.spec.template.revision == revision), None)
        old_rss = [rs for rs in rss if rs is not new_rs]
        if spec.paused or self._scaling_event(d, rss):
            self._scale(d, new_rs, old_rss)
        elif spec.strategy == "Recreate":
            self._recreate(d, new_rs, old_rss)
        else:
            self._rolling(d, new_rs, old_rss)
        self._status(d)

    # ------------------------------------------------------------------ strategies

    def _rolling(self, d: Workload, new_rs: Workload | None, old_rss: list[Workload]) -> None:
        if new_rs is None:
            new_rs = self._new_replica_set(d, old_rss)
            return
        all_rss = [*old_rss, new_rs]
        # Scale up, if it can; else scale down, if it can.
        if new_rs.spec.replicas != d.spec.replicas:
            target = (
                d.spec.replicas
                if new_rs.spec.replicas > d.spec.replicas
                else new_rs_replicas(d, all_rss, new_rs)
            )
            if self._scale_rs(d, new_rs, target):
                return
        active_old = [rs for rs in old_rss if rs.spec.replicas > 0]
        if self._reconcile_old(d, all_rss, active_old, new_rs):
            return
        self._cleanup(d, old_rss)

    def _reconcile_old(
        self, d: Workload, all_rss: list[Workload], old_rss: list[Workload], new_rs: Workload
    ) -> bool:
        """Scale old ReplicaSets down as far as availability allows: unhealthy pods first
        (removing them costs nothing), then available ones down to ``replicas -
        maxUnavailable``."""
        if sum(rs.spec.replicas for rs in old_rss) == 0:
            return False
        all_pods = sum(rs.spec.replicas for rs in all_rss)
        min_available = d.spec.replicas - max_unavailable(d)
        new_unavailable = new_rs.spec.replicas - new_rs.status.available
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = self._cleanup_unhealthy(d, old_rss, max_scaled_down)
        scaled_down = self._scale_down_old(d, [*old_rss, new_rs], old_rss)
        return cleaned + scaled_down > 0

    def _cleanup_unhealthy(
        self, d: Workload, old_rss: list[Workload], limit: int
    ) -> tuple[list[Workload], int]:
        total = 0
        for rs in _by_age(old_rss):
            if total >= limit:
                break
            if rs.spec.replicas == 0 or rs.spec.replicas == rs.status.available:
                continue
            count = min(limit - total, rs.spec.replicas - rs.status.available)
            self._scale_rs(d, rs, rs.spec.replicas - count)
            total += count
        return old_rss, total

    def _scale_down_old(self, d: Workload, all_rss: list[Workload], old_rss: list[Workload]) -> int:
        min_available = d.spec.replicas - max_unavailable(d)
        available = sum(rs.status.available for rs in all_rss)
        if available <= min_available:
            return 0
        total, budget = 0, available - min_available
        for rs in _by_age(old_rss):
            if total >= budget:
                break
            if rs.spec.replicas == 0:
                continue
            count = min(rs.spec.replicas, budget - total)
            self._scale_rs(d, rs, rs.spec.replicas - count)
            total += count
        return total

    def _recreate(self, d: Workload, new_rs: Workload | None, old_rss: list[Workload]) -> None:
        scaled = False
        for rs in old_rss:
            scaled |= self._scale_rs(d, rs, 0)
        if scaled or any(rs.status.replicas > 0 for rs in old_rss):
            return  # wait for the old pods to be gone
        if new_rs is None:
            new_rs = self._new_replica_set(d, old_rss)
        self._scale_rs(d, new_rs, d.spec.replicas)
        self._cleanup(d, old_rss)

    def _scaling_event(self, d: Workload, rss: list[Workload]) -> bool:
        for rs in rss:
            if rs.spec.replicas > 0:
                desired = rs.annotations.get(DESIRED_ANNOTATION)
                if desired is not None and int(desired) != d.spec.replicas:
                    return True
        return False

    def _scale(self, d: Workload, new_rs: Workload | None, old_rss: list[Workload]) -> None:
        """A change of replicas: all to the one active ReplicaSet, or spread in proportion
        over the active ones (larger ones first; leftovers to the first)."""
        rss = [rs for rs in ([new_rs] if new_rs else []) + old_rss]
        active = [rs for rs in rss if rs.spec.replicas > 0]
        if len(active) <= 1:
            target = (
                active[0] if active else (new_rs or (_by_age(old_rss)[-1] if old_rss else None))
            )
            if target is not None:
                self._scale_rs(d, target, d.spec.replicas)
            return
        if (
            new_rs is not None
            and new_rs.spec.replicas == d.spec.replicas
            and new_rs.status.available == d.spec.replicas
        ):
            for rs in old_rss:
                self._scale_rs(d, rs, 0)
            return
        if d.spec.strategy != "RollingUpdate":
            return
        current = sum(rs.spec.replicas for rs in active)
        allowed = d.spec.replicas + max_surge(d) if d.spec.replicas > 0 else 0
        to_add = allowed - current
        if to_add > 0:
            active.sort(key=lambda rs: (-rs.spec.replicas, -rs.submit_time, rs.name))
        elif to_add < 0:
            active.sort(key=lambda rs: (-rs.spec.replicas, rs.submit_time, rs.name))
        added, sizes = 0, {}
        for rs in active:
            proportion = self._proportion(d, rs, to_add, added) if to_add else 0
            sizes[rs.key] = rs.spec.replicas + proportion
            added += proportion
        for index, rs in enumerate(active):
            size = sizes[rs.key]
            if index == 0 and to_add:
                size = max(size + to_add - added, 0)
            self._scale_rs(d, rs, size)

    def _proportion(self, d: Workload, rs: Workload, to_add: int, added: int) -> int:
        if rs.spec.replicas == 0 or to_add == added:
            return 0
        if d.spec.replicas == 0:
            fraction = -rs.spec.replicas
        else:
            target = d.spec.replicas + max_surge(d)
            annotated = int(rs.annotations.get(MAX_ANNOTATION, 0)) or d.status.replicas or 1
            fraction = _round_half_up(rs.spec.replicas * target / annotated) - rs.spec.replicas
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    # ------------------------------------------------------------------ ReplicaSets

    def _new_replica_set(self, d: Workload, old_rss: list[Workload]) -> Workload:
        template = d.spec.template
        pod_hash = template.revision
        labelled = replace(
            template.pod, labels={**template.pod.labels, POD_TEMPLATE_HASH_LABEL: pod_hash}
        )
        selector = replace(
            d.spec.selector,
            requirements=(
                *d.spec.selector.requirements,
                Requirement(POD_TEMPLATE_HASH_LABEL, "In", (pod_hash,)),
            ),
        )
        revision = 1 + max(
            (int(rs.annotations.get(REVISION_ANNOTATION, 0)) for rs in old_rss), default=0
        )
        rs = Workload(
            kind=REPLICA_SET,
            name=f"{d.name}-{pod_hash}",
            namespace=d.namespace,
            spec=ReplicaSetSpec(
                template=PodTemplate(labelled, template.revision, template.layout),
                selector=selector,
                replicas=0,
                min_ready_seconds=d.spec.min_ready_seconds,
            ),
            labels={**template.pod.labels, POD_TEMPLATE_HASH_LABEL: pod_hash},
            annotations={REVISION_ANNOTATION: str(revision)},
            submit_time=self.runtime.now(),
            owner=d.key,
            group=d.group,
        )
        rs.spec = replace(rs.spec, replicas=new_rs_replicas(d, [*old_rss, rs], rs))
        self._annotate(d, rs)
        self.store.create(REPLICA_SET, rs)
        return rs

    def _annotate(self, d: Workload, rs: Workload) -> None:
        rs.annotations[DESIRED_ANNOTATION] = str(d.spec.replicas)
        rs.annotations[MAX_ANNOTATION] = str(d.spec.replicas + max_surge(d))

    def _scale_rs(self, d: Workload, rs: Workload, replicas: int) -> bool:
        stale = rs.annotations.get(DESIRED_ANNOTATION) != str(d.spec.replicas)
        if rs.spec.replicas == replicas and not stale:
            return False
        resized = rs.spec.replicas != replicas
        rs.spec = replace(rs.spec, replicas=replicas)
        self._annotate(d, rs)
        self.store.update(REPLICA_SET, rs)
        return resized

    def _cleanup(self, d: Workload, old_rss: list[Workload]) -> None:
        """Old ReplicaSets beyond revisionHistoryLimit, once empty, are deleted."""
        idle = [rs for rs in _by_age(old_rss) if rs.spec.replicas == 0 and rs.status.replicas == 0]
        for rs in idle[: max(len(idle) - d.spec.revision_history_limit, 0)]:
            created, deleted = self._retired.get(d.key, (0, 0))
            self._retired[d.key] = (created + rs.status.created, deleted + rs.status.deleted)
            try:
                self.store.delete(REPLICA_SET, rs.key)
            except NotFound:
                pass

    def _status(self, d: Workload) -> None:
        rss = [
            rs
            for rs in self.store.list(REPLICA_SET)
            if rs.owner == d.key and rs.namespace == d.namespace
        ]
        status = d.status
        retired = self._retired.get(d.key, (0, 0))
        status.created = retired[0] + sum(rs.status.created for rs in rss)
        status.deleted = retired[1] + sum(rs.status.deleted for rs in rss)
        status.desired = d.spec.replicas
        status.replicas = sum(rs.status.replicas for rs in rss)
        status.ready = sum(rs.status.ready for rs in rss)
        status.available = sum(rs.status.available for rs in rss)
        new = [rs for rs in rss if revision_of(rs) == d.spec.template.revision]
        status.updated = sum(rs.status.replicas for rs in new)
        status.updated_available = sum(rs.status.available for rs in new)
        complete = deployment_complete(d)
        rollout.observe(
            status, self.runtime.now(), d.spec.replicas, status.available, status.replicas, complete
        )
        if complete:
            status.current_revision = d.spec.template.revision


def _round_half_up(value: float) -> int:
    """Go's math.Round for the non-negative sizes here."""
    return int(value + 0.5)


@register("deployment")
def _start(runtime: Runtime) -> DeploymentController:
    return DeploymentController(runtime)
