"""What loading manifests yields (``Manifests``) and the context converters file into it.

Kept apart from the loader so that converters and the cross-file checks can name both without
importing the module that drives them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from berth.api.objects import (
    BatchJob,
    Command,
    Namespace,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from berth.api.problems import Origin, Problem
from berth.api.workloads import Workload


@dataclass
class Manifests:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    jobs: list[BatchJob] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    #: Deployments, StatefulSets, CloneSets, ...: every version, in file order (see
    #: ``references``: a later version of an object is the same kind and name with a later
    #: submit time).
    workloads: list[Workload] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    #: Volcano HyperNodes (``berth.api.hypernodes.HyperNode``): the network's switches.
    hypernodes: list[Any] = field(default_factory=list)
    #: Dynamic Resource Allocation objects (``berth.api.dra``): ResourceSlices, DeviceClasses,
    #: ResourceClaims and ResourceClaimTemplates, in file order.
    dra: list[Any] = field(default_factory=list)
    #: Workload API objects (``berth.api.workload_api``): Workloads and the PodGroups'
    #: references to them, for the checks across files.
    workload_api: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: Objects of kinds berth reads past (see SKIPPED_KINDS), counted by kind.
    skipped: Counter[str] = field(default_factory=Counter)
    #: Read from a live cluster (``berth serve``), where pods run for as long as they run:
    #: the simulator's run-time annotations are not asked for.
    live: bool = False
    #: Fields the schema does not know are warnings (``--unknown-fields warn``, and always for
    #: live objects, which the API server has accepted), not errors.
    lenient: bool = False
    # Keyed by id(): the objects are plain mutable dataclasses and must not carry loader state.
    _origins: dict[int, Origin] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def extend(self, other: Manifests) -> None:
        self.nodes.extend(other.nodes)
        self.pods.extend(other.pods)
        self.groups.extend(other.groups)
        self.queues.extend(other.queues)
        self.priority_classes.extend(other.priority_classes)
        self.jobs.extend(other.jobs)
        self.commands.extend(other.commands)
        self.workloads.extend(other.workloads)
        self.namespaces.extend(other.namespaces)
        self.hypernodes.extend(other.hypernodes)
        self.dra.extend(other.dra)
        self.workload_api.extend(other.workload_api)
        self.problems.extend(other.problems)
        self.skipped.update(other.skipped)
        self._origins.update(other._origins)

    @property
    def objects(self) -> bool:
        """Whether anything was read, skipped kinds included."""
        return bool(self._origins or self.skipped)

    def add(self, items: list[Any], obj: Any, origin: Origin) -> None:
        items.append(obj)
        self._origins[id(obj)] = origin

    def set_origin(self, obj: object, origin: Origin) -> None:
        """Where ``obj``, kept in a list other than the kinds' own, came from."""
        self._origins[id(obj)] = origin

    def origin(self, obj: object) -> Origin:
        return self._origins.get(id(obj), Origin("-"))


@dataclass(slots=True)
class Context:
    """The object being parsed, so problems can be filed against it."""

    out: Manifests
    file: str
    kind: str
    name: str
    prefix: str  # where the object sits inside its document: "" or "items[3]"
    base: str = ""  # where the part being converted sits inside the object, e.g. a task template

    def within(self, base: str) -> Context:
        return Context(self.out, self.file, self.kind, self.name, self.prefix, base)

    def report(self, severity: str, path: str, message: str) -> None:
        if self.base:
            path = f"{self.base}.{path}" if path else self.base
        # Objects inside a List are named by Kind/name already; the prefix only helps when the
        # name could not be read.
        if self.prefix and self.name == "-":
            path = f"{self.prefix}.{path}" if path else self.prefix
        self.out.problems.append(Problem(self.file, self.kind, self.name, path, message, severity))

    def error(self, path: str, message: str) -> None:
        self.report("error", path, message)

    def warn(self, path: str, message: str) -> None:
        self.report("warning", path, message)

    def origin(self, explicit_priority: bool = False) -> Origin:
        return Origin(self.file, explicit_priority)
