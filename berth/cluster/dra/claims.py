"""The cluster's ResourceClaims as the scheduler keeps them: which are allocated, to which
devices, and reserved for which pods.

A pod's ``spec.resourceClaims`` entry names a ResourceClaim (shared: any number of pods may
reference it) or a ResourceClaimTemplate (a claim of the pod's own, named as Kubernetes'
resourceclaim controller names it: ``<pod>-<entry>-<five characters>``). A claim is allocated
when the first pod using it is placed, reserved for each pod placed with it (``reservedFor``),
and freed when the last of them leaves its node (ended, failed, evicted, or a placement undone);
a template's claim goes with its pod.

``DraState.bind`` takes the devices (the allocator's choice, or the GPU devices berth's
placement plugins chose when they satisfy the claims), ``unbind`` gives them back and returns
what is needed to restore them exactly (an eviction undone).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from berth.api.dra import (
    ClaimSpec,
    DeviceClass,
    NodeSelection,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from berth.cluster.devices import GpuAsk, Placement
from berth.cluster.dra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    ClaimAllocation,
    DeviceResult,
)
from berth.cluster.dra.capacity import add_into
from berth.cluster.dra.inventory import Inventory, kind_of
from berth.cluster.dra.pools import SliceIndex
from berth.resources import GPU

#: Set on a pod once its DRA GPUs are counted into its ``nvidia.com/gpu`` request: how many.
DRA_GPUS_ANNOTATION = "berth.io/dra-gpus"
#: The characters Kubernetes' generated names end with (no vowels, no look-alikes).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: A generated name's base is cut so that the whole name stays within 63 characters.
_MAX_BASE = 57


def template_claim_name(pod: str, entry: str, salt: str = "") -> str:
    """``<pod>-<entry>-<suffix>``, both parts cut in proportion to their length when the base
    would pass 57 characters, as Kubernetes' resourceclaim controller cuts them. The suffix is
    derived from the pod (Kubernetes draws it at random), so runs repeat."""
    base = f"{pod}-{entry}-"
    if len(base) > _MAX_BASE:
        cut = len(base)
        base = f"{pod[: len(pod) * _MAX_BASE // cut]}-{entry[: len(entry) * _MAX_BASE // cut]}"
    digest = hashlib.sha256(f"{salt}/{pod}/{entry}".encode()).digest()
    return base + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


@dataclass(slots=True)
class Claim:
    namespace: str
    name: str
    spec: ClaimSpec
    template: str = ""  # the ResourceClaimTemplate it was made from
    allocation: ClaimAllocation | None = None
    row: int = -1  # the node it was allocated on
    reserved_for: dict[str, None] = field(default_factory=dict)  # pod keys, in order

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class Released:
    """What a pod's unbind gave back: per claim, whether it was the claim's last holder (the
    allocation was freed) and the allocation, to restore exactly."""

    claims: list[tuple[Claim, ClaimAllocation | None, int]]


@dataclass(slots=True)
class ClaimTotals:
    allocated: int = 0  # claims allocated over the run
    from_templates: int = 0
    devices: int = 0  # devices allocated over the run
    shared_reservations: int = 0  # pods placed on a claim another pod already held
    held_now: int = 0
    peak_held: int = 0


class DraState:
    def __init__(
        self,
        objects: list[object],
        names: list[str],
        labels_of: Callable[[int], dict[str, str]],
        touched: Callable[[int], None],
        *,
        gpus: bool = True,
    ) -> None:
        self.classes: dict[str, DeviceClass] = {
            o.name: o for o in objects if isinstance(o, DeviceClass)
        }
        self.templates: dict[tuple[str, str], ResourceClaimTemplate] = {
            (o.namespace, o.name): o for o in objects if isinstance(o, ResourceClaimTemplate)
        }
        self.claims: dict[str, Claim] = {
            f"{o.namespace}/{o.name}": Claim(o.namespace, o.name, o.spec)
            for o in objects
            if isinstance(o, ResourceClaim)
        }
        slices = SliceIndex([o for o in objects if isinstance(o, ResourceSlice)])
        self.allocated = AllocatedState()
        self.allocator = Allocator(self.classes, slices, self.allocated)
        self.inventory = Inventory(self.classes, slices, self.allocator.selectors, gpus)
        self.names = names
        self.labels_of = labels_of
        self.touched = touched
        #: Bumped whenever a shared claim is allocated or freed: where its pods may go changes.
        self.epoch = 0
        self.totals = ClaimTotals()
        #: The claims of each pod placed, by pod key (until it leaves).
        self.placed: dict[str, list[Claim]] = {}
        #: The name of the claim a template entry of a pod has (None: not made yet). Unset,
        #: the claim is named as Kubernetes' resourceclaim controller names it; on a live
        #: cluster that controller makes it and the pod's status says its name.
        self.claim_name: Callable[[object, PodClaim], str | None] | None = None
        #: Whether binding a pod whose claims cannot be had is an error. Not on a live cluster,
        #: where a pod another scheduler bound may come before its claims' allocations: its
        #: claims are then left to the books rebuilt from the API.
        self.strict = True

    # -- a pod's claims ----------------------------------------------------------------------

    def pod_claims(self, pod) -> list[Claim] | str:
        """The pod's claims (a template's claim made now if it is not yet), or why they cannot
        be had."""
        placed = self.placed.get(pod.key)
        if placed is not None:
            return placed
        out = []
        for entry in pod.resource_claims:
            out.append(self._claim(pod, entry))
            if isinstance(out[-1], str):
                return out[-1]
        return out

    def _claim(self, pod, entry: PodClaim) -> Claim | str:
        if entry.claim_name:
            claim = self.claims.get(f"{pod.namespace}/{entry.claim_name}")
            return claim or f"resourceclaim {entry.claim_name!r} not found"
        template = self.templates.get((pod.namespace, entry.template_name))
        if template is None:
            return f"resourceclaimtemplate {entry.template_name!r} not found"
        if self.claim_name is None:
            name = template_claim_name(pod.name, entry.name, pod.namespace)
        else:
            made = self.claim_name(pod, entry)
            if made is None:
                return (f"waiting for the resourceclaim of entry {entry.name!r} (template "
                        f"{entry.template_name!r}) to be created")  # fmt: skip
            name = made
        claim = self.claims.get(f"{pod.namespace}/{name}")
        if claim is None:
            claim = Claim(pod.namespace, name, template.spec, template=template.name)
        return claim

    def gpus_asked(self, pod) -> int:
        """Whole GPUs the pod's own (template) claims take, when they are plain: ExactCount
        requests of a kind whose devices are all GPUs (a ``firstAvailable`` request whose
        alternatives all are, with one count). 0 when anything else is asked."""
        total = 0
        for entry in pod.resource_claims:
            if entry.claim_name:
                continue
            template = self.templates.get((pod.namespace, entry.template_name))
            if template is None:
                return 0
            for request in template.spec.requests:
                options = request.first_available or (
                    (request.exactly,) if request.exactly is not None else ()
                )
                counts = set()
                for option in options:
                    kind = self.inventory.kind(kind_of(option))
                    if kind is None or not kind.gpu or option.mode != "ExactCount":
                        return 0
                    if option.admin_access or option.capacity:
                        return 0
                    counts.add(option.count)
                if len(counts) != 1:
                    return 0
                total += counts.pop()
        return total

    def map_pod(self, pod) -> None:
        """Count the whole GPUs the pod's own claims take (``gpus_asked``) into its
        ``nvidia.com/gpu`` request, once: berth's GPU filters, placement scorers and
        fragmentation metrics then see them as they see device-plugin GPUs."""
        if DRA_GPUS_ANNOTATION in pod.annotations:
            return
        count = self.gpus_asked(pod)
        pod.annotations = {**pod.annotations, DRA_GPUS_ANNOTATION: str(count)}
        if count:
            requests = dict(pod.requests)
            requests[GPU] = requests.get(GPU, 0) + count * 1000
            pod.requests = requests

    # -- placing -----------------------------------------------------------------------------

    def allocate(self, row: int, claims: list[Claim]) -> list[ClaimAllocation] | None:
        """Allocations for the claims not allocated yet, on ``row``; None when it cannot."""
        todo = [c for c in claims if c.allocation is None]
        if not todo:
            return []
        try:
            return self.allocator.allocate(self.names[row], self.labels_of(row),
                                           [c.spec for c in todo])  # fmt: skip
        except AllocationError:
            return None

    def fits_allocated(self, row: int, claim: Claim) -> bool:
        """Whether a pod using the already allocated ``claim`` may run on ``row``."""
        selection = claim.allocation.node_selection if claim.allocation else None
        if selection is None:
            return True
        return _selects(selection, self.names[row], self.labels_of(row))

    def bind(
        self, pod, row: int, gpu_columns: list[int] | None, restore: Released | None
    ) -> list[int]:
        """Reserve the pod's claims on ``row``, allocating those not allocated yet; returns the
        GPU device columns its own claims' devices are (for berth's GPU table)."""
        if restore is not None:
            for claim, allocation, was_row in restore.claims:
                if allocation is not None:
                    self._take(claim, allocation, was_row)
                claim.reserved_for[pod.key] = None
            self.placed[pod.key] = [c for c, _, _ in restore.claims]
            return self._gpu_columns(pod, row)
        claims = self.pod_claims(pod)
        if isinstance(claims, str):
            if not self.strict:
                return []
            raise ValueError(f"pod {pod.key}: {claims}")
        todo = [c for c in claims if c.allocation is None]
        allocations = None
        if todo and all(c.template for c in todo):
            allocations = self._from_columns(row, todo, gpu_columns)
        if allocations is None:
            allocations = self.allocate(row, claims)
        if allocations is None:
            if not self.strict:
                return []
            raise ValueError(f"pod {pod.key}: its resource claims cannot be allocated on "
                             f"{self.names[row]}")  # fmt: skip
        for claim, allocation in zip(todo, allocations, strict=True):
            self._take(claim, allocation, row)
            self.totals.allocated += 1
            self.totals.from_templates += bool(claim.template)
            self.totals.devices += len(allocation.results)
        for claim in claims:
            if claim.reserved_for and claim not in todo:
                self.totals.shared_reservations += 1
            claim.reserved_for[pod.key] = None
        self.placed[pod.key] = claims
        return self._gpu_columns(pod, row)

    def bind_devices(
        self,
        pod,
        row: int,
        ask: GpuAsk | None,
        devices: np.ndarray | Placement | None,
        restore: Released | None,
    ) -> np.ndarray | Placement | None:
        """``bind``, for ClusterState's bind of a pod asking ``ask`` of the GPU table with
        ``devices`` (indices, a Placement to restore, or None: best fit): the GPU devices its
        own claims took, where they are all it asks of the table; else ``devices``."""
        restoring = isinstance(devices, Placement)
        hint = None if devices is None or restoring else [int(d) for d in devices]
        columns = self.bind(pod, row, hint, restore)
        if restoring or not columns:
            return devices
        if ask is None or ask.share or ask.whole != len(columns):
            return devices
        return np.array(columns, dtype=np.intp)

    def unbind(self, pod) -> Released:
        claims = self.placed.pop(pod.key, None)
        out = Released([])
        if claims is None:
            return out
        for claim in claims:
            if pod.key not in claim.reserved_for:
                continue
            del claim.reserved_for[pod.key]
            if claim.reserved_for or claim.allocation is None:
                out.claims.append((claim, None, claim.row))
                continue
            allocation, row = claim.allocation, claim.row
            self._give_back(claim)
            out.claims.append((claim, allocation, row))
        return out

    def holds(self, pod) -> list[tuple[Claim, DeviceResult]]:
        """The devices the pod's claims hold, claim by claim."""
        claims = self.pod_claims(pod)
        if isinstance(claims, str):
            return []
        return [(c, r) for c in claims if c.allocation for r in c.allocation.results]

    def devices_text(self, pod, row: int) -> str:
        """The pod's DRA devices for pods.csv: ``device`` when its pool is the node's name,
        else ``pool/device``; a share of a shared device as ``device:15Gi``-style amounts are
        not written, only the device."""
        node = self.names[row]
        names = []
        for _, result in self.holds(pod):
            name = result.device if result.pool == node else f"{result.pool}/{result.device}"
            if name not in names:
                names.append(name)
        return ",".join(names)

    def restore(
        self, claim: Claim, allocation: ClaimAllocation, row: int, reserved: list[str]
    ) -> None:
        """An allocation made before (a live cluster's, read back after a restart): its
        devices are taken and its reservations kept."""
        self._take(claim, allocation, row)
        for key in reserved:
            claim.reserved_for[key] = None

    # -- bookkeeping -------------------------------------------------------------------------

    def _take(self, claim: Claim, allocation: ClaimAllocation, row: int) -> None:
        claim.allocation, claim.row = allocation, row
        self.claims[claim.key] = claim
        for result in allocation.results:
            ident = (result.driver, result.pool, result.device)
            if result.admin_access:
                continue
            if result.consumed is not None:
                add_into(self.allocated.consumed.setdefault(ident, {}), result.consumed)
                for at in self.inventory.by_id.get(ident, ()):
                    self.touched(int(self.inventory.row[at]))
            else:
                self.allocated.devices.add(ident)
                self.inventory.hold(ident, 1, self.touched)
        self.totals.held_now += len(allocation.results)
        self.totals.peak_held = max(self.totals.peak_held, self.totals.held_now)
        if not claim.template:
            self.epoch += 1

    def _give_back(self, claim: Claim) -> None:
        allocation = claim.allocation
        assert allocation is not None
        for result in allocation.results:
            ident = (result.driver, result.pool, result.device)
            if result.admin_access:
                continue
            if result.consumed is not None:
                add_into(self.allocated.consumed[ident], result.consumed, -1)
                for at in self.inventory.by_id.get(ident, ()):
                    self.touched(int(self.inventory.row[at]))
            else:
                self.allocated.devices.discard(ident)
                self.inventory.hold(ident, -1, self.touched)
        self.totals.held_now -= len(allocation.results)
        claim.allocation, claim.row = None, -1
        if claim.template:
            self.claims.pop(claim.key, None)
        else:
            self.epoch += 1

    def _from_columns(
        self, row: int, claims: list[Claim], columns: list[int] | None
    ) -> list[ClaimAllocation] | None:
        """The claims allocated on the GPU devices at ``columns`` (the placement plugins'
        choice), or (``columns`` None) on the first free matching devices in search order, as
        the allocator would take them, when the claims are plain requests (ExactCount, no
        constraints, kinds whose counts are exact); else None."""
        inventory = self.inventory
        if columns is not None:
            by_column = {int(inventory.gpu_column[at]): at for at in inventory.gpus_on_row[row]}
            given = [by_column.get(c, -1) for c in columns]
            if any(at < 0 or inventory.held[at] for at in given):
                return None
        taken: set[int] = set()
        node = NodeSelection(node_name=self.names[row])
        out = []
        for claim in claims:
            if claim.spec.constraints:
                return None
            results = []
            for request in claim.spec.requests:
                option = request.exactly
                if option is None or option.mode != "ExactCount" or option.tolerations:
                    return None
                if option.admin_access or option.capacity:
                    return None
                counts = inventory.kind(kind_of(option))
                if counts is None or not counts.exact:
                    return None
                for _ in range(option.count):
                    if columns is not None:
                        if not given or not counts.match[given[0]]:
                            return None
                        at = given.pop(0)
                    else:
                        at = next((a for a in inventory.on_row[row] if counts.match[a]
                                   and not inventory.held[a] and a not in taken), -1)  # fmt: skip
                        if at < 0:
                            return None
                    taken.add(at)
                    driver, pool, device = inventory.ids[at]
                    results.append(DeviceResult(request.name, driver, pool, device))
            out.append(ClaimAllocation(tuple(results), node))
        if columns is not None and given:
            return None
        return out

    def _gpu_columns(self, pod, row: int) -> list[int]:
        columns = []
        for claim, result in self.holds(pod):
            if claim.template:
                at = self.inventory.entry(row, (result.driver, result.pool, result.device))
                if at >= 0 and self.inventory.gpu_column[at] >= 0:
                    columns.append(int(self.inventory.gpu_column[at]))
        return columns


def _selects(selection: NodeSelection, node: str, labels: Mapping[str, str]) -> bool:
    return selection.matches(node, dict(labels))
