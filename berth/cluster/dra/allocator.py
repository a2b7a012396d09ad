"""The structured allocator: which devices of one node satisfy all of a pod's claims.

It searches as Kubernetes' ``k8s.io/dynamic-resource-allocation/structured`` allocator does,
so that the same input gives the same devices: claims in order, requests in order, each
device of a request taken from the pools (sorted by driver and pool), slices (by name) and
devices (as listed) after the one before it, backtracking when a later request or claim cannot
be satisfied. ``firstAvailable`` alternatives are tried in order; ``allocationMode: All`` takes
every matching device or fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from berth.api.cel import CelError
from berth.api.dra import (
    ClaimSpec,
    Device,
    DeviceClass,
    ExactRequest,
    NodeSelection,
    ResourceClaim,
    ResourceSlice,
)
from berth.api.schema.dra import ALLOCATION_RESULTS_MAX
from berth.api.selectors import NodeSelectorTerm
from berth.cluster.dra.capacity import NegativeCapacity, add_into, consumption, fits
from berth.cluster.dra.pools import Pool, SliceIndex, gather_pools
from berth.cluster.dra.selection import (
    AllocationError,
    DeviceId,
    DistinctAttribute,
    MatchAttribute,
    SelectorCache,
    blocked_by_taints,
)


@dataclass(slots=True)
class AllocatedState:
    """Devices already allocated to other claims: held whole, or (shared devices) the
    capacity their allocations consume."""

    devices: set[DeviceId] = field(default_factory=set)
    consumed: dict[DeviceId, dict[str, Decimal]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One allocated device: ``request`` is the request's name, or ``request/subrequest``."""

    request: str
    driver: str
    pool: str
    device: str
    #: What the allocation consumes of a shared device's capacities (None: held whole).
    consumed: dict[str, Decimal] | None = None
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    results: tuple[DeviceResult, ...]
    #: Where a pod using the claim can run: the node itself, selector terms, or None (any).
    node_selection: NodeSelection | None = None


@dataclass(slots=True)
class _Entry:
    """A device the node can use, in search order."""

    pool: Pool
    slice: ResourceSlice
    device: Device
    id: DeviceId


@dataclass(slots=True)
class _Request:
    claim: int
    name: str  # the request's name
    sub: str  # the subrequest's name, "" for ``exactly``
    spec: ExactRequest
    device_class: DeviceClass
    count: int = 0
    every: list[int] | None = None  # allocationMode All: the entries to take

    @property
    def result_name(self) -> str:
        return f"{self.name}/{self.sub}" if self.sub else self.name


class _MaxSize(Exception):
    """A subrequest would take a claim past ALLOCATION_RESULTS_MAX devices."""


Claim = ClaimSpec | ResourceClaim


class Allocator:
    """Allocates claims on nodes against one set of slices, classes and allocated devices.
    Build it once for a cluster state; ``allocate`` is then called per node."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass] | Iterable[DeviceClass],
        slices: Sequence[ResourceSlice] | SliceIndex,
        allocated: AllocatedState | None = None,
    ) -> None:
        self.classes = dict(classes) if isinstance(classes, Mapping) else {
            c.name: c for c in classes
        }  # fmt: skip
        self.slices = slices if isinstance(slices, SliceIndex) else SliceIndex(slices)
        self.allocated = allocated or AllocatedState()
        self.selectors = SelectorCache()

    def allocate(
        self, node: str, labels: Mapping[str, str], claims: Sequence[Claim]
    ) -> list[ClaimAllocation] | None:
        """One allocation per claim, or None when this node cannot satisfy them all;
        AllocationError when the claims cannot be allocated as written."""
        return _Search(self, node, dict(labels), claims).run()


class _Search:
    def __init__(
        self, owner: Allocator, node: str, labels: dict[str, str], claims: Sequence[Claim]
    ):
        self.owner = owner
        self.node = node
        self.labels = labels
        self.specs = [c.spec if isinstance(c, ResourceClaim) else c for c in claims]
        self.names = [c.name if isinstance(c, ResourceClaim) else f"#{i}" for i, c in
                      enumerate(claims)]  # fmt: skip
        self.pools = gather_pools(node, labels, owner.slices)
        self.entries = [
            _Entry(pool, item, device, (pool.driver, pool.name, device.name))
            for pool in self.pools
            if not (pool.incomplete or pool.invalid)
            for item, device in pool.devices(node, labels)
        ]
        # (claim, request, subrequest) -> request; subrequest -1 for ``exactly``
        self.requests: dict[tuple[int, int, int], _Request] = {}
        self.chosen: dict[tuple[int, int], int] = {}  # firstAvailable: the subrequest taken
        self.constraints: list[list[MatchAttribute]] = []
        self.selectable: dict[tuple[int, int, int, int], bool] = {}
        self.holding: dict[DeviceId, set[int]] = {}  # devices held whole, by claim
        self.consuming: dict[DeviceId, dict[str, Decimal]] = {}  # shared devices being taken
        self.results: list[list[DeviceResult]] = [[] for _ in self.specs]

    # -- set-up ------------------------------------------------------------------------------

    def run(self) -> list[ClaimAllocation] | None:
        for index, spec in enumerate(self.specs):
            self._prepare(index, spec)
        try:
            done = self._one(0, 0, -1, 0, 0, False)
        except _MaxSize:
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(pool.invalid for pool in self.pools):
                raise AllocationError("invalid resource pools were encountered")
            return None
        return [
            ClaimAllocation(tuple(results), self._node_selection(results))
            for results in self.results
        ]

    def _prepare(self, index: int, spec: ClaimSpec) -> None:
        least = 0
        for number, request in enumerate(spec.requests):
            if request.first_available:
                counts = []
                for sub_index, sub in enumerate(request.first_available):
                    data = self._request(index, request.name, sub.name, sub, (number, sub_index))
                    self.requests[(index, number, sub_index)] = data
                    counts.append(data.count)
                adding = min(counts)
            elif request.exactly is not None:
                data = self._request(index, request.name, "", request.exactly, (number, -1))
                self.requests[(index, number, -1)] = data
                adding = data.count
            else:
                continue
            # Checked request by request, as Kubernetes does: the error names the request
            # that goes past the limit, and requests after it are not looked at.
            if least + adding > ALLOCATION_RESULTS_MAX:
                raise AllocationError(
                    f"claim {self.names[index]}, request {request.name}: adding {adding} devices "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX}, with {least} already "
                    "accounted for"
                )
            least += adding
        constraints: list[MatchAttribute] = []
        for number, c in enumerate(spec.constraints):
            if c.match_attribute:
                constraints.append(MatchAttribute(c.requests, c.match_attribute))
            elif c.distinct_attribute:
                constraints.append(DistinctAttribute(c.requests, c.distinct_attribute))
            else:
                raise AllocationError(
                    f"claim {self.names[index]}, constraint #{number}: empty constraint "
                    "(unsupported constraint type?)"
                )
        self.constraints.append(constraints)

    def _request(
        self, claim: int, name: str, sub: str, spec: ExactRequest, key: tuple[int, int]
    ) -> _Request:
        shown = f"{name}/{sub}" if sub else name
        if not spec.class_name:
            raise AllocationError(
                f"claim {self.names[claim]}, request {shown}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.owner.classes.get(spec.class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {self.names[claim]}, request {shown}: could not retrieve device class "
                f"{spec.class_name}"
            )
        data = _Request(claim, name, sub, spec, device_class)
        if spec.mode == "ExactCount":
            data.count = spec.count
            return data
        if spec.mode != "All":
            raise AllocationError(
                f"claim {self.names[claim]}, request {shown}: unsupported count mode {spec.mode}"
            )
        for pool in self.pools:
            state = "currently being updated" if pool.incomplete else "currently invalid"
            if pool.incomplete or pool.invalid:
                raise AllocationError(
                    f"claim {self.names[claim]}, request {shown}: asks for all devices, but "
                    f"resource pool {pool.key} is {state}"
                )
        every = []
        for at, entry in enumerate(self.entries):
            # Only the device's own capacities decide here, as in Kubernetes: a matching
            # device whose capacity is taken by others stays in, and the request fails.
            if self._selectable((claim, *key), data, at) and self._fits(data, entry, static=True):
                every.append(at)
        data.every = every
        data.count = len(every)
        return data

    # -- device tests ------------------------------------------------------------------------

    def _selectable(self, key: tuple[int, int, int], data: _Request, at: int) -> bool:
        memo = (*key, at)
        known = self.selectable.get(memo)
        if known is not None:
            return known
        entry = self.entries[at]
        verdict = not entry.device.binding_conditions and (
            self._passes(data.device_class.selectors, entry, f"class {data.device_class.name}")
            and self._passes(data.spec.selectors, entry, f"claim {self.names[data.claim]}")
        )
        self.selectable[memo] = verdict
        return verdict

    def _passes(self, expressions: tuple[str, ...], entry: _Entry, owner: str) -> bool:
        for number, expression in enumerate(expressions):
            if not expression.strip():
                raise AllocationError(
                    f"{owner}: selector #{number}: CEL expression empty "
                    "(unsupported selector type?)"
                )
            try:
                if not self.owner.selectors.matches(expression, entry.pool.driver, entry.device):
                    return False
            except CelError as exc:
                device = "/".join(entry.id)
                raise AllocationError(
                    f"{owner}: selector #{number} on device {device}: CEL runtime error: {exc}"
                ) from None
        return True

    def _fits(self, data: _Request, entry: _Entry, static: bool = False) -> bool:
        """Whether the request's capacity fits on the device: on its own capacities only
        (``static``), or beside what others hold and this search is taking."""
        taken: tuple = ()
        if not static:
            taken = (self.owner.allocated.consumed.get(entry.id), self.consuming.get(entry.id))
        try:
            return fits(data.spec.capacity, entry.device.capacity, *taken)
        except NegativeCapacity as exc:
            raise AllocationError(
                f"claim {self.names[data.claim]}, request {data.result_name}: checking capacity "
                f'for device {"/".join(entry.id)}: capacity "{exc}": capacity value is negative'
            ) from None

    def _in_use(self, device: DeviceId) -> bool:
        return device in self.owner.allocated.devices or bool(self.holding.get(device))

    # -- the search --------------------------------------------------------------------------

    def _one(self, claim: int, request: int, sub: int, device: int, start: int, in_sub: bool):
        if claim >= len(self.specs):
            return True
        spec = self.specs[claim]
        if request >= len(spec.requests):
            try:
                return self._one(claim + 1, 0, -1, 0, 0, False)
            except _MaxSize:
                return False
        if not in_sub and spec.requests[request].first_available:
            exceeded = True
            for sub_index in range(len(spec.requests[request].first_available)):
                try:
                    done = self._one(claim, request, sub_index, 0, 0, True)
                except _MaxSize:
                    continue
                exceeded = False
                if done:
                    self.chosen[(claim, request)] = sub_index
                    return True
            if exceeded:
                raise _MaxSize
            return False
        key = (claim, request, sub)
        data = self.requests[key]
        if data.every is not None and not data.every:
            return False
        if device >= data.count:
            return self._one(claim, request + 1, -1, 0, 0, False)
        if len(self.results[claim]) + data.count - device > ALLOCATION_RESULTS_MAX:
            raise _MaxSize
        if data.every is not None:
            undo = self._take(data, self.entries[data.every[device]], must=True)
            if undo is None:
                return False
            return self._next(undo, claim, request, sub, device + 1, 0, in_sub)
        admin = data.spec.admin_access
        for at in range(start, len(self.entries)):
            entry = self.entries[at]
            if admin:
                if claim in self.holding.get(entry.id, ()):
                    continue
            elif self._in_use(entry.id):
                continue
            if not self._selectable(key, data, at) or not self._fits(data, entry):
                continue
            undo = self._take(data, entry, must=False)
            if undo is None:
                continue
            if self._next(undo, claim, request, sub, device + 1, at + 1, in_sub):
                return True
        return False

    def _next(self, undo, *where) -> bool:
        """Search on from ``where`` with a device just taken; on failure the device is given
        back (also when the claim limit unwinds the search, so that a shorter alternative
        tried next starts from the state it expects)."""
        try:
            found = self._one(*where)
        except _MaxSize:
            undo()
            raise
        if not found:
            undo()
        return found

    def _take(self, data: _Request, entry: _Entry, must: bool):
        """Allocate ``entry`` to the request: the way to undo it, or None when it cannot be."""
        claim, device = data.claim, entry.device
        shared = device.allow_multiple_allocations
        if data.spec.admin_access:
            if not shared and claim in self.holding.get(entry.id, ()):
                return None
        elif self._in_use(entry.id):
            return None
        if device.consumes_counters:  # partitionable devices are not modelled
            return None
        if blocked_by_taints(device, data.spec):
            return None
        constraints = self.constraints[claim]
        for index, constraint in enumerate(constraints):
            if not constraint.add(data.name, data.sub, device, entry.pool.driver):
                if must:
                    raise AllocationError(
                        f"claim {self.names[claim]}, request {data.result_name}: cannot add "
                        f"device {'/'.join(entry.id)} because a claim constraint would not be "
                        "satisfied"
                    )
                for before in constraints[:index]:
                    before.remove(data.name, data.sub)
                return None
        if not self._fits(data, entry):
            for constraint in constraints:
                constraint.remove(data.name, data.sub)
            return None
        consumed = None
        if shared:
            consumed = consumption(data.spec.capacity, device.capacity)
            add_into(self.consuming.setdefault(entry.id, {}), consumed)
        else:
            self.holding.setdefault(entry.id, set()).add(claim)
        pool, name = entry.pool, device.name
        result = DeviceResult(
            data.result_name, pool.driver, pool.name, name, consumed or None, data.spec.admin_access
        )
        self.results[claim].append(result)

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(data.name, data.sub)
            if consumed is not None:
                add_into(self.consuming[entry.id], consumed, -1)
            else:
                self.holding[entry.id].discard(claim)
            self.results[claim].pop()

        return undo

    def _node_selection(self, results: list[DeviceResult]) -> NodeSelection | None:
        """Where a pod with these devices can run, as Kubernetes writes it into the claim's
        allocation: the node itself if any device is local to it, else the requirements of
        the slices' node selectors together, else None (network-attached for all nodes)."""
        by_id = {entry.id: entry for entry in self.entries}
        expressions: list = []
        fields: list = []
        for result in results:
            entry = by_id[(result.driver, result.pool, result.device)]
            selection = entry.device.selection if entry.slice.per_device_node_selection else (
                entry.slice.selection
            )  # fmt: skip
            if selection is None:
                continue
            if selection.node_name:
                return NodeSelection(node_name=self.node)
            if selection.terms:
                if len(selection.terms) > 1:
                    raise AllocationError(
                        f"unsupported node selector with {len(selection.terms)} terms"
                    )
                for req in selection.terms[0].expressions:
                    if req not in expressions:
                        expressions.append(req)
                for req in selection.terms[0].fields:
                    if req not in fields:
                        fields.append(req)
        if expressions or fields:
            return NodeSelection(terms=(NodeSelectorTerm(tuple(expressions), tuple(fields)),))
        return None
