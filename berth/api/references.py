"""Checks across objects, once every file is loaded: duplicate names, queue parents, Command
targets, and priorities resolved from PriorityClasses."""

from __future__ import annotations

from collections import Counter
from typing import Any

from berth.api import schema
from berth.api.dra_checks import check_dra
from berth.api.hypernodes import check_hypernodes
from berth.api.keys import (
    DEFAULT_QUEUE,
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
)
from berth.api.loaded import Manifests
from berth.api.objects import BatchJob, Command, Pod, PodGroup, PriorityClass
from berth.api.owners import check_owners
from berth.api.problems import Problem, display
from berth.api.queueing import BUILTIN_PRIORITY_CLASSES
from berth.api.versions import check_versions
from berth.api.workloads import UPSTREAM

#: The parent Volcano gives a queue that names none; berth's top level unless defined.
ROOT_QUEUE = "root"


def check_references(m: Manifests) -> None:
    _check_duplicates(m)
    check_hypernodes(m)
    check_dra(m)
    check_versions(m)
    _check_queue_parents(m)
    _check_queues_exist(m)
    check_owners(m)
    _check_groups_exist(m)
    _check_gang_sizes(m)
    _check_command_targets(m)
    _resolve_priorities(m)


def _check_queues_exist(m: Manifests) -> None:
    """A group, Job or single pod in a queue that no loaded file defines waits forever (Volcano
    keeps it Pending): worth a warning, since the queue may simply be in a file not given."""
    names = {queue.name for queue in m.queues} | {DEFAULT_QUEUE}
    for kind, objects in (("PodGroup", m.groups), ("Job", m.jobs)):
        for obj in objects:
            if obj.queue not in names:
                message = (
                    f"no Queue named {schema.show(obj.queue)} in the loaded files: its pods "
                    "wait until one exists"
                )
                _report(m, obj, kind, "spec.queue", message, "warning")
    for pod in m.pods:
        queue = pod.annotations.get(QUEUE_NAME_ANNOTATION)
        if not pod.group and queue is not None and queue not in names:
            message = (
                f"no Queue named {schema.show(queue)} in the loaded files: the pod waits until "
                "one exists"
            )
            path = f"metadata.annotations.{QUEUE_NAME_ANNOTATION}"
            _report(m, pod, "Pod", path, message, "warning")


def _check_groups_exist(m: Manifests) -> None:
    """A pod that names a PodGroup no loaded file defines (nor a Volcano Job, whose controller
    makes its group, nor a workload whose pod it is) never starts: Volcano keeps it Pending
    until the group exists."""
    groups = {group.key for group in m.groups} | {job.key for job in m.jobs}
    for pod in m.pods:
        if pod.group and not pod.owner and pod.job_key not in groups:
            message = (
                f"no PodGroup named {schema.show(pod.group)} in the loaded files: the pod waits "
                "until one exists"
            )
            _report(
                m, pod, "Pod", f"metadata.annotations.{GROUP_NAME_ANNOTATION}", message, "warning"
            )


def _check_gang_sizes(m: Manifests) -> None:
    """A PodGroup whose minMember is more than the pods that name it can never start."""
    members = Counter(pod.job_key for pod in m.pods if pod.group)
    for group in m.groups:
        have = members[group.key]
        if have < group.min_member:
            message = (
                f"{group.min_member} but only {have} pod{'' if have == 1 else 's'} in the loaded "
                "files name this group: it cannot start"
            )
            _report(m, group, "PodGroup", "spec.minMember", message, "warning")


def _report(
    m: Manifests,
    obj: Any,
    kind: str,
    path: str,
    message: str,
    severity: str = "error",
    owner: Any = None,
) -> None:
    """A problem with ``obj``, filed under ``owner`` (the Job of a task template) if given."""
    named = owner if owner is not None else obj
    name = display(getattr(named, "namespace", None), named.name)
    m.problems.append(Problem(m.origin(obj).file, kind, name, path, message, severity))


def _check_command_targets(m: Manifests) -> None:
    jobs = {job.key: job for job in m.jobs}
    for command in m.commands:
        job = jobs.get(f"{command.namespace}/{command.target}")
        if job is not None and command.submit_time < job.submit_time:
            message = (
                f"issued at {command.submit_time:g}s, before Job {command.target} arrives at "
                f"{job.submit_time:g}s: it will have no effect"
            )
            _report(
                m,
                command,
                "Command",
                f"metadata.annotations.{SUBMIT_TIME_ANNOTATION}",
                message,
                "warning",
            )
        if job is None:
            message = (
                f"no Job named {schema.show(command.target)} in namespace {command.namespace} "
                "(expected a batch.volcano.sh Job defined in the loaded files)"
            )
            _report(m, command, "Command", "target.name", message)


def _check_duplicates(m: Manifests) -> None:
    for kind, objects in (
        ("Node", m.nodes),
        ("Pod", m.pods),
        ("PodGroup", m.groups),
        ("Queue", m.queues),
        ("PriorityClass", m.priority_classes),
        ("Job", m.jobs),
        ("Command", m.commands),
        ("Namespace", m.namespaces),
        ("HyperNode", m.hypernodes),
    ):
        first_file: dict[str, str] = {}
        for obj in objects:
            key = obj.key if isinstance(obj, Pod | PodGroup | BatchJob | Command) else obj.name
            file = m.origin(obj).file
            if key not in first_file:
                first_file[key] = file
                continue
            where = "earlier in this file" if first_file[key] == file else f"in {first_file[key]}"
            message = f"duplicate {kind} {schema.show(key)} (also defined {where})"
            _report(m, obj, kind, "metadata.name", message)


def _check_queue_parents(m: Manifests) -> None:
    """Every parent must be a loaded queue (or Volcano's implicit root) and the parent links
    must form a tree: a cycle would leave its queues without a top to take capacity from."""
    parents = {q.name: q.parent for q in m.queues}
    for queue in m.queues:
        parent = queue.parent
        if not parent or (parent == ROOT_QUEUE and ROOT_QUEUE not in parents):
            continue
        if parent not in parents:
            message = (
                f"no Queue named {schema.show(parent)} (expected a queue defined in the loaded "
                f"files, or {ROOT_QUEUE})"
            )
            _report(m, queue, "Queue", "spec.parent", message)
            continue
        chain = [queue.name]
        while parent in parents and parent not in chain:
            chain.append(parent)
            parent = parents[parent]
        if parent == queue.name:
            cycle = " → ".join([*chain, queue.name])
            _report(m, queue, "Queue", "spec.parent", f"queues form a cycle: {cycle}")


_UNKNOWN_CLASS = (
    "no PriorityClass named {name} (expected one defined in the loaded files, "
    "or system-cluster-critical / system-node-critical)"
)


def _resolve_priorities(m: Manifests) -> None:
    """Priority from classes, as Kubernetes' admission (pods) and Volcano (groups) do it."""
    values = dict(BUILTIN_PRIORITY_CLASSES)
    policies = {pc.name: pc.preemption_policy for pc in m.priority_classes}
    default: PriorityClass | None = None
    for pc in m.priority_classes:
        values[pc.name] = pc.value
        if not pc.global_default:
            continue
        if default is None:
            default = pc
        elif pc.name != default.name:
            message = f"only one PriorityClass may be the global default ({default.name} is)"
            _report(m, pc, "PriorityClass", "globalDefault", message)
    entries: list[tuple[Any, str, str, Any]] = [(pod, "Pod", "spec.", None) for pod in m.pods]
    entries += [(group, "PodGroup", "spec.", None) for group in m.groups]
    entries += [(job, "Job", "spec.", None) for job in m.jobs]
    entries += [
        (task.template, "Job", f"spec.tasks[{index}].template.spec.", job)
        for job in m.jobs
        for index, task in enumerate(job.tasks)
    ]
    entries += [
        (w.template.pod, UPSTREAM[w.kind][1], "spec.template.spec.", w)
        for w in m.workloads
        if w.template is not None
    ]
    for obj, kind, path, owner in entries:
        explicit = m.origin(obj).explicit_priority
        inherited = getattr(owner, "priority_class_name", "")
        if not obj.priority_class_name and not explicit and inherited in values:
            # Volcano gives a template without a class the Job's own, before the cluster's
            # default could apply.
            obj.priority_class_name = inherited
        if not obj.priority_class_name:
            if default is not None and not explicit:
                obj.priority, obj.priority_class_name = default.value, default.name
                _class_policy(obj, default.preemption_policy)
            continue
        _class_policy(obj, policies.get(obj.priority_class_name, ""))
        value = values.get(obj.priority_class_name)
        if value is None:
            message = _UNKNOWN_CLASS.format(name=schema.show(obj.priority_class_name))
            _report(m, obj, kind, f"{path}priorityClassName", message, owner=owner)
        elif not explicit:
            obj.priority = value
        elif obj.priority != value:
            message = (
                f"{obj.priority} differs from the value of {obj.priority_class_name} ({value}); "
                "spec.priority is used (Kubernetes would reject the pod)"
            )
            _report(m, obj, kind, f"{path}priority", message, "warning", owner=owner)


def _class_policy(obj: Any, policy: str) -> None:
    """A pod that sets no preemptionPolicy takes its PriorityClass's, as Kubernetes' admission
    gives it."""
    if isinstance(obj, Pod) and not obj.preemption_policy:
        obj.preemption_policy = policy
