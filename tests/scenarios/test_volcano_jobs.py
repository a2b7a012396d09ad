"""The Volcano Job example end to end through the CLI: phases, retries, suspend/resume, and
byte-identical tables for the same seed (fault draws included)."""

from __future__ import annotations

import csv
from pathlib import Path

from berth.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(out: Path, seed: int) -> dict[str, dict[str, str]]:
    args = ["simulate", "--cluster", str(EXAMPLES / "cluster.yaml")]
    args += ["--workload", str(EXAMPLES / "volcano-jobs.yaml"), "--out", str(out), "--quiet"]
    assert main([*args, "--seed", str(seed)]) == 0
    with open(out / "jobs.csv", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def test_volcano_jobs_example(tmp_path):
    jobs = run(tmp_path / "a", seed=1)
    assert {name: (row["phase"], row["retries"], row["tasks"]) for name, row in jobs.items()} == {
        "mpi": ("Completed", "0", "5"),  # workers stopped when the launcher's task completed
        "train": ("Completed", "3", "8"),  # three crashed runs of two pods, then success
        # six trials deleted by AbortJob, six after the resume, which counts as a retry
        "sweep": ("Completed", "1", "12"),
    }
    assert jobs["mpi"]["end_time"] == "1802"
    pods = (tmp_path / "a" / "pods.csv").read_text()
    assert "sweep-trial-0.1" in pods
    assert "AbortJob after Command pause-sweep: maintenance window" in pods
    again = run(tmp_path / "b", seed=1)
    assert again == jobs
    for name in ("pods.csv", "jobs.csv", "timeseries.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_another_seed_exhausts_max_retry(tmp_path):
    train = run(tmp_path, seed=3)["train"]
    assert (train["phase"], train["retries"]) == ("Failed", "5")
    assert train["reason"].endswith("restarts reached maxRetry 5")
