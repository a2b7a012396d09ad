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
