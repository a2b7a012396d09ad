"""End-to-end runs of ``berth simulate`` on the scenario files in ``data/``."""

from __future__ import annotations

import base64
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from berth.cli import main

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "cluster.yaml"
WORKLOAD = DATA / "workload.yaml"
VOLCANO = DATA / "config-volcano.yaml"
ROOT = Path(__file__).resolve().parents[2]

OUTPUTS = ("summary.json", "pods.csv", "jobs.csv", "workloads.csv", "timeseries.csv", "report.html")
PNGS = ("utilization.png", "pending.png", "queueing_cdf.png", "jct_cdf.png")
POD_HEADER = (
    "namespace,name,job,queue,node,devices,cpuset,submit_time,bind_time,start_time,end_time,"
    "phase,priority,reason,waited_for"
)
JOB_HEADER = (
    "namespace,name,queue,min_member,tasks,submit_time,start_time,end_time,phase,"
    "retries,preemptions,resizes,reason"
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def simulate(out: Path, *extra: str, quiet: bool = True) -> int:
    argv = [
        "simulate",
        "--cluster",
        str(CLUSTER),
        "--workload",
        str(WORKLOAD),
        "--out",
        str(out),
        *extra,
    ]
    return main(argv + (["--quiet"] if quiet else []))


def rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("default") / "run"
    assert simulate(out) == 0
    return out


def test_writes_every_output(default_run):
    for name in OUTPUTS:
        assert (default_run / name).is_file(), name
        assert (default_run / name).stat().st_size > 0, name
    for name in PNGS:
        assert (default_run / name).read_bytes()[:8] == PNG_MAGIC, name
    html = (default_run / "report.html").read_text()
    for name in PNGS:  # embedded: the page needs no file beside it
        assert base64.b64encode((default_run / name).read_bytes()).decode() in html, name


def test_csv_headers_are_exact(default_run):
    assert (default_run / "pods.csv").read_text().splitlines()[0] == POD_HEADER
    assert (default_run / "jobs.csv").read_text().splitlines()[0] == JOB_HEADER
    header = (default_run / "timeseries.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["time", "pending", "running"]


def test_summary_counts(default_run):
    s = summary(default_run)
    # 4 service replicas run forever, the 2-pod gang and 6 batch pods finish, one never fits.
    assert s["pods"] == {
        "submitted": 13,
        "completed": 8,
        "failed": 0,
        "evicted": 0,
        "deleted": 0,
        "running": 4,
        "pending": 1,
    }
    assert s["jobs"] == {"submitted": 12, "completed": 7, "failed": 0, "running": 4, "pending": 1}
    assert s["seed"] == 0
    assert set(s["resources"]) >= {"cpu", "memory", "nvidia.com/gpu", "pods"}
    assert s["jct"]["count"] == 7
    assert s["pod_queueing_delay"]["count"] == 12


def test_placements(default_run):
    pods = rows(default_run / "pods.csv")
    assert len(pods) == 13
    # The service: one replica per node (anti-affinity), two per zone (spread).
    web = [pods[f"web-{i}"] for i in range(4)]
    assert all(row["phase"] == "Running" and row["queue"] == "online" for row in web)
    nodes = [row["node"] for row in web]
    assert len(set(nodes)) == 4 and all(node.startswith("cpu-") for node in nodes)
    zone = {"cpu-0": "a", "cpu-1": "b", "cpu-2": "a", "cpu-3": "b"}  # NodePool round-robin
    assert sorted(zone[node] for node in nodes) == ["a", "a", "b", "b"]
    # The gang: both workers bound together on the two GPU nodes, and finished.
    train = [pods["train-0"], pods["train-1"]]
    assert {row["node"] for row in train} == {"gpu-0", "gpu-1"}
    assert train[0]["bind_time"] == train[1]["bind_time"]
    assert all(row["phase"] == "Succeeded" and row["job"] == "train" for row in train)
    assert all(float(r["end_time"]) - float(r["start_time"]) == 600 for r in train)
    # Batch pods: placed on CPU nodes (the GPU nodes are tainted), all finished on time.
    for i in range(6):
        row = pods[f"batch-{i}"]
        assert row["phase"] == "Succeeded" and row["queue"] == "batch"
        assert row["node"].startswith("cpu-")
        assert float(row["submit_time"]) == 10 * (i + 1)
        assert float(row["end_time"]) - float(row["start_time"]) == pytest.approx(120 + 30 * i)
    huge = pods["huge"]
    assert huge["phase"] == "Pending"
    assert huge["reason"].startswith("0/6 nodes available: ")
    assert all(pods[f"batch-{i}"]["reason"] == "" for i in range(6))
    assert huge["node"] == huge["bind_time"] == huge["start_time"] == huge["end_time"] == ""
    jobs = rows(default_run / "jobs.csv")
    assert jobs["train"]["min_member"] == "2" and jobs["train"]["tasks"] == "2"
    assert jobs["train"]["phase"] == "Completed" and jobs["train"]["queue"] == "training"
    assert jobs["huge"]["start_time"] == ""
    html = (default_run / "report.html").read_text()
    assert "huge" in html and "insufficient cpu" in html


def test_same_seed_gives_identical_files(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    assert simulate(first, "--seed", "3") == 0
    assert simulate(second, "--seed", "3") == 0
    for name in ("pods.csv", "jobs.csv", "timeseries.csv"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    one, two = summary(first), summary(second)
    one.pop("wall_seconds")
    two.pop("wall_seconds")
    # The command names the output folder: the one part of the provenance that differs.
    commands = one["provenance"].pop("command"), two["provenance"].pop("command")
    assert [c.replace(str(second), str(first)) for c in commands[1]] == commands[0]
    assert one == two
    assert one["seed"] == 3


def test_another_seed_still_runs(tmp_path, default_run):
    out = tmp_path / "seed7"
    assert simulate(out, "--seed", "7") == 0
    s = summary(out)
    assert s["seed"] == 7
    assert s["pods"] == summary(default_run)["pods"]


def test_volcano_config_runs_and_names_missing_plugins(tmp_path, capsys):
    out = tmp_path / "volcano"
    assert simulate(out, "--config", str(VOLCANO)) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    for plugin in ("task-topology", "numaaware"):
        assert any(f"plugin {plugin} " in line for line in warnings), plugin
    for plugin in (
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
    ):
        assert not any(f"plugin {plugin} " in line for line in warnings), plugin
    assert "Traceback" not in err
    s = summary(out)
    assert s["pods"]["completed"] == 8 and s["pods"]["pending"] == 1
    pods = rows(out / "pods.csv")
    assert len({pods[f"web-{i}"]["node"] for i in range(4)}) == 4
    assert pods["train-0"]["bind_time"] == pods["train-1"]["bind_time"] != ""


def test_until_stops_early(tmp_path):
    out = tmp_path / "until"
    assert simulate(out, "--until", "100") == 0
    s = summary(out)
    assert s["end_time"] == 100
    # Batch pods run 120 s or more and the gang 600 s: nothing has finished by t=100.
    assert s["pods"]["completed"] == 0
    assert s["pods"]["running"] == 12 and s["pods"]["pending"] == 1
    pods = rows(out / "pods.csv")
    assert pods["train-0"]["phase"] == "Running" and pods["train-0"]["end_time"] == ""
    for row in pods.values():
        for column in ("submit_time", "bind_time", "start_time", "end_time"):
            assert row[column] == "" or float(row[column]) <= 100
    times = [
        float(line.split(",")[0]) for line in (out / "timeseries.csv").read_text().splitlines()[1:]
    ]
    assert times and max(times) <= 100


def test_progress_output_when_not_quiet(tmp_path, capsys):
    out = tmp_path / "loud"
    assert simulate(out, quiet=False) == 0
    stdout = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "6 nodes, 13 pods" in stdout
    assert "report:" in stdout and "report.html" in stdout


def test_builtin_scenario(tmp_path):
    out = tmp_path / "builtin"
    assert main(["simulate", "--out", str(out), "--quiet"]) == 0
    s = summary(out)
    assert s["end_time"] == 86_400
    pods = rows(out / "pods.csv")
    batch = [row for name, row in pods.items() if name.startswith("batch-")]
    assert len(batch) > 1000
    done = sum(1 for row in batch if row["phase"] == "Succeeded")
    assert done / len(batch) > 0.9
    training = [row for name, row in pods.items() if name.startswith("train-")]
    assert training and any(row["phase"] == "Succeeded" for row in training)
    for name in OUTPUTS + PNGS:
        assert (out / name).is_file(), name


def test_module_help_in_a_subprocess():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "berth.cli", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for command in ("simulate", "validate", "bench"):
        assert command in proc.stdout
    assert proc.stderr == ""


def test_summary_and_report_say_what_produced_them(tmp_path):
    import hashlib

    out = tmp_path / "run"
    config = tmp_path / "conf.yaml"
    config.write_text("actions: enqueue, allocate\ntiers: [{plugins: [{name: gang}]}]\n")
    assert simulate(out, "--config", str(config), "--seed", "2") == 0
    provenance = summary(out)["provenance"]
    assert provenance["command"][:2] == ["berth", "simulate"] and "--seed" in provenance["command"]
    inputs = {item["role"]: item for item in provenance["inputs"]}
    assert set(inputs) == {"cluster", "workload", "configuration"}
    assert inputs["cluster"]["sha256"] == hashlib.sha256(CLUSTER.read_bytes()).hexdigest()
    assert inputs["configuration"]["bytes"] == config.stat().st_size
    resolved = provenance["configuration"]
    assert resolved["actions"] == ["enqueue", "allocate"]
    # resource-fit is what every allocation checks, whatever the configuration lists; the
    # resolved configuration shows what was written, the scheduler adds the fit check itself.
    assert [p["name"] for tier in resolved["tiers"] for p in tier] == ["gang"]
    assert provenance["seed"] == 2
    html = (out / "report.html").read_text()
    assert "Provenance" in html and inputs["cluster"]["sha256"][:16] in html


TRUTH_WORKLOAD = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: closed}
status: {state: Closed}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: shut-out}
spec:
  queue: closed
  tasks: [{name: w, replicas: 2, template: {spec: {containers: [{name: c}]}}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: runs
  annotations: {berth.io/submit-time: "10"}
spec:
  tasks:
    - name: w
      replicas: 2
      template:
        metadata: {annotations: {berth.io/duration: "50"}}
        spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
""" + "".join(
    f"""---
apiVersion: v1
kind: Pod
metadata:
  name: late-{t}
  annotations: {{berth.io/submit-time: "{t}", berth.io/duration: "5"}}
spec: {{containers: [{{name: c}}]}}
"""
    for t in (0, 100, 1000)
)


def test_outputs_tell_the_truth(tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text(TRUTH_WORKLOAD)
    out = tmp_path / "out"
    argv = ["simulate", "--cluster", str(CLUSTER), "--workload", str(workload), "--out", str(out)]
    assert main([*argv, "--quiet", "--until", "500"]) == 0
    s = summary(out)
    # Only what arrived by t=500: late-1000 does not exist yet.
    assert sorted(rows(out / "pods.csv")) == ["late-0", "late-100", "runs-w-0", "runs-w-1"]
    assert s["pods"]["submitted"] == 4
    assert s["pods"]["submitted"] == sum(v for k, v in s["pods"].items() if k != "submitted")
    jobs = rows(out / "jobs.csv")
    assert jobs["shut-out"]["phase"] == "Pending" and "closed" in jobs["shut-out"]["reason"]
    assert jobs["runs"]["phase"] == "Completed" and jobs["runs"]["reason"] == "2 pods succeeded"
    html = (out / "report.html").read_text()
    assert ">shut-out<" in html and "none created yet" in html
