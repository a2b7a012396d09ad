"""gpu-load-aware: place GPU pods by what GPU nodes use, and estimate a pod by what its job
used last time (Alnair's UtilSched with its profiler).

A node's measured usage is ``ClusterState.usage``: the bound pods' requests × what they use
(their ``berth.io/utilization``, or the colocation usage reports for cpu and memory). The pod
being placed is estimated from its owner's profile (``berth.cluster.profiles``: the largest
fraction of its requests any departed pod of the same job or workload used, per metric), or
at its full request when none of its owner's pods has run yet. Per resource, the score is the
share left free after the estimate, ``(allocatable − used − estimate) × 100 ÷ allocatable``
(0 when over, or when the node has none), and the node's score is the weighted mean over
``resourceWeights`` (nvidia.com/gpu 2, cpu 1, memory 1 by default).

Deliberate differences from UtilSched: it scores GPU memory in use per card and a fixed
weight per GPU model, then rescales scores to 0–100 between the lowest and highest node; its
collection loop stops one node short, so the last node of the list is scored with the first
node's figures. berth scores the free share on absolute 0–100 (so weights mix it with other
scorers the way kube-scheduler's do), measures GPU use against the node's GPUs, and every
node is scored with its own figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.cluster.profiles import METRICS
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows
from berth.framework.podclass import PodClass
from berth.resources import CPU, GPU, MEMORY

#: Profile metric → the resource column it estimates.
_RESOURCES = dict(zip(METRICS, (CPU, MEMORY, GPU), strict=True))
_DEFAULT_WEIGHTS = {GPU: 2, CPU: 1, MEMORY: 1}


class GpuLoadAware(Plugin):
    name = "gpu-load-aware"
    classes_by_job = True
    reads_owner_profiles = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        raw = self.arguments.get("resourceWeights", _DEFAULT_WEIGHTS)
        if not isinstance(raw, dict) or set(raw) - set(_DEFAULT_WEIGHTS):
            raise PluginArgumentError(
                f"plugin {self.name}: argument resourceWeights: expected a mapping of "
                + ", ".join(_DEFAULT_WEIGHTS)
            )
        weights = []
        for resource in _RESOURCES.values():
            value = raw.get(resource, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PluginArgumentError(
                    f"plugin {self.name}: argument resourceWeights.{resource}: "
                    f"{value!r} is not a whole number >= 0"
                )
            weights.append(value)
        if not any(weights):
            raise PluginArgumentError(
                f"plugin {self.name}: argument resourceWeights: at least one weight must be > 0"
            )
        self.weights = np.array(weights, dtype=np.float64)

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score" and cls.gpu is not None

    def is_local(self, cls: PodClass) -> bool:
        # The estimate follows the owner's profile, which changes when any of its pods
        # leaves: scored afresh at each placement rather than cached per node.
        return False

    def estimate(self, cls: PodClass, state: ClusterState) -> np.ndarray:
        """What the pod will use of cpu, memory and GPU (its requests × its job's profile)."""
        columns = [state.axis.find(resource) for resource in _RESOURCES.values()]
        request = np.array(
            [cls.request[c] if c is not None and c < len(cls.request) else 0.0 for c in columns]
        )
        profile = state.profiles.get(cls.pod)
        return request if profile is None else request * profile

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        estimate = self.estimate(cls, state)
        count = len(state.schedulable[rows])
        shares = []
        for resource, amount in zip(_RESOURCES.values(), estimate, strict=True):
            col = state.axis.find(resource)
            if col is None or col >= state.width:
                shares.append(np.zeros(count))
                continue
            total = state.allocatable[:, col][rows]
            left = total - state.usage[:, col][rows] - amount
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where((total > 0) & (left >= 0), left * 100 / total, 0.0)
            shares.append(np.floor(share))
        return np.floor(np.stack(shares, axis=1) @ self.weights / self.weights.sum())
