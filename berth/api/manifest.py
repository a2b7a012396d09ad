"""Load Kubernetes-style manifests into berth's objects.

Loading never stops at the first mistake: every document is checked, every problem is collected
with the file, object and field it concerns, and the caller decides what to do with them (the
simulator refuses to run on errors, ``berth validate`` prints them all). The pydantic models in
``berth.api.schema`` check shapes and ranges; this module checks what needs several fields at once,
converts to canonical units, and runs the checks that need every file (duplicates, priorities).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.api import schema
from berth.api.objects import (
    DEFAULT_SCHEDULER,
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    FAIL_PROBABILITY_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    HOSTNAME_LABEL,
    PREEMPTABLE_ANNOTATION,
    SLA_WAITING_TIME_ANNOTATION,
    SUBMIT_TIME_ANNOTATION,
    TOPOLOGY_CORES,
    TOPOLOGY_SOCKETS,
    TOPOLOGY_THREADS,
    UTILIZATION_ANNOTATION,
    ZONE_LABEL,
    Affinity,
    BatchJob,
    Command,
    CpuTopology,
    JobAction,
    JobEvent,
    LabelSelector,
    LifecyclePolicy,
    Node,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PodGroup,
    PreferredNodeTerm,
    PriorityClass,
    Queue,
    Requirement,
    SpreadConstraint,
    Taint,
    TaskSpec,
    Toleration,
    WeightedPodAffinityTerm,
)
from berth.api.yaml_errors import yaml_error_message
from berth.durations import DurationError, parse_duration
from berth.resources import PODS, canonical_name, format_amount, to_canonical

VOLCANO_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"
DEFAULT_NODE_PODS = 110

#: The parent Volcano gives a queue that names none; berth's top level unless defined.
ROOT_QUEUE = "root"

#: Priority classes every Kubernetes cluster has without anyone defining them.
BUILTIN_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}

MAX_USER_PRIORITY = 1_000_000_000

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(slots=True, frozen=True)
class Problem:
    """One thing wrong (error) or dubious (warning) in the input, located down to the field.

    ``kind`` is empty for problems with a whole file (missing, unparsable); ``name`` is "-" when
    the object's name could not be read.
    """

    file: str
    kind: str
    name: str
    path: str
    message: str
    severity: str  # "error" | "warning"

    def __str__(self) -> str:
        parts = [self.file]
        if self.kind:
            parts.append(f"{self.kind}/{self.name}")
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


@dataclass(slots=True, frozen=True)
class _Origin:
    """Where an object came from, for the checks that run once every file is loaded."""

    file: str
    explicit_priority: bool = False


@dataclass
class Manifests:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    groups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    jobs: list[BatchJob] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Keyed by id(): the objects are plain mutable dataclasses and must not carry loader state.
    _origins: dict[int, _Origin] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

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
        self.problems.extend(other.problems)
        self._origins.update(other._origins)

    def _add(self, items: list[Any], obj: Any, origin: _Origin) -> None:
        items.append(obj)
        self._origins[id(obj)] = origin

    def _origin(self, obj: object) -> _Origin:
        return self._origins.get(id(obj), _Origin("-"))


class ManifestError(Exception):
    """Raised by ``load_or_raise``; the message has one line per error."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


# -- entry points ---------------------------------------------------------------------------------


def load_file(path: str | Path) -> Manifests:
    """Every object of one YAML, JSON or JSON Lines file; problems with the file or its content are
    collected, never raised."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return _file_problem(file, "file not found")
    except IsADirectoryError:
        return _file_problem(file, "is a directory (expected a YAML or JSON file)")
    except UnicodeDecodeError:
        return _file_problem(file, "is not a UTF-8 text file (expected YAML or JSON)")
    except OSError as exc:
        return _file_problem(file, f"cannot be read ({exc.strerror or exc})")
    if file.lower().endswith(".jsonl"):
        return _parse_json_lines(text, file)
    if file.lower().endswith(".json"):
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError as exc:
            return _file_problem(
                file, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            )
    else:
        try:
            docs = list(yaml.load_all(text, Loader=_LOADER))
        except yaml.YAMLError as exc:
            return _file_problem(file, yaml_error_message(exc, text))
    return parse_documents(docs, file)


def load_files(paths: Iterable[str | Path] | str | Path) -> Manifests:
    """All files together, then the checks that need every object (see ``cross_check``)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    result = Manifests()
    for path in paths:
        result.extend(load_file(path))
    cross_check(result)
    return result


def load_or_raise(paths: Iterable[str | Path] | str | Path) -> Manifests:
    """``load_files`` for callers that cannot go on with errors; warnings stay in ``.problems``."""
    result = load_files(paths)
    if result.errors:
        raise ManifestError(result.errors)
    return result


def parse_documents(docs: list[Any], source: str) -> Manifests:
    """Objects from already-parsed documents; ``source`` names them in problems.

    A document may be a single object, a ``kind: List``, or a list of objects (a JSON array);
    empty documents are skipped.
    """
    result = Manifests()
    for doc in docs:
        if isinstance(doc, list):
            for index, item in enumerate(doc):
                _parse_object(item, _Context(result, source, "-", "-", f"[{index}]"))
        elif doc is not None:
            _parse_object(doc, _Context(result, source, "-", "-", ""))
    return result


def cross_check(manifests: Manifests) -> None:
    """Checks across objects, run once on the full set: duplicate names, queue parents, priority
    classes.

    ``load_files`` calls it; code that assembles Manifests from ``parse_documents`` calls it once
    when everything is in. Pods and groups get their priority from their class here.
    """
    _check_duplicates(manifests)
    _check_queue_parents(manifests)
    _check_command_targets(manifests)
    _resolve_priorities(manifests)


def _parse_json_lines(text: str, file: str) -> Manifests:
    """JSON Lines (``.jsonl``, one object per line, as ``berth trace convert`` writes large
    workloads): each line is its own source, ``FILE:LINE``, so every problem names its line."""
    result = Manifests()
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        source = f"{file}:{number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON at column {exc.colno}: {exc.msg} (expected an object per line)"
            result.problems.append(Problem(source, "", "", "", message, "error"))
            continue
        _parse_object(doc, _Context(result, source, "-", "-", ""))
    return result


def _file_problem(file: str, message: str) -> Manifests:
    return Manifests(problems=[Problem(file, "", "", "", message, "error")])


# -- per-document parsing -------------------------------------------------------------------------


@dataclass(slots=True)
class _Context:
    """The object being parsed, so problems can be filed against it."""

    out: Manifests
    file: str
    kind: str
    name: str
    prefix: str  # where the object sits inside its document: "" or "items[3]"
    base: str = ""  # where the part being converted sits inside the object, e.g. a task template

    def within(self, base: str) -> _Context:
        return _Context(self.out, self.file, self.kind, self.name, self.prefix, base)

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

    def origin(self, explicit_priority: bool = False) -> _Origin:
        return _Origin(self.file, explicit_priority)


_KINDS: dict[str, tuple[str, type[schema._Model]]] = {
    "Node": (schema.NODE_API, schema.NodeDoc),
    "NodePool": (schema.NODE_POOL_API, schema.NodePoolDoc),
    "Pod": (schema.POD_API, schema.PodDoc),
    "PodGroup": (schema.VOLCANO_API, schema.PodGroupDoc),
    "Queue": (schema.VOLCANO_API, schema.QueueDoc),
    "PriorityClass": (schema.PRIORITY_CLASS_API, schema.PriorityClassDoc),
    "Job": (schema.BATCH_API, schema.JobDoc),
    "Command": (schema.BUS_API, schema.CommandDoc),
    "List": (schema.LIST_API, schema.ListDoc),
}


def _parse_object(doc: object, ctx: _Context) -> None:
    if not isinstance(doc, dict):
        ctx.error("", f"expected an object with apiVersion and kind (got {schema.show(doc)})")
        return
    kind = doc.get("kind")
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"]:
        ctx.name = _display(metadata.get("namespace"), metadata["name"])
    if kind is None:
        ctx.error("kind", "field required")
        return
    if isinstance(kind, str) and kind:
        ctx.kind = kind
    if not isinstance(kind, str) or kind not in _KINDS:
        expected = ", ".join(_KINDS)
        ctx.error("kind", f"unknown kind {schema.show(kind)} (expected one of {expected})")
        return
    api, model = _KINDS[kind]
    api_version = doc.get("apiVersion")
    if api_version is None:
        ctx.error("apiVersion", f"field required (expected {api})")
        return
    if api_version != api:
        ctx.error(
            "apiVersion",
            f"{schema.show(api_version)} is not the apiVersion of {kind} (expected {api})",
        )
        return
    if "metadata" not in doc and kind != "List":
        # Report the missing name, which is what the user has to add.
        doc = {**doc, "metadata": {}}
    parsed, issues = schema.validate(model, doc)
    for issue in issues:
        ctx.report(issue.severity, issue.path, issue.message)
    if parsed is None:
        return
    if isinstance(parsed, schema.ListDoc):
        for index, item in enumerate(parsed.items):
            where = schema.join(schema.join(ctx.prefix, "items"), index)
            _parse_object(item, _Context(ctx.out, ctx.file, "-", "-", where))
        return
    _CONVERTERS[type(parsed)](parsed, ctx)


def _display(namespace: object, name: str) -> str:
    """Names in problem lines: the namespace shows only when it is not the default one."""
    if isinstance(namespace, str) and namespace and namespace != "default":
        return f"{namespace}/{name}"
    return name


# -- conversions ----------------------------------------------------------------------------------


def _canonical(resources: Mapping[str, str | int | float]) -> dict[str, int]:
    return {canonical_name(name): to_canonical(name, value) for name, value in resources.items()}


def _node_resources(status: schema.NodeStatus) -> dict[str, int]:
    """Allocatable is what pods can use; capacity stands in for resources it does not list."""
    resources = {**_canonical(status.capacity), **_canonical(status.allocatable)}
    resources.setdefault(PODS, DEFAULT_NODE_PODS)
    return resources


def _taints(spec: schema.NodeSpec) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.value, t.effect) for t in spec.taints)


def _positive_int_annotation(
    annotations: Mapping[str, str], key: str, path: str, ctx: _Context
) -> int | None:
    text = annotations.get(key)
    if text is None:
        return None
    path = f"{path}.{key}"
    try:
        value = int(text.strip())
    except ValueError:
        ctx.error(path, f"{schema.show(text)} is not an integer (expected a positive integer)")
        return None
    if value < 1:
        ctx.error(path, f"must be >= 1 (got {text})")
        return None
    return value


def _cpu_topology(annotations: Mapping[str, str], path: str, ctx: _Context) -> CpuTopology | None:
    """Topology from the annotations at ``path``; absent ones count as 1."""
    keys = (TOPOLOGY_SOCKETS, TOPOLOGY_CORES, TOPOLOGY_THREADS)
    if not any(key in annotations for key in keys):
        return None
    values = [_positive_int_annotation(annotations, key, path, ctx) for key in keys]
    sockets, cores, threads = (value or 1 for value in values)
    return CpuTopology(sockets, cores, threads)


def _convert_node(doc: schema.NodeDoc, ctx: _Context) -> None:
    meta = doc.metadata
    labels = dict(meta.labels)
    labels.setdefault(HOSTNAME_LABEL, meta.name)
    node = Node(
        name=meta.name,
        labels=labels,
        annotations=dict(meta.annotations),
        allocatable=_node_resources(doc.status),
        taints=_taints(doc.spec),
        unschedulable=doc.spec.unschedulable,
        cpu_topology=_cpu_topology(meta.annotations, "metadata.annotations", ctx),
    )
    ctx.out._add(ctx.out.nodes, node, ctx.origin())


def _convert_node_pool(doc: schema.NodePoolDoc, ctx: _Context) -> None:
    pool, spec = doc.metadata.name, doc.spec
    template = spec.template
    base_labels = template.metadata.labels
    if HOSTNAME_LABEL in base_labels:
        ctx.warn(
            f"spec.template.metadata.labels.{HOSTNAME_LABEL}",
            "ignored (each node's hostname label is its own name)",
        )
    zones = spec.zones
    if zones and ZONE_LABEL in base_labels:
        ctx.warn("spec.zones", f"ignored (the template sets {ZONE_LABEL})")
        zones = []
    allocatable = _node_resources(template.status)
    taints = _taints(template.spec)
    topology = _cpu_topology(
        template.metadata.annotations, "spec.template.metadata.annotations", ctx
    )
    width = len(str(spec.count - 1))
    origin = ctx.origin()
    for index in range(spec.count):
        name = f"{pool}-{index:0{width}d}"
        labels = {**base_labels, HOSTNAME_LABEL: name}
        if zones:
            labels[ZONE_LABEL] = zones[index % len(zones)]
        node = Node(
            name=name,
            labels=labels,
            annotations=dict(template.metadata.annotations),
            allocatable=dict(allocatable),
            taints=taints,
            unschedulable=template.spec.unschedulable,
            cpu_topology=topology,
        )
        ctx.out._add(ctx.out.nodes, node, origin)


def _add_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = max(total.get(name, 0), amount)


def _container_requests(container: schema.Container, path: str, ctx: _Context) -> dict[str, int]:
    """Requests as the scheduler sees them: a resource given only a limit requests the limit."""
    limits = _canonical(container.resources.limits)
    requests: dict[str, int] = {}
    for raw_name, raw_value in container.resources.requests.items():
        name = canonical_name(raw_name)
        amount = to_canonical(raw_name, raw_value)
        limit = limits.get(name)
        if limit is not None and amount > limit:
            ctx.error(
                f"{path}.resources.requests.{raw_name}",
                f"must be <= its limit {format_amount(name, limit)} (got {schema.show(raw_value)})",
            )
        requests[name] = amount
    return {**limits, **requests}


def _pod_requests(spec: schema.PodSpec, ctx: _Context) -> dict[str, int]:
    """The pod's effective request, following Kubernetes.

    Regular containers run together, so they add up; init containers run one at a time before
    them, so only the largest counts; sidecars (init containers with restartPolicy Always) keep
    running, so they add to every init container started after them and to the main phase.
    """
    main: dict[str, int] = {}
    for index, container in enumerate(spec.containers):
        _add_into(main, _container_requests(container, f"spec.containers[{index}]", ctx))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(spec.init_containers):
        requests = _container_requests(container, f"spec.initContainers[{index}]", ctx)
        if container.restart_policy == "Always":
            _add_into(sidecars, requests)
        else:
            running = dict(sidecars)
            _add_into(running, requests)
            _max_into(init_peak, running)
    _add_into(main, sidecars)
    _max_into(main, init_peak)
    _add_into(main, _canonical(spec.overhead))
    main[PODS] = 1
    return main


def _check_values(operator: str, values: list[str], path: str, ctx: _Context) -> None:
    """The pairing of operator and values that Kubernetes enforces on selector requirements."""
    if operator in ("In", "NotIn") and not values:
        ctx.error(f"{path}.values", f"must not be empty for operator {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        ctx.error(f"{path}.values", f"must be empty for operator {operator}")
    elif operator in ("Gt", "Lt") and (len(values) != 1 or not _is_integer(values[0])):
        ctx.error(
            f"{path}.values",
            f"must be a single integer for operator {operator} (got {json.dumps(values)})",
        )


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _requirements(
    expressions: Sequence[schema.SelectorRequirement | schema.NodeSelectorRequirement],
    path: str,
    ctx: _Context,
) -> tuple[Requirement, ...]:
    result = []
    for index, expr in enumerate(expressions):
        _check_values(expr.operator, expr.values, f"{path}[{index}]", ctx)
        result.append(Requirement(expr.key, expr.operator, tuple(expr.values)))
    return tuple(result)


def _label_selector(selector: schema.LabelSelector, path: str, ctx: _Context) -> LabelSelector:
    labels = tuple(Requirement(k, "In", (v,)) for k, v in selector.match_labels.items())
    expressions = _requirements(selector.match_expressions, f"{path}.matchExpressions", ctx)
    return LabelSelector(labels + expressions)


def _node_term(term: schema.NodeSelectorTerm, path: str, ctx: _Context) -> NodeSelectorTerm:
    fields = []
    for index, req in enumerate(term.match_fields):
        if len(req.values) != 1:
            ctx.error(
                f"{path}.matchFields[{index}].values",
                f"must hold exactly one node name (got {len(req.values)})",
            )
        fields.append(Requirement(req.key, req.operator, tuple(req.values)))
    expressions = _requirements(term.match_expressions, f"{path}.matchExpressions", ctx)
    return NodeSelectorTerm(expressions, tuple(fields))


_NO_SELECTOR = "missing (Kubernetes matches no pods without one, so the term is ignored)"


def _pod_term(term: schema.PodAffinityTerm, path: str, ctx: _Context) -> PodAffinityTerm | None:
    if term.label_selector is None:
        ctx.warn(f"{path}.labelSelector", _NO_SELECTOR)
        return None
    selector = _label_selector(term.label_selector, f"{path}.labelSelector", ctx)
    return PodAffinityTerm(selector, term.topology_key, tuple(term.namespaces))


def _pod_terms(
    affinity: schema.PodAffinity | None, path: str, ctx: _Context
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    if affinity is None:
        return (), ()
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = [
        _pod_term(term, f"{required_path}[{index}]", ctx)
        for index, term in enumerate(affinity.required_during_scheduling_ignored_during_execution)
    ]
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for index, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        term = _pod_term(
            weighted.pod_affinity_term, f"{preferred_path}[{index}].podAffinityTerm", ctx
        )
        if term is not None:
            preferred.append(WeightedPodAffinityTerm(weighted.weight, term))
    return tuple(t for t in required if t is not None), tuple(preferred)


def _affinity(affinity: schema.Affinity | None, ctx: _Context) -> Affinity:
    if affinity is None:
        return Affinity()
    path = "spec.affinity"
    node_required: tuple[NodeSelectorTerm, ...] = ()
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    if affinity.node_affinity is not None:
        node_path = f"{path}.nodeAffinity"
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            terms_path = f"{node_path}.requiredDuringSchedulingIgnoredDuringExecution"
            terms_path += ".nodeSelectorTerms"
            terms = []
            for index, term in enumerate(required.node_selector_terms):
                if not term.match_expressions and not term.match_fields:
                    ctx.warn(
                        f"{terms_path}[{index}]",
                        "empty term matches no nodes (expected matchExpressions or matchFields)",
                    )
                terms.append(_node_term(term, f"{terms_path}[{index}]", ctx))
            node_required = tuple(terms)
        preferred_path = f"{node_path}.preferredDuringSchedulingIgnoredDuringExecution"
        node_preferred = tuple(
            PreferredNodeTerm(
                item.weight, _node_term(item.preference, f"{preferred_path}[{i}].preference", ctx)
            )
            for i, item in enumerate(
                affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
            )
        )
    pod_required, pod_preferred = _pod_terms(affinity.pod_affinity, f"{path}.podAffinity", ctx)
    anti_required, anti_preferred = _pod_terms(
        affinity.pod_anti_affinity, f"{path}.podAntiAffinity", ctx
    )
    return Affinity(
        node_required=node_required,
        node_preferred=node_preferred,
        pod_required=pod_required,
        pod_preferred=pod_preferred,
        anti_required=anti_required,
        anti_preferred=anti_preferred,
    )


def _tolerations(spec: schema.PodSpec, ctx: _Context) -> tuple[Toleration, ...]:
    result = []
    for index, tol in enumerate(spec.tolerations):
        path = f"spec.tolerations[{index}]"
        if tol.operator == "Exists" and tol.value:
            ctx.error(f"{path}.value", "must be empty when operator is Exists")
        if not tol.key and tol.operator != "Exists":
            ctx.error(f"{path}.operator", "must be Exists when key is empty")
        result.append(Toleration(tol.key, tol.operator, tol.value, tol.effect))
    return tuple(result)


def _spread(spec: schema.PodSpec, ctx: _Context) -> tuple[SpreadConstraint, ...]:
    result = []
    for index, item in enumerate(spec.topology_spread_constraints):
        path = f"spec.topologySpreadConstraints[{index}]"
        if item.min_domains is not None and item.when_unsatisfiable != "DoNotSchedule":
            ctx.error(f"{path}.minDomains", "only allowed with whenUnsatisfiable DoNotSchedule")
        if item.label_selector is None:
            ctx.warn(f"{path}.labelSelector", _NO_SELECTOR)
            continue
        selector = _label_selector(item.label_selector, f"{path}.labelSelector", ctx)
        result.append(
            SpreadConstraint(
                max_skew=item.max_skew,
                topology_key=item.topology_key,
                when_unsatisfiable=item.when_unsatisfiable,
                selector=selector,
                min_domains=item.min_domains or 1,
            )
        )
    return tuple(result)


def _float_annotation(
    annotations: Mapping[str, str],
    key: str,
    ctx: _Context,
    check: Callable[[float], str | None],
) -> float | None:
    """A numeric simulation annotation; ``check`` returns what is wrong with the value, if any."""
    text = annotations.get(key)
    if text is None:
        return None
    path = f"metadata.annotations.{key}"
    try:
        value = float(text)
    except ValueError:
        ctx.error(path, f"{schema.show(text)} is not a number")
        return None
    wrong = "must be a finite number" if not math.isfinite(value) else check(value)
    if wrong:
        ctx.error(path, f"{wrong} (got {text})")
        return None
    return value


def _at_least_zero(value: float) -> str | None:
    return "must be >= 0" if value < 0 else None


def _above_zero(value: float) -> str | None:
    return "must be > 0" if value <= 0 else None


def _fraction(value: float) -> str | None:
    return "must be between 0 and 1" if not 0 <= value <= 1 else None


def _group_name(annotations: Mapping[str, str], ctx: _Context) -> str:
    group = annotations.get(GROUP_NAME_ANNOTATION, "")
    volcano = annotations.get(VOLCANO_GROUP_ANNOTATION, "")
    if group and volcano and group != volcano:
        ctx.error(
            f"metadata.annotations.{VOLCANO_GROUP_ANNOTATION}",
            f"{schema.show(volcano)} contradicts {GROUP_NAME_ANNOTATION} "
            f"{schema.show(group)} (expected the same group name)",
        )
    return group or volcano


def _convert_pod(doc: schema.PodDoc, ctx: _Context) -> None:
    pod = build_pod(doc.metadata.name, doc.metadata.namespace, doc.metadata, doc.spec, ctx)
    ctx.out._add(ctx.out.pods, pod, ctx.origin(explicit_priority=doc.spec.priority is not None))


def build_pod(
    name: str,
    namespace: str,
    meta: schema.ObjectMeta | schema.TemplateMeta,
    spec: schema.PodSpec,
    ctx: _Context,
) -> Pod:
    """A Pod from its metadata and spec: a Pod document's, or a Job task's template."""
    annotations = meta.annotations
    pod = Pod(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(annotations),
        requests=_pod_requests(spec, ctx),
        node_selector=dict(spec.node_selector),
        affinity=_affinity(spec.affinity, ctx),
        tolerations=_tolerations(spec, ctx),
        spread=_spread(spec, ctx),
        priority=spec.priority or 0,
        priority_class_name=spec.priority_class_name,
        scheduler_name=spec.scheduler_name or DEFAULT_SCHEDULER,
        node_name=spec.node_name,
        group=_group_name(annotations, ctx),
        submit_time=_float_annotation(annotations, SUBMIT_TIME_ANNOTATION, ctx, _at_least_zero)
        or 0.0,
        duration=_float_annotation(annotations, DURATION_ANNOTATION, ctx, _above_zero),
        preemptable=_preemptable(meta, ctx),
        fail_after=_float_annotation(annotations, FAIL_AFTER_ANNOTATION, ctx, _at_least_zero),
    )
    utilization = _float_annotation(annotations, UTILIZATION_ANNOTATION, ctx, _fraction)
    if utilization is not None:
        pod.utilization = utilization
    probability = _float_annotation(annotations, FAIL_PROBABILITY_ANNOTATION, ctx, _fraction)
    if probability is not None:
        pod.fail_probability = probability
    exit_code = _float_annotation(annotations, EXIT_CODE_ANNOTATION, ctx, _exit_code)
    if exit_code is not None:
        pod.fail_exit_code = int(exit_code)
    return pod


def _exit_code(value: float) -> str | None:
    if value != int(value) or not 1 <= value <= 255:
        return "must be an integer from 1 to 255 (0 means success)"
    return None


#: What Go's strconv.ParseBool accepts, which is how Volcano reads boolean annotations.
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def _preemptable(meta: schema.ObjectMeta, ctx: _Context) -> bool:
    """Volcano's ``volcano.sh/preemptable``: the annotation, else the label, else preemptable."""
    for where, values in (("annotations", meta.annotations), ("labels", meta.labels)):
        text = values.get(PREEMPTABLE_ANNOTATION)
        if text is None:
            continue
        value = _GO_BOOLS.get(text.strip())
        if value is None:
            ctx.error(
                f"metadata.{where}.{PREEMPTABLE_ANNOTATION}",
                f'{schema.show(text)} is not a boolean (expected "true" or "false")',
            )
            return True
        return value
    return True


def _check_sla(annotations: Mapping[str, str], ctx: _Context) -> None:
    text = annotations.get(SLA_WAITING_TIME_ANNOTATION)
    if text is None:
        return
    path = f"metadata.annotations.{SLA_WAITING_TIME_ANNOTATION}"
    try:
        seconds = parse_duration(text)
    except DurationError:
        ctx.error(path, f"{schema.show(text)} is not a duration (expected e.g. 30m, 1h, 1h30m)")
        return
    if seconds < 0:
        ctx.error(path, f"must not be negative (got {text})")


def _convert_pod_group(doc: schema.PodGroupDoc, ctx: _Context) -> None:
    meta, spec = doc.metadata, doc.spec
    _check_sla(meta.annotations, ctx)
    group = PodGroup(
        name=meta.name,
        namespace=meta.namespace,
        min_member=spec.min_member,
        min_resources=_canonical(spec.min_resources),
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        submit_time=_float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, _at_least_zero)
        or 0.0,
        annotations=dict(meta.annotations),
        preemptable=_preemptable(meta, ctx),
        min_task_member=dict(spec.min_task_member),
    )
    ctx.out._add(ctx.out.groups, group, ctx.origin())


def _convert_queue(doc: schema.QueueDoc, ctx: _Context) -> None:
    spec = doc.spec
    capability = _canonical(spec.capability)
    guarantee = _canonical(spec.guarantee.resource)
    for name, amount in guarantee.items():
        if name in capability and amount > capability[name]:
            ctx.warn(
                f"spec.guarantee.resource.{name}",
                f"{format_amount(name, amount)} exceeds spec.capability.{name} "
                f"({format_amount(name, capability[name])}); only the capability can be used",
            )
    queue = Queue(
        name=doc.metadata.name,
        weight=spec.weight,
        capability=capability,
        state=spec.state or doc.status.state or "Open",
        guarantee=guarantee,
        deserved=_canonical(spec.deserved),
        reclaimable=spec.reclaimable,
        parent=spec.parent or "",
    )
    ctx.out._add(ctx.out.queues, queue, ctx.origin())


def _convert_priority_class(doc: schema.PriorityClassDoc, ctx: _Context) -> None:
    builtin = BUILTIN_PRIORITY_CLASSES.get(doc.metadata.name)
    if builtin is not None and doc.value != builtin:
        ctx.error("value", f"must be {builtin} for this built-in class (got {doc.value})")
    elif builtin is None and doc.value > MAX_USER_PRIORITY:
        ctx.error(
            "value",
            f"must be <= {MAX_USER_PRIORITY} (got {doc.value}; larger values are "
            "reserved for the built-in system classes)",
        )
    pc = PriorityClass(name=doc.metadata.name, value=doc.value, global_default=doc.global_default)
    ctx.out._add(ctx.out.priority_classes, pc, ctx.origin())


def _policies(
    items: list[schema.JobPolicy], path: str, ctx: _Context
) -> tuple[LifecyclePolicy, ...]:
    result = []
    for index, item in enumerate(items):
        timeout = None
        if item.timeout is not None:
            try:
                timeout = parse_duration(item.timeout)
            except DurationError:
                ctx.error(
                    f"{path}[{index}].timeout",
                    f"{schema.show(item.timeout)} is not a duration (expected e.g. 30s, 5m, 1h)",
                )
            else:
                if timeout < 0:
                    ctx.error(
                        f"{path}[{index}].timeout", f"must not be negative (got {item.timeout})"
                    )
                    timeout = None
        if item.exit_code is not None and not 1 <= item.exit_code <= 255:
            ctx.error(
                f"{path}[{index}].exitCode",
                f"{item.exit_code} is not an exit code a container can fail with (expected 1-255)",
            )
        events = {JobEvent(e) for e in item.events}
        if item.event is not None:
            events.add(JobEvent(item.event))
        result.append(
            LifecyclePolicy(JobAction(item.action), frozenset(events), item.exit_code, timeout)
        )
    return tuple(result)


def _convert_job(doc: schema.JobDoc, ctx: _Context) -> None:
    meta, spec = doc.metadata, doc.spec
    tasks: list[TaskSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(spec.tasks):
        path = f"spec.tasks[{index}]"
        if item.name in seen:
            ctx.error(f"{path}.name", f"duplicate task name {schema.show(item.name)}")
        seen.add(item.name)
        if item.min_available is not None and item.min_available > item.replicas:
            ctx.error(
                f"{path}.minAvailable",
                f"{item.min_available} exceeds the task's replicas ({item.replicas})",
            )
        template = item.template
        pod = build_pod(
            f"{meta.name}-{item.name}",
            meta.namespace,
            template.metadata,
            template.spec,
            ctx.within(f"{path}.template"),
        )
        if template.spec.scheduler_name is None and spec.scheduler_name is not None:
            pod.scheduler_name = spec.scheduler_name
        ctx.out._origins[id(pod)] = ctx.origin(template.spec.priority is not None)
        depends = item.depends_on
        tasks.append(
            TaskSpec(
                name=item.name,
                replicas=item.replicas,
                template=pod,
                min_available=item.min_available,
                policies=_policies(item.policies, f"{path}.policies", ctx),
                depends_on=tuple(depends.name) if depends else (),
                depends_on_any=depends is not None and depends.iteration == "any",
            )
        )
    _check_dependencies(spec, ctx)
    replicas = sum(task.replicas for task in tasks)
    min_available = spec.min_available
    if min_available is None:
        min_available = sum(
            task.replicas if task.min_available is None else task.min_available for task in tasks
        )
    elif min_available > replicas:
        ctx.error("spec.minAvailable", f"{min_available} exceeds the job's replicas ({replicas})")
    first = sum(task.replicas for task in tasks if not task.depends_on)
    if 0 < first < replicas and min_available > first:
        written = spec.min_available is not None
        ctx.warn(
            "spec.minAvailable" if written else "spec",
            f"minAvailable {'' if written else '(by default) '}{min_available} exceeds the "
            f"{first} pods of the tasks without dependsOn, which are created first: the gang "
            f"can never be complete (expected at most {first})",
        )
    if spec.min_success is not None and spec.min_success > replicas:
        ctx.error("spec.minSuccess", f"{spec.min_success} exceeds the job's replicas ({replicas})")
    _check_sla(meta.annotations, ctx)
    job = BatchJob(
        name=meta.name,
        namespace=meta.namespace,
        tasks=tasks,
        min_available=min_available,
        min_success=spec.min_success,
        queue=spec.queue,
        priority_class_name=spec.priority_class_name,
        max_retry=spec.max_retry,
        policies=_policies(spec.policies, "spec.policies", ctx),
        submit_time=_float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, _at_least_zero)
        or 0.0,
        annotations=dict(meta.annotations),
        preemptable=_preemptable(meta, ctx),
    )
    ctx.out._add(ctx.out.jobs, job, ctx.origin())


def _check_dependencies(spec: schema.JobSpec, ctx: _Context) -> None:
    """``dependsOn`` must name other tasks of the job, without cycles (a cycle never starts)."""
    names = {task.name for task in spec.tasks}
    edges: dict[str, list[str]] = {}
    for index, task in enumerate(spec.tasks):
        if task.depends_on is None:
            continue
        for position, name in enumerate(task.depends_on.name):
            path = f"spec.tasks[{index}].dependsOn.name[{position}]"
            if name == task.name:
                ctx.error(path, "a task cannot depend on itself")
            elif name not in names:
                expected = ", ".join(sorted(names - {task.name})) or "no other task"
                ctx.error(path, f"no task named {schema.show(name)} (expected one of {expected})")
            else:
                edges.setdefault(task.name, []).append(name)
    cycle = _find_cycle(edges)
    if cycle:
        ctx.error("spec.tasks", f"dependsOn forms a cycle: {' → '.join(cycle)}")


def _find_cycle(edges: dict[str, list[str]]) -> list[str]:
    """One cycle of the graph as a closed path (first name repeated at the end), or []."""
    finished: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str]:
        if node in trail:
            return [*trail[trail.index(node) :], node]
        if node in finished:
            return []
        for nxt in edges.get(node, ()):
            found = visit(nxt, [*trail, node])
            if found:
                return found
        finished.add(node)
        return []

    for start in sorted(edges):
        found = visit(start, [])
        if found:
            return found
    return []


def _convert_command(doc: schema.CommandDoc, ctx: _Context) -> None:
    meta = doc.metadata
    command = Command(
        name=meta.name,
        namespace=meta.namespace,
        action=JobAction(doc.action),
        target=doc.target.name,
        submit_time=_float_annotation(meta.annotations, SUBMIT_TIME_ANNOTATION, ctx, _at_least_zero)
        or 0.0,
        reason=doc.reason or doc.message,
    )
    ctx.out._add(ctx.out.commands, command, ctx.origin())


_CONVERTERS: dict[type[schema._Model], Callable[[Any, _Context], None]] = {
    schema.NodeDoc: _convert_node,
    schema.NodePoolDoc: _convert_node_pool,
    schema.PodDoc: _convert_pod,
    schema.PodGroupDoc: _convert_pod_group,
    schema.QueueDoc: _convert_queue,
    schema.PriorityClassDoc: _convert_priority_class,
    schema.JobDoc: _convert_job,
    schema.CommandDoc: _convert_command,
}


# -- checks across files --------------------------------------------------------------------------


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
    name = _display(getattr(named, "namespace", None), named.name)
    m.problems.append(Problem(m._origin(obj).file, kind, name, path, message, severity))


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
    ):
        first_file: dict[str, str] = {}
        for obj in objects:
            key = obj.key if isinstance(obj, Pod | PodGroup | BatchJob | Command) else obj.name
            file = m._origin(obj).file
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
    for obj, kind, path, owner in entries:
        explicit = m._origin(obj).explicit_priority
        if (
            not obj.priority_class_name
            and owner is not None
            and not explicit
            and owner.priority_class_name in values
        ):
            # Volcano gives a template without a class the Job's own, before the cluster's
            # default could apply.
            obj.priority_class_name = owner.priority_class_name
        if not obj.priority_class_name:
            if default is not None and not explicit:
                obj.priority, obj.priority_class_name = default.value, default.name
            continue
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
