"""The capacity-loaning example through the CLI: nodes lent and taken back, the training
pods a reclaim preempted restarted and every pod counted, the inference wait bound kept, and
the outputs saying so; a bad curve or loaning section refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from berth.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "loaning"
ARGS = [
    "--cluster",
    str(EXAMPLES / "cluster.yaml"),
    "--workload",
    str(EXAMPLES / "workload.yaml"),
    "--config",
    str(EXAMPLES / "scheduler.yaml"),
    "--until",
    "1d",
]


def test_example_lends_and_reclaims(tmp_path, capsys) -> None:
    assert main(["simulate", *ARGS, "--seed", "1", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "summary.json").read_text())
    loaning = summary["loaning"]
    assert loaning["lends"] >= 1 and loaning["reclaims"] >= 1
    assert loaning["pods_preempted"] >= 1 and loaning["jobs_preempted"] >= 1
    assert summary["evictions"]["loaning"] == loaning["pods_preempted"]
    # Cheapest first: within one pass a later reclaim never costs less than an earlier one.
    events = loaning["reclaim_events"]
    for earlier, later in zip(events, events[1:], strict=False):
        if earlier["time"] == later["time"]:
            assert earlier["cost"] <= later["cost"]
    wait = loaning["inference_wait"]
    assert wait["count"] > 0 and wait["max"] <= loaning["wait_bound"]
    assert loaning["inference_wait_over_bound"] == 0
    pods = summary["pods"]
    assert pods["submitted"] == sum(
        pods[k] for k in ("completed", "failed", "evicted", "deleted", "running", "pending")
    )
    with open(tmp_path / "pods.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = {r["name"] for r in rows}
    evicted = [r["name"].split(".") for r in rows if r["phase"] == "Evicted"]
    assert evicted  # each evicted pod has its replacement: <pod>.1, then <pod>.2, ...
    assert all(f"{n[0]}.{int(n[1]) + 1 if len(n) > 1 else 1}" in names for n in evicted)
    with open(tmp_path / "timeseries.csv", newline="") as handle:
        series = list(csv.DictReader(handle))
    lent = [float(r["lent_gpus"]) for r in series]
    assert lent[0] == 0 and max(lent) == loaning["lent_gpus"]["max"] > 0
    assert all(
        float(r["inference_gpus_capacity"]) + float(r["lent_gpus_capacity"]) == 48 for r in series
    )
    report = (tmp_path / "report.html").read_text()
    assert "Capacity loaning" in report and (tmp_path / "loaning.png").exists()


def test_bad_curve_is_refused_in_one_line(tmp_path, capsys) -> None:
    workload = (EXAMPLES / "workload.yaml").read_text()
    bad = tmp_path / "workload.yaml"
    bad.write_text(workload.replace("load-curve: azure-llm-conv", "load-curve: daily.csv"))
    (tmp_path / "daily.csv").write_text("time,requests_per_second\n0,4\n3600,four\n")
    args = [a if a != str(EXAMPLES / "workload.yaml") else str(bad) for a in ARGS]
    assert main(["simulate", *args, "--out", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert (
        f"Deployment/chat: metadata.annotations.berth.io/load-curve: {tmp_path / 'daily.csv'}: "
        "row 3: 'four' is not a number (expected requests per second >= 0)"
    ) in err


def test_bad_loaning_section_is_refused_in_one_line(tmp_path, capsys) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text("period: 20\nsimulation:\n  loaning: {waitBound: 30}\n")
    args = [a if a != str(EXAMPLES / "scheduler.yaml") else str(config) for a in ARGS]
    assert main(["simulate", *args, "--out", str(tmp_path / "out")]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert err.strip() == (
        f"error: {config}: simulation.loaning.waitBound: 30s cannot be kept with a scheduling "
        "period of 20s (expected at least two periods, 40s)"
    )
