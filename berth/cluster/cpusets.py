"""Exclusive CPUs per node: which pods hold which cpus (Sigma's cpuset, Koordinator's
fine-grained CPU orchestration).

A node describes its CPUs with ``berth.io/cpu-sockets``, ``berth.io/cpu-cores-per-socket``,
``berth.io/cpu-threads-per-core`` and ``berth.io/cpu-numa-nodes-per-socket``. On such a node an
LSE or LSR pod (``koordinator.sh/qosClass``) asking whole cores gets that many cpus to itself,
chosen by ``berth.cluster.cpu_accumulator``; LS pods run on the shared pool (the cpus nobody
holds), BE pods on every cpu but the LSE pods'. Per node the table keeps how many cpus are
not held and how many LSE pods hold, as arrays over the node rows, so the filter is one
comparison; which cpus a pod holds is decided only for the pod being bound.

Once any node has a topology, a pod that needs a cpuset fits only nodes with one (as
Koordinator's NodeNUMAResource filter asks for the node's CPU topology); without any, nothing
here runs.
"""

from __future__ import annotations

import json

import numpy as np

from berth.api.keys import (
    CPU_BIND_POLICY_KEY,
    FULL_PCPUS,
    MOST_ALLOCATED,
    NUMA_STRATEGY_LABEL,
    RESOURCE_SPEC_ANNOTATION,
    RESOURCE_STATUS_ANNOTATION,
)
from berth.api.objects import CpuTopology, Node, Pod
from berth.api.qos import QoS
from berth.cluster.cpu_accumulator import format_cpuset, take_cpus
from berth.resources import CPU

CPUSET_CLASSES = (QoS.LSE, QoS.LSR)


def cpuset_ask(pod: Pod) -> tuple[int, str] | None:
    """(cpus, bind policy) for a pod that gets a cpuset: LSE or LSR asking whole cores."""
    millicores = pod.requests.get(CPU, 0)
    if not millicores or millicores % 1000 or pod.qos not in CPUSET_CLASSES:
        return None
    return millicores // 1000, bind_policy(pod)


def bind_policy(pod: Pod) -> str:
    """The pod's ``preferredCPUBindPolicy`` (FullPCPUs unless its resource spec says)."""
    text = pod.annotations.get(RESOURCE_SPEC_ANNOTATION)
    if not text:
        return FULL_PCPUS
    return json.loads(text).get(CPU_BIND_POLICY_KEY) or FULL_PCPUS


class CpuTable:
    """Per node row: its topology (``threads`` 0 without one), cpus not held, cpus held by
    LSE pods; per pod: the row and cpus it holds."""

    def __init__(self, capacity: int) -> None:
        self.active = False
        self.topologies: list[CpuTopology | None] = [None] * capacity
        self.strategies: list[str] = [MOST_ALLOCATED] * capacity
        self.threads = np.zeros(capacity, dtype=np.int64)
        self.total = np.zeros(capacity, dtype=np.int64)
        self.unheld = np.zeros(capacity, dtype=np.int64)
        self.lse_held = np.zeros(capacity, dtype=np.int64)
        self.free: list[set[int]] = [set() for _ in range(capacity)]
        self.held: dict[str, tuple[int, list[int], bool]] = {}

    def grow(self, capacity: int) -> None:
        extra = capacity - len(self.threads)
        self.topologies.extend([None] * extra)
        self.strategies.extend([MOST_ALLOCATED] * extra)
        self.free.extend(set() for _ in range(extra))
        for name in ("threads", "total", "unheld", "lse_held"):
            setattr(self, name, np.concatenate([getattr(self, name), np.zeros(extra, np.int64)]))

    def describe(self, row: int, node: Node) -> None:
        """Take the node's topology and NUMA strategy; refused while pods hold its cpus if the
        topology changes."""
        topology = node.cpu_topology
        strategy = node.labels.get(NUMA_STRATEGY_LABEL, MOST_ALLOCATED)
        self.strategies[row] = strategy
        if topology == self.topologies[row]:
            return
        if self.total[row] != self.unheld[row]:
            raise ValueError(f"node {node.name}: CPU topology changed while pods hold its cpus")
        self.topologies[row] = topology
        cpus = topology.cpus if topology is not None else 0
        self.threads[row] = topology.threads_per_core if topology is not None else 0
        self.total[row] = self.unheld[row] = cpus
        self.free[row] = set(range(cpus))
        self.active = self.active or topology is not None

    def fits(self, rows: np.ndarray, cpus: int, policy: str) -> np.ndarray:
        """Rows with a topology and ``cpus`` unheld cpus (whole cores for FullPCPUs: the count
        must fill cores, as Koordinator's SMT alignment asks)."""
        threads = self.threads[rows]
        mask = (threads > 0) & (self.unheld[rows] >= cpus)
        if policy == FULL_PCPUS:
            mask &= cpus % np.maximum(threads, 1) == 0
        return mask

    def take(self, pod: Pod, row: int, node: str, cpus: int, policy: str) -> None:
        """Give ``pod`` its cpus on ``row``: the ones it already held there (a placement being
        restored), else the accumulator's choice; note them on the pod."""
        topology = self.topologies[row]
        assert topology is not None
        free = self.free[row]
        previous = _parse(pod.cpuset) if pod.bound_node == node else []
        if len(previous) == cpus and free.issuperset(previous):
            chosen = previous
        else:
            chosen = take_cpus(topology, free, cpus, policy, self.strategies[row])
            if chosen is None:
                raise ValueError(f"node {node}: {cpus} cpus asked, {len(free)} not held")
        free.difference_update(chosen)
        lse = pod.qos == QoS.LSE
        self.held[pod.key] = (row, chosen, lse)
        self.unheld[row] -= len(chosen)
        self.lse_held[row] += len(chosen) if lse else 0
        pod.cpuset = format_cpuset(chosen)
        status = json.dumps({"cpuset": pod.cpuset})
        pod.annotations = {**pod.annotations, RESOURCE_STATUS_ANNOTATION: status}

    def give_back(self, pod_key: str) -> None:
        entry = self.held.pop(pod_key, None)
        if entry is None:
            return
        row, cpus, lse = entry
        self.free[row].update(cpus)
        self.unheld[row] += len(cpus)
        self.lse_held[row] -= len(cpus) if lse else 0

    def be_cap(self, n: int) -> np.ndarray:
        """Millicores BE pods may use per node: every cpu but the LSE pods' (inf without a
        topology)."""
        cap = (self.total[:n] - self.lse_held[:n]).astype(np.float64) * 1000.0
        return np.where(self.threads[:n] > 0, cap, np.inf)


def _parse(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out
