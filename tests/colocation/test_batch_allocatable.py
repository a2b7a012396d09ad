"""Batch resources per node: Koordinator's batchresource plugin tables, and the usage table
that feeds them (pods not yet reported count at request, LSE cpu at request)."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.qos import BATCH_CPU, BATCH_MEMORY, QOS_LABEL
from berth.cluster.batch import (
    MAX_USAGE_REQUEST,
    REQUEST,
    HighPriority,
    ReclaimPolicy,
    batch_allocatable,
)
from berth.cluster.usage import PodUsage
from berth.resources import ResourceAxis
from tests.builders import pod

G = 10**9

# Koordinator's TestPluginCalculate node: 100 cores, 120G, system usage 7 cores / 12G. High-
# priority pods: podA (LS, request 20 / 20G, used 11 / 11G) and podC (no QoS, request 20 / 40G,
# used 22 / 22G); podB (BE) and podD (succeeded) do not count.
CAPACITY = np.array([[100_000, 120 * G]], dtype=np.float64)
SYSTEM = np.array([[7_000, 12 * G]], dtype=np.float64)
HIGH = HighPriority(
    request=np.array([[40_000, 60 * G]], dtype=np.float64),
    used=np.array([[33_000, 33 * G]], dtype=np.float64),
    max_used_request=np.array([[42_000, 62 * G]], dtype=np.float64),
)


@pytest.mark.parametrize(
    "name,policy,cpu,memory",
    [
        ("calculate with memory usage", ReclaimPolicy(65, 65), 25_000, 33 * G),
        (
            "calculate with memory request",
            ReclaimPolicy(70, 80, memory_policy=REQUEST),
            30_000,
            36 * G,
        ),
        (
            "calculate with adjusted reclaim ratio",
            ReclaimPolicy(150, 120, cpu_policy=MAX_USAGE_REQUEST, memory_policy=REQUEST),
            101_000,
            84 * G,
        ),
        ("berth's defaults (60% / 65%)", ReclaimPolicy(), 20_000, 33 * G),
        (
            "batch threshold caps the result",
            ReclaimPolicy(65, 65, batch_cpu_threshold_percent=20),
            20_000,
            33 * G,
        ),
    ],
)
def test_koordinator_batch_table(name, policy, cpu, memory) -> None:
    reserved = np.zeros((1, 2))
    out = batch_allocatable(policy, CAPACITY, reserved, SYSTEM, HIGH)
    assert out.tolist() == [[cpu, memory]], name


def test_reserved_above_system_usage_wins_and_never_below_zero() -> None:
    capacity = np.array([[10_000, 10 * G], [10_000, 10 * G]], dtype=np.float64)
    reserved = np.array([[2_000, 1 * G], [0, 0]], dtype=np.float64)
    system = np.array([[500, 2 * G], [0, 0]], dtype=np.float64)
    high = HighPriority(
        request=np.zeros((2, 2)),
        used=np.array([[1_000, 1 * G], [9_000, 9 * G]], dtype=np.float64),
        max_used_request=np.zeros((2, 2)),
    )
    out = batch_allocatable(ReclaimPolicy(), capacity, reserved, system, high)
    # node 0: 6000 - max(500, 2000) - 1000 = 3000 ; 6.5G - max(2G, 1G) - 1G = 3.5G
    assert out.tolist() == [[3_000, 3_500_000_000], [0, 0]]


def test_usage_table_counts_unreported_pods_at_request_and_lse_cpu_at_request() -> None:
    axis = ResourceAxis()
    table = PodUsage(axis, capacity=2)  # grows past two slots
    ls = pod("ls", cpu=4000, mem=1000, utilization=0.25)
    lse = pod("lse", cpu=2000, mem=1000, utilization=0.5, labels={QOS_LABEL: "LSE"})
    be = pod(
        "be",
        cpu=0,
        mem=0,
        extra={BATCH_CPU: 3000, BATCH_MEMORY: 1000 * 2**20},
        utilization=0.5,
        labels={QOS_LABEL: "BE"},
    )
    for p, row in ((ls, 0), (lse, 0), (be, 1)):
        vector = np.zeros(8, dtype=np.int64)
        for name, amount in p.requests.items():
            vector[axis.index(name)] = amount
        table.add(p, row, vector)
    first = table.report(0.0, 2)
    assert first.high_used[0, 0] == 6000  # neither reported yet: requests
    assert first.high_actual[0, 0] == 2000  # 4000 × 0.25 + 2000 × 0.5
    second = table.report(60.0, 2)
    assert second.high_used[0, 0] == 1000 + 2000  # LS at usage, LSE cpu at request
    assert second.high_used[0, 1] == pytest.approx((250 + 500) * 2**20)  # memory at usage
    assert second.low_demand[1].tolist() == [1500, 500 * 2**20]
    assert second.low_request[1].tolist() == [3000, 1000 * 2**20]
    table.remove(lse)
    third = table.report(120.0, 2)
    assert third.high_used[0, 0] == 1000
    assert table.free == [1]
