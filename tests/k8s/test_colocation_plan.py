"""Colocation in ``berth serve`` without a cluster: the report's computation on readings
(batch resources, the victims of memory and cpu eviction), the node status patch, and reading
usage from the metrics API or the ``berth.io/usage`` annotations (a bad one is logged and
ignored)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from berth.cluster.batch import ReclaimPolicy
from berth.controllers.colocation_config import ColocationConfig
from berth.k8s.client import ApiError
from berth.k8s.colocation import (
    CPU_EVICTION,
    MEMORY_EVICTION,
    PodTable,
    batch_patch,
    plan,
    status_batch,
)
from berth.k8s.usage_source import (
    ANNOTATIONS,
    METRICS,
    USAGE_ANNOTATION,
    UsageAnnotationError,
    UsageSource,
    parse_usage,
)

G = 10**9
GI = 2**30
NODE = np.array([[10_000, 20 * GI]], dtype=np.float64)  # 10 cores, 20Gi


def table(*pods: tuple) -> PodTable:
    """pods: (name, request (cpu, mem), used (cpu, mem) or None, kind, priority); kind is
    LS, LSE or BE (BE: on reclaimed resources)."""
    count = len(pods)
    return PodTable(
        keys=[f"default/{p[0]}" for p in pods],
        row=np.zeros(count, dtype=np.int64),
        request=np.array([p[1] for p in pods], dtype=np.float64).reshape(count, 2),
        used=np.array([p[2] or (0, 0) for p in pods], dtype=np.float64).reshape(count, 2),
        reported=np.array([p[2] is not None for p in pods], dtype=bool),
        low=np.array([p[3] == "BE" for p in pods], dtype=bool),
        lse=np.array([p[3] == "LSE" for p in pods], dtype=bool),
        priority=np.array([p[4] for p in pods], dtype=np.int64),
    )


def run(pods, node_used=None, config=None, capacity=NODE):
    reported = np.array([node_used is not None])
    used = np.array([node_used or (0, 0)], dtype=np.float64)
    return plan(config or ColocationConfig(), capacity, table(*pods), used, reported)


@pytest.mark.parametrize(
    "name,pods,node_used,batch",
    [
        ("no pods: capacity × reclaim", [], None, (6000, 13 * GI)),
        (
            "an online pod without a reading counts at its request",
            [("web", (4000, 8 * GI), None, "LS", 0)],
            None,
            (2000, 5 * GI),
        ),
        (
            "an online pod's reading is subtracted",
            [("web", (4000, 8 * GI), (1000, 2 * GI), "LS", 0)],
            None,
            (5000, 11 * GI),
        ),
        (
            "an LSE pod's cpu counts at its request",
            [("db", (4000, 8 * GI), (1000, 2 * GI), "LSE", 0)],
            None,
            (2000, 11 * GI),
        ),
        (
            "BE usage is not subtracted",
            [("be", (3000, 4 * GI), (3000, 4 * GI), "BE", 0)],
            None,
            (6000, 13 * GI),
        ),
        (
            "the node's reading beyond its pods is the system's",
            [("web", (4000, 8 * GI), (1000, 2 * GI), "LS", 0)],
            (3000, 4 * GI),
            (3000, 9 * GI),
        ),
        (
            "never below zero",
            [("web", (4000, 8 * GI), (8000, 16 * GI), "LS", 0)],
            None,
            (0, 0),
        ),
    ],
)
def test_batch_resources_from_readings(name, pods, node_used, batch):
    assert tuple(run(pods, node_used).batch[0]) == batch


def test_koordinators_table_through_the_readings():
    """Koordinator's TestPluginCalculate node, given as readings: 100 cores / 120G, podA (LS)
    and podC (no QoS) online, podB BE; the node's reading is the pods' plus the system's
    7 cores / 12G."""
    pods = [
        ("podA", (20_000, 20 * G), (11_000, 11 * G), "LS", 0),
        ("podB", (10_000, 10 * G), (10_000, 10 * G), "BE", 0),
        ("podC", (20_000, 40 * G), (22_000, 22 * G), "LS", 0),
    ]
    config = ColocationConfig(reclaim=ReclaimPolicy(65, 65))
    capacity = np.array([[100_000, 120 * G]], dtype=np.float64)
    outcome = run(pods, (50_000, 55 * G), config, capacity)
    assert tuple(outcome.batch[0]) == (25_000, 33 * G)


@pytest.mark.parametrize(
    "name,pods,victims",
    [
        (
            "below the threshold (69%): none",
            [
                ("web", (4000, 8 * GI), (1000, 6 * GI), "LS", 0),
                ("be-a", (2000, 8 * GI), (2000, 7.8 * GI), "BE", 0),
            ],
            [],
        ),
        (
            "80%: the first by name of equals releases enough",
            [
                ("web", (4000, 8 * GI), (1000, 8 * GI), "LS", 0),
                ("be-b", (2000, 4 * GI), (2000, 4 * GI), "BE", 0),
                ("be-a", (2000, 4 * GI), (2000, 4 * GI), "BE", 0),
            ],
            ["be-a"],
        ),
        (
            "largest memory usage first",
            [
                ("web", (4000, 8 * GI), (1000, 8 * GI), "LS", 0),
                ("be-a", (2000, 4 * GI), (2000, 3 * GI), "BE", 0),
                ("be-b", (2000, 5 * GI), (2000, 5 * GI), "BE", 0),
            ],
            ["be-b"],
        ),
        (
            "lowest priority first",
            [
                ("web", (4000, 8 * GI), (1000, 8 * GI), "LS", 0),
                ("be-a", (2000, 4 * GI), (2000, 4 * GI), "BE", 10),
                ("be-b", (2000, 4 * GI), (2000, 3 * GI), "BE", 5),
            ],
            ["be-b"],
        ),
        (
            "90%: until 68% is reached",
            [
                ("web", (4000, 12 * GI), (1000, 12 * GI), "LS", 0),
                ("be-a", (1000, 2 * GI), (1000, 2 * GI), "BE", 0),
                ("be-b", (1000, 2 * GI), (1000, 2 * GI), "BE", 0),
                ("be-c", (1000, 2 * GI), (1000, 2 * GI), "BE", 0),
            ],
            ["be-a", "be-b", "be-c"],
        ),
        (
            "no BE pod: nothing to evict",
            [("web", (4000, 16 * GI), (1000, 16 * GI), "LS", 0)],
            [],
        ),
    ],
)
def test_memory_eviction(name, pods, victims):
    outcome = run(pods)
    keys = table(*pods).keys
    assert [keys[i].split("/")[1] for i in outcome.victims[MEMORY_EVICTION]] == victims
    assert outcome.victims[CPU_EVICTION] == []


@pytest.mark.parametrize(
    "name,online_cpu,victims",
    [
        # suppressed limit 6500 − online; BE requests 4000
        ("satisfaction 0.5 < 0.6: evict until 0.8", 4500, ["be-b"]),
        ("satisfaction 0.625: none", 4000, []),
        ("satisfaction 0: every BE pod", 6500, ["be-b", "be-a"]),
    ],
)
def test_cpu_eviction(name, online_cpu, victims):
    config = ColocationConfig(cpu_evict_lower_percent=60, cpu_evict_upper_percent=80)
    pods = [
        ("web", (8000, 2 * GI), (online_cpu, 2 * GI), "LS", 0),
        ("be-a", (2000, GI), (1000, GI), "BE", 0),
        ("be-b", (2000, GI), (2000, GI), "BE", 0),
    ]
    outcome = run(pods, config=config)
    keys = table(*pods).keys
    assert [keys[i].split("/")[1] for i in outcome.victims[CPU_EVICTION]] == victims
    assert outcome.be_limit[0] == max(6500 - online_cpu, 0)


def test_the_node_status_patch_reads_back():
    patch = batch_patch(4000, 9 * GI)
    assert patch["status"]["capacity"] == patch["status"]["allocatable"]
    assert status_batch(patch) == (4000, 9 * GI)
    assert status_batch({"status": {"allocatable": {"cpu": "4"}}}) is None
    bad = {
        "status": {
            "allocatable": {"kubernetes.io/batch-cpu": "x", "kubernetes.io/batch-memory": "1"}
        }
    }
    assert status_batch(bad) is None


@pytest.mark.parametrize(
    "value,expected",
    [
        ('{"cpu": "1500m", "memory": "2Gi"}', (1500, 2 * GI)),
        ('{"cpu": "2"}', (2000, 0)),
        ({"memory": "1G"}, (0, G)),
        ("{}", (0, 0)),
    ],
)
def test_usage_annotation(value, expected):
    assert parse_usage(value) == expected


@pytest.mark.parametrize(
    "value,message",
    [
        ("cpu=1", "expected JSON"),
        ("[1, 2]", "expected a mapping"),
        ('{"gpu": "1"}', "'gpu': unknown resource"),
        ('{"cpu": "lots"}', "cpu: 'lots' is not a quantity"),
        ('{"memory": "-1Gi"}', "memory: '-1Gi' is negative"),
    ],
)
def test_bad_usage_annotation(value, message):
    with pytest.raises(UsageAnnotationError, match=message):
        parse_usage(value)


class FakeMetricsClient:
    """Answers the metrics API's two lists, or an error status for both."""

    def __init__(self, status: int = 200, nodes=(), pods=()) -> None:
        self.status, self.nodes, self.pods = status, list(nodes), list(pods)

    def request(self, method, path, **_):
        if self.status != 200:
            raise ApiError(self.status, "NotFound")
        return {"items": self.nodes if path.endswith("/nodes") else self.pods}


def annotated(text: str) -> dict:
    return {"metadata": {"annotations": {USAGE_ANNOTATION: text}}}


def test_the_metrics_api_comes_first():
    client = FakeMetricsClient(
        nodes=[{"metadata": {"name": "n1"}, "usage": {"cpu": "3", "memory": "4Gi"}}],
        pods=[
            {
                "metadata": {"name": "web", "namespace": "default"},
                "containers": [
                    {"usage": {"cpu": "500m", "memory": "1Gi"}},
                    {"usage": {"cpu": "250m", "memory": "1Gi"}},
                ],
            }
        ],
    )
    pods = {"default/web": annotated('{"cpu": "9"}')}
    reading = UsageSource(client).read(pods, {"n1": {}})
    assert reading.source == METRICS
    assert reading.pods == {"default/web": (750, 2 * GI)}
    assert reading.nodes == {"n1": (3000, 4 * GI)}


@pytest.mark.parametrize("status", [404, 503])
def test_annotations_when_the_metrics_api_is_not_served(status):
    pods = {"default/web": annotated('{"cpu": "1", "memory": "1Gi"}'), "default/idle": {}}
    nodes = {"n1": annotated('{"cpu": "2", "memory": "3Gi"}')}
    reading = UsageSource(FakeMetricsClient(status)).read(pods, nodes)
    assert reading.source == ANNOTATIONS
    assert reading.pods == {"default/web": (1000, GI)}
    assert reading.nodes == {"n1": (2000, 3 * GI)}


def test_a_failing_metrics_api_is_an_error():
    with pytest.raises(ApiError):
        UsageSource(FakeMetricsClient(500)).read({}, {})


def test_a_bad_annotation_is_logged_once_and_ignored(caplog):
    source = UsageSource(FakeMetricsClient(404))
    pods = {"default/web": annotated("lots"), "default/ok": annotated('{"cpu": "1"}')}
    with caplog.at_level(logging.WARNING, logger="berth.k8s"):
        for _ in range(3):
            reading = source.read(pods, {})
            assert reading.pods == {"default/ok": (1000, 0)}
    warnings = [r for r in caplog.records if r.getMessage() == "usage not read"]
    assert len(warnings) == 1
    assert "Pod default/web" in warnings[0].object  # type: ignore[attr-defined]
