"""examples/elastic through the CLI: the elastic job starts at its minimum, grows once the
rigid job ends (one resize) and finishes at the time its progress gives."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from berth.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "elastic"


def test_the_elastic_example(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    argv = ["simulate", "--cluster", str(EXAMPLE / "cluster.yaml")]
    argv += ["--workload", str(EXAMPLE / "jobs.yaml"), "--quiet", "--out", str(out)]
    assert main(argv) == 0
    with open(out / "jobs.csv", newline="") as handle:
        jobs = {row["name"]: row for row in csv.DictReader(handle)}
    assert {row["phase"] for row in jobs.values()} == {"Completed"}
    bert = jobs["bert"]
    assert (bert["resizes"], bert["tasks"]) == ("1", "8")
    # 7200 s at 8 workers = 41,990.4 one-worker seconds; 2 workers (1.8) from its start until
    # the rigid job's servers come back, 60 s of pause, then 8 workers (5.832)
    with open(out / "pods.csv", newline="") as handle:
        pods = list(csv.DictReader(handle))
    starts = sorted(float(p["start_time"]) for p in pods if p["job"] == "bert")
    first, grown = starts[0], starts[-1]
    expected = grown + 60 + (41990.4 - 1.8 * (grown - first)) / 5.832
    assert float(bert["end_time"]) == pytest.approx(expected, abs=0.01)


def test_the_pytorch_job_example(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["simulate", "--cluster", str(EXAMPLE / "cluster.yaml")]
    argv += ["--workload", str(EXAMPLE / "pytorchjob.yaml"), "--quiet", "--out", str(out)]
    assert main(argv) == 0
    with open(out / "pods.csv", newline="") as handle:
        pods = {row["name"]: row for row in csv.DictReader(handle)}
    assert sorted(pods) == ["llama-master-0"] + [f"llama-worker-{i}" for i in range(6)]
    # 2 h at 1 master + 4 workers under Amdahl 5%, run by 1 master + 6 workers from t=2
    speed = [1 / (0.05 + 0.95 / n) for n in range(8)[1:]]
    ends = [float(row["end_time"]) for row in pods.values()]
    assert ends == [pytest.approx(2 + 7200 * speed[4] / speed[6], abs=0.01)] * 7
