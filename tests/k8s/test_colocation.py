"""``berth serve --colocation`` on the real API server: nodes' batch resources written into
their status follow what online pods use (the ``berth.io/usage`` annotations, written here as
a node agent would: the control plane serves no metrics API), BE pods are placed against them,
and BE pods are evicted through the Eviction API when online memory usage rises."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from berth.api.keys import RESOURCE_STATUS_ANNOTATION
from berth.api.qos import BATCH_CPU, BATCH_MEMORY, QOS_LABEL
from berth.cli import main
from berth.controllers.colocation_config import ColocationConfig
from berth.k8s.colocation import status_batch
from berth.k8s.usage_source import ANNOTATIONS, USAGE_ANNOTATION
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    serving,
    settle,
    wait_for,
)

GI = 2**30
#: Reports at a test's pace; every threshold as berth simulate's defaults.
FAST = ColocationConfig(report_interval=0.1)


def report_usage(cluster: Cluster, key: str, cpu_millis: float, memory: float) -> None:
    """Write a pod's usage as a node agent does."""
    namespace, name = key.split("/", 1)
    usage = orjson.dumps({"cpu": f"{int(cpu_millis)}m", "memory": str(int(memory))}).decode()
    patch = {"metadata": {"annotations": {USAGE_ANNOTATION: usage}}}
    cluster.patch("Pod", namespace, name, patch)


def batch_of(cluster: Cluster, node: str) -> tuple[int, int] | None:
    (raw,) = [n for n in cluster.objects("Node") if n["metadata"]["name"] == node]
    return status_batch(raw)


def be_pod(name: str, cpu_millis: int, memory: str, node: str = "") -> dict[str, Any]:
    doc = pod_doc(name, labels={QOS_LABEL: "BE"})
    requests = {BATCH_CPU: str(cpu_millis), BATCH_MEMORY: memory}
    doc["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": requests}
    if node:
        doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return doc


def online_pod(name: str, cpu: str = "4", memory: str = "8Gi") -> dict[str, Any]:
    doc = pod_doc(name, cpu=cpu)
    doc["spec"]["containers"][0]["resources"]["requests"]["memory"] = memory
    return doc


def test_batch_resources_follow_online_usage(cluster: Cluster, caplog):
    cluster.add(node_doc("n1", cpu="10", memory="20Gi"), online_pod("web"))
    options = fast_options(colocation=FAST)
    with caplog.at_level(logging.INFO, logger="berth.k8s"):
        with serving(cluster, config(), options) as server, cluster.kubelet():
            wait_for(lambda: "default/web" in cluster.bindings())
            # No reading yet: the pod counts at its request (6 cores − 4, 13Gi − 8Gi).
            wait_for(lambda: batch_of(cluster, "n1") == (2000, 5 * GI))
            report_usage(cluster, "default/web", 1000, 2 * GI)
            wait_for(lambda: batch_of(cluster, "n1") == (5000, 11 * GI))
            report_usage(cluster, "default/web", 3000, 6 * GI)
            wait_for(lambda: batch_of(cluster, "n1") == (3000, 7 * GI))
            # A bad reading is ignored with a warning: the pod is back at its request.
            cluster.patch(
                "Pod", "default", "web", {"metadata": {"annotations": {USAGE_ANNOTATION: "lots"}}}
            )
            wait_for(lambda: batch_of(cluster, "n1") == (2000, 5 * GI))
            settle(server)
            reports = server.metrics.colocation_reports.labels(ANNOTATIONS)._value.get()
            state = server.scheduler.state
            column = state.axis.index(BATCH_MEMORY)
            assert state.allocatable[state.rows["n1"], column] == 5 * GI
    assert reports >= 4
    messages = [(r.getMessage(), getattr(r, "source", "")) for r in caplog.records]
    assert ("colocation usage source", ANNOTATIONS) in messages
    bad = [r for r in caplog.records if r.getMessage() == "usage not read"]
    assert len(bad) == 1 and "default/web" in bad[0].object  # type: ignore[attr-defined]


def test_be_pods_fit_batch_resources_and_are_evicted_when_online_memory_rises(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="10", memory="20Gi"), online_pod("web"))
    with serving(cluster, config(), fast_options(colocation=FAST)) as server, cluster.kubelet():
        wait_for(lambda: "default/web" in cluster.bindings())
        report_usage(cluster, "default/web", 2000, 4 * GI)
        wait_for(lambda: batch_of(cluster, "n1") == (4000, 9 * GI))
        settle(server)
        cluster.add(*(be_pod(f"be-{i}", 2000, "4Gi") for i in (1, 2, 3)))
        wait_for(lambda: {"default/be-1", "default/be-2"} <= cluster.bindings().keys())
        settle(server)
        # Batch cpu 4000 holds two: the third waits, as the simulator's resource-fit says.
        assert "default/be-3" not in cluster.bindings()
        assert server.scheduler.has_waiting
        for key in ("default/be-1", "default/be-2"):
            report_usage(cluster, key, 2000, 4 * GI)
        settle(server)
        assert cluster.api.evictions == []  # 12Gi of 20Gi: 60%, below 70%
        # Online memory to 8Gi: 16Gi is 80%; releasing 2.4Gi takes one BE pod (by name).
        report_usage(cluster, "default/web", 2000, 8 * GI)
        wait_for(lambda: cluster.api.evictions == ["default/be-1"])
        wait_for(lambda: batch_of(cluster, "n1") == (4000, 5 * GI))
        settle(server)
        wait_for(lambda: "default/be-1" not in cluster.bindings())
        settle(server)
        assert cluster.api.evictions == ["default/be-1"]
        assert server.metrics.colocation_evictions.labels("memory")._value.get() == 1
        # be-3 still waits: 5Gi of batch memory, 4Gi of it be-2's.
        assert set(cluster.bindings()) == {"default/web", "default/be-2"}


def test_without_the_flag_nodes_keep_their_status(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="10", memory="20Gi"), online_pod("web"))
    with serving(cluster, config(), fast_options()) as server:
        settle(server)
    assert batch_of(cluster, "n1") is None
    assert not [
        p
        for _, p in cluster.api.log
        if "metrics.k8s.io" in p or p.endswith("/status") and "/nodes/" in p
    ]


def test_cpu_eviction_when_configured(cluster: Cluster):
    colocation = replace(FAST, cpu_evict_lower_percent=60.0, cpu_evict_upper_percent=80.0)
    cluster.add(node_doc("n1", cpu="10", memory="20Gi"), online_pod("web", cpu="8", memory="2Gi"))
    with (
        serving(cluster, config(), fast_options(colocation=colocation)) as server,
        cluster.kubelet(),
    ):
        wait_for(lambda: "default/web" in cluster.bindings())
        report_usage(cluster, "default/web", 1000, GI)
        wait_for(lambda: batch_of(cluster, "n1") == (5000, 12 * GI))
        cluster.add(be_pod("be-a", 2000, "1Gi"), be_pod("be-b", 2000, "1Gi"))
        wait_for(lambda: {"default/be-a", "default/be-b"} <= cluster.bindings().keys())
        report_usage(cluster, "default/be-a", 1000, GI)
        report_usage(cluster, "default/be-b", 2000, GI)
        settle(server)
        assert cluster.api.evictions == []
        # Online cpu 4.5 cores: BE may use 6.5 − 4.5 = 2 of the 4 they ask (0.5 < 0.6).
        report_usage(cluster, "default/web", 4500, GI)
        wait_for(lambda: cluster.api.evictions == ["default/be-b"])
        settle(server)
        assert server.metrics.colocation_evictions.labels("cpu")._value.get() == 1


@pytest.mark.parametrize(
    "text,message",
    [
        (
            "simulation:\n  colocation: {memoryEvictThresholdPercent: 300}\n",
            "simulation.colocation.memoryEvictThresholdPercent: expected at most 100",
        ),
        (
            "simulation:\n  colocation: {cpuCalculatePolicy: request}\n",
            "simulation.colocation.cpuCalculatePolicy: 'request' is not one of",
        ),
        ("actions: enqueue, allocate\n", "simulation.colocation: missing"),
        ("simulation: [1]\n", "simulation: expected a mapping"),
    ],
)
def test_serve_refuses_a_bad_colocation_file(tmp_path: Path, text, message, capsys):
    path = tmp_path / "colocation.yaml"
    path.write_text(text)
    assert main(["serve", "--kubeconfig", "/nowhere", "--colocation", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(path) in err


def test_serve_colocation_from_its_configuration(cluster: Cluster, tmp_path: Path):
    """``--colocation`` alone takes the section of ``--config``, as berth simulate does."""
    cluster.add(node_doc("n1", cpu="10", memory="20Gi"))
    scheduler = tmp_path / "scheduler.yaml"
    scheduler.write_text(
        "simulation:\n  colocation:\n"
        "    {metricReportIntervalSeconds: 0.2, cpuReclaimThresholdPercent: 50}\n"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "berth.cli",
            "serve",
            "--kubeconfig",
            str(cluster.kubeconfig(tmp_path / "kubeconfig")),
            "--metrics-port",
            "0",
            "--config",
            str(scheduler),
            "--colocation",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(lambda: batch_of(cluster, "n1") == (5000, 13 * GI), timeout=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert '"msg": "colocation usage source", "source": "annotations"' in err


def test_an_lse_pods_cpuset_is_on_it_before_its_bind(cluster: Cluster):
    """koordlet pins the cpus berth chose from the pod's resource-status annotation."""
    node = node_doc("n1", cpu="8", memory="16Gi")
    node["metadata"]["annotations"] = {
        "berth.io/cpu-cores-per-socket": "4",
        "berth.io/cpu-threads-per-core": "2",
    }
    pod = online_pod("db", cpu="4", memory="1Gi")
    pod["metadata"]["labels"] = {QOS_LABEL: "LSE"}
    cluster.add(node, pod)
    with serving(cluster, config(), fast_options(colocation=FAST)) as server:
        wait_for(lambda: "default/db" in cluster.bindings())
        settle(server)
    (raw,) = [p for p in cluster.objects("Pod") if p["metadata"]["name"] == "db"]
    status = raw["metadata"]["annotations"][RESOURCE_STATUS_ANNOTATION]
    assert orjson.loads(status) == {"cpuset": "0-3"}
    patches = [i for i, (m, p) in enumerate(cluster.api.log) if m == "PATCH" and p.endswith("/db")]
    binds = [i for i, (m, p) in enumerate(cluster.api.log) if p.endswith("/db/binding")]
    assert patches and binds and patches[0] < binds[0]
