"""LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``): ``replicas`` groups of ``size`` pods, a
leader and ``size - 1`` workers, each group started all-or-nothing; optionally every group in a
topology domain of its own (the ``leaderworkerset.sigs.k8s.io/exclusive-topology`` annotation).

Shapes follow kubernetes-sigs/lws ``api/leaderworkerset/v1``; the manifest model is in
``berth.api.schema.lws``, the spec the controller reads and the conversion into it are here.
Shared pieces with JobSet (the pod template of a nested path, the exclusive-placement
affinity) are here too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from berth.api.loaded import Context
from berth.api.pod_spec import build_pod
from berth.api.selectors import Affinity, LabelSelector, PodAffinityTerm, Requirement
from berth.api.templates import add_workload, at_most_100_percent, layout_of, short_hash
from berth.api.workloads import LEADER_WORKER_SET, PodTemplate, scaled

if TYPE_CHECKING:
    from berth.api.schema.lws import LeaderWorkerSetDoc
    from berth.api.schema.workloads import IntOrPercent, WorkloadTemplate

LWS_API = "leaderworkerset.x-k8s.io/v1"

# Labels and annotations LWS puts on its pods (upstream's names).
PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME_LABEL = PREFIX + "name"
GROUP_INDEX_LABEL = PREFIX + "group-index"
WORKER_INDEX_LABEL = PREFIX + "worker-index"
GROUP_KEY_LABEL = PREFIX + "group-key"
REVISION_LABEL = PREFIX + "template-revision-hash"
SIZE_ANNOTATION = PREFIX + "size"
LEADER_NAME_ANNOTATION = PREFIX + "leader-name"
EXCLUSIVE_ANNOTATION = PREFIX + "exclusive-topology"
SUBGROUP_EXCLUSIVE_ANNOTATION = PREFIX + "subgroup-exclusive-topology"


# -- what the controller reads --------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class LeaderWorkerSetSpec:
    template: PodTemplate  # the workers' (and the leader's when it has none of its own)
    leader: PodTemplate | None = None
    replicas: int = 1
    size: int = 1
    restart_policy: str = "RecreateGroupOnPodRestart"  # RecreateGroupAfterStart, None
    startup_policy: str = "LeaderCreated"  # or LeaderReady
    partition: int = 0
    max_unavailable: IntOrPercent = 1
    max_surge: IntOrPercent = 0
    #: Changes with either template or the size: what a group's pods are labelled with.
    revision: str = ""

    @property
    def pod_count(self) -> int:
        return self.replicas * self.size

    @property
    def leader_template(self) -> PodTemplate:
        return self.leader or self.template


def nested_template(
    owner: str, namespace: str, template: WorkloadTemplate, path: str, ctx: Context
) -> PodTemplate:
    """A pod template that sits at ``path`` in its object; problems are filed there."""
    pod = build_pod(owner, namespace, template.metadata, template.spec, ctx.within(path))
    ctx.out.set_origin(pod, ctx.origin(template.spec.priority is not None))
    raw = template.raw
    return PodTemplate(pod, short_hash(raw), short_hash(layout_of(raw.get("spec"))))


def group_key(namespace: str, name: str) -> str:
    """The value a group's pods share in their group-key label: upstream's SHA-1 of
    ``<namespace>/<leader name>``."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def exclusive_affinity(affinity: Affinity, label: str, key: str, topology: str) -> Affinity:
    """``affinity`` plus the terms upstream adds for exclusive placement: with the pods whose
    ``label`` is ``key`` in one ``topology`` domain, and in no domain that holds a pod whose
    ``label`` has another value."""
    together = PodAffinityTerm(LabelSelector((Requirement(label, "In", (key,)),)), topology)
    alone = PodAffinityTerm(
        LabelSelector((Requirement(label, "Exists"), Requirement(label, "NotIn", (key,)))),
        topology,
    )
    return replace(
        affinity,
        pod_required=(*affinity.pod_required, together),
        anti_required=(*affinity.anti_required, alone),
    )


def convert_leader_worker_set(doc: LeaderWorkerSetDoc, ctx: Context) -> None:
    meta, spec = doc.metadata, doc.spec
    lwt = spec.leader_worker_template
    base = "spec.leaderWorkerTemplate"
    worker = nested_template(
        meta.name, meta.namespace, lwt.worker_template, f"{base}.workerTemplate", ctx
    )
    leader = None
    if lwt.leader_template is not None:
        leader = nested_template(
            meta.name, meta.namespace, lwt.leader_template, f"{base}.leaderTemplate", ctx
        )
    from berth.api.schema.lws import LwsRollingUpdate  # (loaded with the document's model)

    rolling = spec.rollout_strategy.rolling_update_configuration or LwsRollingUpdate()
    path = "spec.rolloutStrategy.rollingUpdateConfiguration"
    at_most_100_percent(rolling.max_unavailable, f"{path}.maxUnavailable", ctx)
    at_most_100_percent(rolling.max_surge, f"{path}.maxSurge", ctx)
    no_surge = scaled(rolling.max_surge, 100, True) == 0
    if no_surge and scaled(rolling.max_unavailable, 100, False) == 0:
        ctx.error(f"{path}.maxUnavailable", "may not be 0 when maxSurge is 0")
    if not no_surge:
        ctx.warn(
            f"{path}.maxSurge",
            "not modelled: groups are updated by maxUnavailable alone (at least one at a "
            "time), without surge groups",
        )
    for key in (EXCLUSIVE_ANNOTATION, SUBGROUP_EXCLUSIVE_ANNOTATION):
        if key in meta.annotations and not meta.annotations[key]:
            ctx.error(f"metadata.annotations.{key}", "must name a node label (a topology key)")
    if SUBGROUP_EXCLUSIVE_ANNOTATION in meta.annotations:
        ctx.warn(
            f"metadata.annotations.{SUBGROUP_EXCLUSIVE_ANNOTATION}",
            "not modelled (subgroups are not), ignored",
        )
    restart = "None" if lwt.restart_policy == "Default" else lwt.restart_policy
    revision = short_hash(
        [worker.revision, leader.revision if leader else "", lwt.size, spec.startup_policy]
    )
    converted = LeaderWorkerSetSpec(
        template=worker,
        leader=leader,
        replicas=spec.replicas,
        size=lwt.size,
        restart_policy=restart,
        startup_policy=spec.startup_policy,
        partition=rolling.partition,
        max_unavailable=rolling.max_unavailable,
        max_surge=rolling.max_surge,
        revision=revision,
    )
    add_workload(LEADER_WORKER_SET, doc, converted, ctx)
