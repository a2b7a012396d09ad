"""Colocation in ``berth serve`` (``--colocation``): Koordinator's slo-controller and the
eviction half of its koordlet, with the simulator's formula and thresholds
(``berth.sim.colocation``).

Every ``metricReportIntervalSeconds`` a report, for every node at once:

1. reads what the pods on nodes use (``berth.k8s.usage_source``: the metrics API, else the
   ``berth.io/usage`` annotations a node agent writes); a pod without a reading counts at its
   request in the batch formula, an LSE pod's cpu always does;
2. computes each node's ``kubernetes.io/batch-cpu`` (millicores) and ``batch-memory`` (bytes)
   with ``berth.cluster.batch`` and writes them into the node's ``status.capacity`` and
   ``status.allocatable`` (PATCH nodes/status), as koord-manager does; berth's Scheduler
   takes them at once (the node watch brings the same back) and fits BE pods against them
   with resource-fit;
3. evicts BE pods through the Eviction API where node memory usage reaches
   memoryEvictThresholdPercent (down to memoryEvictLowerPercent), and, when configured, where
   BE cpu satisfaction (the suppressed limit ÷ BE cpu requests) is below its lower mark, in the
   simulator's order: lowest priority first, then largest usage, then name.

What only a node agent can do is left to it: cpu suppression (koordlet's cpusuppress, from
NodeSLO's cpuSuppressThresholdPercent) and cpusets, which berth hands over in the pod
annotation koordlet reads (``scheduling.koordinator.sh/resource-status``), patched before the
bind like the GPU devices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.api.keys import RESOURCE_STATUS_ANNOTATION
from berth.api.objects import FINAL_POD_PHASES, Pod, PodPhase
from berth.api.qos import BATCH_CPU, BATCH_MEMORY, LOW_BANDS, QoS, band_of
from berth.cluster.batch import HighPriority, batch_allocatable
from berth.controllers.colocation_config import ColocationConfig
from berth.k8s.client import MERGE_PATCH, ApiError
from berth.k8s.kinds import NODE
from berth.k8s.parts import ServeParts
from berth.k8s.usage_source import UsageReading, UsageSource
from berth.resources import CPU, MEMORY, QuantityError, to_canonical

log = logging.getLogger("berth.k8s")

MEMORY_EVICTION = "memory"
CPU_EVICTION = "cpu"
_WHY = {
    MEMORY_EVICTION: "evicted (colocation, memory): node memory usage above the eviction threshold",
    CPU_EVICTION: "evicted (colocation, cpu): BE cpu satisfaction below the eviction threshold",
}


def resource_status(pod: Pod, node: str) -> dict[str, str]:
    """The cpuset a session chose, for koordlet to apply (an annotation hook of the binder)."""
    status = pod.annotations.get(RESOURCE_STATUS_ANNOTATION)
    return {RESOURCE_STATUS_ANNOTATION: status} if status else {}


@dataclass(slots=True)
class PodTable:
    """The pods on nodes at one report, one entry each; (pods, 2) arrays are cpu millicores
    and memory bytes. ``used`` is the reading (0 where ``reported`` is False)."""

    keys: list[str]
    row: np.ndarray
    request: np.ndarray
    used: np.ndarray
    reported: np.ndarray
    low: np.ndarray
    lse: np.ndarray
    priority: np.ndarray

    @classmethod
    def of(cls, pods: list[tuple[Pod, int]], reading: UsageReading) -> PodTable:
        """One pass over the pods (each one's QoS class and band read once)."""
        count = len(pods)
        request = np.zeros((count, 2))
        used = np.zeros((count, 2))
        reported = np.zeros(count, dtype=bool)
        low = np.zeros(count, dtype=bool)
        lse = np.zeros(count, dtype=bool)
        for i, (pod, _) in enumerate(pods):
            qos = pod.qos
            low[i] = band_of(pod.labels, pod.priority, qos) in LOW_BANDS
            lse[i] = qos == QoS.LSE
            requests = pod.requests
            on_batch = low[i] and (BATCH_CPU in requests or BATCH_MEMORY in requests)
            cpu, memory = (BATCH_CPU, BATCH_MEMORY) if on_batch else (CPU, MEMORY)
            request[i] = (requests.get(cpu, 0), requests.get(memory, 0))
            usage = reading.pods.get(pod.key)
            if usage is not None:
                used[i], reported[i] = usage, True
        return cls(
            keys=[pod.key for pod, _ in pods],
            row=np.array([row for _, row in pods], dtype=np.int64),
            request=request,
            used=used,
            reported=reported,
            low=low,
            lse=lse,
            priority=np.array([pod.priority for pod, _ in pods], dtype=np.int64),
        )


@dataclass(slots=True)
class Plan:
    """One report's outcome: batch allocatable per node (int64, (nodes, 2)), the BE cpu
    limit per node, and the pods to evict (indices into the table) by cause."""

    batch: np.ndarray
    be_limit: np.ndarray
    victims: dict[str, list[int]]


def plan(
    config: ColocationConfig,
    capacity: np.ndarray,
    table: PodTable,
    node_used: np.ndarray,
    node_reported: np.ndarray,
    be_cap: np.ndarray | None = None,
) -> Plan:
    """The simulator's report on readings: ``capacity`` (nodes, 2) is the nodes' allocatable
    cpu and memory; ``node_used`` the nodes' own readings where ``node_reported`` (what they
    use beyond their pods is the system's); ``be_cap`` the cpus BE may use (cpusets)."""
    n = len(capacity)
    request, used = table.request, table.used
    known = np.where(table.reported[:, None], used, request)
    known[table.lse, 0] = request[table.lse, 0]

    def per_node(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = np.zeros((n, 2))
        for col in (0, 1):
            out[:, col] = np.bincount(table.row[mask], weights=values[mask, col], minlength=n)[:n]
        return out

    high, low = ~table.low, table.low
    everyone = np.ones(len(table.keys), dtype=bool)
    system = np.where(
        node_reported[:, None], np.maximum(node_used - per_node(used, everyone), 0), 0
    )
    sums = HighPriority(
        per_node(request, high), per_node(known, high), per_node(np.maximum(known, request), high)
    )
    batch = batch_allocatable(config.reclaim, capacity, np.zeros((n, 2)), system, sums)
    high_actual = per_node(used, high)
    low_used, low_request = per_node(used, low), per_node(request, low)
    be_limit = np.maximum(
        capacity[:, 0] * config.cpu_suppress_percent / 100.0 - high_actual[:, 0] - system[:, 0],
        0.0,
    )
    if be_cap is not None:
        be_limit = np.minimum(be_limit, be_cap)
    by_memory = _memory_victims(
        config, capacity, table, high_actual + low_used + system, low_request
    )
    taken = set(by_memory)
    by_cpu = [i for i in _cpu_victims(config, be_limit, table, low_request) if i not in taken]
    return Plan(batch, be_limit, {MEMORY_EVICTION: by_memory, CPU_EVICTION: by_cpu})


def _order(table: PodTable, indices: np.ndarray, col: int) -> list[int]:
    """Eviction order: lowest priority first, then largest usage, then key."""
    return sorted(
        indices.tolist(),
        key=lambda i: (table.priority[i], -table.used[i, col], table.keys[i]),
    )


def _memory_victims(
    config: ColocationConfig,
    capacity: np.ndarray,
    table: PodTable,
    node_memory: np.ndarray,
    low_request: np.ndarray,
) -> list[int]:
    with np.errstate(divide="ignore", invalid="ignore"):
        percent = np.where(
            capacity[:, 1] > 0, np.floor(node_memory[:, 1] * 100 / capacity[:, 1]), 0
        )
    hot = np.flatnonzero((percent >= config.memory_evict_percent) & (low_request[:, 1] > 0))
    victims: list[int] = []
    for row in hot.tolist():
        need = capacity[row, 1] * (percent[row] - config.memory_evict_lower_percent) / 100.0
        released = 0.0
        for i in _order(table, np.flatnonzero(table.low & (table.row == row)), 1):
            if released >= need:
                break
            released += table.used[i, 1]
            victims.append(i)
    return victims


def _cpu_victims(
    config: ColocationConfig, be_limit: np.ndarray, table: PodTable, low_request: np.ndarray
) -> list[int]:
    lower, upper = config.cpu_evict_lower_percent, config.cpu_evict_upper_percent
    if lower is None or upper is None:
        return []
    request = low_request[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        satisfaction = np.where(request > 0, be_limit / request, 1.0)
    victims: list[int] = []
    for row in np.flatnonzero(satisfaction < lower / 100.0).tolist():
        left = request[row]
        for i in _order(table, np.flatnonzero(table.low & (table.row == row)), 0):
            if left <= 0 or be_limit[row] / left >= upper / 100.0:
                break
            left -= table.request[i, 0]
            victims.append(i)
    return victims


def status_batch(raw: dict[str, Any]) -> tuple[int, int] | None:
    """The batch allocatable a node's status holds now (None when absent or unreadable)."""
    allocatable = (raw.get("status") or {}).get("allocatable") or {}
    try:
        return to_canonical(BATCH_CPU, allocatable[BATCH_CPU]), to_canonical(
            BATCH_MEMORY, allocatable[BATCH_MEMORY]
        )
    except (KeyError, QuantityError):
        return None


def batch_patch(cpu: int, memory: int) -> dict[str, Any]:
    """The node status patch koord-manager writes: batch resources in capacity and
    allocatable alike (batch-cpu in millicores, as a plain integer)."""
    amounts = {BATCH_CPU: str(cpu), BATCH_MEMORY: str(memory)}
    return {"status": {"capacity": dict(amounts), "allocatable": dict(amounts)}}


class ServeColocation:
    """Reports on ``berth serve``'s loop; ``serve()`` runs one when ``due``."""

    def __init__(
        self,
        server: ServeParts,
        config: ColocationConfig,
        evict: Callable[[list[Pod], str], int],
    ) -> None:
        self.server = server
        self.config = config
        self.evict = evict
        self.source = UsageSource(server.client)
        self.due = 0.0
        self.last_source = ""
        #: node → (batch written, the node's resourceVersion it was written over)
        self.written: dict[str, tuple[tuple[int, int], str]] = {}

    def serve(self) -> None:
        now = self.server.clock()
        if now < self.due:
            return
        self.due = now + self.config.report_interval
        self.report()

    def report(self) -> None:
        server = self.server
        store, state, metrics = server.store, server.scheduler.state, server.metrics
        n = state.n
        pods: list[tuple[Pod, int]] = []
        raw_pods: dict[str, dict[str, Any]] = {}
        for key, node in sorted(server.books.placed.items()):
            pod = store.get("Pod", key)
            row = state.rows.get(node)
            if pod is None or row is None or pod.terminating or pod.phase in FINAL_POD_PHASES:
                continue
            pods.append((pod, row))
            raw_pods[key] = store.raw("Pod", key) or {}
        raw_nodes = {name: store.raw("Node", name) for name in state.names[:n]}
        present = {name: raw for name, raw in raw_nodes.items() if raw is not None}
        reading = self.source.read(raw_pods, present)
        metrics.colocation_reports.labels(reading.source).inc()
        if reading.source != self.last_source:
            log.info("colocation usage source", extra={"source": reading.source})
            self.last_source = reading.source
        cpu, memory = state.axis.index(CPU), state.axis.index(MEMORY)
        capacity = state.allocatable[:n][:, [cpu, memory]].astype(np.float64)
        node_used = np.zeros((n, 2))
        node_reported = np.zeros(n, dtype=bool)
        for row, name in enumerate(state.names[:n]):
            usage = reading.nodes.get(name)
            if usage is not None:
                node_used[row], node_reported[row] = usage, True
        table = PodTable.of(pods, reading)
        be_cap = state.cpus.be_cap(n) if state.cpus.active else None
        outcome = plan(self.config, capacity, table, node_used, node_reported, be_cap)
        self._write(present, state.names[:n], outcome.batch)
        self._take(outcome.batch)
        for cause, indices in outcome.victims.items():
            if indices:
                chosen = [pods[i][0] for i in indices]
                evicted = self.evict(chosen, _WHY[cause])
                metrics.colocation_evictions.labels(cause).inc(evicted)

    def _take(self, batch: np.ndarray) -> None:
        """What was written counts at once: a cycle before the node watch brings it back
        must not fit BE pods against the old amounts (the room an eviction just made)."""
        state = self.server.scheduler.state
        n = state.n
        changed = False
        for col, name in enumerate((BATCH_CPU, BATCH_MEMORY)):
            index = state.axis.find(name)
            if (
                index is None
                or index >= state.width
                or not np.array_equal(state.allocatable[:n, index], batch[:, col])
            ):
                state.set_allocatable(name, batch[:, col])
                changed = True
        if changed:
            self.server.mark_dirty()

    def _write(self, raw_nodes: dict[str, dict], names: list[str], batch: np.ndarray) -> None:
        """Patch the nodes whose batch resources changed (once per version of the node seen:
        the watch may not have brought the last patch back yet)."""
        client = self.server.client
        for row, name in enumerate(names):
            raw = raw_nodes.get(name)
            wanted = (int(batch[row, 0]), int(batch[row, 1]))
            if raw is None or status_batch(raw) == wanted:
                continue
            version = (raw.get("metadata") or {}).get("resourceVersion", "")
            if self.written.get(name) == (wanted, version):
                continue
            try:
                client.request(
                    "PATCH",
                    NODE.item(None, name, "status"),
                    body=batch_patch(*wanted),
                    content_type=MERGE_PATCH,
                )
            except ApiError as exc:
                if exc.status != 404:
                    raise
                continue  # deleted since: the watch tells the Scheduler
            self.written[name] = (wanted, version)
            log.info(
                "batch resources written",
                extra={"node": name, "batch_cpu": wanted[0], "batch_memory": wanted[1]},
            )


def attach(server: ServeParts, config: ColocationConfig) -> ServeColocation:
    """Colocation for ``server``: its reports evict through the server's eviction path, and
    its binds carry the cpusets for koordlet."""
    server.options.annotate.append(resource_status)

    def evict(pods: list[Pod], reason: str) -> int:
        evicted = server.evict_running(pods, reason)
        for pod in pods:
            if pod.phase == PodPhase.EVICTED:
                # Not accounted again while its kubelet stops it (as a session's victims).
                server.books.released.add(pod.key)
        return evicted

    return ServeColocation(server, config, evict)
