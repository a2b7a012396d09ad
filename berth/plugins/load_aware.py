"""load-aware: place by what nodes use, not by what pods requested (Koordinator's
LoadAwareScheduling).

A node's estimated usage is its last reported usage plus an estimate for every pod bound since
that report and for the pod being placed: request (batch-cpu / batch-memory for a pod on
reclaimed resources) × ``estimatedScalingFactors`` (cpu 85%, memory 70%), or 250m / 200 MiB
unscaled for a pod that requests none. The filter refuses a node whose estimated usage, in
whole percent of allocatable (rounded), is above ``usageThresholds`` (cpu 65%, memory 95%; 0
switches a resource off); the score is each resource's free share after the estimate,
``(allocatable − estimated) × 100 ÷ allocatable`` in integers (0 when over), averaged with
``resourceWeights`` (cpu 1, memory 1), integer division as Koordinator does.

Reported usage comes from the colocation usage reports (``simulation.colocation``); without
them a node's usage is the bound pods' request × utilization, and there is nothing "since".
Koordinator estimates each assigned pod separately and rounds each; berth rounds the node's
sum once (a difference of at most a millicore or a byte per pod).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.api.qos import BATCH_CPU, BATCH_MEMORY
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows
from berth.framework.podclass import PodClass
from berth.resources import CPU, MEMORY, MIB

#: What Koordinator estimates for a pod that requests no cpu or no memory.
DEFAULT_CPU = 250
DEFAULT_MEMORY = 200 * MIB


def _pair(plugin: Plugin, key: str, default: tuple[int, int]) -> tuple[int, int]:
    """A {cpu, memory} argument of whole percents or weights."""
    raw = plugin.arguments.get(key)
    if raw is None:
        return default
    if not isinstance(raw, dict) or set(raw) - {CPU, MEMORY}:
        raise PluginArgumentError(
            f"plugin {plugin.name}: argument {key}: expected a mapping of cpu and memory"
        )
    values = []
    for name, fallback in zip((CPU, MEMORY), default, strict=True):
        value = raw.get(name, fallback)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PluginArgumentError(
                f"plugin {plugin.name}: argument {key}.{name}: {value!r} is not a whole number >= 0"
            )
        values.append(value)
    return values[0], values[1]


class LoadAware(Plugin):
    name = "load-aware"
    reason = "node usage above the load-aware threshold"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.thresholds = _pair(self, "usageThresholds", (65, 95))
        self.factors = _pair(self, "estimatedScalingFactors", (85, 70))
        self.weights = _pair(self, "resourceWeights", (1, 1))

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        names = (BATCH_CPU, BATCH_MEMORY) if pod.reclaimed else (CPU, MEMORY)
        incoming = []
        for name, factor, default in zip(
            names, self.factors, (DEFAULT_CPU, DEFAULT_MEMORY), strict=True
        ):
            amount = pod.requests.get(name, 0)
            incoming.append(round(amount * factor / 100) if amount else default)
        cls.static[self.name] = np.array(incoming, dtype=np.float64)

    def _estimated(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        """(rows, 2) estimated cpu and memory usage with the incoming pod."""
        usage = state.pod_usage
        if usage is None:
            cpu, memory = state.axis.index(CPU), state.axis.index(MEMORY)
            base = np.stack([state.usage[:, cpu][rows], state.usage[:, memory][rows]], axis=1)
        else:
            usage.cover(state.n)
            factors = np.array(self.factors, dtype=np.float64) / 100.0
            base = usage.node_reported[rows] + np.round(usage.since_report[rows] * factors)
        return base + cls.static[self.name]

    def _allocatable(self, state: ClusterState, rows: Rows) -> np.ndarray:
        cpu, memory = state.axis.index(CPU), state.axis.index(MEMORY)
        return np.stack(
            [state.allocatable[:, cpu][rows], state.allocatable[:, memory][rows]], axis=1
        ).astype(np.float64)

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        over = self._over(cls, state, rows)
        return ~(over[:, 0] | over[:, 1])

    def _over(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        estimated = self._estimated(cls, state, rows)
        total = self._allocatable(state, rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            percent = np.where(total > 0, np.round(estimated / np.maximum(total, 1) * 100), 0)
        limits = np.array(self.thresholds, dtype=np.float64)
        return (percent > limits) & (limits > 0) & (total > 0)

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        over = self._over(cls, state, rows)
        return [
            ("cpu usage above the load-aware threshold", over[:, 0]),
            ("memory usage above the load-aware threshold", over[:, 1] & ~over[:, 0]),
        ]

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        used = np.floor(self._estimated(cls, state, rows))
        total = self._allocatable(state, rows)
        free = np.where(
            (total > 0) & (used <= total),
            np.floor((total - used) * 100 / np.maximum(total, 1)),
            0,
        )
        weights = np.array(self.weights, dtype=np.float64)
        weight_sum = weights.sum()
        if weight_sum <= 0:
            return np.zeros(len(free))
        return np.floor((free * weights).sum(axis=1) / weight_sum)
