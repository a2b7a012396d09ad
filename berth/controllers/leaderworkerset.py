"""The LeaderWorkerSet controller: ``replicas`` groups, each a leader ``<lws>-<group>`` and
workers ``<lws>-<group>-<index>`` (1 … size-1), each group a gang of its own.

Every group gets a PodGroup ``<lws>-<group>-<revision>`` of ``minMember`` = size (1 with the
``LeaderReady`` startup policy, whose workers are created once the leader is ready), as LWS's
Volcano provider makes one. With the exclusive-topology annotation each pod carries upstream's
pod affinity to its own group-key and anti-affinity to any other group-key in that topology
key, so a group sits in one domain and a domain holds one group; the scheduler enforces it.

A group that loses a pod (failed, evicted, deleted, or done) is recreated whole under the
``RecreateGroupOnPodRestart`` and ``RecreateGroupAfterStart`` policies; under ``None`` only
the missing pods are. A new revision replaces groups from the highest index down to
``partition``, deleting at most ``maxUnavailable`` of them beyond those already unready, and
recreating each at once with the new templates.
"""

from __future__ import annotations

from berth.api.keys import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION
from berth.api.lws import (
    EXCLUSIVE_ANNOTATION,
    GROUP_INDEX_LABEL,
    GROUP_KEY_LABEL,
    LEADER_NAME_ANNOTATION,
    NAME_LABEL,
    REVISION_LABEL,
    SIZE_ANNOTATION,
    WORKER_INDEX_LABEL,
    LeaderWorkerSetSpec,
    exclusive_affinity,
    group_key,
)
from berth.api.objects import GroupPhase, Pod, PodGroup
from berth.api.workloads import LEADER_WORKER_SET, PodTemplate, Workload, scaled
from berth.controllers import rollout
from berth.controllers.pod_order import is_ready
from berth.controllers.runtime import Runtime, register
from berth.controllers.workload import ACTIVE, WorkloadController


def group_of(pod: Pod) -> int | None:
    text = pod.labels.get(GROUP_INDEX_LABEL, "")
    return int(text) if text.isdigit() else None


def worker_of(pod: Pod) -> int:
    text = pod.labels.get(WORKER_INDEX_LABEL, "")
    return int(text) if text.isdigit() else 0


class LeaderWorkerSetController(WorkloadController):
    kind = LEADER_WORKER_SET

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime)
        #: (lws key, group index) → the PodGroup its pods join now.
        self._groups: dict[tuple[str, int], str] = {}

    def reconcile(self, lws: Workload) -> None:
        spec: LeaderWorkerSetSpec = lws.spec
        status = lws.status
        if status.update_revision and status.update_revision != spec.revision:
            allowed = max(scaled(spec.max_unavailable, spec.replicas, False), 1)
            now = self.runtime.now()
            rollout.begin(status, now, spec.revision, spec.replicas, "RollingUpdate", allowed)
        groups: dict[int, list[Pod]] = {}
        for pod in self.pods_of(lws):
            index = group_of(pod)
            if index is not None:
                groups.setdefault(index, []).append(pod)
        for index in sorted(groups):
            if index >= spec.replicas:
                self._delete_group(lws, index, groups.pop(index), "scaled down")
        for index, pods in list(groups.items()):
            if self._broken(spec, pods):
                if spec.restart_policy == "None":
                    for pod in pods:
                        if pod.phase not in ACTIVE:
                            self.delete_pod(lws, pod, "the pod ended")
                    groups[index] = [p for p in pods if p.phase in ACTIVE]
                else:
                    self._delete_group(lws, index, pods, "a pod of its group ended")
                    groups.pop(index)
        self._roll(lws, spec, groups)
        for index in range(spec.replicas):
            self._fill(lws, spec, index, groups.get(index, []))
        self._status(lws, spec)

    # ------------------------------------------------------------------ groups

    def owner_of_group(self, namespace: str, name: str) -> str | None:
        """The key of the LeaderWorkerSet one of whose groups joins PodGroup ``name``."""
        for (key, _), group in self._groups.items():
            if group == name and key.startswith(f"{namespace}/"):
                return key
        return None

    def remember_groups(self, lws: Workload) -> None:
        """Take the PodGroup each group's running pods joined as the group's (a backend
        that starts with them running: a restarted ``berth serve``)."""
        for pod in self.pods_of(lws):
            index = group_of(pod)
            if index is not None and pod.group and pod.phase in ACTIVE:
                self._groups.setdefault((lws.key, index), pod.group)
        if not lws.group and (lws.key, 0) in self._groups:
            lws.group = self._groups[(lws.key, 0)]

    @staticmethod
    def _broken(spec: LeaderWorkerSetSpec, pods: list[Pod]) -> bool:
        """A pod of the group ended, or is missing while others of the group exist."""
        if any(pod.phase not in ACTIVE for pod in pods):
            return True
        workers = sum(1 for pod in pods if worker_of(pod) > 0)
        leader = len(pods) - workers
        return (leader == 0 and workers > 0) or 0 < workers < spec.size - 1

    def _roll(self, lws: Workload, spec: LeaderWorkerSetSpec, groups: dict[int, list[Pod]]) -> None:
        """Replace groups of an older revision, from the top index down, within
        maxUnavailable."""
        old = [
            index
            for index, pods in groups.items()
            if index >= spec.partition
            and any(pod.labels.get(REVISION_LABEL) != spec.revision for pod in pods)
        ]
        if not old:
            return
        allowed = max(scaled(spec.max_unavailable, spec.replicas, False), 1)
        unready = sum(
            1 for index in range(spec.replicas) if not self._ready(spec, groups.get(index, []))
        )
        for index in sorted(old, reverse=True)[: max(allowed - unready, 0)]:
            self._delete_group(
                lws, index, groups.pop(index), "replaced by the new revision", replaced=True
            )
            self.condition(lws, "UpdateInProgress")

    def _delete_group(
        self, lws: Workload, index: int, pods: list[Pod], why: str, replaced: bool = False
    ) -> None:
        for pod in sorted(pods, key=worker_of, reverse=True):
            self.delete_pod(lws, pod, why, replaced)
        name = self._groups.pop((lws.key, index), None)
        group = self.store.get("PodGroup", f"{lws.namespace}/{name}") if name else None
        if group is not None and group.end_time is None:
            group.phase = GroupPhase.COMPLETED
            group.end_time = self.runtime.now()

    def _pod_group(self, lws: Workload, spec: LeaderWorkerSetSpec, index: int) -> str:
        """The group's PodGroup, created when it has none (a new name if an ended one has
        the name already)."""
        current = self._groups.get((lws.key, index))
        if current is not None:
            return current
        base = name = f"{lws.name}-{index}-{spec.revision}"
        attempt = 0
        while self.store.get("PodGroup", f"{lws.namespace}/{name}") is not None:
            attempt += 1
            name = f"{base}-{attempt}"
        proto = spec.leader_template.pod
        annotations = {
            k: v for k, v in lws.annotations.items() if k.startswith("volcano.sh/")
        } | dict(proto.annotations)
        queue = lws.annotations.get(QUEUE_NAME_ANNOTATION) or proto.annotations.get(
            QUEUE_NAME_ANNOTATION, DEFAULT_QUEUE
        )
        group = PodGroup(
            name=name,
            namespace=lws.namespace,
            min_member=1 if spec.startup_policy == "LeaderReady" else spec.size,
            queue=queue,
            priority_class_name=proto.priority_class_name,
            priority=proto.priority,
            submit_time=self.runtime.now(),
            annotations=annotations,
            preemptable=proto.preemptable,
        )
        self._groups[(lws.key, index)] = name  # before it is made: a backend asks its owner
        self.store.create("PodGroup", group)
        if not lws.group:
            lws.group = name  # the first group stands for the object where one is named
        return name

    def _fill(self, lws: Workload, spec: LeaderWorkerSetSpec, index: int, pods: list[Pod]) -> None:
        """Create the group's missing pods: the leader, then (unless it must be ready first)
        the workers."""
        leader_name = f"{lws.name}-{index}"
        leader = next((pod for pod in pods if worker_of(pod) == 0), None)
        have = {worker_of(pod) for pod in pods}
        wanted = [0] if leader is None else []
        if leader is not None or spec.startup_policy == "LeaderCreated":
            wanted += [w for w in range(1, spec.size) if w not in have]
        if spec.startup_policy == "LeaderReady" and (leader is None or not is_ready(leader)):
            wanted = [w for w in wanted if w == 0]
        if not wanted:
            return
        group = self._pod_group(lws, spec, index)
        revision = spec.revision if leader is None else leader.labels.get(REVISION_LABEL, "")
        key = group_key(lws.namespace, leader_name)
        labels = {
            NAME_LABEL: lws.name,
            GROUP_INDEX_LABEL: str(index),
            GROUP_KEY_LABEL: key,
            REVISION_LABEL: revision,
        }
        annotations = {SIZE_ANNOTATION: str(spec.size)}
        topology = lws.annotations.get(EXCLUSIVE_ANNOTATION)
        if topology:
            annotations[EXCLUSIVE_ANNOTATION] = topology
        for worker in wanted:
            template: PodTemplate = spec.leader_template if worker == 0 else spec.template
            extra = {}
            if worker > 0:
                extra[LEADER_NAME_ANNOTATION] = leader_name
            fields = {}
            if topology:
                fields["affinity"] = exclusive_affinity(
                    template.pod.affinity, GROUP_KEY_LABEL, key, topology
                )
            name = leader_name if worker == 0 else f"{leader_name}-{worker}"
            self.create_pod(
                lws,
                template,
                name,
                {**labels, WORKER_INDEX_LABEL: str(worker)},
                {**annotations, **extra},
                group=group,
                **fields,
            )

    @staticmethod
    def _ready(spec: LeaderWorkerSetSpec, pods: list[Pod]) -> bool:
        return len(pods) >= spec.size and all(is_ready(pod) for pod in pods)

    def _status(self, lws: Workload, spec: LeaderWorkerSetSpec) -> None:
        groups: dict[int, list[Pod]] = {}
        for pod in self.owned.get(lws.key, {}).values():
            index = group_of(pod)
            if index is not None and pod.phase in ACTIVE:
                groups.setdefault(index, []).append(pod)
        status = lws.status
        status.desired = spec.replicas
        status.replicas = len(groups)
        status.ready = status.available = sum(
            1 for pods in groups.values() if self._ready(spec, pods)
        )
        status.updated = sum(
            1
            for pods in groups.values()
            if all(pod.labels.get(REVISION_LABEL) == spec.revision for pod in pods)
        )
        updated_ready = [
            index
            for index, pods in groups.items()
            if self._ready(spec, pods)
            and all(pod.labels.get(REVISION_LABEL) == spec.revision for pod in pods)
        ]
        status.updated_available = len(updated_ready)
        complete = sum(1 for i in updated_ready if i >= spec.partition) >= max(
            spec.replicas - spec.partition, 0
        )
        rollout.observe(
            status, self.runtime.now(), spec.replicas, status.ready, len(groups), complete
        )
        status.update_revision = spec.revision
        if status.updated_available >= spec.replicas:
            status.current_revision = spec.revision
        if status.ready >= spec.replicas and spec.replicas > 0:
            self.condition(lws, "Available")
        elif status.updated < spec.replicas:
            self.condition(lws, "Progressing")


@register("leaderworkerset")
def _start(runtime: Runtime) -> LeaderWorkerSetController:
    return LeaderWorkerSetController(runtime)
