"""Bound pods' actual usage as arrays, summed per node at each usage report.

``ClusterState.usage`` adds a pod's request × its utilization when it is bound; with
colocation on, the pods' usage changes over time (``berth.api.usage``) and each report
recomputes the cpu and memory columns from this table. A pod is a slot: its node row, its cpu
and memory request (batch-cpu and batch-memory for pods on reclaimed resources that ask for
them), whether it runs on reclaimed resources, whether it is LSE, and which usage profile it follows. Distinct
profiles are few (a workload's replicas share one), so a report evaluates each profile once
and the rest is numpy over slots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.api.objects import Pod
from berth.api.qos import BATCH_CPU, BATCH_MEMORY, QoS
from berth.api.usage import UsageProfile
from berth.resources import CPU, MEMORY, ResourceAxis


@dataclass(slots=True)
class NodeUsage:
    """One report's sums per node, (nodes, 2) each: cpu millicores, memory bytes."""

    #: High-priority pods: used (at request when not yet reported), requested, and the
    #: larger of the two per pod.
    high_used: np.ndarray
    high_request: np.ndarray
    high_max: np.ndarray
    #: High-priority pods' actual usage.
    high_actual: np.ndarray
    #: Pods on reclaimed resources: what they would use unhindered, and requested.
    low_demand: np.ndarray
    low_request: np.ndarray


def _amount(axis: ResourceAxis, vector: np.ndarray, name: str) -> float:
    col = axis.find(name)
    return float(vector[col]) if col is not None and col < len(vector) else 0.0


class PodUsage:
    """Slots of bound pods; ``report(t, n)`` sums their usage per node at time ``t``."""

    def __init__(self, axis: ResourceAxis, capacity: int = 1024) -> None:
        self.axis = axis
        self.slots: dict[str, int] = {}
        self.free: list[int] = []
        self.size = 0
        self.row = np.zeros(capacity, dtype=np.int64)
        self.request = np.zeros((capacity, 2), dtype=np.float64)
        self.low = np.zeros(capacity, dtype=bool)
        self.lse = np.zeros(capacity, dtype=bool)
        self.live = np.zeros(capacity, dtype=bool)
        self.reported = np.zeros(capacity, dtype=bool)
        self.profile = np.zeros(capacity, dtype=np.int64)
        self.profiles: list[UsageProfile] = []
        self._profile_ids: dict[UsageProfile, int] = {}
        self.pods: list[Pod | None] = [None] * capacity
        #: Per node: usage as last reported (cpu, memory), and the requests of the pods bound
        #: since then (what load-aware scheduling estimates on top of the report).
        self.node_reported = np.zeros((0, 2), dtype=np.float64)
        self.since_report = np.zeros((0, 2), dtype=np.float64)

    def _grow(self) -> None:
        grow = len(self.row)
        for name in ("row", "request", "low", "lse", "live", "reported", "profile"):
            array = getattr(self, name)
            setattr(self, name, np.concatenate([array, np.zeros_like(array[:grow])]))
        self.pods.extend([None] * grow)

    def cover(self, rows: int) -> None:
        have = len(self.since_report)
        if rows > have:
            grow = max(rows, 2 * have) - have
            self.node_reported = np.concatenate([self.node_reported, np.zeros((grow, 2))])
            self.since_report = np.concatenate([self.since_report, np.zeros((grow, 2))])

    def _profile_id(self, pod: Pod) -> int:
        profile = pod.usage_profile or UsageProfile.constant(pod.utilization)
        known = self._profile_ids.get(profile)
        if known is None:
            known = self._profile_ids[profile] = len(self.profiles)
            self.profiles.append(profile)
        return known

    def add(self, pod: Pod, row: int, vector: np.ndarray) -> None:
        if self.free:
            slot = self.free.pop()
        else:
            if self.size == len(self.row):
                self._grow()
            slot = self.size
            self.size += 1
        self.slots[pod.key] = slot
        self.row[slot] = row
        low = pod.reclaimed
        # A pod in a batch band that asks plain cpu/memory still uses them.
        on_batch = low and (BATCH_CPU in pod.requests or BATCH_MEMORY in pod.requests)
        cpu, memory = (BATCH_CPU, BATCH_MEMORY) if on_batch else (CPU, MEMORY)
        self.request[slot] = (_amount(self.axis, vector, cpu), _amount(self.axis, vector, memory))
        self.low[slot] = low
        self.lse[slot] = pod.qos == QoS.LSE
        self.live[slot] = True
        self.reported[slot] = False
        self.profile[slot] = self._profile_id(pod)
        self.pods[slot] = pod
        self.cover(row + 1)
        self.since_report[row] += self.request[slot]

    def remove(self, pod: Pod) -> None:
        slot = self.slots.pop(pod.key, None)
        if slot is None:
            return
        self.live[slot] = False
        if not self.reported[slot]:
            self.since_report[self.row[slot]] -= self.request[slot]
        self.pods[slot] = None
        self.free.append(slot)

    def fractions(self, t: float) -> np.ndarray:
        """(profiles, 2): each profile's (cpu, memory) fraction at ``t``."""
        return np.array([p.at(t) for p in self.profiles] or [(0.0, 0.0)], dtype=np.float64)

    def used(self, t: float) -> np.ndarray:
        """(slots, 2): what each slot's pod uses at ``t`` unhindered."""
        size = self.size
        return self.request[:size] * self.fractions(t)[self.profile[:size]]

    def report(self, t: float, n: int) -> NodeUsage:
        """Per-node sums at ``t``; marks every live pod reported."""
        size = self.size
        live, low = self.live[:size], self.low[:size]
        used = self.used(t)
        request = self.request[:size]
        # Not reported yet: counted at its request; LSE cpu: always at its request.
        known = used.copy()
        unreported = ~self.reported[:size]
        known[unreported] = request[unreported]
        known[self.lse[:size], 0] = request[self.lse[:size], 0]
        rows = self.row[:size]

        def per_node(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
            out = np.zeros((n, 2), dtype=np.float64)
            for col in (0, 1):
                out[:, col] = np.bincount(rows[mask], weights=values[mask, col], minlength=n)[:n]
            return out

        high = live & ~low
        sums = NodeUsage(
            high_used=per_node(known, high),
            high_request=per_node(request, high),
            high_max=per_node(np.maximum(known, request), high),
            high_actual=per_node(used, high),
            low_demand=per_node(used, live & low),
            low_request=per_node(request, live & low),
        )
        self.reported[:size] = live
        self.cover(n)
        self.since_report[:] = 0.0
        return sums

    def set_reported(self, cpu: np.ndarray, memory: np.ndarray) -> None:
        """The nodes' usage as this report gives it (BE cpu after suppression)."""
        n = len(cpu)
        self.cover(n)
        self.node_reported[:n, 0] = cpu
        self.node_reported[:n, 1] = memory
