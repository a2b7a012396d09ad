"""``berth serve`` and ``berth snapshot`` through the command line, against the real API server
(with berth's own service account)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from berth.cli import main
from tests.k8s.harness import Cluster, node_doc, pod_doc, wait_for


def kubeconfig(cluster: Cluster, path: Path) -> Path:
    return cluster.kubeconfig(path)


def test_serve_runs_until_terminated(cluster: Cluster, tmp_path: Path):
    cluster.add(node_doc("n1"), node_doc("n2"), *(pod_doc(f"p{i}") for i in range(4)))
    config = kubeconfig(cluster, tmp_path / "kubeconfig")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "berth.cli",
            "serve",
            "--kubeconfig",
            str(config),
            "--metrics-port",
            "0",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert '"msg": "caches synced"' in err  # structured logs, one JSON object a line


def test_serve_refuses_a_bad_configuration(tmp_path: Path, capsys):
    bad = tmp_path / "scheduler.yaml"
    bad.write_text("actions: enqueue, allocate\ntiers: 3\n")
    assert main(["serve", "--config", str(bad), "--kubeconfig", "/nowhere"]) == 1
    assert "tiers" in capsys.readouterr().err
    assert main(["serve", "--kubeconfig", str(tmp_path / "missing")]) == 1
    assert "cannot load a Kubernetes configuration" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--scaling", "greedy"], "argument --scaling: invalid choice: 'greedy'"),
        (["--scaling", "edl", "--max-load-desired", "0"], "0 must be in (0, 1]"),
        (["--scaling", "edl", "--scaling-interval", "-5"], "-5 must be > 0"),
        (["--scaling", "edl", "--scaling-interval", "soon"], "'soon' is not a"),
        (["--max-load-desired", "0.9"], "--max-load-desired needs --scaling"),
        (["--scaling", "aryl", "--starvation-wait", "-1"], "-1 must be >= 0 or off"),
        (["--scaling", "aryl", "--starvation-wait", "soon"], "'soon' is not a"),
        (["--starvation-wait", "off"], "--starvation-wait needs --scaling"),
    ],
)
def test_serve_refuses_a_bad_scaling_policy(arguments, message, capsys):
    try:
        code = main(["serve", "--kubeconfig", "/nowhere", *arguments])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code in (1, 2)
    assert message in capsys.readouterr().err


def test_snapshot_writes_what_simulate_runs_as_it_is(cluster: Cluster, tmp_path: Path):
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research", "uid": "q", "managedFields": [{"manager": "x"}]},
        "spec": {"weight": 2},
        "status": {"state": "Open", "running": 1},
    }
    running = pod_doc("running", node="n2")
    running["status"] = {"phase": "Running", "podIP": "10.1.0.1"}
    done = pod_doc("done", node="n1")
    done["status"] = {"phase": "Succeeded"}
    node = node_doc("n1")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cluster.add(node, node_doc("n2"), queue, running, done, pod_doc("waiting", cpu="2"))
    out = tmp_path / "snap"
    assert (
        main(
            [
                "snapshot",
                "--kubeconfig",
                str(kubeconfig(cluster, tmp_path / "kc")),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    workload = list(yaml.safe_load_all((out / "workload.yaml").read_text()))
    names = [d["metadata"]["name"] for d in workload]
    # the API server's own PriorityClasses come too: pods of the cluster may name them
    assert names == [
        "system-cluster-critical",
        "system-node-critical",
        "research",
        "running",
        "waiting",
    ]
    assert all("managedFields" not in d["metadata"] for d in workload)
    assert main(["validate", str(out / "cluster.yaml"), str(out / "workload.yaml")]) == 0
    args = ["simulate", "--cluster", str(out / "cluster.yaml")]
    args += ["--workload", str(out / "workload.yaml"), "--out", str(tmp_path / "sim"), "--quiet"]
    assert main(args) == 0
    with open(tmp_path / "sim" / "pods.csv", newline="") as handle:
        nodes = {row["name"]: row["node"] for row in csv.DictReader(handle)}
    assert nodes["running"] == "n2"  # the cluster's placement is where the simulation starts
    assert nodes["waiting"] in ("n1", "n2")


def test_snapshot_of_an_unreachable_cluster_fails_clearly(tmp_path: Path, capsys):
    config = tmp_path / "kc"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    assert main(["snapshot", "--kubeconfig", str(config), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: http://127.0.0.1:9: ") and "Traceback" not in err
