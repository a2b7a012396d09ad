"""Batch resources per node: what online pods leave unused, offered to BE pods.

Koordinator's slo-controller recomputes ``kubernetes.io/batch-cpu`` and
``kubernetes.io/batch-memory`` of every node from the last usage report (its ``usage`` policy,
the default)::

    batch = capacity − safety margin − max(system used, reserved) − Σ used by high-priority pods
    safety margin = capacity × (100 − reclaim threshold)%      (cpu 60%, memory 65% by default)

High-priority pods are those outside the koord-batch and koord-free bands; one without a
usage report yet counts at its request, an LSE pod's cpu counts at its request (its cores are
its own). The ``request`` policy (memory only) subtracts requests and the reserved amount,
``maxUsageRequest`` subtracts each pod's larger of request and usage. An optional
batch threshold caps the result at capacity × that percent. Never below zero.

Every array here is (nodes, 2): cpu in millicores, memory in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

USAGE = "usage"
REQUEST = "request"
MAX_USAGE_REQUEST = "maxUsageRequest"
CPU_POLICIES = (USAGE, MAX_USAGE_REQUEST)
MEMORY_POLICIES = (USAGE, REQUEST, MAX_USAGE_REQUEST)


@dataclass(slots=True, frozen=True)
class ReclaimPolicy:
    """Koordinator's ColocationStrategy fields that shape batch resources."""

    cpu_reclaim_percent: float = 60.0
    memory_reclaim_percent: float = 65.0
    cpu_policy: str = USAGE
    memory_policy: str = USAGE
    batch_cpu_threshold_percent: float | None = None
    batch_memory_threshold_percent: float | None = None


@dataclass(slots=True)
class HighPriority:
    """What high-priority pods add up to per node."""

    request: np.ndarray
    used: np.ndarray
    max_used_request: np.ndarray


def batch_allocatable(
    policy: ReclaimPolicy,
    capacity: np.ndarray,
    reserved: np.ndarray,
    system_used: np.ndarray,
    high: HighPriority,
) -> np.ndarray:
    """Batch cpu (millicores) and memory (bytes) per node, as int64."""
    reclaim = np.array([policy.cpu_reclaim_percent, policy.memory_reclaim_percent]) / 100.0
    margin = capacity * (1.0 - reclaim)
    system = np.maximum(system_used, reserved)
    by_usage = capacity - margin - system - high.used
    by_request = capacity - margin - reserved - high.request
    by_max = capacity - margin - system - high.max_used_request
    out = np.empty_like(by_usage, dtype=np.float64)
    out[:, 0] = by_max[:, 0] if policy.cpu_policy == MAX_USAGE_REQUEST else by_usage[:, 0]
    memory = {USAGE: by_usage, REQUEST: by_request, MAX_USAGE_REQUEST: by_max}
    out[:, 1] = memory[policy.memory_policy][:, 1]
    for col, percent in (
        (0, policy.batch_cpu_threshold_percent),
        (1, policy.batch_memory_threshold_percent),
    ):
        if percent is not None:
            out[:, col] = np.minimum(out[:, col], capacity[:, col] * percent / 100.0)
    return np.floor(np.maximum(out, 0.0)).astype(np.int64)
