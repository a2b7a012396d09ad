"""Dynamic Resource Allocation objects as berth keeps them, and their converters.

The pydantic models of ``berth.api.schema.dra`` check the shapes; these plain frozen
dataclasses are what the allocator (``berth.cluster.dra``) reads. Quantities stay exact
(``Decimal``): a device's capacity is compared and summed as Kubernetes does, never rounded.
The checks that need several objects (a claim's class exists, a slice's node exists) are in
``berth.api.dra_checks``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from berth.api import schema
from berth.api.cel import compile_error
from berth.api.fields import requirements
from berth.api.loaded import Context
from berth.api.selectors import LabelSelector, NodeSelectorTerm, Requirement
from berth.resources import parse_quantity

if TYPE_CHECKING:
    from berth.api.schema.dra import DeviceAttribute as AttributeDoc

#: Attribute values: int, bool, str, a ``Version`` or a tuple of one of those (list forms).
AttributeValue = Any


@dataclass(frozen=True, slots=True)
class Version:
    """A ``version`` attribute (semantic version string)."""

    text: str


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    default: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()
    min: Decimal | None = None
    max: Decimal | None = None
    step: Decimal | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    value: Decimal
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # None | NoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class NodeSelection:
    """Which nodes reach a slice or device: a node's name, all nodes, or ORed selector terms."""

    node_name: str = ""
    all_nodes: bool = False
    terms: tuple[NodeSelectorTerm, ...] | None = None

    def matches(self, node: str, labels: dict[str, str]) -> bool:
        if self.node_name:
            return node == self.node_name
        if self.all_nodes:
            return True
        if self.terms is None:
            return False
        return any(_term_matches(term, node, labels) for term in self.terms)


def _term_matches(term: NodeSelectorTerm, node: str, labels: dict[str, str]) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty term selects nothing, as in Kubernetes
    for req in term.fields:
        if (node in req.values) != (req.operator == "In"):
            return False
    return LabelSelector(term.expressions).matches(labels)


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    capacity: dict[str, Capacity] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    taints: tuple[Taint, ...] = ()
    #: With the slice's ``perDeviceNodeSelection``: the nodes that reach this device.
    selection: NodeSelection | None = None
    consumes_counters: tuple[str, ...] = ()  # counter set names (partitionable devices)
    binding_conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int = 0
    slice_count: int = 1
    selection: NodeSelection = field(default_factory=lambda: NodeSelection(all_nodes=True))
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    config: int = 0  # how many opaque configurations it carries (passed to drivers, not read)


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """``exactly`` or one of ``firstAvailable``'s subrequests (``name`` then set)."""

    class_name: str
    selectors: tuple[str, ...] = ()
    mode: str = "ExactCount"
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    capacity: dict[str, Decimal] | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    config: int = 0


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    name: str
    namespace: str = "default"
    spec: ClaimSpec = field(default_factory=ClaimSpec)


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    name: str
    namespace: str = "default"
    spec: ClaimSpec = field(default_factory=ClaimSpec)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """An entry of a pod's ``spec.resourceClaims``: exactly one of the two names is set."""

    name: str
    claim_name: str = ""
    template_name: str = ""


# -- converters ------------------------------------------------------------------------------------


def quantity(value: str | int | float) -> Decimal:
    return parse_quantity(value)


def attribute_value(doc: AttributeDoc) -> AttributeValue:
    if doc.int is not None:
        return doc.int
    if doc.bool is not None:
        return doc.bool
    if doc.string is not None:
        return doc.string
    if doc.version is not None:
        return Version(doc.version)
    if doc.versions is not None:
        return tuple(Version(v) for v in doc.versions)
    for values in (doc.ints, doc.bools, doc.strings):
        if values is not None:
            return tuple(values)
    raise ValueError("empty attribute")  # the schema refuses it first


def _selection(
    node_name: str | None,
    all_nodes: bool | None,
    selector: schema.NodeSelector | None,
    path: str,
    ctx: Context,
) -> NodeSelection | None:
    if node_name:
        return NodeSelection(node_name=node_name)
    if all_nodes:
        return NodeSelection(all_nodes=True)
    if selector is None:
        return None
    terms = []
    for index, term in enumerate(selector.node_selector_terms):
        where = f"{path}.nodeSelectorTerms[{index}]"
        fields = tuple(Requirement(r.key, r.operator, tuple(r.values)) for r in term.match_fields)
        expressions = requirements(term.match_expressions, f"{where}.matchExpressions", ctx)
        terms.append(NodeSelectorTerm(expressions, fields))
    return NodeSelection(terms=tuple(terms))


def _capacity(doc: schema.DeviceCapacity) -> Capacity:
    policy = doc.request_policy
    if policy is None:
        return Capacity(quantity(doc.value))
    rng = policy.valid_range

    def q(value: Any) -> Decimal | None:
        return None if value is None else quantity(value)

    return Capacity(
        quantity(doc.value),
        CapacityPolicy(
            default=q(policy.default),
            valid_values=tuple(quantity(v) for v in policy.valid_values),
            min=q(rng.min) if rng else None,
            max=q(rng.max) if rng else None,
            step=q(rng.step) if rng else None,
        ),
    )


def _device(doc: schema.Device, per_device: bool, path: str, ctx: Context) -> Device:
    selection = None
    if per_device:
        selection = _selection(
            doc.node_name, doc.all_nodes, doc.node_selector, f"{path}.nodeSelector", ctx
        )
        if selection is None:
            ctx.error(path, "expected one of nodeName, nodeSelector, allNodes (the slice has "
                      "perDeviceNodeSelection)")  # fmt: skip
    return Device(
        name=doc.name,
        attributes={k: attribute_value(v) for k, v in doc.attributes.items()},
        capacity={k: _capacity(v) for k, v in doc.capacity.items()},
        allow_multiple_allocations=bool(doc.allow_multiple_allocations),
        taints=tuple(Taint(t.key, t.value, t.effect) for t in doc.taints),
        selection=selection,
        consumes_counters=tuple(c.counter_set for c in doc.consumes_counters),
        binding_conditions=tuple(doc.binding_conditions),
    )


def convert_resource_slice(doc: schema.ResourceSliceDoc, ctx: Context) -> None:
    spec = doc.spec
    per_device = bool(spec.per_device_node_selection)
    selection = _selection(
        spec.node_name, spec.all_nodes, spec.node_selector, "spec.nodeSelector", ctx
    )
    devices = []
    names: set[str] = set()
    for index, device in enumerate(spec.devices):
        path = f"spec.devices[{index}]"
        if device.name in names:
            ctx.error(f"{path}.name", f"duplicate device name {schema.show(device.name)}")
            continue
        names.add(device.name)
        devices.append(_device(device, per_device, path, ctx))
    item = ResourceSlice(
        name=doc.metadata.name,
        driver=spec.driver,
        pool=spec.pool.name,
        generation=spec.pool.generation,
        slice_count=spec.pool.resource_slice_count,
        selection=selection or NodeSelection(),
        per_device_node_selection=per_device,
        devices=tuple(devices),
        shared_counters=tuple(c.name for c in spec.shared_counters),
    )
    ctx.out.add(ctx.out.dra, item, ctx.origin())


def _selectors(docs: list[schema.DeviceSelector], path: str, ctx: Context) -> tuple[str, ...]:
    out = []
    for index, selector in enumerate(docs):
        expression = selector.cel.expression
        wrong = compile_error(expression)
        if wrong:
            ctx.error(
                f"{path}[{index}].cel.expression",
                f"does not compile: {wrong} (expected a CEL expression over device)",
            )
        # Kept even when it does not compile: the allocator then refuses the class or claim
        # (dropping the selector would let it match every device).
        out.append(expression)
    return tuple(out)


def convert_device_class(doc: schema.DeviceClassDoc, ctx: Context) -> None:
    item = DeviceClass(
        doc.metadata.name,
        _selectors(doc.spec.selectors, "spec.selectors", ctx),
        len(doc.spec.config),
    )
    ctx.out.add(ctx.out.dra, item, ctx.origin())


def _exact(doc: schema.ExactDeviceRequest, path: str, ctx: Context, name: str = "") -> ExactRequest:
    if doc.allocation_mode == "All" and doc.count is not None:
        ctx.error(f"{path}.count", "must not be set with allocationMode All")
    capacity = None
    if doc.capacity is not None:
        capacity = {k: quantity(v) for k, v in doc.capacity.requests.items()}
    return ExactRequest(
        class_name=doc.device_class_name,
        selectors=_selectors(doc.selectors, f"{path}.selectors", ctx),
        mode=doc.allocation_mode,
        count=doc.count or 1,
        admin_access=bool(doc.admin_access),
        tolerations=tuple(
            Toleration(t.key, t.operator, t.value, t.effect) for t in doc.tolerations
        ),
        capacity=capacity,
        name=name,
    )


def claim_spec(doc: schema.ResourceClaimSpec, path: str, ctx: Context) -> ClaimSpec:
    requests = []
    names: set[str] = set()
    for index, request in enumerate(doc.devices.requests):
        where = f"{path}.devices.requests[{index}]"
        if request.name in names:
            ctx.error(f"{where}.name", f"duplicate request name {schema.show(request.name)}")
        names.add(request.name)
        if request.exactly is not None:
            requests.append(
                DeviceRequest(request.name, _exact(request.exactly, f"{where}.exactly", ctx))
            )
            continue
        subs = tuple(
            _exact(sub, f"{where}.firstAvailable[{i}]", ctx, sub.name)
            for i, sub in enumerate(request.first_available)
        )
        requests.append(DeviceRequest(request.name, first_available=subs))
        for sub in request.first_available:
            names.add(f"{request.name}/{sub.name}")
    constraints = []
    for index, constraint in enumerate(doc.devices.constraints):
        for name in constraint.requests:
            if name not in names:
                ctx.error(
                    f"{path}.devices.constraints[{index}].requests",
                    f"no request named {schema.show(name)} in this claim",
                )
        constraints.append(
            Constraint(
                tuple(constraint.requests),
                constraint.match_attribute,
                constraint.distinct_attribute,
            )
        )
    return ClaimSpec(tuple(requests), tuple(constraints), len(doc.devices.config))


def convert_resource_claim(doc: schema.ResourceClaimDoc, ctx: Context) -> None:
    item = ResourceClaim(
        doc.metadata.name, doc.metadata.namespace, claim_spec(doc.spec, "spec", ctx)
    )
    ctx.out.add(ctx.out.dra, item, ctx.origin())


def convert_resource_claim_template(doc: schema.ResourceClaimTemplateDoc, ctx: Context) -> None:
    spec = claim_spec(doc.spec.spec, "spec.spec", ctx)
    item = ResourceClaimTemplate(doc.metadata.name, doc.metadata.namespace, spec)
    ctx.out.add(ctx.out.dra, item, ctx.origin())


def pod_claims(docs: list[schema.PodResourceClaim]) -> tuple[PodClaim, ...]:
    return tuple(
        PodClaim(d.name, d.resource_claim_name or "", d.resource_claim_template_name or "")
        for d in docs
    )
