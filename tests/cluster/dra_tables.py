"""Builders for the DRA allocator's tables, named after the helpers of the upstream table
(``k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting``) so that a ported
case reads like its original."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from berth.api.dra import (
    Capacity,
    CapacityPolicy,
    ClaimSpec,
    Constraint,
    Device,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    NodeSelection,
    ResourceClaim,
    ResourceSlice,
    Taint,
    Toleration,
    Version,
)
from berth.api.selectors import NodeSelectorTerm, Requirement
from berth.cluster.dra import ClaimAllocation, DeviceResult

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3 = "slice-1", "slice-2", "slice-3"
DEVICE0, DEVICE1, DEVICE2, DEVICE3 = "device-0", "device-1", "device-2", "device-3"
CAPACITY0 = "capacity-0"
ALL = "nodeSelectionAll"
PER_DEVICE = "nodeSelectionPerDevice"
ZERO, ONE, TWO, THREE, FOUR = (Decimal(n) for n in range(5))


def node_labels(region: str) -> dict[str, str]:
    return {"region": region, "planet": "earth"}


def cls(name: str, driver: str) -> DeviceClass:
    return DeviceClass(name, (f'device.driver == "{driver}"',))


def cls_multi(name: str, driver: str, multi: bool) -> DeviceClass:
    flag = "true" if multi else "false"
    expression = f'device.driver == "{driver}" && device.allowMultipleAllocations == {flag}'
    return DeviceClass(name, (expression,))


def gi(n: int) -> Decimal:
    return Decimal(n * 2**30)


def device(
    name: str,
    capacity: dict[str, Decimal] | None = None,
    attributes: dict | None = None,
    *,
    multi: bool = False,
    policy: CapacityPolicy | None = None,
    taints: tuple[Taint, ...] = (),
    selection: NodeSelection | None = None,
    counters: tuple[str, ...] = (),
    binding: tuple[str, ...] = (),
) -> Device:
    caps = {k: Capacity(v, policy) for k, v in (capacity or {}).items()}
    return Device(name, dict(attributes or {}), caps, multi, taints, selection, counters, binding)


#: withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4.
RANGE_POLICY = CapacityPolicy(default=TWO, min=TWO, step=TWO, max=FOUR)


def valid_values(default: Decimal, *more: Decimal) -> CapacityPolicy:
    return CapacityPolicy(default=default, valid_values=(default, *more))


def label_selector(key: str, *values: str) -> NodeSelection:
    return NodeSelection(terms=(NodeSelectorTerm((Requirement(key, "In", values),)),))


def local_selector(node: str) -> NodeSelection:
    term = NodeSelectorTerm((), (Requirement("metadata.name", "In", (node,)),))
    return NodeSelection(terms=(term,))


def slice_(
    name: str,
    selection: str | NodeSelection,
    pool: str,
    driver: str,
    *devices: Device,
    count: int = 1,
    generation: int = 1,
) -> ResourceSlice:
    per_device = selection == PER_DEVICE
    if isinstance(selection, NodeSelection):
        chosen = selection
    elif selection == ALL:
        chosen = NodeSelection(all_nodes=True)
    elif per_device:
        chosen = NodeSelection()
    else:
        chosen = NodeSelection(node_name=selection)
    return ResourceSlice(name, driver, pool, generation, count, chosen, per_device, devices)


def one_device(name: str, selection: str | NodeSelection, pool: str, driver: str, **kw):
    return slice_(name, selection, pool, driver, device(DEVICE1), **kw)


def many_devices(name: str, selection: str, pool: str, driver: str, count: int):
    return slice_(name, selection, pool, driver, *(device(f"device-{i}") for i in range(count)))


def exact(
    cls_name: str,
    count: int = 1,
    *selectors: str,
    mode: str = "ExactCount",
    capacity: Decimal | None = None,
    tolerations: tuple[Toleration, ...] = (),
    admin: bool = False,
    name: str = "",
) -> ExactRequest:
    asked = None if capacity is None else {CAPACITY0: capacity}
    return ExactRequest(cls_name, selectors, mode, count, admin, tolerations, asked, name)


def request(name: str, cls_name: str, count: int = 1, *selectors: str, **kw) -> DeviceRequest:
    return DeviceRequest(name, exact(cls_name, count, *selectors, **kw))


def all_request(name: str, cls_name: str, *selectors: str, **kw) -> DeviceRequest:
    return DeviceRequest(name, exact(cls_name, 1, *selectors, mode="All", **kw))


def sub(name: str, cls_name: str, count: int = 1, *selectors: str, **kw) -> ExactRequest:
    return exact(cls_name, count, *selectors, name=name, **kw)


def first_available(name: str, *subs: ExactRequest) -> DeviceRequest:
    return DeviceRequest(name, first_available=subs)


def claim(name: str, *requests: DeviceRequest, constraints=()) -> ResourceClaim:
    return ResourceClaim(name, spec=ClaimSpec(tuple(requests), tuple(constraints)))


def match(attribute: str, *requests: str) -> Constraint:
    return Constraint(requests, match_attribute=attribute)


def distinct(attribute: str, *requests: str) -> Constraint:
    return Constraint(requests, distinct_attribute=attribute)


def result(req: str, driver: str, pool: str, dev: str, consumed=None, admin=False):
    return DeviceResult(req, driver, pool, dev, consumed, admin)


def allocation(selection: NodeSelection | None, *results: DeviceResult) -> ClaimAllocation:
    return ClaimAllocation(tuple(results), selection)


def local(node: str) -> NodeSelection:
    return NodeSelection(node_name=node)


def version(text: str) -> Version:
    return Version(text)


@dataclass
class Case:
    claims: tuple[ResourceClaim, ...] = ()
    classes: tuple[DeviceClass, ...] = ()
    slices: tuple[ResourceSlice, ...] = ()
    node: tuple[str, str] = (NODE1, REGION1)
    allocated: tuple[tuple[str, str, str], ...] = ()
    consumed: dict = field(default_factory=dict)
    expect: tuple[ClaimAllocation, ...] = ()
    error: str = ""
