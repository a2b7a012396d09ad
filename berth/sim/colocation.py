"""Colocation in the simulator: Koordinator's koordlet and slo-controller at each usage report.

Every ``metricReportIntervalSeconds`` the report, for every node at once:

1. sums what the bound pods use now (``berth.cluster.usage``; a pod bound since the last
   report counts at its request for the batch formula, as a pod missing from NodeMetric does);
2. sets the nodes' ``kubernetes.io/batch-cpu`` / ``batch-memory`` allocatable from it
   (``berth.cluster.batch``);
3. suppresses BE cpu: pods on reclaimed resources together get at most
   capacity × cpuSuppressThresholdPercent − what the others use (cpusuppress);
4. evicts BE pods where node memory usage reaches memoryEvictThresholdPercent, lowest priority
   first and, within a priority, largest memory usage first, until the usage is back to
   memoryEvictLowerPercent (memoryevict); and, when configured, where BE cpu satisfaction
   (suppressed limit ÷ BE cpu requests) is below the lower mark, until it reaches the upper one
   (cpuevict);
5. writes the nodes' cpu and memory usage into ``ClusterState.usage``, and measures.

An evicted BE pod goes back to whoever made it: its controller replaces a controlled pod; a
plain pod (a trace's batch instance) is submitted again as a new pod object named
``<name>-retry<k>`` with its full duration (the work is lost, not the task). None is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from berth.api.objects import Pod
from berth.api.qos import BATCH_CPU, BATCH_MEMORY
from berth.cluster.batch import HighPriority, batch_allocatable
from berth.cluster.usage import NodeUsage
from berth.controllers.colocation_config import ColocationConfig
from berth.framework.scheduler import Scheduler
from berth.resources import CPU, MEMORY
from berth.sim.agent import Clock, NodeAgent, pending_copy
from berth.sim.events import Ev, EventQueue

MEMORY_EVICTION = "memory"
CPU_EVICTION = "cpu"
#: Node cpu utilization histogram resolution: bins of 0.1%.
_BINS = 1001


@dataclass(slots=True)
class ColocationStats:
    reports: int = 0
    #: Σ node cpu used ÷ Σ capacity, summed over reports (average = this ÷ reports).
    cpu_utilization_sum: float = 0.0
    memory_utilization_sum: float = 0.0
    #: Node-report cpu utilizations, histogram in 0.1% bins (p99 over nodes and time).
    node_cpu_histogram: np.ndarray = field(default_factory=lambda: np.zeros(_BINS, np.int64))
    #: Online (non-reclaimed) pod-seconds, and those on a node above the SLO cpu threshold.
    online_pod_seconds: float = 0.0
    online_pod_seconds_hot: float = 0.0
    #: BE cpu demand and what suppression let through, millicore-seconds.
    be_cpu_demand: float = 0.0
    be_cpu_granted: float = 0.0
    evictions: dict[str, int] = field(default_factory=lambda: {MEMORY_EVICTION: 0, CPU_EVICTION: 0})
    resubmitted: int = 0

    def summary(self) -> dict[str, Any]:
        reports = max(self.reports, 1)
        counts = self.node_cpu_histogram
        total = counts.sum()
        p99 = float(np.searchsorted(np.cumsum(counts), 0.99 * total) / 1000) if total else 0.0
        online = self.online_pod_seconds
        return {
            "reports": self.reports,
            "cpu_utilization_avg": self.cpu_utilization_sum / reports,
            "cpu_utilization_node_p99": p99,
            "memory_utilization_avg": self.memory_utilization_sum / reports,
            "online_pod_seconds": online,
            "online_slo_violation_fraction": self.online_pod_seconds_hot / online
            if online
            else 0.0,
            "be_cpu_satisfaction": (
                self.be_cpu_granted / self.be_cpu_demand if self.be_cpu_demand else 1.0
            ),
            "be_evictions": dict(self.evictions),
            "be_resubmitted": self.resubmitted,
        }


class Colocation:
    """Usage reports, batch resources and BE protection for one simulation."""

    def __init__(
        self,
        config: ColocationConfig,
        scheduler: Scheduler,
        agent: NodeAgent,
        queue: EventQueue,
        clock: Clock,
        resubmit: Callable[[Pod], None],
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.agent = agent
        self.queue = queue
        self.clock = clock
        self.resubmit = resubmit
        self.state = scheduler.state
        self.usage = self.state.track_usage()
        self.stats = ColocationStats()
        #: retry pod key → (the original pod's name, how many times it was retried)
        self._retries: dict[str, tuple[str, int]] = {}
        self._last: float | None = None

    def start(self) -> None:
        self.queue.push(0.0, Ev.REPORT)

    def on_report(self, _: Any = None) -> None:
        self.report()
        self.queue.push(self.clock.now + self.config.report_interval, Ev.REPORT)

    # ------------------------------------------------------------------ one report

    def report(self) -> None:
        state, config, now = self.state, self.config, self.clock.now
        n = state.n
        sums = self.usage.report(now, n)
        cpu_col, mem_col = state.axis.index(CPU), state.axis.index(MEMORY)
        capacity = np.stack(
            [state.allocatable[:n, cpu_col], state.allocatable[:n, mem_col]], axis=1
        ).astype(np.float64)
        nothing = np.zeros((n, 2))
        high = HighPriority(sums.high_request, sums.high_used, sums.high_max)
        batch = batch_allocatable(config.reclaim, capacity, nothing, nothing, high)
        state.set_allocatable(BATCH_CPU, batch[:, 0])
        state.set_allocatable(BATCH_MEMORY, batch[:, 1])
        be_limit = np.maximum(
            capacity[:, 0] * config.cpu_suppress_percent / 100.0 - sums.high_actual[:, 0], 0.0
        )
        if state.cpus.active:  # BE may run on every cpu but the LSE pods' own
            be_limit = np.minimum(be_limit, state.cpus.be_cap(n))
        by_memory = self._memory_victims(now, capacity, sums)
        by_cpu = self._cpu_victims(now, be_limit, sums, {id(p) for p in by_memory})
        if by_memory or by_cpu:
            sums = self._without(now, sums, by_memory + by_cpu, n)
            self._evict(
                by_memory, MEMORY_EVICTION, "node memory usage above the eviction threshold"
            )
            self._evict(by_cpu, CPU_EVICTION, "BE cpu satisfaction below the eviction threshold")
        self._measure(capacity, sums, be_limit, cpu_col, mem_col)
        if self.scheduler.has_waiting:
            self.agent.request_session()  # batch resources changed: the waiting may fit now

    def _low_slots(self) -> np.ndarray:
        usage = self.usage
        size = usage.size
        return np.flatnonzero(usage.live[:size] & usage.low[:size])

    def _order(self, slots: np.ndarray, used: np.ndarray, col: int) -> list[int]:
        """Eviction order among ``slots``: lowest priority first, then largest usage."""
        pods = self.usage.pods
        return sorted(
            slots.tolist(),
            key=lambda s: (pods[s].priority, -used[s, col], pods[s].key),  # type: ignore[union-attr]
        )

    def _memory_victims(self, now: float, capacity: np.ndarray, sums: NodeUsage) -> list[Pod]:
        config = self.config
        used_memory = sums.high_actual[:, 1] + sums.low_demand[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            percent = np.where(capacity[:, 1] > 0, np.floor(used_memory * 100 / capacity[:, 1]), 0)
        hot = np.flatnonzero(
            (percent >= config.memory_evict_percent) & (sums.low_request[:, 1] > 0)
        )
        if not len(hot):
            return []
        used = self.usage.used(now)
        low = self._low_slots()
        rows = self.usage.row[low]
        victims: list[Pod] = []
        for row in hot.tolist():
            need = capacity[row, 1] * (percent[row] - config.memory_evict_lower_percent) / 100.0
            released = 0.0
            for slot in self._order(low[rows == row], used, 1):
                if released >= need:
                    break
                released += used[slot, 1]
                victims.append(self.usage.pods[slot])  # type: ignore[arg-type]
        return victims

    def _cpu_victims(
        self, now: float, be_limit: np.ndarray, sums: NodeUsage, taken: set[int]
    ) -> list[Pod]:
        lower, upper = self.config.cpu_evict_lower_percent, self.config.cpu_evict_upper_percent
        if lower is None or upper is None:
            return []
        request = sums.low_request[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            satisfaction = np.where(request > 0, be_limit / request, 1.0)
        starving = np.flatnonzero(satisfaction < lower / 100.0)
        if not len(starving):
            return []
        used = self.usage.used(now)
        low = self._low_slots()
        rows = self.usage.row[low]
        victims: list[Pod] = []
        for row in starving.tolist():
            left = request[row]
            for slot in self._order(low[rows == row], used, 0):
                if left <= 0 or be_limit[row] / left >= upper / 100.0:
                    break
                pod = self.usage.pods[slot]
                left -= self.usage.request[slot, 0]
                if id(pod) not in taken:
                    victims.append(pod)  # type: ignore[arg-type]
        return victims

    def _without(self, now: float, sums: NodeUsage, victims: list[Pod], n: int) -> NodeUsage:
        """The report's BE sums without the evicted pods."""
        usage = self.usage
        slots = np.array([usage.slots[p.key] for p in victims], dtype=np.int64)
        used = usage.used(now)[slots]
        request = usage.request[slots]
        rows = usage.row[slots]
        demand, requested = sums.low_demand.copy(), sums.low_request.copy()
        for col in (0, 1):
            demand[:, col] -= np.bincount(rows, weights=used[:, col], minlength=n)[:n]
            requested[:, col] -= np.bincount(rows, weights=request[:, col], minlength=n)[:n]
        return replace(sums, low_demand=np.maximum(demand, 0), low_request=np.maximum(requested, 0))

    def _evict(self, victims: list[Pod], cause: str, why: str) -> None:
        if not victims:
            return
        agent, scheduler = self.agent, self.scheduler
        self.stats.evictions[cause] += len(victims)
        for pod in victims:
            scheduler.release(pod)
            agent.reasons[pod.ref] = f"evicted (colocation, {cause}): {why}"
            if not pod.owner:
                self._retry(pod)
        agent.evicted(victims)
        agent.request_session()

    def _retry(self, pod: Pod) -> None:
        """A plain BE pod comes back as a new pod object (its controller is the trace)."""
        original, count = self._retries.pop(pod.key, (pod.name, 0))
        count += 1
        copy = pending_copy(pod, f"{original}-retry{count}", self.clock.now)
        self._retries[copy.key] = (original, count)
        self.stats.resubmitted += 1
        self.resubmit(copy)

    def _measure(
        self,
        capacity: np.ndarray,
        sums: NodeUsage,
        be_limit: np.ndarray,
        cpu_col: int,
        mem_col: int,
    ) -> None:
        stats, state = self.stats, self.state
        be_cpu = np.minimum(sums.low_demand[:, 0], be_limit)
        node_cpu = sums.high_actual[:, 0] + be_cpu
        node_memory = sums.high_actual[:, 1] + sums.low_demand[:, 1]
        state.set_usage(cpu_col, node_cpu)
        state.set_usage(mem_col, node_memory)
        self.usage.set_reported(node_cpu, node_memory)
        now = self.clock.now
        interval = 0.0 if self._last is None else now - self._last
        self._last = now
        live = state.schedulable[: state.n] & (capacity[:, 0] > 0)
        if not live.any():
            return
        stats.reports += 1
        cap = capacity[live]
        stats.cpu_utilization_sum += float(node_cpu[live].sum() / cap[:, 0].sum())
        if cap[:, 1].sum() > 0:
            stats.memory_utilization_sum += float(node_memory[live].sum() / cap[:, 1].sum())
        utilization = node_cpu[live] / cap[:, 0]
        bins = np.clip(np.round(utilization * 1000).astype(np.int64), 0, _BINS - 1)
        stats.node_cpu_histogram += np.bincount(bins, minlength=_BINS)
        usage = self.usage
        size = usage.size
        online = usage.live[:size] & ~usage.low[:size]
        per_node = np.bincount(usage.row[:size][online], minlength=state.n)[: state.n]
        hot = np.zeros(state.n, dtype=bool)
        hot[live] = utilization > self.config.slo_cpu_percent / 100.0
        stats.online_pod_seconds += float(per_node.sum()) * interval
        stats.online_pod_seconds_hot += float(per_node[hot].sum()) * interval
        stats.be_cpu_demand += float(sums.low_demand[:, 0].sum()) * interval
        stats.be_cpu_granted += float(be_cpu.sum()) * interval
