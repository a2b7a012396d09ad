"""Versions of workload objects: the same kind and name again with a later
``berth.io/submit-time`` is that object changed at that time (as ``kubectl apply`` of an edited
manifest changes it); the same kind, name and time twice is a duplicate.

A later version may change what the API server lets a user change, and nothing else: the
immutable fields are compared with the first version, as Kubernetes' and OpenKruise's update
validation compares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from berth.api import schema
from berth.api.loaded import Manifests
from berth.api.problems import Problem, display
from berth.api.workloads import (
    ADVANCED_STATEFUL_SET,
    BROADCAST_JOB,
    CLONE_SET,
    DEPLOYMENT,
    KUBE_JOB,
    REPLICA_SET,
    STATEFUL_SET,
    UPSTREAM,
    Workload,
)

#: Per kind: (field path, how to read it) for the fields a later version must keep.
_IMMUTABLE: dict[str, tuple[tuple[str, Callable[[Any], Any]], ...]] = {
    DEPLOYMENT: (("spec.selector", lambda s: s.selector),),
    REPLICA_SET: (("spec.selector", lambda s: s.selector),),
    STATEFUL_SET: (
        ("spec.selector", lambda s: s.selector),
        ("spec.podManagementPolicy", lambda s: s.pod_management),
    ),
    ADVANCED_STATEFUL_SET: (
        ("spec.selector", lambda s: s.selector),
        ("spec.podManagementPolicy", lambda s: s.pod_management),
    ),
    KUBE_JOB: (
        ("spec.template", lambda s: s.template.revision),
        ("spec.completions", lambda s: s.completions),
        ("spec.completionMode", lambda s: s.completion_mode),
    ),
    CLONE_SET: (("spec.selector", lambda s: s.selector),),
    BROADCAST_JOB: (("spec.template", lambda s: s.template.revision),),
}


def check_versions(m: Manifests) -> None:
    """Duplicates and immutable fields among the workload objects of every file."""
    versions: dict[tuple[str, str], list[Workload]] = {}
    for workload in m.workloads:
        versions.setdefault((workload.kind, workload.key), []).append(workload)
    for objects in versions.values():
        first_at: dict[float, Workload] = {}
        for obj in objects:
            earlier = first_at.get(obj.submit_time)
            if earlier is None:
                first_at[obj.submit_time] = obj
                continue
            file = m.origin(earlier).file
            where = "earlier in this file" if file == m.origin(obj).file else f"in {file}"
            message = (
                f"duplicate {UPSTREAM[obj.kind][1]} {schema.show(obj.key)} with the same submit "
                f"time (also defined {where}; a later version needs a later "
                "berth.io/submit-time)"
            )
            _report(m, obj, "metadata.name", message)
        ordered = sorted(first_at.values(), key=lambda w: w.submit_time)
        for previous, later in zip(ordered, ordered[1:], strict=False):
            _check_change(m, previous, later)


def _check_change(m: Manifests, previous: Workload, later: Workload) -> None:
    since = f"the version submitted at {previous.submit_time:g}s"
    for path, read in _IMMUTABLE.get(previous.kind, ()):
        if read(previous.spec) != read(later.spec):
            _report(m, later, path, f"field is immutable (differs from {since})")
    spec = later.spec
    if previous.kind == CLONE_SET and spec.update_type == "InPlaceOnly":
        if spec.template.layout != previous.spec.template.layout:
            message = (
                "with update strategy InPlaceOnly only container images and metadata may "
                f"change (other fields differ from {since})"
            )
            _report(m, later, "spec.template", message)


def _report(m: Manifests, obj: Workload, path: str, message: str) -> None:
    kind = UPSTREAM[obj.kind][1]
    name = display(obj.namespace, obj.name)
    m.problems.append(Problem(m.origin(obj).file, kind, name, path, message, "error"))
