"""Dynamic Resource Allocation on a live cluster: the scheduler's DRA books kept from the API's
ResourceSlices, DeviceClasses, ResourceClaimTemplates and ResourceClaims, and the claims' status
written as kube-scheduler's DynamicResources plugin writes it.

The API is the truth about which devices are taken: whenever a DRA object (or a pod with claims)
changed, the books are rebuilt before the next cycle from the objects and from every claim's
``status.allocation`` and ``status.reservedFor``, so a claim allocated by anyone (kube-scheduler,
or berth before a restart) keeps its devices and none is handed out twice. Claims made from a
pod's ResourceClaimTemplate are made by kube-controller-manager's resourceclaim controller,
which names them at random and records the name in the pod's ``status.resourceClaimStatuses``:
a pod waits, saying so, until its claims exist.

Before a pod with claims is bound (kube-scheduler's PreBind), each of its claims not reserved for
it gets the allocation berth chose (after the ``resource.kubernetes.io/delete-protection``
finalizer, as kube-scheduler adds it) and the pod in ``reservedFor``. Freeing is the resourceclaim
controller's: when a pod is gone or done it drops the pod from ``reservedFor``, clears the
allocation of a claim nobody reserves, and deletes a template's claim. berth frees claims itself
in two cases only: a bind that failed (its reservations undone, as kube-scheduler's Unreserve
does), and a preemption victim, whose claims are released when it is evicted so that the
preemptor, whose bind waits for the victims to leave, takes their devices (kube-scheduler does
not preempt for DRA devices).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from berth.api.dra import NodeSelection, PodClaim, ResourceClaim, quantity
from berth.api.objects import Node, Pod
from berth.api.selectors import NodeSelectorTerm, Requirement
from berth.cluster.dra.allocator import ClaimAllocation, DeviceResult
from berth.framework.scheduler import Scheduler
from berth.k8s.cache import CONFLICT_RETRIES, KubeStore
from berth.k8s.client import ApiError, ConnectionLost
from berth.k8s.kinds import DRA_KINDS, RESOURCE_CLAIM
from berth.resources import GPU
from berth.store import NotFound, WatchEvent

log = logging.getLogger("berth.k8s")

#: The finalizer kube-scheduler puts on a claim it allocates; the resourceclaim controller
#: clears the allocation of a claim carrying it once no pod reserves it.
FINALIZER = "resource.kubernetes.io/delete-protection"
_NODE_NAME = "metadata.name"


class ClaimWriteError(RuntimeError):
    """A claim's status could not be written (gone, allocated by someone else meanwhile)."""


# -- the API's allocation ↔ berth's --------------------------------------------------------------


def _terms_body(terms: tuple[NodeSelectorTerm, ...]) -> list[dict[str, Any]]:
    out = []
    for term in terms:
        body: dict[str, Any] = {}
        if term.expressions:
            body["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, **({"values": list(r.values)}
                                                          if r.values else {})}
                for r in term.expressions
            ]  # fmt: skip
        if term.fields:
            body["matchFields"] = [
                {"key": r.key, "operator": r.operator, "values": list(r.values)}
                for r in term.fields
            ]
        out.append(body)
    return out


def allocation_body(allocation: ClaimAllocation) -> dict[str, Any]:
    """``status.allocation`` as kube-scheduler writes it: the devices, and the nodes that may
    use them (the node itself as a ``metadata.name`` field selector; none for every node)."""
    results = []
    for result in allocation.results:
        item: dict[str, Any] = {
            "request": result.request,
            "driver": result.driver,
            "pool": result.pool,
            "device": result.device,
        }
        if result.admin_access:
            item["adminAccess"] = True
        if result.consumed is not None:
            item["consumedCapacity"] = {k: str(v) for k, v in result.consumed.items()}
        results.append(item)
    body: dict[str, Any] = {"devices": {"results": results}}
    selection = allocation.node_selection
    if selection is not None and selection.node_name:
        requirement = {"key": _NODE_NAME, "operator": "In", "values": [selection.node_name]}
        body["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [requirement]}]}
    elif selection is not None and selection.terms is not None:
        body["nodeSelector"] = {"nodeSelectorTerms": _terms_body(selection.terms)}
    return body


def _requirements(items: list[dict[str, Any]]) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(str(r.get("key")), str(r.get("operator")), tuple(r.get("values") or ()))
        for r in items
    )


def _consumed(amounts: Any) -> dict[str, Decimal] | None:
    if not isinstance(amounts, dict) or not amounts:
        return None
    return {str(name): quantity(value) for name, value in amounts.items()}


def read_allocation(raw: dict[str, Any]) -> ClaimAllocation | None:
    """A claim's ``status.allocation`` as berth keeps it (None: not allocated)."""
    allocation = (raw.get("status") or {}).get("allocation")
    if not allocation:
        return None
    results = tuple(
        DeviceResult(
            str(r.get("request")),
            str(r.get("driver")),
            str(r.get("pool")),
            str(r.get("device")),
            consumed=_consumed(r.get("consumedCapacity")),
            admin_access=bool(r.get("adminAccess")),
        )
        for r in (allocation.get("devices") or {}).get("results") or []
    )
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")
    if not terms:
        return ClaimAllocation(results, NodeSelection(all_nodes=True))
    fields = terms[0].get("matchFields") or []
    single = (
        len(terms) == 1
        and not terms[0].get("matchExpressions")
        and len(fields) == 1
        and fields[0].get("key") == _NODE_NAME
        and fields[0].get("operator") == "In"
        and len(fields[0].get("values") or ()) == 1
    )
    if single:
        return ClaimAllocation(results, NodeSelection(node_name=fields[0]["values"][0]))
    selection = NodeSelection(
        terms=tuple(
            NodeSelectorTerm(
                _requirements(t.get("matchExpressions") or []),
                _requirements(t.get("matchFields") or []),
            )
            for t in terms
        )
    )
    return ClaimAllocation(results, selection)


def reserved_pods(raw: dict[str, Any]) -> list[str]:
    """The keys of the pods a claim is reserved for."""
    namespace = (raw.get("metadata") or {}).get("namespace")
    return [
        f"{namespace}/{r.get('name')}"
        for r in (raw.get("status") or {}).get("reservedFor") or []
        if r.get("resource") == "pods" and not r.get("apiGroup")
    ]


def _owning_pod(raw: dict[str, Any]) -> str:
    """The pod a claim was made for from its template (its controlling owner), or ""."""
    for owner in (raw.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") and (owner.get("apiVersion"), owner.get("kind")) == (
            "v1",
            "Pod",
        ):
            return str(owner.get("name") or "")
    return ""


def _reserves(reference: dict[str, Any], pod: Pod, uid: str) -> bool:
    if reference.get("resource") != "pods":
        return False
    if uid and reference.get("uid"):
        return reference.get("uid") == uid
    return reference.get("name") == pod.name


# -- the books -----------------------------------------------------------------------------------


class LiveClaims:
    """The scheduler's DRA state on a live cluster, and the claim writes around binds."""

    def __init__(
        self,
        store: KubeStore,
        scheduler: Scheduler,
        changed: Callable[[], None],
        placed: Callable[[], dict[str, str]],
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self._changed = changed
        self._placed = placed  # the pods on nodes, by key
        #: Whether the books must be rebuilt from the API before the next cycle, and whether
        #: a slice, class or template changed since they were built.
        self.stale = False
        self.devices_changed = False
        #: Whether a pod with claims was seen: the books then exist even with no DRA object,
        #: so such a pod waits for what it names rather than being placed without it.
        self.claims_seen = False
        for kind in sorted(DRA_KINDS):
            store.watch(kind, self._on_object)
        store.watch("Pod", self._on_pod)
        # Before the scheduler hears of a node's update: its DRA GPUs are counted in.
        store.watch("Node", self._on_node)

    def _on_object(self, event: WatchEvent, obj: Any) -> None:
        self.stale = True
        if not isinstance(obj, ResourceClaim):
            self.devices_changed = True
        self._changed()

    def _on_node(self, event: WatchEvent, node: Node) -> None:
        state = self.scheduler.state
        row = state.rows.get(node.name)
        extra = state.dra_gpus.get(row, 0) if row is not None else 0
        if event == WatchEvent.MODIFIED and extra:
            allocatable = dict(node.allocatable)
            allocatable[GPU] = allocatable.get(GPU, 0) + extra * 1000
            node.allocatable = allocatable

    def _on_pod(self, event: WatchEvent, pod: Pod) -> None:
        # A pod with claims arrived, was bound (maybe by another scheduler), was told the names
        # of its template's claims, or left: the books follow the API's claims.
        if not pod.resource_claims:
            return
        self.claims_seen = True
        if self.devices_changed and event == WatchEvent.ADDED:
            # Before the scheduler queues it: the DRA GPUs its claims ask are counted against
            # the devices as they are now.
            self.refresh()
        self.stale = True
        self._changed()

    # ------------------------------------------------------------------ rebuilding

    def claim_name(self, pod: Any, entry: PodClaim) -> str | None:
        """The claim the resourceclaim controller made for a template entry of ``pod``, once
        the pod's status names it and berth has it; None before."""
        raw = self.store.raw("Pod", pod.key) or {}
        for status in (raw.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == entry.name and status.get("resourceClaimName"):
                name = str(status["resourceClaimName"])
                if self.store.raw("ResourceClaim", f"{pod.namespace}/{name}") is None:
                    return None
                return name
        return None

    def refresh(self) -> None:
        """Rebuild the books from the API's DRA objects when something changed."""
        if not self.stale:
            return
        self.stale = self.devices_changed = False
        objects = [obj for kind in sorted(DRA_KINDS) for obj in self.store.list(kind)]
        state = self.scheduler.state
        if not objects and state.dra is None and not self.claims_seen:
            return
        try:
            self.scheduler.set_dra(objects)
        except ValueError as exc:  # a node's DRA GPUs changed while pods hold its GPUs
            log.warning("DRA objects not all taken", extra={"error": str(exc)})
        dra = state.dra
        assert dra is not None
        dra.claim_name = self.claim_name
        dra.strict = False
        for claim in list(dra.claims.values()):
            raw = self.store.raw("ResourceClaim", claim.key) or {}
            owner = _owning_pod(raw)
            if owner:
                claim.template = owner  # a pod's own claim: freed with it
            allocation = read_allocation(raw)
            if allocation is None:
                continue
            node = allocation.node_selection.node_name if allocation.node_selection else ""
            dra.restore(claim, allocation, state.rows.get(node, -1), reserved_pods(raw))
        for key in self._placed():
            pod = self.store.get("Pod", key)
            if pod is not None and pod.resource_claims:
                claims = dra.pod_claims(pod)
                if not isinstance(claims, str):
                    dra.placed[key] = claims

    # ------------------------------------------------------------------ writing

    def prebind(self, pod: Pod, node: str) -> bool:
        """Write the allocation and reservation of each of ``pod``'s claims (placed on
        ``node`` this cycle) not reserved for it yet; False (and what was written undone)
        when a claim could not be written."""
        dra = self.scheduler.state.dra
        if not pod.resource_claims or dra is None:
            return True
        claims = dra.placed.get(pod.key)
        if claims is None:  # its claims could not be had after all
            log.warning("claims not allocated", extra={"pod": pod.key, "node": node})
            return False
        uid = self._uid(pod)
        written = []
        try:
            for claim in claims:
                allocation = claim.allocation
                if allocation is None:
                    raise ClaimWriteError(f"claim {claim.key} is not allocated")
                self._reserve(claim.key, pod, uid, allocation)
                written.append(claim.key)
        except (ApiError, ConnectionLost, NotFound, ClaimWriteError) as exc:
            why = {"pod": pod.key, "node": node, "error": str(exc)}
            log.warning("claim not written", extra=why)
            for key in written:
                self._unreserve(key, pod, uid)
            return False
        return True

    def release(self, pod: Pod) -> None:
        """Undo ``pod``'s reservations (a failed bind, an evicted victim): the pod leaves each
        claim's ``reservedFor``, and a claim nobody reserves any more is deallocated."""
        if not pod.resource_claims:
            return
        uid = self._uid(pod)
        for entry in pod.resource_claims:
            name = entry.claim_name or self._named(pod, entry)
            if not name:
                continue
            try:
                self._unreserve(f"{pod.namespace}/{name}", pod, uid)
            except (ApiError, ConnectionLost, NotFound, ClaimWriteError) as exc:
                log.warning("claim not released", extra={"pod": pod.key, "error": str(exc)})
        self.stale = True

    def _named(self, pod: Pod, entry: PodClaim) -> str:
        raw = self.store.raw("Pod", pod.key) or {}
        for status in (raw.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == entry.name:
                return str(status.get("resourceClaimName") or "")
        return ""

    def _uid(self, pod: Pod) -> str:
        raw = self.store.raw("Pod", pod.key) or {}
        return str((raw.get("metadata") or {}).get("uid") or pod.uid or "")

    def _reserve(self, key: str, pod: Pod, uid: str, allocation: ClaimAllocation) -> None:
        body = allocation_body(allocation)

        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            status = raw.get("status") or {}
            reserved = status.get("reservedFor") or []
            if any(_reserves(r, pod, uid) for r in reserved):
                return None
            if (raw.get("metadata") or {}).get("deletionTimestamp"):
                raise ClaimWriteError(f"claim {key} is being deleted")
            current = status.get("allocation")
            ours = read_allocation({"status": {"allocation": body}})
            if current and read_allocation(raw) != ours:
                raise ClaimWriteError(f"claim {key} was allocated elsewhere meanwhile")
            entry = {"resource": "pods", "name": pod.name, "uid": uid}
            return {**raw, "status": {**status, "allocation": current or body,
                                      "reservedFor": [*reserved, entry]}}  # fmt: skip

        self._update(key, change, finalize=True)

    def _unreserve(self, key: str, pod: Pod, uid: str) -> None:
        def change(raw: dict[str, Any]) -> dict[str, Any] | None:
            status = dict(raw.get("status") or {})
            reserved = status.get("reservedFor") or []
            kept = [r for r in reserved if not _reserves(r, pod, uid)]
            if len(kept) == len(reserved):
                return None
            status["reservedFor"] = kept
            if not kept:
                status.pop("reservedFor")
                status.pop("allocation", None)
            return {**raw, "status": status}

        self._update(key, change)

    def _update(
        self,
        key: str,
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
        finalize: bool = False,
    ) -> None:
        """Write a claim's status as ``change`` makes it from the latest version (None: nothing
        to write), reading the claim again after a conflict. With ``finalize`` the claim gets
        kube-scheduler's finalizer first, in an update of the object, as the status update
        cannot change metadata."""
        namespace, name = key.split("/", 1)
        raw = self.store.raw(RESOURCE_CLAIM.kind, key)
        if raw is None:
            raw = self.store.client.request("GET", RESOURCE_CLAIM.item(namespace, name))
        for _ in range(CONFLICT_RETRIES):
            body = change(copy.deepcopy(raw))
            if body is None:
                return
            try:
                finalizers = (raw.get("metadata") or {}).get("finalizers") or []
                if finalize and FINALIZER not in finalizers:
                    meta = {**raw["metadata"], "finalizers": [*finalizers, FINALIZER]}
                    raw = self.store.client.request(
                        "PUT", RESOURCE_CLAIM.item(namespace, name), body={**raw, "metadata": meta}
                    )
                    body = change(copy.deepcopy(raw))
                    if body is None:
                        self.store.keep(RESOURCE_CLAIM.kind, key, raw)
                        return
                stored = self.store.client.request(
                    "PUT", RESOURCE_CLAIM.item(namespace, name, "status"), body=body
                )
            except ApiError as exc:
                if exc.status == 404:
                    raise ClaimWriteError(f"claim {key} is gone") from exc
                if exc.status != 409:
                    raise
                raw = self.store.client.request("GET", RESOURCE_CLAIM.item(namespace, name))
                continue
            self.store.keep(RESOURCE_CLAIM.kind, key, stored)
            return
        raise ClaimWriteError(f"claim {key}: status not written after {CONFLICT_RETRIES} conflicts")
