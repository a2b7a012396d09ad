"""ClusterState: the scheduler's cache of nodes as a struct of numpy arrays.

Every filter and scorer is an expression over these arrays. Rows are node indices; arrays grow by
doubling. Each bind/unbind appends the touched row to a change log, which lets per-equivalence-
class caches refresh only the rows that changed instead of rescanning the cluster (see
``berth.framework.search``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from berth.api.objects import HOSTNAME_LABEL, LabelSelector, Node, Pod, Taint
from berth.cluster.devices import DeviceTable, GpuAsk, Placement, pod_ask
from berth.cluster.labels import LabelIndex
from berth.resources import GPU, PODS, ResourceAxis

#: Past this many unseen changes a cache is rebuilt from scratch rather than patched.
_PATCH_LIMIT_FRACTION = 0.25


@dataclass(slots=True, frozen=True)
class SelectorKey:
    """Which pods a counter counts: namespaces (empty = all) and a label selector."""

    namespaces: tuple[str, ...]
    selector: LabelSelector

    def matches(self, pod: Pod) -> bool:
        return (not self.namespaces or pod.namespace in self.namespaces) and self.selector.matches(
            pod.labels
        )


@dataclass(slots=True, frozen=True)
class AntiTermKey:
    """A required anti-affinity term carried by some bound pod, with its topology key."""

    selector: SelectorKey
    topology_key: str


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
        self.gpu_column = self.axis.index(GPU)
        self.taints: dict[Taint, np.ndarray] = {}
        self.pods_on: list[dict[str, Pod]] = []
        self.selector_counts: dict[SelectorKey, np.ndarray] = {}
        self.anti_terms: dict[AntiTermKey, np.ndarray] = {}
        self.structure_epoch = 0
        # Cluster-wide sums kept current on every change, so sampling them costs nothing.
        self.requested_total = np.zeros(width, dtype=np.int64)
        self.usage_total = np.zeros(width, dtype=np.float64)
        self._allocatable_total: tuple[int, np.ndarray] | None = None
        self._rng = np.random.default_rng(seed)
        #: Random numbers for plugins that choose at random (seeded, so runs repeat).
        self.rng = np.random.default_rng(seed + 1)
        self._log: list[int] = []
        self._log_base = 0

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
        labels = dict(node.labels)
        labels.setdefault(HOSTNAME_LABEL, node.name)
        self.labels.set_labels(row, labels)
        for name, amount in node.allocatable.items():
            self.allocatable[row, self.axis.index(name)] = amount
        self.free[row] = self.allocatable[row] - self.requested[row]
        self.gpus.add_node(row, node, node.allocatable.get(GPU, 0))
        self.schedulable[row] = not node.unschedulable
        # A tiny per-node jitter breaks score ties deterministically without favouring row 0.
        self.tiebreak[row] = self._rng.random() * 1e-6
        for taint in node.taints:
            mask = self.taints.get(taint)
            if mask is None:
                mask = self.taints[taint] = np.zeros(self.capacity, dtype=bool)
            mask[row] = True
        self.structure_epoch += 1
        return row

    def add_nodes(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self.add_node(node)

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
        self.anti_terms = {k: grown(c) for k, c in self.anti_terms.items()}
        self.labels.grow(capacity)
        self.gpus.grow(capacity)
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
        self.requested_total = np.pad(self.requested_total, (0, col + 1 - width))
        self.usage_total = np.pad(self.usage_total, (0, col + 1 - width))
        self.structure_epoch += 1

    @property
    def width(self) -> int:
        return self.allocatable.shape[1]

    # ------------------------------------------------------------------ pods

    def request_vector(self, requests: dict[str, int]) -> np.ndarray:
        """Canonical request dict → vector over the resource axis (registers new resources)."""
        cols = [(self.axis.index(name), amount) for name, amount in requests.items()]
        for col, _ in cols:
            self._ensure_column(col)
        vector = np.zeros(self.width, dtype=np.int64)
        for col, amount in cols:
            vector[col] += amount
        return vector

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
    ) -> Placement | None:
        """Account ``pod`` on ``row`` (the scheduler's assume step; the backend confirms).

        A GPU pod takes ``devices`` of the node (indices; a Placement to give back exactly
        what it held before), or the default best-fit choice. Returns its devices."""
        vec = self.request_vector(pod.requests) if vector is None else vector
        placement = None
        if isinstance(devices, Placement):
            self.gpus.restore(pod.key, devices)
            placement = devices
        else:
            ask = self.gpu_ask(pod, vec)
            if ask is not None and self.gpus.count[row]:
                placement = self.gpus.take(pod.key, row, ask, devices)
        self.requested[row, : len(vec)] += vec
        self.free[row, : len(vec)] -= vec
        self.usage[row, : len(vec)] += vec * pod.utilization
        self.requested_total[: len(vec)] += vec
        self.usage_total[: len(vec)] += vec * pod.utilization
        self.pods_on[row][pod.key] = pod
        self._count(pod, row, 1)
        self._log.append(row)
        return placement

    def unbind(self, pod: Pod, row: int, vector: np.ndarray | None = None) -> Placement | None:
        """Take ``pod`` off ``row``; returns the devices it gave back."""
        vec = self.request_vector(pod.requests) if vector is None else vector
        self.requested[row, : len(vec)] -= vec
        self.free[row, : len(vec)] += vec
        self.usage[row, : len(vec)] -= vec * pod.utilization
        self.requested_total[: len(vec)] -= vec
        self.usage_total[: len(vec)] -= vec * pod.utilization
        del self.pods_on[row][pod.key]
        self._count(pod, row, -1)
        self._log.append(row)
        return self.gpus.give_back(pod.key)

    def _count(self, pod: Pod, row: int, delta: int) -> None:
        for key, counts in self.selector_counts.items():
            if key.matches(pod):
                counts[row] += delta
        for term in pod.affinity.anti_required:
            key = AntiTermKey(
                SelectorKey(term.namespaces or (pod.namespace,), term.selector), term.topology_key
            )
            counts = self.anti_terms.get(key)
            if counts is None:
                # A new kind of anti-affinity term changes which pods every class must avoid.
                counts = self.anti_terms[key] = np.zeros(self.capacity, dtype=np.int32)
                self.structure_epoch += 1
            counts[row] += delta

    def pod_counts(self, key: SelectorKey) -> np.ndarray:
        """Bound pods per node matching ``key``; registered on first use, then kept current."""
        counts = self.selector_counts.get(key)
        if counts is None:
            counts = np.zeros(self.capacity, dtype=np.int32)
            for row in range(self.n):
                for pod in self.pods_on[row].values():
                    if key.matches(pod):
                        counts[row] += 1
            self.selector_counts[key] = counts
        return counts[: self.n]

    # ------------------------------------------------------------------ change log

    @property
    def log_position(self) -> int:
        return self._log_base + len(self._log)

    def changed_rows(self, since: int) -> np.ndarray | None:
        """Rows touched since log position ``since``; None when too many to patch cheaply."""
        start = since - self._log_base
        if start < 0:
            return None
        count = len(self._log) - start
        if count == 0:
            return np.empty(0, dtype=np.intp)
        if count > max(64, self.n * _PATCH_LIMIT_FRACTION):
            return None
        return np.fromiter(sorted(set(self._log[start:])), dtype=np.intp)

    def trim_log(self) -> None:
        """Forget old changes; caches older than the new base rebuild on next use."""
        if len(self._log) > 4 * max(self.n, 1024):
            self._log_base += len(self._log)
            self._log.clear()

    # ------------------------------------------------------------------ views

    def total_allocatable(self) -> np.ndarray:
        """Allocatable summed over schedulable nodes (recomputed only when nodes change)."""
        cached = self._allocatable_total
        if cached is None or cached[0] != self.structure_epoch:
            total = self.allocatable[: self.n][self.schedulable[: self.n]].sum(axis=0)
            cached = self._allocatable_total = (self.structure_epoch, total)
        return cached[1]

    def total_requested(self) -> np.ndarray:
        return self.requested_total

    def total_usage(self) -> np.ndarray:
        return self.usage_total

    def stranded(self) -> np.ndarray:
        """Free capacity per resource on nodes already partly allocated in that resource: idle
        room that a job needing whole nodes cannot use (fragmentation)."""
        n = self.n
        live = self.schedulable[:n]
        free = self.free[:n][live]
        partly = (free > 0) & (self.requested[:n][live] > 0)
        return np.where(partly, free, 0).sum(axis=0)

    def idle(self) -> np.ndarray:
        """Free capacity summed over schedulable nodes."""
        live = self.schedulable[: self.n]
        return np.maximum(self.free[: self.n][live], 0).sum(axis=0)

    def pods_column(self) -> int:
        return self.axis.index(PODS)

    def domain_totals(self, counts: np.ndarray, topology_key: str) -> tuple[np.ndarray, np.ndarray]:
        """Per-node domain ids for ``topology_key`` and the sum of ``counts`` per domain.

        Nodes without the label get domain -1; the returned totals have one slot per domain.
        """
        domains, size = self.labels.domains(topology_key, self.n)
        valid = domains >= 0
        totals = np.bincount(domains[valid], weights=counts[valid], minlength=size)
        return domains, totals
