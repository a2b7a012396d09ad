"""Pydantic models of the manifest shapes berth reads, and the translation of their verdicts into
plain problem lines.

The models stop at the boundary: they check types, ranges and enumerations of the raw documents,
and ``berth.api.manifest`` turns the validated models into the dataclasses of
``berth.api.objects``. Field names are the Kubernetes camelCase spellings, produced by an alias
generator so the Python side stays snake_case.

Unknown fields are found by walking the raw document against the models instead of reading
``model_extra``: the walk works on documents that fail validation too, and a misspelt field is
usually what makes a required one "missing", so reporting both together is what helps.
"""

from __future__ import annotations

import json
import re
import types
from functools import cache
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from berth.resources import MAX_QUANTITY, QuantityError, parse_quantity

NODE_API = "v1"
POD_API = "v1"
LIST_API = "v1"
NODE_POOL_API = "berth.io/v1alpha1"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"
BATCH_API = "batch.volcano.sh/v1alpha1"
BUS_API = "bus.volcano.sh/v1alpha1"

#: pydantic error type of the checks below, so their text passes through untranslated.
_OWN_ERROR = "berth"


class Issue(NamedTuple):
    severity: str  # "error" | "warning"
    path: str
    message: str


def show(value: object) -> str:
    """A value as it would read in the manifest, for quoting it back in a message."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str | int | float | bool) or value is None:
        return json.dumps(value)
    return json.dumps(str(value))


def _fail(message: str) -> PydanticCustomError:
    # The message goes through the context so that braces in user input are not format fields.
    return PydanticCustomError(_OWN_ERROR, "{message}", {"message": message})


def _check_quantity(value: object) -> str | int | float:
    """Accept what Kubernetes accepts as a quantity; canonical units depend on the resource name,
    which only the caller knows, so the raw value is kept."""
    expected = f"{show(value)} is not a quantity (expected e.g. 500m, 2, 4Gi)"
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(expected)
    too_large = f"{show(value)} is too large (expected at most {MAX_QUANTITY:g})"
    try:
        amount = parse_quantity(value)
    except QuantityError:
        raise _fail(expected) from None
    except ArithmeticError:  # decimal overflow on exponents like 1e999999999
        raise _fail(too_large) from None
    if amount < 0:
        raise _fail(f"must be >= 0 (got {show(value)})")
    if amount > MAX_QUANTITY:
        # Converting it to canonical units would build an integer of arbitrary size.
        raise _fail(too_large)
    return value


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_LABEL_RE = re.compile(_DNS_LABEL)


def _check_name(value: str) -> str:
    if len(value) > 253 or not _SUBDOMAIN_RE.fullmatch(value):
        raise _fail(
            f"{show(value)} is not a valid name (expected lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)"
        )
    return value


def _check_namespace(value: str) -> str:
    if len(value) > 63 or not _LABEL_RE.fullmatch(value):
        raise _fail(
            f"{show(value)} is not a valid namespace (expected lowercase letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )
    return value


def _stringify_values(value: object) -> object:
    """Read unquoted YAML scalars in string maps as the text the user meant.

    ``berth.io/duration: 300`` is the natural thing to write; Kubernetes rejects it, so the walk
    below warns, but a simulation should still run.
    """
    if not isinstance(value, dict):
        return value
    return {k: _as_text(v) for k, v in value.items()}


def _as_text(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


_STRING_MAP = BeforeValidator(_stringify_values)

Quantity = Annotated[str | int | float, PlainValidator(_check_quantity)]
ResourceList = dict[StrictStr, Quantity]
StringMap = Annotated[dict[StrictStr, StrictStr], _STRING_MAP]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Name = Annotated[StrictStr, AfterValidator(_check_name)]
Namespace = Annotated[StrictStr, AfterValidator(_check_namespace)]
Weight = Annotated[StrictInt, Field(ge=1, le=100)]
Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="ignore")

    #: Kubernetes fields berth has no use for: accepted without a word.
    ignored: ClassVar[frozenset[str]] = frozenset()
    #: Kubernetes fields that change what the object means but that berth does not model yet:
    #: accepted with a warning, because silently dropping them would change the outcome.
    unsupported: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Kubernetes reads ``field: null`` (and YAML's bare ``field:``) as an absent field."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


# -- metadata -------------------------------------------------------------------------------------


class ObjectMeta(_Model):
    name: Name
    namespace: Namespace = "default"
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    ignored = frozenset(
        {
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "ownerReferences",
            "generation",
            "generateName",
            "managedFields",
            "finalizers",
            "selfLink",
        }
    )


class TemplateMeta(_Model):
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    # What kubectl output carries in templates; a pod's own name comes from its controller.
    ignored = frozenset({"name", "namespace", "generateName", "creationTimestamp"})


# -- selectors and affinity -----------------------------------------------------------------------


class SelectorRequirement(_Model):
    key: NonEmpty
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] = Field(default_factory=list)


class LabelSelector(_Model):
    match_labels: StringMap = Field(default_factory=dict)
    match_expressions: list[SelectorRequirement] = Field(default_factory=list)


class NodeSelectorRequirement(_Model):
    key: NonEmpty
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[StrictStr] = Field(default_factory=list)


class NodeFieldRequirement(_Model):
    key: Literal["metadata.name"]
    operator: Literal["In", "NotIn"]
    values: list[StrictStr] = Field(default_factory=list)


class NodeSelectorTerm(_Model):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeFieldRequirement] = Field(default_factory=list)


class NodeSelector(_Model):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(_Model):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(_Model):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(_Model):
    label_selector: LabelSelector | None = None
    topology_key: NonEmpty
    namespaces: list[StrictStr] = Field(default_factory=list)
    unsupported = frozenset({"namespaceSelector", "matchLabelKeys", "mismatchLabelKeys"})


class WeightedPodAffinityTerm(_Model):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Model):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(_Model):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Model):
    key: StrictStr = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: StrictStr = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    ignored = frozenset({"tolerationSeconds"})


class TopologySpreadConstraint(_Model):
    max_skew: Annotated[StrictInt, Field(ge=1)]
    topology_key: NonEmpty
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Annotated[StrictInt, Field(ge=1)] | None = None
    unsupported = frozenset({"matchLabelKeys", "nodeAffinityPolicy", "nodeTaintsPolicy"})


# -- pods -----------------------------------------------------------------------------------------


class ResourceRequirements(_Model):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)
    ignored = frozenset({"claims"})


class Container(_Model):
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    # "Always" on an init container makes it a sidecar, which changes how requests add up.
    restart_policy: StrictStr = ""
    ignored = frozenset(
        {
            "name",
            "image",
            "imagePullPolicy",
            "command",
            "args",
            "workingDir",
            "env",
            "envFrom",
            "ports",
            "volumeMounts",
            "volumeDevices",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
            "resizePolicy",
            "restartPolicyRules",
        }
    )


class PodSpec(_Model):
    containers: list[Container] = Field(min_length=1)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    node_selector: StringMap = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    priority: StrictInt | None = None
    priority_class_name: StrictStr = ""
    scheduler_name: NonEmpty | None = None
    node_name: StrictStr = ""
    ignored = frozenset(
        {
            "volumes",
            "restartPolicy",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "hostUsers",
            "hostAliases",
            "hostname",
            "subdomain",
            "setHostnameAsFQDN",
            "dnsPolicy",
            "dnsConfig",
            "securityContext",
            "imagePullSecrets",
            "enableServiceLinks",
            "preemptionPolicy",
            "runtimeClassName",
            "readinessGates",
            "shareProcessNamespace",
            "ephemeralContainers",
            "os",
            "resourceClaims",
        }
    )
    unsupported = frozenset({"schedulingGates", "resources"})


class PodDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: PodSpec
    ignored = frozenset({"status"})


# -- nodes ----------------------------------------------------------------------------------------


class Taint(_Model):
    key: NonEmpty
    value: StrictStr = ""
    effect: Effect
    ignored = frozenset({"timeAdded"})


class NodeSpec(_Model):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: StrictBool = False
    ignored = frozenset({"podCIDR", "podCIDRs", "providerID", "externalID", "configSource"})


class NodeStatus(_Model):
    allocatable: ResourceList = Field(default_factory=dict)
    capacity: ResourceList = Field(default_factory=dict)
    ignored = frozenset(
        {
            "addresses",
            "conditions",
            "config",
            "daemonEndpoints",
            "features",
            "images",
            "nodeInfo",
            "phase",
            "runtimeHandlers",
            "volumesAttached",
            "volumesInUse",
        }
    )


class NodeDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NodeTemplate(_Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NodePoolSpec(_Model):
    count: Annotated[StrictInt, Field(ge=1)]
    template: NodeTemplate
    zones: list[NonEmpty] = Field(default_factory=list)


class NodePoolDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: NodePoolSpec


# -- Volcano and scheduling.k8s.io ----------------------------------------------------------------


class PodGroupSpec(_Model):
    min_member: Annotated[StrictInt, Field(ge=0)] = 1
    min_resources: ResourceList = Field(default_factory=dict)
    queue: NonEmpty = "default"
    priority_class_name: StrictStr = ""
    min_task_member: dict[StrictStr, Annotated[StrictInt, Field(ge=0)]] = Field(
        default_factory=dict
    )
    unsupported = frozenset({"networkTopology"})


class PodGroupDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    ignored = frozenset({"status"})


QueueState = Literal["Open", "Closed"]


class QueueGuarantee(_Model):
    resource: ResourceList = Field(default_factory=dict)


class QueueSpec(_Model):
    weight: Annotated[StrictInt, Field(ge=1)] = 1
    capability: ResourceList = Field(default_factory=dict)
    deserved: ResourceList = Field(default_factory=dict)
    guarantee: QueueGuarantee = Field(default_factory=QueueGuarantee)
    reclaimable: StrictBool = True
    parent: Name | None = None
    state: QueueState | None = None
    # Multi-cluster placement has no meaning in a single simulated cluster.
    ignored = frozenset({"extendClusters", "affinity", "type"})
    unsupported = frozenset({"priority"})


class QueueStatus(_Model):
    state: QueueState | None = None
    ignored = frozenset(
        {
            "pending",
            "running",
            "inqueue",
            "unknown",
            "completed",
            "allocated",
            "reservation",
            "conditions",
        }
    )


class QueueDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)


class PriorityClassDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    value: StrictInt
    global_default: StrictBool = False
    ignored = frozenset({"description", "preemptionPolicy"})


# -- batch.volcano.sh Job and bus.volcano.sh Command -----------------------------------------------

JobEventName = Literal[
    "PodFailed", "PodEvicted", "PodPending", "PodRunning", "TaskCompleted", "Unknown", "*"
]
JobActionName = Literal[
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
]


class JobPolicy(_Model):
    event: JobEventName | None = None
    events: list[JobEventName] = Field(default_factory=list)
    exit_code: StrictInt | None = None
    action: JobActionName
    timeout: StrictStr | None = None

    @model_validator(mode="after")
    def _one_trigger(self) -> JobPolicy:
        # Volcano's admission rules: a policy reacts to events or to an exit code, not both,
        # and exit code 0 is success, which no policy can catch.
        has_events = self.event is not None or bool(self.events)
        if has_events and self.exit_code is not None:
            raise _fail("set either event/events or exitCode, not both")
        if not has_events and self.exit_code is None:
            raise _fail("expected event, events or exitCode")
        if self.exit_code == 0:
            raise _fail("exitCode 0 means success and cannot trigger a policy")
        return self


class DependsOn(_Model):
    name: list[NonEmpty] = Field(min_length=1)
    iteration: Literal["any", "all"] = "all"


class PodTemplate(_Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: PodSpec


class JobTask(_Model):
    name: Name
    replicas: Annotated[StrictInt, Field(ge=0)] = 1
    min_available: Annotated[StrictInt, Field(ge=0)] | None = None
    template: PodTemplate
    policies: list[JobPolicy] = Field(default_factory=list)
    depends_on: DependsOn | None = None
    unsupported = frozenset({"topologyPolicy", "partitionPolicy", "maxRetry"})


class JobSpec(_Model):
    min_available: Annotated[StrictInt, Field(ge=0)] | None = None
    min_success: Annotated[StrictInt, Field(ge=1)] | None = None
    queue: NonEmpty = "default"
    priority_class_name: StrictStr = ""
    scheduler_name: NonEmpty | None = None
    max_retry: Annotated[StrictInt, Field(ge=0)] = 3
    tasks: list[JobTask] = Field(min_length=1)
    policies: list[JobPolicy] = Field(default_factory=list)
    ignored = frozenset({"ttlSecondsAfterFinished"})
    unsupported = frozenset({"plugins", "volumes", "networkTopology", "runningEstimate"})


class JobDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: JobSpec
    ignored = frozenset({"status"})


class CommandTarget(_Model):
    kind: Literal["Job"]
    name: Name
    ignored = frozenset({"apiVersion", "uid", "controller", "blockOwnerDeletion"})


class CommandDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    action: JobActionName
    target: CommandTarget
    reason: StrictStr = ""
    message: StrictStr = ""


class ListDoc(_Model):
    api_version: StrictStr
    kind: StrictStr
    items: list[Any]
    ignored = frozenset({"metadata"})


# -- validation -----------------------------------------------------------------------------------

M = TypeVar("M", bound=_Model)


def validate(model: type[M], data: dict[str, Any]) -> tuple[M | None, list[Issue]]:
    """The validated model (None when invalid) and every issue found, warnings included."""
    issues = _walk(model, data, "")
    try:
        return model.model_validate(data), issues
    except ValidationError as exc:
        issues += [_translate(error) for error in exc.errors(include_url=False)]
        return None, issues


def join(path: str, key: str | int) -> str:
    """Dotted path with list indices, the form every problem line uses."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _walk(model: type[_Model], data: object, path: str) -> list[Issue]:
    if not isinstance(data, dict):
        return []  # validation reports the wrong type
    fields = _fields_by_alias(model)
    issues: list[Issue] = []
    for key, value in data.items():
        sub = join(path, str(key))
        info = fields.get(key)
        if info is None:
            if key in model.unsupported:
                issues.append(Issue("warning", sub, "not supported by berth, ignored"))
            elif key not in model.ignored:
                issues.append(Issue("warning", sub, "unknown field, ignored"))
        elif value is not None:
            if _STRING_MAP in info.metadata:
                issues += _unquoted(value, sub)
            issues += _walk_type(info.annotation, value, sub)
    return issues


@cache
def _fields_by_alias(model: type[_Model]) -> dict[str, FieldInfo]:
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _walk_type(annotation: Any, value: object, path: str) -> list[Issue]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _walk_type(get_args(annotation)[0], value, path)
    if origin is Union or origin is types.UnionType:
        models = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _walk_type(models[0], value, path) if len(models) == 1 else []
    if origin is list and isinstance(value, list):
        (item,) = get_args(annotation)
        return [issue for i, v in enumerate(value) for issue in _walk_type(item, v, join(path, i))]
    if isinstance(annotation, type) and issubclass(annotation, _Model):
        return _walk(annotation, value, path)
    return []


def _unquoted(value: object, path: str) -> list[Issue]:
    if not isinstance(value, dict):
        return []
    return [
        Issue(
            "warning",
            join(path, str(key)),
            f"{show(item)} is not a string, read as {show(_as_text(item))} "
            "(quote it: Kubernetes accepts only strings here)",
        )
        for key, item in value.items()
        if not isinstance(item, str)
    ]


def _translate(error: Any) -> Issue:
    """pydantic's verdict in the words of a Kubernetes user: no class names, no URLs."""
    loc = list(error["loc"])
    is_key = bool(loc) and loc[-1] == "[key]"
    if is_key:
        loc.pop()
    path = ""
    for part in loc:
        path = join(path, part)
    kind, ctx, got = error["type"], error.get("ctx", {}), show(error.get("input"))
    messages = {
        "missing": "field required",
        "int_type": f"{got} is not an integer",
        "int_parsing": f"{got} is not an integer",
        "int_from_float": f"{got} is not an integer",
        "bool_type": f"{got} is not a boolean (expected true or false)",
        "bool_parsing": f"{got} is not a boolean (expected true or false)",
        "string_type": f"{got} is not a string",
        "list_type": f"expected a list (got {got})",
        "dict_type": f"expected a mapping (got {got})",
        "model_type": f"expected a mapping (got {got})",
        "model_attributes_type": f"expected a mapping (got {got})",
        "greater_than_equal": f"must be >= {ctx.get('ge')} (got {got})",
        "greater_than": f"must be > {ctx.get('gt')} (got {got})",
        "less_than_equal": f"must be <= {ctx.get('le')} (got {got})",
        "less_than": f"must be < {ctx.get('lt')} (got {got})",
        "string_too_short": "must not be empty",
        "too_short": f"must have at least {ctx.get('min_length')} item(s)",
    }
    if kind == _OWN_ERROR:
        message = str(ctx["message"])
    elif kind == "literal_error":
        allowed = [v for v in re.findall(r"'([^']*)'", str(ctx.get("expected", ""))) if v]
        message = f"{got} is not a valid value (expected one of {', '.join(allowed)})"
        if len(allowed) == 1:
            message = f"{got} is not a valid value (expected {allowed[0]})"
    else:
        message = messages.get(kind, str(error["msg"]))
    if is_key:
        message = f"key {message}"
    return Issue("error", path, message)
