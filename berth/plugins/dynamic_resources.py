"""dynamic-resources: a pod with DRA claims (``spec.resourceClaims``) goes only where they can
be allocated, as kube-scheduler's DynamicResources filter decides.

The framework adds it to every configuration; it is relevant only to pods with claims. Per
pod class it plans once what its claims need: for each request not allocated yet, how many
devices of which kind (class and selectors) it takes, and for claims already allocated (a
ResourceClaim shared with pods placed before) which nodes their allocation allows. The filter
then compares, as arrays over the node rows, each kind's free matching devices with what is
asked (``berth.cluster.dra.inventory``). When those counts decide exactly (plain requests of
whole, untainted devices, kinds that never share a device) that is the answer; otherwise the
structured allocator runs on the rows that passed the counts, one by one.

A class whose claims are all the pod's own (templates) is local: a node's answer depends on its
own devices, and taking or freeing a device logs the rows that reach it. A class with a shared
claim is evaluated afresh, since allocating that claim for one pod moves where the others may go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from berth.api.dra import ExactRequest
from berth.cluster.dra.inventory import Kind, kind_of
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_count, row_index
from berth.framework.podclass import PodClass

if TYPE_CHECKING:
    from berth.cluster.dra.claims import Claim


@dataclass(slots=True)
class _Plan:
    epoch: int
    claims: list[Claim] | str  # or why they cannot be had
    #: One entry per request to allocate: its alternatives as (kind, devices asked).
    terms: list[list[tuple[Kind, int]]] = field(default_factory=list)
    allocated: list[Claim] = field(default_factory=list)  # shared claims allocated already
    exact: bool = True  # the counts decide (no allocator run needed)
    shared: bool = False  # a ResourceClaim (not a template's) among the claims


def _option_plain(option: ExactRequest) -> bool:
    return (
        option.mode == "ExactCount"
        and not option.admin_access
        and not option.capacity
        and not option.tolerations
    )


class DynamicResources(Plugin):
    name = "dynamic-resources"
    reason = "cannot allocate all claims"
    checks_free_capacity = True  # evicting the pods holding devices frees them

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "filter" and bool(cls.pod.resource_claims)

    def is_local(self, cls: PodClass) -> bool:
        return not any(entry.claim_name for entry in cls.pod.resource_claims)

    def _plan(self, cls: PodClass, state: ClusterState) -> _Plan | None:
        dra = state.dra
        if dra is None:
            return None
        plan = cls.static.get(self.name)
        if plan is not None and (not plan.shared or plan.epoch == dra.epoch):
            return plan
        from berth.cluster.dra.claims import Claim  # (loaded with the state's DRA objects)

        claims = dra.pod_claims(cls.pod)
        if not isinstance(claims, str):
            # A template's claim as its spec alone: the class's pod may be placed meanwhile,
            # and the plan serves the class's other pods.
            claims = [Claim(c.namespace, c.name, c.spec, c.template) if c.template else c
                      for c in claims]  # fmt: skip
        plan = _Plan(dra.epoch, claims)
        cls.static[self.name] = plan
        if isinstance(claims, str):
            return plan
        plan.shared = any(not c.template for c in claims)
        kinds: list[Kind] = []
        for claim in claims:
            if claim.allocation is not None:
                plan.allocated.append(claim)
                continue
            if claim.spec.constraints:
                plan.exact = False
            for request in claim.spec.requests:
                if request.exactly is not None:
                    options: tuple[ExactRequest, ...] = (request.exactly,)
                else:
                    options = request.first_available
                    plan.exact = False
                term = []
                for option in options:
                    counts = dra.inventory.kind(kind_of(option))
                    if counts is None or not counts.exact or not _option_plain(option):
                        plan.exact = False
                    if option.mode == "ExactCount" and not option.admin_access:
                        term.append((kind_of(option), option.count))
                    else:
                        term = []  # All, adminAccess: no count to test
                        break
                    kinds.append(kind_of(option))
                if term:
                    plan.terms.append(term)
        plan.exact = plan.exact and _disjoint(state, sorted(set(kinds)))
        return plan

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        plan = self._plan(cls, state)
        if plan is None or isinstance(plan.claims, str):
            return np.zeros(len(idx), dtype=bool)
        dra = state.dra
        assert dra is not None
        mask = np.ones(len(idx), dtype=bool)
        needs: dict[Kind, int] = {}
        for term in plan.terms:
            if len(term) == 1:
                kind, count = term[0]
                needs[kind] = needs.get(kind, 0) + count
                continue
            ok = np.zeros(len(idx), dtype=bool)
            for kind, count in term:
                ok |= dra.inventory.free_counts(kind, idx) >= count
            mask &= ok
        for kind, count in needs.items():
            mask &= dra.inventory.free_counts(kind, idx) >= count
        for claim in plan.allocated:
            selection = claim.allocation.node_selection if claim.allocation else None
            if selection is None:
                continue
            if selection.node_name:
                mask &= idx == state.rows.get(selection.node_name, -1)
            else:
                for at in np.flatnonzero(mask):
                    mask[at] = dra.fits_allocated(int(idx[at]), claim)
        if plan.exact or len(plan.allocated) == len(plan.claims):
            return mask
        for at in np.flatnonzero(mask):  # candidates only: the exact allocator
            mask[at] = dra.allocate(int(idx[at]), plan.claims) is not None
        return mask

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        """A pod whose claims cannot be had anywhere (a claim not made yet, a DeviceClass
        that does not exist) says so, rather than that no node could allocate them."""
        plan = self._plan(cls, state)
        why = plan.claims if plan is not None and isinstance(plan.claims, str) else None
        if plan is not None and why is None and state.dra is not None:
            why = _missing_class(plan, state.dra.classes)
        if why is None:
            return super().explain(cls, state, rows)
        count = row_count(state, rows)
        return [(why, np.ones(count, dtype=bool))]


def _missing_class(plan: _Plan, classes: dict) -> str | None:
    """The first DeviceClass the plan's unallocated requests name that does not exist."""
    assert not isinstance(plan.claims, str)
    for claim in plan.claims:
        if claim.allocation is not None:
            continue
        for request in claim.spec.requests:
            options = (request.exactly,) if request.exactly else request.first_available
            for option in options:
                if option.class_name not in classes:
                    return (f"resourceclaim {claim.name}: request {request.name}: deviceclass "
                            f"{option.class_name!r} not found")  # fmt: skip
    return None


def _disjoint(state: ClusterState, kinds: list[Kind]) -> bool:
    """Whether no device matches two of ``kinds`` (then counting each kind alone is exact)."""
    if len(kinds) < 2:
        return True
    assert state.dra is not None
    seen = None
    for kind in kinds:
        counts = state.dra.inventory.kind(kind)
        if counts is None:
            return False
        if seen is not None and (seen & counts.match).any():
            return False
        seen = counts.match.copy() if seen is None else seen | counts.match
    return True
