"""docs/experiments/colocation: its generated inputs, run through the CLI on a small slice.

The experiment writes manifests for three ways of running online services and Alibaba 2017
batch tasks; here they are generated for 4 nodes and the first hour, loaded by berth's own
loader and simulated, so the experiment cannot rot. Skipped without the public traces.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from berth.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "docs/experiments/colocation"
TRACES = ROOT.parent / "shared/traces"

pytestmark = pytest.mark.skipif(
    not (TRACES / "alibaba-2017/batch_task.csv").exists(), reason="public traces not present"
)


def _experiment():
    spec = importlib.util.spec_from_file_location("colocation_run", EXPERIMENT / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def small():
    run = _experiment()
    run.NODES, run.ONLINE_POOL, run.WINDOW = 4, 3, 3600
    return run, run.daily_shape(), run.batch_tasks()


def _pods(out: Path) -> list[dict[str, str]]:
    with open(out / "pods.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("mode", ["separate", "colocation"])
def test_a_slice_runs_and_keeps_online_pods(small, mode, tmp_path):
    run, shape, tasks = small
    assert tasks, "the first hour of the trace has sampled tasks"
    inputs = run.write_inputs(tmp_path / "inputs", mode, shape, tasks)
    out = tmp_path / "out"
    argv = ["simulate", "--cluster", str(inputs["cluster"]), "--config", str(inputs["config"])]
    argv += ["--workload", str(inputs["online"]), "--workload", str(inputs["batch"])]
    assert main([*argv, "--until", "3600", "--out", str(out), "--quiet"]) == 0
    pods = _pods(out)
    online = [p for p in pods if p["name"].startswith("svc-")]
    batch = [p for p in pods if not p["name"].startswith("svc-")]
    assert online and batch
    assert all(p["phase"] == "Running" for p in online)
    started = [p for p in batch if p["start_time"]]
    assert started
    if mode == "separate":
        # the batch pool is the last node; online services never go there
        assert {p["node"] for p in started} == {"m-003"}
        assert "m-003" not in {p["node"] for p in online}
    measures = run.measures(out, 1.0, {t[1]: t[3] for t in tasks})
    assert measures["online_evicted"] == 0
    assert 0 < measures["cpu_utilization_avg"] <= 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["colocation"]["online_pod_seconds"] > 0


def test_batch_pods_are_best_effort_only_under_colocation(small, tmp_path):
    run, shape, tasks = small
    for mode in run.MODES:
        inputs = run.write_inputs(tmp_path / mode, mode, shape, tasks[:3])
        text = inputs["batch"].read_text()
        assert ("kubernetes.io/batch-cpu" in text) == (mode == "colocation")
        assert ("qosClass: BE" in text) == (mode == "colocation")
