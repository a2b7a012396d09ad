"""Kubernetes' Workload API (KEP-4671, ``scheduling.k8s.io``): Workloads, the PodGroups made
from their templates, and the pods that name a PodGroup in ``spec.schedulingGroup``.

Kubernetes 1.37 serves it as ``v1beta1`` (and ``v1alpha3``) with the ``GenericWorkload``
feature gate. A Workload only describes groups (``podGroupTemplates``); the runtime unit is the
PodGroup, which carries its own copy of the scheduling policy and optionally names the
Workload template it was made from (``spec.workloadRef``). A pod joins a group by
``spec.schedulingGroup.podGroupName``. A ``gang`` policy's ``minCount`` pods are placed all or
nothing; a ``basic`` policy places the pods one by one.

Such a PodGroup becomes a berth PodGroup of ``minMember`` = ``minCount`` (1 for ``basic``), so
the gang plugin decides it exactly as it decides a Volcano PodGroup. The Kubernetes API has no
queue: the group is in the default queue unless it carries Volcano's queue-name annotation,
which berth reads so that a workload converted from Volcano keeps its queues.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from berth.api import schema
from berth.api.fields import at_least_zero, float_annotation, preemptable
from berth.api.keys import DEFAULT_QUEUE, QUEUE_NAME_ANNOTATION, SUBMIT_TIME_ANNOTATION
from berth.api.loaded import Context, Manifests
from berth.api.objects import PodGroup
from berth.api.problems import Problem, display

if TYPE_CHECKING:
    from berth.api.schema.pods import PodSchedulingGroup
    from berth.api.schema.workload_api import PodGroupDoc, WorkloadDoc

WORKLOAD_API = "scheduling.k8s.io/v1beta1"
WORKLOAD_ALPHA_API = "scheduling.k8s.io/v1alpha3"
#: Both versions a 1.37 API server serves with the gate on; their shapes agree on what berth reads.
WORKLOAD_APIS = (WORKLOAD_API, WORKLOAD_ALPHA_API)
#: Upstream's limit on a Workload's templates.
MAX_TEMPLATES = 8


# -- what loading keeps ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadObject:
    """A Workload: its templates' gang sizes by name (what a PodGroup's reference is checked
    against)."""

    name: str
    namespace: str
    templates: dict[str, int]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class GroupReference:
    """A PodGroup's ``spec.workloadRef``, kept for the checks across files."""

    group: PodGroup
    workload: str
    template: str
    min_member: int


def convert_workload(doc: WorkloadDoc, ctx: Context) -> None:
    meta = doc.metadata
    templates: dict[str, int] = {}
    count = len(doc.spec.pod_group_templates)
    if count > MAX_TEMPLATES:
        ctx.error("spec.podGroupTemplates", f"at most {MAX_TEMPLATES} templates (got {count})")
    for index, template in enumerate(doc.spec.pod_group_templates):
        if template.name in templates:
            ctx.error(
                f"spec.podGroupTemplates[{index}].name",
                f"duplicate template name {schema.show(template.name)}",
            )
        templates[template.name] = template.scheduling_policy.min_member
    workload = WorkloadObject(meta.name, meta.namespace, templates)
    ctx.out.add(ctx.out.workload_api, workload, ctx.origin())


def convert_pod_group(doc: PodGroupDoc, ctx: Context) -> None:
    """A PodGroup of the Workload API as the berth PodGroup the gang plugin decides."""
    meta, spec = doc.metadata, doc.spec
    group = PodGroup(
        name=meta.name,
        namespace=meta.namespace,
        min_member=spec.scheduling_policy.min_member,
        queue=meta.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE,
        priority_class_name=spec.priority_class_name,
        priority=spec.priority or 0,
        submit_time=float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, at_least_zero)
        or 0.0,
        annotations=dict(meta.annotations),
        preemptable=preemptable(meta, ctx),
    )
    ctx.out.add(ctx.out.groups, group, ctx.origin(explicit_priority=spec.priority is not None))
    ref = spec.workload_ref
    if ref is not None:
        reference = GroupReference(group, ref.workload_name, ref.template_name, group.min_member)
        ctx.out.add(ctx.out.workload_api, reference, ctx.origin())


def pod_group_name(given: PodSchedulingGroup | None, annotated: str, ctx: Context) -> str:
    """The group a pod joins: the PodGroup its ``spec.schedulingGroup`` names, or the Volcano
    group its annotations name. Both at once is refused: each would gang it on its own terms."""
    if given is None or not given.pod_group_name:
        return annotated
    if annotated:
        ctx.error(
            "spec.schedulingGroup.podGroupName",
            f"names PodGroup {schema.show(given.pod_group_name)} of the Workload API, but the "
            f"pod's annotations put it in Volcano PodGroup {schema.show(annotated)} (expected "
            "one or the other: a pod is gang-scheduled by one group)",
        )
    return given.pod_group_name


def check_workload_references(m: Manifests) -> None:
    """Across files: Workloads named twice, and PodGroups whose ``workloadRef`` names a Workload
    or template no loaded file defines, or whose gang differs from its template's (warnings:
    the PodGroup's own policy is what the scheduler uses, as kube-scheduler does). Not for
    objects read from a cluster: ``berth serve`` reads PodGroups one at a time, and no
    Workloads."""
    if m.live:
        return
    workloads: dict[str, WorkloadObject] = {}
    names = Counter(obj.key for obj in m.workload_api if isinstance(obj, WorkloadObject))
    for obj in m.workload_api:
        if isinstance(obj, WorkloadObject):
            if names[obj.key] > 1:
                _report(m, obj, "Workload", "metadata.name", "defined more than once", "error")
            workloads[obj.key] = obj
    for obj in m.workload_api:
        if not isinstance(obj, GroupReference):
            continue
        workload = workloads.get(f"{obj.group.namespace}/{obj.workload}")
        where = "spec.workloadRef"
        if workload is None:
            message = f"no Workload named {schema.show(obj.workload)} in the loaded files"
            _report(m, obj, "PodGroup", f"{where}.workloadName", message, "warning")
        elif obj.template not in workload.templates:
            known = ", ".join(workload.templates)
            message = (
                f"Workload {schema.show(obj.workload)} has no template "
                f"{schema.show(obj.template)} (it has {known})"
            )
            _report(m, obj, "PodGroup", f"{where}.templateName", message, "warning")
        elif workload.templates[obj.template] != obj.min_member:
            message = (
                f"gang of {obj.min_member} differs from template {schema.show(obj.template)}'s "
                f"{workload.templates[obj.template]}; the PodGroup's own policy is used"
            )
            _report(m, obj, "PodGroup", "spec.schedulingPolicy", message, "warning")


def _report(
    m: Manifests, obj: WorkloadObject | GroupReference, kind: str, path: str, msg: str, sev: str
) -> None:
    named = obj if isinstance(obj, WorkloadObject) else obj.group
    name = display(named.namespace, named.name)
    m.problems.append(Problem(m.origin(obj).file, kind, name, path, msg, sev))
