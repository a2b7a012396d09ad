"""ClusterState: the scheduler's cache of nodes as a struct of numpy arrays.

Every filter and scorer is an expression over these arrays. Rows are node indices; arrays grow by
doubling. Each bind/unbind appends the touched row to a change log, which lets per-equivalence-
class caches refresh only the rows that changed instead of rescanning the cluster (see
``berth.framework.search``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from berth.api.hypernodes import HyperNode
from berth.api.keys import HOSTNAME_LABEL
from berth.api.objects import Namespace, Node, Pod
from berth.api.selectors import Taint
from berth.cluster import totals
from berth.cluster.change_log import ChangeLog
from berth.cluster.cpusets import CpuTable, cpuset_ask
from berth.cluster.devices import DeviceTable, GpuAsk, Placement, pod_ask
from berth.cluster.hypernodes import Topology, resolve
from berth.cluster.labels import LabelIndex
from berth.cluster.pod_terms import CarriedTerm, CountKey, carried_terms, counted
from berth.cluster.profiles import OwnerProfiles
from berth.cluster.totals import NodeTotal
from berth.cluster.usage import PodUsage
from berth.resources import GPU, PODS, ResourceAxis

if TYPE_CHECKING:
    from berth.cluster.dra.claims import DraState, Released

#: Distinct request vectors kept (see ``request_vector``).
_VECTORS_KEPT = 4096


class ClusterState:
    """Nodes as arrays: ``allocatable``, ``requested``, ``free`` and ``usage`` are (capacity, R)
    in column-major order so a single resource column is contiguous."""

    def __init__(self, axis: ResourceAxis | None = None, capacity: int = 64, seed: int = 0) -> None:
        self.axis = axis or ResourceAxis()
        self.n = 0
        self.capacity = capacity
        self.names: list[str] = []
        self.rows: dict[str, int] = {}
        self.nodes: list[Node] = []
        width = len(self.axis)
        self.allocatable = np.zeros((capacity, width), dtype=np.int64, order="F")
        self.requested = np.zeros((capacity, width), dtype=np.int64, order="F")
        self.free = np.zeros((capacity, width), dtype=np.int64, order="F")
        self.usage = np.zeros((capacity, width), dtype=np.float64, order="F")
        self.schedulable = np.zeros(capacity, dtype=bool)
        self.tiebreak = np.zeros(capacity, dtype=np.float64)
        self.labels = LabelIndex(capacity)
        #: GPU devices per node (remaining milli-GPU and memory of each) and who holds them.
        self.gpus = DeviceTable(capacity)
        self.cpus = CpuTable(capacity)
        self.gpu_column = self.axis.index(GPU)
        self.taints: dict[Taint, np.ndarray] = {}
        self.pods_on: list[dict[str, Pod]] = []
        self.selector_counts: dict[CountKey, np.ndarray] = {}
        #: Bound pods per label (key, value), cluster-wide: a counter whose selector asks for
        #: a label no bound pod carries starts at zero without going over the pods.
        self.labelled: dict[tuple[str, str], int] = {}
        self.carried: dict[CarriedTerm, np.ndarray] = {}
        self.namespace_labels: dict[str, dict[str, str]] = {}
        #: What kube-scheduler's allocation scores count of cpu and memory per node beyond the
        #: requests (containers without requests at 100m / 200 MiB, see
        #: ``Pod.nonzero_requests``), and how many bound pods add to it: while none does, the
        #: scores count the plain requests.
        self.nonzero_extra = np.zeros((capacity, 2), dtype=np.int64, order="F")
        self.nonzero_differs = 0
        self.structure_epoch = 0
        # Usage summed over the cluster as it changes: a sum afresh would round otherwise.
        self.usage_total = np.zeros(width, dtype=np.float64)
        self._allocatable_totals: dict[bool, tuple[int, np.ndarray]] = {}
        self._held_everywhere: tuple[int, np.ndarray] | None = None
        self._rng = np.random.default_rng(seed)
        #: Random numbers for plugins that choose at random (seeded, so runs repeat).
        self.rng = np.random.default_rng(seed + 1)
        #: Rows touched, for the caches that patch only those (see ``changed_rows``).
        self.changes = ChangeLog()
        self._vectors: dict[tuple, np.ndarray] = {}
        self._idle = NodeTotal(totals.idle)
        self._stranded = NodeTotal(totals.stranded)
        #: Volcano HyperNodes (the network's switches) and their resolution over the rows.
        self.hypernodes: list[HyperNode] = []
        self._topology: tuple[int, Topology] | None = None
        #: Bound pods' usage over time, kept only when usage is reported (colocation).
        self.pod_usage: PodUsage | None = None
        #: What departed pods used, per owner (gpu-load-aware estimates by it).
        self.profiles = OwnerProfiles()
        #: Dynamic Resource Allocation: devices, claims and their allocations (None without
        #: DRA objects); what the last unbind gave back of a pod's claims.
        self.dra: DraState | None = None
        self.last_claims: Released | None = None
        #: Per row, the DRA GPUs counted into its ``nvidia.com/gpu`` (taken out again when the
        #: DRA objects are replaced).
        self.dra_gpus: dict[int, int] = {}

    # ------------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> int:
        if node.name in self.rows:
            raise ValueError(f"node {node.name} already exists")
        for name in node.allocatable:
            self._ensure_column(self.axis.index(name))
        if self.n == self.capacity:
            self._grow(self.capacity * 2)
        row = self.n
        self.n += 1
        self.names.append(node.name)
        self.rows[node.name] = row
        self.nodes.append(node)
        self.pods_on.append({})
        self._describe(row, node)
        self.gpus.add_node(row, node, node.allocatable.get(GPU, 0))
        self.cpus.describe(row, node)
        # A tiny per-node jitter breaks score ties deterministically without favouring row 0.
        self.tiebreak[row] = self._rng.random() * 1e-6
        self.structure_epoch += 1
        if self.dra is not None:
            self._dra_node(row)
        return row

    def set_dra(self, objects: list[object], gpus: bool = True) -> None:
        """Take DRA objects (ResourceSlices, DeviceClasses, ResourceClaims and templates); with
        ``gpus`` the nodes' DRA GPUs join their GPU devices (``berth.cluster.dra.inventory``)."""
        from berth.cluster.dra.claims import DraState  # (the allocator, only where DRA is used)

        self.dra = DraState(
            objects, self.names, self.node_labels, self.changes.rows.append, gpus=gpus
        )
        for row in range(self.n):
            self._dra_node(row)

    def node_labels(self, row: int) -> dict[str, str]:
        labels = dict(self.nodes[row].labels)
        labels.setdefault(HOSTNAME_LABEL, self.names[row])
        return labels

    def _dra_node(self, row: int) -> None:
        assert self.dra is not None
        node = self.nodes[row]
        before = self.dra_gpus.get(row, 0)
        base = int(self.gpus.count[row]) - before
        gpus = self.dra.inventory.add_node(row, node.name, self.node_labels(row), base)
        self.dra_gpus[row] = gpus
        if gpus != before:
            allocatable = dict(node.allocatable)
            allocatable[GPU] = base * 1000 + gpus * 1000
            self.update_node(replace(node, allocatable=allocatable))

    def topology(self) -> Topology | None:
        """The HyperNodes resolved over the current rows; None without HyperNodes."""
        if not self.hypernodes:
            return None
        cached = self._topology
        if cached is None or cached[0] != self.structure_epoch:
            cached = self._topology = (self.structure_epoch, resolve(self.hypernodes, self))
        return cached[1]

    def add_nodes(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self.add_node(node)

    def update_node(self, node: Node) -> None:
        """Take a node's new labels, taints, allocatable and cordon (as the API reports a node
        update); its pods stay. Its GPU devices change only with its GPU count, and its CPU
        topology only while no pod holds any of its devices or cpus: a ValueError says so
        otherwise."""
        row = self.rows[node.name]
        gpus = node.allocatable.get(GPU, 0)
        old_gpus = self.nodes[row].allocatable.get(GPU, 0)
        if (
            gpus != old_gpus
            and self.gpu_column < self.width
            and self.requested[row, self.gpu_column]
        ):
            raise ValueError(
                f"node {node.name}: GPUs changed from {old_gpus / 1000:g} to {gpus / 1000:g} "
                "while pods hold its devices"
            )
        self.cpus.describe(row, node)
        for name in node.allocatable:
            self._ensure_column(self.axis.index(name))
        self.nodes[row] = node
        self._describe(row, node)
        if gpus != old_gpus:
            self.gpus.add_node(row, node, gpus)
        self.changes.rows.append(row)
        self.structure_epoch += 1

    def _describe(self, row: int, node: Node) -> None:
        """Write what ``node`` says of itself into ``row``: labels, allocatable (and so free),
        cordon and taints; the row's pods are left as they are."""
        labels = dict(node.labels)
        labels.setdefault(HOSTNAME_LABEL, node.name)
        self.labels.set_labels(row, labels)
        self.allocatable[row] = 0
        for name, amount in node.allocatable.items():
            self.allocatable[row, self.axis.index(name)] = amount
        self.free[row] = self.allocatable[row] - self.requested[row]
        self.schedulable[row] = not node.unschedulable
        for mask in self.taints.values():
            mask[row] = False
        for taint in node.taints:
            marked = self.taints.get(taint)
            if marked is None:
                marked = self.taints[taint] = np.zeros(self.capacity, dtype=bool)
            marked[row] = True

    def set_schedulable(self, name: str, schedulable: bool) -> None:
        self.schedulable[self.rows[name]] = schedulable
        self.structure_epoch += 1

    def _grow(self, capacity: int) -> None:
        def grown(array: np.ndarray) -> np.ndarray:
            shape = (capacity,) + array.shape[1:]
            out = np.zeros(shape, dtype=array.dtype, order="F")
            out[: self.capacity] = array
            return out

        self.allocatable = grown(self.allocatable)
        self.requested = grown(self.requested)
        self.free = grown(self.free)
        self.usage = grown(self.usage)
        self.schedulable = grown(self.schedulable)
        self.tiebreak = grown(self.tiebreak)
        self.taints = {t: grown(m) for t, m in self.taints.items()}
        self.selector_counts = {k: grown(c) for k, c in self.selector_counts.items()}
        self.carried = {k: grown(c) for k, c in self.carried.items()}
        self.nonzero_extra = grown(self.nonzero_extra)
        self.labels.grow(capacity)
        self.gpus.grow(capacity)
        self.cpus.grow(capacity)
        self.capacity = capacity

    def _ensure_column(self, col: int) -> None:
        width = self.allocatable.shape[1]
        if col < width:
            return

        def widened(array: np.ndarray) -> np.ndarray:
            out = np.zeros((self.capacity, col + 1), dtype=array.dtype, order="F")
            out[:, :width] = array
            return out

        self.allocatable = widened(self.allocatable)
        self.requested = widened(self.requested)
        self.free = widened(self.free)
        self.usage = widened(self.usage)
        self.usage_total = np.pad(self.usage_total, (0, col + 1 - width))
        self.structure_epoch += 1

    @property
    def width(self) -> int:
        return self.allocatable.shape[1]

    # ------------------------------------------------------------------ pods

    def request_vector(self, requests: dict[str, int]) -> np.ndarray:
        """Canonical request dict → vector over the resource axis (registers new resources).
        Asked for every pod submitted, placed and released, and most pods ask alike: the
        vectors are kept by the requests' items, and each caller gets its own copy."""
        return self.request_row(requests).copy()

    def request_row(self, requests: dict[str, int]) -> np.ndarray:
        """``request_vector``'s kept vector itself, read-only: for callers that only read it
        (preempt reads every running pod's, task after task)."""
        key = tuple(requests.items())
        vector = self._vectors.get(key)
        if vector is None or len(vector) != self.width:
            cols = [(self.axis.index(name), amount) for name, amount in requests.items()]
            for col, _ in cols:
                self._ensure_column(col)
            vector = np.zeros(self.width, dtype=np.int64)
            for col, amount in cols:
                vector[col] += amount
            vector.flags.writeable = False
            if len(self._vectors) >= _VECTORS_KEPT:
                self._vectors.clear()
            self._vectors[key] = vector
        return vector

    def set_namespace(self, namespace: Namespace) -> None:
        """Record a namespace's labels; counters that select pods by namespace labels are
        counted afresh on their next use."""
        self.namespace_labels[namespace.name] = dict(namespace.labels)
        self.selector_counts.clear()
        self.structure_epoch += 1

    def gpu_ask(self, pod: Pod, vector: np.ndarray) -> GpuAsk | None:
        """What ``pod`` (requesting ``vector``) needs from a node's GPU devices."""
        col = self.gpu_column
        return pod_ask(pod, int(vector[col])) if col < len(vector) and vector[col] else None

    def bind(
        self,
        pod: Pod,
        row: int,
        vector: np.ndarray | None = None,
        devices: np.ndarray | Placement | None = None,
        claims: Released | None = None,
    ) -> Placement | None:
        """Account ``pod`` on ``row`` (the scheduler's assume step; the backend confirms).

        A GPU pod takes ``devices`` of the node (indices; a Placement to give back exactly
        what it held before), or the default best-fit choice. A pod with DRA claims has them
        allocated and reserved (``claims``: what an unbind gave back, to restore). Returns
        its GPU devices."""
        vec = self.request_vector(pod.requests) if vector is None else vector
        if self.dra is not None and pod.resource_claims:
            devices = self.dra.bind_devices(pod, row, self.gpu_ask(pod, vec), devices, claims)
        placement = None
        if isinstance(devices, Placement):
            self.gpus.restore(pod.key, devices)
            placement = devices
        else:
            ask = self.gpu_ask(pod, vec)
            if ask is not None and self.gpus.count[row]:
                placement = self.gpus.take(pod.key, row, ask, devices)
        if self.cpus.active and self.cpus.threads[row]:
            cpus = cpuset_ask(pod)
            if cpus is not None:
                self.cpus.take(pod, row, self.names[row], *cpus)
        width = len(vec)
        used = vec if pod.utilization == 1.0 else vec * pod.utilization
        self.requested[row, :width] += vec
        self.free[row, :width] -= vec
        self.usage[row, :width] += used
        self.usage_total[:width] += used
        self._count_nonzero(pod, row, vec, 1)
        self.pods_on[row][pod.key] = pod
        self._count(pod, row, 1)
        self.changes.rows.append(row)
        if self.pod_usage is not None:
            self.pod_usage.add(pod, row, vec)
        return placement

    def unbind(self, pod: Pod, row: int, vector: np.ndarray | None = None) -> Placement | None:
        """Take ``pod`` off ``row``; returns the devices it gave back (and, for a pod with DRA
        claims, what its claims gave back in ``last_claims``)."""
        vec = self.request_vector(pod.requests) if vector is None else vector
        if self.dra is not None and pod.resource_claims:
            self.last_claims = self.dra.unbind(pod)
        width = len(vec)
        used = vec if pod.utilization == 1.0 else vec * pod.utilization
        self.requested[row, :width] -= vec
        self.free[row, :width] += vec
        self.usage[row, :width] -= used
        self.usage_total[:width] -= used
        self._count_nonzero(pod, row, vec, -1)
        key = pod.key
        del self.pods_on[row][key]
        self._count(pod, row, -1)
        self.changes.rows.append(row)
        if self.pod_usage is not None:
            self.pod_usage.remove(pod)
        if self.cpus.active:
            self.cpus.give_back(key)
        return self.gpus.give_back(key)

    def _count_nonzero(self, pod: Pod, row: int, vec: np.ndarray, delta: int) -> None:
        nonzero = pod.nonzero_requests
        if nonzero is None:
            return
        extra_cpu, extra_memory = nonzero[0] - int(vec[0]), nonzero[1] - int(vec[1])
        if extra_cpu or extra_memory:
            self.nonzero_extra[row, 0] += delta * extra_cpu
            self.nonzero_extra[row, 1] += delta * extra_memory
            self.nonzero_differs += delta

    def _count(self, pod: Pod, row: int, delta: int) -> None:
        labelled = self.labelled
        for label in pod.labels.items():
            left = labelled.get(label, 0) + delta
            if left:
                labelled[label] = left
            else:
                del labelled[label]
        namespaces = self.namespace_labels
        for key, counts in self.selector_counts.items():
            if key.matches(pod, namespaces):
                counts[row] += delta
        for term in carried_terms(pod):
            carried = self.carried.get(term)
            if carried is None:
                # A new kind of term changes which pods every class must heed.
                carried = self.carried[term] = np.zeros(self.capacity, dtype=np.int32)
                self.structure_epoch += 1
            carried[row] += delta

    def pod_counts(self, key: CountKey) -> np.ndarray:
        """Bound pods per node matching ``key``; registered on first use, then kept current."""
        counts = self.selector_counts.get(key)
        if counts is None:
            counts = counted(
                key, self.pods_on[: self.n], self.namespace_labels, self.labelled, self.capacity
            )
            self.selector_counts[key] = counts
        return counts[: self.n]

    # ------------------------------------------------------------------ usage reports

    def track_usage(self) -> PodUsage:
        """Keep bound pods' usage from now on (before any pod is bound)."""
        if self.pod_usage is None:
            self.pod_usage = PodUsage(self.axis)
        return self.pod_usage

    def set_allocatable(self, name: str, values: np.ndarray) -> None:
        """Every node's allocatable ``name`` at once (batch resources at a usage report)."""
        col = self.axis.index(name)
        self._ensure_column(col)
        n = self.n
        self.allocatable[:n, col] = values
        self.free[:n, col] = values - self.requested[:n, col]
        self.structure_epoch += 1

    def set_usage(self, col: int, values: np.ndarray) -> None:
        """Every node's usage of resource column ``col`` as reported."""
        n = self.n
        self.usage[:n, col] = values
        self.usage_total[col] = float(values.sum())

    # ------------------------------------------------------------------ change log

    @property
    def log_position(self) -> int:
        return self.changes.position

    def changed_rows(self, since: int) -> np.ndarray | None:
        """Rows touched since log position ``since``; None when too many to patch cheaply."""
        return self.changes.since(since, self.n)

    def trim_log(self) -> None:
        """Forget old changes; caches older than the new base rebuild on next use."""
        self.changes.trim(self.n)

    # ------------------------------------------------------------------ views

    def total_allocatable(self, cordoned: bool = False) -> np.ndarray:
        """Allocatable summed over schedulable nodes, or with ``cordoned`` over every node
        (what queues take shares of, asked at every session's start); recomputed only when
        nodes change, read-only."""
        cached = self._allocatable_totals.get(cordoned)
        if cached is None or cached[0] != self.structure_epoch:
            allocatable = self.allocatable[: self.n]
            total = (allocatable if cordoned else allocatable[self.schedulable[: self.n]]).sum(0)
            total.flags.writeable = False
            cached = self._allocatable_totals[cordoned] = (self.structure_epoch, total)
        return cached[1]

    def held_everywhere(self) -> np.ndarray:
        """Per resource column, whether every node has some of it (recomputed only when nodes
        change): the allocation scorers skip masking out nodes that lack a resource when none
        does."""
        cached = self._held_everywhere
        if cached is None or cached[0] != self.structure_epoch:
            held = np.asarray((self.allocatable[: self.n] > 0).all(axis=0))
            cached = self._held_everywhere = (self.structure_epoch, held)
        return cached[1]

    def total_requested(self) -> np.ndarray:
        """Requests summed over every node: summed when asked (samples), not at every bind."""
        return self.requested[: self.n].sum(axis=0)

    def total_usage(self) -> np.ndarray:
        return self.usage_total

    def stranded(self) -> np.ndarray:
        """Free capacity per resource on schedulable nodes already partly allocated in that
        resource (see berth.cluster.totals)."""
        return self._stranded.read(self)

    def idle(self) -> np.ndarray:
        """Free capacity summed over schedulable nodes."""
        return self._idle.read(self)

    def pods_column(self) -> int:
        return self.axis.index(PODS)
