"""End-to-end: the rollout examples through ``berth simulate``, as docs/workloads.md runs
them, and bad workload manifests through ``berth validate``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from berth.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WORKLOADS_HEADER = (
    "kind,namespace,name,desired,pods,ready,available,updated,phase,pods_created,pods_deleted,"
    "rollouts,rollouts_complete,rollout_seconds,pods_recreated,pods_updated_in_place,"
    "peak_unavailable,peak_surge,churn_cpu_cores,churn_memory_bytes"
)


def run(out: Path, variant: str) -> dict:
    argv = [
        "simulate",
        "--cluster",
        str(EXAMPLES / "cluster.yaml"),
        "--workload",
        str(EXAMPLES / "rollout" / f"{variant}.yaml"),
        "--config",
        str(EXAMPLES / "rollout" / "scheduler.conf"),
        "--until",
        "7200",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("rollouts")
    outs = {}
    for variant in ("inplace", "recreate", "deployment"):
        outs[variant] = base / variant
        run(outs[variant], variant)
    return outs


def rollout(out: Path) -> dict:
    (web,) = [
        w for w in json.loads((out / "summary.json").read_text())["workloads"] if w["name"] == "web"
    ]
    (only,) = web["rollout_list"]
    return only


def test_the_comparison_in_docs(runs) -> None:
    # docs/workloads.md quotes these figures.
    inplace, recreate, deployment = (
        rollout(runs[v]) for v in ("inplace", "recreate", "deployment")
    )
    assert (inplace["duration"], inplace["pods_recreated"], inplace["pods_updated_in_place"]) == (
        40,
        0,
        24,
    )
    assert (inplace["peak_unavailable"], inplace["churn"]) == (6, {})
    assert (recreate["duration"], recreate["pods_recreated"], recreate["peak_unavailable"]) == (
        120,
        24,
        6,
    )
    assert recreate["churn"] == {"cpu": 48000, "memory": 96 * 2**30, "pods": 24}
    assert (deployment["duration"], deployment["pods_recreated"], deployment["peak_surge"]) == (
        120,
        24,
        6,
    )


def test_workloads_csv_and_report(runs) -> None:
    text = (runs["recreate"] / "workloads.csv").read_text()
    assert text.splitlines()[0] == WORKLOADS_HEADER
    rows = {row["name"]: row for row in csv.DictReader(text.splitlines())}
    assert rows["web"]["kind"] == "CloneSet" and rows["web"]["rollout_seconds"] == "120"
    assert (rows["web"]["churn_cpu_cores"], rows["web"]["churn_memory_bytes"]) == (
        "48",
        str(96 * 2**30),
    )
    assert rows["etl"]["kind"] == "Job (batch/v1)" and rows["etl"]["phase"] == "Running"
    html = (runs["recreate"] / "report.html").read_text()
    assert '<h2 id="workloads">Workloads</h2>' in html and "<h3>Rollouts</h3>" in html
    assert "48 cpu" in html and '<a href="#workloads">' in html


def test_recreated_pods_have_their_rows_and_reasons(runs) -> None:
    with open(runs["recreate"] / "pods.csv", newline="") as handle:
        web = [row for row in csv.DictReader(handle) if row["job"] == "cloneset-web"]
    deleted = [row for row in web if row["phase"] == "Deleted"]
    assert len(web) == 48 and len(deleted) == 24
    assert {row["reason"] for row in deleted} == {
        "deleted by the CloneSet controller: recreated for the update"
    }


def test_same_inputs_give_the_same_files(runs, tmp_path) -> None:
    again = tmp_path / "again"
    run(again, "inplace")
    for name in ("workloads.csv", "pods.csv", "timeseries.csv"):
        assert (again / name).read_bytes() == (runs["inplace"] / name).read_bytes(), name


def test_validate_counts_workload_objects(capsys) -> None:
    assert main(["validate", str(EXAMPLES / "rollout" / "inplace.yaml")]) == 0
    assert capsys.readouterr().out.strip().endswith("2 workload objects (3 versions)")


BAD = {
    "selector": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
        "  selector: {matchLabels: {app: api}}\n"
        "  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}\n",
        "bad.yaml: Deployment/web: spec.template.metadata.labels: do not match spec.selector "
        "(expected the template's labels to satisfy it)",
    ),
    "percent": (
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web}\nspec:\n"
        "  selector: {matchLabels: {app: web}}\n  updateStrategy: {maxUnavailable: 150%}\n"
        "  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}\n",
        'bad.yaml: CloneSet/web: spec.updateStrategy.maxUnavailable: "150%" is more than 100%',
    ),
    "same time twice": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n"
        "  template: {spec: {containers: [{name: c}]}}\n---\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n"
        "  template: {spec: {containers: [{name: c}]}}\n",
        'bad.yaml: Job/pi: metadata.name: duplicate Job "default/pi" with the same submit time '
        "(also defined earlier in this file; a later version needs a later berth.io/submit-time)",
    ),
}


@pytest.mark.parametrize("text,line", BAD.values(), ids=BAD.keys())
def test_bad_workloads_are_refused_in_one_line(text, line, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(text)
    assert main(["validate", "bad.yaml"]) == 1
    out = capsys.readouterr()
    assert [text for text in (out.out + out.err).splitlines() if text.strip()] == [line]


def test_workload_pods_count_against_max_pods(tmp_path, capsys) -> None:
    argv = [
        "simulate",
        "--cluster",
        str(EXAMPLES / "cluster.yaml"),
        "--workload",
        str(EXAMPLES / "rollout" / "inplace.yaml"),
        "--max-pods",
        "100",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    ]
    assert main(argv) == 1
    # 24 service replicas (its largest version) and 600 completions of the batch Job
    assert capsys.readouterr().err == (
        f"error: {EXAMPLES / 'cluster.yaml'}: the workload makes 624 pods, more than "
        "--max-pods 100 (about 2.5 KB each to simulate); raise --max-pods to run it\n"
    )
